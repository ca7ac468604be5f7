//! `loomfence recover`'s options, as clap reads them.

use clap::Args;

/// `loomfence recover`'s options.
#[derive(Debug, Args)]
pub(crate) struct RecoverArgs {
    /// The existing store: `sqlite:PATH` (an existing loomfence SQLite
    /// file) or `postgres:URL` (a server whose schema, --schema, holds a
    /// loomfence store). Nothing is created.
    #[arg(long, value_name = "STORE")]
    pub(crate) store: String,
    /// The PostgreSQL schema holding the store; only with --store
    /// postgres:…. Default: the adapter's default schema, `loomfence`.
    #[arg(long, value_name = "NAME")]
    pub(crate) schema: Option<String>,
    /// The executions to recover. Each exhausted record of one is
    /// recovered; one with no record is re-driven through the re-drivers
    /// all the same (an operator may know better than the chain).
    #[arg(value_name = "ID", required_unless_present = "exhausted")]
    pub(crate) ids: Vec<String>,
    /// Recover every execution with an exhausted record, instead of
    /// naming them.
    #[arg(long, conflicts_with = "ids")]
    pub(crate) exhausted: bool,
    /// Print exactly one JSON object on stdout instead of the lines:
    /// store, recovered (a list of {executionId, wakeAt (the record's, or
    /// null), redrive (whether the record was a re-drive chain), outcome:
    /// resumed | notParked | contendedAgain | noRedriver, next (the row
    /// handed to the timer services, or null)}), and counts {resumed,
    /// notParked, contendedAgain}.
    #[arg(long)]
    pub(crate) json: bool,
}
