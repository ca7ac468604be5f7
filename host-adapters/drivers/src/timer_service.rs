//! The timer service: fires the due rows of a [`TimerStore`] against an
//! [`EventStore`], driving the core's [`FireMachine`].
//!
//! The service makes no decision of its own. Each row's fate (fire, retire,
//! back off, re-drive, give up) is the fire machine's decision table (see
//! `core/src/timer.rs`); the service claims the rows, performs the
//! machine's actions against the stores and the registered re-drivers,
//! keeps this node's [`WakeBackoff`], and reports.
//!
//! # One poll
//!
//! [`TimerService::poll_once`] is one tick, deterministic given the injected
//! clock and random source (the tests and the simulation call it directly
//! under a virtual clock):
//!
//! 1. **Claim** up to `batch` due rows under a [`Lease`] of `lease` for this
//!    node, with [`DueFilter`] `{ redrive: <a re-driver is registered> }`:
//!    a node with no re-driver does not even claim re-drive rows, so they
//!    wait for a node that can judge them and never fill its page.
//!    Rows the store could not read come back beside the claims, unclaimed
//!    ([`ClaimPage::unreadable`]); each is reported once per node (a
//!    warning, [`counters::UNREADABLE_ROWS`], `on_error` with
//!    [`TimerServiceError::Unreadable`]) and the readable rows go on.
//! 2. **Fire** each claimed row, one after the other: a [`FireMachine`] with
//!    the time, one fresh [`Draw`] from `random`, the policy, this node's
//!    backoff entry for the execution and the number of re-drivers, driven
//!    to its outcome:
//!    - `ReadLog` → `read_range(id, 1, None)`;
//!    - `Resume(request)` → [`resume_from`] with the log just read
//!      (conditional, `fence_if_parked_at` the open park's sequence); its
//!      landed / refused / contended result goes back through
//!      `handle_resumed`;
//!    - `Redrive { redriver, row }` → the re-driver registered `redriver`-th;
//!      an `Err` is [`RedriveAnswer::Failed`] (and is passed to `on_error`);
//!    - `Reschedule(next)` → [`TimerStore::reschedule`] of the claim:
//!      the fired row retired and `next` written in one step;
//!    - `Complete(row)` → [`TimerStore::complete`] of the claim.
//! 3. **Apply** the outcome to the [`WakeBackoff`] ([`WakeBackoff::apply`]),
//!    count it, and pass an [`Exhausted`](FireOutcome::Exhausted) outcome's
//!    error to `on_error`.
//! 4. **Release** the claims of the rows the machine left
//!    ([`NotYet`](FireOutcome::NotYet), [`BackedOff`](FireOutcome::BackedOff),
//!    [`Left`](FireOutcome::Left)) at the end of the tick.
//!
//! While its claims come back full and it has fired fewer than `batch`
//! rows (the left rows do not count), the tick claims again; the rows it
//! still holds are skipped by its own next claim. So a page of rows this
//! node backs off never hides the rows behind it, and a tick stops
//! claiming once it has fired `batch` rows.
//!
//! # Decisions
//!
//! - **A left row's claim is released, at the end of the tick.** A row the
//!   machine left is due and will be fired again; the only question is who
//!   may fire it, and when. Released, the row is free at once: this node
//!   claims it again on its next poll but makes no read and no acquire
//!   before its backoff entry's `next_try_at` (the machine answers `NotYet`
//!   without touching the event store), and the retry happens on the first
//!   poll after `next_try_at`, as the schedule says. Another node may fire
//!   it meanwhile; its own backoff holds it back in the same way (the map
//!   is per node, as the core's docs say), and a node with a re-driver
//!   gets a re-drive row at once. Kept until the lease ends instead, every
//!   retry would wait for the lease (30 s by default) whatever the
//!   schedule said (200 ms for the first retry), and no other node could
//!   take the row meanwhile. The price of releasing: a row held back by
//!   the backoff is claimed and released once per poll until its next try
//!   (two timer store writes per poll per such row, bounded by the
//!   backoff map's bound). The release waits for the end of the tick so
//!   that the tick's own further claims skip the row.
//! - **A failed fire leaves its claim to expire.** A store error (event
//!   store, timer store, the resume's store), a machine error or a bad draw
//!   is passed to `on_error`, the machine is dropped, and the claim is
//!   neither completed nor released: the row comes back when the lease ends
//!   and the next claimer decides again from scratch (the core's rule for
//!   store failures). Releasing it would retry a failing store on every
//!   poll; the lease spaces the retries out. A failed `Reschedule` wrote
//!   nothing or all, so the row is never lost.
//! - **A complete or a reschedule answered [`Completed::NotHeld`] voids
//!   the decision.** The row was scheduled again meanwhile (a re-park at
//!   the same time) or taken over after the lease: it is someone else's,
//!   and a reschedule wrote no next row, so the chain does not fork. The
//!   fire is counted in [`PollReport::not_held`], its outcome is not
//!   applied to the backoff and not reported, so an exhaustion is reported
//!   only by the fire whose complete answered `Done`: exactly once per
//!   chain.
//! - **A claim whose lease has ended is not fired.** If a tick runs so long
//!   that a claimed row's lease ends before its fire begins, the row may be
//!   another node's by now; it is skipped ([`PollReport::lapsed`]).
//! - **The time never runs backwards within a tick**: a fire's `now` is at
//!   least its claim's, so a clock that steps back does not make a claimed
//!   row "not due".
//!
//! # The loop
//!
//! [`TimerService::spawn`] runs `poll_once` every `poll_interval` on the
//! tokio runtime. [`TimerServiceHandle::shutdown`] stops it: the tick in
//! hand finishes the fire it is making, releases the claims it has not
//! fired, and the loop ends. A node that is killed instead leaves its claims
//! to expire: other nodes fire the rows once the lease has ended.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicI64, Ordering};
//!
//! use loomfence_core::{ExecutionId, KernelKind, NewEvent, TimerRow, Wait, park_payload};
//! use loomfence_runtime::{TimerService, TimerServiceOptions, seeded_random};
//! use loomfence_store::{EventStore, MemoryEventStore, MemoryTimerStore, TimerStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let events = Arc::new(MemoryEventStore::new());
//! let timers = Arc::new(MemoryTimerStore::new());
//!
//! // An execution parks on a timer, and the timer is scheduled.
//! let id = ExecutionId::new("order-7")?;
//! events
//!     .append_many(&id, vec![
//!         NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!         NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001)
//!             .with_payload(park_payload(&[Wait::Timer { wake_at: 5_000 }])),
//!     ])
//!     .await?;
//! timers.schedule(&TimerRow::wake(id.clone(), 5_000)).await?;
//!
//! // A virtual clock and a seeded random source make the poll deterministic.
//! let clock = Arc::new(AtomicI64::new(4_000));
//! let time = clock.clone();
//! let service = TimerService::new(events.clone(), timers.clone(), TimerServiceOptions {
//!     now: Arc::new(move || time.load(Ordering::SeqCst)),
//!     random: seeded_random(7),
//!     ..TimerServiceOptions::default()
//! });
//!
//! assert_eq!(service.poll_once().await.claimed, 0); // not due yet
//! clock.store(5_000, Ordering::SeqCst);
//! let report = service.poll_once().await;
//! assert_eq!((report.claimed, report.fired, report.errors), (1, 1, 0));
//!
//! let log = events.read_range(&id, 1, None).await?;
//! assert_eq!(log[2].payload["answer"]["timer"]["wakeAt"], 5_000);
//! assert!(timers.due(i64::from(u32::MAX), 10, Default::default()).await?.is_empty());
//!
//! // In a host: `let handle = Arc::new(service).spawn();` … `handle.shutdown().await;`
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::ops::AddAssign;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use loomfence_core::{
    Claim, Completed, DrawError, DueFilter, Envelope, FireAction, FireContext, FireError,
    FireMachine, FireOutcome, FirePoll, Lease, RedriveAnswer, RedriveExhaustedError,
    UnreadableReports, UnreadableRow, WakeBackoff,
};
use loomfence_core::{Draw, ExecutionId};
use loomfence_store::{ClaimPage, EventStore, StoreError, TimerStore, TimerStoreError};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::counters;
use crate::driver::resume_from;
use crate::error::ResumeFailure;
use crate::redriver::{RedriveFailure, Redriver};
use crate::timer_service_options::TimerServiceOptions;

/// A failure of the timer service, or a retry chain that gave up. Each is
/// passed to `on_error` once; the service goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TimerServiceError {
    /// A retry chain (a contended plain wake's, or a re-drive row's) gave
    /// up: its row was retired and the execution is left to `recover()`.
    /// Reported exactly once per chain, by the fire whose complete retired
    /// the row.
    #[error(transparent)]
    Exhausted(RedriveExhaustedError),
    /// The timer store failed: a claim (the tick fires nothing), a
    /// reschedule, a complete or a release. A fire's claim is left to
    /// expire.
    #[error("timer store: {0}")]
    Timers(#[from] TimerStoreError),
    /// The event store failed reading a log. The fire's claim is left to
    /// expire.
    #[error("event store: {0}")]
    Events(#[from] StoreError),
    /// A plain wake's resume failed otherwise than refused or contended
    /// (those are answers the fire machine takes): its store failed, or
    /// broke the resume machine's contract. The claim is left to expire.
    #[error("resume: {0}")]
    Resume(#[from] ResumeFailure),
    /// The fire machine refused its input: the row or the time out of
    /// range, a row not due, or an answer that does not fit (a store that
    /// broke its contract). The claim is left to expire.
    #[error("fire decision: {0}")]
    Machine(#[from] FireError),
    /// The random source gave a number outside `[0, 1)`. The fire was not
    /// made; the claim is left to expire.
    #[error("random source: {0}")]
    Draw(#[from] DrawError),
    /// A due row the timer store could not read (see
    /// [`ClaimPage::unreadable`]): it was not claimed, the other rows went
    /// on. Reported once per node and row (see [`UnreadableReports`]),
    /// counted in [`PollReport::unreadable`] rather than `errors`.
    #[error(
        "unreadable timer row ({:?}, {}): {:?}: {}; it is not fired until repaired or deleted",
        .0.execution_id,
        .0.wake_at.map_or_else(|| "?".to_owned(), |at| at.to_string()),
        .0.field,
        .0.detail
    )]
    Unreadable(UnreadableRow),
    /// A re-driver returned an error. The fire goes on: the error is the
    /// answer [`RedriveAnswer::Failed`], treated as contended, so the chain
    /// continues and the row is not lost.
    #[error("re-driver {index} failed on {execution_id:?}: {source}")]
    Redriver {
        /// The re-driver's place in registration order, from 0.
        index: usize,
        /// The execution it was re-driving.
        execution_id: ExecutionId,
        /// What it returned.
        #[source]
        source: RedriveFailure,
    },
    /// The fire machine asked for an action, or ended in an outcome, this
    /// service does not know (the core is newer than the runtime), or named
    /// a re-driver that is not registered. Nothing more was done; the claim
    /// is left to expire.
    #[error("the fire machine asked for something this service does not know: {0}")]
    Unsupported(String),
}

/// What one [`TimerService::poll_once`] did: the rows it claimed and how
/// each fire ended.
#[must_use]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PollReport {
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
    /// Chains that gave up, rows retired; each was passed to `on_error`.
    pub exhausted: usize,
    /// Fires whose complete or reschedule answered [`Completed::NotHeld`]:
    /// the decision was void, the row is someone else's.
    pub not_held: usize,
    /// Claims not fired because their lease had ended before the fire
    /// began.
    pub lapsed: usize,
    /// Claims handed back: left rows, and rows not fired before a shutdown.
    pub released: usize,
    /// Failures passed to `on_error` (exhaustions are counted in
    /// `exhausted`, unreadable rows in `unreadable` instead).
    pub errors: usize,
    /// Unreadable rows reported by this tick: each due row the store could
    /// not read is reported (to `on_error`, as
    /// [`TimerServiceError::Unreadable`]) and counted once per node, the
    /// first tick that meets it.
    pub unreadable: usize,
}

impl PollReport {
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
    fn count(&mut self, outcome: &FireOutcome) {
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
            // Turned into an `Unsupported` error before it gets here.
            _ => &mut self.errors,
        };
        *counter += 1;
    }
}

impl AddAssign for PollReport {
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

/// How one fire ended, as the tick sees it.
enum Fire {
    /// The outcome is final and was applied: the row was retired, or left
    /// ([`FireOutcome::retired`]) and its claim is to be released.
    Final(FireOutcome),
    /// The complete answered `NotHeld`: the decision is void.
    Void,
    /// The lease ended before the fire began: not fired.
    Lapsed,
}

/// Fires the due rows of a [`TimerStore`] against an [`EventStore`]; see
/// the module docs for the drive loop and its decisions.
pub struct TimerService<E: EventStore + ?Sized, T: TimerStore + ?Sized> {
    /// Where the logs live.
    events: Arc<E>,
    /// Where the timer rows live, shared with the other nodes.
    timers: Arc<T>,
    /// Behaviour.
    options: TimerServiceOptions,
    /// The re-drivers, in registration order.
    redrivers: Mutex<Vec<Arc<dyn Redriver>>>,
    /// This node's backoff of contended plain wakes.
    backoff: Mutex<WakeBackoff>,
    /// The unreadable rows this node has reported.
    unreadable: Mutex<UnreadableReports>,
}

impl<E: EventStore + ?Sized, T: TimerStore + ?Sized> fmt::Debug for TimerService<E, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerService")
            .field("options", &self.options)
            .field("redrivers", &lock(&self.redrivers).len())
            .field("backoff", &lock(&self.backoff).len())
            .finish_non_exhaustive()
    }
}

/// Locks `mutex`; nothing the service keeps under a lock is left half
/// changed by a panic, so a poisoned lock is recovered.
fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<E: EventStore + ?Sized, T: TimerStore + ?Sized> TimerService<E, T> {
    /// A service firing `timers`' rows against `events`, with no re-driver
    /// registered yet.
    pub fn new(events: Arc<E>, timers: Arc<T>, options: TimerServiceOptions) -> Self {
        let backoff = WakeBackoff::with_bound(options.backoff_bound);
        Self {
            events,
            timers,
            options,
            redrivers: Mutex::new(Vec::new()),
            backoff: Mutex::new(backoff),
            unreadable: Mutex::new(UnreadableReports::new()),
        }
    }

    /// Adds a re-driver. Re-drive rows are handed to the re-drivers in the
    /// order they were registered, and the first answer that is not
    /// [`RedriveAnswer::Noop`] wins. Every node that fires re-drive rows
    /// must register the same ones. Takes effect from the next tick.
    pub fn register_redriver(&self, redriver: Arc<dyn Redriver>) {
        lock(&self.redrivers).push(redriver);
    }

    /// The options it runs with.
    #[must_use]
    pub fn options(&self) -> &TimerServiceOptions {
        &self.options
    }

    /// A copy of this node's backoff of contended plain wakes.
    #[must_use]
    pub fn backoff(&self) -> WakeBackoff {
        lock(&self.backoff).clone()
    }

    /// One tick: claims the due rows, fires each, releases the claims of
    /// the rows left (see the module docs). Never fails: every failure is
    /// passed to `on_error` and counted.
    pub async fn poll_once(&self) -> PollReport {
        self.tick(None).await
    }

    /// One tick, stopping early (and releasing the claims not fired) once
    /// `stop` is set.
    async fn tick(&self, stop: Option<&AtomicBool>) -> PollReport {
        let stopping = || stop.is_some_and(|stop| stop.load(Ordering::SeqCst));
        let redrivers: Vec<Arc<dyn Redriver>> = lock(&self.redrivers).clone();
        let filter = DueFilter {
            redrive: !redrivers.is_empty(),
        };
        let duration_ms = u64::try_from(self.options.lease.as_millis()).unwrap_or(u64::MAX);
        let mut report = PollReport::default();
        // Claims to hand back at the end: rows left, rows not fired.
        let mut release = Vec::new();
        // Rows fired this tick (every claim not left).
        let mut handled = 0_usize;
        'claims: while !stopping() {
            let lease = Lease {
                holder: self.options.node.clone(),
                now: (self.options.now)(),
                duration_ms,
            };
            let ClaimPage { claims, unreadable } = match self
                .timers
                .claim_due(&lease, self.options.batch, filter)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    self.report(&mut report, error.into());
                    break;
                }
            };
            self.report_unreadable(&mut report, unreadable);
            report.claimed += claims.len();
            let full = claims.len() == self.options.batch;
            let mut claims = claims.into_iter();
            while let Some(claim) = claims.next() {
                if stopping() {
                    release.push(claim);
                    release.extend(claims);
                    break 'claims;
                }
                match self.fire(&claim, lease.now, &redrivers, &mut report).await {
                    Ok(Fire::Final(outcome)) => {
                        if outcome.retired() {
                            handled += 1;
                        } else {
                            release.push(claim);
                        }
                    }
                    Ok(Fire::Void) => {
                        report.not_held += 1;
                        handled += 1;
                    }
                    Ok(Fire::Lapsed) => {
                        report.lapsed += 1;
                        handled += 1;
                    }
                    Err(error) => {
                        tracing::debug!(row = ?claim.row, %error, "fire failed; the claim is left to expire");
                        self.report(&mut report, error);
                        handled += 1;
                    }
                }
            }
            if !full || handled >= self.options.batch {
                break;
            }
        }
        for claim in release {
            match self.timers.release(&claim).await {
                Ok(Completed::Done) => report.released += 1,
                Ok(Completed::NotHeld) => {}
                Err(error) => self.report(&mut report, error.into()),
            }
        }
        report
    }

    /// Reports the rows of `unreadable` this node has not reported yet:
    /// a warning, the runtime's counter, `on_error`.
    fn report_unreadable(&self, report: &mut PollReport, unreadable: Vec<UnreadableRow>) {
        for row in unreadable {
            if !lock(&self.unreadable).first_report(&row) {
                continue;
            }
            tracing::warn!(
                execution_id = %row.execution_id,
                wake_at = ?row.wake_at,
                field = ?row.field,
                detail = %row.detail,
                "unreadable timer row: not claimed, not fired until repaired or deleted"
            );
            counters::one(counters::UNREADABLE_ROWS);
            report.unreadable += 1;
            (self.options.on_error)(&TimerServiceError::Unreadable(row));
        }
    }

    /// Passes `error` to `on_error` and counts it.
    fn report(&self, report: &mut PollReport, error: TimerServiceError) {
        report.errors += 1;
        (self.options.on_error)(&error);
    }

    /// Fires one claimed row to its outcome, applies the outcome to the
    /// backoff and counts it (and reports an exhaustion).
    async fn fire(
        &self,
        claim: &Claim,
        claimed_at: i64,
        redrivers: &[Arc<dyn Redriver>],
        report: &mut PollReport,
    ) -> Result<Fire, TimerServiceError> {
        let row = &claim.row;
        let id = &row.execution_id;
        let now = (self.options.now)().max(claimed_at);
        if now >= claim.expires_at {
            return Ok(Fire::Lapsed);
        }
        let draw = Draw::new((self.options.random)())?;
        let backoff = lock(&self.backoff).get(id);
        let context = FireContext::new(now, draw)
            .with_policy(self.options.policy)
            .with_backoff(backoff)
            .with_redrivers(redrivers.len());
        let mut machine = FireMachine::new(row.clone(), context)?;
        // The log last read, which the resume starts from.
        let mut log: Vec<Envelope> = Vec::new();
        let outcome = loop {
            let action = match machine.poll() {
                FirePoll::Done(outcome) => break outcome,
                FirePoll::Act(action) => action,
                other => return Err(TimerServiceError::Unsupported(format!("{other:?}"))),
            };
            tracing::trace!(?row, ?action, "fire step");
            match action {
                FireAction::ReadLog => {
                    log = self.events.read_range(id, 1, None).await?;
                    machine.handle_read(&log)?;
                }
                FireAction::Resume(request) => {
                    match resume_from(&*self.events, id, request, &log).await {
                        Ok(resumed) => {
                            machine.handle_resumed(Ok(&resumed))?;
                            (self.options.on_resumed)(resumed);
                        }
                        Err(ResumeFailure::Resume(answer)) => {
                            machine.handle_resumed(Err(&answer))?;
                        }
                        Err(failure) => return Err(failure.into()),
                    }
                }
                FireAction::Redrive { redriver, row } => {
                    let Some(redriver_at) = redrivers.get(redriver) else {
                        return Err(TimerServiceError::Unsupported(format!(
                            "re-driver {redriver} of {}",
                            redrivers.len()
                        )));
                    };
                    let answer = match redriver_at.redrive(&row.execution_id).await {
                        Ok(answer) => answer,
                        Err(source) => {
                            self.report(
                                report,
                                TimerServiceError::Redriver {
                                    index: redriver,
                                    execution_id: row.execution_id.clone(),
                                    source,
                                },
                            );
                            RedriveAnswer::Failed
                        }
                    };
                    machine.handle_redrive(answer)?;
                }
                FireAction::Reschedule(next) => match self.timers.reschedule(claim, &next).await? {
                    Completed::Done => machine.handle_rescheduled()?,
                    Completed::NotHeld => return Ok(Fire::Void),
                },
                FireAction::Complete(_) => match self.timers.complete(claim).await? {
                    Completed::Done => machine.handle_completed()?,
                    Completed::NotHeld => return Ok(Fire::Void),
                },
                other => return Err(TimerServiceError::Unsupported(format!("{other:?}"))),
            }
        };
        if !known(&outcome) {
            return Err(TimerServiceError::Unsupported(format!("{outcome:?}")));
        }
        lock(&self.backoff).apply(row, &outcome);
        report.count(&outcome);
        count_outcome(&outcome);
        if let FireOutcome::Exhausted(exhausted) = &outcome {
            (self.options.on_error)(&TimerServiceError::Exhausted(exhausted.clone()));
        }
        Ok(Fire::Final(outcome))
    }
}

/// Adds a final outcome to the runtime's [`counters`].
fn count_outcome(outcome: &FireOutcome) {
    match outcome {
        FireOutcome::Fired => counters::one(counters::TIMER_WAKES),
        FireOutcome::Redriven => counters::one(counters::REDRIVES),
        FireOutcome::Rescheduled(_) => counters::one(counters::REDRIVE_ROWS),
        FireOutcome::Exhausted(_) => counters::one(counters::EXHAUSTED),
        _ => {}
    }
}

/// Whether this service knows `outcome` (the core's enum is open).
fn known(outcome: &FireOutcome) -> bool {
    matches!(
        outcome,
        FireOutcome::Fired
            | FireOutcome::Obsolete
            | FireOutcome::NotYet { .. }
            | FireOutcome::BackedOff(_)
            | FireOutcome::Redriven
            | FireOutcome::NothingToRedrive
            | FireOutcome::Rescheduled(_)
            | FireOutcome::Left
            | FireOutcome::Exhausted(_)
    )
}

impl<E, T> TimerService<E, T>
where
    E: EventStore + ?Sized + 'static,
    T: TimerStore + ?Sized + 'static,
{
    /// Runs [`poll_once`](TimerService::poll_once) every `poll_interval` on
    /// the current tokio runtime (the first at once), until
    /// [`TimerServiceHandle::shutdown`]. Must be called within a runtime.
    #[must_use = "dropping the handle stops the loop"]
    pub fn spawn(self: Arc<Self>) -> TimerServiceHandle {
        let signal = Arc::new(Signal::default());
        let period = self.options.poll_interval.max(Duration::from_millis(1));
        let stop = Arc::clone(&signal);
        let task = tokio::spawn(async move {
            let mut interval = tokio::time::interval(period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    () = stop.notify.notified() => {}
                    _ = interval.tick() => {}
                }
                if stop.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let report = self.tick(Some(&stop.stopping)).await;
                tracing::trace!(?report, "timer service tick");
            }
        });
        TimerServiceHandle {
            signal,
            task: Some(task),
        }
    }
}

/// The stop signal a handle shares with its loop.
#[derive(Debug, Default)]
struct Signal {
    /// Set once: the loop stops after its current fire.
    stopping: AtomicBool,
    /// Wakes the loop from its wait between ticks.
    notify: Notify,
}

impl Signal {
    /// Asks the loop to stop.
    fn raise(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        // A permit is stored if the loop is not waiting right now.
        self.notify.notify_one();
    }
}

/// The running loop of a [`TimerService::spawn`]. Dropping it asks the loop
/// to stop (as [`shutdown`](TimerServiceHandle::shutdown) does) without
/// waiting for it.
#[derive(Debug)]
pub struct TimerServiceHandle {
    /// Shared with the loop.
    signal: Arc<Signal>,
    /// The loop's task; taken by `shutdown`.
    task: Option<JoinHandle<()>>,
}

impl TimerServiceHandle {
    /// Stops the loop and waits for it: the tick in hand finishes the fire
    /// it is making, releases the claims it has not fired yet, and no new
    /// tick starts. A panic of the loop is resumed here.
    pub async fn shutdown(mut self) {
        self.signal.raise();
        if let Some(task) = self.task.take()
            && let Err(error) = task.await
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
    }

    /// Whether the loop has ended.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for TimerServiceHandle {
    fn drop(&mut self) {
        self.signal.raise();
    }
}
