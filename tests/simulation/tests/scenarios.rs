//! The design's named races (docs/design.md), each driven by an exact step order of
//! the real machines, with exact assertions on the log and the tokens.
//!
//! Letters name actors: resumers `A`, `B`; dead acquirers `P`, `Q`, `R`
//! (unconditional `acquire_fence`, as the design's crashed supervisors);
//! auditor `X`; in the delete races at the end, `R` is retention deleting
//! the log. Every step is also checked against the invariants.

use loomfence_core::{
    Action, Capability, ContractError, Envelope, KernelKind, MemoryStore, NewEvent,
    ParkExpectation, ResumeError,
    resume::{MAX_ATTEMPTS, RefusalReason, ResumeContendedError, ResumeRefusedError},
};
use loomfence_sim::trace::Trace;
use loomfence_sim::{AuditEvent, Breach, EXECUTION, Landed, StoreMode, World, execution_id};
use serde_json::json;

/// The park of [`World::parked`].
const PARK: u64 = 2;

fn trace(world: World) -> Trace {
    Trace::new(world).expect("a sound start")
}

/// Steps `label` until it has nothing left to do; returns how many steps.
fn run_out(trace: &mut Trace, label: char) -> usize {
    let mut steps = 0;
    while trace.world().actor(label).expect("actor").is_enabled() {
        trace.step_label(label).expect("steps");
        steps += 1;
    }
    steps
}

fn result(trace: &Trace, label: char) -> Result<Landed, ResumeError> {
    trace
        .world()
        .actor(label)
        .expect("actor")
        .resume_result()
        .expect("the resume has ended")
}

fn pending(trace: &Trace, label: char) -> Action {
    trace
        .world()
        .actor(label)
        .expect("actor")
        .pending_action()
        .expect("a pending action")
}

fn log(trace: &Trace) -> Vec<Envelope> {
    trace.world().log().expect("reads")
}

fn kinds(log: &[Envelope]) -> Vec<&str> {
    log.iter().map(|event| event.kind.as_str()).collect()
}

fn fence(trace: &Trace) -> u64 {
    trace.world().current_fence()
}

fn assert_sound(trace: &Trace) {
    assert!(
        trace.violations().is_empty(),
        "violations: {:?}",
        trace.violations()
    );
}

fn expect(fence: u64) -> Action {
    Action::AcquireFenceIf(ParkExpectation {
        fence,
        park_seq: PARK,
    })
}

const STARTED: &str = KernelKind::ExecutionStarted.as_str();
const SUSPENDED: &str = KernelKind::ExecutionSuspended.as_str();
const RESUMED: &str = KernelKind::ExecutionResumed.as_str();
const STEP_COMPLETED: &str = KernelKind::StepCompleted.as_str();
const DENIED: &str = KernelKind::ExecutionDenied.as_str();

#[test]
fn a_dead_acquirer_then_a_resume_succeeds_through_the_retry() {
    let world = World::parked()
        .expect("parked")
        .with_dead_acquirer('P', Capability::FencingOnly)
        .with_resumer('A', Capability::Conditional);
    let mut trace = trace(world);
    trace.run_letters("PA").expect("steps");
    assert_eq!(fence(&trace), 1, "the dead acquirer stranded token 1");
    assert_eq!(pending(&trace, 'A'), expect(0), "the park's own token");
    trace.run_letters("AA").expect("steps");
    assert_eq!(
        pending(&trace, 'A'),
        expect(1),
        "the store's reported token"
    );
    run_out(&mut trace, 'A');
    println!(
        "dead acquirer then resume: schedule {}",
        loomfence_sim::check::render(trace.world(), trace.moves())
    );

    assert_eq!(
        result(&trace, 'A'),
        Ok(Landed {
            fence: Some(2),
            sequence: 3,
            attempts: 2
        })
    );
    assert_eq!(fence(&trace), 2);
    let log = log(&trace);
    assert_eq!(kinds(&log), [STARTED, SUSPENDED, RESUMED, STEP_COMPLETED]);
    assert_eq!(log[2].fence(), Ok(Some(2)));
    assert_eq!(log[2].payload["answer"], json!({ "by": "A" }));
    assert_eq!(log[3].fence(), Ok(Some(2)), "the body appended under 2");
    assert_sound(&trace);
}

#[test]
fn three_dead_acquirers_make_the_resume_contended_not_refused() {
    let world = World::parked()
        .expect("parked")
        .with_resumer('A', Capability::Conditional)
        .with_dead_acquirer('P', Capability::FencingOnly)
        .with_dead_acquirer('Q', Capability::FencingOnly)
        .with_dead_acquirer('R', Capability::FencingOnly);
    let mut trace = trace(world);
    let before = log(&trace);
    // A reads the park; before each of its acquires a dead acquirer cuts in.
    trace.step_label('A').expect("steps");
    for (rival, expected) in [('P', 0), ('Q', 1), ('R', 2)] {
        assert_eq!(pending(&trace, 'A'), expect(expected));
        trace.step_label(rival).expect("steps");
        trace.step_label('A').expect("the acquire, stale");
        if trace.world().actor('A').expect("A").is_enabled() {
            trace.step_label('A').expect("the re-read, park still open");
        }
    }
    println!(
        "three dead acquirers: schedule {}",
        loomfence_sim::check::render(trace.world(), trace.moves())
    );
    assert_eq!(
        result(&trace, 'A'),
        Err(ResumeError::Contended(ResumeContendedError {
            execution_id: EXECUTION.parse().expect("valid"),
            attempts: MAX_ATTEMPTS,
        }))
    );
    assert_eq!(MAX_ATTEMPTS, 3);
    assert_eq!(log(&trace), before, "the log is untouched");
    assert_eq!(fence(&trace), 3);
    assert!(!trace.world().actor('A').expect("A").is_enabled());
    assert_sound(&trace);
}

/// The design's "A's resume commits between B's re-read and B's acquire", in
/// its sharpest form: B retries on the token the store reported (2), which
/// is still the current token when B acquires, so only the second half of
/// the condition (no answering event after the park) can refuse it.
#[test]
fn a_resume_committing_between_bs_reread_and_bs_acquire_refuses_b() {
    let world = World::parked()
        .expect("parked")
        .with_dead_acquirer('P', Capability::FencingOnly)
        .with_resumer('A', Capability::Conditional)
        .with_resumer('B', Capability::Conditional);
    let mut trace = trace(world);
    trace.run_letters("P").expect("a dead acquirer takes 1");
    trace.run_letters("AB").expect("both read the park");
    assert_eq!(pending(&trace, 'A'), expect(0));
    assert_eq!(pending(&trace, 'B'), expect(0));
    trace
        .run_letters("AA")
        .expect("A is stale (1) and re-reads");
    assert_eq!(pending(&trace, 'A'), expect(1));
    trace.run_letters("A").expect("A acquires 2");
    assert_eq!(fence(&trace), 2);
    trace
        .run_letters("BB")
        .expect("B is stale (2) and re-reads");
    assert_eq!(pending(&trace, 'B'), expect(2), "B retries on token 2");
    trace
        .run_letters("AA")
        .expect("A re-checks and appends its resume");
    assert!(matches!(
        result(&trace, 'A'),
        Ok(Landed {
            fence: Some(2),
            sequence: 3,
            attempts: 2
        })
    ));
    trace
        .run_letters("B")
        .expect("B's retry acquire {fence: 2, parkSeq: 2}");
    assert_eq!(
        fence(&trace),
        2,
        "stale: the park is answered, the token did not move"
    );
    assert_eq!(
        pending(&trace, 'B'),
        Action::ReadFrom { from_seq: 3 },
        "B re-reads the tail"
    );
    trace.run_letters("B").expect("B's re-read sees the resume");
    assert_eq!(
        result(&trace, 'B'),
        Err(ResumeError::Refused(ResumeRefusedError {
            execution_id: EXECUTION.parse().expect("valid"),
            park_seq: PARK,
            reason: RefusalReason::NotSuspended,
        }))
    );
    trace.run_letters("A").expect("A's body appends");
    assert_eq!(
        loomfence_sim::check::render(trace.world(), trace.moves()),
        "PABAAABBAABBA"
    );
    let log = log(&trace);
    assert_eq!(kinds(&log), [STARTED, SUSPENDED, RESUMED, STEP_COMPLETED]);
    assert_eq!(log[2].payload["answer"], json!({ "by": "A" }));
    assert_eq!(log[3].fence(), Ok(Some(2)), "A's body was not fenced out");
    assert_eq!(fence(&trace), 2);
    assert!(trace.world().is_quiescent());
    assert_sound(&trace);
}

/// The same race in the order the design first stated it: both get the dead
/// acquirer's token back (1) before A acquires, so B's retry expects 1 and
/// both halves of the condition refuse it.
#[test]
fn both_stale_then_a_commits_before_bs_retry() {
    let world = World::parked()
        .expect("parked")
        .with_dead_acquirer('P', Capability::FencingOnly)
        .with_resumer('A', Capability::Conditional)
        .with_resumer('B', Capability::Conditional);
    let mut trace = trace(world);
    trace
        .run_letters("PABABAB")
        .expect("P; both read, get 1, re-read");
    assert_eq!(pending(&trace, 'A'), expect(1));
    assert_eq!(pending(&trace, 'B'), expect(1));
    trace
        .run_letters("AAA")
        .expect("A acquires 2, re-checks, resumes");
    assert_eq!(fence(&trace), 2);
    trace.run_letters("B").expect("B's retry is stale");
    assert_eq!(fence(&trace), 2);
    trace
        .run_letters("BA")
        .expect("B is refused; A's body appends");
    assert!(matches!(
        result(&trace, 'B'),
        Err(ResumeError::Refused(ResumeRefusedError {
            reason: RefusalReason::NotSuspended,
            ..
        }))
    ));
    assert!(matches!(
        result(&trace, 'A'),
        Ok(Landed { fence: Some(2), .. })
    ));
    assert_eq!(
        kinds(&log(&trace)),
        [STARTED, SUSPENDED, RESUMED, STEP_COMPLETED]
    );
    assert_sound(&trace);
}

/// An unfenced `EXECUTION_DENIED`, and separately an application event,
/// appended after the park at every point of A's resume: the resume still
/// lands on its first acquire.
#[test]
fn an_unfenced_audit_or_app_event_after_the_park_does_not_block_the_resume() {
    for (event, kind) in [
        (AuditEvent::Denied, DENIED),
        (AuditEvent::AppEmit, "app.emit"),
    ] {
        // A takes five steps: read, acquire, re-check, resume, body.
        for audit_after in 0..=5 {
            let world = World::parked()
                .expect("parked")
                .with_resumer('A', Capability::Conditional)
                .with_auditor('X', event);
            let mut trace = trace(world);
            let letters: String = "AAAAA"
                .chars()
                .take(audit_after)
                .chain(['X'])
                .chain("AAAAA".chars().skip(audit_after))
                .collect();
            trace.run_letters(&letters).expect("steps");
            assert!(trace.world().is_quiescent(), "{letters}");

            let mut expected = vec![STARTED, SUSPENDED, RESUMED, STEP_COMPLETED];
            // The resume is the 4th A step, the body the 5th.
            let at = 2 + audit_after.saturating_sub(3).min(2);
            expected.insert(at, kind);
            let log = log(&trace);
            assert_eq!(kinds(&log), expected, "{letters}");
            let audit = &log[at];
            assert_eq!(audit.fence(), Ok(None), "the audit is unfenced");
            let resumed_at = if audit_after <= 3 { 4 } else { 3 };
            assert_eq!(
                result(&trace, 'A'),
                Ok(Landed {
                    fence: Some(1),
                    sequence: resumed_at,
                    attempts: 1
                }),
                "{letters}"
            );
            assert_eq!(fence(&trace), 1);
            assert_sound(&trace);
        }
    }
    println!("audit and app events at each of 6 points of A's resume: resumed on attempt 1");
}

/// A store with the park answered by hand, under `token` (taken after the
/// park, as a resumer would).
fn answered(token: u64) -> MemoryStore {
    let id = execution_id().expect("valid");
    let mut store = MemoryStore::new();
    store
        .append_many(
            &id,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
            ],
        )
        .expect("parks");
    for _ in 0..token {
        store.acquire_fence(&id);
    }
    let mut resumed = NewEvent::kernel(KernelKind::ExecutionResumed, 3);
    if token > 0 {
        resumed = resumed.with_fence(token);
    }
    store.append(&id, resumed).expect("answers");
    store
}

fn assert_refused_without_a_token(world: World, park_seq: u64) {
    let mut trace = trace(world);
    let (log_before, fence_before) = (log(&trace), fence(&trace));
    let steps = run_out(&mut trace, 'A');
    assert_eq!(steps, 1, "refused at its first read, before any acquire");
    assert_eq!(
        result(&trace, 'A'),
        Err(ResumeError::Refused(ResumeRefusedError {
            execution_id: EXECUTION.parse().expect("valid"),
            park_seq,
            reason: RefusalReason::NotSuspended,
        }))
    );
    assert_eq!(fence(&trace), fence_before, "no token taken");
    assert_eq!(log(&trace), log_before, "nothing appended");
    assert_sound(&trace);
}

#[test]
fn an_answered_park_is_refused_and_takes_no_token() {
    for token in [0, 1] {
        let world = World::from_store(answered(token), PARK)
            .expect("world")
            .with_resumer('A', Capability::Conditional);
        assert_refused_without_a_token(world, PARK);
    }
}

#[test]
fn a_sequence_that_is_not_a_park_is_refused_and_takes_no_token() {
    // 1 is EXECUTION_STARTED, 3 an EXECUTION_DENIED after the park, 99 past
    // the head.
    for park_seq in [1, 3, 99] {
        let mut store = MemoryStore::new();
        store
            .append_many(
                &execution_id().expect("valid"),
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
                    NewEvent::kernel(KernelKind::ExecutionDenied, 3),
                ],
            )
            .expect("appends");
        let world = World::from_store(store, PARK)
            .expect("world")
            .with_resumer_at('A', Capability::Conditional, park_seq);
        assert_refused_without_a_token(world, park_seq);
    }
}

// A resume racing a delete. `R` is retention: it deletes
// the log in one step, and the store keeps the token (by design), so a
// resumer that acquired before the delete still holds the current token.

fn a_resumer_and_retention() -> World {
    World::parked()
        .expect("parked")
        .with_resumer('A', Capability::Conditional)
        .with_deleter('R')
}

fn refused() -> ResumeError {
    ResumeError::Refused(ResumeRefusedError {
        execution_id: EXECUTION.parse().expect("valid"),
        park_seq: PARK,
        reason: RefusalReason::NotSuspended,
    })
}

/// The race: A acquires (token 1) and re-checks, the log is
/// deleted, then A appends. The append is park-conditional, so the store
/// answers that the park is gone and A is refused with nothing written.
#[test]
fn a_delete_between_the_acquire_and_the_append_refuses_the_resume_and_writes_nothing() {
    let mut trace = trace(a_resumer_and_retention());
    trace.run_letters("AAA").expect("read, acquire, re-check");
    let Action::AppendIfParked { park_seq, events } = pending(&trace, 'A') else {
        panic!("the resume's append is park-conditional");
    };
    assert_eq!(park_seq, PARK);
    assert_eq!(events.len(), 1, "one resume, no message");
    assert_eq!(
        events[0].metadata["fence"],
        json!(1),
        "and carries the token"
    );
    trace.run_letters("RA").expect("delete, then A's append");
    assert_eq!(result(&trace, 'A'), Err(refused()));
    assert_eq!(log(&trace), [], "nothing recreated");
    assert_eq!(fence(&trace), 1, "the delete keeps the token");
    assert_sound(&trace);
}

/// The same schedule with the resume's fenced append performed as a plain
/// append, as the machine asked before the fix: the append lands at
/// sequence 1 of the deleted log (a phantom one-event log) and the machine
/// rejects the acknowledgement. The checker reports both at A's append.
#[test]
fn a_plain_fenced_append_after_a_delete_recreates_the_log() {
    let world = a_resumer_and_retention().in_mode(StoreMode::PlainFencedAppend);
    let mut trace = trace(world);
    trace.run_letters("AAARA").expect("steps");
    assert_eq!(kinds(&log(&trace)), [RESUMED], "the phantom");
    let found: Vec<&Breach> = trace.violations().iter().map(|v| &v.breach).collect();
    assert_eq!(
        found,
        [
            &Breach::PhantomLog {
                kinds: vec![RESUMED.to_owned()]
            },
            &Breach::Rejected {
                actor: 'A',
                error: ContractError::WrongAppend {
                    count: 1,
                    kind: RESUMED.to_owned()
                }
            }
        ]
    );
    assert!(trace.violations().iter().all(|v| v.schedule == "AAARA"));
}

/// Deleted before A's acquire: the conditional acquire finds no park (the
/// store answers `ParkSeqOutOfRange`) and A is refused without a token.
/// Deleted before A's first read: A reads an empty log and is refused there.
#[test]
fn a_delete_before_the_acquire_or_the_read_refuses_without_a_token() {
    for (letters, steps_of_a) in [("ARA", 2), ("RA", 1)] {
        let mut trace = trace(a_resumer_and_retention());
        trace.run_letters(letters).expect("steps");
        assert_eq!(result(&trace, 'A'), Err(refused()), "{letters}");
        assert_eq!(
            trace.moves().len() - 1,
            steps_of_a,
            "{letters}: A was done after the step shown"
        );
        assert_eq!(fence(&trace), 0, "{letters}: no token taken");
        assert_eq!(log(&trace), [], "{letters}");
        assert_sound(&trace);
    }
}

/// Deleted after the resume landed: the winner's body still holds the
/// current token (the delete keeps it), so its next append is stored, in a
/// new log. Not a phantom by the checker's definition (no resume is in it):
/// a body writing into a deleted execution is retention's to prevent, not
/// the resume's, and is recorded here so a change to it is noticed.
#[test]
fn a_delete_after_the_resume_landed_leaves_the_body_writing_a_new_log() {
    let mut trace = trace(a_resumer_and_retention());
    trace.run_letters("AAAARA").expect("resume, delete, body");
    assert!(matches!(
        result(&trace, 'A'),
        Ok(Landed {
            fence: Some(1),
            sequence: 3,
            ..
        })
    ));
    let log = log(&trace);
    assert_eq!(kinds(&log), [STEP_COMPLETED]);
    assert_eq!(log[0].fence(), Ok(Some(1)));
    assert_sound(&trace);
}

/// The world of the regrown-log scenarios: conditional resumers A and B,
/// auditor X, retention R.
fn two_resumers_an_auditor_and_retention() -> World {
    World::parked()
        .expect("parked")
        .with_resumer('A', Capability::Conditional)
        .with_resumer('B', Capability::Conditional)
        .with_auditor('X', AuditEvent::Denied)
        .with_deleter('R')
}

/// The schedule the simulation's deleter found: A reads, acquires 1,
/// re-checks; B reads; A's resume lands; B's acquire is stale (1); R
/// deletes (the token is kept); A's body appends (sequence 1); B re-reads
/// from 3 (nothing); X appends (sequence 2, where the park was); B tries to
/// acquire over "park" 2, on token 1.
const REGROWN: &str = "AAABABRABXBBB";

/// After a delete, writes that are not resumes (a winner's body, an
/// unfenced audit) grow a new log back past the park's sequence. The
/// stores check that the event at `park_seq` is still a park, in the same
/// step as the rest of the conditional operation, so B's acquire over
/// "park" 2 (now the audit record) is answered `NotAPark`: the park is
/// gone, B is refused without a token, A's body keeps the current token
/// and nothing is resumed in the new log.
#[test]
fn a_log_regrown_past_the_park_after_a_delete_is_not_taken_for_the_park() {
    let mut trace = trace(two_resumers_an_auditor_and_retention());
    trace.run_letters(REGROWN).expect("steps");
    assert_sound(&trace);
    assert_eq!(result(&trace, 'B'), Err(refused()));
    assert_eq!(kinds(&log(&trace)), [STEP_COMPLETED, DENIED]);
    assert_eq!(fence(&trace), 1, "A's body still holds the current token");
}

/// The negative control: the same schedule on a store that does not check
/// the kind at `park_seq` (as before the fix). B acquires token 2 over the
/// audit record, fencing A's running body out, and resumes at 3 of the new
/// log: a phantom resume, and two winners of one park.
#[test]
fn without_the_park_kind_check_the_regrown_log_is_taken_for_the_park() {
    let world = two_resumers_an_auditor_and_retention().in_mode(StoreMode::NoParkKindCheck);
    let mut trace = trace(world);
    trace.run_letters(REGROWN).expect("steps");
    assert_eq!(kinds(&log(&trace)), [STEP_COMPLETED, DENIED, RESUMED]);
    assert_eq!(fence(&trace), 2, "B took a token over the audit record");
    assert!(matches!(
        result(&trace, 'B'),
        Ok(Landed {
            fence: Some(2),
            sequence: 3,
            ..
        })
    ));
    let found: Vec<&Breach> = trace.violations().iter().map(|v| &v.breach).collect();
    println!("found: {found:?}");
    assert!(found.contains(&&Breach::FencedOut {
        victim: 'A',
        held: 1,
        current: 2
    }));
    assert!(found.contains(&&Breach::TwoWinners {
        winners: vec!['A', 'B']
    }));
    assert!(found.contains(&&Breach::PhantomLog {
        kinds: vec![
            STEP_COMPLETED.to_owned(),
            DENIED.to_owned(),
            RESUMED.to_owned()
        ]
    }));
}
