//! Times as an operator reads them: a date, and how far from now.

use std::time::{Duration, UNIX_EPOCH};

/// `ms` (since the epoch) as an RFC 3339 UTC time with milliseconds; a
/// time before the epoch is shown as its ms.
pub(crate) fn at(ms: i64) -> String {
    match u64::try_from(ms) {
        Ok(after) => {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(after)).to_string()
        }
        Err(_) => format!("{ms} ms"),
    }
}

/// How far `ms` is from `now`: `in 4m 10s`, `12s ago`, `now` (to the
/// second; under a second reads as `now`).
pub(crate) fn from_now(ms: i64, now: i64) -> String {
    let seconds = |gap: i64| {
        humantime::format_duration(Duration::from_secs(gap.unsigned_abs() / 1000)).to_string()
    };
    let gap = ms.saturating_sub(now);
    if gap.abs() < 1000 {
        "now".to_owned()
    } else if gap > 0 {
        format!("in {}", seconds(gap))
    } else {
        format!("{} ago", seconds(gap))
    }
}

/// `at(ms)` followed by `from_now` in parentheses.
pub(crate) fn at_from_now(ms: i64, now: i64) -> String {
    format!("{} ({})", at(ms), from_now(ms, now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_dates_and_distances() {
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(-5), "-5 ms");
        assert_eq!(from_now(10_000, 10_400), "now");
        assert_eq!(from_now(70_000, 10_000), "in 1m");
        assert_eq!(from_now(0, 12_500), "12s ago");
        assert_eq!(at_from_now(1_000, 1_000), "1970-01-01T00:00:01.000Z (now)");
    }
}
