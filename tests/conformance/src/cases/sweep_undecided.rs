//! The retention sweep on data it cannot judge: each such child is kept,
//! named in the report with a reason, and the sweep goes on to the rest;
//! and a sweep asked to archive with nowhere to archive is refused.

use std::sync::Arc;

use loomfence_core::{
    ExecutionId, InputError, KernelKind, NewEvent,
    park::Wait,
    retention::{SweepOptions, SweepReport, UndecidedReason},
};
use loomfence_runtime::{RuntimeError, Sweep};
use loomfence_store::EventStore;
use serde_json::json;

use crate::Store;
use crate::cases::sweep::{LONG_AGO, Unreadable, exists, finished_child, options, park_on, start};
use crate::support::{Around, id, object};

/// A free root that ended long ago, listed after every `ud-a…` id: a sweep
/// that goes on past an undecided child deletes it.
async fn free_root(store: &dyn EventStore) -> ExecutionId {
    let root = id("ud-z-free");
    finished_child(store, &root, None, LONG_AGO).await;
    root
}

/// The report's undecided children as `(child, code, parent)`.
fn undecided(report: &SweepReport) -> Vec<(&str, &str, Option<&str>)> {
    report
        .undecided
        .iter()
        .map(|u| {
            (
                u.execution_id.as_str(),
                u.reason.code(),
                u.reason.parent().map(ExecutionId::as_str),
            )
        })
        .collect()
}

/// A newer node wrote a kernel kind this node does not know after the
/// parent's park. The fence takes it as answering (fail closed there);
/// retention must not, since the parent may still wait on the child: the
/// child is kept and the report says why.
pub async fn an_unknown_kernel_kind_after_the_park_keeps_the_child(store: Store) {
    let (parent, child) = (id("ud-a-kind-parent"), id("ud-a-kind-child"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
    park_on(&*store, &parent, &[Wait::Child(child.clone())]).await;
    store
        .append(
            &parent,
            NewEvent::new("PARK_EXTENDED", 0).with_kernel_stamp(),
        )
        .await
        .expect("appends the newer node's event");
    let root = free_root(&*store).await;
    let report = Sweep::new(&*store, options(10))
        .run()
        .await
        .expect("an unknown kind is an answer, not a failure");
    assert!(exists(&*store, &child).await, "{report:?}");
    assert!(!exists(&*store, &root).await, "{report:?}");
    assert_eq!(
        report.undecided[0].reason,
        UndecidedReason::UnknownKind {
            parent: parent.clone(),
            sequence: 3,
            kind: "PARK_EXTENDED".to_owned()
        }
    );
    assert_eq!(
        undecided(&report),
        [(child.as_str(), "UNKNOWN_KIND", Some(parent.as_str()))]
    );
    assert_eq!((report.deleted, report.pinned.len()), (1, 0));
}

/// A parent whose open park cannot be read keeps its child, and the sweep
/// goes on to delete the other eligible executions of the same run.
pub async fn an_unreadable_park_keeps_the_child_and_the_sweep_goes_on(store: Store) {
    let (parent, child) = (id("ud-a-park-parent"), id("ud-a-park-child"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
    store
        .append(
            &parent,
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
                .with_payload(object(json!({ "waits": "all of them" }))),
        )
        .await
        .expect("parks");
    let root = free_root(&*store).await;
    let report = Sweep::new(&*store, options(1))
        .run()
        .await
        .expect("an unreadable park is an answer, not a failure");
    assert!(exists(&*store, &child).await, "{report:?}");
    assert!(!exists(&*store, &root).await, "{report:?}");
    assert_eq!(
        undecided(&report),
        [(child.as_str(), "INVALID_PARK", Some(parent.as_str()))]
    );
    assert!(
        report.undecided[0].reason.to_string().contains("waits"),
        "{report:?}"
    );
    assert_eq!(report.deleted, 1);
}

/// A child whose recorded parent is corrupt is kept, and the sweep goes on.
pub async fn a_corrupt_recorded_parent_keeps_the_child_and_the_sweep_goes_on(store: Store) {
    let child = id("ud-a-lineage-child");
    store
        .append_many(
            &child,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 0)
                    .with_payload(object(json!({ "parent": 42 }))),
                NewEvent::kernel(KernelKind::ExecutionCompleted, LONG_AGO),
            ],
        )
        .await
        .expect("runs the child");
    let root = free_root(&*store).await;
    let report = Sweep::new(&*store, options(10))
        .run()
        .await
        .expect("a corrupt lineage is an answer, not a failure");
    assert!(exists(&*store, &child).await, "{report:?}");
    assert!(!exists(&*store, &root).await, "{report:?}");
    assert_eq!(
        undecided(&report),
        [(child.as_str(), "INVALID_LINEAGE", None)]
    );
    assert_eq!(report.deleted, 1);
}

/// A parent, or a child's own log, that the store cannot read for good (a
/// non-retryable backend error) keeps the child and the sweep goes on.
pub async fn a_log_or_parent_the_store_cannot_read_keeps_the_child(store: Store) {
    let (parent, child) = (id("ud-a-read-parent"), id("ud-a-read-child"));
    start(&*store, &parent).await;
    finished_child(&*store, &child, Some(&parent), LONG_AGO).await;
    let root = free_root(&*store).await;
    let failing = Around {
        inner: Arc::clone(&store),
        hooks: Unreadable {
            id: parent.clone(),
            retryable: false,
        },
    };
    let report = Sweep::new(&failing, options(10))
        .run()
        .await
        .expect("an unreadable parent is an answer, not a failure");
    assert!(exists(&*store, &child).await, "{report:?}");
    assert!(!exists(&*store, &root).await, "{report:?}");
    assert_eq!(
        undecided(&report),
        [(child.as_str(), "UNREADABLE_PARENT", Some(parent.as_str()))]
    );
    assert!(
        report.undecided[0]
            .reason
            .to_string()
            .contains("cannot be decoded"),
        "{report:?}"
    );

    let root = free_root(&*store).await;
    let failing = Around {
        inner: Arc::clone(&store),
        hooks: Unreadable {
            id: child.clone(),
            retryable: false,
        },
    };
    let report = Sweep::new(&failing, options(10))
        .run()
        .await
        .expect("an unreadable log is an answer, not a failure");
    assert!(exists(&*store, &child).await, "{report:?}");
    assert!(!exists(&*store, &root).await, "{report:?}");
    assert_eq!(
        undecided(&report),
        [(child.as_str(), "UNREADABLE_LOG", None)]
    );
}

/// `archive: true` with no sink is refused before anything is listed or
/// deleted, dry runs included: it must never delete with no archive.
pub async fn archiving_without_a_sink_is_refused(store: Store) {
    let root = free_root(&*store).await;
    for dry_run in [false, true] {
        let result = Sweep::new(
            &*store,
            SweepOptions {
                archive: true,
                dry_run,
                ..options(10)
            },
        )
        .run()
        .await;
        match result {
            Err(RuntimeError::Sweep { report, source })
                if matches!(*source, RuntimeError::Input(InputError::ArchiveWithoutSink)) =>
            {
                assert_eq!(
                    (report.pages, report.examined, report.dry_run),
                    (0, 0, dry_run),
                    "nothing was listed"
                );
            }
            other => panic!("dry_run {dry_run}: expected ArchiveWithoutSink, got {other:?}"),
        }
        assert!(exists(&*store, &root).await, "dry_run {dry_run}");
    }
}
