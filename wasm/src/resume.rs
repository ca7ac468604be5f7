//! `resume(store, executionId, { fenceIfParkedAt, answer })`: the core's
//! resume machine, run inside WebAssembly in one step over the package's
//! own store ([`resume_in_memory`]), and stepped by the JS driver over any
//! other ([`ResumeMachineJs`]).
//!
//! The machine decides everything; the driver only performs the action it
//! asks for and feeds the answer back, exactly as the Rust driver does.

use js_sys::Array;
#[cfg(feature = "resume")]
use js_sys::Promise;
#[cfg(feature = "resume")]
use loomfence_core::drive;
use loomfence_core::{
    Action, Capability, Envelope, ExecutionId, Poll, ResumeError, ResumeMachine, ResumeRequest,
    Resumed, Status,
};
use wasm_bindgen::prelude::*;

#[cfg(feature = "resume")]
use crate::heap::settle;
use crate::host_store::{self, HostStore, Refusal, contract};
use crate::js_errors;
use crate::json;
use crate::json_text;
#[cfg(feature = "resume")]
use crate::memory_store::MemoryEventStore;
use crate::out;
use crate::values::{self, counter};

/// `resume` over any other store: the core's machine, stepped by the JS
/// driver (`npm/resume.js`), which awaits each store call this starts and
/// hands back what it settled to:
///
/// ```js
/// const machine = new ResumeMachine(store, executionId, options);
/// for (;;) {
///   const pending = machine.step();        // throws the resume's error
///   if (machine.finished) return pending;  // the answer
///   let settled, failed = false;
///   try { settled = await pending; } catch (error) { settled = error; failed = true; }
///   machine.handle(settled, failed);       // throws what ends the resume
/// }
/// ```
///
/// The answer is `{ executionId, fence, resumed, attempts, head }`; the
/// errors are `ResumeRefusedError` (the park is not open, or was deleted
/// under the resume; nothing was appended), `ResumeContendedError` (rivals
/// kept the fence moving; retry), a typed input error, an `InputError` with
/// code `STORE_CONTRACT` (the store answered outside the interface), or
/// whatever the store threw. A store without `readRange` and
/// `appendIfParked` is refused before it is called (`NOT_A_STORE`).
/// `options.at` (ms) stamps the resume; it defaults to `Date.now()`.
#[wasm_bindgen(js_name = ResumeMachine)]
pub struct ResumeMachineJs {
    /// The host's store.
    host: HostStore,
    /// The core's machine.
    machine: ResumeMachine,
    /// The action whose store call is in flight.
    pending: Option<Action>,
    /// Whether the resume is over.
    finished: bool,
}

impl ResumeMachineJs {
    /// The resume a machine asked for (a supervision's or a delivery's
    /// `resume` action: `asked`, its request and log; `None` when it asked
    /// for none), over `store`: checked, then started from the log already
    /// read, for the package's resume loop to drive.
    pub(crate) fn asked(
        store: JsValue,
        execution_id: ExecutionId,
        asked: Option<(ResumeRequest, Vec<Envelope>)>,
    ) -> Result<Self, JsValue> {
        let Some((request, log)) = asked else {
            return Err(unexpected("resumeOn() without a pending resume"));
        };
        request.check().map_err(|e| js_errors::input(&e))?;
        let host = HostStore::new(store)?;
        let machine = ResumeMachine::with_events(execution_id, request, host.capability(), &log)
            .map_err(|e| unexpected(&e.to_string()))?;
        Ok(Self {
            host,
            machine,
            pending: None,
            finished: false,
        })
    }

    /// What a finished resume ended in, for the machine that asked for it.
    pub(crate) fn result(&self) -> Result<Result<Resumed, ResumeError>, JsValue> {
        match self.machine.poll() {
            Poll::Done(result) => Ok(result),
            _ => Err(unexpected(
                "handleResumed() with a resume that has not finished",
            )),
        }
    }
}

/// An answer the asking machine cannot take (`UNEXPECTED_ANSWER`).
fn unexpected(message: &str) -> JsValue {
    crate::js_errors::timer_input(message, "UNEXPECTED_ANSWER")
}

#[wasm_bindgen(js_class = ResumeMachine)]
impl ResumeMachineJs {
    /// A resume of `executionId` on `store`; bad input and a store without
    /// the methods a resume needs are refused here, before any call.
    #[wasm_bindgen(constructor)]
    pub fn new(
        store: JsValue,
        execution_id: JsValue,
        options: JsValue,
    ) -> Result<ResumeMachineJs, JsValue> {
        let (id, request) = request_of(&execution_id, &options)?;
        let host = HostStore::new(store)?;
        let machine = ResumeMachine::new(id, request, host.capability());
        Ok(Self {
            host,
            machine,
            pending: None,
            finished: false,
        })
    }

    /// Starts the store call the machine asks for and answers what the
    /// store returned, to be awaited and handed to `handle`; or, once the
    /// resume is over, its answer (`finished` is then true), or throws its
    /// error.
    pub fn step(&mut self) -> Result<JsValue, JsValue> {
        match self.machine.poll() {
            Poll::Done(result) => {
                self.finished = true;
                match result {
                    Ok(resumed) => answer_of(&resumed),
                    Err(error) => Err(js_errors::resume(&error)),
                }
            }
            Poll::Act(action) => {
                let returned = self.host.start(self.machine.execution_id(), &action)?;
                self.pending = Some(action);
                Ok(returned)
            }
            _ => Err(js_errors::internal(
                "the resume machine answered what this binding does not know; \
                 nothing was written for it",
            )),
        }
    }

    /// Whether the resume is over: the last `step` answered its result.
    #[wasm_bindgen(getter)]
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Feeds what the pending store call settled to: its value, or
    /// (`failed`) what it threw or rejected with. Throws what the store
    /// threw when that ends the resume, or a `STORE_CONTRACT` error for an
    /// answer outside the interface.
    pub fn handle(&mut self, answer: JsValue, failed: bool) -> Result<(), JsValue> {
        let Some(action) = self.pending.take() else {
            return Err(js_errors::internal(
                "handle() without a store call in flight",
            ));
        };
        let settled = if failed { Err(answer) } else { Ok(answer) };
        let machine = &mut self.machine;
        let fed = match action {
            Action::ReadFrom { .. } => machine.handle_read(host_store::read_answer(settled)?),
            Action::AcquireFenceIf(expect) => {
                match host_store::acquire_if_answer(expect, settled)? {
                    Some(outcome) => machine.handle_acquire_if(outcome),
                    None => machine.handle_park_gone(),
                }
            }
            Action::AcquireFence => machine.handle_acquire(host_store::acquire_answer(settled)?),
            Action::AppendIfParked { events, .. } => {
                let id = machine.execution_id().clone();
                match host_store::append_answer(&id, &events, settled) {
                    Ok(Some(stored)) => machine.handle_appended(stored),
                    Ok(None) => machine.handle_park_answered(),
                    Err(Refusal::Stale(stale)) => machine.handle_stale(stale),
                    Err(Refusal::ParkGone) => machine.handle_park_gone(),
                    Err(Refusal::Other(error)) => return Err(error),
                }
            }
            _ => return Err(js_errors::internal("an answer to an unknown action")),
        };
        fed.map_err(|e| contract(&format!("the store's answer does not fit the resume: {e}")))
    }
}

/// `resume` over the package's own `MemoryEventStore`, which the JS entry
/// routes here when `store` is one with its methods untouched: the whole
/// resume runs as one synchronous step inside WebAssembly, with no
/// crossing and no promise per store call. One step is also one atomic
/// step, an interleaving the host path allows as well, so every answer is
/// one the host path could give.
#[cfg(feature = "resume")]
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
pub(crate) fn answer_of(resumed: &Resumed) -> Result<JsValue, JsValue> {
    debug_assert_eq!(resumed.view.status, Status::Running);
    // One text, its parts read on the JS side: five fields set across the
    // boundary cost a third of a resume, and `JSON.parse` of the whole
    // answer twice what its parts cost.
    Ok(out::resume_answer(|text| {
        json_text::write_string(text, resumed.execution_id.as_str());
        text.push('\n');
        match resumed.fence {
            Some(fence) => json_text::write_u64(text, fence),
            None => text.push_str("null"),
        }
        text.push('\n');
        json_text::write_u64(text, u64::from(resumed.attempts));
        text.push('\n');
        json_text::write_u64(text, resumed.view.head);
        text.push('\n');
        let event = &resumed.resumed;
        json_text::write_envelope_lines(
            text,
            event.execution_id.as_str(),
            event.sequence,
            (&event.kind, &event.payload, &event.metadata, event.at),
        );
    }))
}
