//! The host's clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in ms since the epoch: the CLI is a host, so it reads the clock the
/// core never does. A clock before 1970 reads as 0.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
