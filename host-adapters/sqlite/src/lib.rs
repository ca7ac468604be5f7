//! The SQLite [`EventStore`](loomfence_store::EventStore),
//! [`TimerStore`](loomfence_store::TimerStore) and
//! [`InboxStore`](loomfence_store::InboxStore) of loomfence: the embedded,
//! durable default.
//!
//! The design's minimum lets SQLite skip fencing: a single node, the
//! process as the failure domain. This store fences (design: where
//! loomfence goes further), so a single-node user gets
//! exactly the guarantees a fleet gets on PostgreSQL, and every backend
//! passes one conformance kit.
//!
//! - **Every write runs in a `BEGIN IMMEDIATE` transaction**: appends (with the
//!   guard), the park-conditional append, both acquires and both deletes. It
//!   takes SQLite's write lock up front, so the read, the decision and the
//!   write cannot interleave with another writer in this process or any
//!   other. The decisions are the core's own functions, not a SQL copy.
//! - **Group commit**: the one writer connection lives on a thread of its
//!   own, and the writes that queue up while it commits share the next
//!   transaction, each in its own savepoint, so a busy store pays one fsync
//!   per group. Every caller is answered only after its group committed.
//! - **WAL mode, a busy timeout and a few readers** on tokio's blocking
//!   pool: a slow disk never stalls the executor, and reads do not queue
//!   behind writes.
//! - **Opening is safe to race and refuses what it must not touch**: the
//!   schema is created in one immediate transaction (two processes opening
//!   a new file queue on it), and a foreign, damaged or newer file is
//!   refused, unchanged, with a typed [`OpenError`].
//! - **Retention's two calls are cheap and safe**: the paged listing is a
//!   few index seeks per execution (a partial index of terminal events,
//!   created on open, answers "when did it end"), and the guarded delete
//!   checks the child's head and each parent's answering events in the same
//!   write transaction as the delete, so a parent cannot park on a child
//!   between the check and the delete.
//! - **Timers live in the same file** ([`SqliteEventStore::timers`]), their
//!   writes on the same writer thread, under the core's
//!   [`TimerTable`](loomfence_core::timer::TimerTable) rules stated in SQL. A
//!   `timers` table of the older shape (design: the re-drive) is brought up to
//!   date on open, its rows kept as plain wakes. A fire that gives up
//!   retires its row and records it in `exhausted_timers` as one job on the
//!   writer thread, only under its current claim; a file without that
//!   table gains it on open (additive: the schema version stays). The
//!   operator's listing reads each row's claim, and reports a row it cannot
//!   read beside the rest instead of failing.
//! - **The inbox lives in the same file**, on the timer store
//!   ([`SqliteTimerStore`] is the [`InboxStore`](loomfence_store::InboxStore)
//!   too): a send stores its message and writes its intent row with the
//!   timer store's own upsert as one job on the writer thread, so both
//!   commit in one transaction or neither does. Arrival numbers are the
//!   table's rowids, handed out under SQLite's one write lock, so arrival
//!   order is commit order. An execution's messages go with its log: both
//!   deletes remove them in the same transaction. A file from before the
//!   inbox gains the `inbox` table on open; an `inbox` table that is not
//!   ours is refused ([`OpenError::ForeignInbox`]), the file untouched.
//! - **The change feed is a column**: each appended event takes the next
//!   `feed` position inside its append's transaction, under the one write
//!   lock, so positions are taken in commit order and a reader never sees
//!   one without every smaller one (every cursor's epoch is 0). A delete
//!   keeps the last position in a one-row mark first, so no position is
//!   handed out twice. The open parks are a table the appends keep with
//!   the core's `park_change`, in the same transaction. A wait is woken by
//!   this process's appends; another process's are seen by the follower's
//!   next read on its interval. A file of schema version 1 gains the feed
//!   on open: its feed starts there (older events are never listed) and its
//!   open parks are indexed from the logs once, so a follower still watches
//!   what was parked before.
//!
//! ```
//! use loomfence_core::ExecutionId;
//! use loomfence_sqlite::SqliteEventStore;
//! use loomfence_store::EventStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = SqliteEventStore::open_in_memory().await?;
//! let id = ExecutionId::try_from("job-1")?;
//! assert_eq!(store.acquire_fence(&id).await?, 1);
//! # Ok(())
//! # }
//! ```

mod db;
mod error;
mod feed_ops;
mod feed_schema;
mod inbox;
mod inbox_ops;
mod inbox_schema;
mod ops;
mod options;
mod read_only;
mod retention_ops;
mod schema;
mod store;
mod timer_ops;
mod timer_schema;
mod timers;
mod writer;

pub use error::{OpenError, ReadOnlyStore};
pub use options::{Durability, SqliteOptions};
pub use schema::SCHEMA_VERSION;
pub use store::SqliteEventStore;
pub use timers::SqliteTimerStore;
