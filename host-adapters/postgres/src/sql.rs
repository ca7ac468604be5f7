//! Every SQL statement the store sends, and the functions `migrate`
//! installs, built once per schema.
//!
//! The schema name is the only text spliced in that varies, and it is a
//! validated identifier ([`Schema`]); the one other is the park kind's name,
//! a constant of the core ([`park_kind`]). Ids, kinds, payloads, tokens and
//! sequences are always bound parameters.

use loomfence_core::KernelKind;

use crate::config::Schema;
use crate::sql_parts::{
    answering, delete_log, execution_lock_call, execution_lock_of, lock_fence_row,
    require_read_committed,
};
use crate::{feed_sql, retention_sql};

/// The park kind (`EXECUTION_SUSPENDED`) as a SQL string literal. The event
/// at a conditional operation's `p_park` must be of this kind: after a
/// delete, a log can grow back past the sequence a resumer read as its park.
/// The kind is the core's constant, upper-case letters and underscores, so
/// it needs no escaping; it is spliced rather than bound so that the
/// functions' argument lists (their identity) stay as they were.
fn park_kind() -> String {
    let kind = KernelKind::ExecutionSuspended.as_str();
    debug_assert!(kind.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
    format!("'{kind}'")
}

/// The input signature of the append function, as `DROP FUNCTION` and
/// `to_regprocedure` name it.
const APPEND_SIGNATURE: &str = "append(text, text[], jsonb[], jsonb[], bigint[], bigint, boolean, \
                                boolean, boolean, bigint, text[], text[], bigint, boolean)";

/// The append function of schema version 2 and before, without the open
/// parks' upkeep (`p_opens`, `p_closes`). It is dropped, not kept beside
/// the new one: a writer still calling it would leave the open-parks index
/// behind the logs, so it fails instead (such a build is refused at boot
/// anyway, by the schema version).
const APPEND_SIGNATURE_BEFORE_THE_FEED: &str = "append(text, text[], jsonb[], jsonb[], bigint[], \
                                                bigint, boolean, boolean, boolean, bigint, \
                                                text[], text[])";

/// The input signature of the conditional acquire function.
const ACQUIRE_FENCE_IF_SIGNATURE: &str = "acquire_fence_if(text, bigint, bigint, text[], text[])";

/// The statements, for one schema.
#[derive(Debug)]
pub(crate) struct Sql {
    /// The append function's call (see [`append_function`]), for a
    /// conditional append.
    pub(crate) append_call: String,
    /// The call of the append without a park condition (see
    /// [`append_plain_function`]).
    pub(crate) append_plain_call: String,
    /// Events of one execution in a sequence range.
    pub(crate) read_range: String,
    /// One execution's token.
    pub(crate) current_fence: String,
    /// The unconditional acquire.
    pub(crate) acquire_fence: String,
    /// The conditional acquire, through the installed function.
    pub(crate) acquire_fence_if_call: String,
    /// The statements of the pipelined conditional acquire, between `BEGIN`
    /// and `COMMIT`: make sure the fence row of an existing park exists
    /// (`$1` id, `$2` park), lock it, then bump it only if the token and the
    /// park still match (`$1` id, `$2` expected token, `$3` park, `$4`/`$5`
    /// the kind lists), answering the new token, the head and the kind of
    /// the event at `$3`, all from the bump's snapshot.
    pub(crate) acquire_fence_if_pipelined: [String; 3],
    /// The delete function's call.
    pub(crate) delete_call: String,
    /// The retention listing (see [`retention_sql::list_executions`]).
    pub(crate) list_executions: String,
    /// The guarded delete function's call.
    pub(crate) delete_execution_if_call: String,
    /// The batched guarded delete function's call.
    pub(crate) delete_executions_if_call: String,
    /// The batched read of whole logs.
    pub(crate) read_logs: String,
    /// A feed page (see [`feed_sql::read`]).
    pub(crate) feed: String,
    /// The feed's head (see [`feed_sql::head`]).
    pub(crate) feed_head: String,
    /// A page of open parks.
    pub(crate) open_parks: String,
    /// The newest write a read cannot list yet (see [`feed_sql::pending`]).
    pub(crate) feed_pending: String,
}

impl Sql {
    /// Builds every statement for `schema`.
    pub(crate) fn new(schema: &Schema) -> Self {
        let s = schema.as_str();
        let park = park_kind();
        Self {
            append_call: format!(
                "SELECT token, in_range, open, head, inserted, park_kind FROM {s}.append( \
                   $1, $2::text[], $3::jsonb[], $4::jsonb[], $5::int8[], $6::int8, $7::bool, \
                   $8::bool, $9::bool, $10::int8, $11::text[], $12::text[], $13::int8, $14::bool)"
            ),
            append_plain_call: format!(
                "SELECT {s}.append_plain($1, $2::text[], $3::jsonb[], $4::jsonb[], $5::int8[], \
                   $6::int8, $7::bool, $8::bool, $9::bool, $10::int8, $11::bool)"
            ),
            read_range: format!(
                "SELECT sequence, kind, payload, metadata, at FROM {s}.events \
                 WHERE execution_id = $1 AND sequence >= $2 AND sequence <= $3 ORDER BY sequence"
            ),
            current_fence: format!("SELECT token FROM {s}.fences WHERE execution_id = $1"),
            acquire_fence: format!(
                "INSERT INTO {s}.fences AS f (execution_id, token) VALUES ($1, 1) \
                 ON CONFLICT (execution_id) DO UPDATE SET token = f.token + 1 RETURNING token"
            ),
            acquire_fence_if_call: format!(
                "SELECT acquired, token, head, park_kind \
                 FROM {s}.acquire_fence_if($1, $2, $3, $4::text[], $5::text[])"
            ),
            acquire_fence_if_pipelined: [
                format!(
                    "INSERT INTO {s}.fences (execution_id, token) SELECT $1, 0 \
                     WHERE EXISTS (SELECT 1 FROM {s}.events \
                                   WHERE execution_id = $1 AND sequence = $2 AND kind = {park}) \
                     ON CONFLICT DO NOTHING"
                ),
                format!("SELECT token FROM {s}.fences WHERE execution_id = $1 FOR UPDATE"),
                format!(
                    "WITH head AS (SELECT COALESCE(max(sequence), 0) AS head FROM {s}.events WHERE execution_id = $1), \
                     bumped AS ( \
                       UPDATE {s}.fences SET token = token + 1 \
                       WHERE execution_id = $1 AND token = $2::int8 \
                         AND EXISTS (SELECT 1 FROM {s}.events e \
                                     WHERE e.execution_id = $1 AND e.sequence = $3::int8 AND e.kind = {park}) \
                         AND NOT EXISTS (SELECT 1 FROM {s}.events e \
                                         WHERE e.execution_id = $1 AND e.sequence > $3::int8 AND {answering}) \
                       RETURNING token) \
                     SELECT (SELECT token FROM bumped), (SELECT head FROM head), \
                            (SELECT e.kind FROM {s}.events e WHERE e.execution_id = $1 AND e.sequence = $3::int8)",
                    answering = answering("$4::text[]", "$5::text[]")
                ),
            ],
            delete_call: format!("SELECT {s}.delete_execution($1)"),
            list_executions: retention_sql::list_executions(schema),
            delete_execution_if_call: retention_sql::delete_execution_if_call(schema),
            delete_executions_if_call: retention_sql::delete_executions_if_call(schema),
            read_logs: retention_sql::read_logs(schema),
            feed: feed_sql::read(schema),
            feed_head: feed_sql::head(schema),
            open_parks: feed_sql::open_parks(schema),
            feed_pending: feed_sql::pending(schema),
        }
    }
}

/// The schema: tables, the migrations ledger, and the functions. Every
/// statement is idempotent.
pub(crate) fn schema_ddl(schema: &Schema) -> Vec<String> {
    let s = schema.as_str();
    let tables = vec![
        format!("CREATE SCHEMA IF NOT EXISTS {s}"),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.events ( \
               execution_id text NOT NULL, \
               sequence bigint NOT NULL, \
               kind text NOT NULL, \
               payload jsonb NOT NULL, \
               metadata jsonb NOT NULL, \
               at bigint NOT NULL, \
               PRIMARY KEY (execution_id, sequence))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.fences (execution_id text PRIMARY KEY, token bigint NOT NULL)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.migrations ( \
               name text PRIMARY KEY, \
               detail text, \
               applied_at timestamptz NOT NULL DEFAULT now())"
        ),
    ];
    let functions = vec![
        format!("DROP FUNCTION IF EXISTS {s}.{APPEND_SIGNATURE_BEFORE_THE_FEED}"),
        drop_if_outdated(s, APPEND_SIGNATURE, "park_kind"),
        append_function(s),
        append_plain_function(s),
        drop_if_outdated(s, ACQUIRE_FENCE_IF_SIGNATURE, "park_kind"),
        acquire_fence_if_function(s),
        delete_function(s),
        retention_sql::delete_execution_if_function(schema),
        retention_sql::delete_executions_if_function(schema),
        retention_sql::read_logs_function(schema),
    ];
    [tables, feed_sql::feed_ddl(schema), functions].concat()
}

/// Drops the function `{s}.{signature}` if it is installed without the
/// result column `column`, which a function of an older version lacks:
/// `CREATE OR REPLACE` cannot change a function's result columns, so such a
/// function must go first (in the migration's transaction, so callers see
/// the old one or the new one, never none). A function that is already
/// current is left alone, so a boot does not drop it for nothing.
fn drop_if_outdated(s: &str, signature: &str, column: &str) -> String {
    format!(
        "DO $do$ BEGIN \
           IF EXISTS (SELECT 1 FROM pg_proc p WHERE p.oid = to_regprocedure('{s}.{signature}') \
                      AND NOT ('{column}' = ANY(p.proargnames))) THEN \
             DROP FUNCTION {s}.{signature}; \
           END IF; \
         END $do$"
    )
}

/// Takes the execution's advisory lock: exclusive per execution for appends
/// and deletes, so a delete and an append never interleave (an append that
/// read the head before a delete committed would otherwise write at that
/// stale head into an emptied log) and same-execution appends queue rather
/// than collide. It is a lock-manager entry, not a row write: no WAL.
fn execution_lock(s: &str) -> String {
    execution_lock_of(s, "p_id")
}

/// [`execution_lock`] as an assignment of an expression, which PL/pgSQL
/// evaluates without a query's executor (the lock answers `void`, so a
/// query for it is all overhead). Needs the variable `v_locked`.
fn execution_lock_expr(s: &str) -> String {
    format!("v_locked := {} IS NULL;", execution_lock_call(s, "p_id"))
}

/// The append as a function: one round trip, one plan per connection.
///
/// It takes the execution's advisory lock first, and only then reads or
/// writes, so every statement after it sees every delete and append that
/// finished before it (each statement of a volatile function takes a fresh
/// snapshot under READ COMMITTED).
///
/// A conditional append (`p_park` not null) runs [`conditional_append`].
/// Any other runs the [`short_path`], as [`append_plain_function`] does
/// (which this build calls for those); this function keeps it for the
/// writers of older builds.
///
/// Returns the token the guard compared against (on the short path only
/// when it refused; 0 otherwise), whether `p_park` is inside the log,
/// whether the park is open (false too when the event at `p_park` is not a
/// park, so a caller that does not read `park_kind` still refuses), the
/// head before the insert, how many rows were inserted (the new sequences
/// are `head + 1 ..`) and the kind of the event at `p_park`.
fn append_function(s: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {s}.append( \
           p_id text, p_kinds text[], p_payloads jsonb[], p_metadata jsonb[], p_ats bigint[], \
           p_fence bigint, p_answering boolean, p_lock boolean, p_ensure boolean, p_park bigint, \
           p_answering_kinds text[], p_kernel_kinds text[], p_opens bigint, p_closes boolean) \
         RETURNS TABLE (token bigint, in_range boolean, open boolean, head bigint, inserted bigint, \
                        park_kind text) \
         LANGUAGE plpgsql VOLATILE AS $fn$ \
         {declare} \
         BEGIN \
           {rc} \
           {lock} \
           IF p_park IS NOT NULL THEN \
             IF p_lock THEN {conditional_locking} ELSE {conditional_plain} END IF; \
             RETURN; \
           END IF; \
           {short} \
           token := COALESCE(v_token, 0); in_range := true; open := true; head := v_head; \
           inserted := v_n; park_kind := NULL; \
           RETURN NEXT; \
         END $fn$",
        declare = SHORT_PATH_DECLARE,
        rc = require_read_committed("append"),
        lock = execution_lock_expr(s),
        conditional_locking = conditional_append(s, " FOR SHARE"),
        conditional_plain = conditional_append(s, ""),
        short = short_path(s),
    )
}

/// The append without a park condition, as a function answering one
/// `bigint`: what this build calls for every append but a conditional one.
/// The execution's lock, then the [`short_path`]. Answers the head before
/// the insert when the batch was written (the new sequences are `head + 1
/// ..`), or, when the fence guard refused it, `-1 - token` with the token
/// it compared against (tokens and heads are at most 2^53-1, so the two
/// never overlap).
///
/// A scalar answer rather than a row: a set-returning function goes
/// through a tuple store and a function scan, measurably dearer in a call
/// this small; and no argument is sent that only the conditional append
/// reads.
fn append_plain_function(s: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {s}.append_plain( \
           p_id text, p_kinds text[], p_payloads jsonb[], p_metadata jsonb[], p_ats bigint[], \
           p_fence bigint, p_answering boolean, p_lock boolean, p_ensure boolean, \
           p_opens bigint, p_closes boolean) \
         RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$ \
         {declare} \
         BEGIN \
           {rc} \
           {lock} \
           {short} \
           IF v_n > 0 THEN RETURN v_head; END IF; \
           RETURN -1 - COALESCE(v_token, 0); \
         END $fn$",
        declare = SHORT_PATH_DECLARE,
        rc = require_read_committed("append_plain"),
        lock = execution_lock_expr(s),
        short = short_path(s),
    )
}

/// The variables of the [`short_path`].
const SHORT_PATH_DECLARE: &str = "DECLARE v_token bigint; v_head bigint; v_seq bigint; \
                                  v_n bigint := 0; v_locked boolean; v_pass boolean; \
                                  v_check boolean;";

/// An append without a park condition, once the execution's lock is held:
/// a few small statements whose plans do not depend on the arguments'
/// values, so each connection plans them once (a statement whose best plan
/// depends on the values, such as the conditional one, is planned again at
/// every call). Leaves the head before the insert in `v_head`, the rows
/// inserted in `v_n` (0 when the fence guard refused) and, when it read
/// one, the token in `v_token`.
///
/// - a batch holding a park first makes sure the execution's fence row
///   exists (token 0), so an answering append always has a row to lock;
/// - one fenced event that is not read under the lock (below): the guard
///   is the insert's own condition, so a fenced append costs the unfenced
///   one's statement plus one primary-key lookup of its fence row; an
///   unfenced one that does not answer reads no fence row at all;
/// - otherwise the token is read first, `FOR SHARE` for an answering batch
///   (`p_lock`), which waits for a concurrent conditional acquire (holding
///   the row `FOR UPDATE`) and then reads the row as the acquire left it:
///   "append lands" and "acquire wins" cannot both happen. The guard is
///   checked, then the batch inserted (one event by the same statement as
///   above, without the guard);
/// - once the batch is written, the open parks: `p_opens` (the batch's last
///   answering event is a park, this far past the head) upserts the
///   execution's row, `p_closes` deletes it. The caller computes them with
///   the core's `park_change`, so the index follows the core's rule and
///   never disagrees with the log.
fn short_path(s: &str) -> String {
    let insert =
        format!("INSERT INTO {s}.events (execution_id, sequence, kind, payload, metadata, at)");
    let head = format!(
        "SELECT COALESCE(max(e.sequence), 0) FROM {s}.events e WHERE e.execution_id = p_id"
    );
    let token = format!("SELECT f.token FROM {s}.fences f WHERE f.execution_id = p_id");
    // One event: the head and the insert in one statement.
    let one = format!(
        "{insert} SELECT p_id, COALESCE(max(e.sequence), 0) + 1, p_kinds[1], p_payloads[1], \
           p_metadata[1], p_ats[1] FROM {s}.events e WHERE e.execution_id = p_id"
    );
    format!(
        "IF p_ensure THEN \
           INSERT INTO {s}.fences (execution_id, token) VALUES (p_id, 0) ON CONFLICT DO NOTHING; \
         END IF; \
         v_check := p_fence IS NOT NULL AND NOT p_lock AND cardinality(p_kinds) = 1; \
         IF p_lock OR (p_fence IS NULL AND p_answering) OR (p_fence IS NOT NULL AND NOT v_check) THEN \
           IF p_lock THEN {token} FOR SHARE INTO v_token; ELSE {token} INTO v_token; END IF; \
           v_token := COALESCE(v_token, 0); \
           v_pass := (CASE WHEN p_fence IS NOT NULL THEN p_fence >= v_token \
                           ELSE NOT p_answering OR v_token = 0 END); \
         ELSE \
           v_pass := true; \
         END IF; \
         IF v_pass AND cardinality(p_kinds) = 1 THEN \
           IF v_check THEN \
             {one} HAVING p_fence >= COALESCE(({token}), 0) RETURNING sequence INTO v_seq; \
           ELSE \
             {one} RETURNING sequence INTO v_seq; \
           END IF; \
           IF v_seq IS NOT NULL THEN v_n := 1; v_head := v_seq - 1; END IF; \
         ELSIF v_pass THEN \
           WITH ins AS ({insert} \
             SELECT p_id, h.head + u.ord, u.kind, u.payload, u.metadata, u.at \
             FROM ({head}) AS h(head), \
                  unnest(p_kinds, p_payloads, p_metadata, p_ats) WITH ORDINALITY \
                    AS u(kind, payload, metadata, at, ord) \
             RETURNING sequence) \
           SELECT min(i.sequence) - 1, count(*) INTO v_head, v_n FROM ins i; \
         END IF; \
         IF v_n > 0 THEN \
           IF p_opens IS NOT NULL THEN \
             INSERT INTO {s}.open_parks (execution_id, park_seq) VALUES (p_id, v_head + p_opens) \
               ON CONFLICT (execution_id) DO UPDATE SET park_seq = EXCLUDED.park_seq; \
           ELSIF p_closes THEN \
             DELETE FROM {s}.open_parks o WHERE o.execution_id = p_id; \
           END IF; \
         ELSE \
           IF v_check THEN {token} INTO v_token; END IF; \
           v_head := ({head}); \
         END IF;"
    )
}

/// The conditional append (`p_park` not null) as one statement, after the
/// execution lock, which therefore sees every delete and append that
/// finished before it:
///
/// - a batch holding a park first makes sure the execution's fence row
///   exists (token 0), so an answering append always has a row to lock;
/// - an answering batch (`lock` is ` FOR SHARE`) reads the fence row in a
///   `MATERIALIZED` CTE, which waits for a concurrent conditional acquire
///   (holding the row `FOR UPDATE`) and then reads the row as the acquire
///   left it. Other batches read it without a lock;
/// - it inserts only while the event at `p_park` is a park and no
///   answering event follows it, and keeps the open parks in the same
///   statement (see [`feed_sql::append_upkeep`]).
fn conditional_append(s: &str, lock: &str) -> String {
    /// The insert's condition, which the open parks' upkeep shares.
    const WRITTEN: &str = "verdict.in_range AND verdict.open AND verdict.guard";
    format!(
        "RETURN QUERY WITH \
           ensure AS (INSERT INTO {s}.fences (execution_id, token) SELECT p_id, 0 WHERE p_ensure \
                      ON CONFLICT DO NOTHING), \
           locked AS MATERIALIZED (SELECT f.token FROM {s}.fences f WHERE f.execution_id = p_id{lock}), \
           cur AS (SELECT COALESCE((SELECT l.token FROM locked l), 0) AS token), \
           head AS (SELECT COALESCE(max(e.sequence), 0) AS head FROM {s}.events e WHERE e.execution_id = p_id), \
           parked AS (SELECT (SELECT e.kind FROM {s}.events e \
                              WHERE e.execution_id = p_id AND e.sequence = p_park) AS kind), \
           verdict AS ( \
             SELECT (p_park IS NULL OR p_park BETWEEN 1 AND head.head) AS in_range, \
                    (p_park IS NULL OR (parked.kind IS NOT DISTINCT FROM {park} \
                       AND NOT EXISTS (SELECT 1 FROM {s}.events e \
                         WHERE e.execution_id = p_id AND e.sequence > p_park AND {answering}))) AS open, \
                    (CASE WHEN p_fence IS NOT NULL THEN p_fence >= cur.token \
                          ELSE (NOT p_answering OR cur.token = 0) END) AS guard \
             FROM cur, head, parked), \
           {upkeep}\
           ins AS (INSERT INTO {s}.events (execution_id, sequence, kind, payload, metadata, at) \
                   SELECT p_id, head.head + u.ord, u.kind, u.payload, u.metadata, u.at \
                   FROM head, verdict, \
                        unnest(p_kinds, p_payloads, p_metadata, p_ats) WITH ORDINALITY \
                          AS u(kind, payload, metadata, at, ord) \
                   WHERE {written} \
                   RETURNING 1) \
         SELECT (SELECT c.token FROM cur c), (SELECT v.in_range FROM verdict v), \
                (SELECT v.open FROM verdict v), (SELECT h.head FROM head h), \
                (SELECT count(*) FROM ins), (SELECT pk.kind FROM parked pk);",
        answering = answering("p_answering_kinds", "p_kernel_kinds"),
        park = park_kind(),
        upkeep = feed_sql::append_upkeep(s, WRITTEN),
        written = WRITTEN,
    )
}

/// The conditional acquire as a PL/pgSQL function: one round trip, bound
/// arguments.
///
/// It locks the fence row first (creating the token-0 row of an existing
/// park that predates fence rows), then decides and bumps in ONE guarded
/// `UPDATE`: the token matches, the event at `p_park` is a park, and no
/// answering event follows it. That statement takes a fresh snapshot after
/// the lock was granted (READ COMMITTED, a volatile function), so it sees
/// every answering append that committed before it, and a park deleted,
/// answered, or deleted and grown over while the lock was awaited makes it
/// refuse. The head and the kind at `p_park` are read (in one statement)
/// only on refusal, to tell a park outside the log, or a sequence that is
/// not a park, from a stale expectation.
fn acquire_fence_if_function(s: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {s}.acquire_fence_if( \
           p_id text, p_fence bigint, p_park bigint, p_answering text[], p_kernel text[], \
           OUT acquired boolean, OUT token bigint, OUT head bigint, OUT park_kind text) \
         LANGUAGE plpgsql VOLATILE AS $fn$ \
         DECLARE v_bumped bigint; \
         BEGIN \
           {rc} \
           SELECT f.token INTO token FROM {s}.fences f WHERE f.execution_id = p_id FOR UPDATE; \
           IF NOT FOUND THEN \
             INSERT INTO {s}.fences AS f (execution_id, token) SELECT p_id, 0 \
               WHERE EXISTS (SELECT 1 FROM {s}.events e \
                             WHERE e.execution_id = p_id AND e.sequence = p_park AND e.kind = {park}) \
               ON CONFLICT DO NOTHING; \
             SELECT f.token INTO token FROM {s}.fences f WHERE f.execution_id = p_id FOR UPDATE; \
           END IF; \
           UPDATE {s}.fences f SET token = f.token + 1 \
             WHERE f.execution_id = p_id AND f.token = p_fence \
               AND EXISTS (SELECT 1 FROM {s}.events e \
                           WHERE e.execution_id = p_id AND e.sequence = p_park AND e.kind = {park}) \
               AND NOT EXISTS (SELECT 1 FROM {s}.events e \
                               WHERE e.execution_id = p_id AND e.sequence > p_park AND {answering}) \
             RETURNING f.token INTO v_bumped; \
           acquired := FOUND; \
           IF acquired THEN \
             token := v_bumped; \
           ELSE \
             SELECT (SELECT COALESCE(max(e.sequence), 0) FROM {s}.events e WHERE e.execution_id = p_id), \
                    (SELECT e.kind FROM {s}.events e WHERE e.execution_id = p_id AND e.sequence = p_park) \
               INTO head, park_kind; \
           END IF; \
         END $fn$",
        rc = require_read_committed("acquire_fence_if"),
        answering = answering("p_answering", "p_kernel"),
        park = park_kind(),
    )
}

/// The delete as a function: the execution's advisory lock (so no append is
/// half-way), then its fence row `FOR UPDATE` (so a conditional acquire is
/// not half-way either), then the log, then a token-0 fence row. A real
/// token is kept, so a zombie writer of a re-created id stays fenced out.
/// Returns how many events were deleted.
fn delete_function(s: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {s}.delete_execution(p_id text) RETURNS bigint \
         LANGUAGE plpgsql VOLATILE AS $fn$ \
         DECLARE v_deleted bigint; \
         BEGIN \
           {rc} \
           {lock} \
           {fence_row} \
           {delete} \
           RETURN v_deleted; \
         END $fn$",
        rc = require_read_committed("delete_execution"),
        lock = execution_lock(s),
        fence_row = lock_fence_row(s),
        delete = delete_log(s),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_append_function_locks_the_execution_first_and_the_row_only_when_answering() {
        let ddl = append_function("loomfence");
        assert_eq!(
            ddl.matches("FOR SHARE").count(),
            2,
            "only the p_lock branches, conditional and not"
        );
        assert_eq!(ddl.matches("RETURN QUERY").count(), 2);
        assert_locks_first(&ddl);
    }

    #[test]
    fn the_plain_append_is_the_short_path_after_the_lock() {
        let ddl = append_plain_function("loomfence");
        assert!(ddl.contains(&short_path("loomfence")));
        assert!(!ddl.contains("p_park"), "no park condition");
        assert_eq!(ddl.matches("FOR SHARE").count(), 1);
        assert_locks_first(&ddl);
        assert!(schema_ddl(&Schema::new("loomfence").unwrap()).contains(&ddl));
    }

    /// The execution lock comes before every statement that reads or writes.
    fn assert_locks_first(ddl: &str) {
        let advisory = ddl
            .find("pg_advisory_xact_lock")
            .expect("takes the execution lock");
        for statement in ["RETURN QUERY", "INSERT", "SELECT f.token", "DELETE"] {
            if let Some(at) = ddl.find(statement) {
                assert!(advisory < at, "{statement}");
            }
        }
    }
}
