//! The shared tick scenarios (`tests/scenarios/tick/*.json`, see the README
//! there) against the Rust `TimerService` over the memory stores. The npm
//! `TimerService` runs the same files (`tests/conformance-js/
//! tick-scenarios.test.js`); both must produce the reports and the store
//! state each scenario expects after each tick.
//!
//! The runner only builds the world a scenario describes (executions, rows,
//! store faults, scripted re-drivers, the clock) and compares: every rule
//! under test is the service's.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use loomfence_conformance::support::around;
use loomfence_core::{
    AcquireOutcome, Capability, Envelope, ExecutionId, JsonObject, KernelKind, NewEvent,
    ParkExpectation,
    redrive::RedrivePolicy,
    timer::{
        Claim, Completed, DueFilter, MAX_DUE_LIMIT, MAX_TIMER_MS, NodeId, RedriveAnswer, TimerRow,
    },
};
use loomfence_runtime::{
    Redriver, RuntimeError, TimerService, timer::PollReport, timer::TimerServiceOptions,
};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{
    BackendError, EventStore, Forwarding, MemoryTimerStore, StoreError, TimerStore,
};
use serde_json::{Value, json};

/// Where the scenarios live.
fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/tick")
}

/// A report as the scenarios state it: the core's `TickReport` in its
/// camelCase names.
fn report_fields(report: &PollReport) -> Value {
    serde_json::to_value(report).expect("a report serializes")
}

/// A scenario's expected report: every count it leaves out is 0.
fn expected_report(expect: &Value) -> Value {
    let mut full = report_fields(&PollReport::default());
    for (name, value) in expect.as_object().into_iter().flatten() {
        assert!(
            full.get(name).is_some(),
            "a report field the core does not have: {name}"
        );
        full[name] = value.clone();
    }
    full
}

fn id(text: &str) -> ExecutionId {
    ExecutionId::new(text).expect("a valid id in a scenario")
}

/// A count of a fault, from `{ "times": n }` (default: always).
fn times(fault: &Value) -> usize {
    fault
        .get("times")
        .map_or(usize::MAX, |t| t.as_u64().expect("times") as usize)
}

/// Takes one of `remaining[id]`, if any is left.
fn take(remaining: &Mutex<HashMap<String, usize>>, id: &ExecutionId) -> bool {
    let mut remaining = remaining.lock().expect("lock");
    match remaining.get_mut(id.as_str()) {
        Some(left) if *left > 0 => {
            *left -= 1;
            true
        }
        _ => false,
    }
}

/// The event store faults: `contended` (a rival acquires the fence right
/// before each conditional acquire) and `failRead` (a read fails).
#[derive(Default)]
struct EventFaults {
    contended: Mutex<HashMap<String, usize>>,
    fail_read: Mutex<HashMap<String, usize>>,
}

#[async_trait]
impl Hooks for EventFaults {
    async fn read_range(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if take(&self.fail_read, id) {
            return Err(StoreError::Backend(BackendError::retryable(
                "scenario: the read fails",
            )));
        }
        inner.read_range(id, from_seq, to_seq).await
    }

    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        if take(&self.contended, id) {
            inner.acquire_fence(id).await?;
        }
        inner.acquire_fence_if(id, expect).await
    }
}

/// The timer store fault `rescheduledBeforeComplete`: the row is scheduled
/// again right before the service's complete, so the complete finds its
/// claim gone.
#[derive(Default)]
struct TimerFaults {
    rescheduled: Mutex<HashMap<String, usize>>,
}

#[async_trait]
impl Hooks for TimerFaults {
    async fn complete(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
    ) -> Result<Completed, StoreError> {
        if take(&self.rescheduled, &claim.row.execution_id) {
            inner.schedule(&claim.row).await?;
        }
        inner.complete(claim).await
    }
}

/// A re-driver answering from a script, one answer per call, the last one
/// again once the script is spent.
struct Scripted {
    answers: Vec<String>,
    calls: AtomicUsize,
}

#[async_trait]
impl Redriver for Scripted {
    async fn redrive(&self, _: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.answers[call.min(self.answers.len() - 1)].as_str() {
            "done" => Ok(RedriveAnswer::Done),
            "noop" => Ok(RedriveAnswer::Noop),
            "contended" => Ok(RedriveAnswer::Contended),
            "failed" => Err(RuntimeError::Host("scenario: the re-driver fails".into())),
            other => panic!("a scripted answer the scenarios do not know: {other}"),
        }
    }
}

/// The clock of a tick: its first reading is the tick's `at`, every later
/// one its `laterAt`.
#[derive(Clone, Default)]
struct TickClock(Arc<Mutex<(i64, i64, bool)>>);

impl TickClock {
    fn start(&self, at: i64, later: i64) {
        *self.0.lock().expect("lock") = (at, later, true);
    }
    fn read(&self) -> i64 {
        let mut state = self.0.lock().expect("lock");
        let (at, later, first) = *state;
        state.2 = false;
        if first { at } else { later }
    }
}

/// The policy a scenario names, over the default one.
fn policy(value: Option<&Value>) -> RedrivePolicy {
    let mut policy = RedrivePolicy::default();
    if let Some(value) = value {
        let field = |name| value.get(name).and_then(Value::as_u64);
        if let Some(base) = field("baseMs") {
            policy.base_ms = base;
        }
        if let Some(cap) = field("capMs") {
            policy.cap_ms = cap;
        }
        if let Some(max) = field("maxAttempts") {
            policy.max_attempts = u32::try_from(max).expect("maxAttempts");
        }
    }
    policy
}

/// A row as the scenarios write it.
fn row_json(row: &TimerRow) -> Value {
    let mut value = json!({ "executionId": row.execution_id.as_str(), "wakeAt": row.wake_at });
    if let Some(redrive) = row.redrive {
        value["redrive"] = json!({ "attempt": redrive.attempt });
    }
    value
}

/// A row from a scenario.
fn row_of(value: &Value) -> TimerRow {
    let execution = id(value["executionId"].as_str().expect("executionId"));
    let wake_at = value["wakeAt"].as_i64().expect("wakeAt");
    match value.get("redrive") {
        Some(flag) => TimerRow::redrive(
            execution,
            wake_at,
            u32::try_from(flag["attempt"].as_u64().expect("attempt")).expect("attempt"),
        ),
        None => TimerRow::wake(execution, wake_at),
    }
}

/// Runs one scenario file; panics naming the scenario, the tick and what
/// differed.
async fn run(path: &Path) {
    let scenario: Value =
        serde_json::from_str(&fs::read_to_string(path).expect("reads")).expect("JSON");
    let name = scenario["name"].as_str().expect("name").to_owned();
    let options = &scenario["options"];

    let events = Arc::new(around(Capability::Conditional, EventFaults::default()));
    let timers = Arc::new(Forwarding {
        inner: Arc::new(MemoryTimerStore::new()) as Arc<dyn TimerStore>,
        hooks: TimerFaults::default(),
    });
    for fault in scenario["faults"].as_array().into_iter().flatten() {
        let execution = fault["executionId"]
            .as_str()
            .expect("executionId")
            .to_owned();
        let table = match fault["kind"].as_str().expect("kind") {
            "contended" => &events.hooks.contended,
            "failRead" => &events.hooks.fail_read,
            "rescheduledBeforeComplete" => &timers.hooks.rescheduled,
            other => panic!("{name}: a fault the scenarios do not know: {other}"),
        };
        table.lock().expect("lock").insert(execution, times(fault));
    }
    for execution in scenario["executions"].as_array().into_iter().flatten() {
        let execution_id = id(execution["id"].as_str().expect("id"));
        let mut written = vec![NewEvent::kernel(KernelKind::ExecutionStarted, 1)];
        if let Some(waits) = execution.get("waits") {
            let mut payload = JsonObject::new();
            payload.insert("waits".to_owned(), waits.clone());
            written.push(NewEvent::kernel(KernelKind::ExecutionSuspended, 1).with_payload(payload));
        }
        events
            .inner
            .append_many(&execution_id, written)
            .await
            .expect("sets up");
    }
    for row in scenario["rows"].as_array().into_iter().flatten() {
        timers.schedule(&row_of(row)).await.expect("schedules");
    }

    let clock = TickClock::default();
    let draw = options.get("draw").and_then(Value::as_f64).unwrap_or(0.5);
    let time = clock.clone();
    let service_options = TimerServiceOptions {
        node: NodeId::new("scenario-node").expect("node"),
        lease: Duration::from_millis(
            options
                .get("leaseMs")
                .and_then(Value::as_u64)
                .unwrap_or(30_000),
        ),
        batch: options.get("batch").and_then(Value::as_u64).unwrap_or(100) as usize,
        policy: policy(options.get("policy")),
        now: Arc::new(move || time.read()),
        random: Arc::new(move || draw),
        on_error: Arc::new(|_| {}),
        ..TimerServiceOptions::default()
    };
    let service: TimerService<dyn EventStore, dyn TimerStore> =
        TimerService::new(events.clone(), timers.clone(), service_options);
    for answers in options["redrivers"].as_array().into_iter().flatten() {
        let answers = answers
            .as_array()
            .expect("a script")
            .iter()
            .map(|a| a.as_str().expect("an answer").to_owned())
            .collect();
        service.register_redriver(Arc::new(Scripted {
            answers,
            calls: AtomicUsize::new(0),
        }));
    }

    for (n, tick) in scenario["ticks"]
        .as_array()
        .expect("ticks")
        .iter()
        .enumerate()
    {
        let at = tick["at"].as_i64().expect("at");
        clock.start(
            at,
            tick.get("laterAt").and_then(Value::as_i64).unwrap_or(at),
        );
        let report = service.poll_once().await;
        let expect = &tick["expect"];
        let what = format!("{name}, tick {} (at {at})", n + 1);
        assert_eq!(
            report_fields(&report),
            expected_report(&expect["report"]),
            "{what}: the report"
        );
        let rows: Vec<Value> = timers
            .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .expect("lists")
            .iter()
            .map(row_json)
            .collect();
        assert_eq!(Value::Array(rows), expect["rows"], "{what}: the timer rows");
        for (execution, count) in expect["resumes"].as_object().into_iter().flatten() {
            let resumes = events
                .inner
                .read_range(&id(execution), 1, None)
                .await
                .expect("reads")
                .iter()
                .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
                .count();
            assert_eq!(
                resumes as u64,
                count.as_u64().expect("a count"),
                "{what}: resumes of {execution}"
            );
        }
    }
}

#[tokio::test]
async fn every_tick_scenario_holds_on_the_rust_service() {
    let mut paths: Vec<PathBuf> = fs::read_dir(scenario_dir())
        .expect("the scenario folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 8, "found {} scenarios", paths.len());
    for path in &paths {
        run(path).await;
    }
}
