//! `loomfence retention`'s options, as clap reads them.

use std::path::PathBuf;

use clap::Args;

/// `loomfence retention`'s options.
#[derive(Debug, Args)]
pub(crate) struct RetentionArgs {
    /// The existing store to sweep: `sqlite:PATH`, an existing loomfence
    /// SQLite file (a missing one is refused, never created);
    /// `postgres:URL`, a server whose schema (--schema) already holds a
    /// loomfence store (`loomfence init` makes either); both are migrated
    /// as their adapter does on open, except in a dry run, which opens them
    /// read-only and refuses one that would need a migration.
    /// `memory` and `sqlite::memory:` are accepted but are a new, empty
    /// store (nothing else can reach one): a smoke test of the command.
    #[arg(long, value_name = "STORE")]
    store: String,
    /// The PostgreSQL schema holding the store; only with --store
    /// postgres:…. Default: the adapter's default schema, `loomfence`.
    #[arg(long, value_name = "NAME")]
    schema: Option<String>,
    /// Sweep executions that ended more than this long ago: a duration
    /// such as 7d, 12h, 30m or 90s (units combine: `1d 12h`; w, M and y
    /// work too).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    older_than: String,
    /// Append each log to this JSON-lines file (created if missing, synced
    /// after each execution) before deleting it. Not opened in a dry run.
    #[arg(long, value_name = "FILE")]
    archive: Option<PathBuf>,
    /// Decide everything and change nothing: report what would be deleted
    /// (and pinned), delete and archive nothing.
    #[arg(long)]
    dry_run: bool,
    /// Executions per listing page, 1 to 10000.
    #[arg(long, value_name = "N", default_value_t = super::DEFAULT_PAGE_LIMIT)]
    page_limit: u32,
    /// Print exactly one JSON object on stdout instead of the summary:
    /// outcome (done, failed, interrupted, aborted), store, olderThan,
    /// endedBefore (ms), archive, dryRun, examined, eligible, skipped,
    /// deleted, archived, pinned {count, list of {child, parent}}, kept
    /// {count, list}, pages, logReads, parentReads, elapsedMs,
    /// examinedPerSecond, and error when it failed. A sweep that stopped
    /// early counts its last page as examined when it was listed, so its
    /// skipped includes the part of that page it had not reached.
    #[arg(long)]
    json: bool,
}

impl From<RetentionArgs> for super::RawRetention {
    fn from(args: RetentionArgs) -> Self {
        super::RawRetention {
            store: args.store,
            schema: args.schema,
            older_than: args.older_than,
            archive: args.archive,
            dry_run: args.dry_run,
            page_limit: args.page_limit,
            json: args.json,
        }
    }
}
