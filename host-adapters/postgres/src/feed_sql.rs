//! The SQL of the change feed: the two columns every event carries, the
//! open-parks index, the deleted-head table, and the reads.
//!
//! A cursor is `(txid, feed_seq)`: the committing transaction's id (as
//! `xid8`, which never wraps) and a per-event number from a sequence. A
//! read lists only rows whose transaction is below the snapshot's `xmin`,
//! the oldest transaction still running: every transaction below it has
//! finished, so no row can later appear at or before a cursor handed out.
//! A bare sequence (`bigserial`) is not enough: its numbers are taken at
//! insert and become visible at commit, so a transaction holding number 5
//! can commit after one holding 6 was read, and a follower past 6 skips 5.
//! Commit timestamps have the same hole (a commit can be stamped before an
//! earlier-stamped one is visible) and need `track_commit_timestamp`.
//!
//! One execution's events come in sequence order because every event is
//! written by the append function, in a transaction of its own that takes
//! the execution's advisory lock before it is given a transaction id (an
//! advisory lock assigns none; the insert does): of two appends to one
//! execution, the later one's transaction id is the greater. A transaction
//! that wrote anything before appending could hold a smaller id than an
//! append that committed while it waited for the lock, and its event would
//! be listed first; no path of this adapter does that.
//!
//! The price: one transaction that holds an id for long (anywhere in the
//! cluster, an idle-in-transaction session included) holds the feed at its
//! start until it ends. Nothing is lost meanwhile, only delayed.
//!
//! Events written before the columns existed have neither and are not in
//! the feed: the feed starts at the migration that added them. What a
//! follower needs of the time before (which executions are parked) it reads
//! from the open-parks index, which that migration fills from the logs.

use crate::config::Schema;
use crate::sql_parts::answering;

/// The index the feed reads through, inside the schema.
pub(crate) const FEED_INDEX: &str = "events_feed";

/// The ledger row that marks the open-parks backfill as done.
pub(crate) const OPEN_PARKS_MARKER: &str = "open-parks-backfill";

/// The snapshot's horizon: every transaction below it has finished.
const HORIZON: &str = "pg_snapshot_xmin(pg_current_snapshot())";

/// The tables and the sequence of the feed, beside `events`. Idempotent,
/// and none of them touches `events`.
pub(crate) fn feed_ddl(schema: &Schema) -> Vec<String> {
    let s = schema.as_str();
    vec![
        format!("CREATE SEQUENCE IF NOT EXISTS {s}.feed_seq"),
        // One row per execution whose last answering event is a park,
        // kept by the appends (see `loomfence_core::feed::park_change`).
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.open_parks ( \
               execution_id text PRIMARY KEY, park_seq bigint NOT NULL)"
        ),
        // The cursors of deleted events that a head may have named: the
        // head is read from the rows that remain, and without these a
        // delete of the newest log would move it back.
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.feed_high ( \
               txid xid8 PRIMARY KEY, feed_seq bigint NOT NULL)"
        ),
    ]
}

/// The columns, added without a default so that adding them rewrites
/// nothing (a volatile default would fill every existing row).
pub(crate) fn add_columns(schema: &Schema) -> String {
    format!(
        "ALTER TABLE {schema}.events ADD COLUMN IF NOT EXISTS txid xid8, \
         ADD COLUMN IF NOT EXISTS feed_seq bigint"
    )
}

/// The defaults every later insert takes: a catalog change only, old rows
/// keep their nulls. A separate statement from [`add_columns`], which is
/// what keeps that one from filling the table.
pub(crate) fn set_defaults(schema: &Schema) -> String {
    format!(
        "ALTER TABLE {schema}.events ALTER COLUMN txid SET DEFAULT pg_current_xact_id(), \
         ALTER COLUMN feed_seq SET DEFAULT nextval('{schema}.feed_seq')"
    )
}

/// The statement that creates [`FEED_INDEX`]; `concurrently` builds it
/// without blocking appends (outside any transaction). Rows written before
/// the feed (null `txid`) are left out: they are never read through it.
pub(crate) fn feed_index_ddl(schema: &Schema, concurrently: bool) -> String {
    let how = if concurrently { " CONCURRENTLY" } else { "" };
    format!(
        "CREATE INDEX{how} IF NOT EXISTS {FEED_INDEX} ON {schema}.events (txid, feed_seq) \
         WHERE txid IS NOT NULL"
    )
}

/// A feed page: `$1` the cursor's epoch (the `xid8` as `bigint`), `$2` its
/// position, `$3` the limit. Only rows below the horizon, so the last
/// cursor of a page has nothing unlisted before it, ever.
pub(crate) fn read(schema: &Schema) -> String {
    format!(
        "SELECT txid::text::int8, feed_seq, execution_id, sequence, kind, payload, metadata, at \
         FROM {schema}.events \
         WHERE txid IS NOT NULL AND (txid, feed_seq) > ($1::int8::text::xid8, $2::int8) \
           AND txid < {HORIZON} \
         ORDER BY txid, feed_seq LIMIT $3"
    )
}

/// [`read`] without the horizon: the order a bare sequence would give.
/// Test-only, to show the horizon is what stops the skip.
#[cfg(feature = "unsafe-test-hooks")]
pub(crate) fn read_without_horizon(schema: &Schema) -> String {
    read(schema).replace(&format!("AND txid < {HORIZON}"), "")
}

/// The head: the greatest cursor below the horizon, of the events that
/// remain and of the deleted ones kept in `feed_high`, both read in one
/// snapshot. No row: the feed is empty.
pub(crate) fn head(schema: &Schema) -> String {
    let s = schema.as_str();
    let newest = |table: &str| {
        format!(
            "(SELECT txid, feed_seq FROM {s}.{table} \
              WHERE txid IS NOT NULL AND txid < {HORIZON} \
              ORDER BY txid DESC, feed_seq DESC LIMIT 1)"
        )
    };
    format!(
        "SELECT h.txid::text::int8, h.feed_seq FROM ({} UNION ALL {}) h \
         ORDER BY h.txid DESC, h.feed_seq DESC LIMIT 1",
        newest("events"),
        newest("feed_high"),
    )
}

/// The newest transaction that wrote an event this snapshot sees but no
/// read may list yet (it is at or above the horizon: an older transaction
/// is still running), or null. A hint for [`SETTLED`], read through the
/// top of the feed's index.
pub(crate) fn pending(schema: &Schema) -> String {
    let s = schema.as_str();
    format!(
        "SELECT GREATEST( \
           (SELECT max(txid) FROM {s}.events WHERE txid >= {HORIZON}), \
           (SELECT max(txid) FROM {s}.feed_high WHERE txid >= {HORIZON}))::text::int8"
    )
}

/// Whether the horizon has passed transaction `$1`: every transaction
/// that could commit an event before it has finished.
pub(crate) const SETTLED: &str =
    "SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::int8::text::xid8";

/// A page of open parks: `$1` the exclusive lower bound (`''` for the
/// first page, as in the retention listing), `$2` the limit. In the
/// `execution_id` column's collation, the primary key's order.
pub(crate) fn open_parks(schema: &Schema) -> String {
    format!(
        "SELECT execution_id FROM {schema}.open_parks WHERE execution_id > $1 \
         ORDER BY execution_id LIMIT $2"
    )
}

/// The append's upkeep of the open parks, as two CTEs of its one
/// statement: `p_opens` (the batch's park, as an offset from the head) or
/// `p_closes`, the Rust side's `park_change`, applied only when the batch
/// is written (`written` is the insert's own condition).
pub(crate) fn append_upkeep(s: &str, written: &str) -> String {
    format!(
        "opened AS (INSERT INTO {s}.open_parks (execution_id, park_seq) \
                    SELECT p_id, head.head + p_opens FROM head, verdict \
                    WHERE p_opens IS NOT NULL AND {written} \
                    ON CONFLICT (execution_id) DO UPDATE SET park_seq = EXCLUDED.park_seq), \
         closed AS (DELETE FROM {s}.open_parks o USING verdict \
                    WHERE o.execution_id = p_id AND p_closes AND {written}), "
    )
}

/// The delete's part of the feed, for the executions whose id `ids`
/// matches (`= p_id` for one): deletes their logs (counting the
/// rows into `v_deleted`), keeps in `feed_high` what a head may have named
/// of it, drops its open park, and prunes `feed_high`.
///
/// Kept: the greatest deleted cursor below this statement's horizon (every
/// later reader's horizon is at least as high, so it stands for all those
/// rows), and for each transaction at or above it its greatest one (a
/// later reader below that transaction must not see a head above it).
/// Pruned: every row below the greatest one under the horizon, which every
/// later head reaches anyway; `SKIP LOCKED`, so two deletes never wait on
/// each other's pruning.
pub(crate) fn delete_upkeep(s: &str, ids: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM {s}.events e WHERE e.execution_id {ids} \
                       RETURNING e.txid, e.feed_seq), \
              horizon AS (SELECT {HORIZON} AS xmin), \
              kept AS (INSERT INTO {s}.feed_high AS k (txid, feed_seq) \
                       SELECT g.txid, max(g.feed_seq) FROM gone g, horizon h \
                       WHERE g.txid >= h.xmin GROUP BY g.txid \
                       UNION ALL \
                       (SELECT g.txid, g.feed_seq FROM gone g, horizon h \
                        WHERE g.txid < h.xmin ORDER BY g.txid DESC, g.feed_seq DESC LIMIT 1) \
                       ON CONFLICT (txid) DO UPDATE SET feed_seq = GREATEST(k.feed_seq, EXCLUDED.feed_seq)) \
         SELECT count(*) INTO v_deleted FROM gone; \
         DELETE FROM {s}.open_parks o WHERE o.execution_id {ids}; \
         DELETE FROM {s}.feed_high k WHERE k.ctid IN ( \
           SELECT x.ctid FROM {s}.feed_high x \
           WHERE (x.txid, x.feed_seq) < (SELECT m.txid, m.feed_seq FROM {s}.feed_high m \
                                          WHERE m.txid < {HORIZON} \
                                          ORDER BY m.txid DESC, m.feed_seq DESC LIMIT 1) \
           FOR UPDATE SKIP LOCKED);"
    )
}

/// The one-time backfill of the open parks from the logs: every execution
/// whose last answering event is a park. Parameters: `$1` the park kind,
/// `$2` the answering kernel kinds, `$3` every kernel kind (the same
/// answering test as the conditional statements).
pub(crate) fn backfill_open_parks(schema: &Schema) -> String {
    let s = schema.as_str();
    format!(
        "INSERT INTO {s}.open_parks (execution_id, park_seq) \
         SELECT a.execution_id, a.sequence FROM ( \
           SELECT DISTINCT ON (e.execution_id) e.execution_id, e.sequence, e.kind \
           FROM {s}.events e WHERE {answering} \
           ORDER BY e.execution_id, e.sequence DESC) a \
         WHERE a.kind = $1 \
         ON CONFLICT DO NOTHING",
        answering = answering("$2::text[]", "$3::text[]"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_read_is_bounded_by_the_horizon() {
        let schema = Schema::new("loomfence").expect("valid");
        assert!(read(&schema).contains(HORIZON));
        assert_eq!(head(&schema).matches(HORIZON).count(), 2);
    }

    #[test]
    fn the_columns_are_added_without_a_default() {
        let schema = Schema::new("loomfence").expect("valid");
        assert!(!add_columns(&schema).contains("DEFAULT"));
    }
}
