//! The re-drivers every node of the CLI's fleet registers, in one order:
//! the child supervisor's, then the inbox's. The worker's timer service and
//! `loomfence recover` both take them from here, because a re-drive row is
//! judged by the first re-driver that is not a noop, so every node that
//! fires one must hold the same list (a node missing the inbox would retire
//! a message's row undelivered).

use std::sync::Arc;

use loomfence_core::redrive::RedrivePolicy;
use loomfence_runtime::{
    ChildSupervisor, Features, Inbox, OnResumed, Redriver, inbox::InboxOptions,
    supervise::SupervisorOptions,
};
use loomfence_store::{EventStore, InboxStore, TimerStore};

/// The retry schedule of every re-drive the CLI makes (the race's, the
/// fleet's workers', a recovery's fresh chain): the design's shape
/// (doubling, capped, 8 retries) on a command line's time scale, 20 ms
/// doubling to at most 1 s, so a chain that gives up does so within about
/// 3.3 s. One constant, because a recovery starts a chain the workers
/// carry on.
pub(crate) const POLICY: RedrivePolicy = RedrivePolicy {
    base_ms: 20,
    cap_ms: 1_000,
    max_attempts: 8,
};

/// The supervisor and the inbox over one store, with re-drive on.
pub(crate) struct Redrivers {
    /// Resumes parents whose children ended; writes and re-drives their
    /// re-drive rows.
    pub(crate) supervisor: Arc<ChildSupervisor<dyn EventStore>>,
    /// Delivers messages; re-drives their intent and re-drive rows.
    pub(crate) inbox: Arc<Inbox<dyn EventStore, dyn InboxStore>>,
}

impl Redrivers {
    /// Both over `events`, `timers` and `inbox`; each landed resume goes to
    /// its hook (`on_supervised` for a parent, `on_delivered` for a
    /// message).
    pub(crate) fn new(
        events: &Arc<dyn EventStore>,
        timers: &Arc<dyn TimerStore>,
        inbox: Arc<dyn InboxStore>,
        on_supervised: OnResumed,
        on_delivered: OnResumed,
    ) -> Self {
        let supervisor = Arc::new(ChildSupervisor::new(
            Arc::clone(events),
            SupervisorOptions {
                features: Features::none().with_redrive(true),
                redrive: Some(Arc::clone(timers)),
                policy: POLICY,
                on_resumed: on_supervised,
                ..SupervisorOptions::default()
            },
        ));
        let inbox = Arc::new(Inbox::new(
            Arc::clone(events),
            inbox,
            InboxOptions {
                features: Features::none().with_redrive(true),
                policy: POLICY,
                on_resumed: on_delivered,
                ..InboxOptions::default()
            },
        ));
        Self { supervisor, inbox }
    }

    /// The re-drivers, in the one order every node registers them.
    pub(crate) fn list(&self) -> Vec<Arc<dyn Redriver>> {
        vec![self.supervisor.redriver(), self.inbox.redriver()]
    }
}
