//! `MemoryTimerStore`: the core's `TimerTable` and `InboxTable` behind the
//! async timer store and inbox interfaces, for JavaScript hosts (tests, a
//! single-node service).
//!
//! As with `MemoryEventStore`, each method does all its work synchronously
//! and returns a promise already settled, so concurrent calls never overlap
//! inside it and each is one atomic step. Every input is read into the
//! core's types and checked by the table before it changes anything.

use std::cell::RefCell;

use js_sys::Promise;
use loomfence_core::inbox::{InboxTable, Sent};
use loomfence_core::timer::{Completed, TimerTable, check_row};
use wasm_bindgen::prelude::*;

use crate::heap::settle;
use crate::inbox_values as inbox;
use crate::timer_values::{self as timer, core};

/// The in-memory timer store and inbox.
#[wasm_bindgen(js_name = MemoryTimerStore)]
#[derive(Debug, Default)]
pub struct MemoryTimerStore {
    /// Both tables behind one borrow: a send and its intent row are one
    /// step, as the inbox interface requires of every store.
    table: RefCell<Tables>,
}

/// What the store holds.
#[derive(Debug, Default)]
struct Tables {
    /// The rows, their flags and their claims.
    timers: TimerTable,
    /// The messages.
    inbox: InboxTable,
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
                .timers
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
                .timers
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
                .timers
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
                .timers
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
                .timers
                .reschedule(&claim, &next)
                .map_err(|e| core(&e))?;
            Ok(completed(outcome))
        })())
    }

    /// Retires the claimed row and records its exhaustion (`{ attempts,
    /// at }`) in one step, if `claim` is still its current claim; resolves
    /// to `'done'`, or `'notHeld'` with nothing recorded.
    pub fn exhaust(&self, claim: JsValue, exhaustion: JsValue) -> Promise {
        settle((|| {
            let claim = timer::claim(&claim)?;
            let exhaustion = timer::exhaustion(&exhaustion)?;
            let outcome = self
                .table
                .borrow_mut()
                .timers
                .exhaust(&claim, &exhaustion)
                .map_err(|e| core(&e))?;
            Ok(completed(outcome))
        })())
    }

    /// Every exhaustion recorded so far, in `(executionId, wakeAt)` order:
    /// `[{ row, attempts, at }]`, for a host's operator view and its tests.
    pub fn exhausted(&self) -> Promise {
        let records = self.table.borrow().timers.exhausted_rows();
        settle(Ok(timer::list(&records, timer::exhausted_js)))
    }

    /// Hands the claimed row back, due again at once, if `claim` is still
    /// its current claim; resolves to `'done'` or `'notHeld'`.
    pub fn release(&self, claim: JsValue) -> Promise {
        settle((|| {
            let claim = timer::claim(&claim)?;
            let outcome = self
                .table
                .borrow_mut()
                .timers
                .release(&claim)
                .map_err(|e| core(&e))?;
            Ok(completed(outcome))
        })())
    }

    /// Stores `message` and schedules its `intent` row (with `schedule`'s
    /// upsert rules) in one step, unless a message with its key is there:
    /// then nothing is written. Both are checked before either is touched.
    /// Resolves to `{ duplicate, arrival }`.
    pub fn send(&self, message: JsValue, intent: JsValue) -> Promise {
        settle((|| {
            let message = inbox::message("message", &message)?;
            let intent = timer::row("intent", &intent)?;
            message.check().map_err(|e| core(&e))?;
            check_row(&intent).map_err(|e| core(&e))?;
            let mut tables = self.table.borrow_mut();
            let sent = tables.inbox.send(&message).map_err(|e| core(&e))?;
            if matches!(sent, Sent::Stored { .. }) {
                tables.timers.schedule(&intent).map_err(|e| core(&e))?;
            }
            Ok(inbox::sent_js(sent))
        })())
    }

    /// Up to `limit` (1 to 1000) messages of `executionId` on any of
    /// `channels` not marked consumed, in arrival order.
    pub fn pending(&self, execution_id: JsValue, channels: JsValue, limit: JsValue) -> Promise {
        settle((|| {
            let id = inbox::execution_id(&execution_id)?;
            let channels = inbox::channels(&channels)?;
            let limit = inbox::limit(&limit)?;
            let listed = self
                .table
                .borrow()
                .inbox
                .pending(&id, &channels, limit)
                .map_err(|e| core(&e))?;
            Ok(inbox::listing_js(&listed))
        })())
    }

    /// Marks the message `key` names consumed; resolves to whether it was
    /// there unmarked.
    #[wasm_bindgen(js_name = markConsumed)]
    pub fn mark_consumed(&self, key: JsValue) -> Promise {
        settle((|| {
            let key = inbox::key(&key)?;
            let marked = self
                .table
                .borrow_mut()
                .inbox
                .mark_consumed(&key)
                .map_err(|e| core(&e))?;
            Ok(JsValue::from_bool(marked))
        })())
    }

    /// Deletes every message of `executionId`; resolves to how many there
    /// were.
    pub fn purge(&self, execution_id: JsValue) -> Promise {
        settle((|| {
            let id = inbox::execution_id(&execution_id)?;
            let purged = self.table.borrow_mut().inbox.purge(&id);
            #[allow(clippy::cast_precision_loss)]
            Ok(JsValue::from_f64(purged as f64))
        })())
    }

    /// Every message of `executionId`, consumed or not, in arrival order,
    /// each with `arrival` and `consumed`: for inspection and tests.
    pub fn messages(&self, execution_id: JsValue) -> Promise {
        settle((|| {
            let id = inbox::execution_id(&execution_id)?;
            Ok(inbox::entries_js(&self.table.borrow().inbox.messages(&id)))
        })())
    }
}
