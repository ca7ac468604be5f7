//! `SuperviseMachine` for JavaScript: the core's supervision of one
//! parent, sans-IO, which the package's `ChildSupervisor`
//! (`npm/supervisor.js`) pumps.
//!
//! The host polls it for the next action as a plain object, performs it (a
//! read, the resume it builds with `resumeOn`, a draw, a timer store
//! write) and feeds the answer back through the matching `handle*` method,
//! until a poll answers `{ done: outcome }`. Every decision is the core's
//! `SuperviseMachine`; this module only converts. An answer that does not
//! fit is refused (`TimerInputError`, `UNEXPECTED_ANSWER`; an unreadable
//! park is an `InputError`, `INVALID_PARK`) and leaves the machine as it
//! was.

use loomfence_core::{
    Error, InputError,
    supervise::{
        OnContention, SuperviseAction, SuperviseMachine, SuperviseOptions, SuperviseOutcome,
        SupervisePoll,
    },
};
use wasm_bindgen::prelude::*;

use crate::fire::{UNEXPECTED_ANSWER, log_answer, redrive_answer};
use crate::js_errors::{self, INVALID_PARK};
use crate::out::Out;
use crate::redrive::{self, RedrivePolicyJs};
use crate::resume::{ResumeMachineJs, answer_of};
use crate::timer_values::{self as timer, INVALID_TIME, integer, refuse, row_js};

/// The supervision of one parent.
#[wasm_bindgen(js_name = SuperviseMachine)]
pub struct SuperviseMachineJs {
    /// The core's machine.
    machine: SuperviseMachine,
}

/// The core's refusal of an answer.
fn refused(error: &Error) -> JsValue {
    match error {
        Error::Input(InputError::UnreadablePark { .. }) => {
            js_errors::invalid(&error.to_string(), INVALID_PARK)
        }
        Error::Input(InputError::NoWakeTime { .. }) => refuse(&error.to_string(), INVALID_TIME),
        _ => refuse(&error.to_string(), UNEXPECTED_ANSWER),
    }
}

/// An outcome as `{ outcome, answer, … }`: `resumed` carries what
/// `resume()` resolves to, `contended` and `fenced` their error,
/// `redriveScheduled` the row written.
fn outcome_js(outcome: &SuperviseOutcome) -> Result<JsValue, JsValue> {
    let out = |name: &str| {
        Out::new().set("outcome", &JsValue::from_str(name)).set(
            "answer",
            &JsValue::from_str(redrive_answer(outcome.redrive_answer())),
        )
    };
    Ok(match outcome {
        SuperviseOutcome::Resumed(resumed) => out("resumed").set("resumed", &answer_of(resumed)?),
        SuperviseOutcome::AlreadyAnswered => out("alreadyAnswered"),
        SuperviseOutcome::Waiting => out("waiting"),
        SuperviseOutcome::NotWaitingOnChildren => out("notWaitingOnChildren"),
        SuperviseOutcome::Contended(error) => {
            out("contended").set("error", &js_errors::contended(error))
        }
        SuperviseOutcome::Fenced(error) => out("fenced").set("error", &js_errors::stale(error)),
        SuperviseOutcome::RedriveScheduled(row) => out("redriveScheduled").set("row", &row_js(row)),
        _ => return Err(js_errors::internal("an outcome this binding does not know")),
    }
    .done())
}

#[wasm_bindgen(js_class = SuperviseMachine)]
impl SuperviseMachineJs {
    /// The supervision of `parent`: `conditionalTries` conditional resumes
    /// after a stale fence (checked by the caller, `supervisor.js`); with
    /// `writeRow`, the first re-drive row (due after a delay of `policy`)
    /// when every try was contended.
    #[wasm_bindgen(constructor)]
    pub fn new(
        parent: JsValue,
        conditional_tries: u32,
        policy: &RedrivePolicyJs,
        write_row: bool,
    ) -> Result<SuperviseMachineJs, JsValue> {
        let parent = timer::execution_id(&parent)?;
        let options = SuperviseOptions {
            conditional_tries,
            policy: policy.policy(),
            on_contention: if write_row {
                OnContention::WriteRow
            } else {
                OnContention::Answer
            },
        };
        Ok(Self {
            machine: SuperviseMachine::new(parent, options),
        })
    }

    /// The next action, or `{ done: outcome }`: `{ act: 'readParent' }`,
    /// `{ act: 'readChild', child }`, `{ act: 'resume', unfenced }`,
    /// `{ act: 'draw' }` or `{ act: 'writeRow', row }`. Asking again
    /// without an answer gives the same.
    pub fn poll(&self) -> Result<JsValue, JsValue> {
        let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
        Ok(match self.machine.poll() {
            SupervisePoll::Done(outcome) => Out::new().set("done", &outcome_js(&outcome)?),
            SupervisePoll::Act(SuperviseAction::ReadParent) => act("readParent"),
            SupervisePoll::Act(SuperviseAction::ReadChild(child)) => {
                act("readChild").set("child", &JsValue::from_str(child.as_str()))
            }
            SupervisePoll::Act(SuperviseAction::Resume { log, .. }) => {
                act("resume").set("unfenced", &JsValue::from_bool(!log.is_empty()))
            }
            SupervisePoll::Act(SuperviseAction::Draw) => act("draw"),
            SupervisePoll::Act(SuperviseAction::WriteRow(row)) => {
                act("writeRow").set("row", &row_js(&row))
            }
            _ => return Err(js_errors::internal("an action this binding does not know")),
        }
        .done())
    }

    /// The children to list the parent under (a string array), or `null`:
    /// drop it.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn watching(&self) -> JsValue {
        self.machine.watching().map_or(JsValue::NULL, |children| {
            children
                .iter()
                .map(|child| JsValue::from_str(child.as_str()))
                .collect::<js_sys::Array>()
                .into()
        })
    }

    /// Answers `readParent` or `readChild` with that execution's whole
    /// log, from sequence 1, and the time now (read for the last child).
    #[wasm_bindgen(js_name = handleRead)]
    pub fn handle_read(&mut self, events: JsValue, now: JsValue) -> Result<(), JsValue> {
        let events = log_answer(&events)?;
        let fed = if let SupervisePoll::Act(SuperviseAction::ReadParent) = self.machine.poll() {
            self.machine.handle_parent(&events)
        } else {
            let now = integer("now", INVALID_TIME, &now)?;
            self.machine.handle_child(&events, now).map_err(Error::from)
        };
        fed.map_err(|e| refused(&e))
    }

    /// The resume `resume` asks for, over `store`, for the package's resume
    /// loop to drive (then `handleResumed`): the unfenced try starts from
    /// the parent's log already read.
    #[wasm_bindgen(js_name = resumeOn)]
    pub fn resume_on(&self, store: JsValue) -> Result<ResumeMachineJs, JsValue> {
        let asked = match self.machine.poll() {
            SupervisePoll::Act(SuperviseAction::Resume { request, log }) => Some((request, log)),
            _ => None,
        };
        ResumeMachineJs::asked(store, self.machine.parent().clone(), asked)
    }

    /// Answers `resume` with the resume machine `resumeOn` gave, once its
    /// loop has finished it (its result is read from it).
    #[wasm_bindgen(js_name = handleResumed)]
    pub fn handle_resumed(&mut self, resume: &ResumeMachineJs) -> Result<(), JsValue> {
        self.machine
            .handle_resumed(resume.result()?.as_ref())
            .map_err(|e| refused(&e.into()))
    }

    /// Answers `draw` with a number in `[0, 1)` and the time now.
    #[wasm_bindgen(js_name = handleDraw)]
    pub fn handle_draw(&mut self, random: JsValue, now: JsValue) -> Result<(), JsValue> {
        let draw = redrive::draw(&random)?;
        let now = integer("now", INVALID_TIME, &now)?;
        self.machine.handle_draw(draw, now).map_err(|e| refused(&e))
    }

    /// Acknowledges `writeRow`: the timer store's schedule resolved.
    #[wasm_bindgen(js_name = handleWritten)]
    pub fn handle_written(&mut self) -> Result<(), JsValue> {
        self.machine
            .handle_written()
            .map_err(|e| refused(&e.into()))
    }
}
