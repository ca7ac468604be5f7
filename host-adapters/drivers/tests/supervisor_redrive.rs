//! The supervisor's live re-drive: behind `features.redrive` and a timer
//! store, a contended resume writes one re-drive row instead of going to
//! `on_error`, and the supervisor's re-driver later resumes the parent from
//! the log.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::{finish, id, park_on, resumes};
use loomfence_conformance::support::{Around, Hooks};
use loomfence_core::{
    AcquireOutcome, Capability, Claim, Completed, Draw, DueFilter, ExecutionId, KernelKind, Lease,
    ParkExpectation, RedrivePolicy, TimerRow, Wait, redrive_wake_at,
};
use loomfence_runtime::{
    ChildSupervisor, Features, RedriveScheduleError, Supervised, SupervisorError, SupervisorOptions,
};
use loomfence_store::{
    BackendError, EventStore, MemoryTimerStore, StoreError, TimerStore, TimerStoreError,
};
use serde_json::json;

/// The supervisor's clock, fixed.
const NOW: i64 = 1_000_000;

/// The supervisor's random draw, fixed.
const DRAW: f64 = 0.5;

/// Dead acquirers: while `fencing`, each of `acquirers` takes the fence
/// (bumps the token and never appends) right before every conditional
/// acquire, so every conditional try is contended.
struct DeadAcquirers {
    acquirers: u32,
    fencing: AtomicBool,
    dead_acquires: AtomicU32,
}

impl DeadAcquirers {
    fn new(acquirers: u32) -> Self {
        Self {
            acquirers,
            fencing: AtomicBool::new(true),
            dead_acquires: AtomicU32::new(0),
        }
    }
}

#[async_trait]
impl Hooks for DeadAcquirers {
    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        if self.fencing.load(Ordering::SeqCst) {
            for _ in 0..self.acquirers {
                inner.acquire_fence(id).await?;
                self.dead_acquires.fetch_add(1, Ordering::SeqCst);
            }
        }
        inner.acquire_fence_if(id, expect).await
    }
}

/// A memory event store with three dead acquirers in front of every
/// conditional acquire.
fn fenced_by_three() -> Arc<Around<DeadAcquirers>> {
    Arc::new(Around::new(Capability::Conditional, DeadAcquirers::new(3)))
}

/// A timer store whose writes fail.
struct BrokenTimers;

fn disk_full() -> TimerStoreError {
    TimerStoreError::Backend(BackendError::retryable("disk full"))
}

#[async_trait]
impl TimerStore for BrokenTimers {
    async fn schedule(&self, _: &TimerRow) -> Result<(), TimerStoreError> {
        Err(disk_full())
    }
    async fn due(&self, _: i64, _: usize, _: DueFilter) -> Result<Vec<TimerRow>, TimerStoreError> {
        Err(disk_full())
    }
    async fn claim_due(
        &self,
        _: &Lease,
        _: usize,
        _: DueFilter,
    ) -> Result<Vec<Claim>, TimerStoreError> {
        Err(disk_full())
    }
    async fn complete(&self, _: &Claim) -> Result<Completed, TimerStoreError> {
        Err(disk_full())
    }
    async fn release(&self, _: &Claim) -> Result<Completed, TimerStoreError> {
        Err(disk_full())
    }
}

/// Options with a fixed clock and draw, `features`, `timers`, and an
/// `on_error` that records what it gets.
fn recording(
    features: Features,
    timers: Option<Arc<dyn TimerStore>>,
) -> (SupervisorOptions, Arc<Mutex<Vec<String>>>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = errors.clone();
    let options = SupervisorOptions {
        on_error: Arc::new(move |parent: &ExecutionId, error: &SupervisorError| {
            sink.lock()
                .expect("lock")
                .push(format!("{parent}: {error}"));
        }),
        now: Arc::new(|| NOW),
        features,
        redrive: timers,
        random: Arc::new(|| DRAW),
        ..SupervisorOptions::default()
    };
    (options, errors)
}

fn redrive_on() -> Features {
    Features::none().with_redrive(true)
}

/// Parks `parent` on `child`, fences it once (a dead acquirer, so the
/// supervisor's unfenced try meets a stale fence) and ends `child`.
async fn ready_and_fenced(store: &dyn EventStore, parent: &ExecutionId, child: &ExecutionId) {
    park_on(store, parent, &[Wait::Child(child.clone())]).await;
    store
        .acquire_fence(parent)
        .await
        .expect("a dead acquirer fenced the parent");
    finish(
        store,
        child,
        KernelKind::ExecutionCompleted,
        json!({ "total": 7 }),
    )
    .await;
}

/// Every row of `timers`.
fn rows(timers: &MemoryTimerStore) -> Vec<TimerRow> {
    timers.snapshot().rows()
}

/// The wake time the supervisor's first re-drive row must have.
fn first_wake_at() -> i64 {
    let delay = RedrivePolicy::default().delay_ms(0, Draw::new(DRAW).expect("a draw"));
    redrive_wake_at(NOW, delay, NOW).expect("a storable time")
}

#[tokio::test]
async fn flag_off_a_contended_resume_writes_nothing_and_goes_to_on_error() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let timers = Arc::new(MemoryTimerStore::new());
    let (options, errors) = recording(Features::none(), Some(timers.clone()));
    assert!(!options.schedules_redrive());
    let supervisor = ChildSupervisor::new(store.clone(), options);

    let error = supervisor
        .watch(&id("parent"))
        .await
        .expect_err("every try was contended");
    assert!(error.is_contended(), "{error:?}");
    assert!(rows(&timers).is_empty(), "flag off: no row");
    {
        let errors = errors.lock().expect("lock");
        assert_eq!(errors.len(), 1, "reported once: {errors:?}");
        assert!(errors[0].contains("contended"), "{errors:?}");
    }
    assert!(resumes(&*store, &id("parent")).await.is_empty());
    assert_eq!(
        supervisor.parents_waiting_on(&id("child")),
        [id("parent")],
        "the edges are kept"
    );
}

#[tokio::test]
async fn flag_on_without_a_timer_store_behaves_as_off() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let (options, errors) = recording(redrive_on(), None);
    assert!(!options.schedules_redrive());
    let supervisor = ChildSupervisor::new(store.clone(), options);

    let error = supervisor
        .watch(&id("parent"))
        .await
        .expect_err("every try was contended");
    assert!(error.is_contended(), "{error:?}");
    assert_eq!(errors.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn flag_on_three_dead_acquirers_schedule_exactly_one_redrive_row() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let timers = Arc::new(MemoryTimerStore::new());
    let (options, errors) = recording(redrive_on(), Some(timers.clone()));
    assert!(options.schedules_redrive());
    let supervisor = ChildSupervisor::new(store.clone(), options);

    let supervised = supervisor.watch(&id("parent")).await.expect("handled");
    let wake_at = first_wake_at();
    assert_eq!(supervised, Supervised::RedriveScheduled { wake_at });
    assert!(wake_at >= NOW, "due at or after now");
    assert_eq!(
        rows(&timers),
        [TimerRow::redrive(id("parent"), wake_at, 0)],
        "exactly one re-drive row, try 0"
    );
    assert_eq!(
        store.hooks.dead_acquires.load(Ordering::SeqCst),
        27,
        "three dead acquires before each of three acquisitions of three tries"
    );
    assert!(
        errors.lock().expect("lock").is_empty(),
        "the contention is handled, not reported"
    );
    assert!(resumes(&*store, &id("parent")).await.is_empty());
    assert_eq!(
        supervisor.parents_waiting_on(&id("child")),
        [id("parent")],
        "the park is still open: the edges are kept"
    );
}

#[tokio::test]
async fn flag_on_without_contention_resumes_as_before_and_writes_no_row() {
    for fenced in [false, true] {
        let store = Arc::new(Around::new(Capability::Conditional, DeadAcquirers::new(0)));
        park_on(&*store, &id("parent"), &[Wait::Child(id("child"))]).await;
        if fenced {
            store.acquire_fence(&id("parent")).await.expect("fenced");
        }
        finish(
            &*store,
            &id("child"),
            KernelKind::ExecutionCompleted,
            json!(null),
        )
        .await;
        let timers = Arc::new(MemoryTimerStore::new());
        let (options, errors) = recording(redrive_on(), Some(timers.clone()));
        let supervisor = ChildSupervisor::new(store.clone(), options);

        let supervised = supervisor.watch(&id("parent")).await;
        let Ok(Supervised::Resumed(resumed)) = supervised else {
            panic!("fenced {fenced}: expected a resume, got {supervised:?}");
        };
        assert_eq!(resumed.fence.is_some(), fenced);
        assert!(rows(&timers).is_empty(), "fenced {fenced}: no row");
        assert!(errors.lock().expect("lock").is_empty());
        assert_eq!(resumes(&*store, &id("parent")).await.len(), 1);
        assert!(supervisor.parents_waiting_on(&id("child")).is_empty());
    }
}

#[tokio::test]
async fn a_redrive_row_that_cannot_be_written_is_reported_and_returned() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let (options, errors) = recording(redrive_on(), Some(Arc::new(BrokenTimers)));
    let supervisor = ChildSupervisor::new(store.clone(), options);

    let error = supervisor
        .watch(&id("parent"))
        .await
        .expect_err("the row was not written");
    assert!(
        matches!(
            &error,
            SupervisorError::Redrive {
                parent,
                source: RedriveScheduleError::Timers(_),
            } if *parent == id("parent")
        ),
        "{error:?}"
    );
    assert!(!error.is_contended());
    {
        let errors = errors.lock().expect("lock");
        assert_eq!(errors.len(), 1, "reported once: {errors:?}");
        assert!(errors[0].contains("disk full"), "{errors:?}");
    }
    assert_eq!(
        supervisor.parents_waiting_on(&id("child")),
        [id("parent")],
        "the edges are kept"
    );
}

#[tokio::test]
async fn a_draw_outside_zero_to_one_is_reported_and_writes_no_row() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let timers = Arc::new(MemoryTimerStore::new());
    let (mut options, errors) = recording(redrive_on(), Some(timers.clone()));
    options.random = Arc::new(|| 1.0);
    let supervisor = ChildSupervisor::new(store.clone(), options);

    let error = supervisor.watch(&id("parent")).await.expect_err("no row");
    assert!(
        matches!(
            error,
            SupervisorError::Redrive {
                source: RedriveScheduleError::Draw(_),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(rows(&timers).is_empty());
    assert_eq!(errors.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn the_default_draw_schedules_within_the_first_ceiling() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let timers = Arc::new(MemoryTimerStore::new());
    let (mut options, _) = recording(redrive_on(), Some(timers.clone()));
    options.random = SupervisorOptions::default().random;
    let supervisor = ChildSupervisor::new(store, options);

    let Ok(Supervised::RedriveScheduled { wake_at }) = supervisor.watch(&id("parent")).await else {
        panic!("expected a re-drive row");
    };
    let ceiling = i64::try_from(RedrivePolicy::default().ceiling_ms(0)).expect("small");
    assert!(
        (NOW + 1..NOW + ceiling.max(1)).contains(&wake_at),
        "{wake_at}"
    );
    assert_eq!(rows(&timers), [TimerRow::redrive(id("parent"), wake_at, 0)]);
}
