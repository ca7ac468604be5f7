//! The re-drive backoff, pure: the policy, its full-jitter delay, the wake
//! time of a re-drive row, and the bounded in-process backoff of plain
//! timer wakes.
//!
//! Nothing here reads a clock or a random source. Time is `i64` ms since the
//! epoch, passed in; randomness is one [`Draw`] in `[0, 1)`, passed in and
//! checked once where it enters ([`Draw::new`]), the way an [`ExecutionId`]
//! is.
//!
//! # The schedule
//!
//! Try `n` (from 0) waits a full-jitter delay, `floor(draw * min(cap,
//! base * 2^n))` ms ([`RedrivePolicy::delay_ms`]). The same schedule and the
//! same cap serve both kinds of retry the timer service makes (see
//! [`FireMachine`](crate::timer::FireMachine)):
//!
//! - a **re-drive row** is persisted: row `n` is written for try `n`, at
//!   [`redrive_wake_at`]`(now, delay_ms(n), fired_wake_at)`;
//! - a contended **plain wake** is retried in process: this node's
//!   [`WakeBackoff`](crate::wake_backoff::WakeBackoff) remembers, per execution, the next try and when it may
//!   be made.
//!
//! Either way, once try `n` would be the `max_attempts`-th (that is, `n >=
//! max_attempts`), the chain ends: one [`RedriveExhaustedError`] is reported
//! and the row is retired, leaving the execution to `recover()`. With the
//! default policy that is 8 retries (tries 0 to 7) after the contention that
//! started the chain.

use serde::{Deserialize, Serialize};

use crate::input::{ExecutionId, InputError};

/// The latest time a timer row may carry: the largest integer a JavaScript
/// number holds exactly ([`MAX_SAFE_INTEGER`](crate::log::MAX_SAFE_INTEGER)), as
/// for every other time and sequence. The earliest is 0.
pub const MAX_TIMER_MS: i64 = (1 << 53) - 1;

/// How a contended wake is retried: the full-jitter exponential schedule and
/// its cap.
///
/// Every value is allowed: the arithmetic saturates instead of overflowing,
/// for any attempt. A zero `base_ms` or `cap_ms` retries at once; a zero
/// `max_attempts` gives up at the first contention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RedrivePolicy {
    /// The first try's ceiling, in ms; it doubles with every try.
    pub base_ms: u64,
    /// The largest ceiling, in ms.
    pub cap_ms: u64,
    /// How many retries a chain makes before it gives up.
    pub max_attempts: u32,
}

impl Default for RedrivePolicy {
    /// The design's values (design: the re-drive): 200 ms, doubling to at most 30 s,
    /// 8 retries.
    fn default() -> Self {
        Self {
            base_ms: 200,
            cap_ms: 30_000,
            max_attempts: 8,
        }
    }
}

impl RedrivePolicy {
    /// The ceiling of try `attempt`'s delay: `min(cap, base * 2^attempt)`,
    /// saturating, so any `attempt` (`u32::MAX` included) gives the cap (or
    /// 0 when `base_ms` is 0).
    #[must_use]
    pub fn ceiling_ms(&self, attempt: u32) -> u64 {
        if self.base_ms == 0 {
            return 0;
        }
        let grown = 1_u64
            .checked_shl(attempt)
            .and_then(|factor| self.base_ms.checked_mul(factor))
            .unwrap_or(u64::MAX);
        grown.min(self.cap_ms)
    }

    /// The full-jitter delay of try `attempt`: `floor(draw * ceiling)`, in
    /// `[0, ceiling)` for a ceiling above 0, and 0 for a ceiling of 0.
    ///
    /// A ceiling above 2^53 is not exact as an `f64`, but rounding is
    /// monotone and even the largest draw below 1 times the rounded ceiling
    /// rounds to below the ceiling, so the interval holds for every ceiling.
    /// The result is also clamped below the ceiling, so the bound does not
    /// rest on that argument alone.
    #[must_use]
    pub fn delay_ms(&self, attempt: u32, draw: Draw) -> u64 {
        let ceiling = self.ceiling_ms(attempt);
        if ceiling == 0 {
            return 0;
        }
        // The product is in [0, ceiling); `as` saturates, and the `min`
        // states the bound (see above).
        let scaled = (draw.get() * ceiling as f64).floor() as u64;
        scaled.min(ceiling - 1)
    }
}

/// When the row for a re-drive's next try is due: `max(now + delay,
/// fired_wake_at + 1)`.
///
/// The `+ 1` keeps the new row's key `(execution_id, wake_at)` apart from
/// the row being fired, which is retired right after the new one is written:
/// with a zero draw and `fired_wake_at == now`, the two would be the same row
/// and retiring one would retire both.
///
/// `now + delay` saturates at [`MAX_TIMER_MS`]. `None` when no time in
/// `0..=MAX_TIMER_MS` follows `fired_wake_at`, or when `now` is negative
/// enough to put the result below 0: the chain cannot continue with a
/// storable row.
#[must_use]
pub fn redrive_wake_at(now: i64, delay_ms: u64, fired_wake_at: i64) -> Option<i64> {
    let after_delay = now.saturating_add_unsigned(delay_ms).min(MAX_TIMER_MS);
    let wake_at = after_delay.max(fired_wake_at.saturating_add(1));
    (0..=MAX_TIMER_MS).contains(&wake_at).then_some(wake_at)
}

/// One random draw in `[0, 1)`, checked once where it enters.
///
/// The kernel never draws a random number itself: a host passes one in
/// (`Math.random()`, `rand`'s `random::<f64>()`, a simulation's seeded
/// generator). Negative zero is read as zero, so equal draws compare and
/// hash equal.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Draw(f64);

impl Draw {
    /// A draw of 0: no jitter, the earliest time the schedule allows.
    pub const ZERO: Draw = Draw(0.0);

    /// Checks that `value` is a number in `[0, 1)`.
    pub fn new(value: f64) -> Result<Self, InputError> {
        if value.is_nan() {
            Err(InputError::DrawNaN)
        } else if value < 0.0 {
            Err(InputError::DrawNegative { value })
        } else if value >= 1.0 {
            Err(InputError::DrawNotBelowOne { value })
        } else {
            // `-0.0 + 0.0` is `+0.0`: one zero, one bit pattern.
            Ok(Self(value + 0.0))
        }
    }

    /// The value, in `[0, 1)`.
    #[must_use]
    pub fn get(self) -> f64 {
        self.0
    }
}

// NaN is refused and -0.0 normalised, so bit equality is numeric equality.
impl Eq for Draw {}

impl std::hash::Hash for Draw {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// A chain of retries that gave up: reported once, when its row is retired,
/// and the execution is left to `recover()`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error(
    "re-drive of {execution_id:?} (timer at {wake_at} ms) gave up after {attempts} retries; the execution is left to recover()"
)]
pub struct RedriveExhaustedError {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The `wake_at` of the row that was retired.
    pub wake_at: i64,
    /// Retries made: the try that would have come next.
    pub attempts: u32,
}

/// What a [`WakeBackoff`](crate::wake_backoff::WakeBackoff) remembers about one execution: its next try and
/// when that try may be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackoffEntry {
    /// The wake whose fire was contended. The entry belongs to the row
    /// `(execution, wake_at)`: that row's final outcome clears it, and only
    /// that row continues its count.
    pub wake_at: i64,
    /// The next try, from 0, as a re-drive row's `attempt` counts.
    pub attempt: u32,
    /// No fire of any timer of this execution acquires before this time.
    pub next_try_at: i64,
}

#[cfg(test)]
mod tests;
