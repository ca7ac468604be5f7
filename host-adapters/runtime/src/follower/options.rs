//! How a [`Follower`](crate::Follower) reads, waits and hands on resumes.

use std::fmt;
use std::time::Duration;

use loomfence_core::feed::FollowOptions;

use crate::clock::Clock;
use crate::resumed_hook::{OnResumed, no_body};

/// A follower's behaviour.
#[derive(Clone)]
pub struct FollowerOptions {
    /// How the machine pages the feed and the open parks.
    pub follow: FollowOptions,
    /// The longest a caught-up follower waits without a wake from the
    /// store. The cursor, not the wake, is the truth: this bounds what a
    /// lost wake costs (and is the whole latency on a store that cannot
    /// wake, or a write from another process into a SQLite file).
    pub poll_interval: Duration,
    /// Supervisions in flight at once: each is a few reads in a row, so a
    /// pool's worth keeps it busy.
    pub concurrency: usize,
    /// The pause after a store error before the same step is tried again.
    pub error_pause: Duration,
    /// Receives each resume a supervision landed, to start the parent's
    /// body. Default: a debug trace, no body.
    pub on_resumed: OnResumed,
    /// When set, a caught-up follower's own reads fall on the multiples of
    /// `poll_interval` on this clock, so followers in several processes
    /// read in the same instant and race for the same parents: what a
    /// fleet whose store cannot wake across processes (SQLite) needs for
    /// its race to happen on every parent, not by chance. Default: none,
    /// each waits `poll_interval` from its own last read.
    pub aligned_to: Option<Clock>,
}

impl FollowerOptions {
    /// How long a caught-up follower waits before reading on its own.
    pub(crate) fn poll_delay(&self) -> Duration {
        let Some(clock) = &self.aligned_to else {
            return self.poll_interval;
        };
        let interval = i64::try_from(self.poll_interval.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        let wait = interval - clock().rem_euclid(interval);
        Duration::from_millis(u64::try_from(wait).unwrap_or(0))
    }
}

impl Default for FollowerOptions {
    /// Pages of 256, a 500 ms poll, 8 supervisions at once, a 100 ms pause
    /// after a store error, no body.
    fn default() -> Self {
        Self {
            follow: FollowOptions::default(),
            poll_interval: Duration::from_millis(500),
            concurrency: 8,
            error_pause: Duration::from_millis(100),
            on_resumed: no_body(),
            aligned_to: None,
        }
    }
}

impl fmt::Debug for FollowerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FollowerOptions")
            .field("follow", &self.follow)
            .field("poll_interval", &self.poll_interval)
            .field("concurrency", &self.concurrency)
            .field("error_pause", &self.error_pause)
            .field("aligned", &self.aligned_to.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn aligned_polls_fall_on_multiples_of_the_interval() {
        let at = |now: i64| FollowerOptions {
            poll_interval: Duration::from_millis(200),
            aligned_to: Some(Arc::new(move || now)),
            ..FollowerOptions::default()
        };
        assert_eq!(at(1_000).poll_delay(), Duration::from_millis(200));
        assert_eq!(at(1_050).poll_delay(), Duration::from_millis(150));
        assert_eq!(at(-50).poll_delay(), Duration::from_millis(50));
        let free = FollowerOptions::default();
        assert_eq!(free.poll_delay(), free.poll_interval);
    }
}
