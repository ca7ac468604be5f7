//! Time and randomness from outside: what the supervisor and the timer
//! service are given instead of reading a clock or a random source
//! themselves, with the real ones as defaults.
//!
//! You need it to replace the defaults: a test or a simulation passes a
//! virtual [`Clock`] and a [`seeded_random`] source (with a seed it prints)
//! in the options, which makes a supervision or a timer tick
//! deterministic.

use std::sync::{Arc, Mutex, PoisonError};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// A source of the current time in ms since the epoch: the resume
/// events' `at`, the claims' `now`. Tests pass a virtual one.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// A source of random numbers in `[0, 1)`, for the jitter of a retry's
/// delay (one draw per fire, or per re-drive row a supervisor writes). A
/// number outside `[0, 1)` is refused as a typed error and nothing is
/// written for it.
pub type Random = Arc<dyn Fn() -> f64 + Send + Sync>;

/// A [`Random`] drawing from a `StdRng` seeded with `seed`: the same seed
/// gives the same draws, in the order they are asked for. Tests and
/// simulations use it with a seed they print.
#[must_use]
pub fn seeded_random(seed: u64) -> Random {
    let rng = Mutex::new(StdRng::seed_from_u64(seed));
    Arc::new(move || {
        rng.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .random::<f64>()
    })
}

/// A [`Random`] seeded once from a seed nobody chose: the default of
/// every option set that takes one.
#[must_use]
pub fn system_random() -> Random {
    seeded_random(fresh_seed())
}

/// The wall clock in ms since the epoch; 0 if the clock is before it.
pub(crate) fn system_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// A seed nobody chose. std's `RandomState` is keyed from the OS's
/// randomness once per process (and differs per instance), which is all a
/// seed needs; it spares the `rand` crate's OS-entropy feature. The time
/// and the process id are hashed in as well.
fn fresh_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    RandomState::new().hash_one((std::time::SystemTime::now(), std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_random_repeats_itself() {
        let a = seeded_random(7);
        let b = seeded_random(7);
        let first: Vec<f64> = (0..5).map(|_| a()).collect();
        let second: Vec<f64> = (0..5).map(|_| b()).collect();
        assert_eq!(first, second);
        assert!(first.iter().all(|draw| (0.0..1.0).contains(draw)));
    }
}
