//! How a supervisor behaves: its options and their defaults.

use std::fmt;
use std::sync::Arc;

use loomfence_core::ExecutionId;

use super::SupervisorError;

/// A callback that receives every supervision failure, for logging or
/// alerting; the supervisor itself goes on.
pub type OnError = Arc<dyn Fn(&ExecutionId, &SupervisorError) + Send + Sync>;

/// A source of the current time in ms, for the resume events' `at`.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// How the supervisor behaves.
#[derive(Clone)]
pub struct SupervisorOptions {
    /// Conditional resumes after the unfenced try met a stale fence, before
    /// giving up (each is itself up to three acquisitions).
    pub conditional_tries: u32,
    /// Receives every failure.
    pub on_error: OnError,
    /// The time to stamp resumes with.
    pub now: Clock,
}

impl Default for SupervisorOptions {
    fn default() -> Self {
        Self {
            conditional_tries: 3,
            on_error: Arc::new(
                |parent, error| tracing::warn!(%parent, %error, "child supervision failed"),
            ),
            now: Arc::new(system_now),
        }
    }
}

impl fmt::Debug for SupervisorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorOptions")
            .field("conditional_tries", &self.conditional_tries)
            .finish_non_exhaustive()
    }
}

/// The wall clock in ms since the epoch; 0 if the clock is before it.
fn system_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}
