//! The recovery table, row by row, over the in-memory store.

use super::*;
use crate::capability::Capability;
use crate::drive;
use crate::event::NewEvent;
use crate::fire::FireContext;
use crate::kind::KernelKind;
use crate::memory::MemoryStore;
use crate::park::{Wait, park_payload};
use crate::redrive_policy::{Draw, RedrivePolicy};
use crate::resume_machine::{ResumeContendedError, ResumeMachine};
use crate::timer_records::Exhaustion;

const WAKE: i64 = 5_000;
const NOW: i64 = 9_000;

fn id() -> ExecutionId {
    ExecutionId::new("stuck").expect("valid id")
}

fn context(redrivers: usize) -> FireContext {
    FireContext::new(NOW, Draw::new(0.5).expect("draw"))
        .with_policy(RedrivePolicy::default())
        .with_redrivers(redrivers)
}

fn record(row: TimerRow) -> ExhaustedRow {
    ExhaustedRow::new(
        row,
        Exhaustion {
            attempts: 8,
            at: WAKE + 100,
        },
    )
}

/// A store with the execution parked on `waits`.
fn parked(waits: &[Wait]) -> MemoryStore {
    let mut store = MemoryStore::new();
    store
        .append_many(
            &id(),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 2)
                    .with_payload(park_payload(waits)),
            ],
        )
        .expect("appends");
    store
}

/// What a run wrote besides the log.
#[derive(Debug, Default, PartialEq)]
struct Writes {
    scheduled: Vec<TimerRow>,
    cleared: Vec<(ExecutionId, i64)>,
}

/// Drives `machine` over `store`, with the re-drivers answering `redrive`
/// in turn and resumes `contended` or real.
fn run(
    machine: &mut RecoverMachine,
    store: &mut MemoryStore,
    redrive: &[RedriveAnswer],
    contended: bool,
) -> (RecoverOutcome, Writes) {
    let mut writes = Writes::default();
    let mut answers = redrive.iter();
    loop {
        let action = match machine.poll() {
            RecoverPoll::Done(outcome) => return (outcome, writes),
            RecoverPoll::Act(action) => action,
        };
        match action {
            RecoverAction::Fire(FireAction::ReadLog) => {
                let log = store.read_range(&id(), 1, None).expect("reads");
                machine.handle_read(&log)
            }
            RecoverAction::Fire(FireAction::Resume(_)) if contended => {
                let error = ResumeError::Contended(ResumeContendedError {
                    execution_id: id(),
                    attempts: 3,
                });
                machine.handle_resumed(Err(&error))
            }
            RecoverAction::Fire(FireAction::Resume(request)) => {
                let mut resume = ResumeMachine::new(id(), request, Capability::Conditional);
                let result = drive::run(store, &mut resume).expect("steps");
                machine.handle_resumed(result.as_ref())
            }
            RecoverAction::Fire(FireAction::Redrive { .. }) => {
                machine.handle_redrive(*answers.next().expect("a re-driver's answer"))
            }
            RecoverAction::Schedule(row) => {
                writes.scheduled.push(row);
                machine.handle_scheduled()
            }
            RecoverAction::ClearExhausted {
                execution_id,
                wake_at,
            } => {
                writes.cleared.push((execution_id, wake_at));
                machine.handle_cleared()
            }
            other => panic!("unexpected {other:?}"),
        }
        .expect("the host's answers fit");
    }
}

#[test]
fn a_redrive_record_fires_a_fresh_chain_through_the_redrivers() {
    let exhausted = record(TimerRow::redrive(id(), WAKE, 7));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(2)).expect("valid");
    assert_eq!(
        machine.row(),
        &TimerRow::redrive(id(), WAKE, 0),
        "try 0 again"
    );
    let mut store = MemoryStore::new();
    let (outcome, writes) = run(
        &mut machine,
        &mut store,
        &[RedriveAnswer::Noop, RedriveAnswer::Done],
        false,
    );
    assert_eq!(outcome, RecoverOutcome::Resumed);
    assert_eq!(writes.scheduled, []);
    assert_eq!(writes.cleared, [(id(), WAKE)]);
}

#[test]
fn a_redrive_contended_again_hands_the_next_try_to_the_services() {
    let exhausted = record(TimerRow::redrive(id(), WAKE, 7));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(1)).expect("valid");
    let (outcome, writes) = run(
        &mut machine,
        &mut MemoryStore::new(),
        &[RedriveAnswer::Contended],
        false,
    );
    let [next] = writes.scheduled.as_slice() else {
        panic!("one row scheduled: {writes:?}");
    };
    assert_eq!(
        next.redrive,
        Some(Redrive { attempt: 1 }),
        "the chain's try 1"
    );
    assert!(next.wake_at > NOW, "due after now: {next:?}");
    assert_eq!(
        outcome,
        RecoverOutcome::ContendedAgain {
            next: Some(next.clone())
        }
    );
    assert_eq!(writes.cleared, [(id(), WAKE)], "the chain lives again");
}

#[test]
fn every_redriver_noop_is_not_parked() {
    let exhausted = record(TimerRow::redrive(id(), WAKE, 7));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(2)).expect("valid");
    let (outcome, writes) = run(
        &mut machine,
        &mut MemoryStore::new(),
        &[RedriveAnswer::Noop, RedriveAnswer::Noop],
        false,
    );
    assert_eq!(outcome, RecoverOutcome::NotParked);
    assert_eq!(writes.cleared, [(id(), WAKE)]);
}

#[test]
fn a_plain_wake_record_resumes_its_timer_wait() {
    let mut store = parked(&[Wait::Timer { wake_at: WAKE }]);
    let exhausted = record(TimerRow::wake(id(), WAKE));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(0)).expect("valid");
    let (outcome, writes) = run(&mut machine, &mut store, &[], false);
    assert_eq!(outcome, RecoverOutcome::Resumed);
    assert_eq!(writes.cleared, [(id(), WAKE)]);
    let log = store.read_range(&id(), 1, None).expect("reads");
    assert_eq!(log.len(), 3, "resumed once");
    assert_eq!(log[2].kernel_kind(), Some(KernelKind::ExecutionResumed));
}

#[test]
fn a_plain_wake_contended_again_is_given_back_to_the_services() {
    let mut store = parked(&[Wait::Timer { wake_at: WAKE }]);
    let exhausted = record(TimerRow::wake(id(), WAKE));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(0)).expect("valid");
    let (outcome, writes) = run(&mut machine, &mut store, &[], true);
    assert_eq!(writes.scheduled, [TimerRow::wake(id(), WAKE)]);
    assert_eq!(
        outcome,
        RecoverOutcome::ContendedAgain {
            next: Some(TimerRow::wake(id(), WAKE))
        }
    );
    assert_eq!(writes.cleared, [(id(), WAKE)]);
}

#[test]
fn a_plain_wake_whose_park_was_answered_is_not_parked() {
    let mut store = parked(&[Wait::Timer { wake_at: WAKE + 1 }]);
    let exhausted = record(TimerRow::wake(id(), WAKE));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(0)).expect("valid");
    let (outcome, writes) = run(&mut machine, &mut store, &[], false);
    assert_eq!(outcome, RecoverOutcome::NotParked, "waits on another time");
    assert_eq!(writes.cleared, [(id(), WAKE)]);
    assert_eq!(store.read_range(&id(), 1, None).expect("reads").len(), 2);
}

#[test]
fn an_execution_without_a_record_is_redriven_and_nothing_is_cleared() {
    let mut machine = RecoverMachine::new(id(), None, context(1)).expect("valid");
    assert_eq!(machine.row(), &TimerRow::redrive(id(), NOW, 0));
    let (outcome, writes) = run(
        &mut machine,
        &mut MemoryStore::new(),
        &[RedriveAnswer::Done],
        false,
    );
    assert_eq!(outcome, RecoverOutcome::Resumed);
    assert_eq!(writes, Writes::default());
}

#[test]
fn a_policy_of_one_try_keeps_the_record() {
    let exhausted = record(TimerRow::redrive(id(), WAKE, 0));
    let one = RedrivePolicy {
        max_attempts: 1,
        ..RedrivePolicy::default()
    };
    let mut machine =
        RecoverMachine::new(id(), Some(exhausted), context(1).with_policy(one)).expect("valid");
    let (outcome, writes) = run(
        &mut machine,
        &mut MemoryStore::new(),
        &[RedriveAnswer::Contended],
        false,
    );
    assert_eq!(outcome, RecoverOutcome::ContendedAgain { next: None });
    assert_eq!(
        writes,
        Writes::default(),
        "nothing written, the record kept"
    );
}

#[test]
fn no_redriver_tries_nothing() {
    let exhausted = record(TimerRow::redrive(id(), WAKE, 3));
    let machine = RecoverMachine::new(id(), Some(exhausted), context(0)).expect("valid");
    assert_eq!(
        machine.poll(),
        RecoverPoll::Done(RecoverOutcome::NoRedriver)
    );
}

#[test]
fn another_executions_record_is_refused() {
    let other = ExecutionId::new("other").expect("valid");
    let exhausted = record(TimerRow::redrive(other.clone(), WAKE, 3));
    assert_eq!(
        RecoverMachine::new(id(), Some(exhausted), context(1)),
        Err(InputError::RecordOfAnotherExecution {
            expected: id(),
            got: other,
        })
    );
}

#[test]
fn an_answer_out_of_turn_is_refused_and_changes_nothing() {
    let exhausted = record(TimerRow::redrive(id(), WAKE, 3));
    let mut machine = RecoverMachine::new(id(), Some(exhausted), context(1)).expect("valid");
    let before = machine.clone();
    assert!(machine.handle_scheduled().is_err());
    assert!(machine.handle_cleared().is_err());
    assert!(
        machine.handle_read(&[]).is_err(),
        "a re-drive row is not read"
    );
    assert_eq!(machine, before);
}
