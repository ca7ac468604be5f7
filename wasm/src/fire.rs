//! `FireMachine` for JavaScript: the core's timer fire decision, sans-IO.
//!
//! The host polls it for the next action as a plain object, performs that
//! action (a read, a `resume`, a re-driver call, a timer store write) and
//! feeds the answer back through the matching `handle*` method, until a
//! poll answers `{ done: outcome }`. Every decision is the core's
//! `FireMachine`; this module only converts the actions, answers and
//! outcomes. An answer that does not fit is refused (`TimerInputError`,
//! `UNEXPECTED_ANSWER`) and leaves the machine as it was.

use js_sys::Object;
use loomfence_core::{
    Envelope, Error, ExecutionView, InputError, ResumeError, ResumeRequest, Resumed,
    redrive::RedriveExhaustedError,
    resume::{RefusalReason, ResumeContendedError, ResumeRefusedError},
    timer::{FireAction, FireContext, FireMachine, FireOutcome, FirePoll, RedriveAnswer, TimerRow},
};
use wasm_bindgen::prelude::*;

use crate::events::{envelope, envelopes};
use crate::js_errors;
use crate::out::{self, Out};
use crate::redrive;
use crate::timer_values::{
    self as timer, INVALID_TIME, SAFE_U64, count, entry, entry_js, exhaustion_js, integer,
    property, refuse, row_js, small, whole,
};

pub(crate) use crate::js_errors::UNEXPECTED_ANSWER;
/// A malformed fire context.
const INVALID_CONTEXT: &str = "INVALID_CONTEXT";
/// A malformed outcome handed to `WakeBackoff.apply`.
const INVALID_OUTCOME: &str = "INVALID_OUTCOME";

/// The fire of one due timer row.
#[wasm_bindgen(js_name = FireMachine)]
#[derive(Debug)]
pub struct FireMachineJs {
    /// The core's machine.
    machine: FireMachine,
}

/// The core's refusal of a fire's input or answer.
fn fire_error(error: &Error) -> JsValue {
    let code = match error {
        Error::Input(InputError::Time { .. }) => INVALID_TIME,
        Error::Input(InputError::NotDue { .. }) => "NOT_DUE",
        _ => UNEXPECTED_ANSWER,
    };
    refuse(&error.to_string(), code)
}

/// Re-raises a reader's error (an `InputError` of the event readers) as a
/// `TimerInputError` with `code`, keeping its message.
pub(crate) fn retyped(error: &JsValue, code: &str) -> JsValue {
    let message = property(error, "message")
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_default();
    refuse(&message, code)
}

/// A re-driver's answer as the string a JavaScript re-driver gives.
pub(crate) fn redrive_answer(answer: RedriveAnswer) -> &'static str {
    match answer {
        RedriveAnswer::Done => "done",
        RedriveAnswer::Noop => "noop",
        RedriveAnswer::Contended => "contended",
        _ => "failed",
    }
}

/// `{ now?, random?, policy?, backoff?, redrivers? }`; `undefined` is
/// `{}`.
fn context(value: &JsValue) -> Result<FireContext, JsValue> {
    let empty;
    let value = if value.is_undefined() {
        empty = Object::new().into();
        &empty
    } else {
        value
    };
    timer::object(
        "context",
        INVALID_CONTEXT,
        value,
        &["now", "random", "policy", "backoff", "redrivers"],
    )?;
    let now = property(value, "now")?;
    let now = if now.is_undefined() {
        JsValue::from_f64(js_sys::Date::now())
    } else {
        now
    };
    let random = property(value, "random")?;
    let random = if random.is_undefined() {
        JsValue::from_f64(js_sys::Math::random())
    } else {
        random
    };
    let backoff = property(value, "backoff")?;
    let backoff = if backoff.is_undefined() || backoff.is_null() {
        None
    } else {
        Some(entry("context.backoff", &backoff)?)
    };
    let redrivers = property(value, "redrivers")?;
    let redrivers = if redrivers.is_undefined() {
        0
    } else {
        count("context.redrivers", INVALID_CONTEXT, &redrivers)?
    };
    Ok(FireContext::new(
        integer("context.now", INVALID_TIME, &now)?,
        redrive::draw(&random)?,
    )
    .with_policy(redrive::policy(&property(value, "policy")?)?)
    .with_backoff(backoff)
    .with_redrivers(redrivers))
}

/// An outcome's name.
fn name(outcome: &FireOutcome) -> Option<&'static str> {
    Some(match outcome {
        FireOutcome::Fired => "fired",
        FireOutcome::Obsolete => "obsolete",
        FireOutcome::NotYet { .. } => "notYet",
        FireOutcome::BackedOff(_) => "backedOff",
        FireOutcome::Redriven => "redriven",
        FireOutcome::NothingToRedrive => "nothingToRedrive",
        FireOutcome::Rescheduled(_) => "rescheduled",
        FireOutcome::Left => "left",
        FireOutcome::Exhausted(_) => "exhausted",
        _ => return None,
    })
}

/// An outcome as a plain object; an exhaustion carries its
/// `RedriveExhaustedError` as `error`.
pub(crate) fn outcome_js(outcome: &FireOutcome) -> JsValue {
    let Some(name) = name(outcome) else {
        return js_errors::internal(
            "the fire machine ended in an outcome this binding does not know",
        );
    };
    let out = Out::new()
        .set("outcome", &JsValue::from_str(name))
        .set("retired", &JsValue::from_bool(outcome.retired()));
    match outcome {
        FireOutcome::NotYet { next_try_at } => out.number("nextTryAt", *next_try_at),
        FireOutcome::BackedOff(entry) => out.set("entry", &entry_js(entry)),
        FireOutcome::Rescheduled(row) => out.set("row", &row_js(row)),
        FireOutcome::Exhausted(error) => out.set("error", &js_errors::exhausted(error)),
        _ => out,
    }
    .done()
}

/// A log a machine asked for (`readLog`, a supervision's reads), as the
/// host's store gave it; anything but envelopes is `UNEXPECTED_ANSWER`.
pub(crate) fn log_answer(events: &JsValue) -> Result<Vec<Envelope>, JsValue> {
    envelopes("events", UNEXPECTED_ANSWER, events).map_err(|e| retyped(&e, UNEXPECTED_ANSWER))
}

/// A fire's resume request: `{ fenceIfParkedAt, answer, at }`.
pub(crate) fn request_js(request: &ResumeRequest) -> JsValue {
    #[allow(clippy::cast_possible_wrap)]
    let park = request.fence_if_parked_at as i64;
    Out::new()
        .number("fenceIfParkedAt", park)
        .set("answer", &out::json(&request.answer))
        .number("at", request.at)
        .done()
}

/// A re-driver's answer: `'done'`, `'noop'`, `'contended'` or `'failed'`.
pub(crate) fn read_redrive_answer(answer: &JsValue) -> Result<RedriveAnswer, JsValue> {
    Ok(match answer.as_string().as_deref() {
        Some("done") => RedriveAnswer::Done,
        Some("noop") => RedriveAnswer::Noop,
        Some("contended") => RedriveAnswer::Contended,
        Some("failed") => RedriveAnswer::Failed,
        _ => {
            return Err(refuse(
                "a re-driver answers 'done', 'noop', 'contended' or 'failed'",
                UNEXPECTED_ANSWER,
            ));
        }
    })
}

/// An action as a plain object `{ act, … }`.
fn action_js(action: &FireAction) -> Result<JsValue, JsValue> {
    let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
    Ok(match action {
        FireAction::ReadLog => act("readLog"),
        FireAction::Resume(request) => act("resume").set("request", &request_js(request)),
        FireAction::Redrive { redriver, row } => act("redrive")
            .set("redriver", &JsValue::from(*redriver))
            .set("row", &row_js(row)),
        FireAction::Reschedule(row) => act("reschedule").set("row", &row_js(row)),
        FireAction::Complete(row) => act("complete").set("row", &row_js(row)),
        FireAction::Exhaust(exhaustion) => {
            act("exhaust").set("exhaustion", &exhaustion_js(exhaustion))
        }
        _ => {
            return Err(js_errors::internal(
                "the fire machine asked for an action this binding does not know",
            ));
        }
    }
    .done())
}

/// Reads back an outcome a poll gave, for `WakeBackoff.apply` about `row`.
/// The core's `apply` reads only which outcome it is (and a `backedOff`'s
/// entry), so an exhaustion is rebuilt from the row.
pub(crate) fn outcome(row: &TimerRow, value: &JsValue) -> Result<FireOutcome, JsValue> {
    let name = if value.is_object() {
        property(value, "outcome")?.as_string()
    } else {
        None
    };
    Ok(match name.as_deref() {
        Some("fired") => FireOutcome::Fired,
        Some("obsolete") => FireOutcome::Obsolete,
        Some("notYet") => FireOutcome::NotYet {
            next_try_at: integer(
                "outcome.nextTryAt",
                INVALID_OUTCOME,
                &property(value, "nextTryAt")?,
            )?,
        },
        Some("backedOff") => {
            FireOutcome::BackedOff(entry("outcome.entry", &property(value, "entry")?)?)
        }
        Some("redriven") => FireOutcome::Redriven,
        Some("nothingToRedrive") => FireOutcome::NothingToRedrive,
        Some("rescheduled") => {
            FireOutcome::Rescheduled(timer::row("outcome.row", &property(value, "row")?)?)
        }
        Some("left") => FireOutcome::Left,
        Some("exhausted") => FireOutcome::Exhausted(RedriveExhaustedError {
            execution_id: row.execution_id.clone(),
            wake_at: row.wake_at,
            attempts: 0,
        }),
        _ => {
            return Err(refuse(
                "outcome must be a fire outcome { outcome: 'fired' | 'obsolete' | 'notYet' | \
                 'backedOff' | 'redriven' | 'nothingToRedrive' | 'rescheduled' | 'left' | \
                 'exhausted', … }",
                INVALID_OUTCOME,
            ));
        }
    })
}

/// What `resume` resolved to, or the refusal or contention it rejected
/// with.
pub(crate) fn resume_result(value: &JsValue) -> Result<Result<Resumed, ResumeError>, JsValue> {
    let wrong = || {
        refuse(
            "handleResumed takes what resume() resolved to, or the ResumeRefusedError or \
             ResumeContendedError it rejected with",
            UNEXPECTED_ANSWER,
        )
    };
    if !value.is_object() {
        return Err(wrong());
    }
    let name = property(value, "name")?.as_string();
    if matches!(name.as_deref(), Some(other) if other != "ResumeRefusedError" && other != "ResumeContendedError")
    {
        return Err(wrong());
    }
    let execution_id = timer::execution_id(&property(value, "executionId")?)
        .map_err(|e| retyped(&e, UNEXPECTED_ANSWER))?;
    let field = |key: &str| property(value, key);
    Ok(match name.as_deref() {
        Some("ResumeRefusedError") => Err(ResumeError::Refused(ResumeRefusedError {
            execution_id,
            park_seq: whole("parkSeq", UNEXPECTED_ANSWER, &field("parkSeq")?, SAFE_U64)?,
            reason: RefusalReason::NotSuspended,
        })),
        Some("ResumeContendedError") => Err(ResumeError::Contended(ResumeContendedError {
            execution_id,
            attempts: small("attempts", UNEXPECTED_ANSWER, &field("attempts")?)?,
        })),
        _ => {
            let resumed = envelope("resumed", UNEXPECTED_ANSWER, &field("resumed")?)
                .map_err(|e| retyped(&e, UNEXPECTED_ANSWER))?;
            let fence = field("fence")?;
            Ok(Resumed {
                execution_id,
                fence: if fence.is_null() || fence.is_undefined() {
                    None
                } else {
                    Some(whole("fence", UNEXPECTED_ANSWER, &fence, SAFE_U64)?)
                },
                resumed,
                // The fire machine reads only the execution id of a
                // resume that landed; the body's view is the resumer's.
                view: ExecutionView::default(),
                attempts: small("attempts", UNEXPECTED_ANSWER, &field("attempts")?)?,
            })
        }
    })
}

#[wasm_bindgen(js_class = FireMachine)]
impl FireMachineJs {
    /// The fire of `row` in `context` (`now` defaults to `Date.now()`,
    /// `random` to `Math.random()`). Refuses a time out of range and a row
    /// that is not due yet.
    #[wasm_bindgen(constructor)]
    pub fn new(row: JsValue, context_: JsValue) -> Result<FireMachineJs, JsValue> {
        let row = timer::row("row", &row)?;
        let context = context(&context_)?;
        Ok(Self {
            machine: FireMachine::new(row, context).map_err(|e| fire_error(&e.into()))?,
        })
    }

    /// The row being fired.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn row(&self) -> JsValue {
        row_js(self.machine.row())
    }

    /// The next action, or `{ done: outcome }`. Asking again without an
    /// answer gives the same.
    pub fn poll(&self) -> Result<JsValue, JsValue> {
        match self.machine.poll() {
            FirePoll::Done(outcome) => Ok(Out::new().set("done", &outcome_js(&outcome)).done()),
            FirePoll::Act(action) => action_js(&action),
            _ => Err(js_errors::internal("unknown fire poll")),
        }
    }

    /// Answers `readLog` with the whole log, from sequence 1.
    #[wasm_bindgen(js_name = handleRead)]
    pub fn handle_read(&mut self, events: JsValue) -> Result<(), JsValue> {
        self.machine
            .handle_read(&log_answer(&events)?)
            .map_err(|e| fire_error(&e.into()))
    }

    /// Answers `resume` with what `resume` resolved to, or the
    /// `ResumeRefusedError` / `ResumeContendedError` it rejected with.
    #[wasm_bindgen(js_name = handleResumed)]
    pub fn handle_resumed(&mut self, result: JsValue) -> Result<(), JsValue> {
        let result = resume_result(&result)?;
        self.machine
            .handle_resumed(result.as_ref())
            .map_err(|e| fire_error(&e.into()))
    }

    /// Answers `redrive` with the re-driver's answer: `'done'`, `'noop'`,
    /// `'contended'` or `'failed'`.
    #[wasm_bindgen(js_name = handleRedrive)]
    pub fn handle_redrive(&mut self, answer: JsValue) -> Result<(), JsValue> {
        self.machine
            .handle_redrive(read_redrive_answer(&answer)?)
            .map_err(|e| fire_error(&e.into()))
    }

    /// Acknowledges `reschedule`: the store's reschedule of the claim
    /// answered `'done'` (the fired row retired, the next one written).
    #[wasm_bindgen(js_name = handleRescheduled)]
    pub fn handle_rescheduled(&mut self) -> Result<(), JsValue> {
        self.machine
            .handle_rescheduled()
            .map_err(|e| fire_error(&e.into()))
    }

    /// Acknowledges `complete`: the fired row is retired (the claim's
    /// complete answered `'done'`).
    #[wasm_bindgen(js_name = handleCompleted)]
    pub fn handle_completed(&mut self) -> Result<(), JsValue> {
        self.machine
            .handle_completed()
            .map_err(|e| fire_error(&e.into()))
    }

    /// Acknowledges `exhaust`: the fired row is retired and its exhaustion
    /// recorded (the claim's exhaust answered `'done'`).
    #[wasm_bindgen(js_name = handleExhausted)]
    pub fn handle_exhausted(&mut self) -> Result<(), JsValue> {
        self.machine
            .handle_exhausted()
            .map_err(|e| fire_error(&e.into()))
    }
}
