//! `acquire_fence_if` must cost the same whatever the log's length before the
//! park: it jumps to `parkSeq` and scans only the tail. This bench runs the
//! same call on logs of 10 and 1,000,000 events (with the same three-event
//! tail after the park) side by side; `cargo xtask bench` prints the ratio.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use loomfence_core::{
    AcquireOutcome, ExecutionId, KernelKind, MemoryStore, NewEvent, ParkExpectation,
};

/// Events after the park: ignorable, so every acquire is decided by the scan.
const TAIL: u64 = 3;

/// The one execution the bench writes.
fn bench_id() -> ExecutionId {
    ExecutionId::new("bench").expect("a valid id")
}

/// A store holding one execution of `len` events: step records, a park, and
/// [`TAIL`] application events after it. Returns the store and the park's
/// sequence.
fn parked_log(len: u64) -> (MemoryStore, u64) {
    let mut store = MemoryStore::new();
    let before_park = len - TAIL - 1;
    let mut written = 0;
    while written < before_park {
        let chunk = (before_park - written).min(10_000);
        let events = (0..chunk)
            .map(|_| NewEvent::kernel(KernelKind::StepCompleted, 0))
            .collect();
        store
            .append_many(&bench_id(), events)
            .expect("bench log appends");
        written += chunk;
    }
    let park = store
        .append(
            &bench_id(),
            NewEvent::kernel(KernelKind::ExecutionSuspended, 0),
        )
        .expect("park appends")
        .sequence;
    for _ in 0..TAIL {
        store
            .append(&bench_id(), NewEvent::new("app.output", 0))
            .expect("tail appends");
    }
    assert_eq!(store.head(&bench_id()), len);
    (store, park)
}

/// Benches a winning conditional acquire (the token moves every iteration, so
/// each call takes the full path: lookup, compare, scan, bump).
fn acquire_fence_if(c: &mut Criterion) {
    let mut group = c.benchmark_group("acquire_fence_if");
    for len in [10_u64, 1_000_000] {
        let (mut store, park_seq) = parked_log(len);
        let id = bench_id();
        let mut fence = 0;
        group.bench_with_input(BenchmarkId::new("log_len", len), &len, |b, _| {
            b.iter(|| {
                let outcome = store
                    .acquire_fence_if(&id, ParkExpectation { fence, park_seq })
                    .expect("valid expectation");
                match outcome {
                    AcquireOutcome::Acquired { fence: next } => fence = next,
                    AcquireOutcome::Stale { .. } => panic!("the bench's own acquire went stale"),
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, acquire_fence_if);
criterion_main!(benches);
