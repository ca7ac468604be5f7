//! A notify crashing midway, simulated: every interleaving of small worlds
//! (crashes of the sender at each of its crash points included), seeded
//! random schedules of bigger ones, and two negative controls that must
//! break (see `loomfence_sim::inbox` for the model and
//! `loomfence_sim::inbox::check` for the invariants).
//!
//! The random run prints `SIM_SEED=<n>`; `SIM_SEED=<n> cargo test -p
//! loomfence-sim --test inbox -- --nocapture` replays it, and adding
//! `SIM_INDEX=<i>` replays schedule `i` alone, printing it and its log.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Instant, SystemTime};

use loomfence_core::supervise::OnContention;
use loomfence_sim::inbox::explore::{Exploration, explore};
use loomfence_sim::inbox::random::{run_many, run_one};
use loomfence_sim::inbox::{Breach, Cast, CrashPoint, Drain, Mode, Move, Start, World};

/// Random schedules of the design per run.
const SCHEDULES: u64 = 40_000;

/// The cast of an exhaustive world: the design, `S` crashable.
fn cast(start: Start, retry: bool, other: bool, dead: usize) -> Cast {
    Cast {
        start,
        retry,
        other,
        dead,
        crashable: vec!['S'],
        on_contention: OnContention::Answer,
        park_check: OnContention::Answer,
        park_intent: true,
        mode: Mode::Faithful,
        drain: Drain::AtTheEnd,
    }
}

/// Explores `cast`'s world and prints what it saw.
fn search(name: &str, cast: &Cast) -> Exploration {
    let started = Instant::now();
    let world = World::new(cast).expect("a world");
    let explored = explore(&world).expect("the search runs");
    println!(
        "{name}: {} schedules, {} distinct worlds, {} transitions, {} quiescent worlds checked, longest schedule {} moves, crashes {:?}, {} violating {:?} ({:.2?})",
        explored.schedules,
        explored.states,
        explored.transitions,
        explored.terminal_states,
        explored.longest,
        explored.crashes,
        explored.violating_states,
        explored.breaches,
        started.elapsed()
    );
    for violation in explored.violations.iter().take(3) {
        println!("  {}: {:?}", violation.schedule, violation.breaches);
    }
    explored
}

/// A search of the design: no violation, and the sender crashed at every
/// point of `points`.
fn sound(name: &str, cast: &Cast, points: &[CrashPoint]) -> Exploration {
    let explored = search(name, cast);
    assert!(
        explored.violations.is_empty(),
        "{name}: {:?}",
        explored.violations.first()
    );
    for point in points {
        assert!(
            explored.crashes.get(point).is_some_and(|n| *n > 0),
            "{name}: never crashed at {point:?}"
        );
    }
    assert!(explored.terminal_states > 1 && explored.schedules > 1);
    explored
}

/// The three crash points the design is held to.
const POINTS: [CrashPoint; 3] = [
    CrashPoint::AfterStore,
    CrashPoint::HoldingToken,
    CrashPoint::AfterAppend,
];

#[test]
fn parked_on_a_message_every_interleaving_delivers_once() {
    sound(
        "parked: S (crashing), retry R, dead P, body; re-driver after",
        &cast(Start::Parked, true, false, 1),
        &POINTS,
    );
}

#[test]
fn a_redriver_racing_the_sender_still_delivers_once() {
    let cast = Cast {
        drain: Drain::Racing,
        ..cast(Start::Parked, false, false, 0)
    };
    sound(
        "racing re-driver: S (crashing), body, re-driver racing",
        &cast,
        &POINTS,
    );
}

#[test]
fn parked_on_a_message_or_a_timer_every_interleaving_delivers_once() {
    sound(
        "parked with a timer: S (crashing), wake T, body; re-driver after",
        &cast(Start::ParkedWithTimer, false, false, 0),
        &POINTS,
    );
}

#[test]
fn a_message_before_the_park_is_delivered_once_in_every_interleaving() {
    sound(
        "parks later: S (crashing), dead P, body parking; re-driver after",
        &cast(Start::ParksLater, false, false, 1),
        &POINTS,
    );
}

#[test]
fn two_messages_on_one_channel_are_consumed_in_arrival_order() {
    let explored = sound(
        "two messages: S (crashing), O, body parking twice; re-driver after",
        &cast(Start::Parked, false, true, 0),
        &POINTS,
    );
    assert!(explored.terminal_states > 100);
}

#[test]
fn contended_senders_writing_rows_still_deliver_once() {
    let cast = Cast {
        on_contention: OnContention::WriteRow,
        ..cast(Start::Parked, false, false, 2)
    };
    sound(
        "contended: S (crashing), dead P and Q, rows on contention; re-driver after",
        &cast,
        &POINTS,
    );
}

/// A message whose intent row fired before the park (nothing to deliver
/// then, so the row was retired) has only the park-time check left. If
/// three dead acquirers contend that check, which writes no re-drive row
/// of its own here, the park's intent row (written before the park)
/// delivers it; a host that appends the park itself and runs a bare check
/// (the control) leaves the message waiting for good. The schedule, by
/// label: `S` sends (no park yet), `X` fires the intent row (waiting,
/// retired), `B` parks and checks while `P`, `Q`, `U` each bump the token
/// just before one of its three acquisitions.
#[test]
fn a_contended_park_time_check_is_finished_by_the_parks_intent_row() {
    let mut seen = Vec::new();
    // The design (the park through the machine, with its intent row), then
    // the control: the host appends the park itself and runs a bare check.
    for park_intent in [true, false] {
        let cast = Cast {
            park_check: OnContention::Answer,
            park_intent,
            drain: Drain::Racing,
            crashable: Vec::new(),
            ..cast(Start::ParksLater, false, false, 3)
        };
        let mut world = World::new(&cast).expect("a world");
        let mut moves = Vec::new();
        for label in "SSXXXBPBBBBQBBUB".chars() {
            let index = world
                .labels
                .iter()
                .position(|known| *known == label)
                .expect("a label");
            world.apply(Move::Step(index)).expect("steps");
            moves.push(Move::Step(index));
        }
        while let Some(&next) = world.moves().expect("moves").first() {
            world.apply(next).expect("steps");
            moves.push(next);
        }
        let found = loomfence_sim::inbox::check::breaches(&world).expect("checks");
        println!(
            "park through the machine {park_intent}: {} -> {found:?}",
            world.render(&moves)
        );
        seen.push(found);
    }
    assert!(
        seen[0].is_empty(),
        "the park's intent row delivers it: {:?}",
        seen[0]
    );
    assert!(
        matches!(seen[1].as_slice(), [Breach::Undelivered { .. }]),
        "without the park's row the message waits for good: {:?}",
        seen[1]
    );
}

/// The run's seed: `SIM_SEED` if set, else a fresh one; printed.
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

#[test]
fn random_schedules_of_bigger_worlds_deliver_once() {
    let seed = seed();
    if let Ok(text) = std::env::var("SIM_INDEX") {
        let index = text.trim().parse().expect("SIM_INDEX must be a u64");
        let run = run_one(Mode::Faithful, seed, index).expect("runs");
        println!(
            "SIM_SEED={seed} SIM_INDEX={index}: {:?}\n  schedule {} ({} moves, crashes {:?})",
            run.cast, run.schedule, run.moves, run.crashes
        );
        let log = run
            .last
            .store
            .read_range(
                &loomfence_sim::inbox::world::execution_id().expect("an id"),
                1,
                None,
            )
            .expect("reads");
        for event in log {
            println!(
                "  {:>2} {} {:?} {:?}",
                event.sequence, event.kind, event.metadata, event.payload
            );
        }
        assert!(run.breaches.is_empty(), "{:?}", run.breaches);
        return;
    }
    let started = Instant::now();
    let summary = run_many(Mode::Faithful, seed, SCHEDULES).expect("the schedules run");
    println!(
        "random: SIM_SEED={seed}: {} schedules, {} moves, longest {}, crashes {:?}, {} violating {:?} ({:.2?})",
        summary.schedules,
        summary.moves,
        summary.longest,
        summary.crashes,
        summary.violating,
        summary.breaches,
        started.elapsed()
    );
    if let Some(first) = &summary.first {
        panic!(
            "SIM_SEED={} SIM_INDEX={}: {} broke {:?}\nreplay: SIM_SEED={} SIM_INDEX={} cargo test -p loomfence-sim --test inbox random -- --nocapture",
            first.seed, first.index, first.schedule, first.breaches, first.seed, first.index
        );
    }
    assert_eq!(summary.schedules, SCHEDULES);
    for point in [
        CrashPoint::AfterStore,
        CrashPoint::HoldingToken,
        CrashPoint::AfterAppend,
    ] {
        assert!(
            summary.crashes.get(&point).is_some_and(|n| *n > 0),
            "never crashed at {point:?}"
        );
    }
}

/// Control (a): the pair appended as two writes. A crash of the sender
/// between them leaves a `MESSAGE_CONSUMED` with no resume after it (the
/// re-driver then finds the message consumed and never resumes with it),
/// and a rival landing between them leaves one answered by another
/// resume.
#[test]
fn control_a_the_pair_as_two_writes_breaks() {
    let cast = Cast {
        mode: Mode::SplitBatch,
        ..cast(Start::Parked, true, false, 0)
    };
    let explored = search("control (a), two writes", &cast);
    assert!(explored.violating_states > 0, "the control found nothing");
    assert!(
        explored
            .crashes
            .get(&CrashPoint::BetweenWrites)
            .is_some_and(|n| *n > 0),
        "a crash between the writes"
    );
    assert!(
        explored
            .violations
            .iter()
            .flat_map(|v| &v.breaches)
            .any(|breach| matches!(breach, Breach::ConsumedWithoutItsResume { .. })),
        "{:?}",
        explored.violations
    );
}

/// Control (b): the pair appended blind (no conditional acquire, no park
/// condition, unfenced). Two senders that read the park open both
/// deliver: a message consumed twice, a park answered twice.
#[test]
fn control_b_a_blind_append_breaks() {
    let cast = Cast {
        mode: Mode::Blind,
        ..cast(Start::Parked, true, false, 0)
    };
    let explored = search("control (b), blind append", &cast);
    assert!(explored.violating_states > 0, "the control found nothing");
    assert!(
        explored.breaches.contains_key("resumed twice"),
        "{:?}",
        explored.breaches
    );
}
