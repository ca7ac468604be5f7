//! The follower: a pump over the core's
//! [`FollowMachine`] that hands a
//! [`ChildSupervisor`] its work from the store's change feed, so a worker
//! never lists the store.
//!
//! Every rule (rebuild from the head and the open parks, which events are
//! whose, when a failed supervision is tried again) is the machine's. This
//! module adds the IO: the store's reads and waits, up to
//! [`FollowerOptions::concurrency`] supervisions in flight, the pause after
//! a store error, tracing and counters.

mod options;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loomfence_core::ExecutionId;
use loomfence_core::feed::{FollowAction, FollowMachine, FollowNotice, FollowPoll};
use loomfence_store::{EventStore, StoreError};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

pub use self::options::FollowerOptions;
use crate::counters::{FEED_READS, FOLLOWER_STORE_ERRORS, NOTICES};
use crate::error::RuntimeError;
use crate::stop_signal::StopSignal;
use crate::supervisor::{ChildSupervisor, Supervised};

/// What a follower's rebuild took: the open parks watched, and the time
/// from its start until it had supervised them all and read the feed to
/// its end (caught up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebuilt {
    /// From the follower's start to caught up.
    pub elapsed: Duration,
    /// Parents watched before it was caught up (the open parks, and the
    /// parks the feed brought meanwhile).
    pub watched: u64,
}

/// Follows a store's feed and hands the supervisor what it must hear:
/// parks on children to watch, ends to report.
pub struct Follower<S: EventStore + ?Sized> {
    /// Where the feed is read.
    store: Arc<S>,
    /// Who acts on it.
    supervisor: Arc<ChildSupervisor<S>>,
    /// Behaviour.
    options: FollowerOptions,
}

impl<S: EventStore + ?Sized + 'static> Follower<S> {
    /// A follower of `store` for `supervisor`; refuses a page limit outside
    /// the machine's bounds.
    pub fn new(
        store: Arc<S>,
        supervisor: Arc<ChildSupervisor<S>>,
        options: FollowerOptions,
    ) -> Result<Self, RuntimeError> {
        FollowMachine::new(options.follow)?;
        Ok(Self {
            store,
            supervisor,
            options,
        })
    }

    /// Runs the follower on the current tokio runtime until
    /// [`FollowerHandle::shutdown`]. It ends on its own only if the store
    /// breaks the feed's contract (a bug to stop on, returned by
    /// `shutdown`); a store error is paused on and the step tried again.
    #[must_use = "dropping the handle stops the follower"]
    pub fn spawn(self) -> FollowerHandle {
        let signal = Arc::new(StopSignal::default());
        let (rebuilt_tx, rebuilt) = watch::channel(None);
        let stop = Arc::clone(&signal);
        let task = tokio::spawn(async move { self.run(&stop, &rebuilt_tx).await });
        FollowerHandle {
            signal,
            rebuilt,
            task: Some(task),
        }
    }

    /// The pump.
    async fn run(
        &self,
        stop: &StopSignal,
        rebuilt_tx: &watch::Sender<Option<Rebuilt>>,
    ) -> Result<(), RuntimeError> {
        let started = Instant::now();
        let mut machine = FollowMachine::new(self.options.follow)?;
        let mut flight: JoinSet<Vec<(ExecutionId, bool)>> = JoinSet::new();
        let concurrency = self.options.concurrency.max(1);
        while !stop.is_raised() {
            let action = match machine.poll() {
                FollowPoll::Notice(notice) => {
                    metrics::counter!(NOTICES).increment(1);
                    while flight.len() >= concurrency {
                        settle(&mut machine, flight.join_next().await);
                    }
                    flight.spawn(self.supervise(notice));
                    continue;
                }
                FollowPoll::Act(action) => action,
            };
            let answered = match action {
                FollowAction::ReadHead => match self.store.feed_head().await {
                    Ok(head) => Ok(machine.handle_head(head)?),
                    Err(error) => Err(error),
                },
                FollowAction::ListOpenParks { after, limit } => {
                    match self.store.open_parks(after.as_ref(), limit).await {
                        Ok(ids) => Ok(machine.handle_open_parks(ids)?),
                        Err(error) => Err(error),
                    }
                }
                FollowAction::ReadFeed { after, limit } => {
                    metrics::counter!(FEED_READS).increment(1);
                    match self.store.feed(after, limit).await {
                        Ok(entries) => Ok(machine.handle_feed(entries)?),
                        Err(error) => Err(error),
                    }
                }
                FollowAction::Wait { after } => {
                    // Failures are known before the wait that retries them.
                    while let Some(joined) = flight.join_next().await {
                        settle(&mut machine, Some(joined));
                    }
                    if rebuilt_tx.borrow().is_none() {
                        let watched = machine.rebuild_watched().unwrap_or(0);
                        let report = Rebuilt {
                            elapsed: started.elapsed(),
                            watched,
                        };
                        tracing::info!(
                            elapsed_ms = millis(report.elapsed),
                            watched,
                            cursor = %machine.cursor(),
                            "follower caught up"
                        );
                        rebuilt_tx.send_replace(Some(report));
                    }
                    let woken = tokio::select! {
                        () = stop.notify.notified() => break,
                        woken = self.store.wait_for_feed(after) => woken,
                        () = tokio::time::sleep(self.options.poll_delay()) => Ok(()),
                    };
                    machine.handle_woken()?;
                    woken
                }
                other => {
                    return Err(RuntimeError::Unsupported {
                        machine: "follow",
                        detail: format!("{other:?}"),
                    });
                }
            };
            if let Err(error) = answered {
                self.pause_after(&error, stop).await;
            }
        }
        while let Some(joined) = flight.join_next().await {
            settle(&mut machine, Some(joined));
        }
        Ok(())
    }

    /// Counts and logs a store error, then pauses (shorter if stopped).
    async fn pause_after(&self, error: &StoreError, stop: &StopSignal) {
        metrics::counter!(FOLLOWER_STORE_ERRORS).increment(1);
        tracing::warn!(%error, "the feed could not be read; trying again");
        tokio::select! {
            () = stop.notify.notified() => {}
            () = tokio::time::sleep(self.options.error_pause) => {}
        }
    }

    /// One notice's supervision, as a task: the parents it concerned, each
    /// with whether it failed. A landed resume goes to `on_resumed`.
    fn supervise(
        &self,
        notice: FollowNotice,
    ) -> impl Future<Output = Vec<(ExecutionId, bool)>> + Send + 'static {
        let supervisor = Arc::clone(&self.supervisor);
        let on_resumed = Arc::clone(&self.options.on_resumed);
        async move {
            let answered = match notice {
                FollowNotice::Watch(parent) => {
                    let result = supervisor.watch(&parent).await;
                    vec![(parent, result)]
                }
                FollowNotice::Ended(child) => supervisor.child_ended(&child).await,
                _ => Vec::new(),
            };
            answered
                .into_iter()
                .map(|(parent, result)| {
                    let failed = result.is_err();
                    if let Ok(Supervised::Resumed(resumed)) = result {
                        on_resumed(resumed);
                    }
                    (parent, failed)
                })
                .collect()
        }
    }
}

/// Feeds a finished supervision's failures back to the machine. A
/// supervision task that panicked is resumed here: it is a bug.
fn settle(
    machine: &mut FollowMachine,
    joined: Option<Result<Vec<(ExecutionId, bool)>, tokio::task::JoinError>>,
) {
    match joined {
        Some(Ok(parents)) => {
            for (parent, failed) in parents {
                if failed {
                    machine.handle_failed(parent);
                }
            }
        }
        Some(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Some(Err(_)) | None => {}
    }
}

/// Whole milliseconds of `elapsed`, saturating.
fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// The running follower of a [`Follower::spawn`]. Dropping it asks the
/// follower to stop without waiting for it.
#[derive(Debug)]
pub struct FollowerHandle {
    /// Shared with the loop.
    signal: Arc<StopSignal>,
    /// Set once the follower is first caught up.
    rebuilt: watch::Receiver<Option<Rebuilt>>,
    /// The loop's task; taken by `shutdown`.
    task: Option<JoinHandle<Result<(), RuntimeError>>>,
}

impl FollowerHandle {
    /// Waits until the follower has rebuilt and caught up; `None` if it
    /// ended first.
    pub async fn rebuilt(&mut self) -> Option<Rebuilt> {
        match self.rebuilt.wait_for(Option::is_some).await {
            Ok(rebuilt) => *rebuilt,
            Err(_) => None,
        }
    }

    /// Stops the follower and waits for it: the supervisions in flight
    /// finish, no new step starts. Answers why it ended if it ended on
    /// its own (a store outside the feed's contract); a panic of the loop
    /// is resumed here.
    pub async fn shutdown(mut self) -> Result<(), RuntimeError> {
        self.signal.raise();
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => Ok(()),
        }
    }

    /// Whether the follower has ended (stopped, or stopped on a broken
    /// contract).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for FollowerHandle {
    fn drop(&mut self) {
        self.signal.raise();
    }
}
