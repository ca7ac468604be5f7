//! Live re-drive end to end: the child supervisor's resume is contended by
//! dead acquirers, it writes a re-drive row, and a timer service with the
//! supervisor's re-driver resumes the parent, with backoff and no manual
//! recovery anywhere. The control runs the same world with the flag off:
//! the parent is left parked for an operator.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use common::{Hostile, Rival, VirtualClock, finish, id, park_on, resumes};
use loomfence_conformance::support::around;
use loomfence_core::{
    Capability, KernelKind,
    park::Wait,
    timer::{DueFilter, MAX_TIMER_MS, NodeId, TimerRow},
};
use loomfence_runtime::{
    ChildSupervisor, Features, TimerService, clock::seeded_random, supervise::Supervised,
    supervise::SupervisorOptions, timer::PollReport, timer::TimerServiceOptions,
};
use loomfence_store::{EventStore, MemoryTimerStore, TimerStore};
use serde_json::json;

/// When the world starts, in ms.
const T0: i64 = 1_000_000;

/// The seed of both random sources; printed, and replayed from
/// `TIMER_SERVICE_SEED`.
fn seed() -> u64 {
    let seed = std::env::var("TIMER_SERVICE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x11fe_d21e);
    println!("TIMER_SERVICE_SEED={seed}");
    seed
}

/// A parent parked on one child that has ended, behind three dead
/// acquirers who take the fence before every conditional acquire while
/// they are `fencing`.
struct World {
    events: Arc<Hostile>,
    timers: Arc<MemoryTimerStore>,
    clock: VirtualClock,
    supervisor: Arc<ChildSupervisor<Hostile>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl World {
    async fn new(redrive: bool, seed: u64) -> Self {
        let events = Arc::new(around(Capability::Conditional, Rival::new(3)));
        let timers = Arc::new(MemoryTimerStore::new());
        let clock = VirtualClock::at(T0);
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        let options = SupervisorOptions {
            features: Features::none().with_redrive(redrive),
            redrive: Some(Arc::clone(&timers) as Arc<dyn TimerStore>),
            now: clock.clock(),
            random: seeded_random(seed),
            on_error: Arc::new(move |parent, error| {
                sink.lock()
                    .expect("lock")
                    .push(format!("supervisor {parent}: {error}"));
            }),
            ..SupervisorOptions::default()
        };
        let supervisor = Arc::new(ChildSupervisor::new(Arc::clone(&events), options));
        park_on(&*events, &id("parent"), &[Wait::Child(id("child"))]).await;
        // The parent was fenced once, by a node that died: the supervisor's
        // unfenced first try meets a stale fence and goes conditional.
        events.acquire_fence(&id("parent")).await.expect("fenced");
        finish(
            &*events,
            &id("child"),
            KernelKind::ExecutionCompleted,
            json!({ "total": 7 }),
        )
        .await;
        Self {
            events,
            timers,
            clock,
            supervisor,
            errors,
        }
    }

    /// A timer service on this world with the supervisor's re-driver.
    fn service(&self, seed: u64) -> TimerService<Hostile, MemoryTimerStore> {
        let sink = Arc::clone(&self.errors);
        let service = TimerService::new(
            Arc::clone(&self.events),
            Arc::clone(&self.timers),
            TimerServiceOptions {
                node: NodeId::new("node-a").expect("a node id"),
                now: self.clock.clock(),
                random: seeded_random(seed ^ 1),
                on_error: Arc::new(move |error| {
                    sink.lock().expect("lock").push(format!("service: {error}"));
                }),
                ..TimerServiceOptions::default()
            },
        );
        service.register_redriver(self.supervisor.redriver());
        service
    }

    async fn rows(&self) -> Vec<TimerRow> {
        self.timers
            .due(MAX_TIMER_MS, 100, DueFilter::default())
            .await
            .expect("rows")
    }

    /// Polls every 50 ms of virtual time for `span_ms`, summing reports and
    /// recording every re-drive row seen.
    async fn run(
        &self,
        service: &TimerService<Hostile, MemoryTimerStore>,
        span_ms: i64,
        seen: &mut Vec<TimerRow>,
    ) -> PollReport {
        let mut total = PollReport::default();
        let end = self.clock.get() + span_ms;
        while self.clock.get() < end {
            self.clock.set(self.clock.get() + 50);
            total += service.poll_once().await;
            for row in self.rows().await {
                if !seen.contains(&row) {
                    seen.push(row);
                }
            }
        }
        total
    }
}

#[tokio::test]
async fn a_contended_supervisor_resume_is_re_driven_and_the_parent_resumed_once() {
    let seed = seed();
    let world = World::new(true, seed).await;

    // The supervisor's resume: every conditional try contended, so it writes
    // the first re-drive row instead of reporting.
    let supervised = world.supervisor.watch(&id("parent")).await;
    let Ok(Supervised::RedriveScheduled { wake_at }) = supervised else {
        panic!("expected a re-drive row, got {supervised:?}");
    };
    let mut seen = world.rows().await;
    assert_eq!(seen, vec![TimerRow::redrive(id("parent"), wake_at, 0)]);

    // The dead acquirers are still at it for the first re-drive: it is
    // contended again and the chain continues with try 1, later.
    let service = world.service(seed);
    let mut first = PollReport::default();
    while first.rescheduled == 0 {
        assert!(
            world.clock.get() < T0 + 60_000,
            "no re-drive fired: {first:?}"
        );
        first += world.run(&service, 50, &mut seen).await;
    }
    assert_eq!((first.rescheduled, first.redriven), (1, 0), "{first:?}");
    // Then they are gone (dead acquirers die): the next row resumes the
    // parent, with no operator and no manual recovery.
    world.events.hooks.fencing.store(false, Ordering::SeqCst);
    let rest = world.run(&service, 60_000, &mut seen).await;
    assert_eq!(rest.redriven, 1, "{rest:?}");

    let resumed = resumes(&*world.events, &id("parent")).await;
    assert_eq!(resumed.len(), 1, "exactly one resume: {resumed:?}");
    assert_eq!(
        resumed[0].payload["answer"]["children"]["child"]["status"],
        json!("completed"),
        "the children's outcomes are the answer: {:?}",
        resumed[0].payload
    );
    assert!(world.rows().await.is_empty(), "the chain is retired");
    let attempts: Vec<u32> = seen
        .iter()
        .filter_map(|row| row.redrive.map(|r| r.attempt))
        .collect();
    assert_eq!(attempts, vec![0, 1], "one row per try: {seen:?}");
    assert!(
        seen[1].wake_at > seen[0].wake_at,
        "the backoff moved the next try later: {seen:?}"
    );
    assert!(
        rest.fired + rest.backed_off + rest.exhausted == 0,
        "only the re-drive row was fired: {rest:?}"
    );
    assert!(
        world.errors.lock().expect("lock").is_empty(),
        "nothing for an operator: {:?}",
        world.errors.lock().expect("lock")
    );
}

/// The control: the same world with `features.redrive` off. The
/// contention goes to `on_error`, nothing is written, and however long the
/// timer service runs, the parent stays parked for an operator.
#[tokio::test]
async fn without_the_flag_the_parent_is_left_parked() {
    let seed = seed();
    let world = World::new(false, seed).await;
    let supervised = world.supervisor.watch(&id("parent")).await;
    assert!(
        supervised.as_ref().is_err_and(|e| e.is_contended()),
        "{supervised:?}"
    );
    world.events.hooks.fencing.store(false, Ordering::SeqCst);
    let service = world.service(seed);
    let mut seen = Vec::new();
    let report = world.run(&service, 60_000, &mut seen).await;
    assert_eq!(report.claimed, 0, "{report:?}");
    assert!(seen.is_empty(), "no row was written: {seen:?}");
    assert!(resumes(&*world.events, &id("parent")).await.is_empty());
    assert_eq!(world.errors.lock().expect("lock").len(), 1);
}
