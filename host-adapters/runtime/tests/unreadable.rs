//! A timer row the store cannot read does not stop the timer service: the
//! readable rows fire, and the damaged one is reported once per node,
//! typed and named by its key, however many ticks meet it.

mod common;

use std::sync::{Arc, Mutex};

use common::{VirtualClock, id, park_on, resumes};
use loomfence_core::{
    ExecutionId,
    park::Wait,
    timer::{NodeId, RedriveAnswer, TimerRow, UnreadableField, UnreadableRow},
};
use loomfence_runtime::{
    Redriver, RuntimeError, TimerService, clock::seeded_random, timer::PollReport,
    timer::TimerServiceOptions,
};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, TimerStore};

/// The unreadable rows `on_error` received, and every other error's text.
#[derive(Clone, Default)]
struct Sink {
    unreadable: Arc<Mutex<Vec<UnreadableRow>>>,
    others: Arc<Mutex<Vec<String>>>,
}

/// A re-driver with nothing to re-drive: its node claims re-drive rows, so
/// it reads their flags.
struct Noop;

#[async_trait::async_trait]
impl Redriver for Noop {
    async fn redrive(&self, _: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        Ok(RedriveAnswer::Noop)
    }
}

/// Options for `node` on `clock`, reporting to `sink`.
fn options(node: &str, clock: &VirtualClock, sink: &Sink) -> TimerServiceOptions {
    let time = clock.clone();
    let sink = sink.clone();
    TimerServiceOptions {
        node: NodeId::new(node).expect("a node id"),
        now: Arc::new(move || time.get()),
        random: seeded_random(7),
        on_error: Arc::new(move |error| match error {
            RuntimeError::Unreadable(row) => {
                sink.unreadable.lock().expect("lock").push(row.clone());
            }
            other => sink.others.lock().expect("lock").push(other.to_string()),
        }),
        ..TimerServiceOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_row_is_reported_once_and_the_others_fire() {
    let dir = std::env::temp_dir().join(format!("loomfence-unreadable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("store.db");
    let _ = std::fs::remove_file(&path);
    let events = Arc::new(
        SqliteEventStore::open(&path, SqliteOptions::default())
            .await
            .expect("opens"),
    );
    let timers = Arc::new(events.timers());
    let parked = [id("before"), id("after")];
    for (execution, wake_at) in parked.iter().zip([4_000, 6_000]) {
        park_on(&*events, execution, &[Wait::Timer { wake_at }]).await;
        timers
            .schedule(&TimerRow::wake(execution.clone(), wake_at))
            .await
            .expect("schedules");
    }
    rusqlite::Connection::open(&path)
        .expect("a raw connection")
        .execute(
            "INSERT INTO timers (execution_id, wake_at, redrive) VALUES ('poisoned', 5000, 'null')",
            [],
        )
        .expect("plants the damaged row");

    let clock = VirtualClock::at(7_000);
    let sink = Sink::default();
    let node = TimerService::new(
        events.clone() as Arc<dyn EventStore>,
        timers.clone() as Arc<dyn TimerStore>,
        options("node-a", &clock, &sink),
    );
    node.register_redriver(Arc::new(Noop));
    let mut total = PollReport::default();
    for tick in 0..3 {
        total += node.poll_once().await;
        clock.set(7_000 + 1_000 * (tick + 1));
    }
    assert_eq!(
        (total.fired, total.unreadable, total.errors),
        (2, 1, 0),
        "{total:?}"
    );
    for execution in &parked {
        assert_eq!(
            resumes(&*events, execution).await.len(),
            1,
            "{execution:?} fired once"
        );
    }
    let reported = sink.unreadable.lock().expect("lock").clone();
    assert_eq!(
        reported.len(),
        1,
        "reported once over three ticks: {reported:?}"
    );
    assert_eq!(
        (
            reported[0].execution_id.as_str(),
            reported[0].wake_at,
            reported[0].field
        ),
        ("poisoned", Some(5_000), UnreadableField::Redrive)
    );
    assert!(sink.others.lock().expect("lock").is_empty());

    // Another node reports it too: once per node, not once per fleet.
    let sink_b = Sink::default();
    let other = TimerService::new(
        events.clone() as Arc<dyn EventStore>,
        timers.clone() as Arc<dyn TimerStore>,
        options("node-b", &clock, &sink_b),
    );
    other.register_redriver(Arc::new(Noop));
    assert_eq!(other.poll_once().await.unreadable, 1);
    assert_eq!(other.poll_once().await.unreadable, 0);
    std::fs::remove_dir_all(&dir).expect("cleans up");
}
