//! The supervisor's live re-drive: behind `features.redrive` and a timer
//! store, a contended resume writes one re-drive row instead of going to
//! `on_error`, and the supervisor's re-driver later resumes the parent from
//! the log.

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::{Rival, fenced_by_three, finish, id, park_on, resumes};
use loomfence_conformance::support::around;
use loomfence_core::{
    Capability, ExecutionId, InputError, KernelKind,
    park::Wait,
    redrive::{Draw, RedrivePolicy, redrive_wake_at},
    timer::{
        Claim, Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Lease,
        RedriveAnswer, TimerQuery, TimerRow,
    },
};
use loomfence_runtime::{
    ChildSupervisor, Features, Redriver, RuntimeError, supervise::Supervised,
    supervise::SupervisorOptions,
};
use loomfence_store::{
    BackendError, ClaimPage, EventStore, MemoryEventStore, MemoryTimerStore, StoreError,
    TimerListing, TimerStore,
};
use serde_json::json;

/// The supervisor's clock, fixed.
const NOW: i64 = 1_000_000;

/// The supervisor's random draw, fixed.
const DRAW: f64 = 0.5;

/// A timer store whose writes fail.
struct BrokenTimers;

fn disk_full() -> StoreError {
    StoreError::Backend(BackendError::retryable("disk full"))
}

#[async_trait]
impl TimerStore for BrokenTimers {
    async fn schedule(&self, _: &TimerRow) -> Result<(), StoreError> {
        Err(disk_full())
    }
    async fn due(&self, _: i64, _: usize, _: DueFilter) -> Result<Vec<TimerRow>, StoreError> {
        Err(disk_full())
    }
    async fn claim_due(&self, _: &Lease, _: usize, _: DueFilter) -> Result<ClaimPage, StoreError> {
        Err(disk_full())
    }
    async fn complete(&self, _: &Claim) -> Result<Completed, StoreError> {
        Err(disk_full())
    }
    async fn release(&self, _: &Claim) -> Result<Completed, StoreError> {
        Err(disk_full())
    }
    async fn reschedule(&self, _: &Claim, _: &TimerRow) -> Result<Completed, StoreError> {
        Err(disk_full())
    }
    async fn exhaust(&self, _: &Claim, _: &Exhaustion) -> Result<Completed, StoreError> {
        Err(disk_full())
    }
    async fn list(&self, _: &TimerQuery) -> Result<TimerListing, StoreError> {
        Err(disk_full())
    }
    async fn exhausted(&self, _: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, StoreError> {
        Err(disk_full())
    }
    async fn clear_exhausted(&self, _: &ExecutionId, _: i64) -> Result<bool, StoreError> {
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
        on_error: Arc::new(move |parent: &ExecutionId, error: &RuntimeError| {
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
        let store = Arc::new(around(Capability::Conditional, Rival::new(0)));
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
            RuntimeError::Redrive { parent, source }
                if *parent == id("parent") && matches!(**source, RuntimeError::Timers(_))
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
            RuntimeError::Redrive { ref source, .. } if matches!(**source, RuntimeError::Input(InputError::DrawNotBelowOne { .. }))
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

/// What `redriver` answers for `parent`, which must not be an error.
async fn answer(redriver: &Arc<dyn Redriver>, parent: &str) -> RedriveAnswer {
    redriver
        .redrive(&id(parent))
        .await
        .unwrap_or_else(|error| panic!("re-driving {parent} failed: {error}"))
}

#[tokio::test]
async fn the_redriver_resumes_the_parent_once_when_the_rivals_stop() {
    let store = fenced_by_three();
    ready_and_fenced(&*store, &id("parent"), &id("child")).await;
    let timers = Arc::new(MemoryTimerStore::new());
    let (mut options, errors) = recording(redrive_on(), Some(timers.clone()));
    let clock = Arc::new(AtomicI64::new(NOW));
    options.now = {
        let clock = clock.clone();
        Arc::new(move || clock.load(Ordering::SeqCst))
    };
    let supervisor = Arc::new(ChildSupervisor::new(store.clone(), options));
    assert!(matches!(
        supervisor.watch(&id("parent")).await,
        Ok(Supervised::RedriveScheduled { .. })
    ));
    let row = rows(&timers);
    let redriver: Arc<dyn Redriver> = supervisor.redriver();
    // The row comes due; a row written now would have another key.
    clock.store(first_wake_at(), Ordering::SeqCst);

    // The rivals still fence every try: contended, and neither reported
    // nor scheduled again (the timer service carries the chain on).
    assert_eq!(answer(&redriver, "parent").await, RedriveAnswer::Contended);
    assert!(errors.lock().expect("lock").is_empty(), "not reported");
    assert_eq!(rows(&timers), row, "no second row");
    assert!(resumes(&*store, &id("parent")).await.is_empty());

    // The rivals stop: the parent is resumed, once, with its child's answer.
    store.hooks.fencing.store(false, Ordering::SeqCst);
    assert_eq!(answer(&redriver, "parent").await, RedriveAnswer::Done);
    let resumed = resumes(&*store, &id("parent")).await;
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(
        resumed[0].payload["answer"],
        json!({ "wait": 0, "children": { "child": { "status": "completed", "output": { "output": { "total": 7 } } } } })
    );
    assert_eq!(resumed[0].at, first_wake_at());
    assert!(supervisor.parents_waiting_on(&id("child")).is_empty());

    // Again: the park is answered, nothing of the supervisor's to do.
    assert_eq!(answer(&redriver, "parent").await, RedriveAnswer::Noop);
    assert_eq!(resumes(&*store, &id("parent")).await.len(), 1);
    assert!(errors.lock().expect("lock").is_empty());
    assert_eq!(rows(&timers), row, "the re-driver writes no rows");
}

#[tokio::test]
async fn the_redriver_answers_noop_for_a_parent_that_is_not_its_own_or_not_ready() {
    let store = Arc::new(around(Capability::Conditional, Rival::new(0)));
    park_on(&*store, &id("on-a-timer"), &[Wait::Timer { wake_at: 5 }]).await;
    park_on(&*store, &id("waiting"), &[Wait::Child(id("running"))]).await;
    let (options, errors) = recording(redrive_on(), Some(Arc::new(MemoryTimerStore::new())));
    let supervisor = Arc::new(ChildSupervisor::new(store.clone(), options));
    let redriver = supervisor.redriver();

    for parent in ["on-a-timer", "waiting", "no-such-execution"] {
        assert_eq!(
            answer(&redriver, parent).await,
            RedriveAnswer::Noop,
            "{parent}"
        );
        assert!(resumes(&*store, &id(parent)).await.is_empty(), "{parent}");
    }
    assert!(errors.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_redriver_failure_is_an_error_reported_once() {
    let store = Arc::new(around(Capability::Conditional, Rival::new(0)));
    store
        .append(
            &id("parent"),
            loomfence_core::NewEvent::kernel(KernelKind::ExecutionSuspended, 0),
        )
        .await
        .expect("parks with no waits");
    let (options, errors) = recording(redrive_on(), Some(Arc::new(MemoryTimerStore::new())));
    let supervisor = Arc::new(ChildSupervisor::new(store, options));

    let failure = supervisor
        .redriver()
        .redrive(&id("parent"))
        .await
        .expect_err("the park is unreadable");
    assert!(
        matches!(
            failure,
            RuntimeError::Input(InputError::UnreadablePark { .. })
        ),
        "{failure:?}"
    );
    assert_eq!(errors.lock().expect("lock").len(), 1);
}

/// The re-driver's resume has no caller to go back to, so it goes to
/// `on_resumed` (the host starts the parent's body from it); `watch`
/// answers its resume to the caller and hands nothing on, so a body is
/// started once.
#[tokio::test]
async fn a_redrivers_resume_goes_to_on_resumed_and_a_watchers_does_not() {
    let handed = Arc::new(Mutex::new(Vec::new()));
    let hook = |into: Arc<Mutex<Vec<ExecutionId>>>| -> loomfence_runtime::OnResumed {
        Arc::new(move |resumed| into.lock().expect("lock").push(resumed.execution_id))
    };

    let store: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new());
    let (parent, child) = (id("parent"), id("child"));
    ready_and_fenced(&*store, &parent, &child).await;
    let (options, errors) = recording(Features::none(), None);
    let supervisor = Arc::new(ChildSupervisor::new(
        store.clone(),
        SupervisorOptions {
            on_resumed: hook(handed.clone()),
            ..options
        },
    ));
    let answer = supervisor
        .redriver()
        .redrive(&parent)
        .await
        .expect("re-drives");
    assert_eq!(answer, RedriveAnswer::Done);
    assert_eq!(*handed.lock().expect("lock"), vec![parent.clone()]);
    assert!(errors.lock().expect("lock").is_empty());

    let (other, other_child) = (id("other"), id("other-child"));
    ready_and_fenced(&*store, &other, &other_child).await;
    let watched = supervisor.watch(&other).await.expect("watches");
    assert!(matches!(watched, Supervised::Resumed(_)), "{watched:?}");
    assert_eq!(
        *handed.lock().expect("lock"),
        vec![parent],
        "watch answers its resume to the caller only"
    );
}
