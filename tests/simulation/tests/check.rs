//! The invariant checker itself bites: hand-made bad worlds are reported,
//! and a clean one is not.

use loomfence_core::{Capability, KernelKind, MemoryStore, NewEvent};
use loomfence_sim::check::Move;
use loomfence_sim::trace::Trace;
use loomfence_sim::{Breach, World, breaches, execution_id};

#[test]
fn a_parked_world_is_sound() {
    let world = World::parked()
        .expect("parked")
        .with_resumer('A', Capability::Conditional)
        .with_dead_acquirer('P', Capability::FencingOnly);
    assert_eq!(breaches(&world).expect("checks"), []);
}

#[test]
fn a_park_answered_twice_is_a_double_resume() {
    let mut store = MemoryStore::new();
    store
        .append_many(
            &execution_id().expect("valid"),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
                NewEvent::kernel(KernelKind::ExecutionResumed, 3),
                NewEvent::kernel(KernelKind::ExecutionResumed, 4),
            ],
        )
        .expect("an unfenced store takes both");
    let world = World::from_store(store, 2).expect("world");
    assert_eq!(
        breaches(&world).expect("checks"),
        [Breach::DoubleResume {
            sequences: vec![3, 4]
        }]
    );
}

/// A winner that crashed before its body's first append is still judged:
/// an unconditional acquire after its resume makes the world report the
/// fence-out at that step, with the acquirer as the culprit.
#[test]
fn a_crashed_winner_is_still_checked_and_the_culprit_is_named() {
    let world = World::parked()
        .expect("parked")
        .with_resumer('A', Capability::Conditional)
        .with_dead_acquirer('P', Capability::FencingOnly);
    let a = world.index_of('A').expect("A");
    let p = world.index_of('P').expect("P");
    let moves = [
        Move::Step(a),
        Move::Step(a),
        Move::Step(a),
        Move::Step(a),
        Move::Crash(a),
        Move::Step(p),
    ];
    let trace = Trace::replay(world.clone(), &moves).expect("replays");
    let [violation] = trace.violations() else {
        panic!("one violation expected: {:?}", trace.violations());
    };
    assert_eq!(
        violation.breach,
        Breach::FencedOut {
            victim: 'A',
            held: 1,
            current: 2
        }
    );
    assert_eq!(violation.schedule, "AAAA!AP");
    assert_eq!(violation.culprit(&world), Some('P'));
}
