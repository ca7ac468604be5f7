//! A probe that links every part of `loomfence-core` into one WebAssembly
//! module.
//!
//! A cdylib only keeps code reachable from its exports, so an unused core
//! would be stripped and its imports would prove nothing. [`loomfence_probe`]
//! drives every store operation, the fold, the classification, serde in both
//! directions and error formatting from a host-supplied number, so none of it
//! can be constant-folded away. The test command then checks the module
//! imports nothing from `"env"`: no clock, no libc, nothing platform-specific.

use loomfence_core::{
    AcquireOutcome, Envelope, ExecutionId, ExecutionView, KernelKind, MemoryStore, NewEvent,
    ParkExpectation, log::locate_park,
};
use serde_json::json;

/// Runs a park, a racing pair of acquires and a fenced-out append over the
/// in-memory store and returns a checksum of what happened. `0` means a step
/// that must succeed failed.
#[allow(unsafe_code)] // the export itself; the body is safe Rust
#[unsafe(no_mangle)]
pub extern "C" fn loomfence_probe(n: u32) -> u64 {
    run(n).unwrap_or(0)
}

/// The probe's body, with `?` for every step.
fn run(n: u32) -> Option<u64> {
    let mut store = MemoryStore::new();
    // Validated once, at the edge, as every store call takes it.
    let id = ExecutionId::new(format!("probe-{n}")).ok()?;
    let park = NewEvent::kernel(KernelKind::ExecutionSuspended, i64::from(n)).with_payload(
        json!({ "waits": [{ "kind": "TIMER", "wakeAt": n }] })
            .as_object()?
            .clone(),
    );
    store
        .append_many(
            &id,
            vec![NewEvent::kernel(KernelKind::ExecutionStarted, 0), park],
        )
        .ok()?;
    store
        .append(&id, NewEvent::new(format!("app.{n}"), 0))
        .ok()?;

    let text = serde_json::to_string(&store.read_range(&id, 1, None).ok()?).ok()?;
    let events: Vec<Envelope> = serde_json::from_str(&text).ok()?;
    let view = ExecutionView::fold(&events);
    let open = view.open_park?;
    let located = locate_park(&events)?.sequence;

    let expect = ParkExpectation {
        fence: open.fence,
        park_seq: open.sequence,
    };
    let first = store.acquire_fence_if(&id, expect).ok()?;
    let second = store.acquire_fence_if(&id, expect).ok()?;
    let won = matches!(first, AcquireOutcome::Acquired { .. }) && !second.is_acquired();

    let zombie = store.append(
        &id,
        NewEvent::kernel(KernelKind::ExecutionResumed, 0).with_fence(0),
    );
    let refusal = zombie.err()?.to_string();
    let bumped = store.acquire_fence(&id);
    let deleted = store.delete_execution(&id);

    Some(
        u64::from(won)
            + located
            + view.head * 10
            + bumped * 100
            + u64::from(deleted) * 1000
            + refusal.len() as u64 * 10_000
            + text.len() as u64,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_probe_runs_every_step() {
        assert_ne!(super::loomfence_probe(7), 0);
    }
}
