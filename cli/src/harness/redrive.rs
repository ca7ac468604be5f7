//! Live re-drive in the race: the re-drive rows a contended resume writes,
//! the re-driver a timer service hands them to, and the service itself.
//!
//! A racing resume that ends contended (every conditional try found the
//! token moved while the park stayed open) does what the child supervisor
//! does with re-drive on: it writes the first re-drive row of the park
//! (attempt 0, due at `redrive_wake_at(now, policy.delay_ms(0, draw), now)`)
//! to the store's timer store and moves on. A [`TimerService`] running
//! beside the race (the real clock, a random source seeded from `--seed`, a
//! short poll interval) claims the due rows and hands each to the
//! [`RaceRedriver`], which re-derives the park's resume from the log
//! (conditional, `fence_if_parked_at` the open park) and, when it lands,
//! runs the same body a winning resumer runs. A row whose park was answered
//! meanwhile is retired as nothing to re-drive; a re-drive contended again
//! is rescheduled with backoff by the service, up to the policy's
//! `max_attempts`, after which the service reports the exhaustion once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId, ExecutionView, ResumeError, ResumeRequest,
    redrive::Draw,
    timer::{DueFilter, MAX_TIMER_MS, RedriveAnswer, TimerRow},
};
use loomfence_runtime::{
    Redriver, RuntimeError, TimerService, clock::seeded_random, resume_from,
    timer::TimerServiceHandle, timer::TimerServiceOptions,
};
use loomfence_store::{EventStore, StoreError, TimerStore};
use serde_json::json;

use crate::clock::now_ms;
use crate::error::CliError;
use crate::harness::body::{BodyEnd, run_body};

/// How often the race's timer service polls: short, so a run stays quick.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How long a claim of the race's timer service lasts. Far longer than a
/// fire, and short enough that a row whose fire failed comes back within
/// the run.
const LEASE: Duration = Duration::from_secs(5);

pub(crate) use crate::redrivers::POLICY;

/// Mixed into `--seed` for the service's random source, so that it does
/// not draw the same numbers as resumer 0's PRNG.
const SERVICE_SEED_SALT: u64 = 0x7265_6472_6976_6572;

/// Writes the first re-drive row of every contended resume, and remembers
/// which parks got one.
pub(crate) struct RedriveRows {
    /// The store's timer store.
    timers: Arc<dyn TimerStore>,
    /// Parks with at least one row written.
    scheduled: Mutex<HashSet<ExecutionId>>,
}

impl RedriveRows {
    /// Rows go to `timers`.
    pub(crate) fn new(timers: Arc<dyn TimerStore>) -> Self {
        Self {
            timers,
            scheduled: Mutex::new(HashSet::new()),
        }
    }

    /// Writes `id`'s first re-drive row ([`TimerRow::first_redrive`]), as
    /// the child supervisor does. Every contended resume writes its own row, as every
    /// contended node of a fleet would; the second of a park finds it
    /// answered and is retired as nothing to re-drive.
    /// The row's jitter is `draw`; a value outside `[0, 1)` (which a
    /// uniform `f64` never is) schedules the row with no jitter.
    pub(crate) async fn schedule(&self, id: &ExecutionId, draw: f64) -> Result<(), CliError> {
        let draw = Draw::new(draw).unwrap_or(Draw::ZERO);
        let now = now_ms();
        let row = TimerRow::first_redrive(id.clone(), now, &POLICY, draw)
            .ok_or(CliError::NoWakeTime { now })?;
        self.timers
            .schedule(&row)
            .await
            .map_err(CliError::store("re-drive row: timer store"))?;
        self.scheduled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone());
        Ok(())
    }

    /// Whether a row was written for `id`.
    pub(crate) fn was_scheduled(&self, id: &ExecutionId) -> bool {
        self.scheduled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(id)
    }
}

/// What the re-driver counted.
#[derive(Debug, Default)]
pub(crate) struct RedriverCounts {
    /// Re-drives whose resume landed (each ran a body).
    pub(crate) landed: AtomicU64,
    /// Re-driven bodies that appended every step and completed.
    pub(crate) completed: AtomicU64,
    /// Re-driven bodies whose own append was refused as stale.
    pub(crate) fenced_out: AtomicU64,
    /// Re-drives contended again (rescheduled by the service).
    pub(crate) contended: AtomicU64,
}

/// The race's re-driver: re-derives a park's resume from its log and, when
/// it lands, runs the race's body under its token.
pub(crate) struct RaceRedriver {
    /// The race's store.
    store: Arc<dyn EventStore>,
    /// Step events per body.
    steps: u32,
    /// What it did.
    pub(crate) counts: RedriverCounts,
}

impl RaceRedriver {
    /// A re-driver over `store`, running bodies of `steps` steps.
    pub(crate) fn new(store: Arc<dyn EventStore>, steps: u32) -> Self {
        Self {
            store,
            steps,
            counts: RedriverCounts::default(),
        }
    }
}

#[async_trait]
impl Redriver for RaceRedriver {
    /// | the log / the resume | the answer |
    /// |---|---|
    /// | no open park (answered meanwhile) | noop |
    /// | the conditional resume of the open park landed | done, after the body |
    /// | refused (answered between the read and the acquire) | noop |
    /// | contended | contended |
    /// | a store failure (reading, resuming, the body) | the error |
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        let log = self
            .store
            .read_range(execution_id, 1, None)
            .await
            .map_err(RuntimeError::Store)?;
        let Some(park) = ExecutionView::fold(&log).open_park else {
            return Ok(RedriveAnswer::Noop);
        };
        let request = ResumeRequest::new(park.sequence, json!({ "redrive": true }), now_ms());
        match resume_from(&*self.store, execution_id, request, &log).await {
            Ok(resumed) => {
                self.counts.landed.fetch_add(1, Ordering::Relaxed);
                let by = json!("redriver");
                match run_body(&*self.store, resumed, self.steps, by)
                    .await
                    .map_err(RuntimeError::Store)?
                {
                    BodyEnd::Completed => self.counts.completed.fetch_add(1, Ordering::Relaxed),
                    BodyEnd::FencedOut => self.counts.fenced_out.fetch_add(1, Ordering::Relaxed),
                };
                Ok(RedriveAnswer::Done)
            }
            Err(RuntimeError::Resume(ResumeError::Refused(_))) => Ok(RedriveAnswer::Noop),
            Err(RuntimeError::Resume(ResumeError::Contended(_))) => {
                self.counts.contended.fetch_add(1, Ordering::Relaxed);
                Ok(RedriveAnswer::Contended)
            }
            Err(other) => Err(other),
        }
    }
}

/// What the service passed to `on_error`.
#[derive(Debug, Default)]
pub(crate) struct ServiceErrors {
    /// Parks whose chain gave up (each reported once).
    pub(crate) exhausted: HashSet<ExecutionId>,
    /// Every other failure, as text, in order.
    pub(crate) failures: Vec<String>,
}

/// The race's timer service, running, with what it reports.
pub(crate) struct Service {
    /// The loop.
    handle: TimerServiceHandle,
    /// The timer store it claims from.
    timers: Arc<dyn TimerStore>,
    /// What it reported.
    errors: Arc<Mutex<ServiceErrors>>,
}

impl Service {
    /// Starts a service over `store` and `timers` with `redriver`
    /// registered (a [`RaceRedriver`], or the inbox in a race of messages):
    /// the real clock, a random source seeded from `seed`,
    /// [`POLL_INTERVAL`], [`POLICY`].
    pub(crate) fn spawn(
        store: Arc<dyn EventStore>,
        timers: Arc<dyn TimerStore>,
        redriver: Arc<dyn Redriver>,
        seed: u64,
    ) -> Self {
        let errors = Arc::new(Mutex::new(ServiceErrors::default()));
        let sink = Arc::clone(&errors);
        let options = TimerServiceOptions {
            poll_interval: POLL_INTERVAL,
            lease: LEASE,
            policy: POLICY,
            random: seeded_random(seed ^ SERVICE_SEED_SALT),
            on_error: Arc::new(move |error| {
                let mut errors = sink.lock().unwrap_or_else(PoisonError::into_inner);
                match error {
                    RuntimeError::Exhausted(exhausted) => {
                        errors.exhausted.insert(exhausted.execution_id.clone());
                    }
                    other => errors.failures.push(other.to_string()),
                }
            }),
            ..TimerServiceOptions::default()
        };
        let service = TimerService::new(store, Arc::clone(&timers), options);
        service.register_redriver(redriver);
        Self {
            handle: Arc::new(service).spawn(),
            timers,
            errors,
        }
    }

    /// Waits until the timer store holds no row (every chain retired: re-
    /// driven, nothing to re-drive, or exhausted), or until the service
    /// reports a failure; then stops the service and answers what it
    /// reported.
    pub(crate) async fn drain(self) -> Result<ServiceErrors, StoreError> {
        let drained = loop {
            if !self.lock_errors().failures.is_empty() {
                break Ok(());
            }
            match self.timers.due(MAX_TIMER_MS, 1, DueFilter::default()).await {
                Ok(rows) if rows.is_empty() => break Ok(()),
                Ok(_) => tokio::time::sleep(POLL_INTERVAL).await,
                Err(error) => break Err(error),
            }
        };
        let Self { handle, errors, .. } = self;
        handle.shutdown().await;
        drained?;
        let mut errors = errors.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(std::mem::take(&mut *errors))
    }

    /// The errors reported so far.
    fn lock_errors(&self) -> MutexGuard<'_, ServiceErrors> {
        self.errors.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
