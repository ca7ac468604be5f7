//! `MemoryEventStore`: the core's in-memory store behind the async store
//! interface every JavaScript host store implements.
//!
//! Each method does all its work synchronously and returns a promise that
//! is already settled. No borrow of the store is ever held across an
//! `await`, so any number of calls may be in flight at once (two `resume`s
//! under `Promise.all`, say) without a "recursive use of an object" error,
//! and each call is one atomic step, as on any other backend.

use std::cell::RefCell;

use js_sys::{Array, Promise};
use loomfence_core::feed::FeedCursor;
use loomfence_core::{AcquireOutcome, AppendError, MemoryStore, ParkExpectation};
use wasm_bindgen::prelude::*;

use crate::events;
use crate::feed;
use crate::heap::settle;
use crate::js_errors;
use crate::json_text;
use crate::out::{self, Out};
use crate::retention_values;
use crate::values::{self, counter, optional_counter, property};

/// The in-memory event store.
#[wasm_bindgen(js_name = MemoryEventStore)]
#[derive(Debug)]
pub struct MemoryEventStore {
    /// The logs and tokens.
    store: RefCell<MemoryStore>,
    /// The wait `waitForFeed` handed out, until a write moves the head.
    waiter: RefCell<Option<JsValue>>,
}

/// An append's refusal as its JS error.
fn append_error(error: &AppendError) -> JsValue {
    match error {
        AppendError::Stale(stale) => js_errors::stale(stale),
        AppendError::Input(input) => js_errors::input(input),
        other => js_errors::internal(&other.to_string()),
    }
}

impl MemoryEventStore {
    /// Runs `f` on the logs, as one synchronous step; a step that moved
    /// the feed's head ends the wait `waitForFeed` handed out.
    pub(crate) fn with_store<T>(&self, f: impl FnOnce(&mut MemoryStore) -> T) -> T {
        let before = self.head();
        let done = f(&mut self.store.borrow_mut());
        self.woken(before);
        done
    }

    /// The feed's head.
    fn head(&self) -> Option<FeedCursor> {
        self.store.borrow().feed_head().ok()
    }

    /// Ends the wait `waitForFeed` handed out if the head moved from
    /// `before`. Not generic, so each write pays one call for it.
    #[inline(never)]
    fn woken(&self, before: Option<FeedCursor>) {
        if self.head() == before {
            return;
        }
        // Taken before it is woken: a waiter that waits again at once gets
        // a fresh wait, not this settled one.
        let waiter = self.waiter.borrow_mut().take();
        if let Some(waiter) = waiter {
            feed::wake(&waiter);
        }
    }
}

impl Default for MemoryEventStore {
    /// A new store, as `new MemoryEventStore()` makes it.
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = MemoryEventStore)]
impl MemoryEventStore {
    /// An empty store. Its map of executions hashes ids from a seed drawn
    /// with `Math.random()` (the core draws none), so that ids from outside
    /// cannot be chosen to collide.
    #[wasm_bindgen(constructor)]
    #[must_use]
    pub fn new() -> Self {
        let seed = (js_sys::Math::random() * 9_007_199_254_740_992.0) as u64;
        Self {
            store: RefCell::new(MemoryStore::with_hash_seed(seed)),
            waiter: RefCell::default(),
        }
    }

    /// Appends one event; resolves to its envelope. A stale token rejects
    /// with `StaleFenceError`, malformed input with a typed error, and
    /// nothing is written either way.
    pub fn append(&self, execution_id: JsValue, event: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let (event, text) = events::event(&event)?;
            let first = self
                .with_store(|store| store.append_many_from(&id, event))
                .map_err(|e| append_error(&e))?;
            Ok(out::stored(&execution_id, first, &text))
        })())
    }

    /// Appends a batch, all or nothing, under one guard decision; resolves
    /// to the envelopes.
    #[wasm_bindgen(js_name = appendMany)]
    pub fn append_many(&self, execution_id: JsValue, events: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let (events, lines) = events::events(&events)?;
            let first = self
                .with_store(|store| store.append_many_from(&id, events))
                .map_err(|e| append_error(&e))?;
            Ok(out::stored_batch(&execution_id, first, &lines))
        })())
    }

    /// Appends a batch only while the park at `parkSeq` is unanswered, under
    /// the same guard; resolves to the envelopes, or to
    /// `{ parkAnswered: true }` with nothing written. How a resume that takes
    /// no token still lands at most once.
    #[wasm_bindgen(js_name = appendIfParked)]
    pub fn append_if_parked(
        &self,
        execution_id: JsValue,
        park_seq: JsValue,
        events: JsValue,
    ) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let park_seq = counter("parkSeq", &park_seq)?;
            let (events, lines) = events::events(&events)?;
            let outcome = self
                .with_store(|store| store.append_if_parked_from(&id, park_seq, events))
                .map_err(|e| append_error(&e))?;
            match outcome {
                Some(first) => Ok(out::stored_batch(&execution_id, first, &lines)),
                None => Ok(Out::new().set("parkAnswered", &JsValue::TRUE).done()),
            }
        })())
    }

    /// The events with `fromSeq <= sequence <= toSeq` (from 1 and to the
    /// head when omitted).
    #[wasm_bindgen(js_name = readRange)]
    pub fn read_range(&self, execution_id: JsValue, from_seq: JsValue, to_seq: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let from = optional_counter("fromSeq", &from_seq)?.unwrap_or(1);
            let to = optional_counter("toSeq", &to_seq)?;
            let mut read = Ok(());
            let events = out::stored_events(|text| {
                read = self
                    .store
                    .borrow()
                    .visit_range(&id, from, to, |id, sequence, event| {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        json_text::write_envelope_lines(
                            text,
                            id.as_str(),
                            sequence,
                            (&event.kind, &event.payload, &event.metadata, event.at),
                        );
                    });
            });
            read.map_err(|e| js_errors::input(&e))?;
            Ok(events)
        })())
    }

    /// Bumps the token unconditionally; resolves to the new token.
    #[wasm_bindgen(js_name = acquireFence)]
    pub fn acquire_fence(&self, execution_id: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let token = self.store.borrow_mut().acquire_fence(&id);
            Ok(JsValue::from_f64(js_errors::number(token)))
        })())
    }

    /// Bumps the token only if it is `fence` and nothing answered the park
    /// at `parkSeq`; resolves to `{ fence }` or `{ stale: true, fence }`.
    #[wasm_bindgen(js_name = acquireFenceIf)]
    pub fn acquire_fence_if(&self, execution_id: JsValue, expect: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            if !expect.is_object() {
                return Err(js_errors::wrong_type(
                    "expect must be an object { fence, parkSeq }",
                    "NOT_AN_OBJECT",
                ));
            }
            let expect = ParkExpectation {
                fence: counter("fence", &property(&expect, "fence")?)?,
                park_seq: counter("parkSeq", &property(&expect, "parkSeq")?)?,
            };
            let outcome = self
                .store
                .borrow_mut()
                .acquire_fence_if(&id, expect)
                .map_err(|e| js_errors::input(&e))?;
            // `{ fence }`, with `stale: true` only when the acquire lost.
            Ok(match outcome {
                AcquireOutcome::Acquired { fence } => Out::new()
                    .set("fence", &JsValue::from_f64(js_errors::number(fence)))
                    .done(),
                AcquireOutcome::Stale { fence } => Out::new()
                    .set("fence", &JsValue::from_f64(js_errors::number(fence)))
                    .set("stale", &JsValue::TRUE)
                    .done(),
            })
        })())
    }

    /// The current token, 0 if nobody ever acquired.
    #[wasm_bindgen(js_name = currentFence)]
    pub fn current_fence(&self, execution_id: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let token = self.store.borrow().current_fence(&id);
            Ok(JsValue::from_f64(js_errors::number(token)))
        })())
    }

    /// Deletes the log (a real token is kept, so a zombie writer of a
    /// re-created id stays fenced out); resolves to whether a log existed.
    #[wasm_bindgen(js_name = deleteExecution)]
    pub fn delete_execution(&self, execution_id: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let existed = self.store.borrow_mut().delete_execution(&id);
            Ok(JsValue::from_bool(existed))
        })())
    }

    /// Up to `limit` (1 to 10 000) executions that have a log, with ids
    /// after `after` (exclusive; `null` or omitted for the first page), in
    /// id order: `[{ executionId, head, ended: { sequence, at } | null }]`,
    /// `ended` being the first terminal event. An empty page is the end. A
    /// retention sweep pages through it by the last id, so deleting as it
    /// goes neither skips nor repeats anything.
    #[wasm_bindgen(js_name = listExecutions)]
    pub fn list_executions(&self, after: JsValue, limit: JsValue) -> Promise {
        settle((|| {
            let after = retention_values::after(&after)?;
            let limit = retention_values::limit("limit", &limit)?;
            let page = self
                .store
                .borrow()
                .list_executions(after.as_ref(), limit)
                .map_err(|e| js_errors::input(&e))?;
            Ok(retention_values::page_js(&page))
        })())
    }

    /// Deletes the log as `deleteExecution` does, only while `guard` (what
    /// a sweep saw: `{ head, parents: [{ parent, seen }] }`) still holds,
    /// decided in the same step as the delete; resolves to
    /// `{ deleted: true }`, or to `{ logChanged: true, head }` /
    /// `{ parentMoved: true, parent }` with nothing deleted. How a parent
    /// that parks on the child after the sweep's pin check keeps it.
    #[wasm_bindgen(js_name = deleteExecutionIf)]
    pub fn delete_execution_if(&self, execution_id: JsValue, guard: JsValue) -> Promise {
        settle((|| {
            let id = values::execution_id(&execution_id)?;
            let guard = retention_values::guard(&guard)?;
            let outcome = self
                .store
                .borrow_mut()
                .delete_execution_if(&id, &guard)
                .map_err(|e| js_errors::input(&e))?;
            Ok(retention_values::outcome_js(&outcome))
        })())
    }

    /// Up to `limit` (1 to 10 000) events written after the cursor `after`
    /// (`{ epoch, position }`), in feed order: `[{ cursor, event }]`, the
    /// event as `readRange` gives it. Every cursor's epoch is 0 here.
    pub fn feed(&self, after: JsValue, limit: JsValue) -> Promise {
        settle((|| {
            let after = feed::cursor(&after)?;
            let limit = feed::limit("limit", &limit)?;
            let mut text = String::from("[");
            self.store
                .borrow()
                .visit_feed(after, limit, |cursor, id, sequence, event| {
                    if text.len() > 1 {
                        text.push(',');
                    }
                    feed::write_entry(&mut text, cursor, id, sequence, event);
                })
                .map_err(|e| js_errors::input(&e))?;
            text.push(']');
            Ok(out::parse_json(&text))
        })())
    }

    /// The cursor of the last event written (deleted or not), or
    /// `{ epoch: 0, position: 0 }`: it never goes back.
    #[wasm_bindgen(js_name = feedHead)]
    pub fn feed_head(&self) -> Promise {
        settle(
            self.store
                .borrow()
                .feed_head()
                .map(feed::cursor_js)
                .map_err(|e| js_errors::input(&e)),
        )
    }

    /// Up to `limit` (1 to 10 000) executions with ids after `after`
    /// (`null` or omitted for the first page), in id order, whose last
    /// answering event is a park: what a follower watches when it starts.
    #[wasm_bindgen(js_name = openParks)]
    pub fn open_parks(&self, after: JsValue, limit: JsValue) -> Promise {
        settle((|| {
            let after = retention_values::after(&after)?;
            let limit = feed::limit("limit", &limit)?;
            let ids = self
                .store
                .borrow()
                .open_parks(after.as_ref(), limit)
                .map_err(|e| js_errors::input(&e))?;
            Ok(ids
                .iter()
                .map(|id| JsValue::from_str(id.as_str()))
                .collect::<Array>()
                .into())
        })())
    }

    /// Resolves once the feed holds something after `after`: at once when
    /// the head is already past it, else on the next write.
    #[wasm_bindgen(js_name = waitForFeed)]
    pub fn wait_for_feed(&self, after: JsValue) -> Promise {
        settle((|| {
            let after = feed::cursor(&after)?;
            let head = self
                .store
                .borrow()
                .feed_head()
                .map_err(|e| js_errors::input(&e))?;
            if head > after {
                return Ok(JsValue::UNDEFINED);
            }
            let mut waiter = self.waiter.borrow_mut();
            Ok(feed::waiting(waiter.get_or_insert_with(feed::waiter)))
        })())
    }
}
