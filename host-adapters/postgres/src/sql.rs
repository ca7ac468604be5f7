//! Every SQL statement the store sends, built once per schema.
//!
//! The schema name is the only text spliced in, and it is a validated
//! identifier ([`Schema`]). Ids, kinds, payloads, tokens and sequences are
//! always bound parameters.

use crate::config::Schema;

/// The answering test over an `events` row aliased `e`, with the answering
/// kernel kinds in `$a` and every kernel kind in `$k` (both `text[]`). It is
/// the SQL twin of `loomfence_core::is_answering`; the conformance kit
/// checks the two agree.
fn answering(a: u8, k: u8) -> String {
    format!(
        "(e.kind = ANY(${a}::text[]) OR (e.kind <> ALL(${k}::text[]) AND e.metadata -> 'kernel' = 'true'::jsonb))"
    )
}

/// Which append statement: the three choices that change its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AppendShape {
    /// The batch holds an answering event: read the fence row `FOR SHARE`.
    pub(crate) lock: bool,
    /// The batch holds a park: make sure the fence row exists (token 0).
    pub(crate) ensure_fence_row: bool,
    /// Append only while the park at `$8` is unanswered.
    pub(crate) conditional: bool,
}

impl AppendShape {
    /// Index into [`Sql::append`].
    fn index(self) -> usize {
        usize::from(self.lock)
            | usize::from(self.ensure_fence_row) << 1
            | usize::from(self.conditional) << 2
    }
}

/// The statements, for one schema.
#[derive(Debug)]
pub(crate) struct Sql {
    /// The append statement for each [`AppendShape`].
    append: [String; 8],
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
    /// the kind lists).
    pub(crate) acquire_fence_if_pipelined: [String; 3],
    /// Lock the fence row before a delete.
    pub(crate) lock_fence_row: String,
    /// Delete the log.
    pub(crate) delete_events: String,
    /// Delete a token-0 fence row.
    pub(crate) delete_zero_fence: String,
}

impl Sql {
    /// Builds every statement for `schema`.
    pub(crate) fn new(schema: &Schema) -> Self {
        let s = schema.as_str();
        let append = std::array::from_fn(|index| {
            append_sql(
                s,
                AppendShape {
                    lock: index & 1 != 0,
                    ensure_fence_row: index & 2 != 0,
                    conditional: index & 4 != 0,
                },
            )
        });
        Self {
            append,
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
                "SELECT acquired, token, head FROM {s}.acquire_fence_if($1, $2, $3, $4::text[], $5::text[])"
            ),
            acquire_fence_if_pipelined: [
                format!(
                    "INSERT INTO {s}.fences (execution_id, token) SELECT $1, 0 \
                     WHERE EXISTS (SELECT 1 FROM {s}.events WHERE execution_id = $1 AND sequence = $2) \
                     ON CONFLICT DO NOTHING"
                ),
                format!("SELECT token FROM {s}.fences WHERE execution_id = $1 FOR UPDATE"),
                format!(
                    "WITH head AS (SELECT COALESCE(max(sequence), 0) AS head FROM {s}.events WHERE execution_id = $1), \
                     bumped AS ( \
                       UPDATE {s}.fences SET token = token + 1 \
                       WHERE execution_id = $1 AND token = $2::int8 \
                         AND $3::int8 BETWEEN 1 AND (SELECT head FROM head) \
                         AND NOT EXISTS (SELECT 1 FROM {s}.events e \
                                         WHERE e.execution_id = $1 AND e.sequence > $3::int8 AND {answering}) \
                       RETURNING token) \
                     SELECT (SELECT token FROM bumped), (SELECT head FROM head)",
                    answering = answering(4, 5)
                ),
            ],
            lock_fence_row: format!(
                "SELECT token FROM {s}.fences WHERE execution_id = $1 FOR UPDATE"
            ),
            delete_events: format!("DELETE FROM {s}.events WHERE execution_id = $1"),
            delete_zero_fence: format!(
                "DELETE FROM {s}.fences WHERE execution_id = $1 AND token = 0"
            ),
        }
    }

    /// The append statement of `shape`.
    pub(crate) fn append(&self, shape: AppendShape) -> &str {
        &self.append[shape.index()]
    }
}

/// One append statement: the fence guard, the park-conditional check, the
/// sequence assignment and the insert, in a single statement.
///
/// Parameters: `$1` id, `$2` kinds `text[]`, `$3` payloads `jsonb[]`, `$4`
/// metadata `jsonb[]`, `$5` timestamps `int8[]`, `$6` the batch's token
/// (null when unfenced), `$7` whether the batch is answering; when
/// conditional also `$8` the park's sequence, `$9` the answering kernel
/// kinds and `$10` every kernel kind.
///
/// Returns one row: the token the guard compared against, whether the park
/// is still open (always true when not conditional), the log's head before
/// the insert, how many rows were inserted, and the first new sequence.
///
/// Why it is safe:
/// - An answering batch reads the fence row `FOR SHARE` in a `MATERIALIZED`
///   CTE. That waits for a concurrent conditional acquire (which holds the
///   row `FOR UPDATE`) and then reads the row as that acquire left it, so
///   "append lands" and "acquire wins" cannot both happen.
/// - Sequences are `head + ordinal`. Two statements that computed the same
///   head collide on the primary key; the loser gets a unique violation and
///   the store retries it with a fresh snapshot, which then sees the
///   winner's rows (including, for a conditional append, a resume that
///   answers the park).
fn append_sql(s: &str, shape: AppendShape) -> String {
    let ensure = if shape.ensure_fence_row {
        format!(
            "ensure AS (INSERT INTO {s}.fences (execution_id, token) VALUES ($1, 0) ON CONFLICT DO NOTHING), "
        )
    } else {
        String::new()
    };
    let lock = if shape.lock { " FOR SHARE" } else { "" };
    let (open, in_range) = if shape.conditional {
        (
            format!(
                "NOT EXISTS (SELECT 1 FROM {s}.events e WHERE e.execution_id = $1 AND e.sequence > $8::int8 AND {})",
                answering(9, 10)
            ),
            "$8::int8 BETWEEN 1 AND head.head".to_owned(),
        )
    } else {
        ("true".to_owned(), "true".to_owned())
    };
    format!(
        "WITH {ensure}\
         locked AS MATERIALIZED (SELECT token FROM {s}.fences WHERE execution_id = $1{lock}), \
         cur AS (SELECT COALESCE((SELECT token FROM locked), 0) AS token), \
         head AS (SELECT COALESCE(max(sequence), 0) AS head FROM {s}.events WHERE execution_id = $1), \
         verdict AS (SELECT ({in_range}) AS in_range, ({open}) AS open, \
                            (CASE WHEN $6::int8 IS NOT NULL THEN $6::int8 >= cur.token \
                                  ELSE (NOT $7::bool OR cur.token = 0) END) AS guard \
                     FROM cur, head), \
         ins AS (INSERT INTO {s}.events (execution_id, sequence, kind, payload, metadata, at) \
                 SELECT $1, head.head + u.ord, u.kind, u.payload, u.metadata, u.at \
                 FROM head, verdict, \
                      unnest($2::text[], $3::jsonb[], $4::jsonb[], $5::int8[]) WITH ORDINALITY \
                        AS u(kind, payload, metadata, at, ord) \
                 WHERE verdict.in_range AND verdict.open AND verdict.guard \
                 RETURNING sequence) \
         SELECT (SELECT token FROM cur), (SELECT in_range FROM verdict), (SELECT open FROM verdict), \
                (SELECT head FROM head), (SELECT count(*) FROM ins), (SELECT min(sequence) FROM ins)"
    )
}

/// The schema: tables, the migrations ledger, and the conditional-acquire
/// function. Every statement is idempotent.
pub(crate) fn schema_ddl(schema: &Schema) -> Vec<String> {
    let s = schema.as_str();
    vec![
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
        acquire_fence_if_function(s),
    ]
}

/// The conditional acquire as a PL/pgSQL function: one round trip, bound
/// arguments, and a fresh snapshot for each statement.
fn acquire_fence_if_function(s: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {s}.acquire_fence_if( \
           p_id text, p_fence bigint, p_park bigint, p_answering text[], p_kernel text[]) \
         RETURNS TABLE (acquired boolean, token bigint, head bigint) \
         LANGUAGE plpgsql VOLATILE AS $fn$ \
         DECLARE v_token bigint; v_head bigint; \
         BEGIN \
           IF current_setting('transaction_isolation') <> 'read committed' THEN \
             RAISE EXCEPTION 'loomfence: acquire_fence_if needs READ COMMITTED, the transaction is %', \
               current_setting('transaction_isolation') USING ERRCODE = '25000'; \
           END IF; \
           SELECT COALESCE(max(e.sequence), 0) INTO v_head FROM {s}.events e WHERE e.execution_id = p_id; \
           IF p_park < 1 OR p_park > v_head THEN \
             RETURN QUERY SELECT false, NULL::bigint, v_head; RETURN; \
           END IF; \
           INSERT INTO {s}.fences AS f (execution_id, token) VALUES (p_id, 0) ON CONFLICT DO NOTHING; \
           SELECT f.token INTO v_token FROM {s}.fences f WHERE f.execution_id = p_id FOR UPDATE; \
           IF v_token <> p_fence OR EXISTS ( \
                SELECT 1 FROM {s}.events e WHERE e.execution_id = p_id AND e.sequence > p_park \
                  AND (e.kind = ANY(p_answering) OR (e.kind <> ALL(p_kernel) AND e.metadata -> 'kernel' = 'true'::jsonb))) THEN \
             RETURN QUERY SELECT false, v_token, v_head; RETURN; \
           END IF; \
           UPDATE {s}.fences f SET token = v_token + 1 WHERE f.execution_id = p_id; \
           RETURN QUERY SELECT true, v_token + 1, v_head; \
         END $fn$"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_answering_shapes_lock_and_only_conditional_shapes_check_the_park() {
        let sql = Sql::new(&Schema::default());
        for index in 0..8 {
            let shape = AppendShape {
                lock: index & 1 != 0,
                ensure_fence_row: index & 2 != 0,
                conditional: index & 4 != 0,
            };
            let text = sql.append(shape);
            assert_eq!(text.contains("FOR SHARE"), shape.lock, "{shape:?}");
            assert_eq!(
                text.contains("ON CONFLICT DO NOTHING"),
                shape.ensure_fence_row,
                "{shape:?}"
            );
            assert_eq!(text.contains("$8"), shape.conditional, "{shape:?}");
            assert!(text.contains("loomfence.events"));
        }
    }
}
