//! A store implemented in JavaScript, as the resume driver sees it: any
//! object with the `EventStore` methods, called and awaited one at a time.

use js_sys::{Array, Function, Promise, Reflect};
use loomfence_core::{
    AcquireOutcome, Capability, Envelope, ExecutionId, NewEvent, ParkExpectation, StaleFenceError,
};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::events::{envelope, envelopes};
use crate::js_errors::{self, PARK_SEQ_OUT_OF_RANGE, number};
use crate::values::{counter, property, to_js};

/// What a host store call ended in, beyond success.
pub(crate) enum Refusal {
    /// The store refused the append as stale.
    Stale(StaleFenceError),
    /// The store said `parkSeq` is not in the log.
    ParkGone,
    /// Anything else: passed to the caller unchanged.
    Other(JsValue),
}

impl From<JsValue> for Refusal {
    fn from(error: JsValue) -> Self {
        Refusal::Other(error)
    }
}

/// The host's store object.
pub(crate) struct HostStore {
    /// The object itself, `this` for every call.
    store: JsValue,
}

/// A method of `store`, if it has one.
fn method(store: &JsValue, name: &str) -> Option<Function> {
    Reflect::get(store, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
}

impl HostStore {
    /// Wraps `store`, which must at least read and append.
    pub(crate) fn new(store: JsValue) -> Result<Self, JsValue> {
        if !store.is_object() {
            return Err(js_errors::wrong_type(
                "store must be an object with the EventStore methods",
                "NOT_A_STORE",
            ));
        }
        for name in ["readRange", "append"] {
            if method(&store, name).is_none() {
                return Err(js_errors::wrong_type(
                    &format!("store has no {name}() method"),
                    "NOT_A_STORE",
                ));
            }
        }
        Ok(Self { store })
    }

    /// What the store offers, read off its methods as the reference design
    /// does: `acquireFenceIf` is conditional, `acquireFence` alone is
    /// fencing-only, neither is a store without tokens.
    pub(crate) fn capability(&self) -> Capability {
        if method(&self.store, "acquireFenceIf").is_some() {
            Capability::Conditional
        } else if method(&self.store, "acquireFence").is_some() {
            Capability::FencingOnly
        } else {
            Capability::NonFencing
        }
    }

    /// Calls `name(args…)` on the store and awaits what it returns (a
    /// promise or a plain value); a throw or a rejection is the error.
    async fn call(&self, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
        let Some(function) = method(&self.store, name) else {
            return Err(js_errors::wrong_type(
                &format!("store has no {name}() method"),
                "NOT_A_STORE",
            ));
        };
        let returned = function.apply(&self.store, &args.iter().collect::<Array>())?;
        JsFuture::from(Promise::resolve(&returned)).await
    }

    /// Classifies a failed call: a stale fence (by class or by `name`), a
    /// park that is gone (by `code`), or something to pass on.
    fn refusal(id: &ExecutionId, error: JsValue) -> Refusal {
        let text = |key: &str| property(&error, key).ok().and_then(|v| v.as_string());
        if text("name").as_deref() == Some("StaleFenceError") {
            let presented = property(&error, "presented")
                .ok()
                .and_then(|v| counter("presented", &v).ok());
            let current = property(&error, "current")
                .ok()
                .and_then(|v| counter("current", &v).ok())
                .unwrap_or_default();
            return Refusal::Stale(StaleFenceError {
                execution_id: id.clone(),
                presented,
                current,
            });
        }
        if text("code").as_deref() == Some(PARK_SEQ_OUT_OF_RANGE) {
            return Refusal::ParkGone;
        }
        Refusal::Other(error)
    }

    /// `readRange(id, fromSeq)`.
    pub(crate) async fn read_from(
        &self,
        id: &ExecutionId,
        from_seq: u64,
    ) -> Result<Vec<Envelope>, JsValue> {
        let read = self
            .call(
                "readRange",
                &[
                    JsValue::from_str(id.as_str()),
                    JsValue::from_f64(number(from_seq)),
                ],
            )
            .await?;
        envelopes("readRange() result", "STORE_CONTRACT", &read)
    }

    /// `acquireFenceIf(id, { fence, parkSeq })`.
    pub(crate) async fn acquire_fence_if(
        &self,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, Refusal> {
        let expect = to_js(&expect)?;
        let answer = self
            .call("acquireFenceIf", &[JsValue::from_str(id.as_str()), expect])
            .await
            .map_err(|e| Self::refusal(id, e))?;
        let fence = counter(
            "acquireFenceIf() result .fence",
            &property(&answer, "fence")?,
        )?;
        Ok(if property(&answer, "stale")?.is_truthy() {
            AcquireOutcome::Stale { fence }
        } else {
            AcquireOutcome::Acquired { fence }
        })
    }

    /// `acquireFence(id)`.
    pub(crate) async fn acquire_fence(&self, id: &ExecutionId) -> Result<u64, JsValue> {
        let token = self
            .call("acquireFence", &[JsValue::from_str(id.as_str())])
            .await?;
        counter("acquireFence() result", &token)
    }

    /// `append(id, event)`.
    pub(crate) async fn append(
        &self,
        id: &ExecutionId,
        event: &NewEvent,
    ) -> Result<Vec<Envelope>, Refusal> {
        let stored = self
            .call("append", &[JsValue::from_str(id.as_str()), to_js(event)?])
            .await
            .map_err(|e| Self::refusal(id, e))?;
        Ok(vec![envelope(
            "append() result",
            "STORE_CONTRACT",
            &stored,
        )?])
    }

    /// `appendIfParked(id, parkSeq, [event])` when the store has it: resolves
    /// to the envelopes, or to `{ parkAnswered: true }`. `None` when the
    /// park was answered.
    ///
    /// A store without it gets a plain `append`: like the reference
    /// design's non-fencing stores, it then trusts that one process resumes
    /// at a time.
    pub(crate) async fn append_if_parked(
        &self,
        id: &ExecutionId,
        park_seq: u64,
        event: &NewEvent,
    ) -> Result<Option<Vec<Envelope>>, Refusal> {
        if method(&self.store, "appendIfParked").is_none() {
            return self.append(id, event).await.map(Some);
        }
        let batch = to_js(std::slice::from_ref(event))?;
        let answer = self
            .call(
                "appendIfParked",
                &[
                    JsValue::from_str(id.as_str()),
                    JsValue::from_f64(number(park_seq)),
                    batch,
                ],
            )
            .await
            .map_err(|e| Self::refusal(id, e))?;
        if Array::is_array(&answer) {
            return Ok(Some(envelopes(
                "appendIfParked() result",
                "STORE_CONTRACT",
                &answer,
            )?));
        }
        if property(&answer, "parkAnswered")?.is_truthy() {
            return Ok(None);
        }
        Err(Refusal::Other(js_errors::wrong_type(
            "appendIfParked() must resolve to the envelopes or { parkAnswered: true }",
            "STORE_CONTRACT",
        )))
    }
}
