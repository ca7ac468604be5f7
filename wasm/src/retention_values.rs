//! Retention's values at the boundary: a listing's cursor and limit and a
//! delete guard coming in; summaries, guarded-delete outcomes, guards and
//! sweep reports going out (built by hand, as `out.rs` builds the rest);
//! and a host store's listing summaries coming in.

use js_sys::Array;
use loomfence_core::{
    ExecutionId, InputError,
    retention::{
        DeleteGuard, Ended, ExecutionSummary, GuardedDelete, MAX_GUARD_PARENTS, MAX_PAGE_LIMIT,
        ParentMark, SweepReport,
    },
};
use wasm_bindgen::JsValue;

use crate::js_errors::{self, INVALID_LIMIT, number, show};
use crate::out::Out;
use crate::values::{NotList, answered_id, counter, execution_id, list, property, timestamp};

/// A listing's cursor: `undefined` or `null` for the first page, else the
/// last id of the previous page.
pub(crate) fn after(value: &JsValue) -> Result<Option<ExecutionId>, JsValue> {
    if value.is_undefined() || value.is_null() {
        Ok(None)
    } else {
        execution_id(value).map(Some)
    }
}

/// A page limit named `name`: a number (else `TypeError` `NOT_A_NUMBER`)
/// that is an integer from 1 to `MAX_PAGE_LIMIT` (else `InputError`
/// `INVALID_LIMIT`, the code of the core's `InputError::Limit`). Any number
/// outside that, fractional or huge, is a limit out of bounds rather than a
/// number out of range: a limit is a count, not a token.
pub(crate) fn limit(name: &str, value: &JsValue) -> Result<u32, JsValue> {
    let Some(n) = value.as_f64() else {
        return Err(js_errors::wrong_type(
            &format!("{name} must be a number"),
            "NOT_A_NUMBER",
        ));
    };
    if n.fract() != 0.0 || !(1.0..=f64::from(MAX_PAGE_LIMIT)).contains(&n) {
        return Err(js_errors::invalid(
            &format!(
                "{name} must be an integer from 1 to {MAX_PAGE_LIMIT}, got {}",
                show(n)
            ),
            INVALID_LIMIT,
        ));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(n as u32)
}

/// A delete guard `{ head, parents: [{ parent, seen }] }` (`parents`
/// omitted: none). Numbers are counters (`RangeError` `OUT_OF_RANGE` past
/// 2^53-1, as the core's check says); more than `MAX_GUARD_PARENTS` parents
/// is `INVALID_LIMIT`, refused before any of them is read.
pub(crate) fn guard(value: &JsValue) -> Result<DeleteGuard, JsValue> {
    if !value.is_object() {
        return Err(js_errors::wrong_type(
            "guard must be an object { head, parents: [{ parent, seen }] }",
            "NOT_AN_OBJECT",
        ));
    }
    let head = counter("head", &property(value, "head")?)?;
    let parents = property(value, "parents")?;
    if parents.is_undefined() {
        return Ok(DeleteGuard {
            head,
            parents: Vec::new(),
        });
    }
    let parents = match list(&parents, MAX_GUARD_PARENTS) {
        Ok(parents) => parents,
        Err(NotList::NotArray) => {
            return Err(js_errors::wrong_type(
                "guard.parents must be an array of { parent, seen }",
                "NOT_AN_ARRAY",
            ));
        }
        // The length is read before any element.
        Err(NotList::TooLong(length)) => {
            return Err(js_errors::input(&InputError::Limit {
                what: "parents",
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                value: length as u64,
                max: MAX_GUARD_PARENTS as u64,
            }));
        }
        Err(NotList::Unreadable(thrown)) => {
            return Err(js_errors::unreadable("guard.parents", thrown));
        }
    };
    let parents = parents
        .iter()
        .map(|mark| {
            if !mark.is_object() {
                return Err(js_errors::wrong_type(
                    "each of guard.parents must be an object { parent, seen }",
                    "NOT_AN_OBJECT",
                ));
            }
            Ok(ParentMark {
                parent: execution_id(&property(&mark, "parent")?)?,
                seen: counter("seen", &property(&mark, "seen")?)?,
            })
        })
        .collect::<Result<_, JsValue>>()?;
    Ok(DeleteGuard { head, parents })
}

/// A count or sequence the core hands out (each at most 2^53-1).
fn count(value: u64) -> JsValue {
    JsValue::from_f64(number(value))
}

/// A summary on its way out: `{ executionId, head, ended: { sequence, at }
/// | null }`.
fn summary_js(summary: &ExecutionSummary) -> JsValue {
    let ended = summary.ended.map_or(JsValue::NULL, |ended| {
        Out::new()
            .set("sequence", &count(ended.sequence))
            .number("at", ended.at)
            .done()
    });
    Out::new()
        .set(
            "executionId",
            &JsValue::from_str(summary.execution_id.as_str()),
        )
        .set("head", &count(summary.head))
        .set("ended", &ended)
        .done()
}

/// A listing page on its way out.
pub(crate) fn page_js(page: &[ExecutionSummary]) -> JsValue {
    page.iter().map(summary_js).collect::<Array>().into()
}

/// A guarded delete's outcome, in the package's shape for a conditional
/// step's answer (`{ parkAnswered: true }`, `{ stale: true, fence }`):
/// `{ deleted: true }`, `{ logChanged: true, head }` or
/// `{ parentMoved: true, parent }`.
pub(crate) fn outcome_js(outcome: &GuardedDelete) -> JsValue {
    match outcome {
        GuardedDelete::Deleted => Out::new().set("deleted", &JsValue::TRUE),
        GuardedDelete::LogChanged { head } => Out::new()
            .set("logChanged", &JsValue::TRUE)
            .set("head", &count(*head)),
        GuardedDelete::ParentMoved { parent } => Out::new()
            .set("parentMoved", &JsValue::TRUE)
            .set("parent", &JsValue::from_str(parent.as_str())),
    }
    .done()
}

/// A guard on its way out, as `deleteExecutionIf` takes it.
pub(crate) fn guard_js(guard: &DeleteGuard) -> JsValue {
    let parents: Array = guard
        .parents
        .iter()
        .map(|mark| {
            Out::new()
                .set("parent", &JsValue::from_str(mark.parent.as_str()))
                .set("seen", &count(mark.seen))
                .done()
        })
        .collect();
    Out::new()
        .set("head", &count(guard.head))
        .set("parents", &parents)
        .done()
}

/// A sweep's report: the counts, `pinned: [{ child, parent }]`,
/// `kept: [{ executionId, refusal }]` (`refusal` as `outcome_js` has it)
/// and `undecided: [{ executionId, code, parent, detail }]` (`parent` null
/// when the reason is the child's own log).
pub(crate) fn report_js(report: &SweepReport) -> JsValue {
    let pinned: Array = report
        .pinned
        .iter()
        .map(|pin| {
            Out::new()
                .set("child", &JsValue::from_str(pin.child.as_str()))
                .set("parent", &JsValue::from_str(pin.parent.as_str()))
                .done()
        })
        .collect();
    let kept: Array = report
        .kept
        .iter()
        .map(|kept| {
            Out::new()
                .set(
                    "executionId",
                    &JsValue::from_str(kept.execution_id.as_str()),
                )
                .set("refusal", &outcome_js(&kept.refusal))
                .done()
        })
        .collect();
    let undecided: Array = report
        .undecided
        .iter()
        .map(|u| {
            let parent = u.reason.parent();
            Out::new()
                .set("executionId", &JsValue::from_str(u.execution_id.as_str()))
                .set("code", &JsValue::from_str(u.reason.code()))
                .set(
                    "parent",
                    &parent.map_or(JsValue::NULL, |p| JsValue::from_str(p.as_str())),
                )
                .set("detail", &JsValue::from_str(&u.reason.to_string()))
                .done()
        })
        .collect();
    Out::new()
        .set("dryRun", &JsValue::from_bool(report.dry_run))
        .set("examined", &count(report.examined))
        .set("eligible", &count(report.eligible))
        .set("skipped", &count(report.skipped()))
        .set("deleted", &count(report.deleted))
        .set("archived", &count(report.archived))
        .set("pinned", &pinned)
        .set("kept", &kept)
        .set("undecided", &undecided)
        .set("pages", &count(report.pages))
        .set("logReads", &count(report.log_reads))
        .set("parentReads", &count(report.parent_reads))
        .set("deleteBatches", &count(report.delete_batches))
        .done()
}

/// One summary of a host store's listing: `{ executionId, head, ended }`
/// with a valid id, `head` a counter and `ended` `null` or
/// `{ sequence, at }` (a counter and a safe integer); `None` if it is not
/// that. Whether it is a summary of a log (a head from 1, an end within
/// it) is the core's check.
pub(crate) fn summary(value: &JsValue) -> Option<ExecutionSummary> {
    let get = |of: &JsValue, key: &str| property(of, key).ok();
    let execution_id = answered_id(&get(value, "executionId")?)?;
    let ended = get(value, "ended")?;
    Some(ExecutionSummary {
        execution_id,
        head: counter("head", &get(value, "head")?).ok()?,
        ended: if ended.is_null() {
            None
        } else if ended.is_object() {
            Some(Ended {
                sequence: counter("sequence", &get(&ended, "sequence")?).ok()?,
                at: timestamp("at", "", &get(&ended, "at")?).ok()?,
            })
        } else {
            return None;
        },
    })
}
