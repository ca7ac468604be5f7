//! `loomfence timers`: the timer store of an existing store, as an
//! operator needs to see it: its live rows (plain wakes and re-drive rows,
//! each due, pending, or claimed by a node whose lease still runs), its
//! exhausted records (rows whose tries ran out, kept for recovery), and
//! the rows that do not read back.
//!
//! It only reads: the store is opened read-only (nothing is created,
//! migrated, dropped or removed; a store that needs a migration exits 2).
//! `--due`, `--redrive` and `--execution` are filters of
//! the store's own listing, applied before `--limit`. Exit codes: 0
//! listed; 1 a store that failed while read; 2 bad options (an invalid
//! `--execution` id, a `--limit` of 0, a store that is not a usable
//! loomfence store); 130 Ctrl-C.

mod args;
mod gather;
mod render;

pub(crate) use self::args::TimersArgs;

use std::process::ExitCode;

use loomfence_core::ExecutionId;

use self::gather::Filters;
use crate::clock::now_ms;
use crate::error::CliError;
use crate::interrupt::{self, until_interrupted};
use crate::operate::target::Target;

/// Checks the options, lists, prints; the exit code.
pub(crate) async fn command(args: TimersArgs) -> ExitCode {
    let (target, filters) = match validate(&args) {
        Ok(valid) => valid,
        Err(usage) => return usage.exit("timers failed"),
    };
    if let Some(note) = target.in_memory_note() {
        eprintln!("{note}");
    }
    let Some(ran) = until_interrupted(run(&target, filters)).await else {
        eprintln!("interrupted");
        return ExitCode::from(interrupt::EXIT_CODE);
    };
    let listing = match ran {
        Ok(listing) => listing,
        Err(failure) => return failure.exit("timers failed"),
    };
    if args.json {
        println!("{}", render::json(&listing));
    } else {
        print!("{}", render::human(&listing));
    }
    ExitCode::SUCCESS
}

/// The store and the filters, checked (exit 2 when refused).
fn validate(args: &TimersArgs) -> Result<(Target, Filters), CliError> {
    let target = Target::parse(&args.store, args.schema.clone())?;
    if args.limit == Some(0) {
        return Err(CliError::zero("limit"));
    }
    let execution = match &args.execution {
        None => None,
        Some(given) => Some(
            ExecutionId::new(given.as_str()).map_err(|e| CliError::bad_value("execution", &e))?,
        ),
    };
    Ok((
        target,
        Filters {
            due: args.due,
            redrive: args.redrive,
            execution,
            limit: args.limit,
        },
    ))
}

/// Opens the store and lists.
async fn run(target: &Target, filters: Filters) -> Result<gather::Listing, CliError> {
    let store = target.open().await?;
    gather::gather(&store, target.shown(), filters, now_ms()).await
}
