//! The retention sweep, end to end over each store: who is pinned, who is
//! deleted, what is read, and that a store failure that may pass stops it
//! with the log kept. What it cannot judge is in `sweep_undecided.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{
    Envelope, ExecutionId, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
    retention::{DeleteIf, GuardedDelete, Pinned, SweepOptions, SweepReport},
};
use loomfence_runtime::{
    ChildSupervisor, RuntimeError, Sweep, retention::ArchiveSink, supervise::Supervised,
    supervise::SupervisorOptions,
};
use loomfence_store::{BackendError, EventStore, StoreError};
use serde_json::json;

use crate::Store;
use crate::mixed::{Expected, Mixed};
use crate::support::{Around, id, object};
use loomfence_store::forwarding::Hooks;

/// When the kit's old executions ended.
pub const LONG_AGO: i64 = 1_000;
/// When the kit's young executions ended.
pub const RECENTLY: i64 = 9_000;
/// The cutoff the kit sweeps with: old is before it, young after.
pub const CUTOFF: i64 = 5_000;

/// Sweep options with the kit's cutoff and a page size of `page_limit`.
#[must_use]
pub fn options(page_limit: u32) -> SweepOptions {
    SweepOptions {
        ended_before: CUTOFF,
        page_limit,
        archive: false,
        dry_run: false,
    }
}

/// Runs one sweep with the kit's cutoff; fails the case on an error.
pub async fn sweep(store: &dyn EventStore, page_limit: u32) -> SweepReport {
    Sweep::new(store, options(page_limit))
        .run()
        .await
        .expect("the sweep runs to the end")
}

/// Starts `parent`, running.
pub async fn start(store: &dyn EventStore, parent: &ExecutionId) {
    store
        .append(parent, NewEvent::kernel(KernelKind::ExecutionStarted, 0))
        .await
        .expect("starts");
}

/// A child of `parent` (recorded in its start, unless `parent` is `None`)
/// that ended at `ended`.
pub async fn finished_child(
    store: &dyn EventStore,
    child: &ExecutionId,
    parent: Option<&ExecutionId>,
    ended: i64,
) {
    let start = parent.map_or_else(
        || NewEvent::kernel(KernelKind::ExecutionStarted, 0),
        |parent| started_child(parent, 0),
    );
    store
        .append_many(
            child,
            vec![
                start,
                NewEvent::kernel(KernelKind::ExecutionCompleted, ended)
                    .with_payload(object(json!({ "total": 42 }))),
            ],
        )
        .await
        .expect("runs the child");
}

/// Parks `parent` on `waits`.
pub async fn park_on(store: &dyn EventStore, parent: &ExecutionId, waits: &[Wait]) {
    store
        .append(
            parent,
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0).with_payload(park_payload(waits)),
        )
        .await
        .expect("parks");
}

/// Whether `id` still has its log.
pub async fn exists(store: &dyn EventStore, id: &ExecutionId) -> bool {
    !store
        .read_range(id, 1, None)
        .await
        .expect("reads")
        .is_empty()
}

/// A finished child is pinned (kept, reported, its parent read) while its
/// parent is parked on it by its own key, and the parked parent itself is
/// not eligible.
pub async fn a_child_is_pinned_while_its_parent_is_parked_on_it(store: Store) {
    let (parent, child) = (id("pin-parent"), id("pin-child"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
    park_on(&*store, &parent, &[Wait::Child(child.clone())]).await;
    let report = sweep(&*store, 10).await;
    assert_eq!(
        report.pinned,
        vec![Pinned {
            child: child.clone(),
            parent: parent.clone()
        }]
    );
    assert_eq!(
        (
            report.examined,
            report.eligible,
            report.deleted,
            report.parent_reads
        ),
        (2, 1, 0, 1)
    );
    assert!(exists(&*store, &child).await);
}

/// Once the parent's park is answered the child is no longer pinned, and
/// once the parent has ended (long enough ago) both go.
pub async fn a_child_is_deleted_once_its_parent_is_answered_or_ended(store: Store) {
    let (parent, child) = (id("ans-parent"), id("ans-child"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
    park_on(&*store, &parent, &[Wait::Child(child.clone())]).await;
    store
        .append(&parent, NewEvent::kernel(KernelKind::ExecutionResumed, 0))
        .await
        .expect("resumes");
    let report = sweep(&*store, 10).await;
    assert!(report.pinned.is_empty(), "{report:?}");
    assert_eq!(report.deleted, 1);
    assert!(!exists(&*store, &child).await);

    let (ended, late) = (id("end-parent"), id("end-child"));
    start(&*store, &ended).await;
    finished_child(&*store, &late, Some(&ended), LONG_AGO).await;
    park_on(&*store, &ended, &[Wait::Child(late.clone())]).await;
    store
        .append(
            &ended,
            NewEvent::kernel(KernelKind::ExecutionCancelled, LONG_AGO),
        )
        .await
        .expect("ends");
    let report = sweep(&*store, 1).await;
    assert!(report.pinned.is_empty(), "{report:?}");
    assert_eq!(report.deleted, 2, "the ended parent and its child");
    assert!(!exists(&*store, &late).await && !exists(&*store, &ended).await);
    assert!(
        exists(&*store, &parent).await,
        "the answered parent runs on"
    );
}

/// A member of a group the parent is parked on is pinned even while the
/// group is incomplete; a finished child of the same parent that the park
/// does not name (another key) is not.
pub async fn group_members_are_pinned_and_other_keys_are_not(store: Store) {
    let parent = id("grp-parent");
    let (a, b, other) = (id("grp-a"), id("grp-b"), id("grp-other"));
    start(&*store, &parent).await;
    finished_child(&*store, &a, Some(&parent), LONG_AGO).await;
    start(&*store, &b).await;
    finished_child(&*store, &other, Some(&parent), LONG_AGO).await;
    park_on(
        &*store,
        &parent,
        &[
            Wait::Group(vec![a.clone(), b.clone()]),
            Wait::Timer { wake_at: 99_000 },
        ],
    )
    .await;
    let report = sweep(&*store, 2).await;
    assert_eq!(
        report.pinned,
        vec![Pinned {
            child: a.clone(),
            parent: parent.clone()
        }]
    );
    assert_eq!(report.deleted, 1);
    assert!(exists(&*store, &a).await && exists(&*store, &b).await);
    assert!(!exists(&*store, &other).await);
}

/// Only executions that ended before the cutoff are eligible, and only
/// those are read: running and young ones cost nothing beyond the listing,
/// and a child with no parent is deleted without reading anyone else.
pub async fn only_old_ended_executions_are_read_and_a_root_is_deleted(store: Store) {
    let (root, young, running) = (id("root"), id("young"), id("running"));
    finished_child(&*store, &root, None, LONG_AGO).await;
    finished_child(&*store, &young, None, RECENTLY).await;
    start(&*store, &running).await;
    let report = sweep(&*store, 10).await;
    assert_eq!(
        (
            report.examined,
            report.eligible,
            report.skipped(),
            report.log_reads,
            report.parent_reads,
            report.deleted,
        ),
        (3, 1, 2, 1, 0, 1)
    );
    assert!(!exists(&*store, &root).await);
    assert!(exists(&*store, &young).await && exists(&*store, &running).await);
}

/// A child whose log has no `payload.parent` (written before the field)
/// is only protected through a supervisor's edges. The parent waits on a
/// group: the old child has ended, its sibling runs. Without edges the
/// sweep would delete the child (a dry run shows it); a supervisor rebuilt
/// after a restart, from the parents' logs alone, pins it.
pub async fn a_log_without_the_edge_is_pinned_through_a_rebuilt_supervisor(store: Store) {
    let parent = id("old-parent");
    let (child, sibling) = (id("old-child"), id("old-sibling"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, None, LONG_AGO).await;
    start(&*store, &sibling).await;
    park_on(
        &*store,
        &parent,
        &[Wait::Group(vec![child.clone(), sibling.clone()])],
    )
    .await;
    let blind = Sweep::new(
        &*store,
        SweepOptions {
            dry_run: true,
            ..options(10)
        },
    )
    .run()
    .await
    .expect("runs");
    assert_eq!(
        (blind.deleted, blind.pinned.len()),
        (1, 0),
        "without edges the child looks free"
    );
    let restarted = ChildSupervisor::new(Arc::clone(&store), SupervisorOptions::default());
    let rebuilt = restarted.rebuild([parent.clone()]).await;
    assert!(
        matches!(rebuilt.as_slice(), [(_, Ok(Supervised::Waiting))]),
        "{rebuilt:?}"
    );
    let report = Sweep::new(&*store, options(10))
        .supervisor(&restarted)
        .run()
        .await
        .expect("runs");
    assert_eq!(
        report.pinned,
        vec![Pinned {
            child: child.clone(),
            parent: parent.clone()
        }],
        "{report:?}"
    );
    assert_eq!(report.deleted, 0);
    assert!(exists(&*store, &child).await);
}

/// Fails reads of one execution: `retryable` as a backend that lost its
/// connection does, or for good as one that cannot decode a stored row.
pub(crate) struct Unreadable {
    /// The execution whose reads fail.
    pub id: ExecutionId,
    /// Whether the backend error says the read may pass if tried again.
    pub retryable: bool,
}

#[async_trait]
impl Hooks for Unreadable {
    async fn read_logs(
        &self,
        inner: &dyn EventStore,
        ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        crate::support::read_logs_through(self, inner, ids).await
    }

    async fn read_range(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if id == &self.id {
            return Err(StoreError::Backend(if self.retryable {
                BackendError::retryable("connection reset while reading the parent")
            } else {
                BackendError::permanent("a stored event cannot be decoded")
            }));
        }
        inner.read_range(id, from_seq, to_seq).await
    }
}

/// A parent that cannot be read stops the sweep with the store's error and
/// the partial report; the child is not deleted. "No such log" is not a
/// failure: a child whose recorded parent is gone is free.
pub async fn a_parent_that_cannot_be_read_stops_the_sweep(store: Store) {
    let (parent, child) = (id("unread-parent"), id("unread-child"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
    let failing = Around {
        inner: Arc::clone(&store),
        hooks: Unreadable {
            id: parent.clone(),
            retryable: true,
        },
    };
    match Sweep::new(&failing, options(10)).run().await {
        Err(RuntimeError::Sweep { report, source })
            if matches!(*source, RuntimeError::Store(_)) =>
        {
            assert!(source.is_retryable(), "{source}");
            assert_eq!((report.eligible, report.deleted), (1, 0));
        }
        other => panic!("expected the store's error, got {other:?}"),
    }
    assert!(exists(&*store, &child).await);

    let orphan = id("unread-orphan");
    finished_child(&*store, &orphan, Some(&id("never-written")), LONG_AGO).await;
    let report = sweep(&*store, 10).await;
    assert!(!exists(&*store, &orphan).await, "{report:?}");
}

/// A dry run reads what deciding needs and changes nothing; `deleted`
/// counts what a real run would delete.
pub async fn a_dry_run_changes_nothing(store: Store) {
    let parent = id("dry-parent");
    start(&*store, &parent).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let child = id(&format!("dry-child-{n}"));
        finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
        ids.push(child);
    }
    park_on(&*store, &parent, &[Wait::Child(ids[0].clone())]).await;
    ids.push(parent.clone());
    let mut before = BTreeMap::new();
    for id in &ids {
        before.insert(
            id.clone(),
            store.read_range(id, 1, None).await.expect("reads"),
        );
    }
    let report = Sweep::new(
        &*store,
        SweepOptions {
            dry_run: true,
            ..options(2)
        },
    )
    .run()
    .await
    .expect("runs");
    assert!(report.dry_run);
    assert_eq!((report.deleted, report.pinned.len()), (4, 1));
    for (id, events) in before {
        assert_eq!(store.read_range(&id, 1, None).await.expect("reads"), events);
    }
}

/// Records what it archives, checking each log is still in the store when
/// it arrives.
struct Recorder {
    /// The store the sweep deletes from.
    store: Store,
    /// What was archived.
    archived: std::sync::Mutex<Vec<(ExecutionId, Vec<Envelope>)>>,
}

#[async_trait]
impl ArchiveSink for Recorder {
    async fn archive(
        &self,
        execution_id: &ExecutionId,
        events: &[Envelope],
    ) -> Result<(), RuntimeError> {
        let stored = self
            .store
            .read_range(execution_id, 1, None)
            .await
            .map_err(|e| RuntimeError::Host(Box::new(e)))?;
        assert_eq!(stored, events, "archived before the delete, as stored");
        self.archived
            .lock()
            .expect("not poisoned")
            .push((execution_id.clone(), events.to_vec()));
        Ok(())
    }
}

/// Every deleted log reaches the archive first, whole; pinned ones do not.
pub async fn the_archive_gets_each_log_before_its_delete(store: Store) {
    let parent = id("arc-parent");
    start(&*store, &parent).await;
    for n in 0..4 {
        finished_child(
            &*store,
            &id(&format!("arc-child-{n}")),
            Some(&parent),
            LONG_AGO,
        )
        .await;
    }
    park_on(&*store, &parent, &[Wait::Child(id("arc-child-3"))]).await;
    let recorder = Recorder {
        store: Arc::clone(&store),
        archived: std::sync::Mutex::default(),
    };
    let report = Sweep::new(&*store, options(3))
        .archive(&recorder)
        .run()
        .await
        .expect("runs");
    assert_eq!((report.archived, report.deleted), (3, 3));
    let archived = recorder.archived.into_inner().expect("not poisoned");
    let names: Vec<&str> = archived.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(names, ["arc-child-0", "arc-child-1", "arc-child-2"]);
    assert!(archived.iter().all(|(_, events)| events.len() == 2));
}

/// Parks the parent on the child at the last moment: when the batch of
/// deletes holding the child reaches the store, after the sweep's pin
/// check. With `unguarded`, the deletes then ignore their guards, as a
/// sweep with a plain delete would.
pub struct ParksInTheWindow {
    /// The parent that parks.
    pub parent: ExecutionId,
    /// The child it parks on.
    pub child: ExecutionId,
    /// Whether the deletes ignore their guards (the negative control).
    pub unguarded: bool,
}

#[async_trait]
impl Hooks for ParksInTheWindow {
    async fn delete_executions_if(
        &self,
        inner: &dyn EventStore,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        if batch.iter().any(|entry| entry.execution_id == self.child) {
            park_on(inner, &self.parent, &[Wait::Child(self.child.clone())]).await;
        }
        if self.unguarded {
            for entry in batch {
                inner.delete_execution(&entry.execution_id).await?;
            }
            return Ok(vec![GuardedDelete::Deleted; batch.len()]);
        }
        inner.delete_executions_if(batch).await
    }
}

/// The window between the pin check and the delete: a parent that parks on
/// the child in it keeps the child (the guarded delete is refused and
/// reported), its supervisor then resumes it with the child's outcome, and
/// the next sweep deletes the child. The same run with the guard ignored
/// (the negative control) deletes the child under the parked parent, whose
/// supervisor then waits forever.
pub async fn a_parent_parking_in_the_window_keeps_the_child(store: Store) {
    for unguarded in [false, true] {
        let suffix = if unguarded { "unguarded" } else { "guarded" };
        let (parent, child) = (
            id(&format!("win-parent-{suffix}")),
            id(&format!("win-child-{suffix}")),
        );
        start(&*store, &parent).await;
        finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
        let racing = Around {
            inner: Arc::clone(&store),
            hooks: ParksInTheWindow {
                parent: parent.clone(),
                child: child.clone(),
                unguarded,
            },
        };
        let report = Sweep::new(&racing, options(10)).run().await.expect("runs");
        let supervisor = ChildSupervisor::new(Arc::clone(&store), SupervisorOptions::default());
        let supervised = supervisor.watch(&parent).await.expect("supervises");
        if unguarded {
            assert_eq!(report.deleted, 1);
            assert_eq!(
                supervised,
                Supervised::Waiting,
                "the control: the parent waits on a child that is gone"
            );
            continue;
        }
        assert_eq!(report.deleted, 0, "{report:?}");
        assert_eq!(report.kept.len(), 1, "{report:?}");
        assert_eq!(
            report.kept[0].refusal,
            GuardedDelete::ParentMoved {
                parent: parent.clone()
            }
        );
        let Supervised::Resumed(resumed) = supervised else {
            panic!("the parent is resumed from the kept child: {supervised:?}");
        };
        let answer = store
            .read_range(&parent, resumed.view.head, None)
            .await
            .expect("reads");
        assert_eq!(
            answer[0].payload["answer"]["children"][child.as_str()]["output"],
            json!({ "total": 42 })
        );
        let next = sweep(&*store, 10).await;
        assert_eq!(next.deleted, 1, "{next:?}");
        assert!(!exists(&*store, &child).await);
    }
}

/// How many executions [`ten_thousand_executions_are_read_only_as_needed`]
/// writes.
pub const MANY: u32 = 10_000;

/// 10,000 executions of mixed shapes ([`crate::mixed`]), swept in pages
/// of 1,000: everything is examined once, only the eligible ones' logs are
/// read (one read each), parents are read only for eligible children, and
/// exactly the old unpinned ones are deleted. The counts are the proof
/// that the pin is consulted only for eligible executions; the speed is
/// the bench's (`loomfence bench --workload retention`, same shapes).
pub async fn ten_thousand_executions_are_read_only_as_needed(store: Store) {
    let mixed = Mixed {
        old: LONG_AGO,
        young: RECENTLY,
        running_parent: id("many-running-parent"),
    };
    store
        .append(&mixed.running_parent, mixed.running_parent_start())
        .await
        .expect("starts");
    let mut writers = tokio::task::JoinSet::new();
    for lane in 0..8 {
        let (store, mixed) = (Arc::clone(&store), mixed.clone());
        writers.spawn(async move {
            for n in (lane..MANY).step_by(8) {
                let events = mixed
                    .events(n, |n| ExecutionId::new(format!("many-{n:05}")))
                    .expect("valid ids");
                store
                    .append_many(&id(&format!("many-{n:05}")), events)
                    .await
                    .expect("appends");
            }
        });
    }
    while let Some(written) = writers.join_next().await {
        written.expect("a writer task");
    }
    let expected = Expected::of(MANY, 1_000);
    let report = sweep(&*store, 1_000).await;
    assert_eq!(report.examined, expected.examined);
    assert_eq!(report.eligible, expected.eligible);
    assert_eq!(
        report.log_reads, expected.eligible,
        "one read per eligible execution"
    );
    assert_eq!(
        report.parent_reads, expected.parent_reads,
        "parents read only for eligible children, each once per page"
    );
    assert_eq!(
        report.delete_batches,
        2 * u64::from(MANY / 1_000),
        "500 deletes a page with their one running parent: two batches of at most 256 locks"
    );
    assert_eq!(report.pinned.len() as u64, expected.pinned);
    assert_eq!(report.deleted, expected.deleted);
    assert!(report.kept.is_empty());
    let left = store
        .list_executions(None, loomfence_core::retention::MAX_PAGE_LIMIT)
        .await
        .expect("lists");
    assert_eq!(left.len() as u64, expected.examined - report.deleted);
}
