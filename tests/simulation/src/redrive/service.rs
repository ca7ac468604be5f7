//! A timer service node: a pump over the core's [`TickMachine`], the same
//! machine the runtime's `TimerService` pumps, one store or timer-table
//! interaction per step. The clock and the draws the machine asks for are
//! answered inline (the world's clock, the seeded generator); every other
//! action is one step:
//!
//! - `Claim` → `claim_due` on the shared timer table;
//! - `ReadLog` → the whole log;
//! - `Resume` → a conditional [`ResumeMachine`] from that log (the
//!   runtime's `resume_from`), one store interaction per step;
//! - `Redrive` → the supervisor's re-driver ([`SuperviseTask`] with no row
//!   on contention), one interaction per step;
//! - `Reschedule`, `Complete`, `Release` → the timer table's.
//!
//! What the pump adds is the world's: the ledger (which fire ran under
//! which lease, how it ended), the trace, and the faults. A crash drops the
//! tick in hand and its claims without releasing them; their rows come back
//! when the lease ends. A restarted node has a new node id and a new
//! machine (an empty backoff map). The controls' faults are the world's
//! too: control (b)'s node claims as of a day ahead (it takes over live
//! leases) and hands the rows not due back at once; control (d)'s timer
//! table step of a reschedule is a schedule, then a complete the next
//! step.

use std::num::NonZeroUsize;

use loomfence_core::{
    Envelope, ResumeMachine,
    redrive::Draw,
    tick::{TickAction, TickConfig, TickEnd, TickEvent, TickMachine, TickPoll},
    timer::{Claim, FireOutcome, MAX_LEASE_MS, NodeId},
};
use rand::RngExt;

use super::actors::{Driven, Env, drive_one, land};
use super::config::{Config, Variant};
use super::error::RedriveSimError;
use super::ledger::{FireEnd, FireId, RowId, RowSource, RunEnd, RunId, RunKind};
use super::supervise::SuperviseTask;

/// What a fire is running for its pending action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Sub {
    /// Nothing yet.
    Idle,
    /// A plain wake's resume.
    Resume {
        /// The machine.
        machine: Box<ResumeMachine>,
        /// Its run.
        run: RunId,
    },
    /// The re-driver.
    Redrive(Box<SuperviseTask>),
}

/// The world's record of the fire in hand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Fire {
    /// Its ledger entry.
    id: FireId,
    /// The parent.
    parent: usize,
    /// The log of the last `ReadLog`.
    log: Vec<Envelope>,
    /// What runs for the pending action.
    sub: Sub,
    /// Control (d) only: the next row is written and the complete is
    /// pending.
    scheduled: bool,
}

/// A claim in hand, with what the ledger needs to judge its lease.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Claimed {
    /// The claim.
    claim: Claim,
    /// Its row instance.
    row: RowId,
    /// When its lease ends by the shared clock.
    lease_until: i64,
    /// How many schedules the row had had when it was claimed.
    schedules: usize,
}

/// One timer service node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Service {
    /// Its index among the services.
    pub index: usize,
    /// How many times it has started (its node id names it).
    pub incarnation: u32,
    /// Its node id for claims.
    pub node: NodeId,
    /// Whether it is running.
    pub up: bool,
    /// When a crashed node starts again.
    pub restart_at: Option<i64>,
    /// When it polls next.
    pub next_poll_at: i64,
    /// Its ticks: the rules, and its backoff of plain wakes.
    tick: TickMachine,
    /// Claims in hand not started yet, for the ledger.
    claims: Vec<Claimed>,
    /// The fire in hand.
    fire: Option<Fire>,
}

impl Service {
    /// Service `index`, started at `now`.
    pub fn new(index: usize, config: &Config, now: i64) -> Result<Self, RedriveSimError> {
        let node = node_id(index, 0)?;
        Ok(Self {
            index,
            incarnation: 0,
            tick: machine(&node, config),
            node,
            up: true,
            restart_at: None,
            next_poll_at: now,
            claims: Vec::new(),
            fire: None,
        })
    }

    /// Whether it has a tick in hand (claims, a fire, releases).
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.tick.is_ticking()
    }

    /// The parent whose resume this node holds an unused token of, if any.
    #[must_use]
    pub fn holding(&self) -> Option<(usize, u64)> {
        let fire = self.fire.as_ref()?;
        let token = match &fire.sub {
            Sub::Idle => None,
            Sub::Resume { machine, .. } => machine.holds_fence(),
            Sub::Redrive(task) => task.holds_fence(),
        }?;
        Some((fire.parent, token))
    }

    /// Crashes the node: the tick, its fire and its claims are dropped
    /// unreleased.
    pub fn crash(&mut self, env: &mut Env<'_>, restart_at: i64) {
        if let Some(fire) = self.fire.take() {
            match fire.sub {
                Sub::Idle => {}
                Sub::Resume { run, .. } => env.ledger.end_run(run, RunEnd::Crashed),
                Sub::Redrive(task) => env.ledger.end_run(task.run, RunEnd::Crashed),
            }
            env.ledger.fire_ended(fire.id, FireEnd::Crashed);
        }
        self.claims.clear();
        self.tick = machine(&self.node, env.config);
        self.up = false;
        self.restart_at = Some(restart_at);
    }

    /// Starts the node again: a new node id, a new machine.
    pub fn restart(&mut self, config: &Config, now: i64) -> Result<(), RedriveSimError> {
        self.incarnation += 1;
        self.node = node_id(self.index, self.incarnation)?;
        self.tick = machine(&self.node, config);
        self.up = true;
        self.restart_at = None;
        self.next_poll_at = now;
        Ok(())
    }

    /// One interaction: the tick's next action (a new tick if none is in
    /// hand), the clock and draws it asks for answered on the way.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        if !self.tick.is_ticking() {
            // One re-driver: the supervisor's.
            self.tick.begin(1)?;
            self.next_poll_at = env.now + env.config.poll_ms;
        }
        loop {
            let action = match self.tick.poll() {
                TickPoll::Act(action) => action,
                _ => return Ok(()),
            };
            let store = !matches!(action, TickAction::Clock { .. });
            self.act(env, action)?;
            self.events(env)?;
            if store {
                return Ok(());
            }
        }
    }

    /// Whether this node ignores leases (control (b): service 0 only).
    fn blind(&self, env: &Env<'_>) -> bool {
        env.config.variant == Variant::LeaseBlind && self.index == 0
    }

    /// Performs one action and feeds the answer back.
    fn act(&mut self, env: &mut Env<'_>, action: TickAction) -> Result<(), RedriveSimError> {
        match action {
            TickAction::Clock { draw } => {
                let draw = if draw {
                    Some(Draw::new(env.rng.random::<f64>())?)
                } else {
                    None
                };
                self.tick.handle_clock(env.now, draw)?;
            }
            TickAction::Claim {
                mut lease,
                limit,
                filter,
            } => {
                // Control (b): the blind node claims as of a day ahead,
                // which takes over every lease live now; rows that are not
                // due yet go straight back.
                if self.blind(env) {
                    lease.now = env.now.saturating_add_unsigned(MAX_LEASE_MS);
                }
                let mut due = Vec::new();
                for claim in env.timers.claim_due(&lease, limit, filter)? {
                    if claim.row.wake_at > env.now {
                        let _ = env.timers.release(&claim)?;
                    } else {
                        due.push(claim);
                    }
                }
                self.claimed(env, &due)?;
                let (service, now, count) = (self.index, env.now, due.len());
                env.note(|| format!("  service {service} polls at {now}: {count} claimed"));
                self.tick.handle_claimed(due, Vec::new())?;
            }
            TickAction::ReadLog { execution_id } => {
                let log = env.store.read_range(&execution_id, 1, None)?;
                self.tick.handle_read(&log)?;
                self.fire_mut()?.log = log;
            }
            TickAction::Resume {
                execution_id,
                request,
            } => self.resume(env, execution_id, request)?,
            TickAction::Redrive { .. } => self.redrive(env)?,
            TickAction::Reschedule { claim, next }
                if env.config.variant == Variant::TwoStepReschedule
                    && !self.fire_mut()?.scheduled =>
            {
                // Control (d): the schedule alone, the complete next step.
                env.timers.schedule(&next)?;
                let fire = self.fire_mut()?;
                fire.scheduled = true;
                let (parent, id) = (fire.parent, fire.id);
                let max = env.config.policy.max_attempts;
                env.ledger
                    .scheduled(&next, parent, RowSource::Fire(id), max);
                let service = self.index;
                env.note(|| format!("  service {service} schedules {next:?} ({claim:?})"));
            }
            TickAction::Reschedule { claim, next } => {
                let completed = if self.fire_mut()?.scheduled {
                    env.timers.complete(&claim)?
                } else {
                    env.timers.reschedule(&claim, &next)?
                };
                let (service, fire) = (self.index, self.fire_mut()?.id);
                env.note(|| {
                    format!(
                        "  service {service} reschedules fire {fire} to {next:?}: {completed:?}"
                    )
                });
                self.tick.handle_rescheduled(completed)?;
            }
            TickAction::Complete { claim } => {
                let completed = env.timers.complete(&claim)?;
                let (service, fire) = (self.index, self.fire_mut()?.id);
                env.note(|| format!("  service {service} completes fire {fire}: {completed:?}"));
                self.tick.handle_completed(completed)?;
            }
            TickAction::Exhaust { claim, exhaustion } => {
                let completed = env.timers.exhaust(&claim, &exhaustion)?;
                let (service, fire) = (self.index, self.fire_mut()?.id);
                env.note(|| format!("  service {service} exhausts fire {fire}: {completed:?}"));
                self.tick.handle_exhausted(completed)?;
            }
            TickAction::Release { claim } => {
                let released = env.timers.release(&claim)?;
                self.tick.handle_released(released)?;
            }
            _ => return Err(RedriveSimError::Ledger("an unknown tick action")),
        }
        Ok(())
    }

    /// Records the claims of a page for the ledger.
    fn claimed(&mut self, env: &mut Env<'_>, claims: &[Claim]) -> Result<(), RedriveSimError> {
        let lease_until = env.now.saturating_add_unsigned(env.config.lease_ms);
        for claim in claims {
            let parent = env.parent_index(&claim.row.execution_id)?;
            let row = env
                .ledger
                .instance(&claim.row, parent)
                .ok_or(RedriveSimError::Ledger(
                    "a claimed row is not in the ledger",
                ))?;
            let schedules = env.ledger.schedules(row);
            self.claims.push(Claimed {
                claim: claim.clone(),
                row,
                lease_until,
                schedules,
            });
        }
        Ok(())
    }

    /// One step of a plain wake's resume.
    fn resume(
        &mut self,
        env: &mut Env<'_>,
        id: loomfence_core::ExecutionId,
        request: loomfence_core::ResumeRequest,
    ) -> Result<(), RedriveSimError> {
        let fire = self.fire_mut()?;
        let (parent, fire_id) = (fire.parent, fire.id);
        let (mut machine, run) = match std::mem::replace(&mut fire.sub, Sub::Idle) {
            Sub::Resume { machine, run } => (machine, run),
            _ => {
                let run = env.ledger.new_run(parent, RunKind::Wake { fire: fire_id });
                env.ledger.fires[fire_id].run = Some(run);
                let machine =
                    ResumeMachine::with_events(id, request, env.config.capability(), &fire.log)?;
                (Box::new(machine), run)
            }
        };
        match drive_one(env, &mut machine, parent, run)? {
            Driven::Pending => self.fire_mut()?.sub = Sub::Resume { machine, run },
            // The wake's resume broke; the fire stops here and the row
            // waits for its lease, as for a store error.
            Driven::Rejected => self.tick.handle_failed()?,
            Driven::Done(result) => {
                match &result {
                    Ok(resumed) => {
                        land(env, parent, run, resumed);
                        env.ledger.counts.wakes_fired += 1;
                    }
                    Err(_) => env.ledger.end_run(run, RunEnd::Nothing),
                }
                self.tick.handle_resumed(result.as_ref())?;
            }
        }
        Ok(())
    }

    /// One step of the re-driver.
    fn redrive(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        let fire = self.fire_mut()?;
        let (parent, fire_id) = (fire.parent, fire.id);
        let mut task = match std::mem::replace(&mut fire.sub, Sub::Idle) {
            Sub::Redrive(task) => task,
            _ => {
                let run = env
                    .ledger
                    .new_run(parent, RunKind::Redriver { fire: fire_id });
                env.ledger.fires[fire_id].run = Some(run);
                Box::new(SuperviseTask::new(parent, run, true))
            }
        };
        task.step(env)?;
        match task.outcome() {
            None => self.fire_mut()?.sub = Sub::Redrive(task),
            Some(end) => {
                if end.resumed() {
                    env.ledger.counts.redriven += 1;
                }
                self.tick.handle_redrive(end.answer())?;
            }
        }
        Ok(())
    }

    /// Records what the machine tells in the ledger.
    fn events(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        while let Some(event) = self.tick.poll_event() {
            match event {
                TickEvent::Started(claim) => self.started(env, &claim)?,
                TickEvent::Ended { claim, end } => self.ended(env, &claim, end)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Records the start of a fire.
    fn started(&mut self, env: &mut Env<'_>, claim: &Claim) -> Result<(), RedriveSimError> {
        let at = self
            .claims
            .iter()
            .position(|claimed| claimed.claim == *claim)
            .ok_or(RedriveSimError::Ledger("a fire of a claim not in hand"))?;
        let Claimed {
            row,
            lease_until,
            schedules,
            ..
        } = self.claims.remove(at);
        let parent = env.parent_index(&claim.row.execution_id)?;
        let id = env
            .ledger
            .fire_started(row, self.index, lease_until, schedules, env.now);
        if claim.row.is_redrive() {
            env.ledger.counts.redrives_fired += 1;
        }
        let (service, fired) = (self.index, claim.row.clone());
        env.note(|| format!("  service {service} fires {fired:?} (fire {id})"));
        self.fire = Some(Fire {
            id,
            parent,
            log: Vec::new(),
            sub: Sub::Idle,
            scheduled: false,
        });
        Ok(())
    }

    /// Records the end of a fire (or of a claim that lapsed unfired).
    fn ended(
        &mut self,
        env: &mut Env<'_>,
        claim: &Claim,
        end: TickEnd,
    ) -> Result<(), RedriveSimError> {
        if end == TickEnd::Lapsed {
            self.claims.retain(|claimed| claimed.claim != *claim);
            return Ok(());
        }
        let fire = self
            .fire
            .take()
            .ok_or(RedriveSimError::Ledger("the end of a fire not in hand"))?;
        let (service, id) = (self.index, fire.id);
        match end {
            TickEnd::Outcome(outcome) => {
                if matches!(outcome, FireOutcome::BackedOff(_)) {
                    env.ledger.counts.backed_off += 1;
                }
                if !outcome.retired() {
                    env.ledger.fire_ended(id, FireEnd::Released);
                    env.note(|| format!("  service {service} leaves fire {id}: {outcome:?}"));
                    return Ok(());
                }
                if let FireOutcome::Rescheduled(next) = &outcome
                    && !fire.scheduled
                {
                    let max = env.config.policy.max_attempts;
                    env.ledger
                        .scheduled(next, fire.parent, RowSource::Fire(id), max);
                }
                env.ledger.fire_ended(id, FireEnd::Retired);
                if let Some(exhausted) = outcome.exhausted() {
                    env.ledger.report(id, exhausted.attempts);
                    env.note(|| format!("  EXHAUSTED {exhausted}"));
                }
            }
            TickEnd::Void => env.ledger.fire_ended(id, FireEnd::Void),
            _ => env.ledger.fire_ended(id, FireEnd::Crashed),
        }
        Ok(())
    }

    /// The fire in hand.
    fn fire_mut(&mut self) -> Result<&mut Fire, RedriveSimError> {
        self.fire.as_mut().ok_or(RedriveSimError::Ledger(
            "a fire action with no fire in hand",
        ))
    }
}

/// A fresh machine for `node` under the world's config.
fn machine(node: &NodeId, config: &Config) -> TickMachine {
    let tick = TickConfig::new(node.clone(), config.lease_ms, config.batch, config.policy);
    TickMachine::new(tick, bound_of(config.backoff_bound))
}

/// The node id of `index`'s `incarnation`.
fn node_id(index: usize, incarnation: u32) -> Result<NodeId, RedriveSimError> {
    Ok(NodeId::new(format!("timer-{index}.{incarnation}"))?)
}

/// A backoff bound of at least 1.
fn bound_of(bound: usize) -> NonZeroUsize {
    NonZeroUsize::new(bound).unwrap_or(NonZeroUsize::MIN)
}
