//! The child supervisor: resumes a parent parked on its children once they
//! have ended, with their outcomes as the answer.
//!
//! It is a pump over the core's [`SuperviseMachine`](loomfence_core::supervise::SuperviseMachine),
//! which holds every rule of a supervision (the unfenced try first, the
//! conditional tries on a stale fence, the re-drive row on contention; its
//! steps head `core/src/supervise/machine.rs`). This module adds the IO
//! (`pump.rs`), the edge cache (kept as the machine's `watching` says), the
//! callbacks, tracing and metrics:
//!
//! - **Contention is an error to the caller**: if every conditional try
//!   was contended, the supervision answers with that error, which
//!   `on_error` also receives, once, unless re-drive is on (the last
//!   point).
//! - **It is safe on several nodes at once**: every path that appends is
//!   conditional on the park still being open, in the store.
//! - **Its state is only a cache.** The child → parent edges come from the
//!   parents' own parks, so [`ChildSupervisor::rebuild`] restores them from
//!   the logs after a restart, and resumes whatever became ready meanwhile.
//! - **A contended resume can be re-driven** instead of left for an
//!   operator: see [`ChildSupervisor`]'s docs for re-drive and the order in
//!   which a fleet switches it on.

mod edges;
mod options;
mod pump;
mod redriver;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use loomfence_core::{ExecutionId, Resumed};
use loomfence_store::EventStore;

use self::edges::Edges;
pub use self::options::{OnError, SupervisorOptions};
use crate::error::RuntimeError;
use crate::redriver::Redriver;

/// What the supervisor did for one parent.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Supervised {
    /// It resumed the parent.
    Resumed(Resumed),
    /// Someone else answered the park first (another supervisor, a timer, a
    /// manual resume). Nothing to do.
    AlreadyAnswered,
    /// The parent waits on children that have not ended yet.
    Waiting,
    /// The parent has no open park with a child wait; not the supervisor's.
    NotWaitingOnChildren,
    /// Every conditional try was contended, and re-drive is on: a re-drive
    /// row (try 0) of the parent was written, due at `wake_at`, for a timer
    /// service to hand to the supervisor's re-driver. The contention is
    /// handled, so it is not passed to `on_error`; the park is still open
    /// and the edges are kept.
    RedriveScheduled {
        /// When the row is due, in ms since the epoch.
        wake_at: i64,
    },
}

/// Resumes parents parked on `CHILD_DONE` waits when their children end.
///
/// # Re-drive
///
/// With [`Features::redrive`](crate::Features::redrive) on and a timer store
/// in [`SupervisorOptions::redrive`], a resume whose every conditional try
/// was contended is not left for an operator: the supervisor writes a
/// re-drive row (try 0) of the parent to the timer store, due after a
/// full-jitter delay of [`SupervisorOptions::policy`], and answers
/// [`Supervised::RedriveScheduled`]; the contention is handled, so it does
/// not go to `on_error` (a row that cannot be written does, as
/// [`RuntimeError::Redrive`]). The row names the parent only: when a
/// timer service fires it, the supervisor's re-driver
/// ([`ChildSupervisor::redriver`]) re-reads the parent and its children and
/// resumes conditionally, and the service carries the chain on (the next
/// rows, and one exhaustion report) if that is contended again.
///
/// Off (the default), or on with no timer store, a contended resume goes to
/// `on_error` as it always has. On with no timer store is read as off, and
/// the supervisor says so once, with a warning, when it is built: a flag
/// that cannot take effect is a deployment mistake to see, not a reason to
/// refuse to supervise.
///
/// # Rolling upgrade
///
/// A re-drive row is only fired by a timer service that has this
/// supervisor's re-driver registered; a node without one leaves the row to
/// the nodes that have, and an older timer service would retire it as an
/// obsolete wake. So a fleet switches re-drive on in three steps, each
/// finished on every node before the next begins:
///
/// 1. deploy this version everywhere, with `features.redrive` off (the
///    default): nothing changes;
/// 2. register the supervisor's re-driver
///    ([`ChildSupervisor::redriver`]) on every node's timer service: still
///    no rows are written, but every node can now fire them;
/// 3. switch `features.redrive` on (with the timer store in
///    [`SupervisorOptions::redrive`]).
///
/// Switching it off again is safe at any time: rows already written are
/// still fired by the registered re-drivers.
pub struct ChildSupervisor<S: EventStore + ?Sized> {
    /// Where every log lives.
    store: Arc<S>,
    /// Behaviour.
    options: SupervisorOptions,
    /// The cached child → parent edges.
    edges: Mutex<Edges>,
}

impl<S: EventStore + ?Sized> fmt::Debug for ChildSupervisor<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSupervisor")
            .field("options", &self.options)
            .field(
                "edges",
                &*self.edges.lock().unwrap_or_else(PoisonError::into_inner),
            )
            .finish_non_exhaustive()
    }
}

impl<S: EventStore + ?Sized> ChildSupervisor<S> {
    /// A supervisor over `store` with no parents known yet.
    ///
    /// Warns once (through `tracing`) if [`Features::redrive`] is on with no
    /// timer store: re-drive is then off.
    ///
    /// [`Features::redrive`]: crate::Features::redrive
    pub fn new(store: Arc<S>, options: SupervisorOptions) -> Self {
        if options.features.redrive && options.redrive.is_none() {
            tracing::warn!(
                "features.redrive is on but the supervisor has no timer store: \
                 contended resumes go to on_error, as with re-drive off"
            );
        }
        Self {
            store,
            options,
            edges: Mutex::new(Edges::default()),
        }
    }

    /// Starts watching `parent`: reads its park, remembers which children it
    /// waits on, and resumes it right away if they have already ended.
    pub async fn watch(&self, parent: &ExecutionId) -> Result<Supervised, RuntimeError> {
        let result = self.supervise_watched(parent).await;
        self.report(parent, result)
    }

    /// Tells the supervisor `child` has ended; resumes every parent whose
    /// wait that completes. Answers per parent, in id order.
    pub async fn child_ended(
        &self,
        child: &ExecutionId,
    ) -> Vec<(ExecutionId, Result<Supervised, RuntimeError>)> {
        let parents = self.parents_waiting_on(child);
        let mut results = Vec::with_capacity(parents.len());
        for parent in parents {
            let result = self.supervise_watched(&parent).await;
            results.push((parent.clone(), self.report(&parent, result)));
        }
        results
    }

    /// Rebuilds the edges from the logs of `parents` (after a restart, or
    /// on any node that takes over) and resumes those that became ready
    /// while nobody was watching.
    pub async fn rebuild(
        &self,
        parents: impl IntoIterator<Item = ExecutionId>,
    ) -> Vec<(ExecutionId, Result<Supervised, RuntimeError>)> {
        *self.edges() = Edges::default();
        let mut results = Vec::new();
        for parent in parents {
            let result = self.watch(&parent).await;
            results.push((parent, result));
        }
        results
    }

    /// This supervisor as a re-driver, for a timer service to hand the due
    /// re-drive rows of parents to (register it on every node's timer
    /// service before switching re-drive on: see the type's docs).
    ///
    /// It re-runs the supervision of the row's parent from the log and
    /// never writes a row itself; see its [`Redriver`] impl for its
    /// answers. Any node's supervisor over the same event store can
    /// re-drive any parent: it needs no edges of its own.
    pub fn redriver(self: &Arc<Self>) -> Arc<dyn Redriver>
    where
        S: 'static,
    {
        self.clone()
    }

    /// The parents currently known to be parked on `child`: what a
    /// retention policy must not delete the child under.
    pub fn parents_waiting_on(&self, child: &ExecutionId) -> Vec<ExecutionId> {
        self.edges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .parents_of
            .get(child)
            .map(|parents| parents.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Passes a failure to `on_error` on its way out.
    fn report(
        &self,
        parent: &ExecutionId,
        result: Result<Supervised, RuntimeError>,
    ) -> Result<Supervised, RuntimeError> {
        if let Err(error) = &result {
            (self.options.on_error)(parent, error);
        }
        result
    }

    /// The edge cache, locked. A panic elsewhere cannot leave it
    /// inconsistent in a way the next read of a park does not repair.
    fn edges(&self) -> std::sync::MutexGuard<'_, Edges> {
        self.edges.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
