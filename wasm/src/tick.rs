//! `TickMachine` for JavaScript: the core's timer service tick, sans-IO,
//! which `npm/timer-service.js` pumps against the host's stores.
//!
//! Every rule of a tick (claim again while pages come back full, fire at
//! `max(clock, the claim's now)`, never fire a claim whose lease ended,
//! `notHeld` voids, release the left rows at the end, the node's backoff
//! and its once-per-node unreadable reports) is the core's `TickMachine`;
//! this module converts its actions, events and report to plain objects
//! and the host's answers back. An answer that does not fit is refused
//! (`TimerInputError`) and leaves the machine as it was; the host then
//! reports it and calls `handleFailed`.

use std::num::NonZeroUsize;

use loomfence_core::{
    ContractError,
    tick::{
        TickAction, TickConfig, TickEnd, TickEvent, TickMachine, TickPoll, TickReport, TickStage,
    },
    timer::Completed,
};
use wasm_bindgen::prelude::*;

use crate::claim_page::{claim_page, unreadable_js};
use crate::fire::{
    UNEXPECTED_ANSWER, log_answer, outcome_js, read_redrive_answer, request_js, resume_result,
};
use crate::js_errors;
use crate::out::Out;
use crate::redrive;
use crate::timer_values::{
    self as timer, INVALID_BACKOFF, INVALID_TIME, claim_js, count, exhaustion_js, integer, row_js,
};

/// A timer service node's ticks.
#[wasm_bindgen(js_name = TickMachine)]
#[derive(Debug)]
pub struct TickMachineJs {
    /// The core's machine.
    machine: TickMachine,
}

/// The core's refusal of an answer.
fn tick_error(error: &ContractError) -> JsValue {
    match error {
        ContractError::NoDraw => timer::refuse(&error.to_string(), "INVALID_DRAW"),
        _ => timer::refuse(&error.to_string(), UNEXPECTED_ANSWER),
    }
}

/// `'done'` or `'notHeld'`, else `UNEXPECTED_ANSWER`.
fn completed(value: &JsValue) -> Result<Completed, JsValue> {
    match value.as_string().as_deref() {
        Some("done") => Ok(Completed::Done),
        Some("notHeld") => Ok(Completed::NotHeld),
        _ => Err(timer::refuse(
            "a timer store's complete, reschedule and release answer 'done' or 'notHeld'",
            UNEXPECTED_ANSWER,
        )),
    }
}

/// The report, in the core's names.
#[allow(clippy::cast_possible_wrap)]
fn report_js(report: &TickReport) -> JsValue {
    [
        ("claimed", report.claimed),
        ("fired", report.fired),
        ("obsolete", report.obsolete),
        ("notYet", report.not_yet),
        ("backedOff", report.backed_off),
        ("redriven", report.redriven),
        ("nothingToRedrive", report.nothing_to_redrive),
        ("rescheduled", report.rescheduled),
        ("left", report.left),
        ("exhausted", report.exhausted),
        ("notHeld", report.not_held),
        ("lapsed", report.lapsed),
        ("released", report.released),
        ("errors", report.errors),
        ("unreadable", report.unreadable),
    ]
    .into_iter()
    .fold(Out::new(), |out, (name, value)| {
        out.number(name, value as i64)
    })
    .done()
}

/// A stage's name: the action that failed, `'fire'` for a fire's start.
fn stage(stage: TickStage) -> &'static str {
    match stage {
        TickStage::Claim => "claim",
        TickStage::ReadLog => "readLog",
        TickStage::Resume => "resume",
        TickStage::Redrive => "redrive",
        TickStage::Reschedule => "reschedule",
        TickStage::Complete => "complete",
        TickStage::Release => "release",
        _ => "fire",
    }
}

/// An action as a plain object `{ act, … }`.
fn action_js(action: &TickAction) -> Result<JsValue, JsValue> {
    let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
    let id = |id: &loomfence_core::ExecutionId| JsValue::from_str(id.as_str());
    Ok(match action {
        TickAction::Clock { draw } => act("clock").set("draw", &JsValue::from_bool(*draw)),
        TickAction::Claim {
            lease,
            limit,
            filter,
        } => {
            #[allow(clippy::cast_possible_wrap)]
            let lease = Out::new()
                .set("holder", &JsValue::from_str(lease.holder.as_str()))
                .number("now", lease.now)
                .number("durationMs", lease.duration_ms as i64)
                .done();
            act("claim")
                .set("lease", &lease)
                .set("limit", &JsValue::from(*limit))
                .set(
                    "options",
                    &Out::new()
                        .set("redrive", &JsValue::from_bool(filter.redrive))
                        .done(),
                )
        }
        TickAction::ReadLog { execution_id } => {
            act("readLog").set("executionId", &id(execution_id))
        }
        TickAction::Resume {
            execution_id,
            request,
        } => act("resume")
            .set("executionId", &id(execution_id))
            .set("request", &request_js(request)),
        TickAction::Redrive { redriver, row } => act("redrive")
            .set("redriver", &JsValue::from(*redriver))
            .set("row", &row_js(row)),
        TickAction::Reschedule { claim, next } => act("reschedule")
            .set("claim", &claim_js(claim))
            .set("row", &row_js(next)),
        TickAction::Complete { claim } => act("complete").set("claim", &claim_js(claim)),
        TickAction::Exhaust { claim, exhaustion } => act("exhaust")
            .set("claim", &claim_js(claim))
            .set("exhaustion", &exhaustion_js(exhaustion)),
        TickAction::Release { claim } => act("release").set("claim", &claim_js(claim)),
        _ => {
            return Err(js_errors::internal(
                "the tick machine asked for an action this binding does not know",
            ));
        }
    }
    .done())
}

/// An event as a plain object `{ event, … }`.
fn event_js(event: &TickEvent) -> JsValue {
    let event_ = |name: &str| Out::new().set("event", &JsValue::from_str(name));
    match event {
        TickEvent::Unreadable(row) => event_("unreadable").set("row", &unreadable_js(row)),
        TickEvent::Started(claim) => event_("started").set("claim", &claim_js(claim)),
        TickEvent::Ended { claim, end } => {
            let out = event_("ended").set("claim", &claim_js(claim));
            match end {
                TickEnd::Outcome(outcome) => out.set("outcome", &outcome_js(outcome)),
                TickEnd::Void => out.set("result", &JsValue::from_str("notHeld")),
                TickEnd::Lapsed => out.set("result", &JsValue::from_str("lapsed")),
                TickEnd::Failed(at) => out
                    .set("result", &JsValue::from_str("failed"))
                    .set("stage", &JsValue::from_str(stage(*at))),
                _ => out.set("result", &JsValue::from_str("unknown")),
            }
        }
        _ => event_("unknown"),
    }
    .done()
}

#[wasm_bindgen(js_class = TickMachine)]
impl TickMachineJs {
    /// The ticks of node `holder`, claiming `batch` rows for `leaseMs` at a
    /// time under `policy` (a `RedrivePolicy` or its init), with a backoff
    /// of at most `backoffBound` executions. The host checks the ranges of
    /// `leaseMs` and `batch`; the timer store refuses others at the claim.
    #[wasm_bindgen(constructor)]
    pub fn new(
        holder: JsValue,
        lease_ms: JsValue,
        batch: JsValue,
        policy: JsValue,
        backoff_bound: JsValue,
    ) -> Result<TickMachineJs, JsValue> {
        let holder = timer::holder(&holder)?;
        let lease_ms = timer::whole("leaseMs", "INVALID_LEASE", &lease_ms, timer::SAFE_U64)?;
        let batch = count("batch", "INVALID_LIMIT", &batch)?;
        let bound = count("backoffBound", INVALID_BACKOFF, &backoff_bound)?;
        let Some(bound) = NonZeroUsize::new(bound) else {
            return Err(timer::refuse(
                "backoffBound must be at least 1",
                INVALID_BACKOFF,
            ));
        };
        let config = TickConfig::new(holder, lease_ms, batch, redrive::policy(&policy)?);
        Ok(Self {
            machine: TickMachine::new(config, bound),
        })
    }

    /// Starts a tick with `redrivers` re-drivers registered.
    pub fn begin(&mut self, redrivers: JsValue) -> Result<(), JsValue> {
        let redrivers = count("redrivers", UNEXPECTED_ANSWER, &redrivers)?;
        self.machine.begin(redrivers).map_err(|e| tick_error(&e))
    }

    /// Stops: the fire in hand finishes, the claims not fired are released,
    /// no claim follows.
    pub fn stop(&mut self) {
        self.machine.stop();
    }

    /// The next action `{ act, … }`, or `{ done: report }` once the tick
    /// has ended.
    pub fn poll(&self) -> Result<JsValue, JsValue> {
        match self.machine.poll() {
            TickPoll::Act(action) => action_js(&action),
            TickPoll::Done(report) => Ok(Out::new().set("done", &report_js(&report)).done()),
            _ => Err(js_errors::internal("unknown tick poll")),
        }
    }

    /// The next thing to report, `undefined` when there is none.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> JsValue {
        self.machine
            .poll_event()
            .map_or(JsValue::UNDEFINED, |event| event_js(&event))
    }

    /// Answers `clock` with the clock's time and, when asked, one draw.
    #[wasm_bindgen(js_name = handleClock)]
    pub fn handle_clock(&mut self, now: JsValue, draw: JsValue) -> Result<(), JsValue> {
        let now = integer("now", INVALID_TIME, &now)?;
        let draw = if draw.is_undefined() {
            None
        } else {
            Some(redrive::draw(&draw)?)
        };
        self.machine
            .handle_clock(now, draw)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `claim` with what the timer store's `claimDue` resolved to:
    /// the claims, or `{ claims, unreadable }`. Each element is read on its
    /// own; a malformed one is an unreadable row.
    #[wasm_bindgen(js_name = handleClaimed)]
    pub fn handle_claimed(&mut self, answer: JsValue) -> Result<(), JsValue> {
        let (claims, unreadable) = claim_page(&answer)?;
        self.machine
            .handle_claimed(claims, unreadable)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `readLog` with the whole log, from sequence 1.
    #[wasm_bindgen(js_name = handleRead)]
    pub fn handle_read(&mut self, events: JsValue) -> Result<(), JsValue> {
        let events = log_answer(&events)?;
        self.machine
            .handle_read(&events)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `resume` with what `resume` resolved to, or the
    /// `ResumeRefusedError` / `ResumeContendedError` it rejected with.
    #[wasm_bindgen(js_name = handleResumed)]
    pub fn handle_resumed(&mut self, result: JsValue) -> Result<(), JsValue> {
        let result = resume_result(&result)?;
        self.machine
            .handle_resumed(result.as_ref())
            .map_err(|e| tick_error(&e))
    }

    /// Answers `redrive` with `'done'`, `'noop'`, `'contended'` or
    /// `'failed'` (the re-driver threw or answered outside these).
    #[wasm_bindgen(js_name = handleRedrive)]
    pub fn handle_redrive(&mut self, answer: JsValue) -> Result<(), JsValue> {
        let answer = read_redrive_answer(&answer)?;
        self.machine
            .handle_redrive(answer)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `reschedule` with the store's `'done'` or `'notHeld'`.
    #[wasm_bindgen(js_name = handleRescheduled)]
    pub fn handle_rescheduled(&mut self, answer: JsValue) -> Result<(), JsValue> {
        let answer = completed(&answer)?;
        self.machine
            .handle_rescheduled(answer)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `complete` with the store's `'done'` or `'notHeld'`.
    #[wasm_bindgen(js_name = handleCompleted)]
    pub fn handle_completed(&mut self, answer: JsValue) -> Result<(), JsValue> {
        let answer = completed(&answer)?;
        self.machine
            .handle_completed(answer)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `exhaust` with the store's `'done'` or `'notHeld'`.
    #[wasm_bindgen(js_name = handleExhausted)]
    pub fn handle_exhausted(&mut self, answer: JsValue) -> Result<(), JsValue> {
        let answer = completed(&answer)?;
        self.machine
            .handle_exhausted(answer)
            .map_err(|e| tick_error(&e))
    }

    /// Answers `release` with the store's `'done'` or `'notHeld'`.
    #[wasm_bindgen(js_name = handleReleased)]
    pub fn handle_released(&mut self, answer: JsValue) -> Result<(), JsValue> {
        let answer = completed(&answer)?;
        self.machine
            .handle_released(answer)
            .map_err(|e| tick_error(&e))
    }

    /// The pending action failed (the host has reported why): a fire is
    /// dropped and its claim left to expire, a failed claim ends the
    /// claiming, a failed release is skipped.
    #[wasm_bindgen(js_name = handleFailed)]
    pub fn handle_failed(&mut self) -> Result<(), JsValue> {
        self.machine.handle_failed().map_err(|e| tick_error(&e))
    }
}
