//! The shared inbox scenarios (`tests/scenarios/inbox/*.json`, see
//! `tests/scenarios/README.md`) against the Rust `Inbox` and a `TimerService` with its
//! re-driver, over the memory stores. The npm `Inbox` runs the same files
//! (`tests/conformance-js/inbox-scenarios.test.js`); both must give each
//! step's expected answer and end in the same stores.
//!
//! The runner only builds the world a scenario describes and compares:
//! every rule under test is the delivery machine's.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use common::{Hostile, Rival, VirtualClock};
use loomfence_conformance::support::around;
use loomfence_core::{
    Capability, ExecutionId, KernelKind, NewEvent,
    inbox::{Message, MessageKey, NotDeliverable, Sent},
    park::Wait,
    timer::{DueFilter, MAX_TIMER_MS, NodeId, TimerRow},
};
use loomfence_runtime::{
    Features, Inbox, RuntimeError, TimerService,
    clock::seeded_random,
    inbox::{Delivery, InboxOptions, Notified},
    timer::TimerServiceOptions,
};
use loomfence_store::{EventStore, InboxStore, MemoryTimerStore, StoreError, TimerStore};
use serde_json::{Value, json};

/// Where the scenarios live.
fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/inbox")
}

fn id(value: &Value) -> ExecutionId {
    ExecutionId::new(value.as_str().expect("an id")).expect("a valid id")
}

fn text(value: &Value, name: &str) -> String {
    value[name].as_str().expect(name).to_owned()
}

/// A scenario's world.
struct World {
    events: Arc<Hostile>,
    timers: Arc<MemoryTimerStore>,
    clock: VirtualClock,
    inbox: Arc<Inbox<Hostile, MemoryTimerStore>>,
    service: TimerService<Hostile, MemoryTimerStore>,
    resumed: Arc<Mutex<Vec<String>>>,
    intent_delay_ms: i64,
}

impl World {
    async fn new(scenario: &Value) -> Self {
        let options = &scenario["options"];
        let dead = options["deadAcquirers"].as_u64().unwrap_or(0);
        let rival = Rival::new(u32::try_from(dead).expect("a count"));
        rival.fencing.store(false, Ordering::SeqCst);
        let events = Arc::new(around(Capability::Conditional, rival));
        let timers = Arc::new(MemoryTimerStore::new());
        let clock = VirtualClock::at(0);
        let resumed = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&resumed);
        let intent_delay_ms = options["intentDelayMs"].as_i64().unwrap_or(1_000);
        let inbox = Arc::new(Inbox::new(
            Arc::clone(&events),
            Arc::clone(&timers),
            InboxOptions {
                now: clock.clock(),
                intent_delay_ms,
                features: Features::none()
                    .with_redrive(options["redrive"].as_bool().unwrap_or(false)),
                random: seeded_random(1),
                on_resumed: Arc::new(move |resumed| {
                    sink.lock()
                        .expect("lock")
                        .push(resumed.execution_id.to_string());
                }),
                ..InboxOptions::default()
            },
        ));
        let service = TimerService::new(
            Arc::clone(&events),
            Arc::clone(&timers),
            TimerServiceOptions {
                node: NodeId::new("n").expect("a node"),
                now: clock.clock(),
                random: seeded_random(2),
                ..TimerServiceOptions::default()
            },
        );
        service.register_redriver(inbox.redriver());
        for execution in scenario["executions"].as_array().into_iter().flatten() {
            let execution_id = id(&execution["id"]);
            let mut written = vec![NewEvent::kernel(KernelKind::ExecutionStarted, 1)];
            if let Some(waits) = execution.get("waits") {
                let mut payload = loomfence_core::JsonObject::new();
                payload.insert("waits".to_owned(), waits.clone());
                written.push(
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 1).with_payload(payload),
                );
            }
            if execution["ended"].as_bool().unwrap_or(false) {
                written.push(NewEvent::kernel(KernelKind::ExecutionCompleted, 1));
            }
            events
                .append_many(&execution_id, written)
                .await
                .expect("sets up");
            for _ in 0..execution["fenced"].as_u64().unwrap_or(0) {
                events.acquire_fence(&execution_id).await.expect("acquires");
            }
        }
        Self {
            events,
            timers,
            clock,
            inbox,
            service,
            resumed,
            intent_delay_ms,
        }
    }

    /// Performs one step; its answer as the scenarios state answers.
    async fn step(&self, step: &Value) -> Option<Value> {
        self.clock.set(step["at"].as_i64().expect("at"));
        if let Some(notify) = step.get("notify") {
            let key = MessageKey::new(
                id(&notify["executionId"]),
                text(notify, "channel"),
                text(notify, "messageId"),
            )
            .expect("a key");
            let answer = self
                .inbox
                .notify(key, notify["payload"].clone())
                .await
                .expect("notifies");
            return Some(notified(&answer));
        }
        if let Some(park) = step.get("park") {
            let waits = park["waits"]
                .as_array()
                .expect("waits")
                .iter()
                .map(wait)
                .collect::<Vec<_>>();
            let fence = park["fence"].as_u64();
            return Some(
                match self
                    .inbox
                    .park(&id(&park["executionId"]), &waits, fence)
                    .await
                {
                    Ok(parked) => json!({ "delivered": delivered(&parked.delivery) }),
                    Err(RuntimeError::Store(StoreError::StaleFence(_))) => {
                        json!({ "error": "stale" })
                    }
                    Err(other) => panic!("park failed: {other}"),
                },
            );
        }
        if let Some(send) = step.get("send") {
            let message = Message {
                key: MessageKey::new(
                    id(&send["executionId"]),
                    text(send, "channel"),
                    text(send, "messageId"),
                )
                .expect("a key"),
                payload: send["payload"].clone(),
                sent_at: send["sentAt"].as_i64().expect("sentAt"),
            };
            let intent = message.intent(self.intent_delay_ms).expect("an intent");
            self.timers.send(&message, &intent).await.expect("sends");
            return None;
        }
        if let Some(row) = step.get("schedule") {
            self.timers
                .schedule(&TimerRow::wake(
                    id(&row["executionId"]),
                    row["wakeAt"].as_i64().expect("wakeAt"),
                ))
                .await
                .expect("schedules");
            return None;
        }
        if step.get("poll").is_some() {
            let report = serde_json::to_value(self.service.poll_once().await).expect("a report");
            return Some(report);
        }
        if let Some(on) = step.get("contend") {
            self.events
                .hooks
                .fencing
                .store(on.as_bool().expect("a flag"), Ordering::SeqCst);
            return None;
        }
        panic!("a step the scenarios do not know: {step}");
    }

    /// The stores as the scenario's `end` states them.
    async fn end(&self, expected: &Value) -> Value {
        let mut logs = serde_json::Map::new();
        let mut messages = serde_json::Map::new();
        for name in expected["logs"].as_object().expect("logs").keys() {
            let execution_id = ExecutionId::new(name.as_str()).expect("an id");
            let kinds: Vec<String> = self
                .events
                .read_range(&execution_id, 1, None)
                .await
                .expect("reads")
                .into_iter()
                .map(|event| event.kind)
                .collect();
            logs.insert(name.clone(), json!(kinds));
            let listed: Vec<Value> = self
                .timers
                .messages(&execution_id)
                .await
                .expect("lists")
                .into_iter()
                .map(|entry| json!([entry.message.message.key.message_id, entry.consumed]))
                .collect();
            messages.insert(name.clone(), json!(listed));
        }
        let rows = self
            .timers
            .due(MAX_TIMER_MS, 1_000, DueFilter::default())
            .await
            .expect("lists rows");
        let mut end = json!({ "logs": logs, "rows": rows, "messages": messages });
        if expected.get("onResumed").is_some() {
            end["onResumed"] = json!(*self.resumed.lock().expect("lock"));
        }
        end
    }
}

/// A wait as the scenario writes it.
fn wait(value: &Value) -> Wait {
    let mut payload = loomfence_core::JsonObject::new();
    payload.insert("waits".to_owned(), json!([value]));
    let park = NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
        .with_payload(payload)
        .into_envelope(ExecutionId::new("w").expect("an id"), 1);
    loomfence_core::park::waits_of(&park)
        .expect("a wait")
        .pop()
        .expect("one wait")
}

/// The id delivered, or `null`.
fn delivered(delivery: &Delivery) -> Value {
    match delivery {
        Delivery::Delivered { message, .. } => json!(message.message_id),
        _ => Value::Null,
    }
}

/// A notify's answer as the scenarios state it.
fn notified(answer: &Notified) -> Value {
    match answer {
        Notified::Refused(reason) => json!({
            "result": "refused",
            "reason": match reason {
                NotDeliverable::Unknown => "unknown",
                NotDeliverable::Ended => "ended",
                other => panic!("a refusal the scenarios do not know: {other:?}"),
            },
        }),
        Notified::Sent { sent, delivery } => {
            let duplicate = matches!(sent, Sent::Duplicate { .. });
            match delivery {
                Delivery::Delivered { message, .. } => json!({
                    "result": "delivered", "message": message.message_id, "duplicate": duplicate,
                }),
                _ => json!({ "result": "stored", "duplicate": duplicate }),
            }
        }
        other => panic!("an answer the scenarios do not know: {other:?}"),
    }
}

/// Whether `got` holds every field `expected` names, with its value.
fn holds(got: &Value, expected: &Value) -> bool {
    expected
        .as_object()
        .expect("an expectation")
        .iter()
        .all(|(name, value)| got.get(name) == Some(value))
}

#[tokio::test]
async fn every_shared_inbox_scenario_holds() {
    let mut files: Vec<PathBuf> = fs::read_dir(scenario_dir())
        .expect("the scenario folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "found {} scenarios", files.len());
    for file in files {
        let scenario: Value =
            serde_json::from_str(&fs::read_to_string(&file).expect("reads")).expect("json");
        let name = scenario["name"].as_str().expect("a name").to_owned();
        let world = World::new(&scenario).await;
        for (index, step) in scenario["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .enumerate()
        {
            let answer = world.step(step).await;
            if let Some(expected) = step.get("expect") {
                let answer = answer.expect("a step that answers");
                assert!(
                    holds(&answer, expected),
                    "{name}, step {index}: expected {expected}, got {answer}"
                );
            }
        }
        let expected = &scenario["end"];
        let end = world.end(expected).await;
        for part in ["logs", "rows", "messages", "onResumed"] {
            if let Some(want) = expected.get(part) {
                assert_eq!(&end[part], want, "{name}: the {part} at the end");
            }
        }
        println!("inbox scenario ok: {name}");
    }
}
