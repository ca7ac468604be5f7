//! Seeded random schedules past the exhaustive bound: bigger worlds (2 to 4
//! resumers, 0 to 2 dead acquirers, 0 to 2 auditors; racing a delete, one
//! deleter too), explicit crashes, schedules run to the end.
//!
//! Each run prints `SIM_SEED=<n>`. `SIM_SEED=<n> cargo test -p loomfence-sim
//! --test random` replays a run exactly; adding `SIM_INDEX=<i>` replays only
//! schedule `i` of it and prints its moves and log.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Instant, SystemTime};

use loomfence_sim::random::{CapabilityMix, Failure, RandomConfig, Summary, run_many, run_one};
use loomfence_sim::trace::Trace;
use loomfence_sim::{Breach, StoreMode};

/// Schedules per run of the main test.
const SCHEDULES: u64 = 100_000;

/// Schedules per run of the negative controls, which only need to find one.
const CONTROL_SCHEDULES: u64 = 5_000;

/// Schedules per run racing a delete.
const DELETE_SCHEDULES: u64 = 30_000;

/// The run's seed: `SIM_SEED` if set, else a fresh one. Printed, so the
/// run can be replayed.
fn seed() -> u64 {
    let seed = match std::env::var("SIM_SEED") {
        Ok(text) => text.trim().parse().expect("SIM_SEED must be a u64"),
        Err(_) => {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos());
            RandomState::new().hash_one(now)
        }
    };
    println!("SIM_SEED={seed}");
    seed
}

fn index() -> Option<u64> {
    std::env::var("SIM_INDEX")
        .ok()
        .map(|text| text.trim().parse().expect("SIM_INDEX must be a u64"))
}

fn run(name: &str, config: &RandomConfig, seed: u64, count: u64) -> Summary {
    let started = Instant::now();
    let summary = run_many(config, seed, count).expect("the schedules run");
    println!(
        "{name}: {} schedules, {} moves ({} crashes), longest {} moves, {} violating, {} with a fenced-out body, {} with a phantom log, {} deleting under a token, {} ended with every resumer contended ({:.2?})",
        summary.schedules,
        summary.moves,
        summary.crashes,
        summary.longest,
        summary.violating,
        summary.fenced_out,
        summary.phantom,
        summary.deletes_under_token,
        summary.unresumed,
        started.elapsed()
    );
    summary
}

/// Replays one schedule verbosely and returns whether it was sound.
fn replay_one(config: &RandomConfig, seed: u64, index: u64) -> bool {
    let run = run_one(config, seed, index).expect("the schedule runs");
    println!(
        "SIM_SEED={seed} SIM_INDEX={index}: {} actors, schedule {}",
        run.initial.actors().len(),
        loomfence_sim::check::render(&run.initial, &run.moves)
    );
    for event in run.last.log().expect("reads") {
        println!(
            "  {:>2} {} {:?}",
            event.sequence, event.kind, event.metadata
        );
    }
    for violation in &run.violations {
        println!("  violation: {violation}");
    }
    run.violations.is_empty()
}

/// Runs `count` schedules of `config`, which must find no violation (see
/// [`assert_sound`]), on this run's seed; returns the seed and the summary.
/// With `SIM_INDEX` set, replays only that schedule instead, asserts it
/// sound and returns `None`.
fn sound_run(name: &str, config: &RandomConfig, count: u64) -> Option<(u64, Summary)> {
    let seed = seed();
    if let Some(index) = index() {
        assert!(
            replay_one(config, seed, index),
            "SIM_SEED={seed} SIM_INDEX={index}"
        );
        return None;
    }
    Some((seed, run(name, config, seed, count)))
}

/// Fails the test if `summary` saw a violation, with the command that
/// replays it (`filter` appended to pick the test).
fn assert_sound(summary: &Summary, filter: &str) {
    if let Some(failure) = &summary.first {
        panic!(
            "SIM_SEED={} schedule index {} broke an invariant: {}\nreplay: SIM_SEED={} SIM_INDEX={} cargo test -p loomfence-sim --test random -- --nocapture{filter}",
            failure.seed, failure.index, failure.violation, failure.seed, failure.index
        );
    }
}

/// The worlds racing a delete, all conditional, on a store in `mode`.
fn racing_a_delete_on(mode: StoreMode) -> RandomConfig {
    RandomConfig {
        mode,
        ..RandomConfig::deleting(CapabilityMix::AllConditional)
    }
}

/// Runs a negative control: `CONTROL_SCHEDULES` schedules of `config` (a
/// world without one of the fixes) on this run's seed. Panics unless one
/// breaks an invariant; prints the first that does and returns it with the
/// summary.
fn control(name: &str, config: &RandomConfig) -> (Summary, Failure) {
    let seed = seed();
    let summary = run(name, config, seed, CONTROL_SCHEDULES);
    let failure = summary
        .first
        .clone()
        .expect("the negative control breaks something");
    println!(
        "first: SIM_SEED={} SIM_INDEX={}: {}",
        failure.seed, failure.index, failure.violation
    );
    (summary, failure)
}

#[test]
fn random_conditional_schedules_never_fence_out_a_body() {
    let config = RandomConfig::standard(CapabilityMix::AllConditional);
    let Some((seed, summary)) = sound_run("conditional", &config, SCHEDULES) else {
        return;
    };
    assert_eq!(summary.schedules, SCHEDULES);
    assert_sound(&summary, "");
    assert!(summary.crashes > 0, "crashes were exercised");
    if let Some(index) = summary.first_unresumed {
        println!("first schedule ending with every resumer contended:");
        replay_one(&config, seed, index);
    }
}

/// The resume racing a delete, on the real store: no violation at all.
#[test]
fn random_schedules_racing_a_delete_never_recreate_the_log() {
    let config = RandomConfig::deleting(CapabilityMix::AllConditional);
    let Some((_, summary)) = sound_run("racing a delete", &config, DELETE_SCHEDULES) else {
        return;
    };
    assert_sound(&summary, " racing_a_delete");
    assert!(
        summary.deletes_under_token > 0,
        "some deletes land between an acquire and its append"
    );
}

/// The same worlds with the resume's fenced append performed as a plain
/// append (the machine before the fix): phantom logs, and nothing else.
#[test]
fn random_plain_fenced_appends_racing_a_delete_recreate_the_log() {
    let config = racing_a_delete_on(StoreMode::PlainFencedAppend);
    let (summary, failure) = control("plain fenced append, racing a delete", &config);
    assert!(summary.phantom > 0, "a resume recreates the deleted log");
    assert_eq!(
        summary.violating, summary.phantom,
        "and breaks nothing else"
    );
    assert!(matches!(
        failure.violation.breach,
        Breach::PhantomLog { .. } | Breach::Rejected { .. }
    ));
}

/// The same worlds on a store that does not check that the event at
/// `park_seq` is a park (the stores before the fix): after a delete, a log
/// regrown past the park's sequence by a body and an audit record is taken
/// for the park, and a resume lands in it.
#[test]
fn random_schedules_without_the_park_kind_check_resume_a_regrown_log() {
    let config = racing_a_delete_on(StoreMode::NoParkKindCheck);
    let (summary, _) = control("no park-kind check, racing a delete", &config);
    assert!(summary.phantom > 0, "a resume lands in the regrown log");
}

#[test]
fn random_unconditional_schedules_find_a_fenced_out_body() {
    let config = RandomConfig::standard(CapabilityMix::AllFencingOnly);
    let (summary, _) = control("fencing only", &config);
    assert!(summary.fenced_out > 0, "a body is fenced out");
    assert_eq!(
        summary.violating, summary.fenced_out,
        "the unconditional path fences bodies out but never answers a park twice"
    );
}

#[test]
fn random_mixed_fleets_find_a_fenced_out_body() {
    let seed = seed();
    let config = RandomConfig::standard(CapabilityMix::Mixed);
    let summary = run("mixed", &config, seed, CONTROL_SCHEDULES);
    assert!(
        summary.fenced_out > 0,
        "one unconditional node in the fleet is enough to fence a body out"
    );
}

/// A failing schedule found by seed and index replays alone, twice, to the
/// same moves and the same violation, and its moves replay on its world.
#[test]
fn a_failing_schedule_replays_from_its_seed_and_index() {
    let config = RandomConfig::standard(CapabilityMix::AllFencingOnly);
    let (_, failure) = control("fencing only (replay)", &config);
    let once = run_one(&config, failure.seed, failure.index).expect("runs");
    let twice = run_one(&config, failure.seed, failure.index).expect("runs");
    assert_eq!(once.moves, twice.moves);
    assert_eq!(once.last, twice.last);
    assert_eq!(once.violations.first(), Some(&failure.violation));
    let replayed = Trace::replay(once.initial.clone(), &failure.violation.moves).expect("replays");
    assert_eq!(replayed.violations().last(), Some(&failure.violation));
}
