//! `DeliverMachine` for JavaScript: the core's delivery of messages (a
//! notify, the park-time check, the inbox's re-drive), sans-IO, which the
//! package's `Inbox` (`npm/inbox.js`) pumps, a park included.
//!
//! The host polls it for the next action as a plain object, performs it (a
//! read, an inbox call, the resume it builds with `resumeOn`, a draw, a
//! timer store write) and feeds the answer back through the matching
//! `handle*` method, until a poll answers `{ done: outcome }`. Every
//! decision is the core's `DeliverMachine`; this module only converts. An
//! answer that does not fit is refused (`TimerInputError`,
//! `UNEXPECTED_ANSWER`) and leaves the machine as it was.

use loomfence_core::{
    ContractError, Error, InputError, KernelKind, NewEvent,
    inbox::{
        DeliverAction, DeliverMachine, DeliverOptions, DeliverOutcome, DeliverPoll, NotDeliverable,
        PENDING_PAGE,
    },
    supervise::OnContention,
    timer::MAX_TIMER_MS,
};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::fire::{UNEXPECTED_ANSWER, log_answer, redrive_answer};
use crate::inbox_values as inbox;
use crate::js_errors::{self, INVALID_PARK};
use crate::json;
use crate::out::{self, Out};
use crate::redrive::{self, RedrivePolicyJs};
use crate::resume::{ResumeMachineJs, answer_of};
use crate::timer_values::{INVALID_TIME, integer, refuse, row_js, whole};
use crate::values;

/// One delivery.
#[wasm_bindgen(js_name = DeliverMachine)]
pub struct DeliverMachineJs {
    /// The core's machine.
    machine: DeliverMachine,
}

/// An answer the machine refused.
fn refused(error: &ContractError) -> JsValue {
    refuse(&error.to_string(), UNEXPECTED_ANSWER)
}

/// The options every delivery of an `Inbox` is made with.
fn options(
    intent_delay_ms: &JsValue,
    policy: &RedrivePolicyJs,
    write_row: bool,
) -> Result<DeliverOptions, JsValue> {
    let delay = whole(
        "intentDelayMs",
        "INVALID_OPTIONS",
        intent_delay_ms,
        MAX_TIMER_MS.unsigned_abs(),
    )?;
    if delay == 0 {
        return Err(refuse(
            "intentDelayMs must be at least 1",
            "INVALID_OPTIONS",
        ));
    }
    Ok(DeliverOptions {
        // At most 2^53-1.
        #[allow(clippy::cast_possible_wrap)]
        intent_delay_ms: delay as i64,
        policy: policy.policy(),
        on_contention: if write_row {
            OnContention::WriteRow
        } else {
            OnContention::Answer
        },
    })
}

/// An outcome as `{ outcome, answer, … }` (`answer` the re-driver's
/// answer): `refused` carries `reason` (`'unknown'` or `'ended'`),
/// `delivered` the `message` key and what `resume()` resolves to as
/// `resumed`, `contended` its error, `redriveScheduled` the row written.
fn outcome_js(outcome: &DeliverOutcome) -> Result<JsValue, JsValue> {
    let out = |name: &str| {
        Out::new().set("outcome", &JsValue::from_str(name)).set(
            "answer",
            &JsValue::from_str(redrive_answer(outcome.redrive_answer())),
        )
    };
    Ok(match outcome {
        DeliverOutcome::Refused(reason) => out("refused").set(
            "reason",
            &JsValue::from_str(match reason {
                NotDeliverable::Unknown => "unknown",
                NotDeliverable::Ended => "ended",
                _ => return Err(js_errors::internal("a refusal this binding does not know")),
            }),
        ),
        DeliverOutcome::Delivered { message, resumed } => out("delivered")
            .set("message", &inbox::key_js(message))
            .set("resumed", &answer_of(resumed)?),
        DeliverOutcome::Waiting => out("waiting"),
        DeliverOutcome::Contended(error) => {
            out("contended").set("error", &js_errors::contended(error))
        }
        DeliverOutcome::RedriveScheduled(row) => out("redriveScheduled").set("row", &row_js(row)),
        DeliverOutcome::Fenced(stale) => out("fenced").set("error", &js_errors::stale(stale)),
        _ => return Err(js_errors::internal("an outcome this binding does not know")),
    }
    .done())
}

#[wasm_bindgen(js_class = DeliverMachine)]
impl DeliverMachineJs {
    /// A notify of `message` (`{ executionId, channel, messageId, payload,
    /// sentAt }`): store it with its intent row due `intentDelayMs` later,
    /// then deliver what the open park can take; with `writeRow`, the
    /// first re-drive row (due after a delay of `policy`) when the resume
    /// was contended. A malformed message is refused here, before
    /// anything is read.
    pub fn notify(
        message: JsValue,
        intent_delay_ms: JsValue,
        policy: &RedrivePolicyJs,
        write_row: bool,
    ) -> Result<DeliverMachineJs, JsValue> {
        let message = inbox::message("message", &message)?;
        let options = options(&intent_delay_ms, policy, write_row)?;
        let machine = DeliverMachine::notify(message, options).map_err(|e| js_errors::timer(&e))?;
        Ok(Self { machine })
    }

    /// A check of `executionId`: deliver whatever its open park can take
    /// from the inbox (the park-time check, the inbox's re-drive).
    pub fn check(
        execution_id: JsValue,
        intent_delay_ms: JsValue,
        policy: &RedrivePolicyJs,
        write_row: bool,
    ) -> Result<DeliverMachineJs, JsValue> {
        let id = inbox::execution_id(&execution_id)?;
        let options = options(&intent_delay_ms, policy, write_row)?;
        Ok(Self {
            machine: DeliverMachine::check(id, options),
        })
    }

    /// A park of `executionId` on `waits` at `at` (under the token `fence`,
    /// if given): its intent row when it waits on a channel, the park
    /// (`appendPark`), then a check, as `check` does. Waits the core cannot
    /// read are an `InputError` `INVALID_PARK`, before anything is written.
    #[allow(clippy::too_many_arguments)]
    pub fn park(
        execution_id: JsValue,
        waits: JsValue,
        at: JsValue,
        fence: JsValue,
        intent_delay_ms: JsValue,
        policy: &RedrivePolicyJs,
        write_row: bool,
    ) -> Result<DeliverMachineJs, JsValue> {
        let id = inbox::execution_id(&execution_id)?;
        let event = park_of(&waits, &at, &fence)?;
        let options = options(&intent_delay_ms, policy, write_row)?;
        let machine = DeliverMachine::park(id, event, options)
            .map_err(|e| js_errors::invalid(&e.to_string(), INVALID_PARK))?;
        Ok(Self { machine })
    }

    /// The execution delivered to.
    #[wasm_bindgen(getter, js_name = executionId)]
    #[must_use]
    pub fn execution_id(&self) -> String {
        self.machine.execution_id().as_str().to_owned()
    }

    /// What the notify's send answered, `{ duplicate, arrival }`, once it
    /// did; else `null`.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn sent(&self) -> JsValue {
        self.machine.sent().map_or(JsValue::NULL, inbox::sent_js)
    }

    /// The next action, or `{ done: outcome }`: `{ act: 'readLog' }`,
    /// `{ act: 'send', message, intent }`, `{ act: 'readPending', channels,
    /// limit }`, `{ act: 'markConsumed', key }`, `{ act: 'resume' }`,
    /// `{ act: 'draw' }` or `{ act: 'writeRow', row }`. Asking again
    /// without an answer gives the same.
    pub fn poll(&self) -> Result<JsValue, JsValue> {
        let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
        Ok(match self.machine.poll() {
            DeliverPoll::Done(outcome) => Out::new().set("done", &outcome_js(&outcome)?),
            DeliverPoll::Act(DeliverAction::ReadLog) => act("readLog"),
            DeliverPoll::Act(DeliverAction::Send { message, intent }) => act("send")
                .set("message", &inbox::message_js(&message))
                .set("intent", &row_js(&intent)),
            DeliverPoll::Act(DeliverAction::ReadPending { channels, limit }) => {
                #[allow(clippy::cast_possible_wrap)]
                let limit = limit as i64;
                act("readPending")
                    .set(
                        "channels",
                        &channels
                            .iter()
                            .map(|channel| JsValue::from_str(channel))
                            .collect::<js_sys::Array>(),
                    )
                    .number("limit", limit)
            }
            DeliverPoll::Act(DeliverAction::MarkConsumed(key)) => {
                act("markConsumed").set("key", &inbox::key_js(&key))
            }
            DeliverPoll::Act(DeliverAction::Resume { .. }) => act("resume"),
            DeliverPoll::Act(DeliverAction::Draw) => act("draw"),
            DeliverPoll::Act(DeliverAction::WriteRow(row)) => {
                act("writeRow").set("row", &row_js(&row))
            }
            DeliverPoll::Act(DeliverAction::ReadFence) => act("readFence"),
            DeliverPoll::Act(DeliverAction::AppendPark(event)) => {
                act("appendPark").set("event", &out::new_event(&event))
            }
            _ => return Err(js_errors::internal("an action this binding does not know")),
        }
        .done())
    }

    /// Answers `readLog` with the execution's whole log, from sequence 1.
    #[wasm_bindgen(js_name = handleLog)]
    pub fn handle_log(&mut self, events: JsValue) -> Result<(), JsValue> {
        let events = log_answer(&events)?;
        self.machine.handle_log(&events).map_err(|e| refused(&e))
    }

    /// Answers `send` with what the inbox's `send` resolved to, `{
    /// duplicate, arrival }`.
    #[wasm_bindgen(js_name = handleSent)]
    pub fn handle_sent(&mut self, sent: JsValue) -> Result<(), JsValue> {
        let sent = inbox::sent(&sent, UNEXPECTED_ANSWER)?;
        self.machine.handle_sent(sent).map_err(|e| refused(&e))
    }

    /// Answers `readPending` with what the inbox's `pending` resolved to
    /// and the time now.
    #[wasm_bindgen(js_name = handlePending)]
    pub fn handle_pending(&mut self, messages: JsValue, now: JsValue) -> Result<(), JsValue> {
        let messages = inbox::listing(&messages, PENDING_PAGE, UNEXPECTED_ANSWER)?;
        let now = integer("now", INVALID_TIME, &now)?;
        self.machine
            .handle_pending(&messages, now)
            .map_err(|e| refused(&e))
    }

    /// Acknowledges `markConsumed`: the inbox's `markConsumed` resolved
    /// (to either boolean: a rival may have marked it).
    #[wasm_bindgen(js_name = handleMarked)]
    pub fn handle_marked(&mut self) -> Result<(), JsValue> {
        self.machine.handle_marked().map_err(|e| refused(&e))
    }

    /// The resume `resume` asks for, over `store`, for the package's resume
    /// loop to drive (then `handleResumed`): it starts from the log already
    /// read, and appends `[MESSAGE_CONSUMED, EXECUTION_RESUMED]` as one
    /// `appendIfParked` batch.
    #[wasm_bindgen(js_name = resumeOn)]
    pub fn resume_on(&self, store: JsValue) -> Result<ResumeMachineJs, JsValue> {
        let asked = match self.machine.poll() {
            DeliverPoll::Act(DeliverAction::Resume { request, log }) => Some((request, log)),
            _ => None,
        };
        ResumeMachineJs::asked(store, self.machine.execution_id().clone(), asked)
    }

    /// Answers `resume` with the resume machine `resumeOn` gave, once its
    /// loop has finished it (its result is read from it).
    #[wasm_bindgen(js_name = handleResumed)]
    pub fn handle_resumed(&mut self, resume: &ResumeMachineJs) -> Result<(), JsValue> {
        self.machine
            .handle_resumed(resume.result()?.as_ref())
            .map_err(|e| refused(&e))
    }

    /// Answers `draw` with a number in `[0, 1)` and the time now.
    #[wasm_bindgen(js_name = handleDraw)]
    pub fn handle_draw(&mut self, random: JsValue, now: JsValue) -> Result<(), JsValue> {
        let draw = redrive::draw(&random)?;
        let now = integer("now", INVALID_TIME, &now)?;
        self.machine.handle_draw(draw, now).map_err(|e| match e {
            Error::Input(InputError::NoWakeTime { .. }) => refuse(&e.to_string(), INVALID_TIME),
            _ => refuse(&e.to_string(), UNEXPECTED_ANSWER),
        })
    }

    /// Answers `readFence` with what the event store's `currentFence`
    /// resolved to.
    #[wasm_bindgen(js_name = handleFence)]
    pub fn handle_fence(&mut self, current: JsValue) -> Result<(), JsValue> {
        let current = whole(
            "currentFence()",
            UNEXPECTED_ANSWER,
            &current,
            MAX_TIMER_MS.unsigned_abs(),
        )?;
        self.machine.handle_fence(current).map_err(|e| refused(&e))
    }

    /// Answers `appendPark` with the envelope the event store's `append`
    /// resolved to.
    #[wasm_bindgen(js_name = handleParked)]
    pub fn handle_parked(&mut self, park: JsValue) -> Result<(), JsValue> {
        let parks = log_answer(&js_sys::Array::of1(&park).into())?;
        let [park] = parks.as_slice() else {
            return Err(refuse(
                "appendPark() must resolve to one envelope",
                UNEXPECTED_ANSWER,
            ));
        };
        self.machine.handle_parked(park).map_err(|e| refused(&e))
    }

    /// Acknowledges `writeRow`: the timer store's `schedule` resolved.
    #[wasm_bindgen(js_name = handleWritten)]
    pub fn handle_written(&mut self) -> Result<(), JsValue> {
        self.machine.handle_written().map_err(|e| refused(&e))
    }
}

/// The park `DeliverMachine.park` writes: `EXECUTION_SUSPENDED` with
/// payload `{ waits }`, waits as given once the core's reader accepts them,
/// stamped `at`, under the token `fence` when one is given (`undefined` or
/// `null`: none).
fn park_of(waits: &JsValue, at: &JsValue, fence: &JsValue) -> Result<NewEvent, JsValue> {
    let raw = json::value("waits", INVALID_PARK, waits)?;
    if !matches!(raw, Value::Array(_)) {
        return Err(js_errors::invalid("waits must be an array", INVALID_PARK));
    }
    let at = values::timestamp("at", "NOT_A_NUMBER", at)?;
    let fence = values::optional_counter("fence", fence)?;
    let mut payload = loomfence_core::JsonObject::new();
    payload.insert("waits".to_owned(), raw);
    let mut event = NewEvent::kernel(KernelKind::ExecutionSuspended, at).with_payload(payload);
    // The core's `DeliverMachine::park` reads the waits with its own reader
    // and checks the event, before anything is written.
    if let Some(fence) = fence {
        event = event.with_fence(fence);
    }
    Ok(event)
}
