//! The participants of the inbox world besides the deliveries' pump: a
//! sender, the timer wake of a TIMER wait, a dead acquirer, the
//! execution's body, and the inbox re-driver.

use loomfence_core::{
    Capability, ExecutionId, ExecutionView, KernelKind, NewEvent, ParkExpectation, Poll,
    ResumeMachine, drive,
    inbox::{DeliverMachine, DeliverOptions},
    park::{Wait, park_payload},
    redrive::{Draw, RedrivePolicy},
    supervise::OnContention,
    timer::{
        Claim, DueFilter, FireAction, FireContext, FireMachine, FireOutcome, FirePoll, Lease,
        NodeId, TimerRow,
    },
};

use super::error::InboxSimError;
use super::pump::{CrashPoint, Deliverer, Env};

/// A sender: one notify, pumped step by step; it may crash at a
/// [`CrashPoint`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sender {
    /// Its label in schedules.
    pub label: char,
    /// Its delivery.
    pub delivery: Deliverer,
    /// Whether the search may crash it.
    pub may_crash: bool,
    /// Where it crashed, if it did.
    pub crashed: Option<CrashPoint>,
}

impl Sender {
    /// Whether it can step.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.crashed.is_none() && !self.delivery.finished()
    }

    /// Where a crash now would catch it, if it may crash there.
    #[must_use]
    pub fn crash_point(&self) -> Option<CrashPoint> {
        if self.may_crash && self.is_enabled() {
            self.delivery.crash_point()
        } else {
            None
        }
    }
}

/// The timer service firing the plain wake of the park's TIMER wait: the
/// core's [`FireMachine`], its resume the real [`ResumeMachine`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Wake {
    /// The fire.
    fire: FireMachine,
    /// Its resume in flight.
    resume: Option<Box<ResumeMachine>>,
    /// How it ended.
    pub outcome: Option<FireOutcome>,
}

impl Wake {
    /// The fire of `execution_id`'s TIMER wait at `wake_at`.
    pub fn new(execution_id: ExecutionId, wake_at: i64) -> Result<Self, InboxSimError> {
        let context = FireContext::new(wake_at, Draw::new(0.5)?);
        Ok(Self {
            fire: FireMachine::new(TimerRow::wake(execution_id, wake_at), context)?,
            resume: None,
            outcome: None,
        })
    }

    /// Whether it can step.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.outcome.is_none()
    }

    /// One store interaction.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), InboxSimError> {
        let id = self.fire.row().execution_id.clone();
        loop {
            match self.fire.poll() {
                FirePoll::Done(outcome) => {
                    self.outcome = Some(outcome);
                    return Ok(());
                }
                FirePoll::Act(FireAction::ReadLog) => {
                    let log = env.store.read_range(&id, 1, None)?;
                    self.fire.handle_read(&log)?;
                    return Ok(());
                }
                FirePoll::Act(FireAction::Resume(request)) => {
                    let mut resume = self.resume.take().unwrap_or_else(|| {
                        Box::new(ResumeMachine::new(
                            id.clone(),
                            request,
                            Capability::Conditional,
                        ))
                    });
                    let _ = drive::step(env.store, &mut resume)?;
                    match resume.poll() {
                        Poll::Done(result) => self.fire.handle_resumed(result.as_ref())?,
                        _ => self.resume = Some(resume),
                    }
                    return Ok(());
                }
                // The row is the service's own, not the table's: retiring
                // it touches nothing shared.
                FirePoll::Act(FireAction::Complete(_)) => self.fire.handle_completed()?,
                _ => return Err(InboxSimError::UnknownAction("a wake's action")),
            }
        }
    }
}

/// A node that acquires the open park's token once and dies without
/// appending.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dead {
    /// The token it took, once it acted (`Some(None)`: no park was open,
    /// or it was stale).
    pub took: Option<Option<u64>>,
}

impl Dead {
    /// Its one step: `acquire_fence_if` on the current token and the open
    /// park, if one is open.
    pub fn step(&mut self, env: &mut Env<'_>, id: &ExecutionId) -> Result<(), InboxSimError> {
        let log = env.store.read_range(id, 1, None)?;
        let took = match ExecutionView::fold(&log).open_park {
            Some(park) => {
                let expect = ParkExpectation {
                    fence: env.store.current_fence(id),
                    park_seq: park.sequence,
                };
                match env.store.acquire_fence_if(id, expect)? {
                    loomfence_core::AcquireOutcome::Acquired { fence } => Some(fence),
                    _ => None,
                }
            }
            None => None,
        };
        self.took = Some(took);
        Ok(())
    }
}

/// The execution's body: after each resume it parks again on the channel
/// (under the token its resume took) and runs the park-time check, until
/// it has parked `parks` times.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Body {
    /// Parks written so far (the setup's included).
    pub parks_written: u32,
    /// Parks it writes in all.
    pub parks: u32,
    /// What each park waits on.
    pub waits: Vec<Wait>,
    /// The park-time check in flight.
    pub check: Option<Deliverer>,
    /// The options of its checks.
    pub options: DeliverOptions,
    /// Whether it parks through [`DeliverMachine::park`] (with its intent
    /// row), or appends the park itself and runs a bare check (a control).
    pub intent: bool,
    /// Whether a park of it was refused as stale (a breach).
    pub fenced_out: bool,
}

impl Body {
    /// Whether it can step, given the log.
    #[must_use]
    pub fn is_enabled(&self, view: &ExecutionView) -> bool {
        match &self.check {
            Some(check) => !check.finished(),
            None => {
                !self.fenced_out
                    && self.parks_written < self.parks
                    && view.open_park.is_none()
                    && !view.status.is_terminal()
            }
        }
    }

    /// One store interaction: the next park, or a step of its check.
    pub fn step(&mut self, env: &mut Env<'_>, id: &ExecutionId) -> Result<(), InboxSimError> {
        if let Some(check) = self.check.as_mut() {
            check.step(env)?;
            if check.stale_park() {
                self.fenced_out = true;
                self.check = None;
            } else if check.outcome().is_some() {
                self.check = None;
            }
            return Ok(());
        }
        let log = env.store.read_range(id, 1, None)?;
        let token = log
            .iter()
            .rev()
            .find(|event| event.kind == KernelKind::ExecutionResumed.as_str())
            .and_then(|event| event.fence().ok().flatten());
        let mut park = NewEvent::kernel(KernelKind::ExecutionSuspended, env.now)
            .with_payload(park_payload(&self.waits));
        if let Some(token) = token {
            park = park.with_fence(token);
        }
        if self.intent {
            // The park's intent row and the park itself, in this one step
            // (the body is not crashed; a rival between the two is no
            // different from one before the row).
            let mut check = Deliverer::new(DeliverMachine::park(id.clone(), park, self.options)?);
            while !check.parked() && !check.finished() && !check.stale_park() {
                check.step(env)?;
            }
            if check.stale_park() {
                self.fenced_out = true;
            } else {
                self.parks_written += 1;
                self.check = Some(check);
            }
            return Ok(());
        }
        match env.store.append(id, park) {
            Ok(_) => {
                self.parks_written += 1;
                self.check = Some(Deliverer::new(DeliverMachine::check(
                    id.clone(),
                    self.options,
                )));
            }
            Err(loomfence_core::AppendError::Stale(_)) => self.fenced_out = true,
            Err(other) => return Err(other.into()),
        }
        Ok(())
    }
}

/// The inbox re-driver: claims the earliest timer row (the clock jumps to
/// it), fires it with the core's [`FireMachine`] as its one re-driver, and
/// answers each `Redrive` with a [`DeliverMachine::check`] pumped step by
/// step (writing no row of its own: the fire carries the chain on).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Redriver {
    /// The chain's schedule.
    pub policy: RedrivePolicy,
    /// The fire in hand, with its claim.
    fire: Option<(Claim, FireMachine)>,
    /// The check answering its `Redrive`.
    check: Option<Deliverer>,
    /// Fires run.
    pub fires: u32,
    /// Chains that reported exhaustion.
    pub exhausted: u32,
}

impl Redriver {
    /// A re-driver with `policy`.
    #[must_use]
    pub fn new(policy: RedrivePolicy) -> Self {
        Self {
            policy,
            fire: None,
            check: None,
            fires: 0,
            exhausted: 0,
        }
    }

    /// Whether it can step: a fire in hand, or a row in the table.
    #[must_use]
    pub fn is_enabled(&self, rows: bool) -> bool {
        self.rejected().is_none() && (self.fire.is_some() || rows)
    }

    /// What a machine of it rejected, if one did.
    #[must_use]
    pub fn rejected(&self) -> Option<&loomfence_core::ContractError> {
        self.check.as_ref().and_then(Deliverer::rejected)
    }

    /// One interaction: a claim, a step of the check, or the fire's
    /// complete or reschedule.
    pub fn step(&mut self, env: &mut Env<'_>, now: &mut i64) -> Result<(), InboxSimError> {
        let Some((claim, mut fire)) = self.fire.take() else {
            let Some(row) = env.timers.rows().into_iter().next() else {
                return Ok(());
            };
            *now = (*now).max(row.wake_at);
            let lease = Lease {
                holder: NodeId::new("redriver")?,
                now: *now,
                duration_ms: 60_000,
            };
            let mut claims = env.timers.claim_due(&lease, 1, DueFilter::default())?;
            let claim = claims.pop().ok_or(InboxSimError::UnknownAction(
                "a due row that cannot be claimed",
            ))?;
            let context = FireContext::new(*now, Draw::new(0.5)?)
                .with_policy(self.policy)
                .with_redrivers(1);
            let fire = FireMachine::new(claim.row.clone(), context)?;
            self.fires += 1;
            self.fire = Some((claim, fire));
            return Ok(());
        };
        env.now = *now;
        match fire.poll() {
            FirePoll::Done(outcome) => {
                if outcome.exhausted().is_some() {
                    self.exhausted += 1;
                }
                Ok(())
            }
            FirePoll::Act(FireAction::Redrive { row, .. }) => {
                let check = self.check.get_or_insert_with(|| {
                    Deliverer::new(DeliverMachine::check(
                        row.execution_id.clone(),
                        DeliverOptions {
                            on_contention: OnContention::Answer,
                            ..DeliverOptions::default()
                        },
                    ))
                });
                check.step(env)?;
                if check.rejected().is_some() {
                    // Stopped on a finding: the fire stays in hand,
                    // as a fire whose host failed would.
                    self.fire = Some((claim, fire));
                    return Ok(());
                }
                if let Some(outcome) = check.outcome() {
                    fire.handle_redrive(outcome.redrive_answer())?;
                    self.check = None;
                }
                self.fire = Some((claim, fire));
                Ok(())
            }
            FirePoll::Act(FireAction::Complete(_)) => {
                let _ = env.timers.complete(&claim)?;
                fire.handle_completed()?;
                self.finish(&fire);
                Ok(())
            }
            FirePoll::Act(FireAction::Reschedule(next)) => {
                let _ = env.timers.reschedule(&claim, &next)?;
                fire.handle_rescheduled()?;
                self.finish(&fire);
                Ok(())
            }
            _ => Err(InboxSimError::UnknownAction("a re-drive fire's action")),
        }
    }

    /// Records how a fire ended.
    fn finish(&mut self, fire: &FireMachine) {
        if let FirePoll::Done(outcome) = fire.poll()
            && outcome.exhausted().is_some()
        {
            self.exhausted += 1;
        }
    }
}
