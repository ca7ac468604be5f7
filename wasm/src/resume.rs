//! `resume(store, executionId, { fenceIfParkedAt, answer })`: the core's
//! resume machine, driven against any JavaScript store.
//!
//! The machine decides everything; this loop only performs the action it
//! asks for and feeds the answer back, exactly as the Rust driver does.

use std::fmt::Write as _;

use js_sys::{Array, Promise};
use loomfence_core::{
    Action, Capability, ExecutionId, Poll, ResumeMachine, ResumeRequest, Resumed, Status, drive,
};
use wasm_bindgen::prelude::*;

use crate::host_store::{HostStore, Refusal, contract};
use crate::js_errors;
use crate::json;
use crate::json_text;
use crate::memory_store::{MemoryEventStore, settle};
use crate::out;
use crate::values::{self, counter};

/// Resumes the park at `options.fenceIfParkedAt` with `options.answer`.
///
/// Resolves to `{ executionId, fence, resumed, attempts, head }`, or
/// rejects with `ResumeRefusedError` (the park is not open, or was deleted
/// under the resume; nothing was appended), `ResumeContendedError` (rivals
/// kept the fence moving; retry), a typed input error, an `InputError`
/// with code `STORE_CONTRACT` (the store answered outside the interface),
/// or whatever the store threw. A store without `readRange` and
/// `appendIfParked` is refused before it is called (`NOT_A_STORE`).
/// `options.at` (ms) stamps the resume; it defaults to `Date.now()`.
#[wasm_bindgen(js_name = resume)]
pub async fn resume(
    store: JsValue,
    execution_id: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let (id, request) = request_of(&execution_id, &options)?;
    let host = HostStore::new(store)?;
    let mut machine = ResumeMachine::new(id, request, host.capability());
    loop {
        match machine.poll() {
            Poll::Done(Ok(resumed)) => return answer_of(&resumed),
            Poll::Done(Err(error)) => return Err(js_errors::resume(&error)),
            Poll::Act(action) => perform(&host, &mut machine, action).await?,
            _ => return Err(unknown("the resume machine answered")),
        }
    }
}

/// `resume` over the package's own `MemoryEventStore`, which the JS entry
/// routes here when `store` is one with its methods untouched: the whole
/// resume runs as one synchronous step inside WebAssembly, with no
/// crossing and no promise per store call. One step is also one atomic
/// step, an interleaving the host path allows as well, so every answer is
/// one the host path could give.
#[wasm_bindgen(js_name = resumeInMemory)]
pub fn resume_in_memory(
    store: &MemoryEventStore,
    execution_id: JsValue,
    options: JsValue,
) -> Promise {
    settle((|| {
        let (id, request) = request_of(&execution_id, &options)?;
        let mut machine = ResumeMachine::new(id, request, Capability::Conditional);
        match store.with_store(|store| drive::run(store, &mut machine)) {
            Ok(Ok(resumed)) => answer_of(&resumed),
            Ok(Err(error)) => Err(js_errors::resume(&error)),
            // The core's own store answered outside its own machine: a bug.
            Err(error) => Err(js_errors::internal(&error.to_string())),
        }
    })())
}

/// The execution id and the checked request, refused before anything is
/// read or a token taken.
fn request_of(
    execution_id: &JsValue,
    options: &JsValue,
) -> Result<(ExecutionId, ResumeRequest), JsValue> {
    let id = values::execution_id(execution_id)?;
    if !options.is_object() {
        return Err(js_errors::wrong_type(
            "options must be an object { fenceIfParkedAt, answer }",
            "NOT_AN_OBJECT",
        ));
    }
    let fields = resume_options(options);
    let Some(fields) = fields.dyn_ref::<Array>() else {
        return Err(fields);
    };
    let park_seq = counter("fenceIfParkedAt", &fields.get(0))?;
    let answer = json::read_value("answer", "INVALID_ANSWER", &fields.get(1))?;
    let at = timestamp(&fields.get(2))?;
    let request = ResumeRequest::new(park_seq, answer, at);
    request.check().map_err(|e| js_errors::input(&e))?;
    Ok((id, request))
}

#[wasm_bindgen(module = "/js/options.js")]
extern "C" {
    #[wasm_bindgen(js_name = resumeOptions)]
    fn resume_options(options: &JsValue) -> JsValue;
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

/// The resolved value: `{ executionId, fence, resumed, attempts, head }`,
/// `fence` `null` when no token was taken.
fn answer_of(resumed: &Resumed) -> Result<JsValue, JsValue> {
    debug_assert_eq!(resumed.view.status, Status::Running);
    // One text, parsed once on the JS side: five fields set across the
    // boundary cost a third of a resume.
    Ok(out::via_text(|text| {
        text.push_str("{\"executionId\":");
        json_text::write_string(text, resumed.execution_id.as_str());
        text.push_str(",\"fence\":");
        match resumed.fence {
            Some(fence) => {
                let _ = write!(text, "{fence}");
            }
            None => text.push_str("null"),
        }
        text.push_str(",\"resumed\":");
        json_text::write_envelope(text, &resumed.resumed);
        let _ = write!(
            text,
            ",\"attempts\":{},\"head\":{}}}",
            resumed.attempts, resumed.view.head
        );
    }))
}

/// Performs one action against the store and feeds the answer back.
///
/// The resume is always appended with `appendIfParked`, carrying the
/// token in `metadata.fence` when one was taken: a park gone by then (a
/// delete after the acquire) is a refusal with nothing written.
async fn perform(
    host: &HostStore,
    machine: &mut ResumeMachine,
    action: Action,
) -> Result<(), JsValue> {
    let id = machine.execution_id().clone();
    let fed = match action {
        Action::ReadFrom { from_seq } => machine.handle_read(host.read_from(&id, from_seq).await?),
        Action::AcquireFenceIf(expect) => match host.acquire_fence_if(&id, expect).await? {
            Some(outcome) => machine.handle_acquire_if(outcome),
            None => machine.handle_park_gone(),
        },
        Action::AcquireFence => machine.handle_acquire(host.acquire_fence(&id).await?),
        Action::AppendIfParked { park_seq, event } => {
            match host.append_if_parked(&id, park_seq, &event).await {
                Ok(Some(stored)) => machine.handle_appended(stored),
                Ok(None) => machine.handle_park_answered(),
                Err(Refusal::Stale(stale)) => machine.handle_stale(stale),
                Err(Refusal::ParkGone) => machine.handle_park_gone(),
                Err(Refusal::Other(error)) => return Err(error),
            }
        }
        // A newer core's action this binding cannot perform: stop before
        // doing anything with it.
        _ => return Err(unknown("the resume machine asked for an action")),
    };
    fed.map_err(|e| contract(&format!("the store's answer does not fit the resume: {e}")))
}

/// A newer core's answer this binding does not know: it stops there,
/// having written nothing for it.
fn unknown(what: &str) -> JsValue {
    js_errors::internal(&format!(
        "{what} this binding does not know; nothing was written for it"
    ))
}
