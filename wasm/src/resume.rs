//! `resume(store, executionId, { fenceIfParkedAt, answer })`: the core's
//! resume machine, driven against any JavaScript store.
//!
//! The machine decides everything; this loop only performs the action it
//! asks for and feeds the answer back, exactly as the Rust driver does.

use loomfence_core::{Action, ExecutionId, Poll, ResumeMachine, ResumeRequest, Resumed, Status};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::host_store::{HostStore, Refusal};
use crate::js_errors;
use crate::json;
use crate::values::{self, counter, property, to_js};

/// What `resume` resolves to.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResumedJs<'a> {
    /// The execution resumed.
    execution_id: &'a ExecutionId,
    /// The token the body now holds; `null` when none was taken.
    fence: Option<u64>,
    /// The stored `EXECUTION_RESUMED`.
    resumed: &'a loomfence_core::Envelope,
    /// Acquisitions it took.
    attempts: u32,
    /// The sequence the body continues after.
    head: u64,
}

/// Resumes the park at `options.fenceIfParkedAt` with `options.answer`.
///
/// Resolves to `{ executionId, fence, resumed, attempts, head }`, or
/// rejects with `ResumeRefusedError` (the park is not open; nothing was
/// appended, no token taken), `ResumeContendedError` (rivals kept the
/// fence moving; retry), a typed input error, or whatever the store threw.
/// `options.at` (ms) stamps the resume; it defaults to `Date.now()`.
#[wasm_bindgen(js_name = resume)]
pub async fn resume(
    store: JsValue,
    execution_id: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let id = values::execution_id(&execution_id)?;
    if !options.is_object() {
        return Err(js_errors::wrong_type(
            "options must be an object { fenceIfParkedAt, answer }",
            "NOT_AN_OBJECT",
        ));
    }
    let park_seq = counter("fenceIfParkedAt", &property(&options, "fenceIfParkedAt")?)?;
    let answer = property(&options, "answer")?;
    let answer: Value = if answer.is_undefined() {
        Value::Null
    } else {
        json::value("answer", "INVALID_ANSWER", &answer)?
    };
    let at = timestamp(&property(&options, "at")?)?;
    let host = HostStore::new(store)?;
    let request = ResumeRequest::new(park_seq, answer, at);
    // Refused here, before the machine takes a token for it.
    request.check().map_err(|e| js_errors::input(&e))?;
    let mut machine = ResumeMachine::new(id, request, host.capability());
    loop {
        match machine.poll() {
            Poll::Done(Ok(resumed)) => return answer_of(&resumed),
            Poll::Done(Err(error)) => return Err(js_errors::resume(&error)),
            Poll::Act(action) => perform(&host, &mut machine, action).await?,
        }
    }
}

/// `options.at`, or the host's clock: the core itself never reads one.
fn timestamp(at: &JsValue) -> Result<i64, JsValue> {
    if at.is_undefined() {
        return values::timestamp(
            "Date.now()",
            "CLOCK",
            &JsValue::from_f64(js_sys::Date::now()),
        );
    }
    values::timestamp("options.at", "NOT_A_NUMBER", at)
}

/// The resolved value.
fn answer_of(resumed: &Resumed) -> Result<JsValue, JsValue> {
    debug_assert_eq!(resumed.view.status, Status::Running);
    to_js(&ResumedJs {
        execution_id: &resumed.execution_id,
        fence: resumed.fence,
        resumed: &resumed.resumed,
        attempts: resumed.attempts,
        head: resumed.view.head,
    })
}

/// Performs one action against the store and feeds the answer back.
async fn perform(
    host: &HostStore,
    machine: &mut ResumeMachine,
    action: Action,
) -> Result<(), JsValue> {
    let id = machine.execution_id().clone();
    let fed = match action {
        Action::ReadFrom { from_seq } => machine.handle_read(host.read_from(&id, from_seq).await?),
        Action::AcquireFenceIf(expect) => match host.acquire_fence_if(&id, expect).await {
            Ok(outcome) => machine.handle_acquire_if(outcome),
            Err(Refusal::ParkGone) => machine.handle_park_gone(),
            Err(Refusal::Stale(_)) => {
                return Err(contract(
                    "acquireFenceIf() threw StaleFenceError; it answers { stale: true, fence } instead",
                ));
            }
            Err(Refusal::Other(error)) => return Err(error),
        },
        Action::AcquireFence => machine.handle_acquire(host.acquire_fence(&id).await?),
        Action::Append(event) => match host.append(&id, &event).await {
            Ok(stored) => machine.handle_appended(stored),
            Err(Refusal::Stale(stale)) => machine.handle_stale(stale),
            Err(Refusal::ParkGone) => {
                return Err(contract("append() reported a park sequence out of range"));
            }
            Err(Refusal::Other(error)) => return Err(error),
        },
        Action::AppendIfParked { park_seq, event } => {
            match host.append_if_parked(&id, park_seq, &event).await {
                Ok(Some(stored)) => machine.handle_appended(stored),
                Ok(None) => machine.handle_park_answered(),
                Err(Refusal::Stale(stale)) => machine.handle_stale(stale),
                Err(Refusal::ParkGone) => machine.handle_park_gone(),
                Err(Refusal::Other(error)) => return Err(error),
            }
        }
    };
    fed.map_err(|e| contract(&format!("the store's answer does not fit the resume: {e}")))
}

/// A store that broke the interface's contract.
fn contract(message: &str) -> JsValue {
    js_errors::wrong_type(message, "STORE_CONTRACT")
}
