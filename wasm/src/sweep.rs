//! `SweepMachine`: the core's retention sweep, sans-IO, for the package's
//! `sweep` (`npm/retention.js`) to pump. Internal to the package: the glue
//! exports it, the entries do not.
//!
//! `sweep` polls it for the next action as a plain object, performs it
//! against the store and feeds the answer back through the matching
//! `handle*` method, or the failure through `handleFailed`, until a poll
//! answers `{ done: report }` (children it cannot judge are in
//! `report.undecided`, not an error). Every decision (the options, the
//! eligibility, the pin, the guard, what a store's answer must be and what
//! a failure means) is the core's `SweepMachine`; this module only converts.
//! A store answer that does not convert, or that the core refuses, is an
//! `InputError` `STORE_CONTRACT` (the core's message for the core's
//! refusals); an answer out of turn is `UNEXPECTED_ANSWER`. Either way the
//! machine is left as it was.

use js_sys::Array;
use loomfence_core::{
    ContractError, ExecutionId, InputError,
    retention::{
        GuardedDelete, MAX_DELETE_BATCH, MAX_GUARD_PARENTS, MAX_PAGE_LIMIT, SweepAction,
        SweepFailure, SweepFailureVerdict, SweepMachine, SweepOptions, SweepPoll,
    },
};
use wasm_bindgen::prelude::*;

use crate::events::envelopes;
use crate::host_store::{STORE_CONTRACT, contract};
use crate::js_errors::{self, INVALID_LIMIT};
use crate::out::{self, Out};
use crate::retention_values::{self as retention, guard_js, report_js};
use crate::values::{self, counter, property};

/// One retention sweep.
#[wasm_bindgen(js_name = SweepMachine)]
#[derive(Debug)]
pub struct SweepMachineJs {
    /// The core's machine.
    machine: SweepMachine,
}

/// The `code` of an answer that does not answer what was asked: out of
/// turn, or a host callback's answer of the wrong shape.
const UNEXPECTED_ANSWER: &str = "UNEXPECTED_ANSWER";

/// A driver's answer the machine refused: out of turn, or a store's answer
/// outside the interface, with the core's message (which names the ids).
fn machine_error(error: &ContractError) -> JsValue {
    match error {
        ContractError::UnexpectedInput { .. } => js_errors::invalid(
            "the answer does not answer the pending action",
            UNEXPECTED_ANSWER,
        ),
        _ => contract(&error.to_string()),
    }
}

/// The one refusal of a store answer that does not convert.
fn unconvertible() -> JsValue {
    contract("the store answered outside the interface")
}

/// The options' page limit: `undefined` is the core's default; anything
/// but an integer is `INVALID_LIMIT` (its bounds are the core's check).
fn page_limit(value: &JsValue) -> Result<u32, JsValue> {
    if value.is_undefined() {
        return Ok(SweepOptions::DEFAULT_PAGE_LIMIT);
    }
    match value.as_f64() {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(n) if n.fract() == 0.0 => Ok(n.clamp(0.0, f64::from(u32::MAX)) as u32),
        _ => Err(js_errors::invalid(
            "options.pageLimit must be an integer",
            INVALID_LIMIT,
        )),
    }
}

/// What the host's `knownParents` answered for each log of a read:
/// `undefined` when it has no `knownParents`, else one answer per log.
fn known_parents_of(value: &JsValue, logs: usize) -> Result<Vec<Vec<ExecutionId>>, JsValue> {
    if value.is_undefined() {
        return Ok(Vec::new());
    }
    let answers = values::list(value, logs).map_err(|_| unconvertible())?;
    answers
        .iter()
        .map(|answer| known_parents(&answer))
        .collect()
}

/// The parents a host's `knownParents` answered: nothing (`undefined`,
/// `null`) or an array of execution ids, else `UNEXPECTED_ANSWER`.
fn known_parents(value: &JsValue) -> Result<Vec<ExecutionId>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(Vec::new());
    }
    let wrong = || {
        js_errors::invalid(
            "options.knownParents must return an array of execution ids",
            UNEXPECTED_ANSWER,
        )
    };
    let parents = values::list(value, MAX_GUARD_PARENTS).map_err(|_| wrong())?;
    parents
        .iter()
        .map(|id| values::answered_id(&id).ok_or_else(wrong))
        .collect()
}

/// A batched read's logs: an array of arrays of envelopes, one per id
/// asked (the machine checks the count and each log).
fn logs(value: &JsValue) -> Result<Vec<Vec<loomfence_core::Envelope>>, JsValue> {
    let logs = values::list(value, MAX_PAGE_LIMIT as usize).map_err(|_| unconvertible())?;
    logs.iter()
        .map(|log| envelopes("readLogs() result", STORE_CONTRACT, &log))
        .collect()
}

/// A batch of guarded deletes' answers: an array of outcomes, one per
/// entry.
fn outcomes(value: &JsValue) -> Result<Vec<GuardedDelete>, JsValue> {
    let outcomes = values::list(value, MAX_DELETE_BATCH).map_err(|_| unconvertible())?;
    outcomes
        .iter()
        .map(|outcome| self::outcome(&outcome))
        .collect()
}

/// A guarded delete's answer: an object with exactly one of `deleted`,
/// `logChanged` (with `head`) and `parentMoved` (with `parent`), and that
/// one exactly `true`.
fn outcome(value: &JsValue) -> Result<GuardedDelete, JsValue> {
    let flag = |key| property(value, key).map_err(|_| unconvertible());
    let flags = [flag("deleted")?, flag("logChanged")?, flag("parentMoved")?];
    let set: Vec<usize> = (0..3).filter(|&i| !flags[i].is_undefined()).collect();
    if !value.is_object() || set.len() != 1 || flags[set[0]] != JsValue::TRUE {
        return Err(unconvertible());
    }
    Ok(match set[0] {
        0 => GuardedDelete::Deleted,
        1 => GuardedDelete::LogChanged {
            head: counter("head", &flag("head")?).map_err(|_| unconvertible())?,
        },
        _ => GuardedDelete::ParentMoved {
            parent: answered_id(&flag("parent")?)?,
        },
    })
}

/// An execution id in a store's answer.
fn answered_id(value: &JsValue) -> Result<ExecutionId, JsValue> {
    values::answered_id(value).ok_or_else(unconvertible)
}

/// An action as a plain object `{ act, … }`.
fn action_js(action: &SweepAction) -> JsValue {
    let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
    let id = |id: &ExecutionId| JsValue::from_str(id.as_str());
    let ids = |ids: &[ExecutionId]| ids.iter().map(id).collect::<Array>();
    match action {
        SweepAction::List { after, limit } => act("list")
            .set("after", &after.as_ref().map_or(JsValue::NULL, id))
            .number("limit", (*limit).into()),
        SweepAction::ReadLogs { execution_ids } => {
            act("readLogs").set("executionIds", &ids(execution_ids))
        }
        SweepAction::ReadParents { parents } => act("readParents").set("parents", &ids(parents)),
        SweepAction::Archive { logs } => act("archive").set(
            "logs",
            &logs
                .iter()
                .map(|log| {
                    Out::new()
                        .set("executionId", &id(&log.execution_id))
                        .set("events", &out::envelopes(&log.events))
                        .done()
                })
                .collect::<Array>(),
        ),
        SweepAction::Delete { batch } => act("delete").set(
            "batch",
            &batch
                .iter()
                .map(|entry| {
                    Out::new()
                        .set("executionId", &id(&entry.execution_id))
                        .set("guard", &guard_js(&entry.guard))
                        .done()
                })
                .collect::<Array>(),
        ),
        // A newer core's action: the driver's `default` branch reports it.
        _ => act("unknown"),
    }
    .done()
}

#[wasm_bindgen(js_class = SweepMachine)]
impl SweepMachineJs {
    /// A sweep that has done nothing yet, of executions that ended before
    /// `endedBefore` (a safe integer, which `sweep` checked), listed
    /// `pageLimit` at a time (`undefined`: the core's default), archiving
    /// when `archive`. Options the core refuses are refused here, before
    /// anything is listed.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::cast_possible_truncation)]
    pub fn new(
        ended_before: f64,
        page_limit: &JsValue,
        archive: bool,
        dry_run: bool,
    ) -> Result<SweepMachineJs, JsValue> {
        let options = SweepOptions {
            page_limit: self::page_limit(page_limit)?,
            archive,
            dry_run,
            ..SweepOptions::new(ended_before as i64)
        };
        // `archive` is the host's archive itself: it never lacks one.
        options.check(archive).map_err(|refused| match refused {
            InputError::ArchiveWithoutSink => {
                js_errors::internal("an unknown refusal of the sweep's options")
            }
            input => js_errors::input(&input),
        })?;
        Ok(Self {
            machine: SweepMachine::new(options),
        })
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

    /// Answers `list` with the page the store listed: an array of
    /// `{ executionId, head, ended }`.
    #[wasm_bindgen(js_name = handlePage)]
    pub fn handle_page(&mut self, page: &JsValue) -> Result<(), JsValue> {
        let page = values::list(page, MAX_PAGE_LIMIT as usize).map_err(|_| unconvertible())?;
        let page = page
            .iter()
            .map(|summary| retention::summary(&summary))
            .collect::<Option<_>>()
            .ok_or_else(unconvertible)?;
        self.machine
            .handle_page(page)
            .map_err(|e| machine_error(&e))
    }

    /// Answers `readLogs` with each log (`readRange(executionId, 1)` for
    /// each id, in order) and, when the host has `knownParents`, what it
    /// answered for each id (the parents it knows wait on the execution
    /// besides the one its log records); `undefined` when it has none.
    #[wasm_bindgen(js_name = handleLogs)]
    pub fn handle_logs(&mut self, logs: &JsValue, known_parents: &JsValue) -> Result<(), JsValue> {
        let logs = self::logs(logs)?;
        let known = known_parents_of(known_parents, logs.len())?;
        self.machine
            .handle_logs(logs, known)
            .map_err(|e| machine_error(&e))
    }

    /// Answers `readParents` with each parent's whole log, in order (empty:
    /// no log).
    #[wasm_bindgen(js_name = handleParents)]
    pub fn handle_parents(&mut self, logs: &JsValue) -> Result<(), JsValue> {
        let logs = self::logs(logs)?;
        self.machine
            .handle_parents(logs)
            .map_err(|e| machine_error(&e))
    }

    /// Answers any action that failed: `detail` is the error's message
    /// when the host says it cannot succeed for good (it threw with
    /// `retryable: false`), `undefined` when it may pass. `true`: the child
    /// at hand is kept, reported undecided, and the sweep goes on; `false`:
    /// end the sweep with the error.
    #[wasm_bindgen(js_name = handleFailed)]
    pub fn handle_failed(&mut self, detail: Option<String>) -> Result<bool, JsValue> {
        let failure = detail.map_or(SweepFailure::MayPass, |detail| SweepFailure::ForGood {
            detail,
        });
        self.machine
            .handle_failed(failure)
            .map(|verdict| verdict == SweepFailureVerdict::GoOn)
            .map_err(|e| machine_error(&e))
    }

    /// Acknowledges `archive`: every log of it is durably archived.
    #[wasm_bindgen(js_name = handleArchived)]
    pub fn handle_archived(&mut self) -> Result<(), JsValue> {
        self.machine
            .handle_archived()
            .map_err(|e| machine_error(&e))
    }

    /// Answers `delete` with one outcome per entry of its batch, in order
    /// (what `deleteExecutionIf` resolved to for each).
    #[wasm_bindgen(js_name = handleDeleted)]
    pub fn handle_deleted(&mut self, outcomes: &JsValue) -> Result<(), JsValue> {
        let outcomes = self::outcomes(outcomes)?;
        self.machine
            .handle_deleted(outcomes)
            .map_err(|e| machine_error(&e))
    }
}
