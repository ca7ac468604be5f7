//! A host timer store's `claimDue` answer, read claim by claim.
//!
//! A host store answers an array of claims, or `{ claims, unreadable }`
//! when it holds rows it could not read (the Rust `ClaimPage`). Each claim
//! element is read on its own: one that the core would refuse (not a claim
//! at all, a bad id, time or re-drive flag, a bad holder or lease) is not
//! fired but becomes an `UnreadableRow` naming what it could of the row,
//! and the well-formed claims go on. The tick machine then reports each
//! unreadable row once per node, as it does for the Rust timer service.

use js_sys::{Array, JSON};
use loomfence_core::InputError;
use loomfence_core::timer::{Claim, MAX_DUE_LIMIT, UnreadableField, UnreadableRow, check_claim};
use wasm_bindgen::JsValue;

use crate::out::Out;
use crate::timer_values::{self as timer, INVALID_TIME};
use crate::values::{self, NotList, property};

/// Reads a `claimDue` answer: the claim elements that read as claims the
/// core accepts, and the unreadable rows (the store's, then the malformed
/// elements'). An answer that is neither an array nor `{ claims,
/// unreadable? }` is a `TimerInputError` `UNEXPECTED_ANSWER`.
pub(crate) fn claim_page(answer: &JsValue) -> Result<(Vec<Claim>, Vec<UnreadableRow>), JsValue> {
    let (elements, unreadable) = page(answer)?;
    let mut rows: Vec<UnreadableRow> = unreadable.iter().map(|row| stored(&row)).collect();
    let mut claims = Vec::new();
    for element in elements.iter() {
        match read(&element) {
            Ok(claim) => claims.push(claim),
            Err(row) => rows.push(row),
        }
    }
    Ok((claims, rows))
}

/// The answer's claims and the store's unreadable rows, each list's length
/// checked against `MAX_DUE_LIMIT` (the most a claim asks for) before any
/// element is read.
fn page(answer: &JsValue) -> Result<(Array, Array), JsValue> {
    let refused = || {
        timer::refuse(
            "timers.claimDue must resolve to an array of at most 10 000 claims or { claims, unreadable }",
            "UNEXPECTED_ANSWER",
        )
    };
    match values::list(answer, MAX_DUE_LIMIT) {
        Ok(claims) => return Ok((claims, Array::new())),
        Err(NotList::NotArray) => {}
        Err(_) => return Err(refused()),
    }
    timer::object(
        "answer",
        "UNEXPECTED_ANSWER",
        answer,
        &["claims", "unreadable"],
    )
    .map_err(|_| refused())?;
    let claims = property(answer, "claims")?;
    let unreadable = property(answer, "unreadable")?;
    let claims = values::list(&claims, MAX_DUE_LIMIT).map_err(|_| refused())?;
    let unreadable = if unreadable.is_undefined() {
        Array::new()
    } else {
        values::list(&unreadable, MAX_DUE_LIMIT).map_err(|_| refused())?
    };
    Ok((claims, unreadable))
}

/// A claim element: `Ok` if it reads as a claim the core accepts, else the
/// row it names, blamed on the field that failed.
fn read(element: &JsValue) -> Result<Claim, UnreadableRow> {
    let refusal = match timer::claim(element) {
        Ok(claim) => match check_claim(&claim) {
            Ok(()) => return Ok(claim),
            Err(error) => {
                let field = match error {
                    InputError::Attempt { .. } => UnreadableField::Redrive,
                    _ => UnreadableField::WakeAt,
                };
                return Err(named(element, field, error.to_string()));
            }
        },
        Err(refusal) => refusal,
    };
    let detail = property(&refusal, "message")
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_default();
    Err(named(element, blame(element), detail))
}

/// The row field of a claim element that does not read, or the claim as a
/// whole when every row field does.
fn blame(element: &JsValue) -> UnreadableField {
    let row = row_of(element);
    if !row.is_object() {
        return UnreadableField::Claim;
    }
    let field = |name| property(&row, name).unwrap_or(JsValue::UNDEFINED);
    if timer::execution_id(&field("executionId")).is_err() {
        return UnreadableField::ExecutionId;
    }
    if timer::integer("wakeAt", INVALID_TIME, &field("wakeAt")).is_err() {
        return UnreadableField::WakeAt;
    }
    let redrive = field("redrive");
    let attempt = property(&redrive, "attempt").unwrap_or(JsValue::UNDEFINED);
    let flag_reads = redrive.is_undefined()
        || redrive.is_null()
        || (timer::object("redrive", "", &redrive, &["attempt"]).is_ok()
            && timer::small("attempt", "", &attempt).is_ok());
    if flag_reads {
        UnreadableField::Claim
    } else {
        UnreadableField::Redrive
    }
}

/// The element's `row`, `undefined` when it has none.
fn row_of(element: &JsValue) -> JsValue {
    property(element, "row").unwrap_or(JsValue::UNDEFINED)
}

/// The row a claim element names, as far as it names one.
fn named(element: &JsValue, field: UnreadableField, detail: String) -> UnreadableRow {
    let row = row_of(element);
    UnreadableRow {
        execution_id: text(&property(&row, "executionId").unwrap_or(JsValue::UNDEFINED)),
        wake_at: time(&property(&row, "wakeAt").unwrap_or(JsValue::UNDEFINED)),
        field,
        detail,
    }
}

/// An unreadable row as the store answered it, read leniently: a report
/// must not be lost to its own shape.
fn stored(value: &JsValue) -> UnreadableRow {
    let get = |name| property(value, name).unwrap_or(JsValue::UNDEFINED);
    let field = match get("field").as_string().as_deref() {
        Some("executionId") => UnreadableField::ExecutionId,
        Some("wakeAt") => UnreadableField::WakeAt,
        Some("redrive") => UnreadableField::Redrive,
        Some("claims") => UnreadableField::Claims,
        _ => UnreadableField::Claim,
    };
    UnreadableRow {
        execution_id: text(&get("executionId")),
        wake_at: time(&get("wakeAt")),
        field,
        detail: text(&get("detail")),
    }
}

/// A value as text: a string as it is, anything else as JSON (empty when
/// it has none).
fn text(value: &JsValue) -> String {
    value.as_string().unwrap_or_else(|| {
        if value.is_undefined() {
            return String::new();
        }
        JSON::stringify(value)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_default()
    })
}

/// A time that is a safe integer, else `None`.
fn time(value: &JsValue) -> Option<i64> {
    timer::integer("wakeAt", INVALID_TIME, value).ok()
}

/// An unreadable row on its way out: `{ executionId, wakeAt, field, detail }`.
pub(crate) fn unreadable_js(row: &UnreadableRow) -> JsValue {
    let field = match row.field {
        UnreadableField::ExecutionId => "executionId",
        UnreadableField::WakeAt => "wakeAt",
        UnreadableField::Redrive => "redrive",
        UnreadableField::Claims => "claims",
        _ => "claim",
    };
    let out = Out::new().set("executionId", &JsValue::from_str(&row.execution_id));
    let out = match row.wake_at {
        Some(at) => out.number("wakeAt", at),
        None => out.set("wakeAt", &JsValue::NULL),
    };
    out.set("field", &JsValue::from_str(field))
        .set("detail", &JsValue::from_str(&row.detail))
        .done()
}
