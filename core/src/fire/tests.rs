//! The fire decision, one row of the decision table per test, over the
//! in-memory store and a timer table kept as a set of rows.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use serde_json::json;

use super::*;
use crate::capability::Capability;
use crate::contract::ContractError;
use crate::drive;
use crate::event::NewEvent;
use crate::kind::KernelKind;
use crate::memory::MemoryStore;
use crate::park::park_payload;
use crate::resume_machine::{
    RefusalReason, ResumeContendedError, ResumeMachine, ResumeRefusedError,
};
use crate::timer_records::ExhaustedRow;
use crate::wake_backoff::WakeBackoff;

const WAKE: i64 = 5_000;
const NOW: i64 = 5_010;

fn id() -> ExecutionId {
    ExecutionId::new("parent").expect("valid id")
}

fn timer(wake_at: i64) -> Wait {
    Wait::Timer { wake_at }
}

fn park(waits: &[Wait]) -> NewEvent {
    NewEvent::kernel(KernelKind::ExecutionSuspended, 2).with_payload(park_payload(waits))
}

fn kernel(kind: KernelKind) -> NewEvent {
    NewEvent::kernel(kind, 3)
}

/// Changes the store before resume number `n` (from 0).
type Meddler = Box<dyn FnMut(&mut MemoryStore, usize)>;

/// How the host answers a [`FireAction::Resume`].
enum Resumer {
    /// Runs the resume machine against the store.
    Real,
    /// Answers contended without touching the store, as a resume that lost
    /// to rivals three times does.
    Contended,
    /// Changes the store before resume number `n` (from 0), then runs it.
    Meddle(Meddler),
}

/// A host: the event store, the timer table, the re-drivers' answers, and
/// everything the machine asked for, in order.
struct Host {
    store: MemoryStore,
    timers: BTreeSet<TimerRow>,
    /// The exhaustions recorded beside the rows.
    exhausted: Vec<ExhaustedRow>,
    redrivers: Vec<RedriveAnswer>,
    resumer: Resumer,
    resumes: usize,
    trace: Vec<FireAction>,
}

impl Host {
    /// A host whose execution's log is `events` and whose timer table holds
    /// `row`.
    fn new(events: Vec<NewEvent>, row: &TimerRow) -> Self {
        let mut store = MemoryStore::new();
        if !events.is_empty() {
            store.append_many(&id(), events).expect("appends");
        }
        Self {
            store,
            timers: BTreeSet::from([row.clone()]),
            exhausted: Vec::new(),
            redrivers: Vec::new(),
            resumer: Resumer::Real,
            resumes: 0,
            trace: Vec::new(),
        }
    }

    /// Parked on `waits` after a start.
    fn parked(waits: &[Wait], row: &TimerRow) -> Self {
        Self::new(vec![kernel(KernelKind::ExecutionStarted), park(waits)], row)
    }

    fn log(&self) -> Vec<Envelope> {
        self.store.read_range(&id(), 1, None).expect("reads")
    }

    fn resumes_in_log(&self) -> usize {
        self.log()
            .iter()
            .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
            .count()
    }

    fn resume(&mut self, request: ResumeRequest) -> Result<Resumed, ResumeError> {
        let n = self.resumes;
        self.resumes += 1;
        match &mut self.resumer {
            Resumer::Contended => {
                return Err(ResumeError::Contended(ResumeContendedError {
                    execution_id: id(),
                    attempts: 3,
                }));
            }
            Resumer::Meddle(meddle) => meddle(&mut self.store, n),
            Resumer::Real => {}
        }
        let mut machine = ResumeMachine::new(id(), request, Capability::Conditional);
        drive::run(&mut self.store, &mut machine).expect("steps")
    }

    /// Drives a fire of `row` to its end.
    fn fire(&mut self, row: TimerRow, context: FireContext) -> FireOutcome {
        let mut machine = FireMachine::new(row, context).expect("a valid fire");
        loop {
            let action = match machine.poll() {
                FirePoll::Done(outcome) => return outcome,
                FirePoll::Act(action) => action,
            };
            self.trace.push(action.clone());
            match action {
                FireAction::ReadLog => machine.handle_read(&self.log()),
                FireAction::Resume(request) => {
                    let result = self.resume(request);
                    machine.handle_resumed(result.as_ref())
                }
                FireAction::Redrive { redriver, row } => {
                    assert_eq!(&row, machine.row());
                    machine.handle_redrive(self.redrivers[redriver])
                }
                FireAction::Reschedule(next) => {
                    assert!(
                        self.timers.remove(machine.row()),
                        "the fired row is in the table"
                    );
                    self.timers.insert(next);
                    machine.handle_rescheduled()
                }
                FireAction::Complete(fired) => {
                    assert!(self.timers.remove(&fired), "the fired row is in the table");
                    machine.handle_completed()
                }
                FireAction::Exhaust(exhaustion) => {
                    let fired = machine.row().clone();
                    assert!(self.timers.remove(&fired), "the fired row is in the table");
                    self.exhausted.push(ExhaustedRow::new(fired, exhaustion));
                    machine.handle_exhausted()
                }
            }
            .expect("the host's answers are valid");
        }
    }

    /// The trace as action names.
    fn steps(&self) -> Vec<&'static str> {
        self.trace
            .iter()
            .map(|action| match action {
                FireAction::ReadLog => "read",
                FireAction::Resume(_) => "resume",
                FireAction::Redrive { .. } => "redrive",
                FireAction::Reschedule(_) => "reschedule",
                FireAction::Complete(_) => "complete",
                FireAction::Exhaust(_) => "exhaust",
            })
            .collect()
    }
}

fn context() -> FireContext {
    FireContext::new(NOW, Draw::new(0.5).expect("valid"))
}

fn plain() -> TimerRow {
    TimerRow::wake(id(), WAKE)
}

/// Fires a plain wake on a log and expects it obsolete: retired, nothing
/// resumed.
fn assert_obsolete(events: Vec<NewEvent>) {
    let mut host = Host::new(events, &plain());
    let before = host.log();
    assert_eq!(host.fire(plain(), context()), FireOutcome::Obsolete);
    assert_eq!(host.steps(), ["read", "complete"]);
    assert!(host.timers.is_empty(), "retired");
    assert_eq!(host.log(), before, "nothing appended");
}

// ---- plain wakes ----

#[test]
fn a_pending_timer_resumes_its_park_and_retires_the_row() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    assert_eq!(host.fire(plain(), context()), FireOutcome::Fired);
    assert_eq!(host.steps(), ["read", "resume", "complete"]);
    assert_eq!(
        host.trace[1],
        FireAction::Resume(ResumeRequest::new(
            2,
            json!({ "wait": 0, "timer": { "wakeAt": WAKE } }),
            NOW
        ))
    );
    let resumed = &host.log()[2];
    assert_eq!(resumed.kernel_kind(), Some(KernelKind::ExecutionResumed));
    assert_eq!(resumed.fence(), Ok(Some(1)), "under a conditional fence");
    assert_eq!(resumed.at, NOW);
    assert!(host.timers.is_empty());
}

#[test]
fn the_answer_names_the_timers_wait_in_a_multi_wait_park() {
    let waits = [
        Wait::Child(ExecutionId::new("child").expect("valid")),
        timer(WAKE),
    ];
    let mut host = Host::parked(&waits, &plain());
    assert_eq!(host.fire(plain(), context()), FireOutcome::Fired);
    assert_eq!(
        host.log()[2].payload["answer"],
        json!({ "wait": 1, "timer": { "wakeAt": WAKE } })
    );
}

#[test]
fn a_wait_this_node_cannot_read_does_not_hide_the_timer() {
    let mut payload = park_payload(&[timer(WAKE)]);
    if let Some(Value::Array(waits)) = payload.get_mut("waits") {
        waits.insert(0, json!({ "kind": "SIGNAL", "name": "from a newer node" }));
    }
    let park = NewEvent::kernel(KernelKind::ExecutionSuspended, 2).with_payload(payload);
    let mut host = Host::new(vec![kernel(KernelKind::ExecutionStarted), park], &plain());
    assert_eq!(host.fire(plain(), context()), FireOutcome::Fired);
    assert_eq!(host.log()[2].payload["answer"]["wait"], json!(1));
}

#[test]
fn no_log_is_obsolete() {
    assert_obsolete(vec![]);
}

#[test]
fn a_running_execution_is_obsolete() {
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        park(&[timer(WAKE)]),
        kernel(KernelKind::ExecutionResumed),
    ]);
}

#[test]
fn a_park_without_a_timer_is_obsolete() {
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        park(&[Wait::Message {
            channel: "approvals".to_owned(),
        }]),
    ]);
}

#[test]
fn a_timer_at_another_time_is_obsolete() {
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        park(&[timer(WAKE + 1)]),
    ]);
}

#[test]
fn another_park_is_obsolete_even_while_suspended() {
    // The timer's park was answered and the execution parked again on
    // something else: suspended, but not on this wait.
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        park(&[timer(WAKE)]),
        kernel(KernelKind::ExecutionResumed),
        park(&[Wait::Child(ExecutionId::new("child").expect("valid"))]),
    ]);
}

#[test]
fn a_park_whose_other_wait_answered_is_obsolete() {
    // A multi-wait park answered by its child wait: the park is closed, so
    // the timer's wait is not pending either.
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        park(&[
            Wait::Child(ExecutionId::new("child").expect("valid")),
            timer(WAKE),
        ]),
        kernel(KernelKind::ExecutionResumed),
    ]);
}

#[test]
fn a_terminal_execution_is_obsolete() {
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        park(&[timer(WAKE)]),
        kernel(KernelKind::ExecutionCancelled),
    ]);
    // A park written after the end is not open either.
    assert_obsolete(vec![
        kernel(KernelKind::ExecutionStarted),
        kernel(KernelKind::ExecutionCompleted),
        park(&[timer(WAKE)]),
    ]);
}

#[test]
fn a_contended_wake_backs_off_and_leaves_the_row() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Contended;
    let before = host.log();
    let outcome = host.fire(plain(), context());
    let delay = RedrivePolicy::default().delay_ms(0, context().draw);
    assert_eq!(delay, 100);
    assert_eq!(
        outcome,
        FireOutcome::BackedOff(BackoffEntry {
            wake_at: WAKE,
            attempt: 0,
            next_try_at: NOW + 100,
        })
    );
    assert!(!outcome.retired());
    assert_eq!(host.steps(), ["read", "resume"], "no complete");
    assert_eq!(host.timers, BTreeSet::from([plain()]), "the row is left");
    assert_eq!(host.log(), before);
}

#[test]
fn a_backoff_continues_its_own_rows_count_only() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Contended;
    let mine = BackoffEntry {
        wake_at: WAKE,
        attempt: 2,
        next_try_at: NOW,
    };
    let outcome = host.fire(plain(), context().with_backoff(Some(mine)));
    let delay = RedrivePolicy::default().delay_ms(3, context().draw);
    assert_eq!(
        outcome,
        FireOutcome::BackedOff(BackoffEntry {
            wake_at: WAKE,
            attempt: 3,
            next_try_at: NOW + i64::try_from(delay).expect("small"),
        })
    );
    // Another timer's entry gates the execution but does not count here.
    let other = BackoffEntry {
        wake_at: WAKE - 1_000,
        ..mine
    };
    let outcome = host.fire(plain(), context().with_backoff(Some(other)));
    assert!(
        matches!(outcome, FireOutcome::BackedOff(entry) if entry.attempt == 0),
        "{outcome:?}"
    );
}

#[test]
fn before_its_next_try_a_wake_does_nothing() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    let gate = BackoffEntry {
        wake_at: WAKE,
        attempt: 0,
        next_try_at: NOW + 1,
    };
    let outcome = host.fire(plain(), context().with_backoff(Some(gate)));
    assert_eq!(
        outcome,
        FireOutcome::NotYet {
            next_try_at: NOW + 1
        }
    );
    assert!(host.trace.is_empty(), "no read, no acquire");
    assert_eq!(host.store.current_fence(&id()), 0);
    assert_eq!(host.timers, BTreeSet::from([plain()]));
    // At the next try exactly, it goes ahead.
    let at_gate = FireContext::new(NOW + 1, Draw::ZERO).with_backoff(Some(gate));
    assert_eq!(host.fire(plain(), at_gate), FireOutcome::Fired);
}

#[test]
fn a_gate_of_another_timer_of_the_execution_holds_this_one_back() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    let other = BackoffEntry {
        wake_at: WAKE + 7,
        attempt: 4,
        next_try_at: NOW + 1,
    };
    let outcome = host.fire(plain(), context().with_backoff(Some(other)));
    assert_eq!(
        outcome,
        FireOutcome::NotYet {
            next_try_at: NOW + 1
        }
    );
    assert!(host.trace.is_empty());
}

#[test]
fn an_exhausted_wake_is_reported_once_and_retired() {
    let policy = RedrivePolicy::default();
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Contended;
    let mut map = WakeBackoff::new();
    let mut now = NOW;
    let mut outcomes = Vec::new();
    // Poll every 250 ms, as the reference service does, until the row is
    // gone, and a while after.
    for _ in 0..2_000 {
        if !host.timers.contains(&plain()) {
            break;
        }
        let context = FireContext::new(now, Draw::new(0.9).expect("valid"))
            .with_policy(policy)
            .with_backoff(map.get(&id()));
        let outcome = host.fire(plain(), context);
        assert_eq!(map.apply(&plain(), &outcome), None, "nothing evicted");
        outcomes.push(outcome);
        now += 250;
    }
    let backed_off = outcomes
        .iter()
        .filter(|o| matches!(o, FireOutcome::BackedOff(_)))
        .count();
    let exhausted: Vec<_> = outcomes.iter().filter_map(FireOutcome::exhausted).collect();
    assert_eq!(backed_off, 8, "retries 0 to 7");
    assert_eq!(
        exhausted,
        [&RedriveExhaustedError {
            execution_id: id(),
            wake_at: WAKE,
            attempts: 8,
        }],
        "reported once"
    );
    assert!(matches!(outcomes.last(), Some(FireOutcome::Exhausted(_))));
    assert!(host.timers.is_empty(), "retired");
    assert!(map.is_empty(), "the entry is cleared");
    assert_eq!(host.resumes, 9, "the first try and 8 retries");
    assert_eq!(host.steps().iter().filter(|s| **s == "exhaust").count(), 1);
    let last_fire = outcomes.len() as i64 - 1;
    assert_eq!(
        host.exhausted,
        [ExhaustedRow::new(
            plain(),
            Exhaustion {
                attempts: 8,
                at: NOW + 250 * last_fire,
            }
        )],
        "recorded once, at the fire that gave up"
    );
    // No acquire was made before its next try: every fire that got as far
    // as a resume came at or after the time the previous backoff set.
    let mut gate = i64::MIN;
    let mut fire_times = Vec::new();
    let mut at = NOW;
    for outcome in &outcomes {
        if !matches!(outcome, FireOutcome::NotYet { .. }) {
            assert!(at >= gate);
            fire_times.push(at);
        }
        if let FireOutcome::BackedOff(entry) = outcome {
            gate = entry.next_try_at;
        }
        at += 250;
    }
    assert_eq!(fire_times.len(), 9);
}

#[test]
fn max_attempts_zero_gives_up_at_the_first_contention() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Contended;
    let policy = RedrivePolicy {
        max_attempts: 0,
        ..RedrivePolicy::default()
    };
    let outcome = host.fire(plain(), context().with_policy(policy));
    assert_eq!(outcome.exhausted().map(|e| e.attempts), Some(0));
    assert!(host.timers.is_empty());
}

#[test]
fn a_refusal_rereads_and_resumes_a_repark_on_the_same_time() {
    // Between the fire's read and its resume, the park is answered (by a
    // message, say) and the body parks again on a deadline at the same
    // time: the row is the new wait's now, and must not be retired.
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Meddle(Box::new(|store, n| {
        if n == 0 {
            store
                .append_many(
                    &id(),
                    vec![
                        kernel(KernelKind::ExecutionResumed),
                        park(&[
                            Wait::Message {
                                channel: "m".to_owned(),
                            },
                            timer(WAKE),
                        ]),
                    ],
                )
                .expect("appends");
        }
    }));
    assert_eq!(host.fire(plain(), context()), FireOutcome::Fired);
    assert_eq!(
        host.steps(),
        ["read", "resume", "read", "resume", "complete"]
    );
    let log = host.log();
    assert_eq!(log.len(), 5);
    assert_eq!(log[4].kernel_kind(), Some(KernelKind::ExecutionResumed));
    assert_eq!(
        log[4].payload["answer"],
        json!({ "wait": 1, "timer": { "wakeAt": WAKE } })
    );
}

#[test]
fn a_refusal_whose_reread_finds_nothing_pending_is_obsolete() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Meddle(Box::new(|store, _| {
        store
            .append(&id(), kernel(KernelKind::ExecutionResumed))
            .expect("appends");
    }));
    assert_eq!(host.fire(plain(), context()), FireOutcome::Obsolete);
    assert_eq!(host.steps(), ["read", "resume", "read", "complete"]);
    assert_eq!(host.resumes_in_log(), 1, "the rival's only");
    assert!(host.timers.is_empty());
}

#[test]
fn three_refusals_back_off() {
    let mut host = Host::parked(&[timer(WAKE)], &plain());
    host.resumer = Resumer::Meddle(Box::new(|store, _| {
        store
            .append_many(
                &id(),
                vec![kernel(KernelKind::ExecutionResumed), park(&[timer(WAKE)])],
            )
            .expect("appends");
    }));
    let outcome = host.fire(plain(), context());
    assert!(
        matches!(outcome, FireOutcome::BackedOff(entry) if entry.attempt == 0),
        "{outcome:?}"
    );
    assert_eq!(
        host.steps(),
        ["read", "resume", "read", "resume", "read", "resume"]
    );
    assert_eq!(host.timers, BTreeSet::from([plain()]));
}

// ---- re-drive rows ----

fn redrive_row(attempt: u32) -> TimerRow {
    TimerRow::redrive(id(), WAKE, attempt)
}

/// A host for a re-drive row, with these re-drivers. The log does not
/// matter: a re-drive row is not judged by it.
fn redrive_host(attempt: u32, redrivers: &[RedriveAnswer]) -> Host {
    let mut host = Host::new(vec![], &redrive_row(attempt));
    host.redrivers = redrivers.to_vec();
    host
}

fn redrive_context(host: &Host) -> FireContext {
    context().with_redrivers(host.redrivers.len())
}

#[test]
fn a_redriver_that_is_done_retires_the_row() {
    let mut host = redrive_host(0, &[RedriveAnswer::Done, RedriveAnswer::Contended]);
    assert_eq!(
        host.fire(redrive_row(0), redrive_context(&host)),
        FireOutcome::Redriven
    );
    assert_eq!(
        host.steps(),
        ["redrive", "complete"],
        "the first non-noop wins"
    );
    assert!(host.timers.is_empty());
}

#[test]
fn noop_asks_the_next_redriver() {
    let mut host = redrive_host(0, &[RedriveAnswer::Noop, RedriveAnswer::Done]);
    assert_eq!(
        host.fire(redrive_row(0), redrive_context(&host)),
        FireOutcome::Redriven
    );
    assert_eq!(host.steps(), ["redrive", "redrive", "complete"]);
    assert!(matches!(
        host.trace[1],
        FireAction::Redrive { redriver: 1, .. }
    ));
}

#[test]
fn all_noop_retires_the_row() {
    let mut host = redrive_host(3, &[RedriveAnswer::Noop, RedriveAnswer::Noop]);
    assert_eq!(
        host.fire(redrive_row(3), redrive_context(&host)),
        FireOutcome::NothingToRedrive
    );
    assert_eq!(host.steps(), ["redrive", "redrive", "complete"]);
    assert!(host.timers.is_empty());
}

#[test]
fn contended_retires_this_row_and_writes_the_next_in_one_step() {
    let mut host = redrive_host(2, &[RedriveAnswer::Noop, RedriveAnswer::Contended]);
    let outcome = host.fire(redrive_row(2), redrive_context(&host));
    let delay = RedrivePolicy::default().delay_ms(3, context().draw);
    assert_eq!(delay, 800);
    let next = TimerRow::redrive(id(), NOW + 800, 3);
    assert_eq!(outcome, FireOutcome::Rescheduled(next.clone()));
    assert_eq!(host.steps(), ["redrive", "redrive", "reschedule"]);
    assert_eq!(host.trace[2], FireAction::Reschedule(next.clone()));
    assert_eq!(host.timers, BTreeSet::from([next]));
}

#[test]
fn a_failed_redriver_is_treated_as_contended() {
    let mut host = redrive_host(0, &[RedriveAnswer::Failed, RedriveAnswer::Done]);
    let outcome = host.fire(redrive_row(0), redrive_context(&host));
    let next = TimerRow::redrive(id(), NOW + 200, 1);
    assert_eq!(outcome, FireOutcome::Rescheduled(next.clone()));
    assert_eq!(host.steps(), ["redrive", "reschedule"]);
    assert_eq!(host.timers, BTreeSet::from([next]));
}

#[test]
fn a_zero_draw_still_moves_the_next_row_past_the_fired_one() {
    // wake_at == now and no jitter: `now + 0` is the fired row's own key.
    let mut host = redrive_host(0, &[RedriveAnswer::Contended]);
    let context = FireContext::new(WAKE, Draw::ZERO).with_redrivers(1);
    let outcome = host.fire(redrive_row(0), context);
    let next = TimerRow::redrive(id(), WAKE + 1, 1);
    assert_eq!(outcome, FireOutcome::Rescheduled(next.clone()));
    assert_eq!(host.timers, BTreeSet::from([next]));
}

#[test]
fn a_reschedule_is_one_action_and_nothing_else_answers_it() {
    let row = redrive_row(0);
    let mut machine = FireMachine::new(row.clone(), context().with_redrivers(1)).expect("valid");
    machine
        .handle_redrive(RedriveAnswer::Contended)
        .expect("answers");
    let FirePoll::Act(FireAction::Reschedule(next)) = machine.poll() else {
        panic!("one reschedule: {:?}", machine.poll());
    };
    assert_ne!(
        next.due_key(),
        row.due_key(),
        "the next row has its own key"
    );
    // A complete does not answer it: retiring alone would end the chain.
    let before = machine.clone();
    assert_eq!(
        machine.handle_completed(),
        Err(ContractError::UnexpectedInput {
            expected: "handle_rescheduled",
            got: "handle_completed",
        })
    );
    assert_eq!(machine, before);
    // A host whose reschedule answered NotHeld drops the machine: the
    // decision is void. Answered done, the fire is over at once.
    machine.handle_rescheduled().expect("answers");
    assert_eq!(
        machine.poll(),
        FirePoll::Done(FireOutcome::Rescheduled(next))
    );
}

#[test]
fn no_redriver_leaves_the_row_untouched() {
    let mut host = redrive_host(1, &[]);
    let outcome = host.fire(redrive_row(1), redrive_context(&host));
    assert_eq!(outcome, FireOutcome::Left);
    assert!(!outcome.retired());
    assert!(host.trace.is_empty());
    assert_eq!(host.timers, BTreeSet::from([redrive_row(1)]));
}

#[test]
fn a_redrive_row_is_not_judged_by_the_log() {
    // The execution is not parked at all; the re-driver still decides.
    let mut host = Host::new(vec![kernel(KernelKind::ExecutionStarted)], &redrive_row(0));
    host.redrivers = vec![RedriveAnswer::Done];
    assert_eq!(
        host.fire(redrive_row(0), redrive_context(&host)),
        FireOutcome::Redriven
    );
    assert_eq!(host.steps(), ["redrive", "complete"]);
}

#[test]
fn the_last_redrive_row_gives_up_once_and_writes_nothing() {
    let mut host = redrive_host(7, &[RedriveAnswer::Contended]);
    let outcome = host.fire(redrive_row(7), redrive_context(&host));
    assert_eq!(
        outcome,
        FireOutcome::Exhausted(RedriveExhaustedError {
            execution_id: id(),
            wake_at: WAKE,
            attempts: 8,
        })
    );
    assert_eq!(host.steps(), ["redrive", "exhaust"], "no schedule");
    assert!(host.timers.is_empty());
    assert_eq!(
        host.exhausted,
        [ExhaustedRow::new(
            redrive_row(7),
            Exhaustion {
                attempts: 8,
                at: NOW,
            }
        )],
        "the retired row is recorded with its try"
    );
}

#[test]
fn a_whole_chain_of_contention_is_reported_once() {
    let mut host = redrive_host(0, &[RedriveAnswer::Contended]);
    let mut outcomes = Vec::new();
    // Fire whatever row is in the table, when it is due, until none is.
    while let Some(row) = host.timers.first().cloned() {
        let context =
            FireContext::new(row.wake_at, Draw::new(0.3).expect("valid")).with_redrivers(1);
        outcomes.push(host.fire(row, context));
        assert!(host.timers.len() <= 1, "one row at a time");
    }
    let rescheduled: Vec<u32> = outcomes
        .iter()
        .filter_map(|o| match o {
            FireOutcome::Rescheduled(row) => row.redrive.map(|r| r.attempt),
            _ => None,
        })
        .collect();
    assert_eq!(rescheduled, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(
        outcomes.iter().filter_map(FireOutcome::exhausted).count(),
        1
    );
}

#[test]
fn the_attempt_saturates_instead_of_overflowing() {
    let policy = RedrivePolicy {
        max_attempts: u32::MAX,
        ..RedrivePolicy::default()
    };
    let mut host = redrive_host(u32::MAX, &[RedriveAnswer::Contended]);
    let outcome = host.fire(
        redrive_row(u32::MAX),
        redrive_context(&host).with_policy(policy),
    );
    assert_eq!(outcome.exhausted().map(|e| e.attempts), Some(u32::MAX));
    // One below: the next row is try u32::MAX - 1 + 1, at the capped delay.
    let mut host = redrive_host(u32::MAX - 2, &[RedriveAnswer::Contended]);
    let outcome = host.fire(
        redrive_row(u32::MAX - 2),
        redrive_context(&host).with_policy(policy),
    );
    assert_eq!(
        outcome,
        FireOutcome::Rescheduled(TimerRow::redrive(id(), NOW + 15_000, u32::MAX - 1))
    );
}

#[test]
fn no_storable_time_after_the_row_ends_the_chain() {
    let row = TimerRow::redrive(id(), MAX_TIMER_MS, 0);
    let mut host = Host::new(vec![], &row);
    host.redrivers = vec![RedriveAnswer::Contended];
    let context = FireContext::new(MAX_TIMER_MS, Draw::ZERO).with_redrivers(1);
    let outcome = host.fire(row, context);
    assert_eq!(outcome.exhausted().map(|e| e.attempts), Some(1));
    assert!(host.timers.is_empty());
}

// ---- the backoff map applied ----

#[test]
fn the_map_records_backoffs_and_clears_only_its_own_rows_end() {
    let mut map = WakeBackoff::with_bound(NonZeroUsize::new(4).expect("non-zero"));
    let entry = BackoffEntry {
        wake_at: WAKE,
        attempt: 0,
        next_try_at: NOW + 100,
    };
    assert_eq!(map.apply(&plain(), &FireOutcome::BackedOff(entry)), None);
    assert_eq!(map.get(&id()), Some(entry));
    // NotYet, and another timer's end, leave it.
    let _ = map.apply(&plain(), &FireOutcome::NotYet { next_try_at: 1 });
    let _ = map.apply(&TimerRow::wake(id(), WAKE + 1), &FireOutcome::Fired);
    let _ = map.apply(&redrive_row(0), &FireOutcome::Redriven);
    assert_eq!(map.get(&id()), Some(entry));
    // Its own row's end clears it.
    let _ = map.apply(&plain(), &FireOutcome::Obsolete);
    assert!(map.is_empty());
    let _ = map.apply(&plain(), &FireOutcome::BackedOff(entry));
    let _ = map.apply(&plain(), &FireOutcome::Fired);
    assert!(map.is_empty());
}

// ---- refused input ----

#[test]
fn times_out_of_range_and_rows_not_due_are_refused() {
    let draw = Draw::ZERO;
    assert_eq!(
        FireMachine::new(plain(), FireContext::new(-1, draw)),
        Err(InputError::Time {
            what: "now",
            value: -1
        })
    );
    assert_eq!(
        FireMachine::new(plain(), FireContext::new(MAX_TIMER_MS + 1, draw)),
        Err(InputError::Time {
            what: "now",
            value: MAX_TIMER_MS + 1
        })
    );
    assert_eq!(
        FireMachine::new(TimerRow::wake(id(), -5), FireContext::new(0, draw)),
        Err(InputError::Time {
            what: "wakeAt",
            value: -5
        })
    );
    assert_eq!(
        FireMachine::new(plain(), FireContext::new(WAKE - 1, draw)),
        Err(InputError::NotDue {
            wake_at: WAKE,
            now: WAKE - 1
        })
    );
    assert!(FireMachine::new(plain(), FireContext::new(WAKE, draw)).is_ok());
}

fn at_read() -> FireMachine {
    FireMachine::new(plain(), context()).expect("valid")
}

#[test]
fn a_read_that_is_not_the_whole_log_is_refused() {
    let host = Host::parked(&[timer(WAKE)], &plain());
    let log = host.log();
    let mut machine = at_read();
    let before = machine.clone();
    assert_eq!(
        machine.handle_read(&log[1..]),
        Err(ContractError::Gap {
            expected: 1,
            got: 2
        })
    );
    let other = ExecutionId::new("other").expect("valid");
    let foreign: Vec<Envelope> = log
        .iter()
        .map(|e| Envelope {
            execution_id: other.clone(),
            ..e.clone()
        })
        .collect();
    assert_eq!(
        machine.handle_read(&foreign),
        Err(ContractError::WrongExecution {
            expected: id(),
            got: other
        })
    );
    assert_eq!(machine, before, "unchanged");
    machine.handle_read(&log).expect("the whole log");
    assert!(matches!(
        machine.poll(),
        FirePoll::Act(FireAction::Resume(_))
    ));
}

#[test]
fn an_answer_to_another_action_is_refused() {
    let mut machine = at_read();
    let before = machine.clone();
    assert_eq!(
        machine.handle_redrive(RedriveAnswer::Done),
        Err(ContractError::UnexpectedInput {
            expected: "handle_read",
            got: "handle_redrive"
        })
    );
    assert!(machine.handle_rescheduled().is_err());
    assert!(machine.handle_completed().is_err());
    let contended = ResumeError::Contended(ResumeContendedError {
        execution_id: id(),
        attempts: 3,
    });
    assert!(machine.handle_resumed(Err(&contended)).is_err());
    assert_eq!(machine, before);
    // A finished machine takes nothing.
    let mut done = FireMachine::new(redrive_row(0), context()).expect("valid");
    assert_eq!(done.poll(), FirePoll::Done(FireOutcome::Left));
    assert_eq!(
        done.handle_redrive(RedriveAnswer::Done),
        Err(ContractError::UnexpectedInput {
            expected: "nothing: the fire is over",
            got: "handle_redrive"
        })
    );
}

#[test]
fn a_resume_result_for_another_park_or_execution_or_unfenced_is_refused() {
    let host = Host::parked(&[timer(WAKE)], &plain());
    let mut machine = at_read();
    machine.handle_read(&host.log()).expect("reads");
    let before = machine.clone();
    let refused = |park_seq, execution_id| {
        ResumeError::Refused(ResumeRefusedError {
            execution_id,
            park_seq,
            reason: RefusalReason::NotSuspended,
        })
    };
    assert_eq!(
        machine.handle_resumed(Err(&refused(7, id()))),
        Err(ContractError::WrongPark {
            expected: 2,
            got: 7
        })
    );
    let other = ExecutionId::new("other").expect("valid");
    assert!(matches!(
        machine.handle_resumed(Err(&refused(2, other))),
        Err(ContractError::WrongExecution { .. })
    ));
    let stale = ResumeError::StaleFence(crate::fence::StaleFenceError {
        execution_id: id(),
        presented: None,
        current: 4,
    });
    assert!(matches!(
        machine.handle_resumed(Err(&stale)),
        Err(ContractError::UnexpectedInput { .. })
    ));
    assert_eq!(machine, before, "unchanged");
}

#[test]
fn polling_twice_asks_for_the_same_thing() {
    let mut machine = at_read();
    assert_eq!(machine.poll(), machine.poll());
    let host = Host::parked(&[timer(WAKE)], &plain());
    machine.handle_read(&host.log()).expect("reads");
    assert_eq!(machine.poll(), machine.poll());
}

// ---- the row's wire shape ----

#[test]
fn rows_use_the_wire_names() {
    assert_eq!(
        serde_json::to_value(plain()).expect("serialises"),
        json!({ "executionId": "parent", "wakeAt": WAKE })
    );
    assert_eq!(
        serde_json::to_value(redrive_row(2)).expect("serialises"),
        json!({ "executionId": "parent", "wakeAt": WAKE, "redrive": { "attempt": 2 } })
    );
    let row: TimerRow = serde_json::from_value(
        json!({ "executionId": "parent", "wakeAt": WAKE, "redrive": { "attempt": 2 } }),
    )
    .expect("reads");
    assert_eq!(row, redrive_row(2));
    assert!(serde_json::from_value::<TimerRow>(json!({ "executionId": "", "wakeAt": 1 })).is_err());
    assert!(
        serde_json::from_value::<TimerRow>(
            json!({ "executionId": "e", "wakeAt": 1, "redrive": { "attempt": -1 } })
        )
        .is_err()
    );
}
