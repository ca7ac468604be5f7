//! `SweepMachine`: the core's retention sweep, sans-IO, for the package's
//! `sweep` (`npm/retention.js`) to drive. Internal to the package: the glue
//! exports it, the entries do not.
//!
//! `sweep` polls it for the next action as a plain object, performs it
//! against the store and feeds the answer back through the matching
//! `handle*` method, until a poll answers `{ done: report }` (children it
//! cannot judge are in `report.undecided`, not an error). Every
//! decision (eligibility, the pin, the guard) is the core's `SweepMachine`;
//! this module only converts. `sweep` checks every answer against the store
//! interface first, with the messages (JavaScript costs the `.wasm`
//! nothing), so the conversions here refuse what they cannot convert with
//! one short `STORE_CONTRACT` error, and the core's own checks (events of
//! another execution, a page that repeats its cursor) are `STORE_CONTRACT`
//! too. An answer out of turn is an `InputError` `UNEXPECTED_ANSWER`.
//! Either way the machine is left as it was.

use loomfence_core::{
    ExecutionId, GuardedDelete, SweepAction, SweepMachine, SweepMachineError, SweepOptions,
    SweepPoll,
};
use wasm_bindgen::prelude::*;

use crate::events::envelopes;
use crate::host_store::{STORE_CONTRACT, contract};
use crate::js_errors;
use crate::out::{self, Out};
use crate::retention_values::{self as retention, guard_js, report_js};
use crate::values::{counter, property};

/// One retention sweep.
#[wasm_bindgen(js_name = SweepMachine)]
#[derive(Debug)]
pub struct SweepMachineJs {
    /// The core's machine.
    machine: SweepMachine,
    /// The page size, which a page may not exceed.
    page_limit: u32,
}

/// A driver's answer the machine refused: out of turn, or (what `sweep`
/// checks first, with the ids in its message) events of another execution
/// or a page that repeats its cursor. Fixed messages: the core's `Display`
/// of these would cost the `.wasm` for errors `sweep` never lets through.
fn machine_error(error: &SweepMachineError) -> JsValue {
    match error {
        SweepMachineError::UnexpectedInput { .. } => js_errors::invalid(
            "the answer does not answer the pending action",
            "UNEXPECTED_ANSWER",
        ),
        _ => contract(
            "the store answered with another execution's events, or with a page that lists \
             its cursor again",
        ),
    }
}

/// The one refusal of an answer `sweep` should have refused first.
fn unconvertible() -> JsValue {
    contract("the store answered outside the interface")
}

/// An execution id in a store's answer.
fn answered_id(value: &JsValue) -> Result<ExecutionId, JsValue> {
    value
        .as_string()
        .and_then(|id| ExecutionId::try_from(id.as_str()).ok())
        .ok_or_else(unconvertible)
}

/// An action as a plain object `{ act, … }`.
fn action_js(action: &SweepAction) -> JsValue {
    let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
    let id = |id: &ExecutionId| JsValue::from_str(id.as_str());
    match action {
        SweepAction::List { after, limit } => act("list")
            .set("after", &after.as_ref().map_or(JsValue::NULL, id))
            .number("limit", (*limit).into()),
        SweepAction::ReadLog { execution_id } => {
            act("readLog").set("executionId", &id(execution_id))
        }
        SweepAction::ReadParent { child, parent } => act("readParent")
            .set("child", &id(child))
            .set("parent", &id(parent)),
        SweepAction::Archive {
            execution_id,
            events,
        } => act("archive")
            .set("executionId", &id(execution_id))
            .set("events", &out::envelopes(events)),
        SweepAction::Delete {
            execution_id,
            guard,
        } => act("delete")
            .set("executionId", &id(execution_id))
            .set("guard", &guard_js(guard)),
        // A newer core's action: the driver's `default` branch reports it.
        _ => act("unknown"),
    }
    .done()
}

#[wasm_bindgen(js_class = SweepMachine)]
impl SweepMachineJs {
    /// A sweep that has done nothing yet, of executions that ended before
    /// `endedBefore`, listed `pageLimit` at a time. `sweep` checked both
    /// (a safe integer; 1 to 10 000).
    #[wasm_bindgen(constructor)]
    #[must_use]
    #[allow(clippy::cast_possible_truncation)]
    pub fn new(ended_before: f64, page_limit: u32, archive: bool, dry_run: bool) -> Self {
        Self {
            machine: SweepMachine::new(SweepOptions {
                ended_before: ended_before as i64,
                page_limit,
                archive,
                dry_run,
            }),
            page_limit,
        }
    }

    /// What was done so far: the partial report when a driver stops on a
    /// store's error. A `Result` for the reason `poll` is one.
    #[wasm_bindgen(getter)]
    #[allow(clippy::unnecessary_wraps)]
    pub fn report(&self) -> Result<JsValue, JsValue> {
        Ok(report_js(self.machine.report()))
    }

    /// The next action; `{ done: report }` at the end. Asking again
    /// without an answer gives the same.
    ///
    /// A `Result`, though it never fails on a known poll, so that the export
    /// returns two values rather than one reference: Node 20's V8 (11.3)
    /// inlines a JS-to-Wasm call that returns one `externref` into the
    /// optimized caller, and crashes the process ("Fatal error … unreachable
    /// code" in `DoComputeBuiltinContinuation`) if that caller is
    /// deoptimized while the call runs, which building the action's objects
    /// can cause. `sweep`'s loop calls this once per action.
    pub fn poll(&self) -> Result<JsValue, JsValue> {
        match self.machine.poll() {
            SweepPoll::Act(action) => Ok(action_js(&action)),
            SweepPoll::Done(report) => Ok(Out::new().set("done", &report_js(&report)).done()),
            _ => Err(js_errors::internal("unknown sweep poll")),
        }
    }

    /// Answers `list` with the page the store listed (checked by `sweep`:
    /// at most the limit, each `{ executionId, head, ended }`).
    #[wasm_bindgen(js_name = handlePage)]
    pub fn handle_page(&mut self, page: Vec<JsValue>) -> Result<(), JsValue> {
        if page.len() > self.page_limit as usize {
            return Err(unconvertible());
        }
        let page = page
            .iter()
            .map(retention::summary)
            .collect::<Option<_>>()
            .ok_or_else(unconvertible)?;
        self.machine
            .handle_page(page)
            .map_err(|e| machine_error(&e))
    }

    /// Answers `readLog` with the whole log (`readRange(executionId, 1)`,
    /// checked by `sweep` to run from sequence 1, contiguous) and the
    /// parents the host knows wait on the execution besides the one its log
    /// records.
    #[wasm_bindgen(js_name = handleLog)]
    pub fn handle_log(
        &mut self,
        events: JsValue,
        known_parents: Vec<String>,
    ) -> Result<(), JsValue> {
        let events = envelopes("readRange() result", STORE_CONTRACT, &events)?;
        let known = known_parents
            .iter()
            .map(|id| ExecutionId::try_from(id.as_str()).map_err(|e| js_errors::id(&e)))
            .collect::<Result<Vec<_>, _>>()?;
        self.machine
            .handle_log(events, known)
            .map_err(|e| machine_error(&e))
    }

    /// Answers `readParent` with the parent's whole log (empty: no log).
    #[wasm_bindgen(js_name = handleParent)]
    pub fn handle_parent(&mut self, events: JsValue) -> Result<(), JsValue> {
        let events = envelopes("readRange() result", STORE_CONTRACT, &events)?;
        self.machine
            .handle_parent(events)
            .map_err(|e| machine_error(&e))
    }

    /// Answers `readLog` or `readParent` when the store cannot read that
    /// log for good (it threw with `retryable: false`), `detail` saying
    /// why: the child is kept, reported undecided, and the sweep goes on.
    #[wasm_bindgen(js_name = handleUnreadable)]
    pub fn handle_unreadable(&mut self, detail: String) -> Result<(), JsValue> {
        self.machine
            .handle_unreadable(detail)
            .map_err(|e| machine_error(&e))
    }

    /// Acknowledges `archive`: the log is durably archived.
    #[wasm_bindgen(js_name = handleArchived)]
    pub fn handle_archived(&mut self) -> Result<(), JsValue> {
        self.machine
            .handle_archived()
            .map_err(|e| machine_error(&e))
    }

    /// Answers `delete` with what `deleteExecutionIf` resolved to, which
    /// `sweep` checked against the guard it answers.
    #[wasm_bindgen(js_name = handleDeleted)]
    pub fn handle_deleted(&mut self, outcome: JsValue) -> Result<(), JsValue> {
        let outcome = if property(&outcome, "deleted")? == JsValue::TRUE {
            GuardedDelete::Deleted
        } else if property(&outcome, "logChanged")? == JsValue::TRUE {
            GuardedDelete::LogChanged {
                head: counter("head", &property(&outcome, "head")?).map_err(|_| unconvertible())?,
            }
        } else {
            GuardedDelete::ParentMoved {
                parent: answered_id(&property(&outcome, "parent")?)?,
            }
        };
        self.machine
            .handle_deleted(outcome)
            .map_err(|e| machine_error(&e))
    }
}
