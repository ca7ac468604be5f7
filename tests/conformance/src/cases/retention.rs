//! What retention needs of a store: a paged listing that reports each
//! execution's head and end, and the guarded delete that closes the window
//! between a sweep's pin check and its delete.

use std::collections::BTreeSet;

use loomfence_core::{
    ExecutionId, InputError, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
    retention::{
        DeleteGuard, Ended, ExecutionSummary, GuardedDelete, MAX_GUARD_PARENTS, MAX_PAGE_LIMIT,
        ParentMark, ended_of,
    },
};

use loomfence_store::EventStore;

use crate::Store;
use crate::support::{AT, Witness, event, expect_input, id, kernel};

/// The ids the listing cases write: prefixes of each other, separators,
/// digits that sort differently as numbers, and non-ASCII, so an adapter
/// whose cursor or order is off by one skips or repeats one of them.
const IDS: &[&str] = &[
    "a", "a-1", "a-10", "a-2", "a/b", "a/b/c", "b", "order 7", "zz", "~", "é", "ü-9", "日本",
];

/// Every page of the listing, with `limit` per page, until the empty page
/// (at most 100 pages), each checked to hold at most `limit` executions
/// and not to repeat its cursor. Adapters' own listing tests page with it.
pub async fn pages(store: &dyn EventStore, limit: u32) -> Vec<Vec<ExecutionSummary>> {
    let mut pages = Vec::new();
    let mut after: Option<ExecutionId> = None;
    loop {
        let page = store
            .list_executions(after.as_ref(), limit)
            .await
            .expect("lists");
        assert!(
            page.len() <= limit as usize,
            "a page of {} with limit {limit}",
            page.len()
        );
        if let Some(cursor) = &after {
            assert!(
                page.iter().all(|s| &s.execution_id != cursor),
                "the page after {cursor:?} lists it again"
            );
        }
        let Some(last) = page.last() else {
            return pages;
        };
        after = Some(last.execution_id.clone());
        pages.push(page);
        assert!(pages.len() <= 100, "the listing never ends");
    }
}

/// The summary a listing must give for `id`, from the log itself.
async fn expected_summary(store: &Store, id: &ExecutionId) -> ExecutionSummary {
    let events = store.read_range(id, 1, None).await.expect("reads");
    ExecutionSummary {
        execution_id: id.clone(),
        head: events
            .last()
            .expect("a listed execution has a log")
            .sequence,
        ended: ended_of(&events),
    }
}

/// Paging with any limit lists every execution that has a log exactly once,
/// in the same order every time, with the head and end its log shows.
pub async fn listing_pages_through_every_execution_once(store: Store) {
    for (n, text) in IDS.iter().enumerate() {
        let id = id(text);
        let mut batch = vec![kernel(KernelKind::ExecutionStarted)];
        batch.extend((0..n % 3).map(|_| event("app.step")));
        if n % 2 == 0 {
            batch.push(NewEvent::kernel(
                KernelKind::ExecutionCompleted,
                AT + i64::try_from(n).expect("small"),
            ));
        }
        store.append_many(&id, batch).await.expect("appends");
    }
    let mut reference: Option<Vec<ExecutionId>> = None;
    for limit in [1, 2, 3, 5, 13, 100, MAX_PAGE_LIMIT] {
        let listed: Vec<ExecutionSummary> = pages(&*store, limit).await.concat();
        let order: Vec<ExecutionId> = listed.iter().map(|s| s.execution_id.clone()).collect();
        let unique: BTreeSet<&ExecutionId> = order.iter().collect();
        assert_eq!(unique.len(), order.len(), "limit {limit} repeats an id");
        let expected: BTreeSet<ExecutionId> = IDS.iter().map(|t| id(t)).collect();
        assert_eq!(
            unique.into_iter().cloned().collect::<BTreeSet<_>>(),
            expected,
            "limit {limit} does not list every execution"
        );
        match &reference {
            None => reference = Some(order),
            Some(first) => assert_eq!(&order, first, "limit {limit} lists in another order"),
        }
        for summary in listed {
            assert_eq!(
                summary,
                expected_summary(&store, &summary.execution_id).await,
                "limit {limit}"
            );
        }
    }
}

/// The end is the first terminal event: later events, terminal or not, do
/// not move it, an unknown kind stamped `kernel` does not end anything, and
/// `EXECUTION_CONTINUED` ends like the others.
pub async fn listing_reports_the_first_terminal_event(store: Store) {
    let done = id("ended-twice");
    store
        .append_many(
            &done,
            vec![
                kernel(KernelKind::ExecutionStarted),
                event("app.step"),
                NewEvent::kernel(KernelKind::ExecutionCompleted, 500),
                NewEvent::new("app.audit", 900),
                NewEvent::kernel(KernelKind::ExecutionFailed, 1_000),
            ],
        )
        .await
        .expect("appends");
    let stamped = id("stamped-only");
    store
        .append_many(
            &stamped,
            vec![
                kernel(KernelKind::ExecutionStarted),
                NewEvent::new("EXECUTION_ARCHIVED_V9", 600).with_kernel_stamp(),
            ],
        )
        .await
        .expect("appends");
    let continued = id("continued");
    store
        .append_many(
            &continued,
            vec![
                kernel(KernelKind::ExecutionStarted),
                NewEvent::kernel(KernelKind::ExecutionContinued, 700),
            ],
        )
        .await
        .expect("appends");
    let listed = store.list_executions(None, 10).await.expect("lists");
    let find = |wanted: &ExecutionId| {
        listed
            .iter()
            .find(|s| &s.execution_id == wanted)
            .unwrap_or_else(|| panic!("{wanted:?} is not listed"))
            .clone()
    };
    assert_eq!(
        find(&done),
        ExecutionSummary {
            execution_id: done.clone(),
            head: 5,
            ended: Some(Ended {
                sequence: 3,
                at: 500
            }),
        }
    );
    assert_eq!(find(&stamped).ended, None);
    assert_eq!(
        find(&continued).ended,
        Some(Ended {
            sequence: 2,
            at: 700
        })
    );
}

/// Only executions with a log are listed: not one whose log was deleted,
/// even though a real token outlives the delete, and not one that only
/// ever had a token.
pub async fn listing_leaves_out_executions_without_a_log(store: Store) {
    let deleted = id("deleted-fenced");
    store
        .append(&deleted, kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    if store.capability().fences() {
        store.acquire_fence(&deleted).await.expect("acquires");
        store
            .acquire_fence(&id("token-only"))
            .await
            .expect("acquires");
    }
    assert!(store.delete_execution(&deleted).await.expect("deletes"));
    let kept = id("kept");
    store
        .append(&kept, kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    let listed = store.list_executions(None, 10).await.expect("lists");
    assert_eq!(
        listed.iter().map(|s| &s.execution_id).collect::<Vec<_>>(),
        vec![&kept]
    );
    assert!(
        store
            .list_executions(Some(&kept), 10)
            .await
            .expect("lists")
            .is_empty()
    );
}

/// A limit of 0 or above [`MAX_PAGE_LIMIT`] is a typed input error.
pub async fn listing_limits_are_checked(store: Store) {
    store
        .append(&id("one"), kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    for limit in [0, MAX_PAGE_LIMIT + 1, u32::MAX] {
        let error = expect_input(store.list_executions(None, limit).await, "limit");
        assert!(
            matches!(error, InputError::Limit { what: "limit", .. }),
            "limit {limit}: {error:?}"
        );
    }
}

/// A finished child `child` of `parent`, and `parent` running: what a
/// retention sweep finds eligible. Returns the child's head and the
/// parent's. Adapters' own retention tests start from it too.
pub async fn family(
    store: &dyn EventStore,
    parent: &ExecutionId,
    child: &ExecutionId,
) -> (u64, u64) {
    let parent_head = store
        .append_many(
            parent,
            vec![kernel(KernelKind::ExecutionStarted), event("app.step")],
        )
        .await
        .expect("starts the parent")
        .len() as u64;
    let child_head = store
        .append_many(
            child,
            vec![
                started_child(parent, AT),
                kernel(KernelKind::ExecutionCompleted),
            ],
        )
        .await
        .expect("runs the child")
        .len() as u64;
    (child_head, parent_head)
}

/// A guard of a log read at `head` whose parents were read at these
/// heads.
#[must_use]
pub fn guard_of(head: u64, parents: &[(&ExecutionId, u64)]) -> DeleteGuard {
    DeleteGuard {
        head,
        parents: parents
            .iter()
            .map(|(parent, seen)| ParentMark {
                parent: (*parent).clone(),
                seen: *seen,
            })
            .collect(),
    }
}

/// The parent parks on `child` (by its key).
async fn park_on(store: &Store, parent: &ExecutionId, child: &ExecutionId) {
    store
        .append(
            parent,
            kernel(KernelKind::ExecutionSuspended)
                .with_payload(park_payload(&[Wait::Child(child.clone())])),
        )
        .await
        .expect("parks");
}

/// With nothing moved, the guarded delete deletes like a plain one: the log
/// goes, a real token stays, the parent is untouched.
pub async fn a_guarded_delete_deletes_when_nothing_moved(store: Store) {
    let (parent, child) = (id("gd-parent"), id("gd-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    let token = if store.capability().fences() {
        store.acquire_fence(&child).await.expect("acquires")
    } else {
        0
    };
    let parent_before = Witness::capture(&*store, &parent).await;
    let guard = guard_of(head, &[(&parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
    assert!(
        store
            .read_range(&child, 1, None)
            .await
            .expect("reads")
            .is_empty()
    );
    assert_eq!(store.current_fence(&child).await.expect("reads"), token);
    parent_before
        .assert_unchanged(&*store, "a guarded delete of its child")
        .await;
    let no_parents = DeleteGuard {
        head: 1,
        parents: Vec::new(),
    };
    let lone = id("gd-lone");
    store
        .append(&lone, kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    assert_eq!(
        store
            .delete_execution_if(&lone, &no_parents)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
}

/// A log that grew after it was read (an archive of it would miss the new
/// events) or is already gone is not deleted: the answer says its head.
pub async fn a_guarded_delete_refuses_a_log_that_changed(store: Store) {
    let (parent, child) = (id("gc-parent"), id("gc-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    store
        .append(&child, event("app.audit"))
        .await
        .expect("appends");
    let before = Witness::capture(&*store, &child).await;
    let guard = guard_of(head, &[(&parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("answers"),
        GuardedDelete::LogChanged { head: head + 1 }
    );
    before
        .assert_unchanged(&*store, "a refused guarded delete")
        .await;
    assert!(store.delete_execution(&child).await.expect("deletes"));
    let grown = DeleteGuard {
        head: head + 1,
        parents: guard.parents.clone(),
    };
    assert_eq!(
        store
            .delete_execution_if(&child, &grown)
            .await
            .expect("answers"),
        GuardedDelete::LogChanged { head: 0 }
    );
}

/// The window: the parent parks on the child after the pin check read it
/// and before the delete. The delete is refused, naming the parent, and
/// the child's log is intact for the parent's supervisor to answer from.
pub async fn a_guarded_delete_refuses_when_a_parent_parked_after_the_check(store: Store) {
    let (parent, child) = (id("gw-parent"), id("gw-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    let other = id("gw-other-parent");
    store
        .append(&other, kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    park_on(&store, &parent, &child).await;
    let before = Witness::capture(&*store, &child).await;
    let guard = guard_of(head, &[(&other, 1), (&parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("answers"),
        GuardedDelete::ParentMoved {
            parent: parent.clone()
        }
    );
    before
        .assert_unchanged(&*store, "a refused guarded delete")
        .await;
}

/// Any answering event of a parent past what was seen refuses (a resume or
/// an end may precede a new park); its steps and audits do not, and
/// neither does anything at or before `seen`.
pub async fn a_guarded_delete_ignores_a_parents_ignorable_events(store: Store) {
    let (parent, child) = (id("gi-parent"), id("gi-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    store
        .append_many(
            &parent,
            vec![
                event("app.step"),
                kernel(KernelKind::StepCompleted),
                kernel(KernelKind::ExecutionDenied),
            ],
        )
        .await
        .expect("appends");
    let guard = guard_of(head, &[(&parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
    let (ended_parent, late_child) = (id("gi-ended-parent"), id("gi-late-child"));
    let (head, seen) = family(&*store, &ended_parent, &late_child).await;
    store
        .append(&ended_parent, kernel(KernelKind::ExecutionCompleted))
        .await
        .expect("ends");
    let guard = guard_of(head, &[(&ended_parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&late_child, &guard)
            .await
            .expect("answers"),
        GuardedDelete::ParentMoved {
            parent: ended_parent
        },
        "an end is answering: the delete waits for the next sweep"
    );
}

/// A parent whose log is now shorter than what was seen (deleted, perhaps
/// regrown) moved: the log the check judged is gone.
pub async fn a_guarded_delete_refuses_when_a_parents_log_shrank(store: Store) {
    let (parent, child) = (id("gs-parent"), id("gs-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    assert!(store.delete_execution(&parent).await.expect("deletes"));
    store
        .append(&parent, event("app.reborn"))
        .await
        .expect("appends");
    let guard = guard_of(head, &[(&parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("answers"),
        GuardedDelete::ParentMoved { parent }
    );
}

/// A guard with an unsafe number or too many parents is a typed input
/// error, and nothing is deleted.
pub async fn a_guarded_delete_checks_its_guard(store: Store) {
    let (parent, child) = (id("gb-parent"), id("gb-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    let before = Witness::capture(&*store, &child).await;
    let huge = DeleteGuard {
        head: 1 << 53,
        parents: Vec::new(),
    };
    assert!(matches!(
        expect_input(store.delete_execution_if(&child, &huge).await, "head"),
        InputError::OutOfRange { what: "head", .. }
    ));
    let unseen = guard_of(head, &[(&parent, u64::MAX)]);
    assert!(matches!(
        expect_input(store.delete_execution_if(&child, &unseen).await, "seen"),
        InputError::OutOfRange { what: "seen", .. }
    ));
    let crowd = DeleteGuard {
        head,
        parents: (0..=MAX_GUARD_PARENTS)
            .map(|n| ParentMark {
                parent: id(&format!("p{n}")),
                seen,
            })
            .collect(),
    };
    assert!(matches!(
        expect_input(store.delete_execution_if(&child, &crowd).await, "parents"),
        InputError::Limit {
            what: "parents",
            ..
        }
    ));
    before
        .assert_unchanged(&*store, "a refused guarded delete")
        .await;
}
