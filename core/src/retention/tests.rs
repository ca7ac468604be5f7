//! The sweep machine and the guarded delete over the in-memory store: the
//! drive loop every host writes, and what the machine refuses.

use serde_json::json;

use super::*;
use crate::contract::ContractError;
use crate::event::{Envelope, NewEvent};
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;
use crate::kind::KernelKind;
use crate::lineage::started_child;
use crate::memory::MemoryStore;
use crate::park::{Wait, park_payload};

fn id(s: &str) -> ExecutionId {
    ExecutionId::new(s).expect("valid")
}

fn options() -> SweepOptions {
    SweepOptions {
        ended_before: 5_000,
        page_limit: 2,
        archive: true,
        dry_run: false,
    }
}

/// Drives a sweep over `store` to the end, archiving into `archive`.
fn run(
    store: &mut MemoryStore,
    options: SweepOptions,
    archive: &mut Vec<ExecutionId>,
) -> SweepReport {
    drive(store, options, archive, |_, _| {}, true)
}

/// The drive loop every host writes, over `store`: `before` runs before
/// each action (with its number, from 0) and may change the store;
/// `guarded` false deletes with a plain delete, as a sweep without the
/// guard would.
fn drive(
    store: &mut MemoryStore,
    options: SweepOptions,
    archive: &mut Vec<ExecutionId>,
    mut before: impl FnMut(usize, &mut MemoryStore),
    guarded: bool,
) -> SweepReport {
    let mut machine = SweepMachine::new(options);
    let mut step = 0;
    loop {
        before(step, store);
        step += 1;
        let action = match machine.poll() {
            SweepPoll::Done(report) => return report,
            SweepPoll::Act(action) => action,
        };
        match action {
            SweepAction::List { after, limit } => machine
                .handle_page(store.list_executions(after.as_ref(), limit).expect("lists"))
                .expect("a page"),
            SweepAction::ReadLogs { execution_ids } => machine
                .handle_logs(read_all(store, &execution_ids), Vec::new())
                .expect("logs"),
            SweepAction::ReadParents { parents } => machine
                .handle_parents(read_all(store, &parents))
                .expect("parents"),
            SweepAction::Archive { logs } => {
                archive.extend(logs.into_iter().map(|log| log.execution_id));
                machine.handle_archived().expect("archived");
            }
            SweepAction::Delete { batch } => {
                let outcomes = if guarded {
                    store.delete_executions_if(&batch).expect("deletes")
                } else {
                    for entry in &batch {
                        store.delete_execution(&entry.execution_id);
                    }
                    vec![GuardedDelete::Deleted; batch.len()]
                };
                machine.handle_deleted(outcomes).expect("deleted");
            }
        }
    }
}

/// The whole logs of `ids`, in order.
fn read_all(store: &MemoryStore, ids: &[ExecutionId]) -> Vec<Vec<Envelope>> {
    ids.iter()
        .map(|id| store.read_range(id, 1, None).expect("reads"))
        .collect()
}

fn ended(store: &mut MemoryStore, child: &str, parent: Option<&str>, at: i64) {
    let start = parent.map_or_else(
        || NewEvent::kernel(KernelKind::ExecutionStarted, 0),
        |p| started_child(&id(p), 0),
    );
    store
        .append_many(
            &id(child),
            vec![start, NewEvent::kernel(KernelKind::ExecutionCompleted, at)],
        )
        .expect("appends");
}

fn parked_on(store: &mut MemoryStore, parent: &str, waits: &[Wait]) {
    store
        .append_many(
            &id(parent),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
                    .with_payload(park_payload(waits)),
            ],
        )
        .expect("parks");
}

#[test]
fn a_sweep_archives_then_deletes_the_old_and_keeps_the_pinned() {
    let mut store = MemoryStore::new();
    parked_on(&mut store, "p", &[Wait::Child(id("c1"))]);
    ended(&mut store, "c1", Some("p"), 1_000);
    ended(&mut store, "c2", Some("p"), 1_000);
    ended(&mut store, "root", None, 1_000);
    ended(&mut store, "young", None, 9_000);
    let mut archive = Vec::new();
    let report = run(&mut store, options(), &mut archive);
    assert_eq!(archive, [id("c2"), id("root")]);
    assert_eq!(
        report,
        SweepReport {
            dry_run: false,
            examined: 5,
            eligible: 3,
            deleted: 2,
            archived: 2,
            pinned: vec![Pinned {
                child: id("c1"),
                parent: id("p")
            }],
            kept: Vec::new(),
            undecided: Vec::new(),
            pages: 4,
            log_reads: 3,
            // c1 and c2 share p, read once for the page.
            parent_reads: 1,
            delete_batches: 2,
        }
    );
    let left: Vec<&ExecutionId> = store.executions().collect();
    assert_eq!(left, [&id("c1"), &id("p"), &id("young")]);
}

#[test]
fn a_dry_run_asks_for_no_archive_or_delete() {
    let mut store = MemoryStore::new();
    ended(&mut store, "root", None, 1_000);
    let before = store.clone();
    let mut archive = Vec::new();
    let report = run(
        &mut store,
        SweepOptions {
            dry_run: true,
            ..options()
        },
        &mut archive,
    );
    assert_eq!((report.deleted, report.archived), (1, 0));
    assert!(archive.is_empty());
    assert_eq!(store, before);
}

#[test]
fn a_child_the_sweep_cannot_judge_is_undecided_and_the_sweep_goes_on() {
    let mut store = MemoryStore::new();
    let mut payload = JsonObject::new();
    payload.insert("parent".to_owned(), json!(["not", "an", "id"]));
    store
        .append_many(
            &id("a-lineage"),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 0).with_payload(payload),
                NewEvent::kernel(KernelKind::ExecutionFailed, 1),
            ],
        )
        .expect("appends");
    let mut waits = JsonObject::new();
    waits.insert("waits".to_owned(), json!("all of them"));
    store
        .append_many(
            &id("p-park"),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 0).with_payload(waits),
            ],
        )
        .expect("parks");
    ended(&mut store, "b-park", Some("p-park"), 1_000);
    parked_on(&mut store, "p-kind", &[Wait::Child(id("c-kind"))]);
    store
        .append(
            &id("p-kind"),
            NewEvent::new("PARK_EXTENDED", 0).with_kernel_stamp(),
        )
        .expect("a newer node's event");
    ended(&mut store, "c-kind", Some("p-kind"), 1_000);
    ended(&mut store, "z-root", None, 1_000);
    let report = run(&mut store, options(), &mut Vec::new());
    let undecided: Vec<(&str, &str, Option<&str>)> = report
        .undecided
        .iter()
        .map(|u| {
            (
                u.execution_id.as_str(),
                u.reason.code(),
                u.reason.parent().map(ExecutionId::as_str),
            )
        })
        .collect();
    assert_eq!(
        undecided,
        [
            ("a-lineage", "INVALID_LINEAGE", None),
            ("b-park", "INVALID_PARK", Some("p-park")),
            ("c-kind", "UNKNOWN_KIND", Some("p-kind")),
        ]
    );
    assert!(matches!(
        report.undecided[0].reason,
        UndecidedReason::InvalidLineage(InputError::ParentNotAString { sequence: 1, .. })
    ));
    assert_eq!(
        report.undecided[2].reason,
        UndecidedReason::UnknownKind {
            parent: id("p-kind"),
            sequence: 3,
            kind: "PARK_EXTENDED".to_owned()
        }
    );
    assert_eq!((report.eligible, report.deleted), (4, 1), "{report:?}");
    let left: Vec<&ExecutionId> = store.executions().collect();
    assert_eq!(
        left,
        [
            &id("a-lineage"),
            &id("b-park"),
            &id("c-kind"),
            &id("p-kind"),
            &id("p-park")
        ]
    );
}

#[test]
fn a_log_or_parent_that_cannot_be_read_for_good_is_undecided() {
    let summary = |s: &str| ExecutionSummary {
        execution_id: id(s),
        head: 2,
        ended: Some(Ended {
            sequence: 2,
            at: 1_000,
        }),
    };
    let mut machine = SweepMachine::new(options());
    assert!(matches!(
        machine.handle_unreadable("no".to_owned()),
        Err(ContractError::UnexpectedInput {
            got: "handle_unreadable",
            ..
        })
    ));
    machine
        .handle_page(vec![summary("a"), summary("b")])
        .expect("a page");
    machine
        .handle_unreadable("one of the page's rows cannot be decoded".to_owned())
        .expect("answers the read of a and b");
    assert_eq!(
        machine.poll(),
        SweepPoll::Act(SweepAction::ReadLogs {
            execution_ids: vec![id("a")]
        }),
        "a batch that cannot be read is asked again one log at a time"
    );
    assert!(machine.report().undecided.is_empty());
    machine
        .handle_unreadable("row 1 cannot be decoded".to_owned())
        .expect("answers the read of a");
    let log = vec![
        started_child(&id("p"), 0).into_envelope(id("b"), 1),
        NewEvent::kernel(KernelKind::ExecutionCompleted, 1_000).into_envelope(id("b"), 2),
    ];
    machine.handle_logs(vec![log], Vec::new()).expect("a log");
    machine
        .handle_unreadable("p is corrupt".to_owned())
        .expect("answers the read of p");
    assert!(matches!(
        machine.poll(),
        SweepPoll::Act(SweepAction::List { after: Some(ref a), .. }) if a == &id("b")
    ));
    let report = machine.report();
    assert_eq!(
        report.undecided,
        [
            Undecided {
                execution_id: id("a"),
                reason: UndecidedReason::UnreadableLog {
                    detail: "row 1 cannot be decoded".to_owned()
                },
            },
            Undecided {
                execution_id: id("b"),
                reason: UndecidedReason::UnreadableParent {
                    parent: id("p"),
                    detail: "p is corrupt".to_owned()
                },
            },
        ]
    );
    assert_eq!(
        (report.log_reads, report.parent_reads, report.deleted),
        (2, 1, 0)
    );
}

#[test]
fn an_unknown_kernel_kind_after_the_open_park_is_not_taken_for_its_answer() {
    let parent = |extra: Vec<NewEvent>| -> Vec<Envelope> {
        let mut events = vec![
            NewEvent::kernel(KernelKind::ExecutionStarted, 0),
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
                .with_payload(park_payload(&[Wait::Child(id("c"))])),
        ];
        events.extend(extra);
        events
            .into_iter()
            .zip(1..)
            .map(|(event, sequence)| event.into_envelope(id("p"), sequence))
            .collect()
    };
    let stamped = || NewEvent::new("PARK_EXTENDED", 0).with_kernel_stamp();
    assert_eq!(
        pin_parked_children(&id("c"), &parent(vec![stamped()])),
        Err(InputError::UnknownKind {
            sequence: 3,
            kind: "PARK_EXTENDED".to_owned()
        }),
        "unknown whether the park is answered"
    );
    assert_eq!(
        pin_parked_children(&id("other"), &parent(vec![stamped()])),
        Err(InputError::UnknownKind {
            sequence: 3,
            kind: "PARK_EXTENDED".to_owned()
        }),
        "unknown what the newer node's event waits on"
    );
    assert_eq!(
        pin_parked_children(&id("c"), &parent(vec![NewEvent::new("app.audit", 0)])),
        Ok(true),
        "an application kind does not answer"
    );
    for closed in [
        vec![stamped(), NewEvent::kernel(KernelKind::ExecutionResumed, 0)],
        vec![NewEvent::kernel(KernelKind::ExecutionResumed, 0), stamped()],
        vec![stamped(), NewEvent::kernel(KernelKind::ExecutionFailed, 0)],
    ] {
        assert_eq!(
            pin_parked_children(&id("c"), &parent(closed.clone())),
            Ok(false),
            "a known answer closes the park: {closed:?}"
        );
    }
}

#[test]
fn a_log_that_changed_since_the_listing_is_judged_by_what_was_read() {
    let mut machine = SweepMachine::new(options());
    let summary = ExecutionSummary {
        execution_id: id("x"),
        head: 2,
        ended: Some(Ended {
            sequence: 2,
            at: 1_000,
        }),
    };
    machine.handle_page(vec![summary]).expect("a page");
    // Deleted and reborn between the listing and the read: running now.
    let reborn = NewEvent::kernel(KernelKind::ExecutionStarted, 0).into_envelope(id("x"), 1);
    machine
        .handle_logs(vec![vec![reborn]], Vec::new())
        .expect("a log");
    assert!(matches!(
        machine.poll(),
        SweepPoll::Act(SweepAction::List { after: Some(ref a), .. }) if a == &id("x")
    ));
}

#[test]
fn out_of_turn_and_foreign_answers_are_refused_and_change_nothing() {
    let mut machine = SweepMachine::new(options());
    let before = machine.clone();
    assert_eq!(
        machine.handle_logs(Vec::new(), Vec::new()),
        Err(ContractError::UnexpectedInput {
            expected: "handle_page",
            got: "handle_logs"
        })
    );
    assert!(machine.handle_archived().is_err());
    assert!(
        machine
            .handle_deleted(vec![GuardedDelete::Deleted])
            .is_err()
    );
    assert_eq!(machine, before);

    let summary = |s: &str| ExecutionSummary {
        execution_id: id(s),
        head: 1,
        ended: Some(Ended {
            sequence: 1,
            at: 1_000,
        }),
    };
    machine.handle_page(vec![summary("a")]).expect("a page");
    let foreign: Vec<Envelope> =
        vec![NewEvent::kernel(KernelKind::ExecutionCompleted, 1).into_envelope(id("b"), 1)];
    let before = machine.clone();
    assert_eq!(
        machine.handle_logs(vec![foreign], Vec::new()),
        Err(ContractError::WrongLog {
            expected: id("a"),
            got: id("b")
        })
    );
    assert_eq!(
        machine.handle_logs(Vec::new(), Vec::new()),
        Err(ContractError::BatchLength {
            what: "logs",
            asked: 1,
            answered: 0
        })
    );
    assert_eq!(machine, before);
    let own = vec![NewEvent::kernel(KernelKind::ExecutionCompleted, 1).into_envelope(id("a"), 1)];
    machine.handle_logs(vec![own], Vec::new()).expect("a log");
    machine.handle_archived().expect("archived");
    let before = machine.clone();
    assert_eq!(
        machine.handle_deleted(vec![GuardedDelete::Deleted; 2]),
        Err(ContractError::BatchLength {
            what: "outcomes",
            asked: 1,
            answered: 2
        })
    );
    assert_eq!(machine, before);
    machine
        .handle_deleted(vec![GuardedDelete::Deleted])
        .expect("deleted");
    assert_eq!(
        machine.handle_page(vec![summary("a")]),
        Err(ContractError::PageRepeatsCursor { after: id("a") })
    );
}

#[test]
fn known_parents_are_read_after_the_recorded_one_and_once_each() {
    let mut machine = SweepMachine::new(options());
    machine
        .handle_page(vec![ExecutionSummary {
            execution_id: id("c"),
            head: 2,
            ended: Some(Ended {
                sequence: 2,
                at: 1_000,
            }),
        }])
        .expect("a page");
    let log = vec![
        started_child(&id("p"), 0).into_envelope(id("c"), 1),
        NewEvent::kernel(KernelKind::ExecutionCompleted, 1_000).into_envelope(id("c"), 2),
    ];
    machine
        .handle_logs(vec![log], vec![vec![id("q"), id("p"), id("q")]])
        .expect("a log");
    let SweepPoll::Act(SweepAction::ReadParents { parents }) = machine.poll() else {
        panic!("parents next");
    };
    assert_eq!(parents, [id("p"), id("q")]);
    machine
        .handle_parents(vec![Vec::new(), Vec::new()])
        .expect("no logs");
    let SweepPoll::Act(SweepAction::Archive { .. }) = machine.poll() else {
        panic!("archive next");
    };
    machine.handle_archived().expect("archived");
    let SweepPoll::Act(SweepAction::Delete { batch }) = machine.poll() else {
        panic!("delete next");
    };
    let [DeleteIf { guard, .. }] = batch.as_slice() else {
        panic!("one entry: {batch:?}");
    };
    assert_eq!(
        *guard,
        DeleteGuard {
            head: 2,
            parents: vec![
                ParentMark {
                    parent: id("p"),
                    seen: 0
                },
                ParentMark {
                    parent: id("q"),
                    seen: 0
                }
            ],
        }
    );
}

/// One sweep, with the parent parking on the child just before action
/// `park_at` (counting the sweep's actions from 0), and the delete guarded
/// or not. Returns whether the parent parked while the child still had its
/// log and the child is gone now: a parent waiting forever.
fn strands_the_parent(park_at: usize, guarded: bool) -> bool {
    let mut store = MemoryStore::new();
    store
        .append(&id("p"), NewEvent::kernel(KernelKind::ExecutionStarted, 0))
        .expect("starts");
    ended(&mut store, "c", Some("p"), 1_000);
    let mut parked_on_a_log = false;
    let options = SweepOptions {
        archive: false,
        ..options()
    };
    let park = |step: usize, store: &mut MemoryStore| {
        if step == park_at {
            parked_on_child(store);
            parked_on_a_log = !store
                .read_range(&id("c"), 1, None)
                .expect("reads")
                .is_empty();
        }
    };
    drive(&mut store, options, &mut Vec::new(), park, guarded);
    parked_on_a_log
        && store
            .read_range(&id("c"), 1, None)
            .expect("reads")
            .is_empty()
}

/// Parks `p` on `c`.
fn parked_on_child(store: &mut MemoryStore) {
    store
        .append(
            &id("p"),
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
                .with_payload(park_payload(&[Wait::Child(id("c"))])),
        )
        .expect("parks");
}

/// The window, over every point at which the parent can park: with the
/// guarded delete no interleaving deletes a child its parent parked on
/// before the delete; with a plain delete (the control) parking between
/// the pin check and the delete does.
#[test]
fn no_interleaving_of_a_park_with_the_sweep_strands_the_parent() {
    // The sweep's actions: 0 list [c, p], 1 read c, 2 read p (the pin
    // check), 3 delete c, 4 list (empty: the end); 5 is after the sweep.
    let stranded = |guarded| -> Vec<usize> {
        (0..6)
            .filter(|&at| strands_the_parent(at, guarded))
            .collect()
    };
    assert_eq!(stranded(true), Vec::<usize>::new());
    assert_eq!(
        stranded(false),
        [3],
        "the control: a park between the pin check and a plain delete"
    );
}

#[test]
fn an_old_parent_and_its_old_child_on_one_page_both_go_in_one_batch() {
    let mut store = MemoryStore::new();
    ended(&mut store, "p", None, 1_000);
    ended(&mut store, "p/c", Some("p"), 1_000);
    let report = run(
        &mut store,
        SweepOptions {
            archive: false,
            ..options()
        },
        &mut Vec::new(),
    );
    assert_eq!(
        (report.deleted, report.delete_batches, report.parent_reads),
        (2, 1, 1),
        "p is deleted before its child's guard is checked, and a parent with no log waits on nothing: {report:?}"
    );
    assert_eq!(store.executions().count(), 0);
}

#[test]
fn deletes_go_in_batches_that_lock_at_most_the_budget() {
    let mut store = MemoryStore::new();
    store
        .append(
            &id("a-parent"),
            NewEvent::kernel(KernelKind::ExecutionStarted, 0),
        )
        .expect("a running parent");
    for n in 0..300 {
        ended(&mut store, &format!("b-root-{n:03}"), None, 1_000);
    }
    for n in 0..200 {
        let parent = format!("c-parent-{n:03}");
        store
            .append(
                &id(&parent),
                NewEvent::kernel(KernelKind::ExecutionStarted, 0),
            )
            .expect("a running parent");
        ended(&mut store, &format!("d-child-{n:03}"), Some(&parent), 1_000);
    }
    let mut machine = SweepMachine::new(SweepOptions {
        page_limit: 1_000,
        archive: false,
        ..options()
    });
    let mut batches = Vec::new();
    loop {
        match machine.poll() {
            SweepPoll::Done(report) => {
                assert_eq!((report.deleted, report.delete_batches), (500, 3));
                break;
            }
            SweepPoll::Act(SweepAction::List { after, limit }) => machine
                .handle_page(store.list_executions(after.as_ref(), limit).expect("lists"))
                .expect("a page"),
            SweepPoll::Act(SweepAction::ReadLogs { execution_ids }) => machine
                .handle_logs(read_all(&store, &execution_ids), Vec::new())
                .expect("logs"),
            SweepPoll::Act(SweepAction::ReadParents { parents }) => {
                assert_eq!(parents.len(), 200, "each parent once, in one read");
                machine
                    .handle_parents(read_all(&store, &parents))
                    .expect("parents");
            }
            SweepPoll::Act(SweepAction::Delete { batch }) => {
                let mut keys: Vec<&ExecutionId> = batch
                    .iter()
                    .flat_map(|entry| {
                        std::iter::once(&entry.execution_id)
                            .chain(entry.guard.parents.iter().map(|mark| &mark.parent))
                    })
                    .collect();
                keys.sort();
                keys.dedup();
                batches.push((batch.len(), keys.len()));
                let outcomes = store.delete_executions_if(&batch).expect("deletes");
                machine.handle_deleted(outcomes).expect("deleted");
            }
            SweepPoll::Act(other) => panic!("{other:?}"),
        }
    }
    // 300 roots lock one key each, 200 children two: filled to the budget
    // in listing order.
    assert_eq!(batches, [(256, 256), (44 + 106, 44 + 212), (94, 188)]);
}
