//! The bounded in-process backoff of contended plain wakes for
//! JavaScript: `WakeBackoff`. The eviction rule is the core's; this module
//! reads a fire's outcome in and the entries out.

use std::num::NonZeroUsize;

use loomfence_core::timer::{DEFAULT_BACKOFF_BOUND, WakeBackoff};
use wasm_bindgen::prelude::*;

use crate::fire;
use crate::out::Out;
use crate::timer_values::{self as timer, INVALID_BACKOFF, entry_js, refuse};

/// The bounded in-process backoff of contended plain wakes: per execution,
/// the next try and when it may be made.
#[wasm_bindgen(js_name = WakeBackoff)]
#[derive(Debug, Default)]
pub struct WakeBackoffJs {
    /// The core's map.
    inner: WakeBackoff,
}

// `len` and `bound` are the read-only properties JavaScript sees; an
// `isEmpty` beside `len` would only add to the package.
#[allow(clippy::len_without_is_empty)]
#[wasm_bindgen(js_class = WakeBackoff)]
impl WakeBackoffJs {
    /// An empty map holding at most `bound` executions (1024 when
    /// `undefined`).
    #[wasm_bindgen(constructor)]
    pub fn new(bound: JsValue) -> Result<WakeBackoffJs, JsValue> {
        let bound = if bound.is_undefined() {
            DEFAULT_BACKOFF_BOUND
        } else {
            timer::count("bound", INVALID_BACKOFF, &bound)?
        };
        let Some(bound) = NonZeroUsize::new(bound) else {
            return Err(refuse("bound must be at least 1", INVALID_BACKOFF));
        };
        Ok(Self {
            inner: WakeBackoff::with_bound(bound),
        })
    }

    /// The most executions it holds.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn bound(&self) -> usize {
        self.inner.bound()
    }

    /// How many executions it holds now.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// The entry of `executionId` (what its fires are given as
    /// `context.backoff`), or `undefined`.
    pub fn get(&self, execution_id: JsValue) -> Result<JsValue, JsValue> {
        let id = timer::execution_id(&execution_id)?;
        match self.inner.get(&id) {
            Some(entry) => Ok(entry_js(&entry)),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Applies what a fire of `row` ended in (the `done` of its last
    /// `poll`): a `backedOff` is recorded, a final outcome of the row the
    /// entry belongs to clears it, anything else leaves the map alone.
    /// Returns `{ executionId, entry }` when recording evicted another
    /// execution, else `undefined`.
    pub fn apply(&mut self, row: JsValue, outcome: JsValue) -> Result<JsValue, JsValue> {
        let row = timer::row("row", &row)?;
        let outcome = fire::outcome(&row, &outcome)?;
        match self.inner.apply(&row, &outcome) {
            Some((id, entry)) => Ok(Out::new()
                .set("executionId", &JsValue::from_str(id.as_str()))
                .set("entry", &entry_js(&entry))
                .done()),
            None => Ok(JsValue::UNDEFINED),
        }
    }
}
