//! Timer values crossing the boundary: rows, claims, leases, listings,
//! times, attempts and backoff entries, read field by field into the
//! core's typed values, and back out as plain objects.
//!
//! Every refusal is a `TimerInputError` whose `code` names the input, made
//! before anything is touched. These readers only turn JavaScript values
//! into the core's types (a number that is no safe integer, a wrong type, an
//! unknown field); the ranges the core cares about (a time in
//! `0..=2^53-1`, an attempt up to `2^31-1`, a limit, a lease) are the core's
//! checks, made by the call itself.

use js_sys::Array;
use loomfence_core::{
    ExecutionId, InputError,
    timer::{
        BackoffEntry, Claim, DueFilter, ExhaustedRow, Exhaustion, Lease, NodeId, Redrive, TimerRow,
    },
};
use wasm_bindgen::{JsCast, JsValue};

use crate::js_errors::{self, show};
use crate::out::Out;
use crate::values::{self, NotText};

/// The largest integer a JS number holds exactly, as a float.
const SAFE: f64 = 9_007_199_254_740_991.0;

/// The largest safe integer, as a `u64`.
pub(crate) const SAFE_U64: u64 = (1 << 53) - 1;

/// A row's shape is wrong (not an object, an unknown field, a `redrive`
/// that is not an object).
const INVALID_ROW: &str = "INVALID_ROW";
/// A time is not a safe integer, or (the core's check) outside
/// `0..=2^53-1`.
pub(crate) const INVALID_TIME: &str = "INVALID_TIME";
/// A claim's shape or number is wrong.
const INVALID_CLAIM: &str = "INVALID_CLAIM";
/// A lease's shape or duration is wrong.
const INVALID_LEASE: &str = "INVALID_LEASE";
/// A backoff entry (or bound) is wrong.
pub(crate) const INVALID_BACKOFF: &str = "INVALID_BACKOFF";

/// A `TimerInputError` with `code`.
pub(crate) fn refuse(message: &str, code: &str) -> JsValue {
    js_errors::timer_input(message, code)
}

/// The core's refusal of a timer input, as its `TimerInputError`.
pub(crate) fn core(error: &InputError) -> JsValue {
    js_errors::timer(error)
}

/// Reads a field of a timer input (`undefined` when `value` is not an
/// object); one that throws while read is a `TimerInputError`
/// `UNREADABLE`, never its thrown value.
pub(crate) fn property(value: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    if !value.is_object() {
        return Ok(JsValue::UNDEFINED);
    }
    js_sys::Reflect::get(value, &JsValue::from_str(name))
        .map_err(|thrown| js_errors::timer_unreadable(name, thrown))
}

/// A number that is an integer within ±(2^53-1), else a `TimerInputError`
/// with `code`.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn integer(name: &str, code: &str, value: &JsValue) -> Result<i64, JsValue> {
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= SAFE => Ok(n as i64),
        Some(n) => Err(refuse(
            &format!("{name} must be a safe integer, got {}", show(n)),
            code,
        )),
        None => Err(refuse(&format!("{name} must be a number"), code)),
    }
}

/// A number that is an integer in `0..=max`, else a `TimerInputError` with
/// `code`.
#[allow(clippy::cast_sign_loss)]
pub(crate) fn whole(name: &str, code: &str, value: &JsValue, max: u64) -> Result<u64, JsValue> {
    let n = integer(name, code, value)?;
    if n < 0 || n as u64 > max {
        return Err(refuse(
            &format!("{name} must be an integer in 0..={max}, got {n}"),
            code,
        ));
    }
    Ok(n as u64)
}

/// A `u32` (an attempt, a policy's `maxAttempts`).
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn small(name: &str, code: &str, value: &JsValue) -> Result<u32, JsValue> {
    whole(name, code, value, u64::from(u32::MAX)).map(|n| n as u32)
}

/// A `usize` of at most `u32::MAX` (a limit, a count).
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn count(name: &str, code: &str, value: &JsValue) -> Result<usize, JsValue> {
    whole(name, code, value, u64::from(u32::MAX)).map(|n| n as usize)
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/keys.js")]
extern "C" {
    /// `value`'s keys, or `undefined` for a value that is not a plain
    /// (non-array) object or whose keys could not be read: a revoked Proxy
    /// is refused, not thrown through WebAssembly.
    #[wasm_bindgen(js_name = objectKeys)]
    fn object_keys(value: &JsValue) -> JsValue;
}

/// Checks `value` is an object (not an array) with no field outside
/// `fields`; one whose keys cannot be read is refused the same way.
pub(crate) fn object(
    what: &str,
    code: &str,
    value: &JsValue,
    fields: &[&str],
) -> Result<(), JsValue> {
    let keys = object_keys(value);
    let Some(keys) = keys.dyn_ref::<Array>() else {
        return Err(refuse(&format!("{what} must be an object"), code));
    };
    for key in keys.iter() {
        let key = key.as_string().unwrap_or_default();
        if !fields.contains(&key.as_str()) {
            return Err(refuse(
                &format!(
                    "{what}: unknown field `{key}`, expected one of {}",
                    fields.join(", ")
                ),
                code,
            ));
        }
    }
    Ok(())
}

/// An id's text as [`values::id_text`] reads it, else a `TimerInputError`
/// with `code` naming `what`.
fn id_text(what: &str, code: &str, value: &JsValue) -> Result<String, JsValue> {
    values::id_text(value).map_err(|not| match not {
        NotText::NotAString => refuse(&format!("{what} must be a string"), code),
        NotText::LoneSurrogate => refuse(&values::lone_surrogate(what), code),
    })
}

/// An execution id: a string the core accepts, else `INVALID_ID`.
pub(crate) fn execution_id(value: &JsValue) -> Result<ExecutionId, JsValue> {
    ExecutionId::try_from(id_text("executionId", "INVALID_ID", value)?)
        .map_err(|e| refuse(&format!("executionId: {e}"), "INVALID_ID"))
}

/// A row `{ executionId, wakeAt, redrive?: { attempt } }`; `redrive`
/// `undefined` or `null` is a plain wake.
pub(crate) fn row(what: &str, value: &JsValue) -> Result<TimerRow, JsValue> {
    object(
        what,
        INVALID_ROW,
        value,
        &["executionId", "wakeAt", "redrive"],
    )?;
    let execution_id = execution_id(&property(value, "executionId")?)?;
    let wake_at = integer(
        &format!("{what}.wakeAt"),
        INVALID_TIME,
        &property(value, "wakeAt")?,
    )?;
    let raw = property(value, "redrive")?;
    let redrive = if raw.is_undefined() || raw.is_null() {
        None
    } else {
        let what = format!("{what}.redrive");
        object(&what, INVALID_ROW, &raw, &["attempt"])?;
        let attempt = small(
            &format!("{what}.attempt"),
            "INVALID_ATTEMPT",
            &property(&raw, "attempt")?,
        )?;
        Some(Redrive { attempt })
    };
    Ok(TimerRow {
        execution_id,
        wake_at,
        redrive,
    })
}

/// A node id (a lease's, a claim's or the tick's holder): a string the
/// core accepts, else `INVALID_HOLDER`.
pub(crate) fn holder(value: &JsValue) -> Result<NodeId, JsValue> {
    NodeId::new(id_text("holder", "INVALID_HOLDER", value)?)
        .map_err(|e| core(&InputError::Holder(Box::new(e))))
}

/// A lease `{ holder, now, durationMs }`.
pub(crate) fn lease(value: &JsValue) -> Result<Lease, JsValue> {
    object(
        "lease",
        INVALID_LEASE,
        value,
        &["holder", "now", "durationMs"],
    )?;
    Ok(Lease {
        holder: holder(&property(value, "holder")?)?,
        now: integer("lease.now", INVALID_TIME, &property(value, "now")?)?,
        duration_ms: whole(
            "lease.durationMs",
            INVALID_LEASE,
            &property(value, "durationMs")?,
            SAFE_U64,
        )?,
    })
}

/// A claim as `claimDue` gave it: `{ row, holder, number, expiresAt }`.
pub(crate) fn claim(value: &JsValue) -> Result<Claim, JsValue> {
    object(
        "claim",
        INVALID_CLAIM,
        value,
        &["row", "holder", "number", "expiresAt"],
    )?;
    Ok(Claim {
        row: row("claim.row", &property(value, "row")?)?,
        holder: holder(&property(value, "holder")?)?,
        number: whole(
            "claim.number",
            INVALID_CLAIM,
            &property(value, "number")?,
            SAFE_U64,
        )?,
        expires_at: integer(
            "claim.expiresAt",
            INVALID_TIME,
            &property(value, "expiresAt")?,
        )?,
    })
}

/// An exhaustion `{ attempts, at }`, as the tick's `exhaust` action gave it.
pub(crate) fn exhaustion(value: &JsValue) -> Result<Exhaustion, JsValue> {
    object("exhaustion", INVALID_CLAIM, value, &["attempts", "at"])?;
    Ok(Exhaustion {
        attempts: small(
            "exhaustion.attempts",
            INVALID_CLAIM,
            &property(value, "attempts")?,
        )?,
        at: integer("exhaustion.at", INVALID_TIME, &property(value, "at")?)?,
    })
}

/// An exhaustion on its way out.
pub(crate) fn exhaustion_js(exhaustion: &Exhaustion) -> JsValue {
    Out::new()
        .number("attempts", exhaustion.attempts.into())
        .number("at", exhaustion.at)
        .done()
}

/// An exhausted record on its way out: `{ row, attempts, at }`.
pub(crate) fn exhausted_js(record: &ExhaustedRow) -> JsValue {
    Out::new()
        .set("row", &row_js(&record.row))
        .number("attempts", record.attempts.into())
        .number("at", record.at)
        .done()
}

/// Listing options `{ redrive?: boolean }`; `undefined` or `null` is every
/// due row.
pub(crate) fn filter(value: &JsValue) -> Result<DueFilter, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(DueFilter::default());
    }
    object("options", "INVALID_FILTER", value, &["redrive"])?;
    let redrive = property(value, "redrive")?;
    if redrive.is_undefined() {
        return Ok(DueFilter::default());
    }
    match redrive.as_bool() {
        Some(redrive) => Ok(DueFilter { redrive }),
        None => Err(refuse(
            "options.redrive must be a boolean",
            "INVALID_FILTER",
        )),
    }
}

/// A listing's or claim's `limit`.
pub(crate) fn limit(value: &JsValue) -> Result<usize, JsValue> {
    count("limit", "INVALID_LIMIT", value)
}

/// A backoff entry `{ wakeAt, attempt, nextTryAt }`.
pub(crate) fn entry(what: &str, value: &JsValue) -> Result<BackoffEntry, JsValue> {
    object(
        what,
        INVALID_BACKOFF,
        value,
        &["wakeAt", "attempt", "nextTryAt"],
    )?;
    Ok(BackoffEntry {
        wake_at: integer(
            &format!("{what}.wakeAt"),
            INVALID_BACKOFF,
            &property(value, "wakeAt")?,
        )?,
        attempt: small(
            &format!("{what}.attempt"),
            INVALID_BACKOFF,
            &property(value, "attempt")?,
        )?,
        next_try_at: integer(
            &format!("{what}.nextTryAt"),
            INVALID_BACKOFF,
            &property(value, "nextTryAt")?,
        )?,
    })
}

/// A row on its way out: `redrive` only on a re-drive row.
pub(crate) fn row_js(row: &TimerRow) -> JsValue {
    let out = Out::new()
        .set("executionId", &JsValue::from_str(row.execution_id.as_str()))
        .number("wakeAt", row.wake_at);
    match row.redrive {
        Some(Redrive { attempt }) => out
            .set(
                "redrive",
                &Out::new().number("attempt", attempt.into()).done(),
            )
            .done(),
        None => out.done(),
    }
}

/// A claim on its way out.
#[allow(clippy::cast_possible_wrap)]
pub(crate) fn claim_js(claim: &Claim) -> JsValue {
    Out::new()
        .set("row", &row_js(&claim.row))
        .set("holder", &JsValue::from_str(claim.holder.as_str()))
        // A claim count: far below 2^53.
        .number("number", claim.number as i64)
        .number("expiresAt", claim.expires_at)
        .done()
}

/// A backoff entry on its way out.
pub(crate) fn entry_js(entry: &BackoffEntry) -> JsValue {
    Out::new()
        .number("wakeAt", entry.wake_at)
        .number("attempt", entry.attempt.into())
        .number("nextTryAt", entry.next_try_at)
        .done()
}

/// A list on its way out.
pub(crate) fn list<T>(items: &[T], each: fn(&T) -> JsValue) -> JsValue {
    items.iter().map(each).collect::<Array>().into()
}
