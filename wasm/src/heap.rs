//! Growing the WebAssembly memory in large steps rather than 64 KiB at a
//! time, and settling the in-memory stores' calls into promises after it.
//!
//! The allocator (dlmalloc, the target's default) grows the memory by what
//! one allocation needs, rounded to 64 KiB, so a store that holds 150 MB of
//! logs grows it some 2,400 times. V8 (Node 20) answers every `memory.grow`
//! past about 64 MB with a full mark-compact GC, which made a 100,000
//! execution run four times slower per execution than a 3,000 one.
//!
//! After a call that grew the memory, [`reserve`] grows it once more, by
//! half its size (at most [`MAX_STEP`]), with one allocation it frees at
//! once: dlmalloc never gives memory back on this target, so the freed
//! block stays in its free top chunk and serves the next allocations. The
//! memory then grows a few dozen times on the way to a gigabyte, each time
//! by a large step, and a host that frees stores reuses their memory first.

use std::sync::atomic::{AtomicUsize, Ordering};

use js_sys::Promise;
use wasm_bindgen::JsValue;

/// The most one step adds.
const MAX_STEP: usize = 64 << 20;

/// The memory's size in pages when [`reserve`] last looked.
static SEEN: AtomicUsize = AtomicUsize::new(0);

/// The memory's size in pages.
#[cfg(target_arch = "wasm32")]
fn pages() -> usize {
    core::arch::wasm32::memory_size::<0>()
}

/// Not WebAssembly (the crate's native tests): nothing to grow.
#[cfg(not(target_arch = "wasm32"))]
fn pages() -> usize {
    0
}

/// If the memory grew since the last look, makes room for half as much
/// again (at most [`MAX_STEP`]) in one step.
pub(crate) fn reserve() {
    let now = pages();
    if now == SEEN.load(Ordering::Relaxed) {
        return;
    }
    // Pages are 64 KiB; a full 4 GiB memory would overflow a 32-bit product.
    let step = (now / 2).saturating_mul(65_536).min(MAX_STEP);
    // Allocated and freed: dlmalloc grows the memory by `step` at once and
    // keeps the block for the next allocations. `black_box` so the pair is
    // not optimised away. A memory that cannot grow that far is left as it
    // is (the next allocation grows it as it would have).
    let mut block = Vec::<u8>::new();
    if block.try_reserve_exact(step).is_ok() {
        std::hint::black_box(&block);
    }
    drop(block);
    SEEN.store(pages(), Ordering::Relaxed);
}

/// Settles `result` into a promise, after giving the memory room to grow
/// in a large step if this call grew it (see the module docs).
pub(crate) fn settle(result: Result<JsValue, JsValue>) -> Promise {
    reserve();
    match result {
        Ok(value) => Promise::resolve(&value),
        Err(error) => Promise::reject(&error),
    }
}
