//! Seeded random worlds and schedules, past the exhaustive bound.
//!
//! Every schedule is a pure function of `(seed, index)`: its own generator
//! is seeded from the pair, so one failing schedule out of a hundred
//! thousand replays alone, and a whole run replays from its seed. Nothing
//! here reads a clock or the OS: the caller picks the seed.

use std::ops::RangeInclusive;

use loomfence_core::Capability;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::actor::AuditEvent;
use crate::check::{Breach, Move, Violation};
use crate::error::SimError;
use crate::trace::Trace;
use crate::world::{StoreMode, World};

/// The generator behind every schedule. A named algorithm rather than
/// `StdRng`, whose algorithm rand may swap in a later release: a seed printed
/// by a failing run must replay the same schedule after a dependency upgrade.
/// It is also cheap enough in an unoptimised test build (`StdRng` is ChaCha12,
/// which took a seventh of a debug run's time).
type Rng64 = Xoshiro256PlusPlus;

/// A bound no schedule reaches (each actor finishes in a dozen steps), so
/// hitting it means something stopped progressing.
const MAX_MOVES: usize = 1_000;

/// Which acquire path the resumers and dead acquirers of a world take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CapabilityMix {
    /// Every one conditional: the kernel under test.
    AllConditional,
    /// Every one unconditional (`acquire_fence`): the documented residual,
    /// where a fence-out is expected (negative control).
    AllFencingOnly,
    /// Each picks one at random: a fleet mid-upgrade, where an old node's
    /// unconditional acquire can still fence out a new node's body.
    Mixed,
}

/// The shape of the random worlds.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomConfig {
    /// How many resumers a world has.
    pub resumers: RangeInclusive<usize>,
    /// How many dead acquirers.
    pub dead_acquirers: RangeInclusive<usize>,
    /// How many unfenced audit appenders.
    pub auditors: RangeInclusive<usize>,
    /// How many deleters (retention deleting the log at some move).
    pub deleters: RangeInclusive<usize>,
    /// Which acquire paths they take.
    pub mix: CapabilityMix,
    /// Chance, per move, that the picked actor crashes instead of stepping.
    pub crash_chance: f64,
    /// How the store answers resume appends.
    pub mode: StoreMode,
}

impl RandomConfig {
    /// 2 to 4 resumers, 0 to 2 dead acquirers, 0 to 2 auditors, no
    /// deleter, a 1-in-20 crash chance per move: bigger than the exhaustive
    /// worlds, small enough that a run of 100 000 stays within a test's
    /// budget.
    #[must_use]
    pub fn standard(mix: CapabilityMix) -> Self {
        Self {
            resumers: 2..=4,
            dead_acquirers: 0..=2,
            auditors: 0..=2,
            deleters: 0..=0,
            mix,
            crash_chance: 0.05,
            mode: StoreMode::Faithful,
        }
    }

    /// The resume racing a delete: 2 to 4 resumers, 0 to 2 dead acquirers,
    /// 0 to 2 auditors and one deleter, which deletes the log at a random
    /// move. With auditors, a winner's body and an audit record can grow a
    /// new log back past the park's sequence after the delete, which the
    /// stores must not take for the park (they check that the event at
    /// `park_seq` is a park; [`StoreMode::NoParkKindCheck`] is the control).
    #[must_use]
    pub fn deleting(mix: CapabilityMix) -> Self {
        Self {
            deleters: 1..=1,
            ..Self::standard(mix)
        }
    }
}

/// One random schedule, run.
#[derive(Clone, Debug)]
pub struct RandomRun {
    /// The generated world before any move (what a violation replays on).
    pub initial: World,
    /// The world at the end.
    pub last: World,
    /// The moves made.
    pub moves: Vec<Move>,
    /// What broke, in order.
    pub violations: Vec<Violation>,
    /// Whether a deleter deleted the log while a resumer held a token it had
    /// not appended under yet.
    pub delete_under_token: bool,
}

/// A violating schedule, with everything needed to replay it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The run's seed.
    pub seed: u64,
    /// The schedule's index within the run.
    pub index: u64,
    /// Its first violation.
    pub violation: Violation,
}

/// What a run of many schedules saw.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Schedules run.
    pub schedules: u64,
    /// Moves made across all of them (steps and crashes).
    pub moves: u64,
    /// Crash moves among them.
    pub crashes: u64,
    /// The longest schedule, in moves.
    pub longest: usize,
    /// Schedules with at least one violation.
    pub violating: u64,
    /// Schedules where a winner's body was fenced out.
    pub fenced_out: u64,
    /// Schedules where a resume recreated a deleted log.
    pub phantom: u64,
    /// Schedules whose delete came while a resumer held an unused token:
    /// the race the deleter is there for.
    pub deletes_under_token: u64,
    /// Schedules that ended with every resumer given up, none crashed, and
    /// the park still open (see [`World::every_resumer_gave_up`]).
    pub unresumed: u64,
    /// The index of the first such schedule, to replay one.
    pub first_unresumed: Option<u64>,
    /// The first violating schedule.
    pub first: Option<Failure>,
}

/// The seed of schedule `index` of the run seeded `seed` (SplitMix64 over
/// both, so neighbouring indices get unrelated streams).
#[must_use]
pub fn schedule_seed(seed: u64, index: u64) -> u64 {
    splitmix64(seed ^ splitmix64(index))
}

/// SplitMix64's output function: a bijective mix of 64 bits.
fn splitmix64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws an acquire path for one actor.
fn capability(mix: CapabilityMix, rng: &mut Rng64) -> Capability {
    match mix {
        CapabilityMix::AllConditional => Capability::Conditional,
        CapabilityMix::AllFencingOnly => Capability::FencingOnly,
        CapabilityMix::Mixed if rng.random_bool(0.5) => Capability::Conditional,
        CapabilityMix::Mixed => Capability::FencingOnly,
    }
}

/// Draws a world: resumers `A, B, …`, dead acquirers `P, Q, …`, auditors
/// `X, Y, …`, deleters `r, s, …` (retention, lower case so that no count of
/// dead acquirers can reach its letters).
fn generate_world(config: &RandomConfig, rng: &mut Rng64) -> Result<World, SimError> {
    let mut world = World::parked()?.in_mode(config.mode);
    let resumers = rng.random_range(config.resumers.clone());
    let dead = rng.random_range(config.dead_acquirers.clone());
    let auditors = rng.random_range(config.auditors.clone());
    // Drawn only when the range is not fixed, so a config without
    // deleters draws the same worlds from a seed as before they existed.
    let deleters = if config.deleters.start() == config.deleters.end() {
        *config.deleters.start()
    } else {
        rng.random_range(config.deleters.clone())
    };
    for label in ('A'..='O').take(resumers) {
        world = world.with_resumer(label, capability(config.mix, rng));
    }
    for label in ('P'..='W').take(dead) {
        world = world.with_dead_acquirer(label, capability(config.mix, rng));
    }
    for label in ('X'..='Z').take(auditors) {
        let event = if rng.random_bool(0.5) {
            AuditEvent::Denied
        } else {
            AuditEvent::AppEmit
        };
        world = world.with_auditor(label, event);
    }
    for label in ('r'..='w').take(deleters) {
        world = world.with_deleter(label);
    }
    Ok(world)
}

/// Generates and runs schedule `index` of the run seeded `seed`: at each
/// move an enabled actor is picked uniformly, and crashes with
/// `config.crash_chance` instead of stepping, until no actor can act.
pub fn run_one(config: &RandomConfig, seed: u64, index: u64) -> Result<RandomRun, SimError> {
    let mut rng = Rng64::seed_from_u64(schedule_seed(seed, index));
    let initial = generate_world(config, &mut rng)?;
    let mut trace = Trace::new(initial.clone())?;
    let mut enabled = Vec::new();
    let mut delete_under_token = false;
    loop {
        enabled.clear();
        enabled.extend(trace.world().enabled());
        if enabled.is_empty() {
            break;
        }
        if trace.moves().len() >= MAX_MOVES {
            return Err(SimError::Runaway {
                steps: trace.moves().len(),
            });
        }
        let actor = enabled[rng.random_range(0..enabled.len())];
        let step = if rng.random_bool(config.crash_chance) {
            Move::Crash(actor)
        } else {
            delete_under_token |= trace.world().deletes_under_token(actor);
            Move::Step(actor)
        };
        trace.apply(step)?;
    }
    let moves = trace.moves().to_vec();
    let (last, violations) = trace.finish();
    Ok(RandomRun {
        initial,
        last,
        moves,
        violations,
        delete_under_token,
    })
}

/// Runs schedules `0..count` of the run seeded `seed`.
pub fn run_many(config: &RandomConfig, seed: u64, count: u64) -> Result<Summary, SimError> {
    let mut summary = Summary {
        schedules: 0,
        moves: 0,
        crashes: 0,
        longest: 0,
        violating: 0,
        fenced_out: 0,
        phantom: 0,
        deletes_under_token: 0,
        unresumed: 0,
        first_unresumed: None,
        first: None,
    };
    for index in 0..count {
        let run = run_one(config, seed, index)?;
        summary.schedules += 1;
        summary.moves += run.moves.len() as u64;
        summary.crashes += run
            .moves
            .iter()
            .filter(|step| matches!(step, Move::Crash(_)))
            .count() as u64;
        summary.longest = summary.longest.max(run.moves.len());
        summary.deletes_under_token += u64::from(run.delete_under_token);
        if run.last.every_resumer_gave_up() {
            summary.unresumed += 1;
            summary.first_unresumed = summary.first_unresumed.or(Some(index));
        }
        if let Some(first) = run.violations.first() {
            summary.violating += 1;
            if run.violations.iter().any(|v| v.breach.is_fence_out()) {
                summary.fenced_out += 1;
            }
            if run
                .violations
                .iter()
                .any(|v| matches!(v.breach, Breach::PhantomLog { .. }))
            {
                summary.phantom += 1;
            }
            if summary.first.is_none() {
                summary.first = Some(Failure {
                    seed,
                    index,
                    violation: first.clone(),
                });
            }
        }
    }
    Ok(summary)
}
