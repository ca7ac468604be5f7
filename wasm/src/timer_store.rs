//! `MemoryTimerStore`: the core's `TimerTable` behind the async timer store
//! interface, for JavaScript hosts (tests, a single-node service).
//!
//! As with `MemoryEventStore`, each method does all its work synchronously
//! and returns a promise already settled, so concurrent calls never overlap
//! inside it and each is one atomic step. Every input is read into the
//! core's types and checked by the table before it changes anything.

use std::cell::RefCell;

use js_sys::Promise;
use loomfence_core::timer::{Completed, TimerTable};
use wasm_bindgen::prelude::*;

use crate::memory_store::settle;
use crate::timer_values::{self as timer, core};

/// The in-memory timer store.
#[wasm_bindgen(js_name = MemoryTimerStore)]
#[derive(Debug, Default)]
pub struct MemoryTimerStore {
    /// The rows, their flags and their claims.
    table: RefCell<TimerTable>,
}

/// `'done'` or `'notHeld'`.
fn completed(outcome: Completed) -> JsValue {
    JsValue::from_str(match outcome {
        Completed::Done => "done",
        Completed::NotHeld => "notHeld",
    })
}

#[wasm_bindgen(js_class = MemoryTimerStore)]
impl MemoryTimerStore {
    /// An empty store.
    #[wasm_bindgen(constructor)]
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `row`, or merges it into the row with its key: the re-drive
    /// flag is kept or added, never cleared, and a claim on the row ends.
    /// Resolves to `undefined`.
    pub fn schedule(&self, row: JsValue) -> Promise {
        settle((|| {
            let row = timer::row("row", &row)?;
            self.table
                .borrow_mut()
                .schedule(&row)
                .map_err(|e| core(&e))?;
            Ok(JsValue::UNDEFINED)
        })())
    }

    /// Up to `limit` rows with `wakeAt <= now`, earliest first, claimed or
    /// not; with `{ redrive: false }`, re-drive rows are left out before
    /// the limit.
    pub fn due(&self, now: JsValue, limit: JsValue, options: JsValue) -> Promise {
        settle((|| {
            let now = timer::integer("now", timer::INVALID_TIME, &now)?;
            let limit = timer::limit(&limit)?;
            let filter = timer::filter(&options)?;
            let rows = self
                .table
                .borrow()
                .due(now, limit, filter)
                .map_err(|e| core(&e))?;
            Ok(timer::list(&rows, timer::row_js))
        })())
    }

    /// Claims up to `limit` due rows nobody holds (or whose lease ended),
    /// earliest first, for `lease.holder` until `lease.now +
    /// lease.durationMs`; resolves to the claims.
    #[wasm_bindgen(js_name = claimDue)]
    pub fn claim_due(&self, lease: JsValue, limit: JsValue, options: JsValue) -> Promise {
        settle((|| {
            let lease = timer::lease(&lease)?;
            let limit = timer::limit(&limit)?;
            let filter = timer::filter(&options)?;
            let claims = self
                .table
                .borrow_mut()
                .claim_due(&lease, limit, filter)
                .map_err(|e| core(&e))?;
            Ok(timer::list(&claims, timer::claim_js))
        })())
    }

    /// Retires the claimed row if `claim` is still its current claim;
    /// resolves to `'done'` or `'notHeld'`.
    pub fn complete(&self, claim: JsValue) -> Promise {
        settle((|| {
            let claim = timer::claim(&claim)?;
            let outcome = self
                .table
                .borrow_mut()
                .complete(&claim)
                .map_err(|e| core(&e))?;
            Ok(completed(outcome))
        })())
    }

    /// Retires the claimed row and schedules `next` in one step, if `claim`
    /// is still its current claim; resolves to `'done'`, or `'notHeld'`
    /// with nothing written.
    pub fn reschedule(&self, claim: JsValue, next: JsValue) -> Promise {
        settle((|| {
            let claim = timer::claim(&claim)?;
            let next = timer::row("next", &next)?;
            let outcome = self
                .table
                .borrow_mut()
                .reschedule(&claim, &next)
                .map_err(|e| core(&e))?;
            Ok(completed(outcome))
        })())
    }

    /// Hands the claimed row back, due again at once, if `claim` is still
    /// its current claim; resolves to `'done'` or `'notHeld'`.
    pub fn release(&self, claim: JsValue) -> Promise {
        settle((|| {
            let claim = timer::claim(&claim)?;
            let outcome = self
                .table
                .borrow_mut()
                .release(&claim)
                .map_err(|e| core(&e))?;
            Ok(completed(outcome))
        })())
    }
}
