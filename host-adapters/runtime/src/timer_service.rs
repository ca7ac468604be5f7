//! The timer service: fires the due rows of a [`TimerStore`] against an
//! [`EventStore`], driving the core's [`FireMachine`].
//!
//! The service makes no decision of its own. Each row's fate (fire, retire,
//! back off, re-drive, give up) is the fire machine's decision table (see
//! `core/src/fire.rs`); the service claims the rows, performs the
//! machine's actions against the stores and the registered re-drivers,
//! keeps this node's [`WakeBackoff`], and reports.
//!
//! # One poll
//!
//! [`TimerService::poll_once`] is one tick, deterministic given the injected
//! clock and random source (the tests and the simulation call it directly
//! under a virtual clock). What the tick claims, fires, releases and
//! reports is the core's [`TickMachine`] (its rules head
//! `core/src/tick.rs`), which also keeps this node's [`WakeBackoff`] and the
//! unreadable rows it has reported; the service is its pump:
//!
//! - `Clock` → `now()` (and `random()` when the machine asks for a draw);
//! - `Claim` → [`TimerStore::claim_due`]; the unreadable rows beside the
//!   claims go back with them;
//! - `ReadLog` → `read_range(id, 1, None)`;
//! - `Resume` → [`resume_from`](crate::resume_from) with the log just read; a landed resume is
//!   handed to `on_resumed`;
//! - `Redrive` → the re-driver registered at that index; an `Err` is the
//!   answer [`RedriveAnswer::Failed`] and goes to `on_error`;
//! - `Reschedule` / `Complete` / `Release` → the timer store's;
//! - any IO error goes to `on_error` and the machine is told the step
//!   failed ([`TickMachine::handle_failed`]);
//! - the machine's events: an unreadable row met for the first time is a
//!   warning, [`counters::UNREADABLE_ROWS`] and `on_error` with
//!   [`RuntimeError::Unreadable`]; each final outcome is counted in
//!   the runtime's [`counters`], and an exhausted chain goes to `on_error`.
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
//! use loomfence_core::{
//!     ExecutionId, KernelKind, NewEvent, park::{Wait, park_payload}, timer::TimerRow,
//! };
//! use loomfence_runtime::{TimerService, clock::seeded_random, timer::TimerServiceOptions};
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use loomfence_core::{
    Envelope,
    redrive::Draw,
    tick::{TickAction, TickConfig, TickEnd, TickEvent, TickMachine, TickPoll, TickReport},
    timer::{FireOutcome, RedriveAnswer, WakeBackoff},
};
use loomfence_store::{ClaimPage, EventStore, TimerStore};
use tokio::task::JoinHandle;

use crate::counters;
use crate::driver::resume_answer;
use crate::error::RuntimeError;
use crate::redriver::Redriver;
use crate::stop_signal::StopSignal;
use crate::timer_service_options::TimerServiceOptions;

/// What one [`TimerService::poll_once`] did: the core's [`TickReport`],
/// the rows the tick claimed and how each fire ended.
pub type PollReport = TickReport;

/// Fires the due rows of a [`TimerStore`] against an [`EventStore`]; see
/// the module docs for the pump and the core's [`TickMachine`] for the
/// rules.
pub struct TimerService<E: EventStore + ?Sized, T: TimerStore + ?Sized> {
    /// Where the logs live.
    events: Arc<E>,
    /// Where the timer rows live, shared with the other nodes.
    timers: Arc<T>,
    /// Behaviour.
    options: TimerServiceOptions,
    /// The re-drivers, in registration order.
    redrivers: Mutex<Vec<Arc<dyn Redriver>>>,
    /// This node's ticks: the rules, the backoff and the unreadable rows
    /// reported. Locked only between two awaits.
    node: Mutex<TickMachine>,
    /// Held for a whole tick: the machine runs one tick at a time.
    ticking: tokio::sync::Mutex<()>,
}

impl<E: EventStore + ?Sized, T: TimerStore + ?Sized> fmt::Debug for TimerService<E, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerService")
            .field("options", &self.options)
            .field("redrivers", &lock(&self.redrivers).len())
            .field("backoff", &lock(&self.node).backoff().len())
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
        let lease_ms = u64::try_from(options.lease.as_millis()).unwrap_or(u64::MAX);
        let config = TickConfig::new(
            options.node.clone(),
            lease_ms,
            options.batch,
            options.policy,
        );
        let node = TickMachine::new(config, options.backoff_bound);
        Self {
            events,
            timers,
            options,
            redrivers: Mutex::new(Vec::new()),
            node: Mutex::new(node),
            ticking: tokio::sync::Mutex::new(()),
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
        lock(&self.node).backoff().clone()
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
        let _one_at_a_time = self.ticking.lock().await;
        let redrivers: Vec<Arc<dyn Redriver>> = lock(&self.redrivers).clone();
        // Bound first, so the lock is not held while `on_error` runs.
        let began = lock(&self.node).begin(redrivers.len());
        if let Err(error) = began {
            self.fail(error.into());
            return PollReport::default();
        }
        // The log last read, which a resume starts from.
        let mut log: Vec<Envelope> = Vec::new();
        loop {
            let poll = {
                let mut node = lock(&self.node);
                if stop.is_some_and(|stop| stop.load(Ordering::SeqCst)) {
                    node.stop();
                }
                node.poll()
            };
            let action = match poll {
                TickPoll::Done(report) => return report,
                TickPoll::Act(action) => action,
                other => {
                    self.fail(RuntimeError::unsupported("tick", &other));
                    return PollReport::default();
                }
            };
            tracing::trace!(?action, "tick step");
            if let Err(error) = self.act(action, &redrivers, &mut log).await {
                self.fail(error);
                let failed = lock(&self.node).handle_failed();
                if let Err(error) = failed {
                    self.fail(error.into());
                }
            }
            self.tell();
        }
    }

    /// Performs `action` and feeds the answer to the machine.
    async fn act(
        &self,
        action: TickAction,
        redrivers: &[Arc<dyn Redriver>],
        log: &mut Vec<Envelope>,
    ) -> Result<(), RuntimeError> {
        let node = || lock(&self.node);
        match action {
            TickAction::Clock { draw } => {
                let now = (self.options.now)();
                let draw = if draw {
                    Some(Draw::new((self.options.random)())?)
                } else {
                    None
                };
                node().handle_clock(now, draw)?;
            }
            TickAction::Claim {
                lease,
                limit,
                filter,
            } => {
                let ClaimPage { claims, unreadable } = self
                    .timers
                    .claim_due(&lease, limit, filter)
                    .await
                    .map_err(RuntimeError::Timers)?;
                node().handle_claimed(claims, unreadable)?;
            }
            TickAction::ReadLog { execution_id } => {
                *log = self
                    .events
                    .read_range(&execution_id, 1, None)
                    .await
                    .map_err(RuntimeError::Store)?;
                node().handle_read(log)?;
            }
            TickAction::Resume {
                execution_id,
                request,
            } => {
                let result = resume_answer(&*self.events, &execution_id, request, log).await?;
                node().handle_resumed(result.as_ref())?;
                if let Ok(resumed) = result {
                    (self.options.on_resumed)(resumed);
                }
            }
            TickAction::Redrive { redriver, row } => {
                let Some(redriver_at) = redrivers.get(redriver) else {
                    return Err(RuntimeError::Unsupported {
                        machine: "fire",
                        detail: format!("re-driver {redriver} of {}", redrivers.len()),
                    });
                };
                let answer = match redriver_at.redrive(&row.execution_id).await {
                    Ok(answer) => answer,
                    Err(source) => {
                        (self.options.on_error)(&RuntimeError::Redriver {
                            index: redriver,
                            execution_id: row.execution_id,
                            source: Box::new(source),
                        });
                        RedriveAnswer::Failed
                    }
                };
                node().handle_redrive(answer)?;
            }
            TickAction::Reschedule { claim, next } => {
                let done = self
                    .timers
                    .reschedule(&claim, &next)
                    .await
                    .map_err(RuntimeError::Timers)?;
                node().handle_rescheduled(done)?;
            }
            TickAction::Complete { claim } => {
                let done = self
                    .timers
                    .complete(&claim)
                    .await
                    .map_err(RuntimeError::Timers)?;
                node().handle_completed(done)?;
            }
            TickAction::Exhaust { claim, exhaustion } => {
                let done = self
                    .timers
                    .exhaust(&claim, &exhaustion)
                    .await
                    .map_err(RuntimeError::Timers)?;
                node().handle_exhausted(done)?;
            }
            TickAction::Release { claim } => {
                let done = self
                    .timers
                    .release(&claim)
                    .await
                    .map_err(RuntimeError::Timers)?;
                node().handle_released(done)?;
            }
            other => return Err(RuntimeError::unsupported("tick", &other)),
        }
        Ok(())
    }

    /// Reports what the machine tells: unreadable rows, final outcomes.
    fn tell(&self) {
        loop {
            let Some(event) = lock(&self.node).poll_event() else {
                return;
            };
            match event {
                TickEvent::Unreadable(row) => {
                    tracing::warn!(
                        execution_id = %row.execution_id,
                        wake_at = ?row.wake_at,
                        field = ?row.field,
                        detail = %row.detail,
                        "unreadable timer row: not claimed, not fired until repaired or deleted"
                    );
                    counters::one(counters::UNREADABLE_ROWS);
                    (self.options.on_error)(&RuntimeError::Unreadable(row));
                }
                TickEvent::Ended {
                    end: TickEnd::Outcome(outcome),
                    ..
                } => {
                    count_outcome(&outcome);
                    if let FireOutcome::Exhausted(exhausted) = outcome {
                        (self.options.on_error)(&RuntimeError::Exhausted(exhausted));
                    }
                }
                other => tracing::trace!(?other, "tick event"),
            }
        }
    }

    /// Passes `error` to `on_error`.
    fn fail(&self, error: RuntimeError) {
        tracing::debug!(%error, "timer service step failed");
        (self.options.on_error)(&error);
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
        let signal = Arc::new(StopSignal::default());
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
                if stop.is_raised() {
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

/// The running loop of a [`TimerService::spawn`]. Dropping it asks the loop
/// to stop (as [`shutdown`](TimerServiceHandle::shutdown) does) without
/// waiting for it.
#[derive(Debug)]
pub struct TimerServiceHandle {
    /// Shared with the loop.
    signal: Arc<StopSignal>,
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
