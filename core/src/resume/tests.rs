//! The resume machine over the in-memory store, step by step.

use serde_json::json;

use super::*;
use crate::drive::{self, Stepped};
use crate::memory::MemoryStore;

const ID: &str = "parent";

fn id() -> ExecutionId {
    ExecutionId::new(ID).expect("valid id")
}

/// A store with `ID` started and parked; returns it and the log.
fn parked() -> (MemoryStore, Vec<Envelope>) {
    let mut store = MemoryStore::new();
    let log = store
        .append_many(
            ID,
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
        .read_range(ID, 1, None)
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
    assert_eq!(store.current_fence(ID), Ok(1));
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
    let partial = ResumeMachine::with_events(id(), request(), Capability::Conditional, &log[..1])
        .expect("valid run");
    assert_eq!(partial.poll(), Poll::Act(Action::ReadFrom { from_seq: 2 }));
}

#[test]
fn the_expected_token_is_the_parks_own() {
    let mut store = MemoryStore::new();
    store.acquire_fence(ID).expect("acquires");
    let park = store
        .append(
            ID,
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
    store.acquire_fence(ID).expect("a dead acquirer");
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
        store.acquire_fence(ID).expect("a dead acquirer cuts in");
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
    assert_eq!(store.read_range(ID, 1, None).expect("reads"), log);
    assert_eq!(store.current_fence(ID), Ok(3));
}

#[test]
fn an_answered_park_is_refused_and_takes_no_token() {
    let (mut store, _) = parked();
    store
        .append(ID, NewEvent::kernel(KernelKind::ExecutionResumed, 3))
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
    assert_eq!(store.current_fence(ID), Ok(0));
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
        assert_eq!(store.current_fence(ID), Ok(0));
    }
}

#[test]
fn an_audit_append_after_the_callers_read_does_not_collide() {
    let (mut store, log) = parked();
    let mut machine = ResumeMachine::with_events(id(), request(), Capability::Conditional, &log)
        .expect("valid run");
    let denied = store
        .append(ID, NewEvent::kernel(KernelKind::ExecutionDenied, 3))
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
            ID,
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
    assert_eq!(store.current_fence(ID), Ok(0));
    let again = drive::run(&mut store, &mut machine(Capability::NonFencing)).expect("steps");
    assert!(matches!(again, Err(ResumeError::Refused(_))));
    assert_eq!(resumes(&store), 1);
}

#[test]
fn an_unfenced_resume_of_a_fenced_execution_is_stale() {
    let (mut store, _) = parked();
    store.acquire_fence(ID).expect("fenced");
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
    store.delete_execution(ID).expect("deletes");
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
        Err(MachineError::UnexpectedInput {
            expected: "handle_read",
            got: "handle_acquire"
        })
    );
    assert_eq!(
        machine.handle_read(log.clone()),
        Err(MachineError::Gap {
            expected: 2,
            got: 1
        })
    );
    let mut stranger = log[1].clone();
    stranger.execution_id = ExecutionId::new("other").expect("valid");
    assert!(matches!(
        machine.handle_read(vec![stranger]),
        Err(MachineError::WrongExecution { .. })
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
