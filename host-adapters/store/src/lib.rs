//! The async side of loomfence's storage: the [`EventStore`],
//! [`TimerStore`] and [`InboxStore`] traits that every adapter (memory,
//! SQLite, PostgreSQL) implements, their one error type, the forwarding decorator, and the
//! in-memory adapters.
//!
//! The rules themselves (the append guard, the conditional acquire) live in
//! `loomfence-core` as pure functions; an adapter's job is only to apply them
//! atomically against its backend. Every adapter runs the same conformance
//! kit (`loomfence-conformance`), so they cannot drift apart.
//!
//! ```
//! use loomfence_core::{ExecutionId, KernelKind, NewEvent};
//! use loomfence_store::{EventStore, MemoryEventStore, StoreError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Ids are checked once, where they enter the program; a store only ever
//! // sees valid ones.
//! let job = ExecutionId::new("job-1")?;
//! let store = MemoryEventStore::new();
//! store.append(&job, NewEvent::kernel(KernelKind::ExecutionStarted, 0)).await?;
//! let zombie = 0;
//! let token = store.acquire_fence(&job).await?;
//! assert_eq!(token, 1);
//!
//! // The previous holder's answering append is now refused.
//! let late = NewEvent::kernel(KernelKind::ExecutionCompleted, 1).with_fence(zombie);
//! let refused = store.append(&job, late).await;
//! assert!(matches!(refused, Err(StoreError::StaleFence(_))));
//! # Ok(())
//! # }
//! ```

pub mod checks;
mod decorator;
mod error;
pub mod forwarding;
mod inbox;
mod memory;
mod store;
mod timers;

pub use decorator::Forwarding;
pub use error::{BackendError, StoreError};
pub use inbox::InboxStore;
pub use memory::MemoryEventStore;
pub use store::EventStore;
pub use timers::{ClaimPage, MemoryTimerStore, TimerListing, TimerStore};
