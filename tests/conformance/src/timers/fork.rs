//! The fork race, end to end: two real timer services over one store, the
//! first stalled inside its fire past its lease while the second claims
//! and fires the same re-drive row.
//!
//! With a schedule then a complete, the stalled fire writes its next row
//! beside the second node's (its complete then answers `NotHeld`, too
//! late): two branches, each exhausting, so exhaustion is reported twice.
//! With the store's one-step reschedule, the stalled fire's write answers
//! `NotHeld` and writes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId,
    redrive::RedrivePolicy,
    timer::{Claim, Completed, RedriveAnswer, TimerRow},
};
use loomfence_runtime::{Redriver, RuntimeError, TimerService, timer::TimerServiceOptions};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{Forwarding, MemoryEventStore, StoreError, TimerStore};
use tokio::sync::{Notify, watch};

use super::Timers;
use super::support::{T0, all_rows, node, redrive, schedule_all};

/// The lease both services claim with, in ms.
const LEASE: i64 = 1_000;

/// A re-driver whose resume is always contended: every fire moves the
/// chain on (or exhausts it).
struct AlwaysContended;

#[async_trait]
impl Redriver for AlwaysContended {
    async fn redrive(&self, _: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        Ok(RedriveAnswer::Contended)
    }
}

/// Hooks that stall the first write a fire makes after its re-driver
/// answered (a schedule or a reschedule) until the gate opens, announcing
/// that it is there: a fire that outlives its lease.
struct Stall {
    armed: AtomicBool,
    arrived: Notify,
    open: watch::Sender<bool>,
}

impl Stall {
    /// Waits at the gate, the first time only.
    async fn hold(&self) {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.arrived.notify_one();
            let mut open = self.open.subscribe();
            open.wait_for(|open| *open).await.expect("the gate stays");
        }
    }
}

#[async_trait]
impl Hooks for Stall {
    async fn schedule(&self, inner: &dyn TimerStore, row: &TimerRow) -> Result<(), StoreError> {
        self.hold().await;
        inner.schedule(row).await
    }
    async fn reschedule(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
        next: &TimerRow,
    ) -> Result<Completed, StoreError> {
        self.hold().await;
        inner.reschedule(claim, next).await
    }
}

/// A timer service `name` over `timers`, on the shared `clock`, with a
/// fixed draw, two tries per chain and one always-contended re-driver;
/// exhaustions are counted in `exhausted`, other failures in `failures`.
fn service<T: TimerStore + ?Sized + 'static>(
    name: &str,
    timers: Arc<T>,
    clock: &Arc<AtomicI64>,
    exhausted: &Arc<AtomicUsize>,
    failures: &Arc<AtomicUsize>,
) -> Arc<TimerService<MemoryEventStore, T>> {
    let (clock, exhausted, failures) = (clock.clone(), exhausted.clone(), failures.clone());
    let options = TimerServiceOptions {
        node: node(name),
        lease: Duration::from_millis(LEASE as u64),
        policy: RedrivePolicy {
            max_attempts: 2,
            ..RedrivePolicy::default()
        },
        now: Arc::new(move || clock.load(Ordering::SeqCst)),
        random: Arc::new(|| 0.5),
        on_error: Arc::new(move |error| {
            let counter = match error {
                RuntimeError::Exhausted(_) => &exhausted,
                _ => &failures,
            };
            counter.fetch_add(1, Ordering::SeqCst);
        }),
        ..TimerServiceOptions::default()
    };
    let service = TimerService::new(Arc::new(MemoryEventStore::new()), timers, options);
    service.register_redriver(Arc::new(AlwaysContended));
    Arc::new(service)
}

/// Node A claims the chain's first row and stalls inside its fire, at the
/// write, past its lease; node B claims the row and fires it (its re-driver
/// contended: the next row). A then goes on. Exactly one next row exists,
/// and draining the chain reports its exhaustion once.
pub async fn a_fire_that_outlives_its_lease_does_not_fork_the_chain(store: Timers) {
    let first = redrive("chain", 0, 0);
    schedule_all(&store, std::slice::from_ref(&first)).await;
    let clock = Arc::new(AtomicI64::new(T0));
    let exhausted = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let stall = Arc::new(Forwarding {
        inner: store.clone(),
        hooks: Stall {
            armed: AtomicBool::new(true),
            arrived: Notify::new(),
            open: watch::Sender::new(false),
        },
    });
    let a = service("node-a", stall.clone(), &clock, &exhausted, &failures);
    let b = service("node-b", store.clone(), &clock, &exhausted, &failures);

    let stalled = tokio::spawn({
        let a = a.clone();
        async move { a.poll_once().await }
    });
    tokio::time::timeout(Duration::from_secs(30), stall.hooks.arrived.notified())
        .await
        .expect("node A reaches its write");
    clock.store(T0 + LEASE, Ordering::SeqCst);
    let report_b = b.poll_once().await;
    assert_eq!(
        report_b.rescheduled, 1,
        "node B moved the chain on: {report_b:?}"
    );
    stall.hooks.open.send_replace(true);
    let report_a = tokio::time::timeout(Duration::from_secs(30), stalled)
        .await
        .expect("node A finishes")
        .expect("node A does not panic");
    let next_rows: Vec<TimerRow> = all_rows(&store)
        .await
        .into_iter()
        .filter(|row| row.execution_id == first.execution_id)
        .collect();

    // Drain the chain with node B: every row left exhausts.
    clock.store(T0 + 1_000_000, Ordering::SeqCst);
    for _ in 0..4 {
        let _ = b.poll_once().await;
    }
    let reports = exhausted.load(Ordering::SeqCst);
    assert_eq!(
        (next_rows.len(), reports),
        (1, 1),
        "one next row and one exhaustion report; the rows after both fires: {next_rows:?}, \
         exhaustion reported {reports} time(s); node A: {report_a:?}"
    );
    assert_eq!(
        report_a.not_held, 1,
        "node A's decision was void: {report_a:?}"
    );
    assert_eq!(failures.load(Ordering::SeqCst), 0, "no other failure");
    assert!(all_rows(&store).await.is_empty(), "the chain is drained");
}
