//! A store implemented in JavaScript, as the resume driver sees it: any
//! object with the `EventStore` methods, called here one at a time and
//! awaited by the JS driver (`npm/resume.js`), which hands back what each
//! call settled to.
//!
//! The store's answers are checked, not trusted: an answer outside the
//! interface (an `acquireFenceIf` reply that is not `{ fence }` with the
//! next token or `{ stale: true, fence }`, a stale refusal without a
//! consistent `current`, an append acknowledgement that is not the event
//! sent) is an `InputError` with code `STORE_CONTRACT`, and the resume stops
//! there without appending anything.

use js_sys::{Array, Function, Promise, Reflect};
use loomfence_core::backend::fence_of;
use loomfence_core::{
    AcquireOutcome, Action, Capability, Envelope, ExecutionId, NewEvent, ParkExpectation,
    StaleFenceError,
};
use wasm_bindgen::prelude::*;

use crate::events::envelopes;
use crate::js_errors::{self, NOT_A_PARK, PARK_SEQ_OUT_OF_RANGE, number};
use crate::out;
use crate::values::{counter, property, property_as};

/// The `code` of every answer a store gives outside the interface.
pub(crate) const STORE_CONTRACT: &str = "STORE_CONTRACT";

/// A store that broke the interface's contract.
pub(crate) fn contract(message: &str) -> JsValue {
    js_errors::invalid(message, STORE_CONTRACT)
}

/// What a host store call ended in, beyond success.
pub(crate) enum Refusal {
    /// The store refused the append as stale.
    Stale(StaleFenceError),
    /// The store said `parkSeq` is not in the log, or not a park.
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

/// Whether `error.key` is the string `value` (a host's own error, a plain
/// object or one of the package's classes alike).
fn is_named(error: &JsValue, key: &str, value: &str) -> bool {
    property(error, key)
        .ok()
        .and_then(|v| v.as_string())
        .as_deref()
        == Some(value)
}

/// Whether a store's refusal says the park at `parkSeq` is gone: outside
/// the log (`PARK_SEQ_OUT_OF_RANGE`) or not a park (`NOT_A_PARK`).
fn is_park_gone(error: &JsValue) -> bool {
    is_named(error, "code", PARK_SEQ_OUT_OF_RANGE) || is_named(error, "code", NOT_A_PARK)
}

/// A method of `store`, if it has one.
fn method(store: &JsValue, name: &str) -> Option<Function> {
    Reflect::get(store, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
}

impl HostStore {
    /// Wraps `store`, which must read and append park-conditionally.
    ///
    /// `appendIfParked` is required of every store `resume` drives, whatever
    /// its fencing: it is how the resume lands at most once without a token,
    /// and how a resume under a token meets a delete that ran after its
    /// acquire (the park is gone: refused) instead of recreating the log. A
    /// store without it is refused here, before any call.
    pub(crate) fn new(store: JsValue) -> Result<Self, JsValue> {
        if !store.is_object() {
            return Err(js_errors::wrong_type(
                "store must be an object with the EventStore methods",
                "NOT_A_STORE",
            ));
        }
        for name in ["readRange", "appendIfParked"] {
            if method(&store, name).is_none() {
                return Err(js_errors::wrong_type(
                    &format!(
                        "store has no {name}() method; resume needs readRange() and \
                         appendIfParked() (without the park-conditional append two resumers \
                         could both land, and a delete during the resume would recreate the log)"
                    ),
                    "NOT_A_STORE",
                ));
            }
        }
        Ok(Self { store })
    }

    /// What the store offers, read off its methods as the design does
    /// (design: the resume): `acquireFenceIf` is conditional, `acquireFence` alone is
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

    /// Starts the store call `action` asks for: what the method returned
    /// (a promise or a plain value), for the JS driver to await, or a
    /// rejected promise of what it threw. The resume is always appended
    /// with `appendIfParked`, carrying the token in `metadata.fence` when
    /// one was taken: a park gone by then (a delete after the acquire) is a
    /// refusal with nothing written.
    pub(crate) fn start(&self, id: &ExecutionId, action: &Action) -> Result<JsValue, JsValue> {
        let id = JsValue::from_str(id.as_str());
        match action {
            Action::ReadFrom { from_seq } => {
                self.call("readRange", &[id, JsValue::from_f64(number(*from_seq))])
            }
            Action::AcquireFenceIf(expect) => {
                self.call("acquireFenceIf", &[id, out::expectation(*expect)])
            }
            Action::AcquireFence => self.call("acquireFence", &[id]),
            Action::AppendIfParked { park_seq, events } => self.call(
                "appendIfParked",
                &[
                    id,
                    JsValue::from_f64(number(*park_seq)),
                    events.iter().map(out::new_event).collect::<Array>().into(),
                ],
            ),
            // A newer core's action this binding cannot perform: stop
            // before doing anything with it.
            _ => Err(js_errors::internal(
                "the resume machine asked for an action this binding does not know; \
                 nothing was written for it",
            )),
        }
    }

    /// Calls `name(args…)` on the store: what it returned, or a rejected
    /// promise of what it threw, so the driver meets both alike.
    fn call(&self, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
        let Some(function) = method(&self.store, name) else {
            return Err(js_errors::wrong_type(
                &format!("store has no {name}() method"),
                "NOT_A_STORE",
            ));
        };
        Ok(function
            .apply(&self.store, &args.iter().collect::<Array>())
            .unwrap_or_else(|thrown| Promise::reject(&thrown).into()))
    }
}

/// What a store call settled to: its value, or what it threw or rejected
/// with.
pub(crate) type Settled = Result<JsValue, JsValue>;

/// Classifies a failed append: a stale fence (by class or by `name`), a
/// park that is gone (by `code`: `PARK_SEQ_OUT_OF_RANGE` or `NOT_A_PARK`),
/// or something to pass on. A stale refusal must say which token is
/// current (`current`), above the one presented (none: above 0), for that
/// is the only case the guard refuses.
fn refusal(id: &ExecutionId, presented: Option<u64>, error: JsValue) -> Refusal {
    if is_named(&error, "name", "StaleFenceError") {
        let current = property(&error, "current")
            .ok()
            .and_then(|v| counter("current", &v).ok());
        return match current {
            Some(current) if current > presented.unwrap_or(0) => Refusal::Stale(StaleFenceError {
                execution_id: id.clone(),
                presented,
                current,
            }),
            _ => Refusal::Other(contract(
                "appendIfParked() threw a StaleFenceError whose `current` is not a token \
                 above the one the resume presented",
            )),
        };
    }
    if is_park_gone(&error) {
        return Refusal::ParkGone;
    }
    Refusal::Other(error)
}

/// The field `name` of a store's reply (`what`); a field that throws while
/// read (a getter, a Proxy trap) is a `STORE_CONTRACT` error, what it threw
/// its `cause`.
fn reply(answer: &JsValue, what: &str, name: &str) -> Result<JsValue, JsValue> {
    property_as(answer, name, what, STORE_CONTRACT)
}

/// What `readRange(id, fromSeq)` settled to, as envelopes.
pub(crate) fn read_answer(settled: Settled) -> Result<Vec<Envelope>, JsValue> {
    envelopes("readRange() result", STORE_CONTRACT, &settled?)
}

/// What `acquireFenceIf(id, { fence, parkSeq })` settled to. The reply must
/// be `{ fence }` with `fence` the expected token plus one, or
/// `{ stale: true, fence }` (`stale` the boolean `true`); `fence` a safe
/// non-negative integer either way. `None`: the store threw
/// `PARK_SEQ_OUT_OF_RANGE` or `NOT_A_PARK`, the park is gone.
pub(crate) fn acquire_if_answer(
    expect: ParkExpectation,
    settled: Settled,
) -> Result<Option<AcquireOutcome>, JsValue> {
    let answer = match settled {
        Ok(answer) => answer,
        Err(error) if is_park_gone(&error) => return Ok(None),
        Err(error) if is_named(&error, "name", "StaleFenceError") => {
            return Err(contract(
                "acquireFenceIf() threw StaleFenceError; it answers { stale: true, fence } instead",
            ));
        }
        Err(error) => return Err(error),
    };
    let wrong = || {
        contract(
            "acquireFenceIf() must resolve to { fence } holding the expected token + 1, \
             or to { stale: true, fence }",
        )
    };
    if !answer.is_object() {
        return Err(wrong());
    }
    let fence = counter("fence", &reply(&answer, "acquireFenceIf() reply", "fence")?)
        .map_err(|_| wrong())?;
    let stale = reply(&answer, "acquireFenceIf() reply", "stale")?;
    if stale.is_undefined() && Some(fence) == expect.fence.checked_add(1) {
        Ok(Some(AcquireOutcome::Acquired { fence }))
    } else if stale == JsValue::TRUE {
        Ok(Some(AcquireOutcome::Stale { fence }))
    } else {
        Err(wrong())
    }
}

/// What `acquireFence(id)` settled to: the new token, a safe integer of at
/// least 1.
pub(crate) fn acquire_answer(settled: Settled) -> Result<u64, JsValue> {
    counter("token", &settled?)
        .ok()
        .filter(|token| *token > 0)
        .ok_or_else(|| {
            contract("acquireFence() must resolve to the new token, a safe integer from 1")
        })
}

/// What `appendIfParked(id, parkSeq, [event])`, the resume's one append,
/// settled to: the stored envelopes, or `None` when the store answers
/// `{ parkAnswered: true }`. Whether they are the event sent, field by field
/// (the token included), is the core machine's check
/// (`ResumeMachine::handle_appended`), the same for every host.
pub(crate) fn append_answer(
    id: &ExecutionId,
    events: &[NewEvent],
    settled: Settled,
) -> Result<Option<Vec<Envelope>>, Refusal> {
    // One batch is written under one token.
    let token = events
        .first()
        .and_then(|event| fence_of(&event.metadata).ok().flatten());
    let answer = settled.map_err(|e| refusal(id, token, e))?;
    if crate::values::is_array(&answer) {
        return Ok(Some(envelopes(
            "appendIfParked() result",
            STORE_CONTRACT,
            &answer,
        )?));
    }
    if reply(&answer, "appendIfParked() reply", "parkAnswered")? == JsValue::TRUE {
        return Ok(None);
    }
    Err(Refusal::Other(contract(
        "appendIfParked() must resolve to the envelopes or { parkAnswered: true }",
    )))
}
