//! The PostgreSQL [`EventStore`](loomfence_store::EventStore) of loomfence.
//!
//! It offers the conditional capability: tokens, the append guard, the
//! park-conditional append and `acquire_fence_if`, each atomic at the
//! server, and it passes the conformance kit unchanged.
//!
//! How it keeps the kernel's promise ("an answering append lands and the
//! conditional acquire is stale, or the acquire wins and the append is
//! refused; never both"):
//!
//! - The append guard runs in the same statement as the insert. A batch that
//!   holds an answering event reads the execution's fence row `FOR SHARE`,
//!   so it waits for, and then sees, a concurrent acquire. Other batches keep
//!   the plain read: only answering appends are constrained, and the hot
//!   path of step and audit appends takes no row lock.
//! - A park append also creates the execution's token-0 fence row, so the
//!   row an answering append locks exists before anyone can answer or
//!   acquire. `migrate` backfills the row for parks written before this
//!   version.
//! - `acquire_fence_if` locks the fence row `FOR UPDATE`, then scans for an
//!   answering event past the park in a fresh snapshot, then updates, in one
//!   round trip, always under READ COMMITTED.
//! - Appends and deletes are server-side functions that first take the
//!   execution's advisory lock, then run with a fresh snapshot. Appends to
//!   one execution therefore queue, sequences are the head plus one with no
//!   gap or duplicate, the park-conditional append is exclusive, and a
//!   delete never interleaves with an append (which would otherwise write
//!   at a stale head into the emptied log).
//! - Retention's guarded delete (`delete_execution_if`) takes the execution
//!   locks of the child and of every parent it names, in one global order,
//!   before it checks anything: a parent's park either committed before the
//!   check (which then refuses) or waits until the delete committed. Its
//!   batch (`delete_executions_if`) takes the locks of every entry and
//!   parent in that same order, then judges every entry against what the
//!   locks hold, in one call and one transaction. Its
//!   listing (`list_executions`) pages by id in the `execution_id` column's
//!   collation, the primary key's order, so a page costs a few index
//!   descents per execution; ends come from a partial index of terminal
//!   events that `migrate` builds without blocking appends.
//! - The change feed lists events by `(txid, feed_seq)`: the committing
//!   transaction's `xid8` and a number from a sequence, both column
//!   defaults. A read lists only rows of transactions below its snapshot's
//!   `xmin`, all finished, so a cursor it hands out never has an event
//!   appear before it later (a bare sequence would: numbers are taken at
//!   insert and seen at commit). The open-parks index is a table the append
//!   keeps in its one statement, by the core's `park_change`; a delete
//!   keeps what the head may have named in `feed_high`, so the head never
//!   goes back. Waiters are woken by their own process's appends at once
//!   and by a `NOTIFY` per few milliseconds from other processes, sent
//!   outside the appends.
//!
//! Beside the logs, [`PostgresTimerStore`] (from
//! [`PostgresEventStore::timers`]) keeps the fleet's timer rows in the same
//! schema, under the core's `TimerTable` rules: an upsert that keeps the
//! re-drive flag, due listings filtered before their limit, lease claims
//! taken with `FOR UPDATE SKIP LOCKED` so two nodes never hold one row, and
//! retirement only by the current claim. A fire that gives up retires its
//! row and records it in `exhausted_timers` in one statement under its
//! claim (the table `migrate` creates beside `timers`, ids `COLLATE "C"`);
//! the operator's listing shows each row's claim and the rows it cannot
//! read beside the rest. It is the fleet's inbox too
//! (`InboxStore`): a send writes its message and its intent row in one
//! transaction, after a per-channel advisory lock that makes a channel's
//! arrival order its commit order; the deletes take an execution's
//! messages with its log.
//!
//! Every value is a bound parameter; the only text spliced into SQL is the
//! validated [`Schema`] name.
//!
//! A write whose connection is lost after its statement was sent (no answer
//! from the server) may have committed: it fails with
//! [`StoreError::OutcomeUnknown`](loomfence_store::StoreError::OutcomeUnknown),
//! never with a retryable backend error, which says nothing happened.
//!
//! The URL's `sslmode` (`disable`, `prefer` by default, `require`,
//! `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file; the system's
//! roots without one) mean what they mean to libpq, in both URL forms
//! ([`ConnectUrl`]); TLS is rustls. Across any network, use `verify-full`:
//! the only mode that checks the certificate names the host. The first
//! connection's failure is [`OpenError::Connect`], naming the server (never
//! the password) and the cause.
//!
//! ```no_run
//! use loomfence_postgres::{PostgresEventStore, PostgresOptions};
//!
//! # async fn open() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "postgres://app@db.example.com/app?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem";
//! let store = PostgresEventStore::connect(url, PostgresOptions::default()).await?;
//! # Ok(())
//! # }
//! ```

mod backfill;
mod concurrent_index;
mod config;
mod conn;
mod connect_url;
mod error;
mod feed_migrate;
mod feed_sql;
mod feed_wake;
mod inbox;
mod inbox_migrate;
mod inbox_sql;
mod migrate;
pub mod migration;
mod retention_sql;
mod sql;
mod sql_parts;
mod store;
mod table_ddl;
mod timer_migrate;
mod timer_sql;
mod timers;
mod tls;
mod version;

pub use config::{AcquireStrategy, PostgresOptions, Schema};
pub use connect_url::{ConnectUrl, SslMode};
pub use error::OpenError;
pub use store::PostgresEventStore;
pub use timers::PostgresTimerStore;
