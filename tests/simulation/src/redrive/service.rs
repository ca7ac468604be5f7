//! A timer service node: claims due rows under a lease and fires each
//! through the real [`FireMachine`], one store or timer-table interaction
//! per step, as the runtime's `TimerService::poll_once` does:
//!
//! - **poll**: `claim_due(Lease { holder, now, lease }, batch, DueFilter {
//!   redrive: true })` (this node has the supervisor's re-driver
//!   registered), then the next poll one interval later;
//! - **fire** each claimed row in turn with `FireContext::new(now, draw)
//!   .with_policy(policy).with_backoff(backoff.get(id)).with_redrivers(1)`:
//!   `ReadLog` reads the whole log; `Resume` runs a conditional
//!   [`ResumeMachine`] from that log (the runtime's `resume_from`) and feeds
//!   its result back; `Redrive` runs the supervisor's re-driver
//!   ([`SuperviseTask`] with no row on contention); `Reschedule` retires
//!   the row and upserts the next one in one step under the claim (control
//!   (d): a schedule, then a complete the next step); `Complete` retires
//!   the row under the claim; `NotHeld` voids the decision (an exhaustion
//!   is reported only after `Done`);
//! - an outcome that leaves the row (not yet, backed off, no re-driver)
//!   releases the claim; every outcome is applied to the node's
//!   [`WakeBackoff`].
//!
//! A crash drops the fire in hand and the claims without releasing them;
//! their rows come back when the lease ends. A restarted node has a new
//! node id and an empty backoff map.

use std::collections::VecDeque;
use std::num::NonZeroUsize;

use loomfence_core::{
    Claim, Completed, Draw, DueFilter, Envelope, FireAction, FireContext, FireMachine, FireOutcome,
    FirePoll, Lease, MAX_LEASE_MS, NodeId, ResumeMachine, WakeBackoff,
};
use rand::RngExt;

use super::actors::{Driven, Env, drive_one, land};
use super::config::Variant;
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

/// A row being fired.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Fire {
    /// Its ledger entry.
    id: FireId,
    /// The parent.
    parent: usize,
    /// The claim it fires under.
    claim: Claim,
    /// The decision.
    machine: FireMachine,
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
    /// Its in-process backoff of plain wakes.
    pub backoff: WakeBackoff,
    /// When it polls next.
    pub next_poll_at: i64,
    /// Claimed rows not fired yet.
    claims: VecDeque<Claimed>,
    /// The row being fired.
    fire: Option<Fire>,
}

impl Service {
    /// Service `index`, started at `now`.
    pub fn new(index: usize, bound: usize, now: i64) -> Result<Self, RedriveSimError> {
        Ok(Self {
            index,
            incarnation: 0,
            node: node_id(index, 0)?,
            up: true,
            restart_at: None,
            backoff: WakeBackoff::with_bound(bound_of(bound)),
            next_poll_at: now,
            claims: VecDeque::new(),
            fire: None,
        })
    }

    /// Whether it has a row in hand (claimed or being fired).
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.fire.is_some() || !self.claims.is_empty()
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

    /// Crashes the node: the fire and the claims are dropped unreleased.
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
        self.up = false;
        self.restart_at = Some(restart_at);
    }

    /// Starts the node again: a new node id, an empty backoff map.
    pub fn restart(&mut self, bound: usize, now: i64) -> Result<(), RedriveSimError> {
        self.incarnation += 1;
        self.node = node_id(self.index, self.incarnation)?;
        self.backoff = WakeBackoff::with_bound(bound_of(bound));
        self.up = true;
        self.restart_at = None;
        self.next_poll_at = now;
        Ok(())
    }

    /// One interaction: a poll, or the next action of the fire in hand.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        if self.fire.is_none() {
            match self.claims.pop_front() {
                Some(claimed) => self.start(env, claimed)?,
                None => return self.poll(env),
            }
        }
        let Some(mut fire) = self.fire.take() else {
            return Ok(());
        };
        let done = self.act(env, &mut fire)?;
        if !done {
            self.fire = Some(fire);
        }
        Ok(())
    }

    /// Whether this node ignores leases (control (b): service 0 only).
    fn blind(&self, env: &Env<'_>) -> bool {
        env.config.variant == Variant::LeaseBlind && self.index == 0
    }

    /// Claims due rows.
    fn poll(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        let lease_ms = env.config.lease_ms;
        // Control (b): the blind node claims as of a day ahead, which takes
        // over every lease live now (a node ignoring leases, or whose clock
        // runs far ahead); rows that are not due yet go straight back. Its
        // own lease still ends `lease_ms` from now by the shared clock.
        let claim_now = if self.blind(env) {
            env.now.saturating_add_unsigned(MAX_LEASE_MS)
        } else {
            env.now
        };
        let lease = Lease {
            holder: self.node.clone(),
            now: claim_now,
            duration_ms: lease_ms,
        };
        let claimed = env
            .timers
            .claim_due(&lease, env.config.batch, DueFilter::default())?;
        let lease_until = env.now.saturating_add_unsigned(lease_ms);
        let mut due = VecDeque::new();
        for claim in claimed {
            if claim.row.wake_at > env.now {
                let _ = env.timers.release(&claim)?;
                continue;
            }
            let parent = env.parent_index(&claim.row.execution_id)?;
            let row = env
                .ledger
                .instance(&claim.row, parent)
                .ok_or(RedriveSimError::Ledger(
                    "a claimed row is not in the ledger",
                ))?;
            let schedules = env.ledger.schedules(row);
            due.push_back(Claimed {
                claim,
                row,
                lease_until,
                schedules,
            });
        }
        let (service, now, count) = (self.index, env.now, due.len());
        env.note(|| format!("  service {service} polls at {now}: {count} claimed"));
        self.claims = due;
        self.next_poll_at = env.now + env.config.poll_ms;
        Ok(())
    }

    /// Starts firing a claimed row.
    fn start(&mut self, env: &mut Env<'_>, claimed: Claimed) -> Result<(), RedriveSimError> {
        let Claimed {
            claim,
            row,
            lease_until,
            schedules,
        } = claimed;
        let parent = env.parent_index(&claim.row.execution_id)?;
        let draw = Draw::new(env.rng.random::<f64>())?;
        let context = FireContext::new(env.now, draw)
            .with_policy(env.config.policy)
            .with_backoff(self.backoff.get(&claim.row.execution_id))
            .with_redrivers(1);
        let machine = FireMachine::new(claim.row.clone(), context)?;
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
            claim,
            machine,
            log: Vec::new(),
            sub: Sub::Idle,
            scheduled: false,
        });
        Ok(())
    }

    /// The fire's next action; `true` when the fire is over.
    fn act(&mut self, env: &mut Env<'_>, fire: &mut Fire) -> Result<bool, RedriveSimError> {
        let action = match fire.machine.poll() {
            FirePoll::Done(outcome) => {
                // An outcome that leaves the row: hand the claim back.
                self.apply(env, fire, &outcome);
                let _ = env.timers.release(&fire.claim)?;
                env.ledger.fire_ended(fire.id, FireEnd::Released);
                let (service, id) = (self.index, fire.id);
                env.note(|| format!("  service {service} leaves fire {id}: {outcome:?}"));
                return Ok(true);
            }
            FirePoll::Act(action) => action,
            _ => return Err(RedriveSimError::Ledger("an unknown fire poll")),
        };
        let id = fire.claim.row.execution_id.clone();
        match action {
            FireAction::ReadLog => {
                let log = env.store.read_range(&id, 1, None)?;
                fire.machine.handle_read(&log)?;
                fire.log = log;
            }
            FireAction::Resume(request) => {
                let (mut machine, run) = match std::mem::replace(&mut fire.sub, Sub::Idle) {
                    Sub::Resume { machine, run } => (machine, run),
                    _ => {
                        let run = env
                            .ledger
                            .new_run(fire.parent, RunKind::Wake { fire: fire.id });
                        env.ledger.fires[fire.id].run = Some(run);
                        let machine = ResumeMachine::with_events(
                            id,
                            request,
                            env.config.capability(),
                            &fire.log,
                        )?;
                        (Box::new(machine), run)
                    }
                };
                match drive_one(env, &mut machine, fire.parent, run)? {
                    Driven::Pending => fire.sub = Sub::Resume { machine, run },
                    Driven::Rejected => {
                        // The wake's resume broke; the fire stops here and
                        // the row waits for its lease, as for a store error.
                        env.ledger.fire_ended(fire.id, FireEnd::Crashed);
                        return Ok(true);
                    }
                    Driven::Done(result) => {
                        match &result {
                            Ok(resumed) => {
                                land(env, fire.parent, run, resumed);
                                env.ledger.counts.wakes_fired += 1;
                            }
                            Err(_) => env.ledger.end_run(run, RunEnd::Nothing),
                        }
                        fire.machine.handle_resumed(result.as_ref())?;
                    }
                }
            }
            FireAction::Redrive { .. } => {
                let mut task = match std::mem::replace(&mut fire.sub, Sub::Idle) {
                    Sub::Redrive(task) => task,
                    _ => {
                        let run = env
                            .ledger
                            .new_run(fire.parent, RunKind::Redriver { fire: fire.id });
                        env.ledger.fires[fire.id].run = Some(run);
                        Box::new(SuperviseTask::new(fire.parent, run, true))
                    }
                };
                task.step(env)?;
                match task.outcome() {
                    None => fire.sub = Sub::Redrive(task),
                    Some(end) => {
                        if end.resumed() {
                            env.ledger.counts.redriven += 1;
                        }
                        fire.machine.handle_redrive(end.answer())?;
                    }
                }
            }
            FireAction::Reschedule(row)
                if env.config.variant == Variant::TwoStepReschedule && !fire.scheduled =>
            {
                // Control (d): the schedule alone, the complete next step.
                env.timers.schedule(&row)?;
                let max = env.config.policy.max_attempts;
                env.ledger
                    .scheduled(&row, fire.parent, RowSource::Fire(fire.id), max);
                let service = self.index;
                env.note(|| format!("  service {service} schedules {row:?}"));
                fire.scheduled = true;
            }
            FireAction::Reschedule(row) => {
                let completed = if fire.scheduled {
                    env.timers.complete(&fire.claim)?
                } else {
                    env.timers.reschedule(&fire.claim, &row)?
                };
                let (service, fire_id) = (self.index, fire.id);
                env.note(|| {
                    format!(
                        "  service {service} reschedules fire {fire_id} to {row:?}: {completed:?}"
                    )
                });
                match completed {
                    Completed::Done => {
                        if !fire.scheduled {
                            let max = env.config.policy.max_attempts;
                            env.ledger
                                .scheduled(&row, fire.parent, RowSource::Fire(fire.id), max);
                        }
                        fire.machine.handle_rescheduled()?;
                        let FirePoll::Done(outcome) = fire.machine.poll() else {
                            return Err(RedriveSimError::Ledger("a rescheduled fire is not done"));
                        };
                        env.ledger.fire_ended(fire.id, FireEnd::Retired);
                        self.apply(env, fire, &outcome);
                    }
                    Completed::NotHeld => env.ledger.fire_ended(fire.id, FireEnd::Void),
                }
                return Ok(true);
            }
            FireAction::Complete(_) => {
                let completed = env.timers.complete(&fire.claim)?;
                let (service, fire_id) = (self.index, fire.id);
                env.note(|| format!("  service {service} completes fire {fire_id}: {completed:?}"));
                match completed {
                    Completed::Done => {
                        fire.machine.handle_completed()?;
                        let FirePoll::Done(outcome) = fire.machine.poll() else {
                            return Err(RedriveSimError::Ledger("a completed fire is not done"));
                        };
                        env.ledger.fire_ended(fire.id, FireEnd::Retired);
                        self.apply(env, fire, &outcome);
                        if let Some(exhausted) = outcome.exhausted() {
                            env.ledger.report(fire.id, exhausted.attempts);
                            env.note(|| format!("  EXHAUSTED {exhausted}"));
                        }
                    }
                    Completed::NotHeld => env.ledger.fire_ended(fire.id, FireEnd::Void),
                }
                return Ok(true);
            }
            _ => return Err(RedriveSimError::Ledger("an unknown fire action")),
        }
        Ok(false)
    }

    /// Applies a final outcome to the backoff map.
    fn apply(&mut self, env: &mut Env<'_>, fire: &Fire, outcome: &FireOutcome) {
        if matches!(outcome, FireOutcome::BackedOff(_)) {
            env.ledger.counts.backed_off += 1;
        }
        let _ = self.backoff.apply(&fire.claim.row, outcome);
    }
}

/// The node id of `index`'s `incarnation`.
fn node_id(index: usize, incarnation: u32) -> Result<NodeId, RedriveSimError> {
    Ok(NodeId::new(format!("timer-{index}.{incarnation}"))?)
}

/// A backoff bound of at least 1.
fn bound_of(bound: usize) -> NonZeroUsize {
    NonZeroUsize::new(bound).unwrap_or(NonZeroUsize::MIN)
}
