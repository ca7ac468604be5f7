//! `loomfence inspect`'s options, as clap reads them.

use clap::Args;

/// `loomfence inspect`'s options.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
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
    /// The execution to show.
    #[arg(value_name = "ID", allow_hyphen_values = true)]
    pub(crate) id: String,
    /// Print exactly one JSON object on stdout instead of the text:
    /// store, executionId, now (ms), status (pending, running, parked,
    /// completed, failed, cancelled, continued), head, fence (the current
    /// token), events [{sequence, kind, class (kernel, kernel-stamped,
    /// application), answering, fence (the token it was written under,
    /// null for none, "unreadable"), at}], openPark (null, or {sequence,
    /// fence, waits [{kind (child, group, timer, message), child |
    /// children [{id, ended, status}] | wakeAt | channel, pending (message
    /// waits: pending messages on the channel), answerable}], error (when
    /// its waits do not read)}), timers {rows [{executionId, wakeAt,
    /// dueInMs, redrive, attempt, state (due, pending, claimed), claim
    /// ({holder, number, expiresAt, current} or null)}], exhausted
    /// [{executionId, wakeAt, redrive, attempt, attempts, at}], unreadable
    /// [{executionId, wakeAt, field, detail}]}, inbox [{channel,
    /// messageId, arrival, sentAt, consumed}], feed ({supported, head
    /// "EPOCH.POSITION", epoch, position}: the store's cursor, not the
    /// execution's), parent (null for a root), parentError, children
    /// {parked (named by any park in its log), waitedOn (named by its open
    /// park)}, retention {verdict (kept, pinned, eligible, undecided),
    /// reason, pinnedBy, endedAt}.
    #[arg(long)]
    pub(crate) json: bool,
}
