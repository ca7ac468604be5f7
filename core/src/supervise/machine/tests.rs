//! The supervision, one branch of its steps per test, over the in-memory
//! store.

use serde_json::json;

use super::*;
use crate::capability::Capability;
use crate::contract::ContractError;
use crate::drive;
use crate::event::NewEvent;
use crate::fence::StaleFenceError;
use crate::json::JsonObject;
use crate::kind::KernelKind;
use crate::memory::MemoryStore;
use crate::park::park_payload;
use crate::resume_machine::{RefusalReason, ResumeMachine, ResumeRefusedError};

const NOW: i64 = 1_000;
const LATER: i64 = 2_000;

fn id(s: &str) -> ExecutionId {
    ExecutionId::new(s).expect("valid id")
}

/// How the host answers a fenced (conditional) resume.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rivals {
    /// Runs it against the store.
    None,
    /// Answers contended without touching the store, as a resume that lost
    /// to rivals three times does.
    Always,
}

/// A host: the store, how conditional resumes go, and every action asked
/// for, in order.
struct Host {
    store: MemoryStore,
    rivals: Rivals,
    trace: Vec<SuperviseAction>,
    rows: Vec<TimerRow>,
}

impl Host {
    fn new() -> Self {
        Self {
            store: MemoryStore::new(),
            rivals: Rivals::None,
            trace: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Parks `parent` (started, then suspended on `waits`).
    fn park(&mut self, parent: &str, waits: &[Wait]) {
        self.store
            .append_many(
                &id(parent),
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 1)
                        .with_payload(park_payload(waits)),
                ],
            )
            .expect("parks");
    }

    /// Runs `child` to `kind` with `output`.
    fn end(&mut self, child: &str, kind: KernelKind, output: serde_json::Value) {
        let mut payload = JsonObject::new();
        payload.insert("output".to_owned(), output);
        self.store
            .append_many(
                &id(child),
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                    NewEvent::kernel(kind, 5).with_payload(payload),
                ],
            )
            .expect("ends");
    }

    /// Pumps `machine` to its end: the whole host is this loop.
    fn run(&mut self, machine: &mut SuperviseMachine) -> SuperviseOutcome {
        loop {
            let action = match machine.poll() {
                SupervisePoll::Done(outcome) => return outcome,
                SupervisePoll::Act(action) => action,
            };
            self.trace.push(action.clone());
            let parent = machine.parent().clone();
            match action {
                SuperviseAction::ReadParent => {
                    let log = self.store.read_range(&parent, 1, None).expect("reads");
                    machine.handle_parent(&log).expect("fits");
                }
                SuperviseAction::ReadChild(child) => {
                    let log = self.store.read_range(&child, 1, None).expect("reads");
                    machine.handle_child(&log, NOW).expect("fits");
                }
                SuperviseAction::Resume { request, log } => {
                    let fenced = request.fencing == crate::resume::Fencing::ByCapability;
                    let result = if fenced && self.rivals == Rivals::Always {
                        Err(ResumeError::Contended(ResumeContendedError {
                            execution_id: parent.clone(),
                            attempts: 3,
                        }))
                    } else {
                        let mut resume = ResumeMachine::with_events(
                            parent.clone(),
                            request,
                            Capability::Conditional,
                            &log,
                        )
                        .expect("a run from 1");
                        drive::run(&mut self.store, &mut resume).expect("drives")
                    };
                    machine.handle_resumed(result.as_ref()).expect("fits");
                }
                SuperviseAction::Draw => {
                    machine
                        .handle_draw(Draw::new(0.5).expect("a draw"), LATER)
                        .expect("a time");
                }
                SuperviseAction::WriteRow(row) => {
                    self.rows.push(row);
                    machine.handle_written().expect("fits");
                }
            }
        }
    }
}

fn options(conditional_tries: u32, on_contention: OnContention) -> SuperviseOptions {
    SuperviseOptions {
        conditional_tries,
        policy: RedrivePolicy::default(),
        on_contention,
    }
}

fn supervise(host: &mut Host, parent: &str, options: SuperviseOptions) -> SuperviseOutcome {
    host.run(&mut SuperviseMachine::new(id(parent), options))
}

#[test]
fn no_open_child_park_is_not_waiting_on_children() {
    let mut host = Host::new();
    host.park("timer", &[Wait::Timer { wake_at: 5 }]);
    host.park("answered", &[Wait::Child(id("c"))]);
    host.store
        .append(
            &id("answered"),
            NewEvent::kernel(KernelKind::ExecutionResumed, 2),
        )
        .expect("answers");
    host.end("ended", KernelKind::ExecutionCompleted, json!(null));
    for parent in ["nobody", "timer", "answered", "ended"] {
        let mut machine = SuperviseMachine::new(id(parent), SuperviseOptions::default());
        assert_eq!(
            host.run(&mut machine),
            SuperviseOutcome::NotWaitingOnChildren,
            "{parent}"
        );
        assert_eq!(machine.watching(), None, "{parent}");
    }
    assert!(
        host.trace
            .iter()
            .all(|action| *action == SuperviseAction::ReadParent),
        "nothing but the parents' reads: {:?}",
        host.trace
    );
}

#[test]
fn children_are_read_sorted_once_each_and_an_unended_one_keeps_it_waiting() {
    let mut host = Host::new();
    host.park(
        "p",
        &[
            Wait::Group(vec![id("b"), id("a")]),
            Wait::Child(id("b")),
            Wait::Timer { wake_at: 9 },
        ],
    );
    host.end("a", KernelKind::ExecutionCompleted, json!(1));
    let mut machine = SuperviseMachine::new(id("p"), SuperviseOptions::default());
    assert_eq!(host.run(&mut machine), SuperviseOutcome::Waiting);
    assert_eq!(
        host.trace,
        [
            SuperviseAction::ReadParent,
            SuperviseAction::ReadChild(id("a")),
            SuperviseAction::ReadChild(id("b")),
        ]
    );
    assert_eq!(machine.watching(), Some(&[id("a"), id("b")][..]));
}

#[test]
fn the_unfenced_try_from_the_log_read_lands_with_the_outcomes() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!({ "total": 7 }));
    let mut machine = SuperviseMachine::new(id("p"), SuperviseOptions::default());
    let SuperviseOutcome::Resumed(resumed) = host.run(&mut machine) else {
        panic!("expected a resume: {:?}", host.trace);
    };
    assert_eq!(resumed.fence, None, "the first try takes no token");
    assert_eq!(
        resumed.resumed.at, NOW,
        "stamped with the last child's time"
    );
    assert_eq!(
        resumed.resumed.payload["answer"],
        json!({ "wait": 0, "children": { "c": { "status": "completed", "output": { "output": { "total": 7 } } } } })
    );
    let SuperviseAction::Resume { request, log } = &host.trace[2] else {
        panic!("{:?}", host.trace);
    };
    assert_eq!(request.fencing, crate::resume::Fencing::Unfenced);
    assert_eq!(log.len(), 2, "from the parent's log as read");
    assert_eq!(machine.watching(), None, "no longer the supervisor's");
    assert_eq!(
        SuperviseOutcome::Resumed(resumed).redrive_answer(),
        RedriveAnswer::Done
    );
}

#[test]
fn a_refused_try_is_already_answered() {
    let mut machine = SuperviseMachine::new(id("p"), SuperviseOptions::default());
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!(null));
    let log = host.store.read_range(&id("p"), 1, None).expect("reads");
    machine.handle_parent(&log).expect("fits");
    let child = host.store.read_range(&id("c"), 1, None).expect("reads");
    machine.handle_child(&child, NOW).expect("fits");
    let refused = ResumeError::Refused(ResumeRefusedError {
        execution_id: id("p"),
        park_seq: 2,
        reason: RefusalReason::NotSuspended,
    });
    machine.handle_resumed(Err(&refused)).expect("fits");
    assert_eq!(
        machine.poll(),
        SupervisePoll::Done(SuperviseOutcome::AlreadyAnswered)
    );
    assert_eq!(machine.watching(), None);
    assert_eq!(
        SuperviseOutcome::AlreadyAnswered.redrive_answer(),
        RedriveAnswer::Noop
    );
}

#[test]
fn a_stale_fence_switches_to_conditional_tries_which_land_past_a_dead_acquirer() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionFailed, json!("boom"));
    host.store.acquire_fence(&id("p"));
    let SuperviseOutcome::Resumed(resumed) =
        supervise(&mut host, "p", options(3, OnContention::WriteRow))
    else {
        panic!("expected a resume: {:?}", host.trace);
    };
    assert_eq!((resumed.fence, resumed.attempts), (Some(2), 2));
    let SuperviseAction::Resume { request, log } = &host.trace[3] else {
        panic!("{:?}", host.trace);
    };
    assert_eq!(request.fencing, crate::resume::Fencing::ByCapability);
    assert!(log.is_empty(), "a conditional try reads the log itself");
    assert!(host.rows.is_empty());
}

#[test]
fn every_try_contended_answers_contended_without_a_row() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!(null));
    host.store.acquire_fence(&id("p"));
    host.rivals = Rivals::Always;
    let mut machine = SuperviseMachine::new(id("p"), options(2, OnContention::Answer));
    let outcome = host.run(&mut machine);
    assert!(
        matches!(&outcome, SuperviseOutcome::Contended(c) if c.execution_id == id("p")),
        "{outcome:?}"
    );
    let resumes = host
        .trace
        .iter()
        .filter(|action| matches!(action, SuperviseAction::Resume { .. }))
        .count();
    assert_eq!(resumes, 3, "the unfenced try and two conditional ones");
    assert!(
        !host.trace.contains(&SuperviseAction::Draw),
        "no draw asked"
    );
    assert_eq!(machine.watching(), Some(&[id("c")][..]), "still watched");
    assert_eq!(outcome.redrive_answer(), RedriveAnswer::Contended);
}

#[test]
fn every_try_contended_writes_the_first_redrive_row_when_asked_to() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!(null));
    host.store.acquire_fence(&id("p"));
    host.rivals = Rivals::Always;
    let mut machine = SuperviseMachine::new(id("p"), options(1, OnContention::WriteRow));
    let outcome = host.run(&mut machine);
    let policy = RedrivePolicy::default();
    let row = TimerRow::first_redrive(id("p"), LATER, &policy, Draw::new(0.5).expect("a draw"))
        .expect("a time");
    assert_eq!(outcome, SuperviseOutcome::RedriveScheduled(row.clone()));
    assert_eq!(row.redrive, Some(crate::fire::Redrive { attempt: 0 }));
    assert!(row.wake_at > LATER, "due after the time of the draw");
    assert_eq!(host.rows, std::slice::from_ref(&row));
    assert_eq!(
        &host.trace[host.trace.len() - 2..],
        [SuperviseAction::Draw, SuperviseAction::WriteRow(row)]
    );
    assert_eq!(machine.watching(), Some(&[id("c")][..]), "still watched");
    assert_eq!(outcome.redrive_answer(), RedriveAnswer::Noop);
}

#[test]
fn a_fenced_parent_with_no_conditional_try_allowed_is_fenced() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!(null));
    host.store.acquire_fence(&id("p"));
    let mut machine = SuperviseMachine::new(id("p"), options(0, OnContention::WriteRow));
    let outcome = host.run(&mut machine);
    assert_eq!(
        outcome,
        SuperviseOutcome::Fenced(StaleFenceError {
            execution_id: id("p"),
            presented: None,
            current: 1,
        })
    );
    assert!(host.rows.is_empty());
    assert_eq!(machine.watching(), None);
    assert_eq!(outcome.redrive_answer(), RedriveAnswer::Failed);
}

#[test]
fn an_unreadable_park_is_refused_and_leaves_the_machine_as_it_was() {
    let mut store = MemoryStore::new();
    store
        .append(
            &id("p"),
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0),
        )
        .expect("parks with no waits");
    let log = store.read_range(&id("p"), 1, None).expect("reads");
    let mut machine = SuperviseMachine::new(id("p"), SuperviseOptions::default());
    let before = machine.clone();
    let error = machine.handle_parent(&log).expect_err("unreadable");
    assert!(
        matches!(error, Error::Input(InputError::UnreadablePark { .. })),
        "{error:?}"
    );
    assert_eq!(machine, before);
}

#[test]
fn answers_that_do_not_fit_are_refused() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!(null));
    let mut machine = SuperviseMachine::new(id("p"), SuperviseOptions::default());
    assert!(matches!(
        machine.handle_written(),
        Err(ContractError::UnexpectedInput { .. })
    ));
    let child = host.store.read_range(&id("c"), 1, None).expect("reads");
    assert!(matches!(
        machine.handle_parent(&child),
        Err(Error::Contract(ContractError::WrongExecution { .. }))
    ));
    let log = host.store.read_range(&id("p"), 1, None).expect("reads");
    machine.handle_parent(&log).expect("fits");
    assert!(matches!(
        machine.handle_child(&log, NOW),
        Err(ContractError::WrongExecution { .. })
    ));
    machine.handle_child(&child, NOW).expect("fits");
    let other = ResumeError::Refused(ResumeRefusedError {
        execution_id: id("p"),
        park_seq: 7,
        reason: RefusalReason::NotSuspended,
    });
    assert_eq!(
        machine.handle_resumed(Err(&other)),
        Err(ContractError::WrongPark {
            expected: 2,
            got: 7
        })
    );
    assert!(matches!(
        machine.handle_draw(Draw::new(0.0).expect("a draw"), NOW),
        Err(Error::Contract(ContractError::UnexpectedInput { .. }))
    ));
}

#[test]
fn a_stale_fence_does_not_answer_a_fenced_try_and_a_clock_out_of_range_gets_no_row() {
    let mut host = Host::new();
    host.park("p", &[Wait::Child(id("c"))]);
    host.end("c", KernelKind::ExecutionCompleted, json!(null));
    let mut machine = SuperviseMachine::new(id("p"), options(1, OnContention::WriteRow));
    let log = host.store.read_range(&id("p"), 1, None).expect("reads");
    machine.handle_parent(&log).expect("fits");
    let child = host.store.read_range(&id("c"), 1, None).expect("reads");
    machine.handle_child(&child, NOW).expect("fits");
    let stale = ResumeError::StaleFence(StaleFenceError {
        execution_id: id("p"),
        presented: None,
        current: 1,
    });
    machine.handle_resumed(Err(&stale)).expect("switches");
    assert!(matches!(
        machine.handle_resumed(Err(&stale)),
        Err(ContractError::UnexpectedInput { .. })
    ));
    let contended = ResumeError::Contended(ResumeContendedError {
        execution_id: id("p"),
        attempts: 3,
    });
    machine.handle_resumed(Err(&contended)).expect("fits");
    assert_eq!(machine.poll(), SupervisePoll::Act(SuperviseAction::Draw));
    let draw = Draw::new(0.5).expect("a draw");
    assert_eq!(
        machine.handle_draw(draw, crate::timer::MAX_TIMER_MS),
        Err(Error::Input(InputError::NoWakeTime {
            now: crate::timer::MAX_TIMER_MS
        }))
    );
    assert_eq!(machine.poll(), SupervisePoll::Act(SuperviseAction::Draw));
}

#[test]
fn only_a_wait_still_open_keeps_the_watch() {
    let row = TimerRow::redrive(id("p"), 5, 0);
    let contended = ResumeContendedError {
        execution_id: id("p"),
        attempts: 3,
    };
    assert!(SuperviseOutcome::Waiting.keeps_watch());
    assert!(SuperviseOutcome::Contended(contended).keeps_watch());
    assert!(SuperviseOutcome::RedriveScheduled(row).keeps_watch());
    assert!(!SuperviseOutcome::AlreadyAnswered.keeps_watch());
    assert!(!SuperviseOutcome::NotWaitingOnChildren.keeps_watch());
    assert_eq!(
        SuperviseOutcome::Waiting.redrive_answer(),
        RedriveAnswer::Noop
    );
    assert_eq!(
        SuperviseOutcome::NotWaitingOnChildren.redrive_answer(),
        RedriveAnswer::Noop
    );
}
