//! The JavaScript error classes (defined in `js/errors.js`) and the
//! conversion of every core error into one of them, or into a built-in
//! `TypeError` / `RangeError`.
//!
//! Which class a failure becomes is part of the package's contract:
//! - a number that is not a safe non-negative integer: `RangeError`
//!   (`TypeError` when it is not a number at all);
//! - any other malformed input (an execution id, an event, a batch):
//!   `InputError`, a `TypeError` subclass with a `code`; a `parkSeq` whose
//!   event is not a park is one too (`NOT_A_PARK`), while a `parkSeq`
//!   outside the log is a `RangeError` (`PARK_SEQ_OUT_OF_RANGE`);
//! - a stale writer: `StaleFenceError`;
//! - a resume refused or contended: `ResumeRefusedError` /
//!   `ResumeContendedError`;
//! - a host store's answer outside the interface: `InputError` with code
//!   `STORE_CONTRACT` (`host_store.rs`, and the sweep's answers in
//!   `sweep.rs`);
//! - a count out of its bounds (a listing's `limit`, a guard's number of
//!   parents): `InputError` with code `INVALID_LIMIT`;
//! - a timer call's input the core refuses (a row, claim, lease, listing,
//!   policy, draw, backoff entry, a message, key or channel list of the
//!   inbox, or a machine's answer that does not fit):
//!   `TimerInputError`, with a `code` naming the input (`timer_values.rs`);
//! - a field of the caller's input that throws while it is read:
//!   `InputError` (`TimerInputError` for a timer input) with code
//!   `UNREADABLE`, what was thrown its `cause`;
//! - a core answer this binding does not know (a newer core's variant of a
//!   non-exhaustive enum): a plain `Error` with code `INTERNAL`.

use loomfence_core::{
    InputError, ResumeError, StaleFenceError,
    redrive::RedriveExhaustedError,
    resume::{ResumeContendedError, ResumeRefusedError},
};
use serde_json::Value;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/js/errors.js")]
extern "C" {
    #[wasm_bindgen(js_name = staleFenceError)]
    fn stale_fence_error(
        message: &str,
        execution_id: &str,
        presented: JsValue,
        current: f64,
    ) -> JsValue;
    #[wasm_bindgen(js_name = resumeRefusedError)]
    fn resume_refused_error(message: &str, execution_id: &str, park_seq: f64) -> JsValue;
    #[wasm_bindgen(js_name = resumeContendedError)]
    fn resume_contended_error(message: &str, execution_id: &str, attempts: u32) -> JsValue;
    #[wasm_bindgen(js_name = inputError)]
    fn input_error(message: &str, code: &str) -> JsValue;
    #[wasm_bindgen(js_name = timerInputError)]
    fn timer_input_error(message: &str, code: &str) -> JsValue;
    #[wasm_bindgen(js_name = redriveExhaustedError)]
    fn redrive_exhausted_error(
        message: &str,
        execution_id: &str,
        wake_at: f64,
        attempts: u32,
    ) -> JsValue;
    #[wasm_bindgen(js_name = rangeError)]
    fn range_error(message: &str, code: &str) -> JsValue;
    #[wasm_bindgen(js_name = typeError)]
    fn type_error(message: &str, code: &str) -> JsValue;
    #[wasm_bindgen(js_name = internalError)]
    fn internal_error(message: &str) -> JsValue;
    #[wasm_bindgen(js_name = unreadable)]
    fn unreadable_error(what: &str, code: &str, thrown: JsValue) -> JsValue;
    #[wasm_bindgen(js_name = timerUnreadable)]
    fn timer_unreadable_error(what: &str, code: &str, thrown: JsValue) -> JsValue;
    #[wasm_bindgen(js_name = errorClasses)]
    fn error_classes_js() -> JsValue;
}

/// The error classes, so the package's entry points can re-export the very
/// classes this module throws (one identity for `instanceof`).
#[wasm_bindgen(js_name = errorClasses)]
#[must_use]
pub fn error_classes() -> JsValue {
    error_classes_js()
}

/// A `u64` the core checked to be at most 2^53-1, as a JS number.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn number(value: u64) -> f64 {
    value as f64
}

/// A JS number as JavaScript prints it. Rust's own float formatting would
/// add about 15 KB to the module for the few messages that show a number.
pub(crate) fn show(value: f64) -> String {
    js_sys::Number::from(value)
        .to_string_with_radix(10)
        .map_or_else(|_| String::from("NaN"), String::from)
}

/// A `TypeError` with `code`.
pub(crate) fn wrong_type(message: &str, code: &str) -> JsValue {
    type_error(message, code)
}

/// A plain `Error` with code `INTERNAL`: the core answered something this
/// binding does not know (a newer core's variant). A bug, never the
/// caller's input.
pub(crate) fn internal(message: &str) -> JsValue {
    internal_error(message)
}

/// A `RangeError` with `code`.
pub(crate) fn out_of_range(message: &str, code: &str) -> JsValue {
    range_error(message, code)
}

/// An `InputError` with `code`.
pub(crate) fn invalid(message: &str, code: &str) -> JsValue {
    input_error(message, code)
}

/// A `TimerInputError` with `code`.
pub(crate) fn timer_input(message: &str, code: &str) -> JsValue {
    timer_input_error(message, code)
}

/// The `code` of an input field that threw while it was read (a getter, a
/// Proxy trap, a revoked Proxy).
pub(crate) const UNREADABLE: &str = "UNREADABLE";

/// An answer that does not answer the machine's pending action.
pub(crate) const UNEXPECTED_ANSWER: &str = "UNEXPECTED_ANSWER";

/// An `InputError` `UNREADABLE` for the field `what`, which threw `thrown`
/// while it was read: a refusal, the thrown value only its `cause`, never
/// read as data.
pub(crate) fn unreadable(what: &str, thrown: JsValue) -> JsValue {
    unreadable_as(what, UNREADABLE, thrown)
}

/// [`unreadable`] with another `code`: a store's reply that threw while it
/// was read is that store's `STORE_CONTRACT`.
pub(crate) fn unreadable_as(what: &str, code: &str, thrown: JsValue) -> JsValue {
    unreadable_error(what, code, thrown)
}

/// [`unreadable`] for a timer input: a `TimerInputError` `UNREADABLE`.
pub(crate) fn timer_unreadable(what: &str, thrown: JsValue) -> JsValue {
    timer_unreadable_error(what, UNREADABLE, thrown)
}

/// A timer store's refusal of its input, by kind.
pub(crate) fn timer(error: &InputError) -> JsValue {
    let code = match error {
        InputError::Time { .. } => "INVALID_TIME",
        InputError::Attempt { .. } => "INVALID_ATTEMPT",
        InputError::DueLimit { .. } => "INVALID_LIMIT",
        InputError::LeaseDuration { .. } => "INVALID_LEASE",
        InputError::Holder(_) => "INVALID_HOLDER",
        InputError::SameKey { .. } => "INVALID_RESCHEDULE",
        InputError::MessageField { .. } | InputError::Nul { .. } => "INVALID_MESSAGE",
        InputError::Limit { .. } => INVALID_LIMIT,
        InputError::NoWakeTime { .. } => "INVALID_TIME",
        _ => "INVALID_INPUT",
    };
    timer_input(&error.to_string(), code)
}

/// A chain of retries that gave up, as the `RedriveExhaustedError` a fire
/// outcome carries.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn exhausted(error: &RedriveExhaustedError) -> JsValue {
    redrive_exhausted_error(
        &error.to_string(),
        error.execution_id.as_str(),
        // A stored row's time: within 0..=2^53-1, so exact.
        error.wake_at as f64,
        error.attempts,
    )
}

/// A stale writer, as `StaleFenceError`.
pub(crate) fn stale(error: &StaleFenceError) -> JsValue {
    let presented = error
        .presented
        .map_or(JsValue::NULL, |fence| JsValue::from_f64(number(fence)));
    stale_fence_error(
        &error.to_string(),
        error.execution_id.as_str(),
        presented,
        number(error.current),
    )
}

/// A refused resume.
pub(crate) fn refused(error: &ResumeRefusedError) -> JsValue {
    resume_refused_error(
        &error.to_string(),
        error.execution_id.as_str(),
        number(error.park_seq),
    )
}

/// A contended resume.
pub(crate) fn contended(error: &ResumeContendedError) -> JsValue {
    resume_contended_error(
        &error.to_string(),
        error.execution_id.as_str(),
        error.attempts,
    )
}

/// Why a resume did not land, as its class.
pub(crate) fn resume(error: &ResumeError) -> JsValue {
    match error {
        ResumeError::Refused(refused_error) => refused(refused_error),
        ResumeError::Contended(contended_error) => contended(contended_error),
        ResumeError::StaleFence(stale_error) => stale(stale_error),
        other => internal(&format!("unknown resume outcome: {other}")),
    }
}

/// An invalid execution id.
pub(crate) fn id(error: &InputError) -> JsValue {
    invalid(&format!("executionId: {error}"), "INVALID_ID")
}

/// Input the core refused, by kind: numbers are `RangeError`s, the rest
/// `InputError`s.
pub(crate) fn input(error: &InputError) -> JsValue {
    let message = error.to_string();
    match error {
        id_error if id_error.is_id() => id(id_error),
        InputError::Event { source, .. } => match &**source {
            InputError::BadFence { found } => {
                if matches!(found, Value::Number(_)) {
                    out_of_range(&message, "BAD_FENCE")
                } else {
                    wrong_type(&message, "BAD_FENCE")
                }
            }
            InputError::AtOutOfRange { .. } => out_of_range(&message, "AT_OUT_OF_RANGE"),
            _ => invalid(&message, "INVALID_EVENT"),
        },
        InputError::MixedFences { .. } => invalid(&message, "MIXED_FENCES"),
        InputError::ParkSeqOutOfRange { .. } => out_of_range(&message, PARK_SEQ_OUT_OF_RANGE),
        InputError::NotAPark { .. } => invalid(&message, NOT_A_PARK),
        InputError::OutOfRange { .. } => out_of_range(&message, "OUT_OF_RANGE"),
        InputError::Limit { .. } => invalid(&message, INVALID_LIMIT),
        _ => invalid(&message, "INVALID_INPUT"),
    }
}

/// The `code` of a count out of its bounds: a listing's `limit`, a guard's
/// number of parents, a sweep's `pageLimit`.
pub(crate) const INVALID_LIMIT: &str = "INVALID_LIMIT";

/// The `code` of a recorded parent (`payload.parent` of the start) that is
/// not an execution id.
pub(crate) const INVALID_LINEAGE: &str = "INVALID_LINEAGE";

/// The `code` of an open park whose waits cannot be read.
pub(crate) const INVALID_PARK: &str = "INVALID_PARK";

/// The `code` of an open park followed by a kernel kind this node does not
/// know: whether it is answered is unknown.
pub(crate) const UNKNOWN_KIND: &str = "UNKNOWN_KIND";

/// The `code` of the error a store throws when `parkSeq` is not in the log:
/// the resume driver reads it as "the park is gone".
pub(crate) const PARK_SEQ_OUT_OF_RANGE: &str = "PARK_SEQ_OUT_OF_RANGE";

/// The `code` of the error a store throws when the event at `parkSeq` is
/// not a park (after a delete, a log can grow back past the sequence a
/// resumer read as its park): the resume driver reads it as "the park is
/// gone" too.
pub(crate) const NOT_A_PARK: &str = "NOT_A_PARK";
