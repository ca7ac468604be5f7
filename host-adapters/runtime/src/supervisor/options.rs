//! How a supervisor behaves: its options and their defaults.

use std::fmt;
use std::sync::Arc;

use loomfence_core::{ExecutionId, redrive::RedrivePolicy};
use loomfence_store::TimerStore;

use crate::clock::{Clock, Random, system_now, system_random};
use crate::error::RuntimeError;
use crate::features::Features;
use crate::resumed_hook::{OnResumed, no_body};

/// A callback that receives every supervision failure, for logging or
/// alerting; the supervisor itself goes on.
pub type OnError = Arc<dyn Fn(&ExecutionId, &RuntimeError) + Send + Sync>;

/// How the supervisor behaves.
///
/// The defaults are the behaviour of a supervisor without re-drive: a
/// contended resume goes to `on_error` and its park is left for the next
/// notice, a [`rebuild`](super::ChildSupervisor::rebuild) or `recover()`.
/// Re-drive takes both [`Features::redrive`] and a timer store in
/// [`SupervisorOptions::redrive`]; see [`ChildSupervisor`](super::ChildSupervisor) for the
/// order in which a fleet switches it on.
#[derive(Clone)]
pub struct SupervisorOptions {
    /// Conditional resumes after the unfenced try met a stale fence, before
    /// giving up (each is itself up to three acquisitions).
    pub conditional_tries: u32,
    /// Receives every failure.
    pub on_error: OnError,
    /// The time to stamp resumes with, and to schedule re-drive rows from.
    pub now: Clock,
    /// Opt-in behaviour, all off by default. With
    /// [`Features::redrive`] on and a timer store in
    /// [`SupervisorOptions::redrive`], a contended resume writes a re-drive
    /// row instead of going to `on_error`. On without a timer store, the
    /// supervisor behaves as if it were off, and says so once, with a
    /// warning, when it is built.
    pub features: Features,
    /// The timer store re-drive rows are written to: the one the fleet's
    /// timer services claim from. `None` (the default): no re-drive.
    pub redrive: Option<Arc<dyn TimerStore>>,
    /// The schedule of the first re-drive row's delay (try 0). Give it the
    /// timer services' policy, so that a chain follows one schedule.
    pub policy: RedrivePolicy,
    /// A draw in `[0, 1)` for the first row's jitter, called once per row
    /// written. A draw outside `[0, 1)` fails that supervision with
    /// [`RuntimeError::Redrive`] around a [`RuntimeError::Input`].
    /// By default a non-cryptographic draw from the standard library's
    /// randomly keyed hasher; a test or a simulation passes a seeded one.
    pub random: Random,
    /// Receives each resume the supervisor's re-driver lands (a re-drive
    /// fired by a timer service, which has no caller to answer it to). The
    /// host starts the parent's body from it. The supervisor's own calls
    /// ([`watch`](super::ChildSupervisor::watch),
    /// [`child_ended`](super::ChildSupervisor::child_ended),
    /// [`rebuild`](super::ChildSupervisor::rebuild)) answer their resumes
    /// to the caller instead, and never pass them here, so a body is
    /// started once. Default: a debug trace, no body.
    pub on_resumed: OnResumed,
}

impl Default for SupervisorOptions {
    fn default() -> Self {
        Self {
            conditional_tries: 3,
            on_error: Arc::new(
                |parent, error| tracing::warn!(%parent, %error, "child supervision failed"),
            ),
            now: Arc::new(system_now),
            features: Features::none(),
            redrive: None,
            policy: RedrivePolicy::default(),
            random: system_random(),
            on_resumed: no_body(),
        }
    }
}

impl SupervisorOptions {
    /// Whether a contended resume is scheduled for re-drive: the feature
    /// is on and a timer store is given.
    #[must_use]
    pub fn schedules_redrive(&self) -> bool {
        self.features.redrive && self.redrive.is_some()
    }
}

impl fmt::Debug for SupervisorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorOptions")
            .field("conditional_tries", &self.conditional_tries)
            .field("features", &self.features)
            .field("redrive", &self.redrive.is_some())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}
