//! `loomfence inspect`: one execution of an existing store, as an
//! operator needs to see it: its log (each event's kind, class and token),
//! its current token and status, its open park's waits and which can answer
//! it now, its timer and re-drive rows with their claims, its exhausted
//! records, its inbox, the store's feed head, its parent and children, and
//! what a retention sweep would do with it.
//!
//! It only reads: the store is opened read-only (nothing is created,
//! migrated, dropped or removed; a store that needs a migration exits 2). Exit codes: 0 shown; 1 no
//! execution with that id (an empty log), or a store that failed while
//! read; 2 bad options (an id that is not a valid execution id, a store
//! that is not a usable loomfence store); 130 Ctrl-C.
//!
//! The job is split: [`gather`] reads and judges, [`human`] and [`json`]
//! print.

mod args;
mod gather;
mod human;
mod json;

pub(crate) use self::args::InspectArgs;

use std::process::ExitCode;

use loomfence_core::log::is_answering;
use loomfence_core::{Envelope, ExecutionId, Status};

use self::gather::Verdict;
use crate::clock::now_ms;
use crate::error::CliError;
use crate::interrupt::{self, until_interrupted};
use crate::operate::target::Target;
use crate::operate::when;

/// Checks the options, reads the execution, prints it; the exit code.
pub(crate) async fn command(args: InspectArgs) -> ExitCode {
    let (target, id) = match validate(&args) {
        Ok(valid) => valid,
        Err(usage) => return usage.exit("inspect failed"),
    };
    if let Some(note) = target.in_memory_note() {
        eprintln!("{note}");
    }
    let Some(ran) = until_interrupted(run(&target, id)).await else {
        eprintln!("interrupted");
        return ExitCode::from(interrupt::EXIT_CODE);
    };
    let inspection = match ran {
        Ok(inspection) => inspection,
        Err(failure) => return failure.exit("inspect failed"),
    };
    if args.json {
        println!("{}", json::render(&inspection));
    } else {
        print!("{}", human::render(&inspection));
    }
    ExitCode::SUCCESS
}

/// The store and the id, checked (exit 2 when refused).
fn validate(args: &InspectArgs) -> Result<(Target, ExecutionId), CliError> {
    let target = Target::parse(&args.store, args.schema.clone())?;
    let id = ExecutionId::new(args.id.as_str()).map_err(|e| CliError::BadId {
        given: args.id.clone(),
        reason: e.to_string(),
    })?;
    Ok((target, id))
}

/// Opens the store and reads the execution.
async fn run(target: &Target, id: ExecutionId) -> Result<gather::Inspection, CliError> {
    let store = target.open().await?;
    gather::gather(&store, target.shown(), id, now_ms()).await
}

/// A status as output names it.
pub(crate) fn status_name(status: Status) -> &'static str {
    match status {
        Status::Pending => "pending",
        Status::Running => "running",
        Status::Parked => "parked",
        Status::Terminal(end) => end.as_str(),
        _ => "unknown",
    }
}

/// An event's class: a kernel kind this loomfence knows (`kernel`), a kind
/// it does not know that its writer stamped as the kernel's
/// (`kernel-stamped`: it counts as answering), or an application event.
pub(crate) fn class_name(event: &Envelope) -> &'static str {
    if event.kernel_kind().is_some() {
        "kernel"
    } else if is_answering(&event.kind, &event.metadata) {
        "kernel-stamped"
    } else {
        "application"
    }
}

/// The retention verdict in words.
pub(crate) fn verdict_reason(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Kept { status } => format!(
            "kept: it has not ended ({}); a sweep skips it",
            status_name(*status)
        ),
        Verdict::Pinned { ended_at, parent } => format!(
            "pinned: it ended at {}, and its parent {parent} is parked waiting on it; a sweep keeps it",
            when::at(*ended_at)
        ),
        Verdict::Eligible { ended_at } => format!(
            "eligible: it ended at {} and no parent waits on it; a sweep deletes it once its --older-than cutoff is after that",
            when::at(*ended_at)
        ),
        Verdict::Undecided { ended_at, reason } => format!(
            "undecided: it ended at {}, but {reason}; a sweep keeps it and names it",
            when::at(*ended_at)
        ),
    }
}
