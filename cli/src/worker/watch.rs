//! How a worker watches parents through the store, with no queue and no
//! notices: it lists every execution on a fixed beat and acts on what
//! changed since the last listing.
//!
//! - **The first listing is the rebuild**: every execution that has not
//!   ended is watched ([`ChildSupervisor::watch`]), which reads its park,
//!   keeps the edges to its children, and resumes it at once if they have
//!   all ended while no worker was running. A restarted worker starts
//!   here, so nothing a killed worker was about to do is lost.
//! - **Then, each beat**: an execution seen ending since the last listing
//!   is a child that ended ([`ChildSupervisor::child_ended`]): every
//!   parent waiting on it is read again and resumed if its wait is
//!   complete. An execution never seen before is watched.
//! - **A supervision that failed is tried again** (watched) on the next
//!   beat. The supervisor forgets a parent whose supervision failed, so
//!   without this a worker whose store dropped a connection mid-resume
//!   would leave the parent to the other workers.
//! - **The beat is aligned to the wall clock** (a listing at every
//!   multiple of the interval), so every worker of a fleet notices an
//!   ended child in the same instant and they race for the parent: the
//!   race the conditional acquire exists for, on every parent, not by
//!   chance.
//!
//! The supervisions of one beat run up to eight at a time; the beat ends
//! when they all have.
//!
//! A contended resume is not retried here: with re-drive on, the
//! supervisor wrote a re-drive row, and the timer services carry it on.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use loomfence_core::{ExecutionId, MAX_PAGE_LIMIT};
use loomfence_runtime::{ChildSupervisor, Supervised, SupervisorError};
use loomfence_store::{EventStore, StoreError};
use tokio::task::{JoinError, JoinSet};

use super::bodies::Bodies;

/// Supervisions that answered with an error (each also went to the
/// supervisor's `on_error`, which logs it).
const SUPERVISION_ERRORS: &str = "loomfence_worker_supervision_errors_total";
/// Listings of the store.
const SCANS: &str = "loomfence_worker_scans_total";
/// Supervisions a beat runs at once: enough to keep a pool of 8
/// connections busy, since each one is a few reads in a row.
const CONCURRENCY: usize = 8;

/// What a worker knows from its last listing.
pub(crate) struct Watcher {
    /// The worker's store.
    store: Arc<dyn EventStore>,
    /// The worker's supervisor.
    supervisor: Arc<ChildSupervisor<dyn EventStore>>,
    /// Where resumed parents' bodies run.
    bodies: Arc<Bodies>,
    /// Every execution listed so far.
    seen: HashSet<ExecutionId>,
    /// Every execution seen ended.
    ended: HashSet<ExecutionId>,
    /// Parents whose supervision failed, watched again next beat.
    retry: HashSet<ExecutionId>,
    /// Whether the first listing (the rebuild) is done.
    rebuilt: bool,
}

impl Watcher {
    /// A watcher that has listed nothing yet: its first beat rebuilds.
    pub(crate) fn new(
        store: Arc<dyn EventStore>,
        supervisor: Arc<ChildSupervisor<dyn EventStore>>,
        bodies: Arc<Bodies>,
    ) -> Self {
        Self {
            store,
            supervisor,
            bodies,
            seen: HashSet::new(),
            ended: HashSet::new(),
            retry: HashSet::new(),
            rebuilt: false,
        }
    }

    /// One beat: lists the store and supervises what changed. A failed
    /// listing is returned (the next beat lists again); failed
    /// supervisions are kept for the next beat.
    pub(crate) async fn beat(&mut self) -> Result<(), StoreError> {
        let began = std::time::Instant::now();
        let listed = list_all(&*self.store).await?;
        metrics::counter!(SCANS).increment(1);
        let mut to_watch: Vec<ExecutionId> = self.retry.drain().collect();
        let mut newly_ended = Vec::new();
        for summary in listed {
            let id = summary.execution_id;
            let is_new = self.seen.insert(id.clone());
            if summary.ended.is_some() {
                if self.ended.insert(id.clone()) && self.rebuilt {
                    newly_ended.push(id);
                }
            } else if is_new {
                to_watch.push(id);
            }
        }
        if !self.rebuilt {
            tracing::info!(
                executions = self.seen.len(),
                open = to_watch.len(),
                "rebuilding from the store"
            );
        }
        let mut tasks = JoinSet::new();
        let work = to_watch
            .into_iter()
            .map(Notice::Watch)
            .chain(newly_ended.into_iter().map(Notice::Ended));
        for notice in work {
            if tasks.len() >= CONCURRENCY
                && let Some(done) = tasks.join_next().await
            {
                self.settle_all(done);
            }
            let supervisor = Arc::clone(&self.supervisor);
            tasks.spawn(async move { notice.supervise(&supervisor).await });
        }
        while let Some(done) = tasks.join_next().await {
            self.settle_all(done);
        }
        if !self.rebuilt {
            tracing::info!(
                elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
                retry = self.retry.len(),
                "rebuilt"
            );
        }
        self.rebuilt = true;
        Ok(())
    }

    /// Settles every parent one supervision task answered. A task that
    /// panicked is logged; its parents wait for the next notice of them
    /// (a child ending, a re-drive row, a deadline, a restart's rebuild).
    fn settle_all(&mut self, done: Result<Supervisions, JoinError>) {
        match done {
            Ok(results) => {
                for (parent, result) in results {
                    self.settle(parent, result);
                }
            }
            Err(error) => tracing::error!(%error, "a supervision task failed"),
        }
    }

    /// Starts the body of a resumed parent; keeps a failed one for the
    /// next beat.
    fn settle(&mut self, parent: ExecutionId, result: Result<Supervised, SupervisorError>) {
        match result {
            Ok(Supervised::Resumed(resumed)) => self.bodies.start(resumed, "supervisor"),
            Ok(_) => {}
            Err(_) => {
                metrics::counter!(SUPERVISION_ERRORS).increment(1);
                self.retry.insert(parent);
            }
        }
    }
}

/// What one beat hands the supervisor.
enum Notice {
    /// An execution not seen before, or one whose supervision failed.
    Watch(ExecutionId),
    /// An execution seen ending since the last beat.
    Ended(ExecutionId),
}

/// What the supervisor answered for one notice, per parent.
type Supervisions = Vec<(ExecutionId, Result<Supervised, SupervisorError>)>;

impl Notice {
    /// Hands the notice to `supervisor`.
    async fn supervise(self, supervisor: &ChildSupervisor<dyn EventStore>) -> Supervisions {
        match self {
            Notice::Watch(parent) => {
                let result = supervisor.watch(&parent).await;
                vec![(parent, result)]
            }
            Notice::Ended(child) => supervisor.child_ended(&child).await,
        }
    }
}

/// Every execution of `store`, page by page.
async fn list_all(
    store: &dyn EventStore,
) -> Result<Vec<loomfence_core::ExecutionSummary>, StoreError> {
    let mut all = Vec::new();
    loop {
        let page = store
            .list_executions(
                all.last()
                    .map(|s: &loomfence_core::ExecutionSummary| &s.execution_id),
                MAX_PAGE_LIMIT,
            )
            .await?;
        if page.is_empty() {
            return Ok(all);
        }
        all.extend(page);
    }
}

/// How long until the next multiple of `interval` on the wall clock
/// (`now_ms` in ms since the epoch): every worker's beat falls at once.
pub(crate) fn until_next_beat(now_ms: i64, interval: Duration) -> Duration {
    let interval_ms = i64::try_from(interval.as_millis())
        .unwrap_or(i64::MAX)
        .max(1);
    let wait = interval_ms - now_ms.rem_euclid(interval_ms);
    Duration::from_millis(u64::try_from(wait).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_fall_on_multiples_of_the_interval() {
        let beat = Duration::from_millis(200);
        assert_eq!(
            until_next_beat(1_000, beat),
            beat,
            "on a beat: the next one"
        );
        assert_eq!(until_next_beat(1_050, beat), Duration::from_millis(150));
        assert_eq!(until_next_beat(1_199, beat), Duration::from_millis(1));
        assert_eq!(until_next_beat(-50, beat), Duration::from_millis(50));
        assert_eq!(until_next_beat(7, Duration::ZERO), Duration::from_millis(1));
    }
}
