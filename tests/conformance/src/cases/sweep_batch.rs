//! The batched calls a sweep makes of a store (a page's logs in one read,
//! guarded deletes in batches), and a sweep whose one page holds every kind
//! of child at once. A store that does not batch answers through the trait's
//! defaults, one execution at a time: the same cases hold for it.

use std::sync::Arc;

use loomfence_core::{
    ExecutionId, InputError, KernelKind,
    park::Wait,
    retention::{DeleteGuard, DeleteIf, GuardedDelete, MAX_DELETE_BATCH, MAX_PAGE_LIMIT, Pinned},
};
use loomfence_runtime::Sweep;

use crate::Store;
use crate::cases::retention::{family, guard_of};
use crate::cases::sweep::{
    LONG_AGO, ParksInTheWindow, exists, finished_child, options, park_on, start,
};
use crate::support::{Around, Witness, event, expect_input, id, kernel};

/// The logs come back one per id, in the order asked, each whole; an id
/// with no log reads as empty, and a batch over the limit is a typed input
/// error.
pub async fn read_logs_answers_each_log_in_the_order_asked(store: Store) {
    let (parent, child) = (id("rl-parent"), id("rl-child"));
    family(&*store, &parent, &child).await;
    let asked = [child.clone(), id("rl-nobody"), parent.clone()];
    let logs = store.read_logs(&asked).await.expect("reads");
    assert_eq!(logs.len(), 3);
    for (id, log) in asked.iter().zip(&logs) {
        assert_eq!(
            log,
            &store.read_range(id, 1, None).await.expect("reads"),
            "{id:?}"
        );
    }
    assert!(logs[1].is_empty(), "no log reads as empty");
    assert!(store.read_logs(&[]).await.expect("reads").is_empty());
    let crowd: Vec<ExecutionId> = (0..=MAX_PAGE_LIMIT)
        .map(|n| id(&format!("rl-{n}")))
        .collect();
    assert!(matches!(
        expect_input(store.read_logs(&crowd).await, "ids"),
        InputError::Limit { what: "ids", .. }
    ));
}

/// Each entry of a batch is judged by its own guard: one deleted, one
/// whose log grew kept, one whose parent parked after its check kept, one
/// whose parent's log is gone deleted (nothing of the parent waits), and a
/// parent deleted in the same batch as its child leaves the child's guard
/// holding.
pub async fn a_batch_of_guarded_deletes_judges_each_entry_by_its_own_guard(store: Store) {
    let ids = |name: &str| {
        (
            id(&format!("bd-{name}-parent")),
            id(&format!("bd-{name}-child")),
        )
    };
    let (ok_parent, ok) = ids("ok");
    let (grew_parent, grew) = ids("grew");
    let (parked, raced) = ids("raced");
    let (gone_parent, orphan) = ids("gone");
    let (old_parent, old_child) = ids("old");
    let mut batch = Vec::new();
    for (parent, child) in [
        (&ok_parent, &ok),
        (&grew_parent, &grew),
        (&parked, &raced),
        (&gone_parent, &orphan),
    ] {
        let (head, seen) = family(&*store, parent, child).await;
        batch.push(DeleteIf {
            execution_id: child.clone(),
            guard: guard_of(head, &[(parent, seen)]),
        });
    }
    let (old_head, old_seen) = family(&*store, &old_parent, &old_child).await;
    let parent_head = store
        .append(&old_parent, kernel(KernelKind::ExecutionCompleted))
        .await
        .expect("ends")
        .sequence;
    assert_eq!(parent_head, old_seen + 1);
    batch.push(DeleteIf {
        execution_id: old_parent.clone(),
        guard: guard_of(parent_head, &[]),
    });
    batch.push(DeleteIf {
        execution_id: old_child.clone(),
        guard: guard_of(old_head, &[(&old_parent, parent_head)]),
    });
    store.append(&grew, event("app.late")).await.expect("grows");
    park_on(&*store, &parked, &[Wait::Child(raced.clone())]).await;
    assert!(store.delete_execution(&gone_parent).await.expect("deletes"));

    let outcomes = store.delete_executions_if(&batch).await.expect("answers");
    assert_eq!(
        outcomes,
        [
            GuardedDelete::Deleted,
            GuardedDelete::LogChanged { head: 3 },
            GuardedDelete::ParentMoved {
                parent: parked.clone()
            },
            GuardedDelete::Deleted,
            GuardedDelete::Deleted,
            GuardedDelete::Deleted,
        ]
    );
    for (gone, id) in [
        (true, &ok),
        (false, &grew),
        (false, &raced),
        (true, &orphan),
        (true, &old_parent),
        (true, &old_child),
    ] {
        assert_eq!(!exists(&*store, id).await, gone, "{id:?}");
    }
    assert!(exists(&*store, &ok_parent).await && exists(&*store, &parked).await);
    assert!(
        store
            .delete_executions_if(&[])
            .await
            .expect("answers")
            .is_empty()
    );
}

/// A batch over the limit, naming one execution twice, or holding one
/// guard a store must refuse, is refused whole with a typed input error before anything is deleted, and
/// the store goes on working.
pub async fn a_batch_that_cannot_be_taken_is_refused_whole(store: Store) {
    let (parent, child) = (id("br-parent"), id("br-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    let before = Witness::capture(&*store, &child).await;
    let good = DeleteIf {
        execution_id: child.clone(),
        guard: guard_of(head, &[(&parent, seen)]),
    };
    let unsafe_head = DeleteIf {
        execution_id: parent.clone(),
        guard: DeleteGuard {
            head: 1 << 53,
            parents: Vec::new(),
        },
    };
    assert!(matches!(
        expect_input(
            store
                .delete_executions_if(&[good.clone(), unsafe_head])
                .await,
            "head"
        ),
        InputError::OutOfRange { what: "head", .. }
    ));
    assert!(matches!(
        expect_input(
            store.delete_executions_if(&[good.clone(), good.clone()]).await,
            "repeated"
        ),
        InputError::RepeatedId { execution_id } if execution_id == child
    ));
    let crowd = vec![good.clone(); MAX_DELETE_BATCH + 1];
    assert!(matches!(
        expect_input(store.delete_executions_if(&crowd).await, "deletes"),
        InputError::Limit {
            what: "deletes",
            ..
        }
    ));
    before.assert_unchanged(&*store, "a refused batch").await;
    assert_eq!(
        store.delete_executions_if(&[good]).await.expect("answers"),
        [GuardedDelete::Deleted],
        "the store is still usable"
    );
}

/// One listing page, one read of logs, one of parents and one batch of
/// deletes hold a pinned child, free children and a child whose parent
/// parks in the window together: the pinned one and the raced one are
/// kept (the raced one by its own guard, refused inside the batch), the
/// free ones go. The negative control ignores the guards and deletes the
/// raced child under its parked parent.
pub async fn one_page_holds_pinned_free_and_window_raced_children(store: Store) {
    for unguarded in [false, true] {
        let name = |what: &str| id(&format!("mp-{unguarded}-{what}"));
        let (pinning, pinned) = (name("a-pinning"), name("b-pinned"));
        let (racing, raced) = (name("c-racing"), name("d-raced"));
        let (running, free) = (name("e-running"), [name("f-free-1"), name("f-free-2")]);
        for parent in [&pinning, &racing, &running] {
            start(&*store, parent).await;
        }
        finished_child(&*store, &pinned, Some(&pinning), LONG_AGO).await;
        finished_child(&*store, &raced, Some(&racing), LONG_AGO).await;
        for child in &free {
            finished_child(&*store, child, Some(&running), LONG_AGO).await;
        }
        park_on(&*store, &pinning, &[Wait::Child(pinned.clone())]).await;
        let around = Around {
            inner: Arc::clone(&store),
            hooks: ParksInTheWindow {
                parent: racing.clone(),
                child: raced.clone(),
                unguarded,
            },
        };
        // Everything of this round on one page: the other round's ids and
        // anything before them are on other pages.
        let report = Sweep::new(&around, options(1_000))
            .run()
            .await
            .expect("runs");
        let ours = |child: &ExecutionId| child.as_str().starts_with(&format!("mp-{unguarded}-"));
        let pinned_here: Vec<&Pinned> = report.pinned.iter().filter(|p| ours(&p.child)).collect();
        assert_eq!(
            pinned_here,
            [&Pinned {
                child: pinned.clone(),
                parent: pinning.clone()
            }]
        );
        assert!(exists(&*store, &pinned).await, "pinned stays");
        for child in &free {
            assert!(!exists(&*store, child).await, "{child:?} goes");
        }
        let kept: Vec<&GuardedDelete> = report
            .kept
            .iter()
            .filter(|k| ours(&k.execution_id))
            .map(|k| &k.refusal)
            .collect();
        if unguarded {
            assert!(kept.is_empty());
            assert!(
                !exists(&*store, &raced).await,
                "the control: the raced child is gone under its parked parent"
            );
        } else {
            assert_eq!(
                kept,
                [&GuardedDelete::ParentMoved {
                    parent: racing.clone()
                }]
            );
            assert!(exists(&*store, &raced).await, "the raced child stays");
        }
    }
}
