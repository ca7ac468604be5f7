//! `loomfence timers`'s options, as clap reads them.

use clap::Args;

/// `loomfence timers`'s options.
#[derive(Debug, Args)]
pub(crate) struct TimersArgs {
    /// The existing store: `sqlite:PATH` (an existing loomfence SQLite
    /// file; a missing one is refused, never created) or `postgres:URL`
    /// (a server whose schema, --schema, holds a loomfence store). Only
    /// read. `memory` and `sqlite::memory:` are a new, empty store.
    #[arg(long, value_name = "STORE")]
    pub(crate) store: String,
    /// The PostgreSQL schema holding the store; only with --store
    /// postgres:…. Default: the adapter's default schema, `loomfence`.
    #[arg(long, value_name = "NAME")]
    pub(crate) schema: Option<String>,
    /// Only rows due now (wake time at or before now). Exhausted records
    /// are retired rows, never due: they are listed as without it.
    #[arg(long)]
    pub(crate) due: bool,
    /// Only re-drive rows (and exhausted records of re-drive rows).
    #[arg(long)]
    pub(crate) redrive: bool,
    /// Only this execution's rows and records.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    pub(crate) execution: Option<String>,
    /// At most N rows, and at most N exhausted records (the filters apply
    /// first); default: all.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// Print exactly one JSON object on stdout instead of the text: store,
    /// now (ms), filters {due, redrive, execution, limit}, rows
    /// [{executionId, wakeAt, dueInMs, redrive, attempt, state (due,
    /// pending, claimed), claim ({holder, number, expiresAt, current} or
    /// null)}], exhausted [{executionId, wakeAt, redrive, attempt,
    /// attempts, at}], unreadable [{executionId, wakeAt, field, detail}],
    /// counts {rows, due, pending, claimed, exhausted, unreadable},
    /// truncated {rows, exhausted} (whether --limit cut the list).
    #[arg(long)]
    pub(crate) json: bool,
}
