//! What a tick asks for, what it tells, and what it counts: the plain data
//! a [`TickMachine`](crate::tick::TickMachine) hands its host.

use std::ops::AddAssign;

use serde::Serialize;

use crate::fire::{FireOutcome, TimerRow};
use crate::input::ExecutionId;
use crate::resume_machine::ResumeRequest;
use crate::timer_records::Exhaustion;
use crate::timer_table::{Claim, DueFilter, Lease};
use crate::unreadable::UnreadableRow;

/// One thing for the host to do; it answers with the `handle_*` method
/// each variant names, or with
/// [`handle_failed`](crate::tick::TickMachine::handle_failed) if the IO failed.
///
/// Non-exhaustive: a host that does not know an action must stop rather
/// than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TickAction {
    /// Read the clock (ms since the epoch) and, if `draw`, draw one random
    /// number in `[0, 1)`; answer with
    /// [`handle_clock`](crate::tick::TickMachine::handle_clock).
    Clock {
        /// Whether a draw is needed (a fire is about to start).
        draw: bool,
    },
    /// The timer store's `claim_due(lease, limit, filter)`; answer with
    /// [`handle_claimed`](crate::tick::TickMachine::handle_claimed).
    Claim {
        /// Who claims, at what time, for how long.
        lease: Lease,
        /// How many rows.
        limit: usize,
        /// Whether re-drive rows are included: only with a re-driver.
        filter: DueFilter,
    },
    /// Read the execution's whole log, `read_range(id, 1, None)`; answer
    /// with [`handle_read`](crate::tick::TickMachine::handle_read).
    ReadLog {
        /// The execution of the row being fired.
        execution_id: ExecutionId,
    },
    /// Run a conditional resume of the execution with this request (from
    /// the log just read, if the host kept it); answer with
    /// [`handle_resumed`](crate::tick::TickMachine::handle_resumed).
    Resume {
        /// The execution of the row being fired.
        execution_id: ExecutionId,
        /// What to resume it with.
        request: ResumeRequest,
    },
    /// Hand `row` to re-driver number `redriver` (registration order, from
    /// 0); answer with [`handle_redrive`](crate::tick::TickMachine::handle_redrive).
    /// A host with no such re-driver answers `handle_failed`.
    Redrive {
        /// Which re-driver.
        redriver: usize,
        /// The re-drive row.
        row: TimerRow,
    },
    /// The timer store's `reschedule(claim, next)`; answer with
    /// [`handle_rescheduled`](crate::tick::TickMachine::handle_rescheduled).
    Reschedule {
        /// The claim of the fired row.
        claim: Claim,
        /// The next row of the chain.
        next: TimerRow,
    },
    /// The timer store's `complete(claim)`; answer with
    /// [`handle_completed`](crate::tick::TickMachine::handle_completed).
    Complete {
        /// The claim of the fired row.
        claim: Claim,
    },
    /// The timer store's `exhaust(claim, exhaustion)`: retire the row and
    /// record its exhaustion in one step; answer with
    /// [`handle_exhausted`](crate::tick::TickMachine::handle_exhausted).
    Exhaust {
        /// The claim of the fired row.
        claim: Claim,
        /// What to record.
        exhaustion: Exhaustion,
    },
    /// The timer store's `release(claim)`; answer with
    /// [`handle_released`](crate::tick::TickMachine::handle_released).
    Release {
        /// A claim the tick holds and did not retire.
        claim: Claim,
    },
}

/// What [`TickMachine::poll`](crate::tick::TickMachine::poll) says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TickPoll {
    /// Do this, then feed the answer back.
    Act(TickAction),
    /// No tick is running; this is what the last one did (all zero before
    /// the first).
    Done(TickReport),
}

/// Which step of a tick a failure hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TickStage {
    /// The fire's start: a draw out of range, or a row or time the fire
    /// machine refuses. The fire was not made.
    Start,
    /// The claim: the tick fires nothing more.
    Claim,
    /// The read of the log.
    ReadLog,
    /// The resume.
    Resume,
    /// The re-driver (one that is not there; one that throws is an answer).
    Redrive,
    /// The reschedule.
    Reschedule,
    /// The complete.
    Complete,
    /// The exhaust (retire and record).
    Exhaust,
    /// A release.
    Release,
}

/// How the fire of one claim ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TickEnd {
    /// The fire machine's final outcome, already applied to the node's
    /// backoff. A left outcome's claim is released at the end of the tick.
    Outcome(FireOutcome),
    /// The complete or reschedule answered `NotHeld`: the decision is void.
    Void,
    /// The lease had ended before the fire began: not fired, released.
    Lapsed,
    /// The IO failed at this stage: the claim is left to expire.
    Failed(TickStage),
}

/// Something the host reports (a log line, a metric, a callback); read
/// with [`TickMachine::poll_event`](crate::tick::TickMachine::poll_event).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TickEvent {
    /// A due row the store could not read, met by this node for the first
    /// time.
    Unreadable(UnreadableRow),
    /// The fire of `claim` begins; its actions follow.
    Started(Claim),
    /// The fire of `claim` ended. An
    /// [`Exhausted`](FireOutcome::Exhausted) outcome here is the one
    /// report of its chain.
    Ended {
        /// The claim fired.
        claim: Claim,
        /// How.
        end: TickEnd,
    },
}

/// What one tick did: the rows it claimed and how each fire ended.
#[must_use]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TickReport {
    /// Rows claimed (over every claim of the tick).
    pub claimed: usize,
    /// Plain wakes resumed, rows retired.
    pub fired: usize,
    /// Plain wakes no longer pending, rows retired.
    pub obsolete: usize,
    /// Plain wakes held back by this node's backoff, left (no read, no
    /// acquire).
    pub not_yet: usize,
    /// Plain wakes whose resume was contended, left with a backoff entry.
    pub backed_off: usize,
    /// Re-drive rows a re-driver re-drove, retired.
    pub redriven: usize,
    /// Re-drive rows every re-driver answered noop to, retired.
    pub nothing_to_redrive: usize,
    /// Re-drive rows whose next row was written, retired.
    pub rescheduled: usize,
    /// Re-drive rows left because no re-driver is registered.
    pub left: usize,
    /// Chains that gave up, rows retired; each is reported once.
    pub exhausted: usize,
    /// Fires whose complete or reschedule answered `NotHeld`: the decision
    /// was void, the row is someone else's.
    pub not_held: usize,
    /// Claims not fired because their lease had ended before the fire
    /// began (released).
    pub lapsed: usize,
    /// Claims handed back (`release` answered done): left rows, lapsed
    /// claims, and rows not fired before a stop.
    pub released: usize,
    /// Failures: IO the host reported failed, and re-drivers that threw
    /// (exhaustions are counted in `exhausted`, unreadable rows in
    /// `unreadable` instead).
    pub errors: usize,
    /// Unreadable rows reported by this tick: each is counted once per
    /// node, the first tick that meets it.
    pub unreadable: usize,
}

impl TickReport {
    /// Rows retired by this tick: fired, obsolete, re-driven, nothing to
    /// re-drive, rescheduled or exhausted.
    #[must_use]
    pub fn retired(&self) -> usize {
        self.fired
            + self.obsolete
            + self.redriven
            + self.nothing_to_redrive
            + self.rescheduled
            + self.exhausted
    }

    /// Counts one final outcome.
    pub(crate) fn count(&mut self, outcome: &FireOutcome) {
        let counter = match outcome {
            FireOutcome::Fired => &mut self.fired,
            FireOutcome::Obsolete => &mut self.obsolete,
            FireOutcome::NotYet { .. } => &mut self.not_yet,
            FireOutcome::BackedOff(_) => &mut self.backed_off,
            FireOutcome::Redriven => &mut self.redriven,
            FireOutcome::NothingToRedrive => &mut self.nothing_to_redrive,
            FireOutcome::Rescheduled(_) => &mut self.rescheduled,
            FireOutcome::Left => &mut self.left,
            FireOutcome::Exhausted(_) => &mut self.exhausted,
        };
        *counter += 1;
    }
}

impl AddAssign for TickReport {
    /// Adds `other`'s counts: the total over several ticks.
    fn add_assign(&mut self, other: Self) {
        self.claimed += other.claimed;
        self.fired += other.fired;
        self.obsolete += other.obsolete;
        self.not_yet += other.not_yet;
        self.backed_off += other.backed_off;
        self.redriven += other.redriven;
        self.nothing_to_redrive += other.nothing_to_redrive;
        self.rescheduled += other.rescheduled;
        self.left += other.left;
        self.exhausted += other.exhausted;
        self.not_held += other.not_held;
        self.lapsed += other.lapsed;
        self.released += other.released;
        self.errors += other.errors;
        self.unreadable += other.unreadable;
    }
}
