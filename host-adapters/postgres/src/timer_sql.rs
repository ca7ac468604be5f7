//! Every SQL statement the timer store sends, and the DDL of its table,
//! built once per schema.
//!
//! As in `sql.rs`, the schema name is the only text spliced in, and it is a
//! validated identifier; ids, times, holders and flags are bound
//! parameters.
//!
//! Rows are ordered by `(wake_at, execution_id COLLATE "C")`: `"C"` compares
//! bytes, which is how the core's `TimerTable` orders ids (`String`'s
//! `Ord`). The database's default collation (`en_US.UTF-8`, say) would put
//! `"B"` before `"a"` the other way round, and a page boundary would then
//! differ from the reference.

use loomfence_core::timer::{ExhaustedQuery, TimerQuery};
use tokio_postgres::types::ToSql;

use crate::config::Schema;

/// The table's name inside the schema.
pub(crate) const TABLE: &str = "timers";

/// The due scan's index, inside the schema.
pub(crate) const DUE_INDEX: &str = "timers_due";

/// The exhausted records' table, inside the schema.
pub(crate) const EXHAUSTED_TABLE: &str = "exhausted_timers";

/// The columns of [`EXHAUSTED_TABLE`]: a table of that name without one is
/// someone else's.
pub(crate) const EXHAUSTED_COLUMNS: [&str; 5] =
    ["execution_id", "wake_at", "redrive", "attempts", "at"];

/// The columns the older timer table lacks (design: the re-drive), with their
/// definitions: what `migrate` adds when `information_schema` says one is
/// missing. Each is nullable or has a constant default, so adding it is a
/// catalog change that rewrites no row.
pub(crate) const ADDED_COLUMNS: [(&str, &str); 4] = [
    ("redrive", "jsonb NULL"),
    ("holder", "text NULL"),
    ("lease_until", "bigint NULL"),
    ("claims", "bigint NOT NULL DEFAULT 0"),
];

/// The key columns every timers table has, old or new: without them the
/// table is not one this store can use.
pub(crate) const KEY_COLUMNS: [&str; 2] = ["execution_id", "wake_at"];

/// The table, for a schema that has none.
pub(crate) fn create_table(schema: &Schema) -> String {
    let added: String = ADDED_COLUMNS
        .iter()
        .map(|(name, definition)| format!(", {name} {definition}"))
        .collect();
    format!(
        "CREATE TABLE IF NOT EXISTS {schema}.{TABLE} ( \
           execution_id text NOT NULL, \
           wake_at bigint NOT NULL{added}, \
           PRIMARY KEY (execution_id, wake_at))"
    )
}

/// The `ALTER TABLE` that adds the `missing` columns (names from
/// [`ADDED_COLUMNS`]) in one statement, so one lock is taken once.
pub(crate) fn add_columns(schema: &Schema, missing: &[&str]) -> String {
    let adds: Vec<String> = ADDED_COLUMNS
        .iter()
        .filter(|(name, _)| missing.contains(name))
        .map(|(name, definition)| format!("ADD COLUMN {name} {definition}"))
        .collect();
    format!("ALTER TABLE {schema}.{TABLE} {}", adds.join(", "))
}

/// The exhausted records: a retired row's key and re-drive flag as the
/// `timers` table held them, the tries (`attempts`, a `u32`, so `bigint`)
/// and when the fire gave up. The id is `COLLATE "C"`, so the primary key
/// is in the byte order a listing reads (`execution_id, wake_at`), with no
/// index beside it.
pub(crate) fn create_exhausted_table(schema: &Schema) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {schema}.{EXHAUSTED_TABLE} ( \
           execution_id text COLLATE \"C\" NOT NULL, \
           wake_at bigint NOT NULL, \
           redrive jsonb NULL, \
           attempts bigint NOT NULL, \
           at bigint NOT NULL, \
           PRIMARY KEY (execution_id, wake_at))"
    )
}

/// The due scan's index, in the order every listing and claim reads.
pub(crate) fn create_index(schema: &Schema) -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS {DUE_INDEX} ON {schema}.{TABLE} \
         (wake_at, execution_id COLLATE \"C\")"
    )
}

/// The statements, for one schema.
#[derive(Debug)]
pub(crate) struct TimerSql {
    /// The upsert: `$1` id, `$2` wake_at, `$3` redrive (`jsonb`, null for a
    /// plain wake). Keeps a flag that is there, adds one that comes, ends
    /// any claim; the claim count stays, so an old claim stays void.
    pub(crate) schedule: String,
    /// Due rows, every kind: `$1` now, `$2` limit.
    pub(crate) due_all: String,
    /// Due plain wakes only (re-drive rows left out before the limit): `$1`
    /// now, `$2` limit.
    pub(crate) due_plain: String,
    /// The claim, every kind: `$1` now, `$2` holder, `$3` lease end, `$4`
    /// limit. Answers the claimed rows with their new claim count, then up
    /// to `$4` due free rows it left unclaimed as unreadable: columns
    /// `claimed`, `execution_id`, `wake_at`, `redrive::text`, `claims`.
    pub(crate) claim_all: String,
    /// The claim of plain wakes only, same parameters.
    pub(crate) claim_plain: String,
    /// Retires a row for its current claim: `$1` id, `$2` wake_at, `$3`
    /// holder, `$4` claim number.
    pub(crate) complete: String,
    /// Hands a row back for its current claim, same parameters.
    pub(crate) release: String,
    /// Retires a row for its current claim and upserts the next one, one
    /// statement: `$1`..`$4` as for `complete`, then the next row's `$5`
    /// id, `$6` wake_at, `$7` redrive. Answers one row, how many rows were
    /// retired (1: done; 0: not held, and nothing was written).
    pub(crate) reschedule: String,
    /// Retires a row for its current claim and records its exhaustion, one
    /// statement: `$1`..`$4` as for `complete`, then `$5` attempts, `$6`
    /// at. Answers one row, how many rows were retired (1: done; 0: not
    /// held, and nothing was recorded).
    pub(crate) exhaust: String,
    /// Removes an exhausted record: `$1` id, `$2` wake_at.
    pub(crate) clear_exhausted: String,
    /// `schema.timers`, for the listings built per query.
    timers: String,
    /// `schema.exhausted_timers`, likewise.
    exhausted_table: String,
}

impl TimerSql {
    /// Builds every statement for `schema`.
    pub(crate) fn new(schema: &Schema) -> Self {
        let t = format!("{schema}.{TABLE}");
        let e = format!("{schema}.{EXHAUSTED_TABLE}");
        let due = |plain: &str| {
            format!(
                "SELECT execution_id, wake_at, redrive FROM {t} \
                 WHERE wake_at <= $1{plain} \
                 ORDER BY wake_at, execution_id COLLATE \"C\" LIMIT $2"
            )
        };
        Self {
            schedule: format!(
                "INSERT INTO {t} AS t (execution_id, wake_at, redrive) VALUES ($1, $2, $3::jsonb) \
                 ON CONFLICT (execution_id, wake_at) DO UPDATE \
                 SET redrive = COALESCE(EXCLUDED.redrive, t.redrive), holder = NULL, lease_until = NULL"
            ),
            due_all: due(""),
            due_plain: due(" AND redrive IS NULL"),
            claim_all: claim(&t, ""),
            claim_plain: claim(&t, " AND {alias}.redrive IS NULL"),
            complete: format!(
                "DELETE FROM {t} \
                 WHERE execution_id = $1 AND wake_at = $2 AND holder = $3 AND claims = $4"
            ),
            release: format!(
                "UPDATE {t} SET holder = NULL, lease_until = NULL \
                 WHERE execution_id = $1 AND wake_at = $2 AND holder = $3 AND claims = $4"
            ),
            reschedule: reschedule(&t),
            exhaust: exhaust(&t, &e),
            clear_exhausted: format!("DELETE FROM {e} WHERE execution_id = $1 AND wake_at = $2"),
            timers: t,
            exhausted_table: e,
        }
    }

    /// The operator's listing of live rows for the filters `query` sets,
    /// with its parameters. Each filter present is a plain condition in
    /// both halves' `WHERE` (one statement text per combination of
    /// filters, each prepared once per connection), so the planner reads
    /// one execution's rows from the primary key and the rest from the due
    /// index, and every filter applies before the limit.
    ///
    /// The statement answers the page, up to the limit of rows that read
    /// back ([`listable`]) in due order, `readable` true; then up to the
    /// limit of rows in the same range that do not, `readable` false: all
    /// of them when the page is not full, else only those before its last
    /// row. Columns: `readable`, `execution_id`, `wake_at`,
    /// `redrive::text`, `holder`, `lease_until`, `claims`. The answer is
    /// unordered; the store sorts it.
    pub(crate) fn list(&self, query: &TimerQuery, limit: i64) -> (String, Vec<ListArg>) {
        let mut args = vec![ListArg::Int(limit)];
        let mut conditions: Vec<String> = Vec::new();
        if let Some(id) = &query.execution {
            args.push(ListArg::Text(id.as_str().to_owned()));
            conditions.push(format!("{{a}}.execution_id = ${}", args.len()));
        }
        if let Some(due_by) = query.due_by {
            args.push(ListArg::Int(due_by));
            conditions.push(format!("{{a}}.wake_at <= ${}", args.len()));
        }
        if query.redrive_only {
            conditions.push("{a}.redrive IS NOT NULL".to_owned());
        }
        if let Some((wake_at, id)) = &query.after {
            args.push(ListArg::Int(*wake_at));
            let at = args.len();
            args.push(ListArg::Text(id.as_str().to_owned()));
            let after = args.len();
            conditions.push(format!(
                "({{a}}.wake_at > ${at} OR ({{a}}.wake_at = ${at} \
                 AND {{a}}.execution_id COLLATE \"C\" > ${after}::text))"
            ));
        }
        let filter = |alias: &str| -> String {
            conditions
                .iter()
                .map(|condition| format!(" AND {}", condition.replace("{a}", alias)))
                .collect()
        };
        let t = &self.timers;
        let sql = format!(
            "WITH page AS (\
               SELECT p.execution_id, p.wake_at, p.redrive::text AS redrive, p.holder, \
                      p.lease_until, p.claims FROM {t} p \
               WHERE {listable_p}{filter_p} \
               ORDER BY p.wake_at, p.execution_id COLLATE \"C\" LIMIT $1), \
             last AS (\
               SELECT wake_at, execution_id FROM page \
               ORDER BY wake_at DESC, execution_id COLLATE \"C\" DESC LIMIT 1) \
             SELECT true AS readable, execution_id, wake_at, redrive, holder, lease_until, claims \
             FROM page \
             UNION ALL \
             (SELECT false, u.execution_id, u.wake_at, u.redrive::text, u.holder, u.lease_until, \
                     u.claims FROM {t} u \
              WHERE NOT {listable_u}{filter_u} \
                AND ((SELECT count(*) FROM page) < $1 OR EXISTS (SELECT 1 FROM last l \
                     WHERE u.wake_at < l.wake_at OR (u.wake_at = l.wake_at \
                       AND u.execution_id COLLATE \"C\" < l.execution_id COLLATE \"C\"))) \
              ORDER BY u.wake_at, u.execution_id COLLATE \"C\" LIMIT $1)",
            listable_p = listable("p"),
            listable_u = listable("u"),
            filter_p = filter("p"),
            filter_u = filter("u"),
        );
        (sql, args)
    }

    /// The exhausted records' listing for the filters `query` sets, with
    /// its parameters, in the primary key's order (`execution_id, wake_at`,
    /// ids as bytes): `$1` limit, then the execution and the `after` key.
    /// Columns: `execution_id`, `wake_at`, `redrive::text`, `attempts`,
    /// `at`.
    pub(crate) fn exhausted(&self, query: &ExhaustedQuery, limit: i64) -> (String, Vec<ListArg>) {
        let mut args = vec![ListArg::Int(limit)];
        let mut conditions = Vec::new();
        if let Some(id) = &query.execution {
            args.push(ListArg::Text(id.as_str().to_owned()));
            conditions.push(format!("execution_id = ${}", args.len()));
        }
        if let Some((id, wake_at)) = &query.after {
            args.push(ListArg::Text(id.as_str().to_owned()));
            let after = args.len();
            args.push(ListArg::Int(*wake_at));
            let at = args.len();
            conditions.push(format!(
                "(execution_id > ${after}::text OR (execution_id = ${after}::text AND wake_at > ${at}))"
            ));
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {} ", conditions.join(" AND "))
        };
        (
            format!(
                "SELECT execution_id, wake_at, redrive::text, attempts, at FROM {} \
                 {filter}ORDER BY execution_id, wake_at LIMIT $1",
                self.exhausted_table
            ),
            args,
        )
    }
}

/// One parameter of a listing built per query.
#[derive(Debug)]
pub(crate) enum ListArg {
    /// An id.
    Text(String),
    /// A time or a limit.
    Int(i64),
}

impl ListArg {
    /// As a parameter.
    pub(crate) fn as_param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Self::Text(text) => text,
            Self::Int(n) => n,
        }
    }
}

/// Whether row `{alias}` reads back for the operator's listing: as a claim
/// reads it ([`readable`]), and with a claim that reads back too: no
/// holder, or a holder of 1 to 255 bytes (a node id; text holds no NUL)
/// with a lease end.
fn listable(alias: &str) -> String {
    format!(
        "({readable} AND ({alias}.holder IS NULL OR \
           (octet_length({alias}.holder) BETWEEN 1 AND {max_id} AND {alias}.lease_until IS NOT NULL)))",
        readable = readable(alias),
        max_id = loomfence_core::log::MAX_ID_BYTES,
    )
}

/// The exhaustion: the claimed row's `DELETE` and the record's upsert in
/// one statement, the upsert reading the row (its flag as stored) from what
/// the `DELETE` returned, so it records only when the claim was current,
/// on one snapshot, committed together, as [`reschedule`] does.
fn exhaust(t: &str, e: &str) -> String {
    format!(
        "WITH retired AS (\
             DELETE FROM {t} \
             WHERE execution_id = $1 AND wake_at = $2 AND holder = $3 AND claims = $4 \
             RETURNING execution_id, wake_at, redrive), \
         recorded AS (\
             INSERT INTO {e} AS e (execution_id, wake_at, redrive, attempts, at) \
             SELECT execution_id, wake_at, redrive, $5::bigint, $6::bigint FROM retired \
             ON CONFLICT (execution_id, wake_at) DO UPDATE \
             SET redrive = EXCLUDED.redrive, attempts = EXCLUDED.attempts, at = EXCLUDED.at \
             RETURNING 1) \
         SELECT count(*) FROM retired"
    )
}

/// Whether row `{alias}` reads back as the core's checks want it (see
/// `loomfence_core::timer::read_redrive_flag` and the id rules): an id of 1 to
/// 255 bytes (text holds no NUL), a time not below 0 (a due row is never
/// above `MAX_TIMER_MS`), a claim count in `0..i64::MAX`, and no flag or
/// the object `{"attempt": n}` with `n` an integer in `0..=2^31-1` and no
/// other key. A `CASE`, because `AND` does not fix the order of its
/// operands and `-` or the cast would fail on some shapes.
fn readable(alias: &str) -> String {
    format!(
        "(CASE WHEN octet_length({alias}.execution_id) NOT BETWEEN 1 AND {max_id} \
                 OR {alias}.wake_at < 0 OR {alias}.claims < 0 OR {alias}.claims = {max_i64} THEN false \
               WHEN {alias}.redrive IS NULL THEN true \
               WHEN jsonb_typeof({alias}.redrive) <> 'object' THEN false \
               WHEN ({alias}.redrive - 'attempt') <> '{{}}'::jsonb THEN false \
               WHEN jsonb_typeof({alias}.redrive -> 'attempt') IS DISTINCT FROM 'number' THEN false \
               WHEN ({alias}.redrive ->> 'attempt') !~ '^[0-9]+$' THEN false \
               ELSE ({alias}.redrive ->> 'attempt')::numeric <= {max_attempt} END)",
        max_id = loomfence_core::log::MAX_ID_BYTES,
        max_i64 = i64::MAX,
        max_attempt = loomfence_core::timer::MAX_REDRIVE_ATTEMPT,
    )
}

/// The claim: one statement. Its `UPDATE`'s subquery picks the earliest
/// free due rows that read back ([`readable`]) and locks them `FOR UPDATE
/// SKIP LOCKED`, so concurrent claimers take disjoint pages instead of
/// queueing on one another, and a row that does not read back is never
/// claimed and takes no page slot. The rows it leaves as unreadable (free,
/// due, up to the limit, earliest first, not locked) come back from the
/// same statement after the claimed ones, `claimed` false; when the page
/// is full, only those due no later than its last row, so the scan for
/// them stays within the claim's range instead of the whole backlog.
///
/// The free condition is stated twice on purpose. Under READ COMMITTED the
/// subquery's `FOR UPDATE` re-reads a row that a claimer committed since
/// this statement's snapshot and re-checks its own `WHERE` against that
/// newest version; the `UPDATE` re-checks its `WHERE` too when it finds the
/// row changed since the snapshot. With the condition in both, a row
/// another claimer has just taken (holder set, lease in the future) fails
/// the re-check and is left out, whichever step sees the newer version: two
/// claimers never both hold it. A row skipped or dropped that way only
/// makes the page shorter.
///
/// `plain` is the extra filter for re-drive rows, with `{alias}` for the
/// table alias. The answer is unordered (`RETURNING`); the store sorts it.
fn claim(t: &str, plain: &str) -> String {
    let free = |alias: &str| {
        format!(
            "{alias}.wake_at <= $1 AND ({alias}.holder IS NULL OR {alias}.lease_until <= $1){}",
            plain.replace("{alias}", alias)
        )
    };
    format!(
        "WITH claimed AS (\
           UPDATE {t} t SET holder = $2, lease_until = $3, claims = t.claims + 1 \
           FROM (SELECT d.execution_id, d.wake_at FROM {t} d \
                 WHERE {free_d} AND {readable_d} \
                 ORDER BY d.wake_at, d.execution_id COLLATE \"C\" LIMIT $4 \
                 FOR UPDATE SKIP LOCKED) p \
           WHERE t.execution_id = p.execution_id AND t.wake_at = p.wake_at AND {free_t} AND {readable_t} \
           RETURNING t.execution_id, t.wake_at, t.redrive, t.claims) \
         SELECT true AS claimed, execution_id, wake_at, redrive::text, claims FROM claimed \
         UNION ALL \
         (SELECT false, u.execution_id, u.wake_at, u.redrive::text, u.claims FROM {t} u \
          WHERE {free_u} AND NOT {readable_u} \
            AND u.wake_at <= CASE WHEN (SELECT count(*) FROM claimed) < $4 THEN $1 \
                                  ELSE (SELECT max(wake_at) FROM claimed) END \
          ORDER BY u.wake_at, u.execution_id COLLATE \"C\" LIMIT $4)",
        free_d = free("d"),
        free_t = free("t"),
        free_u = free("u"),
        readable_d = readable("d"),
        readable_t = readable("t"),
        readable_u = readable("u"),
    )
}

/// The reschedule: the claimed row's `DELETE` and the next row's upsert in
/// one statement, the upsert reading its one row from what the `DELETE`
/// returned, so it writes only when the claim was current. Both run on one
/// snapshot and commit together; the `DELETE` takes the row lock, so a
/// concurrent claim of the row waits for it and then finds the row gone
/// (or, if the claim came first, the `DELETE` re-checks and matches
/// nothing, and nothing is written). The next row's key differs from the
/// claimed one's (checked before), so the two never touch one row.
fn reschedule(t: &str) -> String {
    format!(
        "WITH retired AS (\
             DELETE FROM {t} \
             WHERE execution_id = $1 AND wake_at = $2 AND holder = $3 AND claims = $4 \
             RETURNING 1), \
         scheduled AS (\
             INSERT INTO {t} AS t (execution_id, wake_at, redrive) \
             SELECT $5::text, $6::bigint, $7::jsonb FROM retired \
             ON CONFLICT (execution_id, wake_at) DO UPDATE \
             SET redrive = COALESCE(EXCLUDED.redrive, t.redrive), holder = NULL, lease_until = NULL \
             RETURNING 1) \
         SELECT count(*) FROM retired"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_rechecks_the_free_condition_in_the_update() {
        let sql = TimerSql::new(&Schema::default());
        for claim in [&sql.claim_all, &sql.claim_plain] {
            assert!(claim.contains("FOR UPDATE SKIP LOCKED"), "{claim}");
            assert!(
                claim.contains("(t.holder IS NULL OR t.lease_until <= $1)"),
                "{claim}"
            );
            assert!(
                claim.contains("(d.holder IS NULL OR d.lease_until <= $1)"),
                "{claim}"
            );
        }
        assert!(sql.claim_plain.contains("d.redrive IS NULL"));
        assert!(sql.claim_plain.contains("t.redrive IS NULL"));
        assert!(!sql.claim_all.contains("AND d.redrive IS NULL"));
    }

    #[test]
    fn the_claim_leaves_unreadable_rows_out_and_answers_them() {
        let sql = TimerSql::new(&Schema::default());
        for claim in [&sql.claim_all, &sql.claim_plain] {
            assert!(claim.contains(&format!("AND {}", readable("d"))), "{claim}");
            assert!(claim.contains(&format!("AND {}", readable("t"))), "{claim}");
            assert!(
                claim.contains(&format!("AND NOT {}", readable("u"))),
                "{claim}"
            );
        }
    }

    #[test]
    fn only_the_missing_columns_are_added() {
        let schema = Schema::default();
        assert_eq!(
            add_columns(&schema, &["claims", "redrive"]),
            "ALTER TABLE loomfence.timers ADD COLUMN redrive jsonb NULL, \
             ADD COLUMN claims bigint NOT NULL DEFAULT 0"
        );
    }
}
