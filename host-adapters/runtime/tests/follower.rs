//! The follower: a worker's supervision driven by the change feed, with no
//! listing of the store: rebuilt from the open parks, live from the feed,
//! and a failed supervision tried again after the next wake.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{NoListing, finish, id, park_on, resumes};
use loomfence_conformance::support::{Around, around};
use loomfence_core::{Capability, KernelKind, Resumed, park::Wait};
use loomfence_runtime::follower::{FollowerHandle, FollowerOptions};
use loomfence_runtime::{ChildSupervisor, Follower, supervise::SupervisorOptions};
use loomfence_store::EventStore;
use serde_json::json;

/// A store that refuses listings, and a follower over it whose resumes are
/// recorded.
fn follower(store: &Arc<Around<NoListing>>) -> (FollowerHandle, Arc<Mutex<Vec<Resumed>>>) {
    let events: Arc<dyn EventStore> = store.clone();
    let supervisor = Arc::new(ChildSupervisor::new(
        Arc::clone(&events),
        SupervisorOptions::default(),
    ));
    let landed = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&landed);
    let options = FollowerOptions {
        poll_interval: Duration::from_millis(20),
        error_pause: Duration::from_millis(5),
        on_resumed: Arc::new(move |resumed| sink.lock().expect("lock").push(resumed)),
        ..FollowerOptions::default()
    };
    let follower = Follower::new(events, supervisor, options).expect("valid options");
    (follower.spawn(), landed)
}

/// Waits (polling, bounded) until `parent` has `count` resumes.
async fn until_resumed(store: &dyn EventStore, parent: &str, count: usize) {
    for _ in 0..500 {
        if resumes(store, &id(parent)).await.len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{parent} was not resumed {count} time(s)");
}

#[tokio::test]
async fn a_follower_rebuilds_from_the_open_parks_and_follows_the_feed_without_listing() {
    let store = Arc::new(around(Capability::Conditional, NoListing::default()));
    // History a restarted worker must not pay for: finished families.
    for family in 0..200 {
        let (parent, child) = (id(&format!("old-{family}")), id(&format!("old-{family}-c")));
        park_on(&*store, &parent, &[Wait::Child(child.clone())]).await;
        finish(&*store, &child, KernelKind::ExecutionCompleted, json!({})).await;
        store
            .append(
                &parent,
                loomfence_core::NewEvent::kernel(KernelKind::ExecutionResumed, 2),
            )
            .await
            .expect("resumes");
        finish(&*store, &parent, KernelKind::ExecutionCompleted, json!({})).await;
    }
    // Work left while no worker ran: one parent whose child already ended,
    // one still waiting.
    park_on(&*store, &id("ready"), &[Wait::Child(id("ready-c"))]).await;
    finish(
        &*store,
        &id("ready-c"),
        KernelKind::ExecutionCompleted,
        json!({ "n": 1 }),
    )
    .await;
    park_on(&*store, &id("waiting"), &[Wait::Child(id("waiting-c"))]).await;
    park_on(&*store, &id("on-a-timer"), &[Wait::Timer { wake_at: 1 }]).await;

    let (mut handle, landed) = follower(&store);
    let rebuilt = handle.rebuilt().await.expect("rebuilds");
    assert_eq!(
        rebuilt.watched, 3,
        "the rebuild watches the open parks only, not the history"
    );
    until_resumed(&*store, "ready", 1).await;

    // Live: a new park, then its child's end, reach the supervisor
    // through the feed.
    park_on(&*store, &id("live"), &[Wait::Child(id("live-c"))]).await;
    finish(
        &*store,
        &id("live-c"),
        KernelKind::ExecutionCompleted,
        json!({}),
    )
    .await;
    finish(
        &*store,
        &id("waiting-c"),
        KernelKind::ExecutionFailed,
        json!({}),
    )
    .await;
    until_resumed(&*store, "live", 1).await;
    until_resumed(&*store, "waiting", 1).await;
    handle.shutdown().await.expect("stops cleanly");

    assert_eq!(
        store.hooks.listings.load(Ordering::SeqCst),
        0,
        "never listed"
    );
    let mut resumed: Vec<_> = landed
        .lock()
        .expect("lock")
        .iter()
        .map(|resumed| resumed.execution_id.to_string())
        .collect();
    resumed.sort();
    assert_eq!(
        resumed,
        ["live", "ready", "waiting"],
        "each once, to on_resumed"
    );
    assert!(
        resumes(&*store, &id("on-a-timer")).await.is_empty(),
        "a timer's park is not the supervisor's"
    );
}

#[tokio::test]
async fn a_failed_supervision_is_tried_again_after_the_next_wake() {
    let store = Arc::new(around(Capability::Conditional, NoListing::default()));
    let (mut handle, _) = follower(&store);
    handle.rebuilt().await.expect("rebuilds");
    store.hooks.fail_reads_of(&id("flaky"), 1);
    park_on(&*store, &id("flaky"), &[Wait::Child(id("flaky-c"))]).await;
    finish(
        &*store,
        &id("flaky-c"),
        KernelKind::ExecutionCompleted,
        json!({}),
    )
    .await;
    // Read past the hooks, so the test's own reads do not take the failure.
    until_resumed(&*store.inner, "flaky", 1).await;
    assert_eq!(store.hooks.failures_left(), 0, "the first read failed");
    handle.shutdown().await.expect("stops cleanly");
    assert_eq!(resumes(&*store.inner, &id("flaky")).await.len(), 1);
}
