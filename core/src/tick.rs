//! The timer service's tick as a sans-IO state machine: which rows a node
//! claims, which it fires and when, which claims it hands back, and what
//! it reports. Every host (the async runtime, the WebAssembly package, the
//! simulation) is a pump over it.
//!
//! You need it when you host a timer service; the row-level rules it
//! drives are in [`timer`](crate::timer).
//!
//! A [`TickMachine`] lives as long as its node and holds what the node
//! remembers between ticks: its [`WakeBackoff`] and its
//! [`UnreadableReports`]. [`begin`](TickMachine::begin) starts a tick;
//! [`poll`](TickMachine::poll) names the next [`TickAction`] until it says
//! [`TickPoll::Done`] with the [`TickReport`]; the host performs each
//! action and feeds the answer to the matching `handle_*` method, or calls
//! [`handle_failed`](TickMachine::handle_failed) when the IO failed (it
//! reports its own error). After each answer the host drains
//! [`poll_event`](TickMachine::poll_event) for what to report. Time and
//! randomness come in as values: the machine asks for them with
//! [`TickAction::Clock`] just where it needs them (before each claim, and
//! a draw before each fire), so the host's clock is read exactly where the
//! rules read it and a draw is taken only for a fire.
//!
//! Why one machine for the node's life rather than a node state beside a
//! per-tick machine: the node state is read and written at every fire
//! (the backoff entry in, the outcome back) and at every claim (the
//! unreadable rows), so a separate state would put a lock or a hand-over
//! into every pump; one value has none, and binds to JavaScript as one
//! object. The price is one tick at a time per node, which the loop of a
//! timer service is anyway ([`ContractError::TickBusy`] otherwise).
//!
//! # The rules
//!
//! 1. **Claim** up to `batch` due rows under a [`Lease`] of `lease_ms` for
//!    this node at the clock's time, with [`DueFilter`] `{ redrive:
//!    redrivers > 0 }`: a node with no re-driver does not even claim
//!    re-drive rows. Rows the store could not read come beside the
//!    claims; each is reported once per node ([`TickEvent::Unreadable`],
//!    counted in [`TickReport::unreadable`]).
//! 2. **Claim again while the page came back full** and fewer than `batch`
//!    claims were handled (fired, void, lapsed or failed; the rows left do
//!    not count): the rows the tick still holds are skipped by its own next
//!    claim, so a page of rows this node backs off never hides the due rows
//!    behind it.
//! 3. **Fire** each claim in turn through a [`FireMachine`] given the time,
//!    one draw, the policy, this node's backoff entry and the number of
//!    re-drivers; its actions come out as this machine's. The fire's time
//!    is `max(clock, the claim's lease now)`: a clock that steps back after
//!    the claim does not make a claimed row "not due".
//! 4. **A claim whose lease has ended is not fired** (the row may be
//!    another node's by now): it is counted [`lapsed`](TickReport::lapsed)
//!    and released.
//! 5. **A complete, reschedule or exhaust answered [`Completed::NotHeld`]
//!    voids the decision**: counted in [`TickReport::not_held`], not applied to the
//!    backoff, not reported, so an exhaustion is reported once per chain.
//! 6. **Each final outcome is applied** to the node's [`WakeBackoff`]
//!    ([`WakeBackoff::apply`]), counted, and told ([`TickEvent::Ended`]).
//! 7. **A failed fire leaves its claim to expire**: the fire machine is
//!    dropped, the claim neither completed nor released; the next claimer
//!    decides again from scratch, and the lease spaces the retries out. A
//!    re-driver that throws is not a failure but the answer
//!    [`RedriveAnswer::Failed`] (counted in [`TickReport::errors`]).
//! 8. **The rows held but not retired are released at the end of the
//!    tick** (not yet, backed off, left, lapsed), so the tick's own further
//!    claims skip them and other nodes may take them at once.
//! 9. **Stop** ([`TickMachine::stop`]): the fire in hand finishes, the
//!    claims not fired are released, no claim follows.
//!
//! # Why
//!
//! - **A left row's claim is released, at the end of the tick.** A left
//!   row is due and will be fired again; the only question is who may fire
//!   it, and when. Released, the row is free at once: this node claims it
//!   again on its next tick but makes no read and no acquire before its
//!   backoff entry's `next_try_at` (the fire answers `NotYet` without
//!   touching the event store). Another node may fire it meanwhile; its own
//!   backoff holds it back in the same way, and a node with a re-driver
//!   gets a re-drive row at once. Kept until the lease ends instead, every
//!   retry would wait for the lease whatever the schedule said, and no
//!   other node could take the row meanwhile. The price: a row held back
//!   by the backoff is claimed and released once per tick until its next
//!   try (bounded by the backoff's bound). The release waits for the end
//!   of the tick so that the tick's own further claims skip the row.
//! - **A failed fire leaves its claim to expire.** Releasing it would
//!   retry a failing store on every tick; the lease spaces the retries out.
//!   A failed reschedule wrote nothing or all, so the row is never lost.
//! - **`NotHeld` voids the decision.** The row was scheduled again
//!   meanwhile (a re-park at the same time) or taken over after the lease:
//!   it is someone else's, and a reschedule wrote no next row, so the
//!   chain does not fork. Its outcome is not applied and not told, so an
//!   exhaustion is reported only by the fire whose retire answered done.
//! - **A lapsed claim is released rather than left**: its row may be
//!   another node's, whose claim the release cannot touch (it answers
//!   `NotHeld`); if nobody took it, it is free again at once.
//! - **The time never runs backwards within a tick**: a fire's time is at
//!   least its claim's, so a clock that steps back does not make a claimed
//!   row "not due".
//!
//! # Example: one tick over the in-memory stores
//!
//! ```
//! use std::num::NonZeroUsize;
//! use loomfence_core::{
//!     Action, Capability, ConditionalAppend, ExecutionId, KernelKind, MemoryStore, NewEvent, Poll,
//!     ResumeMachine, park::{Wait, park_payload}, redrive::{Draw, RedrivePolicy},
//!     tick::{TickAction, TickConfig, TickMachine, TickPoll},
//!     timer::{NodeId, TimerRow, TimerTable},
//! };
//!
//! let id = ExecutionId::new("order-7")?;
//! let mut store = MemoryStore::new();
//! store.append_many(&id, vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001)
//!         .with_payload(park_payload(&[Wait::Timer { wake_at: 5_000 }])),
//! ])?;
//! let mut timers = TimerTable::new();
//! timers.schedule(&TimerRow::wake(id.clone(), 5_000))?;
//!
//! let config = TickConfig::new(NodeId::new("node-1")?, 30_000, 100, RedrivePolicy::default());
//! let mut tick = TickMachine::new(config, NonZeroUsize::MIN);
//! tick.begin(0)?; // no re-driver registered
//! let (clock, draw) = (5_010, Draw::new(0.5)?); // the host's clock and RNG
//! let report = loop {
//!     let action = match tick.poll() {
//!         TickPoll::Done(report) => break report,
//!         TickPoll::Act(action) => action,
//!         other => unimplemented!("{other:?}"),
//!     };
//!     match action {
//!         TickAction::Clock { draw: wanted } => tick.handle_clock(clock, wanted.then_some(draw))?,
//!         TickAction::Claim { lease, limit, filter } => {
//!             tick.handle_claimed(timers.claim_due(&lease, limit, filter)?, Vec::new())?
//!         }
//!         TickAction::ReadLog { execution_id } => {
//!             tick.handle_read(&store.read_range(&execution_id, 1, None)?)?
//!         }
//!         TickAction::Resume { execution_id, request } => {
//!             // The resume machine's own loop (see the crate docs), cut down
//!             // to the actions the in-memory store needs here.
//!             let mut resume = ResumeMachine::new(execution_id.clone(), request, Capability::Conditional);
//!             let result = loop {
//!                 match resume.poll() {
//!                     Poll::Done(result) => break result,
//!                     Poll::Act(Action::ReadFrom { from_seq }) => {
//!                         resume.handle_read(store.read_range(&execution_id, from_seq, None)?)?
//!                     }
//!                     Poll::Act(Action::AcquireFenceIf(expect)) => resume
//!                         .handle_acquire_if(store.acquire_fence_if(&execution_id, expect)?)?,
//!                     Poll::Act(Action::AppendIfParked { park_seq, events }) => {
//!                         match store.append_if_parked(&execution_id, park_seq, events)? {
//!                             ConditionalAppend::Appended(written) => resume.handle_appended(written)?,
//!                             ConditionalAppend::ParkAnswered => resume.handle_park_answered()?,
//!                         }
//!                     }
//!                     other => unimplemented!("{other:?}"),
//!                 }
//!             };
//!             tick.handle_resumed(result.as_ref())?
//!         }
//!         TickAction::Complete { claim } => tick.handle_completed(timers.complete(&claim)?)?,
//!         TickAction::Exhaust { claim, exhaustion } => {
//!             tick.handle_exhausted(timers.exhaust(&claim, &exhaustion)?)?
//!         }
//!         TickAction::Release { claim } => tick.handle_released(timers.release(&claim)?)?,
//!         // Re-drivers and reschedules are not needed here.
//!         other => unimplemented!("{other:?}"),
//!     }
//!     while let Some(event) = tick.poll_event() {
//!         // Log, count, call back.
//!         let _ = event;
//!     }
//! };
//! assert_eq!((report.claimed, report.fired, report.errors), (1, 1, 0));
//! assert!(timers.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod report;

use std::collections::VecDeque;
use std::num::NonZeroUsize;

use crate::contract::ContractError;
use crate::event::Envelope;
use crate::fire::{FireAction, FireContext, FireMachine, FirePoll, RedriveAnswer};
use crate::redrive_policy::Draw;
use crate::resume_machine::{ResumeError, Resumed};
use crate::timer_table::{Claim, Completed, DueFilter, Lease};
use crate::unreadable::{UnreadableReports, UnreadableRow};
use crate::wake_backoff::WakeBackoff;

pub use config::TickConfig;
pub use report::{TickAction, TickEnd, TickEvent, TickPoll, TickReport, TickStage};

/// What the machine waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// No tick running.
    Idle,
    /// The clock, for the next claim.
    ClaimClock,
    /// The answer to a claim.
    Claim(Lease),
    /// The clock and a draw, for the next fire.
    FireClock,
    /// A fire in hand.
    Fire(Box<Firing>),
    /// The answer to the release of `release`'s front.
    Release,
}

/// A fire in hand: its claim and its machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Firing {
    /// The claim fired under.
    claim: Claim,
    /// The decision.
    machine: FireMachine,
}

/// A timer service node's ticks, as a value: `Clone + Eq + Hash`, so a
/// simulation can snapshot it between any two steps. The rules are the
/// module's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TickMachine {
    /// How it runs.
    config: TickConfig,
    /// This node's backoff of contended plain wakes.
    backoff: WakeBackoff,
    /// The unreadable rows this node has reported.
    unreadable: UnreadableReports,
    /// The tick's re-drivers.
    redrivers: usize,
    /// Whether a stop was asked for.
    stopping: bool,
    /// The lease time of the last claim: no fire of its rows runs earlier.
    claimed_at: i64,
    /// Whether the last claim came back full.
    full: bool,
    /// Claims handled this tick (every claim not left).
    handled: usize,
    /// Claims of the last page not fired yet.
    pending: VecDeque<Claim>,
    /// Claims to hand back at the end.
    release: VecDeque<Claim>,
    /// What the tick did so far.
    report: TickReport,
    /// What the host has not read yet.
    events: VecDeque<TickEvent>,
    /// The pending step.
    step: Step,
}

impl TickMachine {
    /// A node with `config`, an empty backoff of at most `backoff_bound`
    /// executions, nothing reported yet, no tick running.
    #[must_use]
    pub fn new(config: TickConfig, backoff_bound: NonZeroUsize) -> Self {
        Self {
            config,
            backoff: WakeBackoff::with_bound(backoff_bound),
            unreadable: UnreadableReports::new(),
            redrivers: 0,
            stopping: false,
            claimed_at: 0,
            full: false,
            handled: 0,
            pending: VecDeque::new(),
            release: VecDeque::new(),
            report: TickReport::default(),
            events: VecDeque::new(),
            step: Step::Idle,
        }
    }

    /// How it runs.
    #[must_use]
    pub fn config(&self) -> &TickConfig {
        &self.config
    }

    /// This node's backoff of contended plain wakes.
    #[must_use]
    pub fn backoff(&self) -> &WakeBackoff {
        &self.backoff
    }

    /// The unreadable rows this node has reported.
    #[must_use]
    pub fn unreadable(&self) -> &UnreadableReports {
        &self.unreadable
    }

    /// Whether a tick is running.
    #[must_use]
    pub fn is_ticking(&self) -> bool {
        self.step != Step::Idle
    }

    /// The claim of the fire in hand, if any.
    #[must_use]
    pub fn firing(&self) -> Option<&Claim> {
        match &self.step {
            Step::Fire(firing) => Some(&firing.claim),
            _ => None,
        }
    }

    /// Starts a tick with `redrivers` re-drivers registered (they are
    /// numbered from 0 in [`TickAction::Redrive`]).
    pub fn begin(&mut self, redrivers: usize) -> Result<(), ContractError> {
        if self.is_ticking() {
            return Err(ContractError::TickBusy);
        }
        self.redrivers = redrivers;
        self.stopping = false;
        self.full = false;
        self.handled = 0;
        self.report = TickReport::default();
        self.step = Step::ClaimClock;
        Ok(())
    }

    /// Asks the tick to stop: the fire in hand finishes, the claims not
    /// fired are released, no claim follows. Idempotent.
    pub fn stop(&mut self) {
        self.stopping = true;
        if matches!(self.step, Step::ClaimClock | Step::FireClock) {
            self.next();
        }
    }

    /// What to do next, or the report of the tick. Asking twice without
    /// an answer gives the same action.
    pub fn poll(&self) -> TickPoll {
        let action = match &self.step {
            Step::Idle => return TickPoll::Done(self.report),
            Step::ClaimClock => TickAction::Clock { draw: false },
            Step::FireClock => TickAction::Clock { draw: true },
            Step::Claim(lease) => TickAction::Claim {
                lease: lease.clone(),
                limit: self.config.batch,
                filter: DueFilter {
                    redrive: self.redrivers > 0,
                },
            },
            Step::Release => match self.release.front() {
                Some(claim) => TickAction::Release {
                    claim: claim.clone(),
                },
                None => return TickPoll::Done(self.report),
            },
            Step::Fire(firing) => fire_action(firing),
        };
        TickPoll::Act(action)
    }

    /// The next thing to report, oldest first.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<TickEvent> {
        self.events.pop_front()
    }

    /// Feeds the clock (and, for a fire, the draw) a
    /// [`TickAction::Clock`] asked for.
    pub fn handle_clock(&mut self, now: i64, draw: Option<Draw>) -> Result<(), ContractError> {
        match self.step {
            Step::ClaimClock => {
                self.step = Step::Claim(Lease {
                    holder: self.config.holder.clone(),
                    now,
                    duration_ms: self.config.lease_ms,
                });
                Ok(())
            }
            Step::FireClock => {
                let draw = draw.ok_or(ContractError::NoDraw)?;
                self.start(now.max(self.claimed_at), draw);
                Ok(())
            }
            _ => Err(self.unexpected("handle_clock")),
        }
    }

    /// Feeds the answer to a [`TickAction::Claim`]: the claims, and the due
    /// rows the store could not read.
    pub fn handle_claimed(
        &mut self,
        claims: Vec<Claim>,
        unreadable: Vec<UnreadableRow>,
    ) -> Result<(), ContractError> {
        let Step::Claim(lease) = &self.step else {
            return Err(self.unexpected("handle_claimed"));
        };
        self.claimed_at = lease.now;
        for row in unreadable {
            if self.unreadable.first_report(&row) {
                self.report.unreadable += 1;
                self.events.push_back(TickEvent::Unreadable(row));
            }
        }
        self.report.claimed += claims.len();
        self.full = claims.len() >= self.config.batch;
        self.pending = claims.into();
        self.next();
        Ok(())
    }

    /// Feeds the answer to a [`TickAction::ReadLog`]: the whole log.
    pub fn handle_read(&mut self, events: &[Envelope]) -> Result<(), ContractError> {
        self.fire_input("handle_read", |fire| fire.handle_read(events))
    }

    /// Feeds the result of a [`TickAction::Resume`].
    pub fn handle_resumed(
        &mut self,
        result: Result<&Resumed, &ResumeError>,
    ) -> Result<(), ContractError> {
        self.fire_input("handle_resumed", |fire| fire.handle_resumed(result))
    }

    /// Feeds a re-driver's answer to a [`TickAction::Redrive`];
    /// [`RedriveAnswer::Failed`] (it threw) is also counted as an error.
    pub fn handle_redrive(&mut self, answer: RedriveAnswer) -> Result<(), ContractError> {
        self.fire_input("handle_redrive", |fire| fire.handle_redrive(answer))?;
        if answer == RedriveAnswer::Failed {
            self.report.errors += 1;
        }
        Ok(())
    }

    /// Feeds the timer store's answer to a [`TickAction::Reschedule`].
    pub fn handle_rescheduled(&mut self, completed: Completed) -> Result<(), ContractError> {
        self.retire(
            "handle_rescheduled",
            completed,
            FireMachine::handle_rescheduled,
        )
    }

    /// Feeds the timer store's answer to a [`TickAction::Complete`].
    pub fn handle_completed(&mut self, completed: Completed) -> Result<(), ContractError> {
        self.retire("handle_completed", completed, FireMachine::handle_completed)
    }

    /// Feeds the timer store's answer to a [`TickAction::Exhaust`].
    pub fn handle_exhausted(&mut self, completed: Completed) -> Result<(), ContractError> {
        self.retire("handle_exhausted", completed, FireMachine::handle_exhausted)
    }

    /// Feeds the timer store's answer to a [`TickAction::Release`].
    pub fn handle_released(&mut self, completed: Completed) -> Result<(), ContractError> {
        if self.step != Step::Release || self.release.is_empty() {
            return Err(self.unexpected("handle_released"));
        }
        self.release.pop_front();
        if completed == Completed::Done {
            self.report.released += 1;
        }
        self.next();
        Ok(())
    }

    /// The pending action's IO failed (or its answer was refused): the host
    /// has reported its error. A fire is dropped and its claim left to
    /// expire; a failed claim (or the clock read for it) ends the claiming;
    /// a failed release is skipped. Counted in [`TickReport::errors`].
    pub fn handle_failed(&mut self) -> Result<(), ContractError> {
        if matches!(self.step, Step::Idle) {
            return Err(self.unexpected("handle_failed"));
        }
        match std::mem::replace(&mut self.step, Step::Idle) {
            Step::Idle => {}
            Step::ClaimClock | Step::Claim(_) => {
                // A clock the host could not read for the claim, or the
                // claim itself: no further claim; the claims held are still
                // released.
                self.report.errors += 1;
                self.full = false;
            }
            Step::FireClock => {
                self.report.errors += 1;
                self.handled += 1;
                if let Some(claim) = self.pending.pop_front() {
                    self.ended(claim, TickEnd::Failed(TickStage::Start));
                }
            }
            Step::Fire(firing) => {
                self.report.errors += 1;
                self.handled += 1;
                let stage = stage_of(&firing);
                self.ended(firing.claim, TickEnd::Failed(stage));
            }
            Step::Release => {
                self.report.errors += 1;
                self.release.pop_front();
                self.step = Step::Release;
            }
        }
        self.next();
        Ok(())
    }

    /// Starts the fire of the next pending claim at `now`.
    fn start(&mut self, now: i64, draw: Draw) {
        let Some(claim) = self.pending.pop_front() else {
            self.next();
            return;
        };
        if now >= claim.expires_at {
            self.report.lapsed += 1;
            self.handled += 1;
            self.release.push_back(claim.clone());
            self.ended(claim, TickEnd::Lapsed);
            self.next();
            return;
        }
        let id = &claim.row.execution_id;
        let context = FireContext::new(now, draw)
            .with_policy(self.config.policy)
            .with_backoff(self.backoff.get(id))
            .with_redrivers(self.redrivers);
        match FireMachine::new(claim.row.clone(), context) {
            Ok(machine) => {
                self.events.push_back(TickEvent::Started(claim.clone()));
                self.step = Step::Fire(Box::new(Firing { claim, machine }));
                self.settle();
            }
            Err(_) => {
                // A row the fire machine refuses (out of range): a
                // failure, left to expire like any other.
                self.report.errors += 1;
                self.handled += 1;
                self.ended(claim, TickEnd::Failed(TickStage::Start));
                self.next();
            }
        }
    }

    /// Feeds an answer to the fire in hand, then settles it.
    fn fire_input(
        &mut self,
        got: &'static str,
        input: impl FnOnce(&mut FireMachine) -> Result<(), ContractError>,
    ) -> Result<(), ContractError> {
        let Step::Fire(firing) = &mut self.step else {
            return Err(self.unexpected(got));
        };
        let mut machine = firing.machine.clone();
        input(&mut machine)?;
        firing.machine = machine;
        self.settle();
        Ok(())
    }

    /// Feeds a complete's or reschedule's answer: `NotHeld` voids the fire.
    fn retire(
        &mut self,
        got: &'static str,
        completed: Completed,
        done: fn(&mut FireMachine) -> Result<(), ContractError>,
    ) -> Result<(), ContractError> {
        match (&self.step, completed) {
            (Step::Fire(firing), Completed::NotHeld) if is_retire(firing, got) => {
                let Step::Fire(firing) = std::mem::replace(&mut self.step, Step::Idle) else {
                    return Err(self.unexpected(got));
                };
                self.report.not_held += 1;
                self.handled += 1;
                self.ended(firing.claim, TickEnd::Void);
                self.next();
                Ok(())
            }
            _ => self.fire_input(got, done),
        }
    }

    /// Ends the fire in hand if its machine is done.
    fn settle(&mut self) {
        let Step::Fire(firing) = &self.step else {
            return;
        };
        let FirePoll::Done(outcome) = firing.machine.poll() else {
            return;
        };
        let Step::Fire(firing) = std::mem::replace(&mut self.step, Step::Idle) else {
            return;
        };
        let _ = self.backoff.apply(&firing.claim.row, &outcome);
        self.report.count(&outcome);
        if outcome.retired() {
            self.handled += 1;
        } else {
            self.release.push_back(firing.claim.clone());
        }
        self.ended(firing.claim, TickEnd::Outcome(outcome));
        self.next();
    }

    /// Tells the end of a fire.
    fn ended(&mut self, claim: Claim, end: TickEnd) {
        self.events.push_back(TickEvent::Ended { claim, end });
    }

    /// The step after a claim, a fire or a release.
    fn next(&mut self) {
        if self.stopping {
            self.release.extend(self.pending.drain(..));
        }
        self.step = if self.step == Step::Release || self.stopping {
            release_or_idle(&self.release)
        } else if !self.pending.is_empty() {
            Step::FireClock
        } else if self.full && self.handled < self.config.batch {
            Step::ClaimClock
        } else {
            release_or_idle(&self.release)
        };
    }

    /// The error for an input that does not answer the pending action.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match &self.step {
            Step::Idle => "begin: no tick is running",
            Step::ClaimClock | Step::FireClock => "handle_clock",
            Step::Claim(_) => "handle_claimed",
            Step::Release => "handle_released",
            Step::Fire(firing) => match stage_of(firing) {
                TickStage::ReadLog => "handle_read",
                TickStage::Resume => "handle_resumed",
                TickStage::Redrive => "handle_redrive",
                TickStage::Reschedule => "handle_rescheduled",
                TickStage::Exhaust => "handle_exhausted",
                _ => "handle_completed",
            },
        };
        ContractError::TickOutOfTurn { expected, got }
    }
}

/// The release step while claims are left to release, else idle.
fn release_or_idle(release: &VecDeque<Claim>) -> Step {
    if release.is_empty() {
        Step::Idle
    } else {
        Step::Release
    }
}

/// The fire machine's pending action, as the tick's.
fn fire_action(firing: &Firing) -> TickAction {
    let execution_id = firing.claim.row.execution_id.clone();
    let claim = firing.claim.clone();
    match firing.machine.poll() {
        FirePoll::Act(FireAction::ReadLog) => TickAction::ReadLog { execution_id },
        FirePoll::Act(FireAction::Resume(request)) => TickAction::Resume {
            execution_id,
            request,
        },
        FirePoll::Act(FireAction::Redrive { redriver, row }) => {
            TickAction::Redrive { redriver, row }
        }
        FirePoll::Act(FireAction::Reschedule(next)) => TickAction::Reschedule { claim, next },
        FirePoll::Act(FireAction::Exhaust(exhaustion)) => TickAction::Exhaust { claim, exhaustion },
        // A done machine is settled at once, so only a complete is left.
        FirePoll::Act(FireAction::Complete(_)) | FirePoll::Done(_) => {
            TickAction::Complete { claim }
        }
    }
}

/// The stage the fire in hand is at.
fn stage_of(firing: &Firing) -> TickStage {
    match fire_action(firing) {
        TickAction::ReadLog { .. } => TickStage::ReadLog,
        TickAction::Resume { .. } => TickStage::Resume,
        TickAction::Redrive { .. } => TickStage::Redrive,
        TickAction::Reschedule { .. } => TickStage::Reschedule,
        TickAction::Exhaust { .. } => TickStage::Exhaust,
        _ => TickStage::Complete,
    }
}

/// Whether the fire in hand waits for the retire `got` answers.
fn is_retire(firing: &Firing, got: &'static str) -> bool {
    matches!(
        (stage_of(firing), got),
        (TickStage::Reschedule, "handle_rescheduled")
            | (TickStage::Complete, "handle_completed")
            | (TickStage::Exhaust, "handle_exhausted")
    )
}

#[cfg(test)]
mod tests;
