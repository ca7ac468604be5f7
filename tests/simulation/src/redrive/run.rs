//! The seeded scheduler: one world per seed, run to quiescence, checked
//! after every step and at the end.
//!
//! A world and its whole schedule are a pure function of one `u64` seed:
//! the generator ([`World::generate`]) and every choice after it (which
//! actor moves, clock advances, crashes and their downtime, the random
//! draws of supervisors and fires) come from one generator seeded with it.
//! A sweep derives its seeds from a base seed
//! ([`crate::random::schedule_seed`]), so a failing seed replays alone.
//!
//! # A step
//!
//! Nodes whose downtime has passed restart first (not a step). Then, if
//! some actor can act: with the world's crash chance (while crashes are
//! left) a random up node crashes; otherwise one move is drawn by weight
//! among the enabled actors and a clock tick (weight 1, 1 to
//! `tick_max_ms` ms). If nothing can act, the clock jumps to the next time
//! something can ([`World::next_time`]); if there is none, the run has
//! quiesced and liveness is judged.

use loomfence_core::log::Terminal;
use rand::{RngExt, SeedableRng};

use super::Rng64;
use super::check::{Breach, Checker, liveness};
use super::config::{Shape, Variant};
use super::error::RedriveSimError;
use super::ledger::Counts;
use super::world::World;

/// A bound no run reaches (a few hundred steps is typical): reaching it
/// means something keeps re-arming itself.
const MAX_STEPS: u64 = 100_000;

/// A breach and when it appeared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The world's seed.
    pub seed: u64,
    /// The step after which it held (0: before any; `u64::MAX`: at the end).
    pub step: u64,
    /// The clock then.
    pub now: i64,
    /// What broke.
    pub breach: Breach,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let when = if self.step == u64::MAX {
            "at quiescence".to_owned()
        } else {
            format!("after step {}", self.step)
        };
        write!(
            f,
            "SIM_SEED={} {:?} {when} (t = {} ms)",
            self.seed, self.breach, self.now
        )
    }
}

/// One seed, run.
#[derive(Clone, Debug)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// The world at the end.
    pub world: World,
    /// Steps taken (moves, crashes and clock jumps).
    pub steps: u64,
    /// What broke, in order.
    pub violations: Vec<Violation>,
    /// Parents left to `recover()` after a paid-for exhaustion.
    pub left_to_recover: u64,
    /// Parents resumed.
    pub resumed: u64,
    /// The tightest paid-for exhaustion (see [`super::check::Liveness`]).
    pub tightest: Option<u64>,
    /// Parents left to `recover()` with fewer adversary bumps than a full
    /// chain's floor (see [`super::check::Liveness`]).
    pub left_below_adversary_floor: u64,
}

/// Runs the world of `seed` to quiescence; with `trace`, writes what every
/// step did there (kept when the run fails, to see why).
pub fn run_seed(
    seed: u64,
    shape: &Shape,
    variant: Variant,
    trace: Option<&mut Vec<String>>,
) -> Result<SeedRun, RedriveSimError> {
    let mut rng = Rng64::seed_from_u64(seed);
    let mut world = World::generate(shape, variant, &mut rng)?;
    let mut checker = Checker::new(&world);
    let verbose = trace.is_some();
    let mut scratch = Vec::new();
    let trace = trace.unwrap_or(&mut scratch);
    if verbose {
        trace.push(format!("config: {:?}", world.config));
        for (index, parent) in world.parents.iter().enumerate() {
            trace.push(format!("p{index}: waits {:?}", parent.waits));
        }
        for (index, dead) in world.dead.iter().enumerate() {
            trace.push(format!("dead acquirer {index}: {dead:?}"));
        }
        trace.push(format!(
            "{} supervisors, {} timer services, {} crashes",
            world.supervisors.len(),
            world.services.len(),
            world.crashes_left
        ));
    }
    let mut violations = Vec::new();
    let mut seen = checker.state(&world)?;
    for breach in &seen {
        violations.push(Violation {
            seed,
            step: 0,
            now: world.now,
            breach: breach.clone(),
        });
    }
    let mut steps = 0_u64;
    loop {
        world.restarts()?;
        let enabled = world.enabled()?;
        let tracing = verbose.then_some(&mut *trace);
        if enabled.is_empty() {
            let Some(next) = world.next_time() else {
                break;
            };
            if let Some(trace) = tracing {
                trace.push(format!("t={} -> {next}: nothing to do, jump", world.now));
            }
            world.now = next;
        } else if world.crashes_left > 0
            && rng.random_ratio(world.config.crash_per_mille, 1_000)
            && !world.up_nodes().is_empty()
        {
            let nodes = world.up_nodes();
            let node = nodes[rng.random_range(0..nodes.len())];
            let downtime = rng.random_range(0..=world.config.downtime_max_ms);
            if let Some(trace) = tracing {
                trace.push(format!(
                    "step {steps} t={}: CRASH {node:?} for {downtime} ms",
                    world.now
                ));
            }
            world.crash(node, downtime, &mut rng);
        } else {
            let total: u32 = enabled.iter().map(|(weight, _)| weight).sum::<u32>() + 1;
            let mut pick = rng.random_range(0..total);
            let mut chosen = None;
            for (weight, actor) in &enabled {
                if pick < *weight {
                    chosen = Some(*actor);
                    break;
                }
                pick -= weight;
            }
            match chosen {
                Some(actor) => {
                    let mut tracing = tracing;
                    if let Some(trace) = tracing.as_deref_mut() {
                        trace.push(format!("step {steps} t={}: {actor:?}", world.now));
                    }
                    world.step(actor, &mut rng, tracing)?;
                }
                None => {
                    let tick = rng.random_range(1..=world.config.tick_max_ms);
                    if let Some(trace) = tracing {
                        trace.push(format!("step {steps} t={}: tick {tick} ms", world.now));
                    }
                    world.now += tick;
                }
            }
        }
        steps += 1;
        if steps >= MAX_STEPS {
            return Err(RedriveSimError::Runaway { steps });
        }
        let mut now = checker.new_findings(&world);
        let state = checker.state(&world)?;
        for breach in &state {
            if !seen.contains(breach) {
                now.push(breach.clone());
            }
        }
        for breach in now {
            if verbose {
                trace.push(format!("  BREACH {breach:?}"));
            }
            violations.push(Violation {
                seed,
                step: steps,
                now: world.now,
                breach,
            });
        }
        seen = state;
    }
    let live = liveness(&world)?;
    for breach in live.breaches {
        violations.push(Violation {
            seed,
            step: u64::MAX,
            now: world.now,
            breach,
        });
    }
    Ok(SeedRun {
        seed,
        world,
        steps,
        violations,
        left_to_recover: live.left_to_recover,
        resumed: live.resumed,
        tightest: live.tightest,
        left_below_adversary_floor: live.left_below_adversary_floor,
    })
}

/// What a sweep saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Steps across them.
    pub steps: u64,
    /// The longest run, in steps.
    pub longest: u64,
    /// Parents across them.
    pub parents: u64,
    /// Resumes that landed.
    pub resumes: u64,
    /// ... by a supervisor run.
    pub by_supervisor: u64,
    /// ... by a re-driver run.
    pub by_redriver: u64,
    /// ... by a plain timer wake.
    pub by_wake: u64,
    /// Parents left to `recover()` after a paid-for exhaustion.
    pub left_to_recover: u64,
    /// Re-drive chains that reported exhaustion.
    pub exhaustions: u64,
    /// Plain wakes that reported exhaustion.
    pub wake_exhaustions: u64,
    /// Parents that completed (their body ran to the end).
    pub completed: u64,
    /// The smallest `foreign bumps - floor` over paid-for exhaustions.
    pub tightest: Option<u64>,
    /// Parents left to `recover()` with fewer adversary bumps (dead
    /// acquirers, crashed resumes) than a full chain's floor.
    pub left_below_adversary_floor: u64,
    /// Chains that reported exhaustion more than once (each after a fork:
    /// a crash between a `Schedule` and its `Complete`, or a fire that
    /// outlived its lease, whose next row stands although its complete was
    /// void).
    pub chains_reported_twice: u64,
    /// The ledger's counts, summed.
    pub counts: Counts,
    /// Seeds with a violation.
    pub violating: u64,
    /// Violations per breach name.
    pub breaches: std::collections::BTreeMap<&'static str, u64>,
    /// The first violation, by seed order.
    pub first: Option<Violation>,
}

impl Summary {
    /// Adds one run.
    pub fn add(&mut self, run: &SeedRun) {
        let world = &run.world;
        self.seeds += 1;
        self.steps += run.steps;
        self.longest = self.longest.max(run.steps);
        self.parents += world.parents.len() as u64;
        self.left_to_recover += run.left_to_recover;
        self.tightest = least(self.tightest, run.tightest);
        self.left_below_adversary_floor += run.left_below_adversary_floor;
        self.chains_reported_twice += world
            .ledger
            .chain_reports()
            .values()
            .filter(|reports| **reports > 1)
            .count() as u64;
        for landings in &world.ledger.landings {
            for landing in landings {
                self.resumes += 1;
                match world.ledger.runs[landing.run].kind {
                    super::ledger::RunKind::Supervisor { .. } => self.by_supervisor += 1,
                    super::ledger::RunKind::Redriver { .. } => self.by_redriver += 1,
                    super::ledger::RunKind::Wake { .. } => self.by_wake += 1,
                }
            }
        }
        for report in &world.ledger.reports {
            if report.redrive {
                self.exhaustions += 1;
            } else {
                self.wake_exhaustions += 1;
            }
        }
        for parent in &world.parents {
            let ended = world
                .store
                .read_range(&parent.id, 1, None)
                .ok()
                .and_then(|log| loomfence_core::supervise::child_outcome(&log));
            if ended.is_some_and(|outcome| outcome.status == Terminal::Completed) {
                self.completed += 1;
            }
        }
        let c = &mut self.counts;
        let d = world.ledger.counts;
        c.supervisor_runs += d.supervisor_runs;
        c.contended_supervisors += d.contended_supervisors;
        c.chains += d.chains;
        c.redrives_fired += d.redrives_fired;
        c.redriven += d.redriven;
        c.rescheduled += d.rescheduled;
        c.wakes_fired += d.wakes_fired;
        c.backed_off += d.backed_off;
        c.voided += d.voided;
        c.double_fires += d.double_fires;
        c.forks += d.forks;
        c.crashes += d.crashes;
        c.dead_bumps += d.dead_bumps;
        if !run.violations.is_empty() {
            self.violating += 1;
            for violation in &run.violations {
                *self.breaches.entry(violation.breach.name()).or_default() += 1;
            }
            if self.first.is_none() {
                self.first = run.violations.first().cloned();
            }
        }
    }

    /// Merges a later part of a sweep (by seed order) into this one.
    pub fn merge(&mut self, later: Summary) {
        self.seeds += later.seeds;
        self.steps += later.steps;
        self.longest = self.longest.max(later.longest);
        self.parents += later.parents;
        self.resumes += later.resumes;
        self.by_supervisor += later.by_supervisor;
        self.by_redriver += later.by_redriver;
        self.by_wake += later.by_wake;
        self.left_to_recover += later.left_to_recover;
        self.exhaustions += later.exhaustions;
        self.wake_exhaustions += later.wake_exhaustions;
        self.completed += later.completed;
        self.tightest = least(self.tightest, later.tightest);
        self.left_below_adversary_floor += later.left_below_adversary_floor;
        self.chains_reported_twice += later.chains_reported_twice;
        let c = &mut self.counts;
        let d = later.counts;
        c.supervisor_runs += d.supervisor_runs;
        c.contended_supervisors += d.contended_supervisors;
        c.chains += d.chains;
        c.redrives_fired += d.redrives_fired;
        c.redriven += d.redriven;
        c.rescheduled += d.rescheduled;
        c.wakes_fired += d.wakes_fired;
        c.backed_off += d.backed_off;
        c.voided += d.voided;
        c.double_fires += d.double_fires;
        c.forks += d.forks;
        c.crashes += d.crashes;
        c.dead_bumps += d.dead_bumps;
        self.violating += later.violating;
        for (name, count) in later.breaches {
            *self.breaches.entry(name).or_default() += count;
        }
        if self.first.is_none() {
            self.first = later.first;
        }
    }
}

/// The smaller of two optional slacks.
fn least(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The seed of world `index` of the sweep based on `base`.
#[must_use]
pub fn seed_of(base: u64, index: u64) -> u64 {
    crate::random::schedule_seed(base, index)
}

/// A harness failure, with the seed that hit it.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedError {
    /// The seed.
    pub seed: u64,
    /// What failed.
    pub error: RedriveSimError,
}

impl std::fmt::Display for SeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SIM_SEED={}: {}", self.seed, self.error)
    }
}

/// Runs worlds `range` of the sweep based on `base`.
pub fn run_range(
    base: u64,
    range: std::ops::Range<u64>,
    shape: &Shape,
    variant: Variant,
) -> Result<Summary, SeedError> {
    let mut summary = Summary::default();
    for index in range {
        let seed = seed_of(base, index);
        let run =
            run_seed(seed, shape, variant, None).map_err(|error| SeedError { seed, error })?;
        summary.add(&run);
    }
    Ok(summary)
}

/// Runs `count` worlds of the sweep based on `base` on `threads` threads
/// (each a contiguous range of indices; merged in index order, so the
/// summary, the first violation included, does not depend on `threads`).
pub fn run_many(
    base: u64,
    count: u64,
    shape: &Shape,
    variant: Variant,
    threads: u64,
) -> Result<Summary, SeedError> {
    let threads = threads.clamp(1, count.max(1));
    let per = count.div_ceil(threads);
    let parts: Vec<Result<Summary, SeedError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|part| {
                let start = (part * per).min(count);
                let end = ((part + 1) * per).min(count);
                scope.spawn(move || run_range(base, start..end, shape, variant))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or(Err(SeedError {
                    seed: base,
                    error: RedriveSimError::Ledger("a sweep thread panicked"),
                }))
            })
            .collect()
    });
    let mut summary = Summary::default();
    for part in parts {
        summary.merge(part?);
    }
    Ok(summary)
}
