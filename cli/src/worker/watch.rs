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
//!   beat. A parent whose first read failed is not listed under its
//!   children, so without this a worker whose store dropped a connection
//!   would leave the parent to the other workers (one that failed later
//!   stays listed, and is then also tried again when a child ends).
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

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, stream};
use loomfence_core::ExecutionId;
use loomfence_runtime::{ChildSupervisor, RuntimeError, supervise::Supervised};
use loomfence_store::{EventStore, StoreError};

use super::bodies::Bodies;
use crate::listing::list_all;

/// Supervisions that answered with an error (each also went to the
/// supervisor's `on_error`, which logs it).
const SUPERVISION_ERRORS: &str = "loomfence_worker_supervision_errors_total";
/// Listings of the store.
const SCANS: &str = "loomfence_worker_scans_total";
/// Supervisions a beat runs at once: enough to keep a pool of 8
/// connections busy, since each one is a few reads in a row.
const CONCURRENCY: usize = 8;

/// Whole milliseconds of `elapsed`, saturating.
fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// What a worker knows from its last listing.
pub(crate) struct Watcher {
    /// The worker's store.
    store: Arc<dyn EventStore>,
    /// The worker's supervisor.
    supervisor: Arc<ChildSupervisor<dyn EventStore>>,
    /// Where resumed parents' bodies run.
    bodies: Arc<Bodies>,
    /// Every execution of the last listing.
    seen: HashSet<ExecutionId>,
    /// Every execution of the last listing that had ended.
    ended: HashSet<ExecutionId>,
    /// Parents whose supervision failed, watched again next beat.
    retry: HashSet<ExecutionId>,
    /// Whether the first listing (the rebuild) is done.
    rebuilt: bool,
    /// When the worker started, from which its rebuild is timed.
    started: Instant,
}

impl Watcher {
    /// A watcher that has listed nothing yet: its first beat rebuilds.
    /// `started` is when the worker started: the rebuild's log line says
    /// how long after it the worker was caught up.
    pub(crate) fn new(
        store: Arc<dyn EventStore>,
        supervisor: Arc<ChildSupervisor<dyn EventStore>>,
        bodies: Arc<Bodies>,
        started: Instant,
    ) -> Self {
        Self {
            store,
            supervisor,
            bodies,
            seen: HashSet::new(),
            ended: HashSet::new(),
            retry: HashSet::new(),
            rebuilt: false,
            started,
        }
    }

    /// One beat: lists the store and supervises what changed. A failed
    /// listing is returned (the next beat lists again); failed
    /// supervisions are kept for the next beat.
    pub(crate) async fn beat(&mut self) -> Result<(), StoreError> {
        let began = Instant::now();
        let listed = list_all(&*self.store).await?;
        metrics::counter!(SCANS).increment(1);
        let mut to_watch: BTreeSet<ExecutionId> = self.retry.drain().collect();
        let mut newly_ended = Vec::new();
        // The sets are replaced by this listing's, not added to, so an
        // execution retention deleted is forgotten.
        let (mut seen, mut ended) = (HashSet::with_capacity(listed.len()), HashSet::new());
        for summary in listed {
            let id = summary.execution_id;
            if summary.ended.is_some() {
                if self.rebuilt && !self.ended.contains(&id) {
                    newly_ended.push(id.clone());
                }
                ended.insert(id.clone());
            } else if !self.seen.contains(&id) {
                to_watch.insert(id.clone());
            }
            seen.insert(id);
        }
        (self.seen, self.ended) = (seen, ended);
        if !self.rebuilt {
            tracing::info!(
                executions = self.seen.len(),
                open = to_watch.len(),
                "rebuilding from the store"
            );
        }
        let supervisor = &*self.supervisor;
        let notices = to_watch
            .into_iter()
            .map(Notice::Watch)
            .chain(newly_ended.into_iter().map(Notice::Ended));
        let mut answers = stream::iter(notices)
            .map(|notice| notice.supervise(supervisor))
            .buffer_unordered(CONCURRENCY);
        while let Some(answered) = answers.next().await {
            for (parent, result) in answered {
                settle(&self.bodies, &mut self.retry, parent, result);
            }
        }
        if !self.rebuilt {
            tracing::info!(
                elapsed_ms = millis(began.elapsed()),
                since_start_ms = millis(self.started.elapsed()),
                retry = self.retry.len(),
                "rebuilt"
            );
        }
        self.rebuilt = true;
        Ok(())
    }
}

/// Starts the body of a resumed parent; keeps a failed one in `retry`
/// for the next beat.
fn settle(
    bodies: &Bodies,
    retry: &mut HashSet<ExecutionId>,
    parent: ExecutionId,
    result: Result<Supervised, RuntimeError>,
) {
    match result {
        Ok(Supervised::Resumed(resumed)) => bodies.start(resumed, "supervisor"),
        Ok(_) => {}
        Err(_) => {
            metrics::counter!(SUPERVISION_ERRORS).increment(1);
            retry.insert(parent);
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
type Supervisions = Vec<(ExecutionId, Result<Supervised, RuntimeError>)>;

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
    use std::sync::atomic::{AtomicBool, Ordering};

    use async_trait::async_trait;
    use loomfence_conformance::support::around;
    use loomfence_core::{
        Envelope, KernelKind, NewEvent,
        lineage::started_child,
        park::{Wait, park_payload},
    };
    use loomfence_runtime::supervise::SupervisorOptions;
    use loomfence_store::BackendError;
    use loomfence_store::forwarding::Hooks;

    use super::*;

    /// Fails the first read of `parent` after it is armed, as a dropped
    /// connection does.
    struct DropsARead {
        parent: ExecutionId,
        armed: AtomicBool,
    }

    #[async_trait]
    impl Hooks for DropsARead {
        async fn read_range(
            &self,
            inner: &dyn EventStore,
            id: &ExecutionId,
            from_seq: u64,
            to_seq: Option<u64>,
        ) -> Result<Vec<Envelope>, StoreError> {
            if *id == self.parent && self.armed.swap(false, Ordering::SeqCst) {
                return Err(StoreError::Backend(BackendError::retryable(
                    "connection dropped",
                )));
            }
            inner.read_range(id, from_seq, to_seq).await
        }
    }

    fn id(text: &str) -> ExecutionId {
        ExecutionId::new(text).unwrap()
    }

    /// Parks `parent` on `child`, and ends `child` if `ended`.
    async fn family(store: &dyn EventStore, parent: &str, child: &str, ended: bool) {
        let (parent, child) = (id(parent), id(child));
        store
            .append(&child, started_child(&parent, 1))
            .await
            .unwrap();
        store
            .append_many(
                &parent,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 1)
                        .with_payload(park_payload(&[Wait::Child(child.clone())])),
                ],
            )
            .await
            .unwrap();
        if ended {
            end(store, &child).await;
        }
    }

    async fn end(store: &dyn EventStore, child: &ExecutionId) {
        store
            .append(child, NewEvent::kernel(KernelKind::ExecutionCompleted, 2))
            .await
            .unwrap();
    }

    /// How many resumes and completions `parent`'s log holds.
    async fn resumes_and_completions(store: &dyn EventStore, parent: &str) -> (usize, usize) {
        let log = store.read_range(&id(parent), 1, None).await.unwrap();
        let count = |kind| log.iter().filter(|e| e.kernel_kind() == Some(kind)).count();
        (
            count(KernelKind::ExecutionResumed),
            count(KernelKind::ExecutionCompleted),
        )
    }

    /// One beat, then every body it started run to its end.
    async fn beat(watcher: &mut Watcher, bodies: &Bodies) {
        watcher.beat().await.unwrap();
        assert_eq!(bodies.drain(Duration::from_secs(5)).await, 0, "bodies end");
    }

    #[tokio::test]
    async fn beats_rebuild_notice_ended_children_and_retry_failed_supervisions() {
        let around = Arc::new(around(
            loomfence_core::Capability::Conditional,
            DropsARead {
                parent: id("parent-c"),
                armed: AtomicBool::new(false),
            },
        ));
        let store: Arc<dyn EventStore> = around.clone();
        family(&*store, "parent-a", "child-a", true).await;
        family(&*store, "parent-b", "child-b", false).await;
        family(&*store, "parent-c", "child-c", false).await;
        let supervisor = Arc::new(ChildSupervisor::new(
            Arc::clone(&store),
            SupervisorOptions::default(),
        ));
        let bodies = Bodies::new(Arc::clone(&store), 2, "test".to_owned());
        let mut watcher = Watcher::new(
            Arc::clone(&store),
            supervisor,
            Arc::clone(&bodies),
            Instant::now(),
        );

        // The rebuild resumes the parent whose child ended before it.
        beat(&mut watcher, &bodies).await;
        assert_eq!(resumes_and_completions(&*store, "parent-a").await, (1, 1));
        assert_eq!(resumes_and_completions(&*store, "parent-b").await, (0, 0));

        // A child seen ending is noticed on the next beat; a supervision
        // whose read fails is kept, and done on the beat after.
        end(&*store, &id("child-b")).await;
        end(&*store, &id("child-c")).await;
        around.hooks.armed.store(true, Ordering::SeqCst);
        beat(&mut watcher, &bodies).await;
        assert_eq!(resumes_and_completions(&*store, "parent-b").await, (1, 1));
        assert_eq!(resumes_and_completions(&*store, "parent-c").await, (0, 0));
        assert!(
            !around.hooks.armed.load(Ordering::SeqCst),
            "the read failed"
        );
        beat(&mut watcher, &bodies).await;
        assert_eq!(resumes_and_completions(&*store, "parent-c").await, (1, 1));

        // Further beats resume nothing again.
        beat(&mut watcher, &bodies).await;
        for parent in ["parent-a", "parent-b", "parent-c"] {
            assert_eq!(
                resumes_and_completions(&*store, parent).await,
                (1, 1),
                "{parent}"
            );
        }
    }

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
