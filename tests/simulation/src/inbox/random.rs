//! Seeded random worlds and schedules, past the exhaustive bound: every
//! schedule a pure function of `(seed, index)` (its own generator seeded
//! from the pair with [`crate::random::schedule_seed`]), so one failing
//! schedule replays alone and a whole run replays from its seed.

use std::collections::BTreeMap;

use loomfence_core::supervise::OnContention;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::check::{Breach, breaches};
use super::error::InboxSimError;
use super::pump::{CrashPoint, Mode};
use super::world::{Cast, Drain, Move, Start, World};

/// A bound no schedule reaches (a few dozen moves is typical).
const MAX_MOVES: usize = 2_000;

/// The chance that a sender at a crash point crashes when it is picked.
const CRASH_CHANCE: f64 = 0.2;

/// One random schedule, run to quiescence.
#[derive(Clone, Debug)]
pub struct RandomRun {
    /// The world's cast.
    pub cast: Cast,
    /// The schedule, in letters.
    pub schedule: String,
    /// Moves made.
    pub moves: usize,
    /// Crashes, by point.
    pub crashes: Vec<CrashPoint>,
    /// The world at the end.
    pub last: World,
    /// What broke.
    pub breaches: Vec<Breach>,
}

/// A violating schedule, with what replays it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The run's seed.
    pub seed: u64,
    /// The schedule's index.
    pub index: u64,
    /// The schedule, in letters.
    pub schedule: String,
    /// What broke.
    pub breaches: Vec<Breach>,
}

/// What a run of many schedules saw.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Schedules run.
    pub schedules: u64,
    /// Moves across them.
    pub moves: u64,
    /// The longest, in moves.
    pub longest: usize,
    /// Crashes, per point.
    pub crashes: BTreeMap<CrashPoint, u64>,
    /// Schedules with a violation.
    pub violating: u64,
    /// Violations per breach name.
    pub breaches: BTreeMap<&'static str, u64>,
    /// The first violating schedule.
    pub first: Option<Failure>,
}

/// Draws a cast: any start, a retry and a second message each half the
/// time, 0 to 3 dead acquirers, every sender crashable, either contention
/// answer for the senders and for the park-time checks (the bodies park
/// through the machine, with its intent row), in `mode`.
fn cast(rng: &mut Xoshiro256PlusPlus, mode: Mode) -> Cast {
    let start = match rng.random_range(0..3) {
        0 => Start::Parked,
        1 => Start::ParkedWithTimer,
        _ => Start::ParksLater,
    };
    let on_contention = if rng.random_bool(0.5) {
        OnContention::Answer
    } else {
        OnContention::WriteRow
    };
    Cast {
        start,
        retry: rng.random_bool(0.5),
        other: rng.random_bool(0.5),
        dead: rng.random_range(0..=3),
        crashable: vec!['S', 'R', 'O'],
        on_contention,
        park_check: if rng.random_bool(0.5) {
            OnContention::Answer
        } else {
            OnContention::WriteRow
        },
        park_intent: true,
        mode,
        drain: Drain::Racing,
    }
}

/// Generates and runs schedule `index` of the run seeded `seed`: at each
/// move an enabled actor is picked uniformly; a sender at a crash point
/// crashes instead with `CRASH_CHANCE`.
pub fn run_one(mode: Mode, seed: u64, index: u64) -> Result<RandomRun, InboxSimError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(crate::random::schedule_seed(seed, index));
    let cast = cast(&mut rng, mode);
    let initial = World::new(&cast)?;
    let mut world = initial.clone();
    let mut moves = Vec::new();
    let mut crashes = Vec::new();
    loop {
        let possible = world.moves()?;
        let steps: Vec<usize> = possible
            .iter()
            .filter_map(|step| match step {
                Move::Step(index) => Some(*index),
                Move::Crash(_) => None,
            })
            .collect();
        if steps.is_empty() {
            break;
        }
        if moves.len() >= MAX_MOVES {
            return Err(InboxSimError::Runaway { steps: moves.len() });
        }
        let actor = steps[rng.random_range(0..steps.len())];
        let step = match world.crash_point(actor) {
            Some(point) if rng.random_bool(CRASH_CHANCE) => {
                crashes.push(point);
                Move::Crash(actor)
            }
            _ => Move::Step(actor),
        };
        world.apply(step)?;
        moves.push(step);
    }
    let found = breaches(&world)?;
    Ok(RandomRun {
        cast,
        schedule: initial.render(&moves),
        moves: moves.len(),
        crashes,
        last: world,
        breaches: found,
    })
}

/// Runs schedules `0..count` of the run seeded `seed`.
pub fn run_many(mode: Mode, seed: u64, count: u64) -> Result<Summary, InboxSimError> {
    let mut summary = Summary::default();
    for index in 0..count {
        let run = run_one(mode, seed, index)?;
        summary.schedules += 1;
        summary.moves += run.moves as u64;
        summary.longest = summary.longest.max(run.moves);
        for point in &run.crashes {
            *summary.crashes.entry(*point).or_default() += 1;
        }
        if !run.breaches.is_empty() {
            summary.violating += 1;
            for breach in &run.breaches {
                *summary.breaches.entry(breach.name()).or_default() += 1;
            }
            if summary.first.is_none() {
                summary.first = Some(Failure {
                    seed,
                    index,
                    schedule: run.schedule,
                    breaches: run.breaches,
                });
            }
        }
    }
    Ok(summary)
}
