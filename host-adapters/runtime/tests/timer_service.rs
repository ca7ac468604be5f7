//! The timer service against real stores, under a virtual clock and a seeded
//! random source: plain wakes, exhaustion, nodes with and without
//! re-drivers, the in-process backoff (no acquire storm), concurrent
//! services and leases, and shutdown.
//!
//! The seed is `TIMER_SERVICE_SEED` if set, else a fixed one; every test
//! that draws prints it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{Hostile, Rival, VirtualClock, id, park_on, resumes, yielding};
use loomfence_conformance::support::{Around, around};
use loomfence_core::{
    AcquireOutcome, Capability, Envelope, ExecutionId, ExecutionView, KernelKind, NewEvent,
    ParkExpectation, ResumeError, ResumeRequest,
    park::Wait,
    redrive::{RedriveExhaustedError, RedrivePolicy},
    timer::{
        Claim, Completed, DueFilter, ExhaustedQuery, Exhaustion, Lease, MAX_TIMER_MS, NodeId,
        RedriveAnswer, TimerRow,
    },
};
use loomfence_runtime::{
    Body, Redriver, RuntimeError, TimerService, clock::seeded_random, resume, timer::PollReport,
    timer::TimerServiceOptions,
};
use loomfence_sqlite::SqliteEventStore;
use loomfence_store::forwarding::Hooks;
use loomfence_store::{
    ClaimPage, EventStore, Forwarding, MemoryEventStore, MemoryTimerStore, StoreError, TimerStore,
};
use serde_json::json;
use tokio::sync::{Notify, watch};

type Service = TimerService<dyn EventStore, dyn TimerStore>;

/// The seed of every random source here; printed by the tests that draw.
fn seed() -> u64 {
    let seed = std::env::var("TIMER_SERVICE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x7157_5eed);
    println!("TIMER_SERVICE_SEED={seed}");
    seed
}

/// What `on_error` received: the exhaustions apart from the rest.
#[derive(Clone, Default)]
struct Sink {
    exhausted: Arc<Mutex<Vec<RedriveExhaustedError>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Sink {
    fn exhausted(&self) -> Vec<RedriveExhaustedError> {
        self.exhausted.lock().expect("lock").clone()
    }
    fn errors(&self) -> Vec<String> {
        self.errors.lock().expect("lock").clone()
    }
}

/// Options for node `node` on `clock`, drawing from `seed`, reporting to
/// `sink`.
fn options(node: &str, clock: &VirtualClock, seed: u64, sink: &Sink) -> TimerServiceOptions {
    let time = clock.clone();
    let sink = sink.clone();
    TimerServiceOptions {
        node: NodeId::new(node).expect("a valid node id"),
        now: Arc::new(move || time.get()),
        random: seeded_random(seed),
        on_error: Arc::new(move |error| match error {
            RuntimeError::Exhausted(exhausted) => {
                sink.exhausted.lock().expect("lock").push(exhausted.clone());
            }
            other => sink.errors.lock().expect("lock").push(other.to_string()),
        }),
        ..TimerServiceOptions::default()
    }
}

fn service(
    events: Arc<dyn EventStore>,
    timers: Arc<dyn TimerStore>,
    options: TimerServiceOptions,
) -> Arc<Service> {
    Arc::new(TimerService::new(events, timers, options))
}

/// Every row of `timers`, due or not.
async fn all_rows(timers: &dyn TimerStore) -> Vec<TimerRow> {
    timers
        .due(MAX_TIMER_MS, 10_000, DueFilter::default())
        .await
        .expect("lists")
}

/// A re-driver that always gives the same answer (or fails), counting calls.
struct Answering {
    answer: Option<RedriveAnswer>,
    calls: AtomicU32,
}

impl Answering {
    fn new(answer: Option<RedriveAnswer>) -> Arc<Self> {
        Arc::new(Self {
            answer,
            calls: AtomicU32::new(0),
        })
    }
}

#[async_trait]
impl Redriver for Answering {
    async fn redrive(&self, _: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.answer
            .ok_or_else(|| RuntimeError::Host("the re-driver broke".into()))
    }
}

/// A re-driver that re-derives its resume from the log as a real one does:
/// it answers the open park conditionally, and says contended when rivals
/// kept the fence moving.
struct Resuming {
    store: Arc<dyn EventStore>,
    clock: VirtualClock,
}

#[async_trait]
impl Redriver for Resuming {
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        let log = self
            .store
            .read_range(execution_id, 1, None)
            .await
            .map_err(RuntimeError::Store)?;
        let Some(park) = ExecutionView::fold(&log).open_park else {
            return Ok(RedriveAnswer::Noop);
        };
        let request = ResumeRequest::new(park.sequence, json!("redriven"), self.clock.get());
        match resume(&*self.store, execution_id, request).await {
            Ok(_) => Ok(RedriveAnswer::Done),
            Err(RuntimeError::Resume(ResumeError::Contended(_))) => Ok(RedriveAnswer::Contended),
            Err(RuntimeError::Resume(ResumeError::Refused(_))) => Ok(RedriveAnswer::Noop),
            Err(other) => Err(other),
        }
    }
}

/// A rival store around a fresh memory store: one dead acquirer before
/// every conditional acquire, whose times it notes.
fn rival_store(clock: &VirtualClock) -> Arc<Hostile> {
    Arc::new(around(Capability::Conditional, Rival::timed(clock)))
}

/// A timer store around another that records the rows each holder retired,
/// and can misbehave on request: ignore leases (every claim takes over
/// every held row), or schedule the row again right before a complete (as
/// a re-park at the same time would), once.
type TimerProbe = Forwarding<Arc<dyn TimerStore>, Probe>;

/// The hooks of a [`TimerProbe`].
struct Probe {
    ignore_leases: bool,
    schedule_before_retire: AtomicBool,
    retired: Mutex<Vec<(NodeId, TimerRow)>>,
    /// How many lease-ignoring claims were made.
    shifts: AtomicI64,
}

impl Probe {
    /// A probe around `inner`.
    fn new(inner: Arc<dyn TimerStore>) -> Arc<TimerProbe> {
        Self::with(inner, false)
    }
    /// A probe around `inner` that ignores leases if `ignore_leases`.
    fn with(inner: Arc<dyn TimerStore>, ignore_leases: bool) -> Arc<TimerProbe> {
        Arc::new(Forwarding {
            inner,
            hooks: Self {
                ignore_leases,
                schedule_before_retire: AtomicBool::new(false),
                retired: Mutex::new(Vec::new()),
                shifts: AtomicI64::new(0),
            },
        })
    }
    /// Records `claim`'s row as retired by its holder if `completed` is done.
    fn retire(&self, claim: &Claim, completed: Completed) -> Completed {
        if completed == Completed::Done {
            self.retired
                .lock()
                .expect("lock")
                .push((claim.holder.clone(), claim.row.clone()));
        }
        completed
    }
}

#[async_trait]
impl Hooks for Probe {
    async fn claim_due(
        &self,
        inner: &dyn TimerStore,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        if !self.ignore_leases {
            return inner.claim_due(lease, limit, filter).await;
        }
        // Every row counts as free: claim as if every earlier claim's lease
        // had ended (each claim a lease later than the one before), and keep
        // only the rows due at the real time.
        let shift = self.shifts.fetch_add(1, Ordering::SeqCst) + 1;
        let later = Lease {
            now: lease.now + shift * 100_000_000,
            ..lease.clone()
        };
        let mut page = inner.claim_due(&later, limit, filter).await?;
        page.claims.retain(|claim| claim.row.wake_at <= lease.now);
        Ok(page)
    }
    async fn complete(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
    ) -> Result<Completed, StoreError> {
        if self.schedule_before_retire.swap(false, Ordering::SeqCst) {
            inner.schedule(&claim.row).await?;
        }
        Ok(self.retire(claim, inner.complete(claim).await?))
    }
    async fn reschedule(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
        next: &TimerRow,
    ) -> Result<Completed, StoreError> {
        Ok(self.retire(claim, inner.reschedule(claim, next).await?))
    }
    async fn exhaust(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError> {
        if self.schedule_before_retire.swap(false, Ordering::SeqCst) {
            inner.schedule(&claim.row).await?;
        }
        Ok(self.retire(claim, inner.exhaust(claim, exhaustion).await?))
    }
}

/// Hooks whose `read_range` waits for a gate to open (announcing that it
/// is waiting): a fire held in the middle, for a kill or a shutdown.
struct Gate {
    open: watch::Sender<bool>,
    entered: Notify,
}

/// `inner` behind a closed [`Gate`].
fn gated(inner: Arc<dyn EventStore>) -> Arc<Around<Gate>> {
    Arc::new(Around {
        inner,
        hooks: Gate {
            open: watch::Sender::new(false),
            entered: Notify::new(),
        },
    })
}

#[async_trait]
impl Hooks for Gate {
    async fn read_range(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        from: u64,
        to: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let mut open = self.open.subscribe();
        if !*open.borrow() {
            self.entered.notify_one();
            open.wait_for(|open| *open).await.expect("the gate lives");
        }
        inner.read_range(id, from, to).await
    }
}

/// `count` executions `timer-<i>`, each parked on one timer at `wake_at`
/// and scheduled.
async fn parked_timers(
    events: &dyn EventStore,
    timers: &dyn TimerStore,
    count: usize,
    wake_at: i64,
) -> Vec<ExecutionId> {
    let mut ids = Vec::new();
    for i in 0..count {
        let execution = id(&format!("timer-{i:03}"));
        park_on(events, &execution, &[Wait::Timer { wake_at }]).await;
        timers
            .schedule(&TimerRow::wake(execution.clone(), wake_at))
            .await
            .expect("schedules");
        ids.push(execution);
    }
    ids
}

// 1. A plain wake ---------------------------------------------------------

/// A parked execution's timer fires once at its time: one
/// `EXECUTION_RESUMED` with the timer's answer, the row retired, nothing
/// before the time and nothing after.
async fn a_plain_wake_fires_once(events: Arc<dyn EventStore>, timers: Arc<dyn TimerStore>) {
    let clock = VirtualClock::at(4_999);
    let sink = Sink::default();
    let order = id("order-7");
    let park = park_on(&*events, &order, &[Wait::Timer { wake_at: 5_000 }]).await;
    let row = TimerRow::wake(order.clone(), 5_000);
    timers.schedule(&row).await.expect("schedules");
    let node = service(
        events.clone(),
        timers.clone(),
        options("node-a", &clock, seed(), &sink),
    );

    let early = node.poll_once().await;
    assert_eq!(early.claimed, 0, "not due at 4999: {early:?}");
    assert_eq!(all_rows(&*timers).await, vec![row.clone()]);
    assert!(resumes(&*events, &order).await.is_empty());

    clock.set(5_000);
    let report = node.poll_once().await;
    assert_eq!(
        (
            report.claimed,
            report.fired,
            report.retired(),
            report.errors
        ),
        (1, 1, 1, 0),
        "{report:?}"
    );
    assert!(all_rows(&*timers).await.is_empty(), "the row is retired");
    let resumed = resumes(&*events, &order).await;
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(
        (resumed[0].sequence, resumed[0].at),
        (park + 1, 5_000),
        "{resumed:?}"
    );
    assert_eq!(
        resumed[0].payload["answer"],
        json!({ "wait": 0, "timer": { "wakeAt": 5000 } })
    );

    clock.set(60_000);
    let later = node.poll_once().await;
    assert_eq!(later.claimed, 0, "{later:?}");
    assert_eq!(resumes(&*events, &order).await.len(), 1);
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
    assert!(node.backoff().is_empty());
}

#[tokio::test]
async fn a_plain_wake_fires_once_on_memory() {
    a_plain_wake_fires_once(
        Arc::new(MemoryEventStore::new()),
        Arc::new(MemoryTimerStore::new()),
    )
    .await;
}

#[tokio::test]
async fn a_plain_wake_fires_once_on_sqlite() {
    let events = SqliteEventStore::open_in_memory().await.expect("opens");
    let timers = Arc::new(events.timers());
    a_plain_wake_fires_once(Arc::new(events), timers).await;
}

/// A plain wake's resume goes to `on_resumed`, once, with the token the
/// fire acquired, so the host can start the body; a body written through it
/// lands under that token. An obsolete wake hands nothing on.
#[tokio::test]
async fn a_plain_wakes_resume_goes_to_on_resumed_once() {
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let order = id("order-hook");
    park_on(&*events, &order, &[Wait::Timer { wake_at: 5_000 }]).await;
    timers
        .schedule(&TimerRow::wake(order.clone(), 5_000))
        .await
        .expect("schedules");
    let handed = Arc::new(Mutex::new(Vec::new()));
    let into = handed.clone();
    let node = service(
        events.clone(),
        timers.clone(),
        TimerServiceOptions {
            on_resumed: Arc::new(move |resumed| into.lock().expect("lock").push(resumed)),
            ..options("n", &clock, seed(), &sink)
        },
    );
    let report = node.poll_once().await;
    assert_eq!(report.fired, 1, "{report:?}");
    let resumed = std::mem::take(&mut *handed.lock().expect("lock"));
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0].execution_id, order);
    let token = events.current_fence(&order).await.expect("reads the fence");
    assert_eq!(resumed[0].fence, Some(token), "the fire's own token");

    let mut body = Body::new(&*events, resumed.into_iter().next().expect("one"));
    let step = body
        .append(NewEvent::kernel(KernelKind::StepCompleted, 5_001))
        .await
        .expect("the body appends under the fire's token");
    assert_eq!(step.fence().expect("a readable fence"), Some(token));

    timers
        .schedule(&TimerRow::wake(order.clone(), 5_000))
        .await
        .expect("schedules again");
    let again = node.poll_once().await;
    assert_eq!(again.obsolete, 1, "{again:?}");
    assert!(handed.lock().expect("lock").is_empty(), "nothing handed on");
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
}

/// A timer whose park was answered meanwhile is obsolete: retired without
/// a resume.
#[tokio::test]
async fn an_obsolete_wake_is_retired_without_a_resume() {
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let order = id("order-8");
    let park = park_on(&*events, &order, &[Wait::Timer { wake_at: 5_000 }]).await;
    resume(
        &*events,
        &order,
        ResumeRequest::new(park, json!("manual"), 10),
    )
    .await
    .expect("resumes by hand");
    timers
        .schedule(&TimerRow::wake(order.clone(), 5_000))
        .await
        .expect("schedules");
    let node = service(
        events.clone(),
        timers.clone(),
        options("n", &clock, seed(), &sink),
    );
    let report = node.poll_once().await;
    assert_eq!((report.obsolete, report.fired), (1, 0), "{report:?}");
    assert!(all_rows(&*timers).await.is_empty());
    assert_eq!(
        resumes(&*events, &order).await.len(),
        1,
        "only the manual one"
    );
}

// 2. Exhaustion -------------------------------------------------------------

/// A re-drive chain whose every try is contended (a rival fences behind
/// every acquire): rows `0..max_attempts` are written, each later than the
/// last, then the chain gives up: exactly one `RedriveExhaustedError`, and
/// no row is left.
#[tokio::test]
async fn exhaustion_is_reported_once_and_retires_the_chain() {
    let clock = VirtualClock::at(1_000);
    let sink = Sink::default();
    let store = rival_store(&clock);
    let events: Arc<dyn EventStore> = store.clone();
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let parent = id("parent");
    park_on(&*events, &parent, &[Wait::Timer { wake_at: 999_999 }]).await;
    timers
        .schedule(&TimerRow::redrive(parent.clone(), 1_000, 0))
        .await
        .expect("schedules");
    let policy = RedrivePolicy::default();
    let node = service(
        events.clone(),
        timers.clone(),
        options("n", &clock, seed(), &sink),
    );
    node.register_redriver(Arc::new(Resuming {
        store: events.clone(),
        clock: clock.clone(),
    }));

    let mut chain = Vec::new();
    let mut total = PollReport::default();
    while let Some(row) = all_rows(&*timers).await.first().cloned() {
        assert!(chain.len() <= 20, "the chain does not end: {chain:?}");
        clock.set(row.wake_at);
        chain.push(row);
        total += node.poll_once().await;
    }

    let max = policy.max_attempts;
    let attempts: Vec<u32> = chain
        .iter()
        .map(|row| row.redrive.expect("a re-drive row").attempt)
        .collect();
    assert_eq!(attempts, (0..max).collect::<Vec<_>>(), "{chain:?}");
    for (n, pair) in chain.windows(2).enumerate() {
        let (fired, next) = (&pair[0], &pair[1]);
        assert!(next.wake_at > fired.wake_at, "{chain:?}");
        // Fired at its own time, the next row is at most the next try's
        // ceiling later.
        let ceiling =
            i64::try_from(policy.ceiling_ms(u32::try_from(n).expect("small") + 1)).expect("small");
        assert!(next.wake_at - fired.wake_at <= ceiling.max(1), "{chain:?}");
    }
    let exhausted = sink.exhausted();
    assert_eq!(exhausted.len(), 1, "exactly one report: {exhausted:?}");
    assert_eq!(exhausted[0].execution_id, parent);
    assert_eq!(exhausted[0].attempts, max);
    assert_eq!(exhausted[0].wake_at, chain.last().expect("rows").wake_at);
    assert_eq!(
        (total.rescheduled, total.exhausted, total.errors),
        (usize::try_from(max).expect("small") - 1, 1, 0),
        "{total:?}"
    );
    assert!(all_rows(&*timers).await.is_empty(), "the row is retired");
    assert!(resumes(&*events, &parent).await.is_empty(), "never resumed");
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
}

/// An exhaustion whose exhaust is answered `NotHeld` (the row was
/// scheduled again under the fire) is void: not reported, not recorded.
/// The next fire that retires the row reports and records it, once.
#[tokio::test]
async fn an_exhaustion_is_reported_only_after_its_exhaust_is_done() {
    let clock = VirtualClock::at(1_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let probe = Probe::new(Arc::new(MemoryTimerStore::new()));
    let timers: Arc<dyn TimerStore> = probe.clone();
    let parent = id("parent");
    let policy = RedrivePolicy::default();
    let last = TimerRow::redrive(parent.clone(), 1_000, policy.max_attempts - 1);
    timers.schedule(&last).await.expect("schedules");
    let node = service(events, timers.clone(), options("n", &clock, seed(), &sink));
    node.register_redriver(Answering::new(Some(RedriveAnswer::Contended)));

    probe
        .hooks
        .schedule_before_retire
        .store(true, Ordering::SeqCst);
    let void = node.poll_once().await;
    assert_eq!((void.not_held, void.exhausted), (1, 0), "{void:?}");
    assert!(
        sink.exhausted().is_empty(),
        "a void decision is not reported"
    );
    assert_eq!(all_rows(&*timers).await, vec![last.clone()]);
    let records = || async {
        timers
            .exhausted(&ExhaustedQuery::default())
            .await
            .expect("lists the records")
    };
    assert!(
        records().await.is_empty(),
        "a void decision records nothing"
    );

    let retired = node.poll_once().await;
    assert_eq!((retired.not_held, retired.exhausted), (0, 1), "{retired:?}");
    assert_eq!(sink.exhausted().len(), 1);
    assert!(all_rows(&*timers).await.is_empty());
    let recorded = records().await;
    assert_eq!(recorded.len(), 1, "recorded once: {recorded:?}");
    assert_eq!(recorded[0].row, last);
    assert_eq!(recorded[0].attempts, policy.max_attempts);
}

/// A re-driver's error is a failed answer: the chain continues with the
/// next row, and the error goes to `on_error`.
#[tokio::test]
async fn a_failing_redriver_continues_the_chain_and_is_reported() {
    let clock = VirtualClock::at(1_000);
    let sink = Sink::default();
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let parent = id("parent");
    timers
        .schedule(&TimerRow::redrive(parent.clone(), 1_000, 0))
        .await
        .expect("schedules");
    let node = service(
        Arc::new(MemoryEventStore::new()),
        timers.clone(),
        options("n", &clock, seed(), &sink),
    );
    node.register_redriver(Answering::new(None));
    let report = node.poll_once().await;
    assert_eq!((report.rescheduled, report.errors), (1, 1), "{report:?}");
    let rows = all_rows(&*timers).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].redrive.map(|r| r.attempt), Some(1));
    assert!(rows[0].wake_at > 1_000);
    let errors = sink.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("the re-driver broke"), "{errors:?}");
}

// 3. Nodes with and without re-drivers ----------------------------------------

/// A node with no re-driver does not claim a re-drive row at all (its
/// plain wakes behind the row still fire, with a page of one row); a node
/// with one re-drives it, in registration order.
#[tokio::test]
async fn a_node_without_a_redriver_leaves_the_row_to_one_with() {
    let clock = VirtualClock::at(2_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let parent = id("parent");
    let redrive = TimerRow::redrive(parent.clone(), 1_000, 0);
    timers.schedule(&redrive).await.expect("schedules");
    let waker = id("waker");
    park_on(&*events, &waker, &[Wait::Timer { wake_at: 1_500 }]).await;
    timers
        .schedule(&TimerRow::wake(waker.clone(), 1_500))
        .await
        .expect("schedules");

    let without = service(
        events.clone(),
        timers.clone(),
        TimerServiceOptions {
            batch: 1,
            ..options("without", &clock, seed(), &sink)
        },
    );
    let report = without.poll_once().await;
    assert_eq!(
        (report.claimed, report.fired, report.left, report.released),
        (1, 1, 0, 0),
        "only the plain wake is claimed: {report:?}"
    );
    assert_eq!(
        all_rows(&*timers).await,
        vec![redrive.clone()],
        "the row stays"
    );
    let again = without.poll_once().await;
    assert_eq!(again.claimed, 0, "{again:?}");

    let with = service(
        events,
        timers.clone(),
        options("with", &clock, seed(), &sink),
    );
    let noop = Answering::new(Some(RedriveAnswer::Noop));
    let done = Answering::new(Some(RedriveAnswer::Done));
    let never = Answering::new(Some(RedriveAnswer::Contended));
    with.register_redriver(noop.clone());
    with.register_redriver(done.clone());
    with.register_redriver(never.clone());
    let report = with.poll_once().await;
    assert_eq!((report.claimed, report.redriven), (1, 1), "{report:?}");
    assert_eq!(
        [&noop, &done, &never].map(|r| r.calls.load(Ordering::SeqCst)),
        [1, 1, 0],
        "asked in order until one is not noop"
    );
    assert!(all_rows(&*timers).await.is_empty());
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
}

// 4. No acquire storm -----------------------------------------------------------

/// Fires one contended plain wake on every poll of a virtual clock stepping
/// `STEP` ms from `START` to `END`; returns the acquire times and the draws
/// the service took, with the times they were taken at.
async fn contended_wake(policy: RedrivePolicy, seed: u64) -> (Vec<i64>, Vec<(i64, f64)>) {
    let clock = VirtualClock::at(START);
    let sink = Sink::default();
    let store = rival_store(&clock);
    let events: Arc<dyn EventStore> = store.clone();
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let order = id("order-9");
    park_on(&*events, &order, &[Wait::Timer { wake_at: START }]).await;
    timers
        .schedule(&TimerRow::wake(order.clone(), START))
        .await
        .expect("schedules");
    let draws = Arc::new(Mutex::new(Vec::new()));
    let random = seeded_random(seed);
    let (taken, time) = (draws.clone(), clock.clone());
    let node = service(
        events.clone(),
        timers.clone(),
        TimerServiceOptions {
            policy,
            random: Arc::new(move || {
                let draw = random();
                taken.lock().expect("lock").push((time.get(), draw));
                draw
            }),
            ..options("n", &clock, seed, &sink)
        },
    );
    let mut now = START;
    while now <= END {
        clock.set(now);
        let report = node.poll_once().await;
        assert_eq!(report.errors, 0, "{report:?} {:?}", sink.errors());
        now += STEP;
    }
    assert!(resumes(&*events, &order).await.is_empty(), "never lands");
    assert_eq!(all_rows(&*timers).await.len(), 1, "the row stays");
    let times = store.hooks.times();
    let draws = draws.lock().expect("lock").clone();
    (times, draws)
}

const START: i64 = 10_000;
const STEP: i64 = 10;
const END: i64 = START + 60_000;

/// The acquire times grouped by time: `(time, acquires at it)`.
fn fires(times: &[i64]) -> Vec<(i64, usize)> {
    let mut fires: Vec<(i64, usize)> = Vec::new();
    for &time in times {
        match fires.last_mut() {
            Some((at, count)) if *at == time => *count += 1,
            _ => fires.push((time, 1)),
        }
    }
    fires
}

/// A contended plain wake makes no acquire before its next-try time: over
/// a minute of polls every 10 ms, the service acquires exactly at the
/// tries the backoff schedule allows (each at the first poll at or after
/// `now + delay(n)`, with the draw of the fire that backed off), and the
/// control without a backoff (zero delays) acquires on every poll.
#[tokio::test]
async fn a_contended_plain_wake_makes_no_acquire_before_its_next_try() {
    let seed = seed();
    let policy = RedrivePolicy {
        max_attempts: 1_000_000,
        ..RedrivePolicy::default()
    };
    let (times, draws) = contended_wake(policy, seed).await;
    let fired = fires(&times);
    let per_fire = fired[0].1;
    assert!(
        fired.iter().all(|(_, count)| *count == per_fire),
        "every fire makes the same acquires: {fired:?}"
    );

    // The schedule, replayed from the draws the fires took.
    let mut expected = Vec::new();
    let mut at = START;
    let mut attempt = 0;
    while at <= END {
        expected.push(at);
        let (_, draw) = draws
            .iter()
            .find(|(time, _)| *time == at)
            .copied()
            .expect("a draw per poll");
        let delay = policy.delay_ms(
            attempt,
            loomfence_core::redrive::Draw::new(draw).expect("a draw"),
        );
        let next_try = at + i64::try_from(delay).expect("small");
        // The first poll at or after the next try.
        at = START + (next_try - START + STEP - 1) / STEP * STEP;
        attempt += 1;
    }
    let got: Vec<i64> = fired.iter().map(|(time, _)| *time).collect();
    assert_eq!(
        got.len(),
        expected.len(),
        "fires that acquired: {} (first {:?}), the schedule allows {} ({:?})",
        got.len(),
        &got[..got.len().min(12)],
        expected.len(),
        expected
    );
    assert_eq!(got, expected, "acquires only at the scheduled tries");
    assert_eq!(times.len(), expected.len() * per_fire);

    let (storm, _) = contended_wake(
        RedrivePolicy {
            base_ms: 0,
            ..policy
        },
        seed,
    )
    .await;
    let polls = usize::try_from((END - START) / STEP + 1).expect("small");
    assert_eq!(
        storm.len(),
        polls * per_fire,
        "without a backoff, every poll"
    );
    println!(
        "acquires over {polls} polls: {} with the backoff ({} tries), {} without",
        times.len(),
        expected.len(),
        storm.len()
    );
    assert!(storm.len() > 100 * times.len(), "the storm is gone");
}

/// A contended plain wake on the default policy gives up after its
/// retries: the wake is retired and reported once.
#[tokio::test]
async fn a_contended_plain_wake_gives_up_after_its_retries() {
    let seed = seed();
    let clock = VirtualClock::at(START);
    let sink = Sink::default();
    let store = rival_store(&clock);
    let events: Arc<dyn EventStore> = store.clone();
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let order = id("order-10");
    park_on(&*events, &order, &[Wait::Timer { wake_at: START }]).await;
    timers
        .schedule(&TimerRow::wake(order.clone(), START))
        .await
        .expect("schedules");
    let node = service(events, timers.clone(), options("n", &clock, seed, &sink));
    let mut total = PollReport::default();
    let mut now = START;
    while !all_rows(&*timers).await.is_empty() {
        assert!(now < START + 600_000, "gives up within ten minutes");
        clock.set(now);
        total += node.poll_once().await;
        now += 100;
    }
    let max = usize::try_from(RedrivePolicy::default().max_attempts).expect("small");
    assert_eq!((total.backed_off, total.exhausted), (max, 1), "{total:?}");
    assert_eq!(sink.exhausted().len(), 1);
    assert!(node.backoff().is_empty(), "the entry goes with the row");
}

/// A backed-off wake's claim is released at the end of the tick: another
/// node claims it at once (and backs off on its own), while this node
/// claims it again but makes no acquire before its next try.
#[tokio::test]
async fn a_backed_off_wake_is_released_for_other_nodes() {
    let clock = VirtualClock::at(START);
    let sink = Sink::default();
    let store = rival_store(&clock);
    let events: Arc<dyn EventStore> = store.clone();
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let order = id("order-11");
    park_on(&*events, &order, &[Wait::Timer { wake_at: START }]).await;
    timers
        .schedule(&TimerRow::wake(order.clone(), START))
        .await
        .expect("schedules");
    let acquires = || store.hooks.times.lock().expect("lock").len();
    let seed = seed();
    let a = service(
        events.clone(),
        timers.clone(),
        options("a", &clock, seed, &sink),
    );
    let b = service(
        events.clone(),
        timers.clone(),
        options("b", &clock, seed, &sink),
    );

    let first = a.poll_once().await;
    assert_eq!((first.backed_off, first.released), (1, 1), "{first:?}");
    let after_a = acquires();
    assert!(after_a > 0);
    let entry = a.backoff().get(&order).expect("an entry");
    assert!(entry.next_try_at > START, "{entry:?}");

    let other = b.poll_once().await;
    assert_eq!(
        (other.claimed, other.backed_off),
        (1, 1),
        "free at once: {other:?}"
    );
    let after_b = acquires();
    assert!(after_b > after_a, "b acquires on its own schedule");

    let again = a.poll_once().await;
    assert_eq!(
        (again.claimed, again.not_yet, again.released),
        (1, 1, 1),
        "{again:?}"
    );
    assert_eq!(acquires(), after_b, "no acquire before the next try");
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
}

/// A page of rows this node backs off does not hide the rows behind it:
/// the tick claims on past a full page of left rows.
#[tokio::test]
async fn left_rows_do_not_starve_the_rows_behind_them() {
    let clock = VirtualClock::at(START + 1_000);
    let sink = Sink::default();
    let store = rival_store(&clock);
    let events: Arc<dyn EventStore> = store.clone();
    let memory: Arc<dyn EventStore> = store.inner.clone();
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    // Three contended wakes first, then one whose park was answered by
    // hand (past the rival), so its fire is obsolete and retires it.
    for i in 0..3 {
        let contended = id(&format!("contended-{i}"));
        park_on(&*events, &contended, &[Wait::Timer { wake_at: START }]).await;
        timers
            .schedule(&TimerRow::wake(contended, START))
            .await
            .expect("schedules");
    }
    let behind = id("behind");
    let park = park_on(&*memory, &behind, &[Wait::Timer { wake_at: START + 1 }]).await;
    resume(
        &*memory,
        &behind,
        ResumeRequest::new(park, json!("manual"), 0),
    )
    .await
    .expect("resumes by hand, past the rival");
    timers
        .schedule(&TimerRow::wake(behind.clone(), START + 1))
        .await
        .expect("schedules");
    let node = service(
        events,
        timers.clone(),
        TimerServiceOptions {
            batch: 2,
            ..options("n", &clock, seed(), &sink)
        },
    );
    let report = node.poll_once().await;
    assert_eq!(
        (report.claimed, report.backed_off, report.released),
        (4, 3, 3),
        "{report:?}"
    );
    assert_eq!(report.retired(), 1, "the row behind is fired: {report:?}");
    assert!(
        !all_rows(&*timers)
            .await
            .iter()
            .any(|row| row.execution_id == behind),
        "retired"
    );
}

/// A fire that fails on a store error leaves its claim to expire: the
/// failure goes to `on_error`, no other node fires the row within the
/// lease, and one fires it after.
#[tokio::test]
async fn a_failed_fire_leaves_its_claim_to_expire() {
    struct Down {
        once: AtomicBool,
    }
    #[async_trait]
    impl Hooks for Down {
        async fn acquire_fence_if(
            &self,
            inner: &dyn EventStore,
            id: &ExecutionId,
            expect: ParkExpectation,
        ) -> Result<AcquireOutcome, StoreError> {
            if self.once.swap(false, Ordering::SeqCst) {
                return Err(StoreError::Backend(
                    loomfence_store::BackendError::retryable("the database is down"),
                ));
            }
            inner.acquire_fence_if(id, expect).await
        }
    }
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(around(
        Capability::Conditional,
        Down {
            once: AtomicBool::new(true),
        },
    ));
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let ids = parked_timers(&*events, &*timers, 1, 1_000).await;
    let a = service(
        events.clone(),
        timers.clone(),
        options("a", &clock, seed(), &sink),
    );
    let failed = a.poll_once().await;
    assert_eq!(
        (failed.claimed, failed.errors, failed.released),
        (1, 1, 0),
        "{failed:?}"
    );
    let errors = sink.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("the database is down"), "{errors:?}");

    let b = service(
        events.clone(),
        timers.clone(),
        options("b", &clock, seed(), &sink),
    );
    assert_eq!(b.poll_once().await.claimed, 0, "held until the lease ends");
    let lease = i64::try_from(b.options().lease.as_millis()).expect("small");
    clock.set(5_000 + lease);
    let report = b.poll_once().await;
    assert_eq!((report.claimed, report.fired), (1, 1), "{report:?}");
    assert_eq!(resumes(&*events, &ids[0]).await.len(), 1);
}

/// A claim the timer store refuses is reported, and the tick fires nothing.
#[tokio::test]
async fn a_refused_claim_is_reported() {
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    parked_timers(&*events, &*timers, 1, 1_000).await;
    let node = service(
        events,
        timers,
        TimerServiceOptions {
            batch: 0,
            ..options("n", &clock, seed(), &sink)
        },
    );
    let report = node.poll_once().await;
    assert_eq!((report.claimed, report.errors), (0, 1), "{report:?}");
    let errors = sink.errors();
    assert!(errors[0].starts_with("timer store: limit 0"), "{errors:?}");
}

// 5. Several services, leases -----------------------------------------------------

/// What two services did to one store's rows.
struct Duel {
    a: PollReport,
    b: PollReport,
    /// Rows retired, by holder.
    retired: BTreeMap<NodeId, Vec<TimerRow>>,
}

/// Two services on one timer store poll concurrently until no row is left
/// (or `rounds` ticks each).
async fn duel(
    events: Arc<dyn EventStore>,
    probe: Arc<TimerProbe>,
    clock: &VirtualClock,
    sink: &Sink,
) -> Duel {
    let timers: Arc<dyn TimerStore> = probe.clone();
    let small = |node: &str, seed: u64| TimerServiceOptions {
        batch: 16,
        ..options(node, clock, seed, sink)
    };
    let seed = seed();
    let a = service(events.clone(), timers.clone(), small("node-a", seed));
    let b = service(events, timers.clone(), small("node-b", seed + 1));
    let (mut total_a, mut total_b) = (PollReport::default(), PollReport::default());
    for _ in 0..100 {
        let (ra, rb) = tokio::join!(a.poll_once(), b.poll_once());
        total_a += ra;
        total_b += rb;
        if ra.claimed == 0 && rb.claimed == 0 {
            break;
        }
    }
    let mut retired: BTreeMap<NodeId, Vec<TimerRow>> = BTreeMap::new();
    for (holder, row) in probe.hooks.retired.lock().expect("lock").iter() {
        retired.entry(holder.clone()).or_default().push(row.clone());
    }
    Duel {
        a: total_a,
        b: total_b,
        retired,
    }
}

const ROWS: usize = 200;

/// Two services polling one store concurrently fire every row exactly
/// once: each fire is a clean `Fired` (no second fire found it obsolete,
/// backed off or lost its row), each row is retired by one node, and each
/// execution has one `EXECUTION_RESUMED`.
async fn two_services_never_fire_the_same_row(
    events: Arc<dyn EventStore>,
    timers: Arc<dyn TimerStore>,
) {
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let ids = parked_timers(&*events, &*timers, ROWS, 1_000).await;
    let probe = Probe::new(timers.clone());
    let duel = duel(events.clone(), probe, &clock, &sink).await;
    println!("node a: {:?}\nnode b: {:?}", duel.a, duel.b);
    let mut total = duel.a;
    total += duel.b;
    assert_eq!(
        (
            total.fired,
            total.obsolete,
            total.backed_off,
            total.not_held,
            total.errors
        ),
        (ROWS, 0, 0, 0, 0),
        "{total:?} {:?}",
        sink.errors()
    );
    assert!(
        duel.a.fired > 0 && duel.b.fired > 0,
        "both took part: {total:?}"
    );
    let retired: Vec<&TimerRow> = duel.retired.values().flatten().collect();
    let distinct: BTreeSet<&TimerRow> = retired.iter().copied().collect();
    assert_eq!((retired.len(), distinct.len()), (ROWS, ROWS));
    for execution in &ids {
        assert_eq!(resumes(&*events, execution).await.len(), 1, "{execution}");
    }
    assert!(all_rows(&*timers).await.is_empty());
}

#[tokio::test]
async fn two_services_never_fire_the_same_row_on_memory() {
    // Every event store call yields, so the two ticks interleave at each.
    let events = Arc::new(yielding());
    two_services_never_fire_the_same_row(events, Arc::new(MemoryTimerStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_never_fire_the_same_row_on_sqlite() {
    let events = SqliteEventStore::open_in_memory().await.expect("opens");
    let timers = Arc::new(events.timers());
    two_services_never_fire_the_same_row(Arc::new(events), timers).await;
}

/// The control: with a timer store whose claims ignore leases, the same
/// duel fires rows twice, and the checks above see it.
#[tokio::test]
async fn control_claims_that_ignore_the_lease_fire_rows_twice() {
    let events: Arc<dyn EventStore> = Arc::new(yielding());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let ids = parked_timers(&*events, &*timers, ROWS, 1_000).await;
    let probe = Probe::with(timers.clone(), true);
    let duel = duel(events.clone(), probe, &clock, &sink).await;
    let mut total = duel.a;
    total += duel.b;
    println!("{total:?}");
    assert!(
        total.obsolete + total.backed_off + total.not_held > 0,
        "double fires are seen: {total:?}"
    );
    // The park-conditional resume still resumes each park once: the
    // double fires are wasted work (and acquires), not double resumes.
    for execution in &ids {
        assert_eq!(resumes(&*events, execution).await.len(), 1, "{execution}");
    }
}

/// A service killed in the middle of a tick (its task dropped, no
/// shutdown) leaves its claims: another service cannot fire the rows
/// before the lease ends, and fires each exactly once after.
async fn a_killed_service_rows_fire_after_the_lease(
    events: Arc<dyn EventStore>,
    timers: Arc<dyn TimerStore>,
) {
    const COUNT: usize = 12;
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let ids = parked_timers(&*events, &*timers, COUNT, 1_000).await;
    let gated = gated(events.clone());
    let killed = service(
        gated.clone(),
        timers.clone(),
        options("killed", &clock, seed(), &sink),
    );
    let lease = i64::try_from(killed.options().lease.as_millis()).expect("small");
    let task = tokio::spawn({
        let killed = killed.clone();
        async move { killed.poll_once().await }
    });
    gated.hooks.entered.notified().await;
    task.abort();
    assert!(task.await.expect_err("killed").is_cancelled());

    let other = service(
        events.clone(),
        timers.clone(),
        options("other", &clock, seed(), &sink),
    );
    for now in [5_000, 5_000 + lease - 1] {
        clock.set(now);
        let report = other.poll_once().await;
        assert_eq!(report.claimed, 0, "at {now}, within the lease: {report:?}");
    }
    assert_eq!(all_rows(&*timers).await.len(), COUNT);
    clock.set(5_000 + lease);
    let report = other.poll_once().await;
    assert_eq!((report.claimed, report.fired), (COUNT, COUNT), "{report:?}");
    for execution in &ids {
        assert_eq!(resumes(&*events, execution).await.len(), 1, "{execution}");
    }
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
}

#[tokio::test]
async fn a_killed_service_rows_fire_after_the_lease_on_memory() {
    a_killed_service_rows_fire_after_the_lease(
        Arc::new(MemoryEventStore::new()),
        Arc::new(MemoryTimerStore::new()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_service_rows_fire_after_the_lease_on_sqlite() {
    let events = SqliteEventStore::open_in_memory().await.expect("opens");
    let timers = Arc::new(events.timers());
    a_killed_service_rows_fire_after_the_lease(Arc::new(events), timers).await;
}

/// A tick's claims whose lease ends before their fire begins are not
/// fired: they may be another node's by then.
#[tokio::test]
async fn a_claim_whose_lease_ended_is_not_fired() {
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let ids = parked_timers(&*events, &*timers, 3, 1_000).await;
    // The clock jumps past the lease during the first fire's resume.
    struct Jump {
        clock: VirtualClock,
    }
    #[async_trait]
    impl Hooks for Jump {
        async fn acquire_fence_if(
            &self,
            inner: &dyn EventStore,
            id: &ExecutionId,
            expect: ParkExpectation,
        ) -> Result<AcquireOutcome, StoreError> {
            self.clock.set(self.clock.get() + 60_000);
            inner.acquire_fence_if(id, expect).await
        }
    }
    let jumping: Arc<dyn EventStore> = Arc::new(Around {
        inner: events.clone(),
        hooks: Jump {
            clock: clock.clone(),
        },
    });
    let node = service(
        jumping,
        timers.clone(),
        options("slow", &clock, seed(), &sink),
    );
    let report = node.poll_once().await;
    assert_eq!(
        (report.claimed, report.fired, report.lapsed),
        (3, 1, 2),
        "{report:?}"
    );
    assert_eq!(resumes(&*events, &ids[0]).await.len(), 1);
    assert!(resumes(&*events, &ids[1]).await.is_empty());
    assert_eq!(
        all_rows(&*timers).await.len(),
        2,
        "free for the next claimer"
    );
}

// 6. The loop and its shutdown ------------------------------------------------------

/// The spawned loop fires due rows by itself, and stops on shutdown.
#[tokio::test]
async fn the_spawned_loop_fires_due_rows() {
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let ids = parked_timers(&*events, &*timers, 3, 1_000).await;
    let node = service(
        events.clone(),
        timers.clone(),
        TimerServiceOptions {
            poll_interval: Duration::from_millis(5),
            ..options("looping", &clock, seed(), &sink)
        },
    );
    let handle = node.spawn();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !all_rows(&*timers).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the loop fires the rows");
    handle.shutdown().await;
    for execution in &ids {
        assert_eq!(resumes(&*events, execution).await.len(), 1);
    }
    // Stopped: a new due row stays.
    let late = id("late");
    park_on(&*events, &late, &[Wait::Timer { wake_at: 1_000 }]).await;
    timers
        .schedule(&TimerRow::wake(late.clone(), 1_000))
        .await
        .expect("schedules");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        all_rows(&*timers).await.len(),
        1,
        "no tick after the shutdown"
    );
}

/// A graceful shutdown in the middle of a tick finishes the fire in hand
/// and releases the claims it has not fired: another service claims them
/// at once, long before their lease would have ended.
#[tokio::test]
async fn shutdown_releases_the_claims_not_fired() {
    const COUNT: usize = 5;
    let clock = VirtualClock::at(5_000);
    let sink = Sink::default();
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let timers: Arc<dyn TimerStore> = Arc::new(MemoryTimerStore::new());
    let ids = parked_timers(&*events, &*timers, COUNT, 1_000).await;
    let gated = gated(events.clone());
    let stopping = service(
        gated.clone(),
        timers.clone(),
        TimerServiceOptions {
            poll_interval: Duration::from_millis(5),
            ..options("stopping", &clock, seed(), &sink)
        },
    );
    let handle = stopping.clone().spawn();
    gated.hooks.entered.notified().await;
    // Ask to stop while the first fire is held, then let it go on.
    let shutdown = tokio::spawn(handle.shutdown());
    tokio::time::sleep(Duration::from_millis(20)).await;
    gated.hooks.open.send_replace(true);
    tokio::time::timeout(Duration::from_secs(10), shutdown)
        .await
        .expect("stops")
        .expect("no panic");

    assert_eq!(
        resumes(&*events, &ids[0]).await.len(),
        1,
        "the fire in hand ends"
    );
    assert_eq!(all_rows(&*timers).await.len(), COUNT - 1);
    let other = service(
        events.clone(),
        timers.clone(),
        options("other", &clock, seed(), &sink),
    );
    let report = other.poll_once().await;
    assert_eq!(
        (report.claimed, report.fired),
        (COUNT - 1, COUNT - 1),
        "released, so claimable at once: {report:?}"
    );
    for execution in &ids {
        assert_eq!(resumes(&*events, execution).await.len(), 1, "{execution}");
    }
    assert!(sink.errors().is_empty(), "{:?}", sink.errors());
}
