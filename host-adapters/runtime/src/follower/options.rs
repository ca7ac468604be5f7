//! How a [`Follower`](crate::Follower) reads, waits and hands on resumes.

use std::fmt;
use std::time::Duration;

use loomfence_core::feed::FollowOptions;

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
            .finish_non_exhaustive()
    }
}
