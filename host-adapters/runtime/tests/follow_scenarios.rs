//! The shared follower scenarios (`tests/scenarios/follow/*.json`, see
//! `tests/scenarios/README.md`) against the Rust `Follower` and a
//! `ChildSupervisor` over the memory store. The npm `Follower` runs the
//! same files (`tests/conformance-js/follow-scenarios.test.js`).
//!
//! The runner only builds the world a scenario describes and compares:
//! every rule under test is the follow and supervise machines'.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{NoListing as Faults, id};
use loomfence_conformance::support::{Around, around};
use loomfence_core::lineage::started_child;
use loomfence_core::{Capability, ExecutionId, KernelKind, NewEvent};
use loomfence_runtime::follower::{FollowerHandle, FollowerOptions};
use loomfence_runtime::{ChildSupervisor, Follower, supervise::SupervisorOptions};
use loomfence_store::EventStore;
use serde_json::{Value, json};

/// The follower's own poll: short, so a scenario's lost wake costs little.
const POLL: Duration = Duration::from_millis(20);

/// Where the scenarios live.
fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/follow")
}

fn text<'a>(value: &'a Value, name: &str) -> &'a str {
    value[name]
        .as_str()
        .unwrap_or_else(|| panic!("`{name}` in {value}"))
}

fn kind(name: &str) -> KernelKind {
    KernelKind::from_name(name).unwrap_or_else(|| panic!("a kernel kind: {name}"))
}

/// Writes what a `start`, `park` or `end` (or an initial execution) says.
async fn write(store: &dyn EventStore, item: &Value) {
    let execution = id(text(item, "id"));
    let head = store
        .read_range(&execution, 1, None)
        .await
        .expect("reads")
        .len();
    if head == 0 {
        let start = match item["parent"].as_str() {
            Some(parent) => started_child(&id(parent), 1),
            None => NewEvent::kernel(KernelKind::ExecutionStarted, 1),
        };
        store.append(&execution, start).await.expect("starts");
    }
    if let Some(waits) = item.get("waits") {
        let payload = json!({ "waits": waits });
        let park = NewEvent::kernel(KernelKind::ExecutionSuspended, 2)
            .with_payload(payload.as_object().expect("an object").clone());
        store.append(&execution, park).await.expect("parks");
    }
    if item["resumed"].as_bool() == Some(true) {
        let resume = NewEvent::kernel(KernelKind::ExecutionResumed, 3);
        store.append(&execution, resume).await.expect("resumes");
    }
    let end = item["ended"]
        .as_str()
        .map(|status| format!("EXECUTION_{status}"))
        .or_else(|| item["kind"].as_str().map(str::to_owned));
    if let Some(end) = end {
        let event = NewEvent::kernel(kind(&end), 4);
        store.append(&execution, event).await.expect("ends");
    }
}

/// `EXECUTION_RESUMED` events per execution that has any, read past the
/// hooks.
async fn resumes(store: &Around<Faults>, ids: &[ExecutionId]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for execution in ids {
        let log = store
            .inner
            .read_range(execution, 1, None)
            .await
            .expect("reads");
        let count = log
            .iter()
            .filter(|event| event.kernel_kind() == Some(KernelKind::ExecutionResumed))
            .count() as u64;
        if count > 0 {
            counts.insert(execution.to_string(), count);
        }
    }
    counts
}

fn expected(value: &Value) -> BTreeMap<String, u64> {
    value
        .as_object()
        .expect("resumes")
        .iter()
        .filter(|(_, count)| count.as_u64() != Some(0))
        .map(|(id, count)| (id.clone(), count.as_u64().expect("a count")))
        .collect()
}

/// Waits (bounded) until the resumes are `want`, then a few polls more,
/// and checks they still are: a resume too many is caught too.
async fn settle(
    store: &Around<Faults>,
    ids: &[ExecutionId],
    want: &BTreeMap<String, u64>,
    at: &str,
) {
    for _ in 0..500 {
        if resumes(store, ids).await == *want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(POLL * 4).await;
    assert_eq!(resumes(store, ids).await, *want, "{at}");
}

/// Every id a scenario names.
fn ids_of(scenario: &Value) -> Vec<ExecutionId> {
    let mut ids: Vec<ExecutionId> = Vec::new();
    let items = scenario["executions"].as_array().into_iter().flatten();
    let steps = scenario["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|step| {
            ["start", "park", "end"]
                .into_iter()
                .find_map(|verb| step.get(verb))
        });
    for item in items.chain(steps) {
        let execution = id(text(item, "id"));
        if !ids.contains(&execution) {
            ids.push(execution);
        }
    }
    ids
}

async fn run(path: &Path) {
    let scenario: Value = serde_json::from_str(&fs::read_to_string(path).expect("reads"))
        .expect("a scenario is JSON");
    let name = text(&scenario, "name");
    let store = Arc::new(around(Capability::Conditional, Faults::default()));
    for fault in scenario["faults"].as_array().into_iter().flatten() {
        assert_eq!(text(fault, "kind"), "failRead", "{name}: a known fault");
        let times = fault["times"].as_u64().expect("times") as usize;
        store
            .hooks
            .fail_reads_of(&id(text(fault, "executionId")), times);
    }
    for item in scenario["executions"].as_array().into_iter().flatten() {
        write(&*store.inner, item).await;
    }
    let ids = ids_of(&scenario);
    let events: Arc<dyn EventStore> = store.clone();
    let supervisor = Arc::new(ChildSupervisor::new(
        Arc::clone(&events),
        SupervisorOptions::default(),
    ));
    let options = FollowerOptions {
        poll_interval: POLL,
        error_pause: Duration::from_millis(5),
        ..FollowerOptions::default()
    };
    let mut handle: FollowerHandle = Follower::new(events, supervisor, options)
        .expect("valid options")
        .spawn();
    let rebuilt = handle.rebuilt().await.expect("rebuilds");
    let rebuild = &scenario["rebuild"];
    assert_eq!(
        rebuilt.watched,
        rebuild["watched"].as_u64().expect("watched"),
        "{name}: parents watched by the rebuild"
    );
    settle(
        &store,
        &ids,
        &expected(&rebuild["resumes"]),
        &format!("{name}: rebuild"),
    )
    .await;
    for (index, step) in scenario["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .enumerate()
    {
        let item = ["start", "park", "end"]
            .into_iter()
            .find_map(|verb| step.get(verb))
            .unwrap_or_else(|| panic!("{name}: step {index} is start, park or end"));
        write(&*store.inner, item).await;
        let want = expected(&step["expect"]["resumes"]);
        settle(&store, &ids, &want, &format!("{name}: step {index}")).await;
    }
    handle.shutdown().await.expect("stops cleanly");
    assert_eq!(
        store.hooks.listings.load(Ordering::SeqCst),
        0,
        "{name}: a follower never lists the store"
    );
    assert_eq!(
        store.hooks.failures_left(),
        0,
        "{name}: every planned failure happened"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_follow_scenario_holds() {
    let mut paths: Vec<PathBuf> = fs::read_dir(scenario_dir())
        .expect("the scenarios exist")
        .map(|entry| entry.expect("lists").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 4, "the scenarios are found");
    for path in paths {
        println!("follow scenario {}", path.display());
        run(&path).await;
    }
}
