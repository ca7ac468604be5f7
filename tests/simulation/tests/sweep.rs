//! The design's sweep (docs/design.md): every schedule of two resumers A and B, `{A,B}^n` for
//! `n = 0..=7`, checked after every step.

use loomfence_core::Capability;
use loomfence_sim::enumerate::{Enumeration, all_schedules};
use loomfence_sim::{Breach, World};

/// The longest schedule the design sweeps.
const MAX_LEN: usize = 7;

fn two_resumers(capability: Capability) -> World {
    World::parked()
        .expect("a parked world")
        .with_resumer('A', capability)
        .with_resumer('B', capability)
}

fn sweep(capability: Capability, max_len: usize) -> Enumeration {
    let swept = all_schedules(&two_resumers(capability), max_len).expect("the sweep runs");
    println!(
        "{capability:?}, {{A,B}}^n for n = 0..={max_len}: {} schedules, {} distinct end states, {} violating schedules, {} violations",
        swept.schedules,
        swept.end_states.len(),
        swept.violating_schedules,
        swept.violations.len()
    );
    swept
}

#[test]
fn every_schedule_of_two_conditional_resumers_is_sound() {
    let swept = sweep(Capability::Conditional, MAX_LEN);
    assert_eq!(swept.schedules, 255, "2^0 + 2^1 + … + 2^7");
    assert!(
        swept.violations.is_empty(),
        "first violation: {}",
        swept.violations[0]
    );
    // The sweep is a race, not one happy path: either resumer can win, and
    // the loser both gets refused and (when it never finishes) is left
    // mid-protocol.
    let winners = |label: char| {
        swept
            .end_states
            .iter()
            .filter(|world| world.actor(label).and_then(|a| a.landed()).is_some())
            .count()
    };
    println!(
        "end states where A won: {}, where B won: {}",
        winners('A'),
        winners('B')
    );
    assert!(winners('A') > 0 && winners('B') > 0);
    let lost = swept
        .end_states
        .iter()
        .filter(|world| {
            world
                .actors()
                .iter()
                .any(|a| matches!(a.resume_result(), Some(Err(_))))
        })
        .count();
    assert!(lost > 0, "some schedule runs a loser to its refusal");
}

#[test]
fn the_unconditional_acquire_fences_a_running_body_out() {
    let swept = sweep(Capability::FencingOnly, MAX_LEN);
    assert_eq!(swept.schedules, 255);
    let first_state = swept
        .violations
        .iter()
        .find(|v| matches!(v.breach, Breach::FencedOut { .. }))
        .expect("the negative control finds a winner holding a superseded token");
    let first_append = swept
        .violations
        .iter()
        .find(|v| matches!(v.breach, Breach::BodyRefused { .. }))
        .expect("the negative control finds a body whose append is refused");
    println!("first fence-out (state): {first_state}");
    println!("first fence-out (refused append): {first_append}");
    // A reads, acquires (1) and re-checks; B reads the still open park; A
    // appends its resume; B's unconditional acquire (2) supersedes the winner,
    // and A's next body append is refused. Six steps is the minimum (B must
    // read before A's resume lands, or B is refused at its read).
    assert_eq!(first_state.schedule, "AAABAB");
    assert_eq!(first_append.schedule, "AAABABA");
    assert_eq!(
        first_append.breach,
        Breach::BodyRefused {
            victim: 'A',
            held: 1,
            current: 2
        }
    );
    // Only fence-outs: the unconditional path still answers the park once.
    assert!(swept.violations.iter().all(|v| v.breach.is_fence_out()));
}
