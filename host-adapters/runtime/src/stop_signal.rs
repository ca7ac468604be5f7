//! The stop signal a service's handle shares with its loop (the timer
//! service's, the follower's): a flag the loop checks between steps, and a
//! wake for the loop's waits and pauses.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Set once by the handle; read by the loop.
#[derive(Debug, Default)]
pub(crate) struct StopSignal {
    /// Set once: the loop stops at its next step.
    pub(crate) stopping: AtomicBool,
    /// Wakes the loop from a wait or a pause.
    pub(crate) notify: Notify,
}

impl StopSignal {
    /// Asks the loop to stop, waking it wherever it waits.
    pub(crate) fn raise(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        // A permit is stored if the loop is between waits right now.
        self.notify.notify_one();
    }

    /// Whether stopping was asked for.
    pub(crate) fn is_raised(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}
