//! The tick's rules, one test each, over the in-memory event store and a
//! timer table, with a host that answers as told.

use serde_json::json;

use super::*;
use crate::capability::Capability;
use crate::drive;
use crate::event::NewEvent;
use crate::fire::{FireOutcome, TimerRow};
use crate::input::ExecutionId;
use crate::kind::KernelKind;
use crate::memory::MemoryStore;
use crate::park::{Wait, park_payload};
use crate::redrive_policy::RedrivePolicy;
use crate::resume_machine::{ResumeContendedError, ResumeMachine};
use crate::timer_table::NodeId;
use crate::timer_table::TimerTable;
use crate::unreadable::UnreadableField;

/// A host: the stores, the clock readings to hand out in turn (the last
/// repeats), and how it answers.
struct Host {
    store: MemoryStore,
    timers: TimerTable,
    clocks: Vec<i64>,
    /// Resumes answer contended without touching the store.
    contended: bool,
    /// Completes and reschedules answer `NotHeld` without writing.
    not_held: bool,
    /// The IO of this stage fails.
    fail: Option<TickStage>,
    /// Stop once this many fires have started.
    stop_after: Option<usize>,
    /// What the re-drivers answer.
    redrive: RedriveAnswer,
    unreadable: Vec<UnreadableRow>,
    actions: Vec<TickAction>,
    events: Vec<TickEvent>,
}

impl Host {
    fn new(clocks: &[i64]) -> Self {
        Self {
            store: MemoryStore::new(),
            timers: TimerTable::new(),
            clocks: clocks.to_vec(),
            contended: false,
            not_held: false,
            fail: None,
            stop_after: None,
            redrive: RedriveAnswer::Done,
            unreadable: Vec::new(),
            actions: Vec::new(),
            events: Vec::new(),
        }
    }

    /// An execution parked on a timer at `wake_at`, and its row.
    fn parked(&mut self, name: &str, wake_at: i64) -> ExecutionId {
        let id = ExecutionId::new(name).expect("valid id");
        self.store
            .append_many(
                &id,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 2)
                        .with_payload(park_payload(&[Wait::Timer { wake_at }])),
                ],
            )
            .expect("appended");
        self.timers
            .schedule(&TimerRow::wake(id.clone(), wake_at))
            .expect("scheduled");
        id
    }

    fn clock(&mut self) -> i64 {
        if self.clocks.len() > 1 {
            self.clocks.remove(0)
        } else {
            self.clocks[0]
        }
    }

    fn fails(&self, stage: TickStage) -> bool {
        self.fail == Some(stage)
    }

    /// Runs one tick with `redrivers`, to its report.
    fn tick(&mut self, tick: &mut TickMachine, redrivers: usize) -> TickReport {
        tick.begin(redrivers).expect("idle");
        loop {
            let action = match tick.poll() {
                TickPoll::Done(report) => return report,
                TickPoll::Act(action) => action,
            };
            self.actions.push(action.clone());
            self.answer(tick, action);
            while let Some(event) = tick.poll_event() {
                self.events.push(event);
            }
            let started = self
                .events
                .iter()
                .filter(|event| matches!(event, TickEvent::Started(_)))
                .count();
            if self.stop_after.is_some_and(|after| started >= after) {
                tick.stop();
            }
        }
    }

    fn answer(&mut self, tick: &mut TickMachine, action: TickAction) {
        let failed = match &action {
            TickAction::Claim { .. } => self.fails(TickStage::Claim),
            TickAction::ReadLog { .. } => self.fails(TickStage::ReadLog),
            TickAction::Complete { .. } => self.fails(TickStage::Complete),
            TickAction::Release { .. } => self.fails(TickStage::Release),
            _ => false,
        };
        if failed {
            tick.handle_failed().expect("a failure fits");
            return;
        }
        let answered = match action {
            TickAction::Clock { draw } => {
                let now = self.clock();
                tick.handle_clock(now, draw.then(|| Draw::new(0.5).expect("draw")))
            }
            TickAction::Claim {
                lease,
                limit,
                filter,
            } => {
                let claims = self.timers.claim_due(&lease, limit, filter).expect("claim");
                tick.handle_claimed(claims, self.unreadable.clone())
            }
            TickAction::ReadLog { execution_id } => {
                let log = self.store.read_range(&execution_id, 1, None).expect("read");
                tick.handle_read(&log)
            }
            TickAction::Resume { execution_id, .. } if self.contended => {
                let contended = ResumeError::Contended(ResumeContendedError {
                    execution_id,
                    attempts: 1,
                });
                tick.handle_resumed(Err(&contended))
            }
            TickAction::Resume {
                execution_id,
                request,
            } => {
                let mut resume = ResumeMachine::new(execution_id, request, Capability::Conditional);
                let result = drive::run(&mut self.store, &mut resume).expect("resume");
                tick.handle_resumed(result.as_ref())
            }
            TickAction::Redrive { .. } => tick.handle_redrive(self.redrive),
            TickAction::Reschedule { claim, next } => {
                let done = if self.not_held {
                    Completed::NotHeld
                } else {
                    self.timers.reschedule(&claim, &next).expect("reschedule")
                };
                tick.handle_rescheduled(done)
            }
            TickAction::Complete { claim } => {
                let done = if self.not_held {
                    Completed::NotHeld
                } else {
                    self.timers.complete(&claim).expect("complete")
                };
                tick.handle_completed(done)
            }
            TickAction::Exhaust { claim, exhaustion } => {
                let done = if self.not_held {
                    Completed::NotHeld
                } else {
                    self.timers.exhaust(&claim, &exhaustion).expect("exhaust")
                };
                tick.handle_exhausted(done)
            }
            TickAction::Release { claim } => {
                tick.handle_released(self.timers.release(&claim).expect("release"))
            }
        };
        answered.expect("the answer fits");
    }

    fn claims(&self) -> usize {
        let claims = |action: &&TickAction| matches!(action, TickAction::Claim { .. });
        self.actions.iter().filter(claims).count()
    }

    fn ends(&self) -> Vec<TickEnd> {
        self.events
            .iter()
            .filter_map(|event| match event {
                TickEvent::Ended { end, .. } => Some(end.clone()),
                _ => None,
            })
            .collect()
    }
}

fn node(lease_ms: u64, batch: usize) -> TickMachine {
    let holder = NodeId::new("node-a").expect("node");
    let config = TickConfig::new(holder, lease_ms, batch, RedrivePolicy::default());
    TickMachine::new(config, NonZeroUsize::MIN.saturating_add(15))
}

/// Whether another node can claim anything due at `now`.
fn free_rows(timers: &mut TimerTable, now: i64) -> usize {
    let lease = Lease {
        holder: NodeId::new("node-b").expect("node"),
        now,
        duration_ms: 1,
    };
    timers
        .claim_due(&lease, 100, DueFilter::default())
        .expect("claim")
        .len()
}

#[test]
fn a_due_wake_is_claimed_fired_and_retired() {
    let mut host = Host::new(&[5_010]);
    let id = host.parked("a", 5_000);
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!((report.claimed, report.fired, report.released), (1, 1, 0));
    assert!(host.timers.is_empty());
    let log = host.store.read_range(&id, 1, None).expect("read");
    assert_eq!(
        log[2].payload["answer"],
        json!({ "wait": 0, "timer": { "wakeAt": 5000 } })
    );
    assert_eq!(tick.poll(), TickPoll::Done(report));
}

#[test]
fn a_node_with_no_redriver_asks_for_no_redrive_rows() {
    let mut host = Host::new(&[5_010]);
    let id = ExecutionId::new("r").expect("id");
    host.timers
        .schedule(&TimerRow::redrive(id, 5_000, 0))
        .expect("scheduled");
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!(report.claimed, 0);
    let TickAction::Claim { filter, .. } = &host.actions[1] else {
        panic!("{:?}", host.actions);
    };
    assert!(!filter.redrive);
    let report = host.tick(&mut tick, 1);
    assert_eq!((report.claimed, report.redriven), (1, 1));
}

/// The JS service claimed once per tick: a full page of backed-off rows
/// hid the due row behind them until the backoff ran out.
#[test]
fn a_full_page_of_backed_off_rows_does_not_hide_the_due_row_behind_it() {
    let mut host = Host::new(&[5_010]);
    let (a, b) = (host.parked("a", 5_000), host.parked("b", 5_001));
    let mut tick = node(30_000, 2);
    host.contended = true;
    let first = host.tick(&mut tick, 0);
    assert_eq!((first.backed_off, first.released), (2, 2), "{first:?}");
    assert!(tick.backoff().get(&a).is_some() && tick.backoff().get(&b).is_some());

    host.contended = false;
    let c = host.parked("c", 5_002);
    let second = host.tick(&mut tick, 0);
    assert_eq!(
        (
            second.claimed,
            second.not_yet,
            second.fired,
            second.released
        ),
        (3, 2, 1, 2),
        "{second:?}"
    );
    assert_eq!(host.store.read_range(&c, 1, None).expect("read").len(), 3);
    assert_eq!(host.timers.len(), 2, "the backed-off rows stay, released");
    assert_eq!(free_rows(&mut host.timers, 5_010), 2);
}

#[test]
fn a_tick_stops_claiming_once_it_has_handled_a_batch() {
    let mut host = Host::new(&[5_010]);
    for n in 0..5 {
        host.parked(&format!("e{n}"), 5_000 + n);
    }
    let mut tick = node(30_000, 2);
    let report = host.tick(&mut tick, 0);
    assert_eq!((report.claimed, report.fired), (2, 2), "{report:?}");
    assert_eq!(host.claims(), 1);
}

/// The JS service fired at a fresh reading of the clock: one that stepped
/// back 1 ms after the claim made the fire machine refuse the row as not
/// due.
#[test]
fn a_clock_that_steps_back_after_the_claim_still_fires_at_the_claims_now() {
    let mut host = Host::new(&[5_000, 4_999]);
    let id = host.parked("a", 5_000);
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!((report.fired, report.errors), (1, 0), "{report:?}");
    let resume = host.actions.iter().find_map(|action| match action {
        TickAction::Resume { request, .. } => Some(request.at),
        _ => None,
    });
    assert_eq!(resume, Some(5_000));
    assert_eq!(host.store.read_range(&id, 1, None).expect("read").len(), 3);
}

#[test]
fn a_claim_whose_lease_has_ended_is_released_not_fired() {
    let mut host = Host::new(&[5_010, 5_020]);
    let id = host.parked("a", 5_000);
    let mut tick = node(10, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!(
        (report.claimed, report.lapsed, report.fired, report.released),
        (1, 1, 0, 1),
        "{report:?}"
    );
    assert_eq!(host.ends(), vec![TickEnd::Lapsed]);
    assert_eq!(host.store.read_range(&id, 1, None).expect("read").len(), 2);
    assert_eq!(host.timers.len(), 1);
}

#[test]
fn a_not_held_complete_voids_the_decision() {
    let mut host = Host::new(&[5_010]);
    let id = host.parked("a", 5_000);
    let mut tick = node(30_000, 10);
    host.contended = true;
    let _ = host.tick(&mut tick, 0);
    let entry = tick.backoff().get(&id).expect("backed off");

    // Later, past the backoff, the fire would retire the row, but the
    // complete answers NotHeld: nothing is applied or counted as fired.
    host.contended = false;
    host.not_held = true;
    host.clocks = vec![entry.next_try_at];
    host.events.clear();
    let report = host.tick(&mut tick, 0);
    assert_eq!((report.not_held, report.fired, report.released), (1, 0, 0));
    assert_eq!(host.ends(), vec![TickEnd::Void]);
    assert_eq!(tick.backoff().get(&id), Some(entry), "not applied");
}

#[test]
fn a_not_held_reschedule_voids_an_exhaustion_too() {
    let mut host = Host::new(&[5_010]);
    let id = ExecutionId::new("r").expect("id");
    host.timers
        .schedule(&TimerRow::redrive(id, 5_000, 0))
        .expect("scheduled");
    host.redrive = RedriveAnswer::Contended;
    host.not_held = true;
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 1);
    assert_eq!((report.not_held, report.rescheduled), (1, 0), "{report:?}");
}

#[test]
fn the_backoff_is_kept_from_each_outcome() {
    let mut host = Host::new(&[5_010]);
    let id = host.parked("a", 5_000);
    let mut tick = node(30_000, 10);
    host.contended = true;
    let _ = host.tick(&mut tick, 0);
    let entry = tick.backoff().get(&id).expect("backed off");
    assert_eq!(entry.attempt, 0);

    // Before the next try: not yet, nothing read.
    host.events.clear();
    let report = host.tick(&mut tick, 0);
    assert_eq!(report.not_yet, 1);

    // At the next try, contended again: the count goes on.
    host.clocks = vec![entry.next_try_at];
    let _ = host.tick(&mut tick, 0);
    let again = tick.backoff().get(&id).expect("backed off");
    assert_eq!(again.attempt, 1);

    // Fired: the entry is cleared.
    host.contended = false;
    host.clocks = vec![again.next_try_at];
    let report = host.tick(&mut tick, 0);
    assert_eq!(report.fired, 1);
    assert!(tick.backoff().is_empty());
}

#[test]
fn an_unreadable_row_is_reported_once_per_node() {
    let mut host = Host::new(&[5_010]);
    host.unreadable = vec![UnreadableRow {
        execution_id: "bad".to_owned(),
        wake_at: Some(4_000),
        field: UnreadableField::Redrive,
        detail: "is not a re-drive flag".to_owned(),
    }];
    let mut tick = node(30_000, 10);
    let first = host.tick(&mut tick, 0);
    let second = host.tick(&mut tick, 0);
    assert_eq!((first.unreadable, second.unreadable), (1, 0));
    let reported = host
        .events
        .iter()
        .filter(|event| matches!(event, TickEvent::Unreadable(_)))
        .count();
    assert_eq!(reported, 1);
    assert_eq!(tick.unreadable().len(), 1);
}

#[test]
fn a_failed_fire_leaves_its_claim_to_expire() {
    let mut host = Host::new(&[5_010]);
    host.parked("a", 5_000);
    host.parked("b", 5_001);
    host.fail = Some(TickStage::ReadLog);
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!(
        (report.claimed, report.errors, report.released),
        (2, 2, 0),
        "{report:?}"
    );
    assert_eq!(host.ends(), vec![TickEnd::Failed(TickStage::ReadLog); 2]);
    assert_eq!(free_rows(&mut host.timers, 5_010), 0, "still held");
    assert_eq!(free_rows(&mut host.timers, 35_010), 2, "after the lease");
}

#[test]
fn a_failed_claim_ends_the_tick() {
    let mut host = Host::new(&[5_010]);
    host.parked("a", 5_000);
    host.fail = Some(TickStage::Claim);
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!((report.claimed, report.errors), (0, 1));
    assert!(!tick.is_ticking());
}

#[test]
fn a_clock_that_cannot_be_read_for_the_claim_ends_the_tick() {
    let mut tick = node(30_000, 10);
    tick.begin(0).expect("idle");
    assert_eq!(
        tick.poll(),
        TickPoll::Act(TickAction::Clock { draw: false })
    );
    tick.handle_failed()
        .expect("a clock that failed is a failure");
    let TickPoll::Done(report) = tick.poll() else {
        panic!("the tick ends");
    };
    assert_eq!((report.claimed, report.errors), (0, 1));
    assert!(!tick.is_ticking());
    tick.begin(0).expect("the next tick starts");
}

#[test]
fn a_failed_release_is_counted_and_the_others_go_on() {
    let mut host = Host::new(&[5_010]);
    host.parked("a", 5_000);
    host.parked("b", 5_001);
    host.contended = true;
    host.fail = Some(TickStage::Release);
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 0);
    assert_eq!(
        (report.backed_off, report.errors, report.released),
        (2, 2, 0)
    );
}

#[test]
fn a_throwing_redriver_is_an_answer_and_an_error() {
    let mut host = Host::new(&[5_010]);
    let id = ExecutionId::new("r").expect("id");
    host.timers
        .schedule(&TimerRow::redrive(id, 5_000, 0))
        .expect("scheduled");
    host.redrive = RedriveAnswer::Failed;
    let mut tick = node(30_000, 10);
    let report = host.tick(&mut tick, 1);
    assert_eq!((report.rescheduled, report.errors), (1, 1), "{report:?}");
    assert!(matches!(
        host.ends().as_slice(),
        [TickEnd::Outcome(FireOutcome::Rescheduled(_))]
    ));
}

#[test]
fn a_stop_finishes_the_fire_in_hand_and_releases_the_rest() {
    let mut host = Host::new(&[5_010]);
    for n in 0..3 {
        host.parked(&format!("e{n}"), 5_000 + n);
    }
    host.stop_after = Some(1);
    let mut tick = node(30_000, 3);
    let report = host.tick(&mut tick, 0);
    assert_eq!(
        (report.claimed, report.fired, report.released),
        (3, 1, 2),
        "{report:?}"
    );
    assert_eq!(host.claims(), 1);
    assert_eq!(free_rows(&mut host.timers, 5_010), 2);
}

#[test]
fn inputs_that_do_not_fit_are_refused_and_change_nothing() {
    let mut tick = node(30_000, 10);
    assert!(matches!(
        tick.handle_clock(1, None),
        Err(ContractError::TickOutOfTurn { .. })
    ));
    assert!(tick.handle_failed().is_err());
    tick.begin(0).expect("idle");
    assert_eq!(tick.begin(0), Err(ContractError::TickBusy));
    let before = tick.clone();
    assert!(tick.handle_read(&[]).is_err());
    assert!(tick.handle_completed(Completed::Done).is_err());
    assert!(tick.handle_released(Completed::Done).is_err());
    assert_eq!(tick, before);
}

#[test]
fn a_fire_needs_a_draw() {
    let mut host = Host::new(&[5_010]);
    host.parked("a", 5_000);
    let mut tick = node(30_000, 10);
    tick.begin(0).expect("idle");
    tick.handle_clock(5_010, None).expect("claim clock");
    let TickPoll::Act(TickAction::Claim {
        lease,
        limit,
        filter,
    }) = tick.poll()
    else {
        panic!("a claim");
    };
    let claims = host.timers.claim_due(&lease, limit, filter).expect("claim");
    tick.handle_claimed(claims, Vec::new()).expect("claimed");
    assert_eq!(tick.poll(), TickPoll::Act(TickAction::Clock { draw: true }));
    assert_eq!(tick.handle_clock(5_010, None), Err(ContractError::NoDraw));
}
