use serde_json::json;

use super::*;
use crate::event::NewEvent;
use crate::kind::KernelKind;
use crate::memory::MemoryStore;
use crate::park::{Wait, park_payload};

fn id(text: &str) -> ExecutionId {
    ExecutionId::new(text).expect("valid")
}

fn park_on(waits: &[Wait]) -> NewEvent {
    NewEvent::kernel(KernelKind::ExecutionSuspended, 1).with_payload(park_payload(waits))
}

fn started() -> NewEvent {
    NewEvent::kernel(KernelKind::ExecutionStarted, 1)
}

fn end() -> NewEvent {
    NewEvent::kernel(KernelKind::ExecutionCompleted, 2)
}

/// Drives `machine` against `store` until it waits, collecting notices.
fn run(machine: &mut FollowMachine, store: &MemoryStore) -> Vec<FollowNotice> {
    let mut notices = Vec::new();
    loop {
        match machine.poll() {
            FollowPoll::Notice(notice) => notices.push(notice),
            FollowPoll::Act(FollowAction::ReadHead) => {
                machine.handle_head(store.feed_head().unwrap()).unwrap();
            }
            FollowPoll::Act(FollowAction::ListOpenParks { after, limit }) => machine
                .handle_open_parks(store.open_parks(after.as_ref(), limit).unwrap())
                .unwrap(),
            FollowPoll::Act(FollowAction::ReadFeed { after, limit }) => machine
                .handle_feed(store.feed(after, limit).unwrap())
                .unwrap(),
            FollowPoll::Act(FollowAction::Wait { .. }) => return notices,
        }
    }
}

#[test]
fn cursors_order_by_epoch_then_position_and_stay_safe_integers() {
    let a = FeedCursor::new(0, 9).unwrap();
    let b = FeedCursor::new(1, 0).unwrap();
    assert!(FeedCursor::START < a && a < b);
    assert_eq!(b.to_string(), "1.0");
    assert!(FeedCursor::new(MAX_SAFE_INTEGER + 1, 0).is_err());
    assert!(FeedCursor::new(0, MAX_SAFE_INTEGER + 1).is_err());
}

#[test]
fn only_parks_on_children_and_ends_are_noticed() {
    let event = |e: NewEvent| e.into_envelope(id("x"), 1);
    assert_eq!(
        notice_for(&event(park_on(&[Wait::Child(id("c"))]))),
        Some(FollowNotice::Watch(id("x")))
    );
    assert_eq!(
        notice_for(&event(park_on(&[Wait::Timer { wake_at: 5 }]))),
        None,
        "a timer's park is the timer service's"
    );
    let unreadable = NewEvent::kernel(KernelKind::ExecutionSuspended, 1)
        .with_payload(json!({ "waits": 7 }).as_object().unwrap().clone());
    assert_eq!(notice_for(&event(unreadable)), None);
    assert_eq!(
        notice_for(&event(end())),
        Some(FollowNotice::Ended(id("x")))
    );
    assert_eq!(notice_for(&event(started())), None);
}

#[test]
fn a_batch_changes_the_open_parks_by_its_last_answering_event() {
    let change = |events: &[NewEvent]| {
        park_change(
            4,
            events.iter().map(|event| (&*event.kind, &event.metadata)),
        )
    };
    let note = NewEvent::new("app.note", 1);
    assert_eq!(change(std::slice::from_ref(&note)), ParkChange::Unchanged);
    assert_eq!(
        change(&[started(), park_on(&[]), note]),
        ParkChange::Opens(5)
    );
    let resumed = NewEvent::kernel(KernelKind::ExecutionResumed, 1);
    assert_eq!(change(&[park_on(&[]), resumed]), ParkChange::Closes);
    assert_eq!(
        change(&[end(), park_on(&[])]),
        ParkChange::Closes,
        "nothing reopens after an end"
    );
}

#[test]
fn a_follower_rebuilds_from_the_open_parks_then_follows_from_the_head() {
    let mut store = MemoryStore::new();
    // History: a finished family, and two parents still parked.
    store
        .append_many(&id("old"), vec![started(), end()])
        .unwrap();
    for parent in ["p1", "p2", "p3"] {
        store
            .append_many(
                &id(parent),
                vec![started(), park_on(&[Wait::Child(id("c"))])],
            )
            .unwrap();
    }
    store
        .append(&id("p3"), NewEvent::kernel(KernelKind::ExecutionResumed, 3))
        .unwrap();
    let mut machine = FollowMachine::new(FollowOptions { page_limit: 1 }).unwrap();
    let rebuilt = run(&mut machine, &store);
    assert_eq!(
        rebuilt,
        vec![FollowNotice::Watch(id("p1")), FollowNotice::Watch(id("p2"))],
        "the rebuild watches open parks only, one page at a time, and reads no history"
    );
    assert!(machine.is_rebuilt() && machine.is_caught_up());
    assert_eq!(
        machine.rebuild_watched(),
        Some(2),
        "counted until the first wait"
    );
    assert_eq!(machine.cursor(), store.feed_head().unwrap());

    store.append(&id("c"), started()).unwrap();
    store.append(&id("c"), end()).unwrap();
    store
        .append_many(&id("p4"), vec![started(), park_on(&[Wait::Child(id("c"))])])
        .unwrap();
    assert_eq!(machine.handle_woken(), Ok(()));
    assert_eq!(
        run(&mut machine, &store),
        vec![FollowNotice::Ended(id("c")), FollowNotice::Watch(id("p4"))]
    );
    assert_eq!(
        machine.rebuild_watched(),
        Some(2),
        "later watches are not the rebuild's"
    );
}

#[test]
fn a_failed_supervision_is_watched_again_after_the_next_wake_only() {
    let store = MemoryStore::new();
    let mut machine = FollowMachine::new(FollowOptions::default()).unwrap();
    assert!(run(&mut machine, &store).is_empty());
    machine.handle_failed(id("p"));
    machine.handle_failed(id("p"));
    assert_eq!(machine.retrying(), 1);
    assert!(
        matches!(machine.poll(), FollowPoll::Act(FollowAction::Wait { .. })),
        "not spun against a store that is down"
    );
    machine.handle_woken().unwrap();
    assert_eq!(
        run(&mut machine, &store),
        vec![FollowNotice::Watch(id("p"))]
    );
    assert_eq!(machine.retrying(), 0);
}

#[test]
fn answers_out_of_turn_or_out_of_contract_are_refused_and_change_nothing() {
    assert!(FollowMachine::new(FollowOptions { page_limit: 0 }).is_err());
    assert!(
        FollowMachine::new(FollowOptions {
            page_limit: MAX_FEED_LIMIT + 1
        })
        .is_err()
    );
    let mut machine = FollowMachine::new(FollowOptions { page_limit: 2 }).unwrap();
    assert!(matches!(
        machine.handle_woken(),
        Err(ContractError::UnexpectedInput { .. })
    ));
    assert_eq!(machine.poll(), FollowPoll::Act(FollowAction::ReadHead));
    let before = machine.clone();
    assert!(machine.handle_feed(Vec::new()).is_err());
    assert_eq!(machine, before);
    machine.handle_head(FeedCursor::new(0, 5).unwrap()).unwrap();

    let _ = machine.poll();
    let backwards = vec![id("b"), id("a")];
    assert!(matches!(
        machine.handle_open_parks(backwards),
        Err(ContractError::FeedOutOfContract { .. })
    ));
    assert!(
        machine
            .handle_open_parks(vec![id("a"), id("b"), id("c")])
            .is_err()
    );
    machine.handle_open_parks(Vec::new()).unwrap();

    let entry = |position| FeedEntry {
        cursor: FeedCursor::new(0, position).unwrap(),
        event: started().into_envelope(id("x"), 1),
    };
    let _ = machine.poll();
    let before = machine.clone();
    assert!(
        machine.handle_feed(vec![entry(5)]).is_err(),
        "at the cursor"
    );
    assert!(machine.handle_feed(vec![entry(7), entry(6)]).is_err());
    assert!(
        machine
            .handle_feed(vec![entry(6), entry(7), entry(8)])
            .is_err()
    );
    assert_eq!(machine, before);
    machine.handle_feed(vec![entry(6)]).unwrap();
    assert_eq!(machine.cursor(), FeedCursor::new(0, 6).unwrap());
}

#[test]
fn the_memory_feed_never_skips_drops_deleted_logs_and_never_reuses_a_cursor() {
    let mut store = MemoryStore::new();
    store.append_many(&id("a"), vec![started(), end()]).unwrap();
    store.append(&id("b"), started()).unwrap();
    let all = store.feed(FeedCursor::START, 10).unwrap();
    let seen: Vec<_> = all
        .iter()
        .map(|e| (e.event.execution_id.to_string(), e.event.sequence))
        .collect();
    assert_eq!(seen, [("a".into(), 1), ("a".into(), 2), ("b".into(), 1)]);
    let head = store.feed_head().unwrap();
    assert_eq!(head, all[2].cursor);

    assert!(store.delete_execution(&id("b")));
    assert_eq!(store.feed_head().unwrap(), head, "the head never goes back");
    store.append(&id("b"), started()).unwrap();
    let after = store.feed(head, 10).unwrap();
    assert_eq!(after.len(), 1, "the re-created log is new, past the head");
    assert!(after[0].cursor > head);
    assert_eq!(store.feed(FeedCursor::START, 10).unwrap().len(), 3);
    assert_eq!(
        store.feed(all[0].cursor, 1).unwrap()[0].cursor,
        all[1].cursor
    );
    assert!(store.feed(FeedCursor::START, 0).is_err());
    assert!(store.open_parks(None, MAX_FEED_LIMIT + 1).is_err());
}
