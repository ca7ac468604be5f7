//! The resume machine over the in-memory store, step by step.

use serde_json::json;

use super::*;
use crate::drive;
use crate::memory::MemoryStore;

fn id() -> ExecutionId {
    ExecutionId::new("parent").expect("valid id")
}

/// A store with `ID` started and parked; returns it and the log.
fn parked() -> (MemoryStore, Vec<Envelope>) {
    let mut store = MemoryStore::new();
    let log = store
        .append_many(
            &id(),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
            ],
        )
        .expect("appends");
    (store, log)
}

fn request() -> ResumeRequest {
    ResumeRequest::new(2, json!({ "child": "done" }), 10)
}

fn machine(capability: Capability) -> ResumeMachine {
    ResumeMachine::new(id(), request(), capability)
}

fn resumes(store: &MemoryStore) -> usize {
    store
        .read_range(&id(), 1, None)
        .expect("reads")
        .iter()
        .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
        .count()
}

/// Steps until the pending action is an acquire, so a test can interleave a
/// rival right before it.
fn step_to_acquire(store: &mut MemoryStore, machine: &mut ResumeMachine) {
    while !matches!(
        machine.poll(),
        Poll::Act(Action::AcquireFenceIf(_) | Action::AcquireFence)
    ) {
        assert_eq!(drive::step(store, machine), Ok(Stepped::Progressed));
    }
}

#[test]
fn an_open_park_is_resumed_under_a_fresh_token() {
    let (mut store, _) = parked();
    let resumed = drive::run(&mut store, &mut machine(Capability::Conditional))
        .expect("steps")
        .expect("resumes");
    assert_eq!((resumed.fence, resumed.attempts), (Some(1), 1));
    assert_eq!(resumed.resumed.sequence, 3);
    assert_eq!(
        resumed.resumed.payload["answer"],
        json!({ "child": "done" })
    );
    assert_eq!(resumed.resumed.fence(), Ok(Some(1)));
    assert_eq!(resumed.view.head, 3);
    assert_eq!(resumed.view.status, crate::Status::Running);
    assert_eq!(store.current_fence(&id()), 1);
}

#[test]
fn events_in_hand_spare_the_park_read() {
    let (_, log) = parked();
    let machine = ResumeMachine::with_events(id(), request(), Capability::Conditional, &log)
        .expect("valid run");
    assert_eq!(
        machine.poll(),
        Poll::Act(Action::AcquireFenceIf(ParkExpectation {
            fence: 0,
            park_seq: 2
        }))
    );
    // Not enough to decide: short of the park, or not from the start (a
    // terminal event could hide before the run). The whole log is read.
    for run in [&log[..1], &log[1..]] {
        let partial = ResumeMachine::with_events(id(), request(), Capability::Conditional, run)
            .expect("valid run");
        assert_eq!(partial.poll(), Poll::Act(Action::ReadFrom { from_seq: 1 }));
    }
}

#[test]
fn the_expected_token_is_the_parks_own() {
    let mut store = MemoryStore::new();
    store.acquire_fence(&id());
    let park = store
        .append(
            &id(),
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0).with_fence(1),
        )
        .expect("parks");
    let machine = ResumeMachine::with_events(
        id(),
        ResumeRequest::new(1, json!(null), 0),
        Capability::Conditional,
        &[park],
    )
    .expect("valid run");
    assert_eq!(
        machine.poll(),
        Poll::Act(Action::AcquireFenceIf(ParkExpectation {
            fence: 1,
            park_seq: 1
        }))
    );
}

#[test]
fn a_dead_acquirer_is_passed_on_the_retry() {
    let (mut store, _) = parked();
    store.acquire_fence(&id());
    let resumed = drive::run(&mut store, &mut machine(Capability::Conditional))
        .expect("steps")
        .expect("resumes through the retry");
    assert_eq!((resumed.fence, resumed.attempts), (Some(2), 2));
}

#[test]
fn three_dead_acquirers_make_it_contended_and_leave_the_log_alone() {
    let (mut store, log) = parked();
    let mut machine = machine(Capability::Conditional);
    for _ in 0..MAX_ATTEMPTS {
        step_to_acquire(&mut store, &mut machine);
        store.acquire_fence(&id());
        assert_eq!(
            drive::step(&mut store, &mut machine),
            Ok(Stepped::Progressed)
        );
    }
    let result = drive::run(&mut store, &mut machine).expect("steps");
    let contended = ResumeContendedError {
        execution_id: id(),
        attempts: 3,
    };
    assert_eq!(result, Err(ResumeError::Contended(contended.clone())));
    assert!(contended.is_retryable());
    assert_eq!(store.read_range(&id(), 1, None).expect("reads"), log);
    assert_eq!(store.current_fence(&id()), 3);
}

#[test]
fn an_answered_park_is_refused_and_takes_no_token() {
    let (mut store, _) = parked();
    store
        .append(&id(), NewEvent::kernel(KernelKind::ExecutionResumed, 3))
        .expect("someone answered");
    let result = drive::run(&mut store, &mut machine(Capability::Conditional)).expect("steps");
    assert!(matches!(
        result,
        Err(ResumeError::Refused(ResumeRefusedError {
            reason: RefusalReason::NotSuspended,
            park_seq: 2,
            ..
        }))
    ));
    assert_eq!(store.current_fence(&id()), 0);
    assert_eq!(resumes(&store), 1);
}

#[test]
fn a_sequence_that_is_not_a_park_is_refused() {
    for park_seq in [1, 99] {
        let (mut store, _) = parked();
        let mut machine = ResumeMachine::new(
            id(),
            ResumeRequest::new(park_seq, json!(null), 0),
            Capability::Conditional,
        );
        let result = drive::run(&mut store, &mut machine).expect("steps");
        assert!(
            matches!(result, Err(ResumeError::Refused(_))),
            "park_seq {park_seq}: {result:?}"
        );
        assert_eq!(store.current_fence(&id()), 0);
    }
}

#[test]
fn an_audit_append_after_the_callers_read_does_not_collide() {
    let (mut store, log) = parked();
    let mut machine = ResumeMachine::with_events(id(), request(), Capability::Conditional, &log)
        .expect("valid run");
    let denied = store
        .append(&id(), NewEvent::kernel(KernelKind::ExecutionDenied, 3))
        .expect("an unfenced audit append");
    let resumed = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("resumes");
    assert_eq!(resumed.resumed.sequence, denied.sequence + 1);
    assert_eq!(resumed.view.head, resumed.resumed.sequence);
}

#[test]
fn a_rival_between_acquire_and_append_is_retried_past() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    step_to_acquire(&mut store, &mut machine);
    assert_eq!(
        drive::step(&mut store, &mut machine),
        Ok(Stepped::Progressed)
    ); // acquired 1
    let rival = store
        .acquire_fence_if(
            &id(),
            ParkExpectation {
                fence: 1,
                park_seq: 2,
            },
        )
        .expect("valid");
    assert_eq!(rival, AcquireOutcome::Acquired { fence: 2 });
    let resumed = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("resumes");
    assert_eq!((resumed.fence, resumed.attempts), (Some(3), 2));
    assert_eq!(resumes(&store), 1);
}

#[test]
fn a_fencing_only_store_falls_back_to_the_unconditional_acquire() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::FencingOnly);
    step_to_acquire(&mut store, &mut machine);
    assert_eq!(machine.poll(), Poll::Act(Action::AcquireFence));
    let resumed = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("resumes");
    assert_eq!((resumed.fence, resumed.attempts), (Some(1), 1));
}

#[test]
fn a_non_fencing_store_takes_no_token() {
    let (mut store, _) = parked();
    let resumed = drive::run(&mut store, &mut machine(Capability::NonFencing))
        .expect("steps")
        .expect("resumes");
    assert_eq!((resumed.fence, resumed.attempts), (None, 0));
    assert_eq!(store.current_fence(&id()), 0);
    let again = drive::run(&mut store, &mut machine(Capability::NonFencing)).expect("steps");
    assert!(matches!(again, Err(ResumeError::Refused(_))));
    assert_eq!(resumes(&store), 1);
}

#[test]
fn an_unfenced_resume_of_a_fenced_execution_is_stale() {
    let (mut store, _) = parked();
    store.acquire_fence(&id());
    let mut machine = ResumeMachine::new(id(), request().unfenced(), Capability::Conditional);
    let result = drive::run(&mut store, &mut machine).expect("steps");
    assert!(
        matches!(&result, Err(ResumeError::StaleFence(stale)) if stale.presented.is_none() && stale.current == 1),
        "{result:?}"
    );
    assert_eq!(resumes(&store), 0);
}

#[test]
fn a_park_deleted_under_the_resume_is_refused() {
    let (mut store, log) = parked();
    let mut machine = ResumeMachine::with_events(id(), request(), Capability::Conditional, &log)
        .expect("valid run");
    store.delete_execution(&id());
    let result = drive::run(&mut store, &mut machine).expect("steps");
    assert!(matches!(result, Err(ResumeError::Refused(_))), "{result:?}");
}

#[test]
fn poll_is_idempotent_and_done_stays_done() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    assert_eq!(machine.poll(), machine.poll());
    let result = drive::run(&mut store, &mut machine).expect("steps");
    assert_eq!(machine.poll(), Poll::Done(result));
    assert_eq!(
        drive::step(&mut store, &mut machine),
        Ok(Stepped::Done(machine.poll().done()))
    );
}

#[test]
fn inputs_that_answer_nothing_pending_are_rejected_and_change_nothing() {
    let (_, log) = parked();
    let mut machine = machine(Capability::Conditional);
    let before = machine.clone();
    assert_eq!(
        machine.handle_acquire(4),
        Err(ContractError::UnexpectedInput {
            expected: "handle_read",
            got: "handle_acquire"
        })
    );
    assert_eq!(
        machine.handle_read(log[1..].to_vec()),
        Err(ContractError::Gap {
            expected: 1,
            got: 2
        })
    );
    let mut stranger = log[1].clone();
    stranger.execution_id = ExecutionId::new("other").expect("valid");
    assert!(matches!(
        machine.handle_read(vec![stranger]),
        Err(ContractError::WrongExecution { .. })
    ));
    assert_eq!(machine, before);
}

impl Poll {
    /// Test helper: the finished result.
    fn done(self) -> Result<Resumed, ResumeError> {
        match self {
            Poll::Done(result) => result,
            Poll::Act(action) => panic!("still pending: {action:?}"),
        }
    }
}

#[test]
fn the_held_token_is_visible_between_acquire_and_append() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    step_to_acquire(&mut store, &mut machine);
    assert_eq!(machine.holds_fence(), None);
    assert_eq!(
        drive::step(&mut store, &mut machine),
        Ok(Stepped::Progressed)
    );
    assert_eq!(machine.holds_fence(), Some(1));
    let _ = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("resumes");
    assert_eq!(
        machine.holds_fence(),
        None,
        "a finished resume holds nothing; its body does"
    );
}

/// Steps `machine` until its pending action matches `at`, then returns that
/// action without performing it.
fn step_until(
    store: &mut MemoryStore,
    machine: &mut ResumeMachine,
    at: impl Fn(&Action) -> bool,
) -> Action {
    loop {
        match machine.poll() {
            Poll::Act(action) if at(&action) => return action,
            Poll::Act(_) => assert_eq!(drive::step(store, machine), Ok(Stepped::Progressed)),
            Poll::Done(result) => panic!("finished before the action: {result:?}"),
        }
    }
}

fn is_append(action: &Action) -> bool {
    matches!(action, Action::AppendIfParked { .. })
}

/// Steps `machine` to its resume append and returns what it would append,
/// without performing it.
fn step_to_append(store: &mut MemoryStore, machine: &mut ResumeMachine) -> (u64, NewEvent) {
    match step_until(store, machine, is_append) {
        Action::AppendIfParked {
            park_seq,
            mut events,
        } => (park_seq, events.pop().expect("a resume")),
        other => unreachable!("{other:?}"),
    }
}

#[test]
fn a_delete_between_acquire_and_append_does_not_recreate_the_log() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    let _ = step_until(&mut store, &mut machine, is_append);
    assert_eq!(machine.holds_fence(), Some(1));
    assert!(store.delete_execution(&id()));
    let result = drive::run(&mut store, &mut machine).expect("steps");
    assert!(
        matches!(&result, Err(ResumeError::Refused(refused)) if refused.reason == RefusalReason::NotSuspended),
        "{result:?}"
    );
    assert_eq!(store.head(&id()), 0, "nothing was written");
    assert_eq!(store.current_fence(&id()), 1, "the delete keeps the token");
}

#[test]
fn a_park_after_the_end_is_refused_on_every_entry_point() {
    let mut store = MemoryStore::new();
    // Both appends pass the guard while the token is 0.
    let log = store
        .append_many(
            &id(),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionCompleted, 2),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 3),
            ],
        )
        .expect("appends");
    let request = || ResumeRequest::new(3, json!("late"), 10);
    let machines = [
        ResumeMachine::new(id(), request(), Capability::Conditional),
        ResumeMachine::with_events(id(), request(), Capability::Conditional, &log)
            .expect("valid run"),
        ResumeMachine::with_events(id(), request(), Capability::Conditional, &log[2..])
            .expect("valid run"),
        ResumeMachine::new(id(), request().unfenced(), Capability::Conditional),
    ];
    for mut machine in machines {
        let result = drive::run(&mut store, &mut machine).expect("steps");
        assert!(matches!(result, Err(ResumeError::Refused(_))), "{result:?}");
    }
    assert_eq!(store.current_fence(&id()), 0, "no token taken");
    assert_eq!(store.head(&id()), 3, "nothing appended");
}

#[test]
fn an_append_of_unknown_outcome_that_landed_is_the_resume() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    let (park_seq, event) = step_to_append(&mut store, &mut machine);
    // The write commits, then the connection dies before the answer.
    let written = store
        .append_if_parked(&id(), park_seq, vec![event])
        .expect("appends");
    assert_eq!(machine.handle_outcome_unknown(), Ok(()));
    assert_eq!(machine.holds_fence(), Some(1));
    let resumed = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("settled as landed");
    assert_eq!(
        crate::ConditionalAppend::Appended(vec![resumed.resumed.clone()]),
        written
    );
    assert_eq!((resumed.fence, resumed.view.head), (Some(1), 3));
    assert_eq!(resumes(&store), 1);
}

#[test]
fn an_append_of_unknown_outcome_that_did_not_land_is_tried_again() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    let _ = step_until(&mut store, &mut machine, is_append);
    // Nothing reached the store.
    assert_eq!(machine.handle_outcome_unknown(), Ok(()));
    let resumed = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("resumes on the retry");
    assert_eq!((resumed.fence, resumed.attempts), (Some(1), 1));
    assert_eq!(resumes(&store), 1);
}

#[test]
fn appends_that_never_settle_end_contended_with_nothing_written() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    for _ in 0..MAX_ATTEMPTS {
        let _ = step_until(&mut store, &mut machine, is_append);
        assert_eq!(machine.handle_outcome_unknown(), Ok(()));
    }
    let result = drive::run(&mut store, &mut machine).expect("steps");
    assert!(
        matches!(result, Err(ResumeError::Contended(_))),
        "{result:?}"
    );
    assert_eq!(resumes(&store), 0);
}

#[test]
fn a_tokenless_append_of_unknown_outcome_never_claims_a_resume() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::NonFencing);
    let (park_seq, event) = step_to_append(&mut store, &mut machine);
    // Landed, but a rival's identical resume would look the same.
    let _ = store
        .append_if_parked(&id(), park_seq, vec![event])
        .expect("appends");
    assert_eq!(machine.handle_outcome_unknown(), Ok(()));
    let result = drive::run(&mut store, &mut machine).expect("steps");
    assert!(matches!(result, Err(ResumeError::Refused(_))), "{result:?}");
}

#[test]
fn an_acquire_of_unknown_outcome_is_tried_again_past_itself() {
    let (mut store, _) = parked();
    let mut machine = machine(Capability::Conditional);
    let Action::AcquireFenceIf(expect) = step_until(&mut store, &mut machine, |action| {
        matches!(action, Action::AcquireFenceIf(_))
    }) else {
        unreachable!()
    };
    // The acquire lands; its answer is lost.
    let _ = store.acquire_fence_if(&id(), expect).expect("acquires");
    assert_eq!(machine.handle_outcome_unknown(), Ok(()));
    let resumed = drive::run(&mut store, &mut machine)
        .expect("steps")
        .expect("resumes");
    // Its own lost token is passed like any dead acquirer's.
    assert_eq!((resumed.fence, resumed.attempts), (Some(2), 3));
    assert_eq!(resumes(&store), 1);
}

#[test]
fn a_log_regrown_past_the_park_after_a_delete_is_not_taken_for_the_park() {
    // B reads the park; A resumes it and its body runs under token 1.
    let (mut store, log) = parked();
    let mut late = ResumeMachine::with_events(id(), request(), Capability::Conditional, &log)
        .expect("valid run");
    let winner = drive::run(&mut store, &mut machine(Capability::Conditional))
        .expect("steps")
        .expect("resumes");
    // The log is deleted (the token is kept), and grows back: the body's
    // step at 1, an unfenced audit at 2, where the park used to be.
    assert!(store.delete_execution(&id()));
    let step = NewEvent::kernel(KernelKind::StepCompleted, 11).with_fence(1);
    store.append(&id(), step).expect("the body writes");
    let audit = NewEvent::kernel(KernelKind::ExecutionDenied, 12);
    store.append(&id(), audit).expect("an audit lands");
    let result = drive::run(&mut store, &mut late).expect("steps");
    assert!(matches!(result, Err(ResumeError::Refused(_))), "{result:?}");
    assert_eq!(store.current_fence(&id()), winner.fence.expect("fenced"));
    assert_eq!(resumes(&store), 0, "no resume on the regrown log");
}
