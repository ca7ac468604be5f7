//! A timer service's tick whose claims' lease ends before their fire
//! begins, end to end over the store: the core's tick machine releases
//! such a claim rather than leave it held until its lease is long gone.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use loomfence_core::{ExecutionId, timer::RedriveAnswer};
use loomfence_runtime::{Redriver, RuntimeError, TimerService, timer::TimerServiceOptions};
use loomfence_store::MemoryEventStore;

use super::Timers;
use super::support::{T0, claim, lease, node, redrive, schedule_all};

/// The service's lease, ms.
const LEASE: i64 = 1_000;

/// A re-driver whose every call takes the whole lease (the shared clock
/// jumps by it) and lands.
struct Slow {
    clock: Arc<AtomicI64>,
}

#[async_trait]
impl Redriver for Slow {
    async fn redrive(&self, _: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        self.clock.fetch_add(LEASE, Ordering::SeqCst);
        Ok(RedriveAnswer::Done)
    }
}

/// A tick claims three re-drive rows; its first fire takes the whole
/// lease. The two claims left are not fired (they may be another node's
/// by now) and are released: another node claims them at once, even on a
/// clock still inside the old lease.
pub async fn a_claim_whose_lease_ended_is_released_not_fired(store: Timers) {
    let rows = [redrive("a", 0, 0), redrive("b", 0, 0), redrive("c", 0, 0)];
    schedule_all(&store, &rows).await;
    let clock = Arc::new(AtomicI64::new(T0));
    let failures = Arc::new(AtomicUsize::new(0));
    let options = TimerServiceOptions {
        node: node("node-a"),
        lease: Duration::from_millis(LEASE as u64),
        now: {
            let clock = clock.clone();
            Arc::new(move || clock.load(Ordering::SeqCst))
        },
        random: Arc::new(|| 0.5),
        on_error: {
            let failures = failures.clone();
            Arc::new(move |_| {
                failures.fetch_add(1, Ordering::SeqCst);
            })
        },
        ..TimerServiceOptions::default()
    };
    let service = TimerService::new(Arc::new(MemoryEventStore::new()), store.clone(), options);
    service.register_redriver(Arc::new(Slow {
        clock: clock.clone(),
    }));
    let report = service.poll_once().await;
    assert_eq!(
        (
            report.claimed,
            report.redriven,
            report.lapsed,
            report.released
        ),
        (3, 1, 2, 2),
        "{report:?}"
    );
    assert_eq!(failures.load(Ordering::SeqCst), 0);
    let taken = claim(&store, &lease("node-b", 1)).await;
    assert_eq!(
        taken.len(),
        2,
        "the lapsed claims were handed back: {taken:?}"
    );
}
