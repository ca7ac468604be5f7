//! Every schedule of every length up to a bound: the design's `{A,B}^n` sweep.
//!
//! Each schedule is run on its own from the initial world, so the count is
//! exactly `sum(k^n)` for `k` actors, and a letter naming a finished actor
//! is a no-op step (the schedule still counts). That makes the number a
//! fixed, checkable fact about the sweep rather than about the machine.

use std::collections::HashSet;

use crate::check::{Move, Violation};
use crate::error::SimError;
use crate::trace::Trace;
use crate::world::World;

/// What a sweep saw.
#[derive(Clone, Debug)]
pub struct Enumeration {
    /// Schedules run (every length from 0 to the bound).
    pub schedules: usize,
    /// The distinct worlds the schedules ended in, so a caller can see what
    /// the sweep reached (who won, who lost, how).
    pub end_states: Vec<World>,
    /// Each schedule's violations, in sweep order (shorter schedules
    /// first, then lexicographic in actor order).
    pub violations: Vec<Violation>,
    /// Schedules with at least one violation.
    pub violating_schedules: usize,
}

/// Runs every schedule over `initial`'s actors of length `0..=max_len`.
pub fn all_schedules(initial: &World, max_len: usize) -> Result<Enumeration, SimError> {
    let actors = initial.actors().len();
    let mut schedules = 0;
    let mut end_states = HashSet::new();
    let mut violations = Vec::new();
    let mut violating_schedules = 0;
    for len in 0..=max_len {
        if actors == 0 && len > 0 {
            break;
        }
        let mut digits = vec![0usize; len];
        loop {
            let mut trace = Trace::new(initial.clone())?;
            for &actor in &digits {
                trace.apply(Move::Step(actor))?;
            }
            schedules += 1;
            let (world, found) = trace.finish();
            if !found.is_empty() {
                violating_schedules += 1;
            }
            violations.extend(found);
            end_states.insert(world);
            if !advance(&mut digits, actors) {
                break;
            }
        }
    }
    Ok(Enumeration {
        schedules,
        end_states: end_states.into_iter().collect(),
        violations,
        violating_schedules,
    })
}

/// The next schedule of the same length, as an odometer in base `actors`
/// (last position fastest); `false` after the last one.
fn advance(digits: &mut [usize], actors: usize) -> bool {
    for digit in digits.iter_mut().rev() {
        *digit += 1;
        if *digit < actors {
            return true;
        }
        *digit = 0;
    }
    false
}
