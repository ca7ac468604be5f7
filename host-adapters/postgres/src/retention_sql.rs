//! The SQL of retention: the paged listing, the partial index of terminal
//! events it reads ends through, and the guarded delete as a function.
//!
//! As everywhere in this crate, the schema name is the only varying text
//! spliced in; the terminal kinds are the core's constants (spliced, not
//! bound, because the planner uses a partial index only for a query whose
//! filter implies the index's own, which a bound array never does); ids,
//! heads and the answering kinds are bound parameters.

use loomfence_core::{KernelKind, Status};

use crate::config::Schema;
use crate::sql_parts::{
    answering, delete_log, delete_logs, execution_lock_of, lock_fence_row, require_read_committed,
};

/// The partial index of terminal events, inside the schema.
///
/// A build that changes the set of terminal kinds must give the index a new
/// name: `migrate` keeps an index that exists, and the listing would then
/// filter on kinds the old index does not hold (and not use it).
pub(crate) const ENDED_INDEX: &str = "events_ended";

/// The kernel kinds that end an execution, as the core's status fold says
/// (the kinds after which `Status::Pending` is terminal), so the SQL filter
/// cannot drift from the fold that `ended_of` and the memory store use.
pub(crate) fn terminal_kinds() -> impl Iterator<Item = KernelKind> {
    KernelKind::ALL
        .iter()
        .copied()
        .filter(|kind| Status::Pending.after(Some(*kind)).is_terminal())
}

/// `kind IN ('EXECUTION_COMPLETED', …)` over `column`: the predicate of
/// [`ENDED_INDEX`] and, the same text, of the listing's lookup. The names
/// are the kernel's constants, upper-case letters and underscores, so
/// quoting them needs no escaping (a unit test checks it).
fn terminal_filter(column: &str) -> String {
    let names: Vec<String> = terminal_kinds()
        .map(|kind| format!("'{}'", kind.as_str()))
        .collect();
    format!("{column} IN ({})", names.join(", "))
}

/// The statement that creates [`ENDED_INDEX`]: every terminal event, keyed
/// like the table, so "the first terminal event of this execution" is one
/// descent that reads one entry. `concurrently` builds it without blocking
/// appends (outside any transaction).
pub(crate) fn ended_index_ddl(schema: &Schema, concurrently: bool) -> String {
    let how = if concurrently { " CONCURRENTLY" } else { "" };
    format!(
        "CREATE INDEX{how} IF NOT EXISTS {ENDED_INDEX} ON {schema}.events (execution_id, sequence) \
         WHERE {}",
        terminal_filter("kind")
    )
}

/// The listing: `$1` the exclusive lower bound (the empty string for the
/// first page: every id is longer, and collations break ties by bytes, so
/// `''` sorts before every id), `$2` the page size.
///
/// `page` is a loose index scan of the primary key: each step is "the
/// smallest id above the previous one", one descent, in the column's own
/// collation (the order of the index, so the descent needs no sort and no
/// other index). It stops after `$2` ids or at `NULL` (no id above), and
/// the `NULL` row is dropped. The head is one backward descent of the
/// primary key, the end one descent of [`ENDED_INDEX`]. A page therefore
/// costs about three descents per execution, however long the logs and
/// however many executions the table holds; a `GROUP BY` over the primary
/// key would read every event of every listed log instead (measured: 37
/// times slower for 100 logs of 2,000 events).
///
/// One statement, so one snapshot: a page never mixes states of the table.
/// `n` numbers the ids in the order found, which is ascending, so ordering
/// by it sorts integers rather than comparing ids in the collation again.
pub(crate) fn list_executions(schema: &Schema) -> String {
    let s = schema.as_str();
    format!(
        "WITH RECURSIVE page(execution_id, n) AS ( \
             (SELECT e.execution_id, 1::int8 FROM {s}.events e \
              WHERE e.execution_id > $1::text ORDER BY e.execution_id LIMIT 1) \
           UNION ALL \
             SELECT (SELECT e.execution_id FROM {s}.events e \
                     WHERE e.execution_id > p.execution_id ORDER BY e.execution_id LIMIT 1), \
                    p.n + 1 \
             FROM page p WHERE p.execution_id IS NOT NULL AND p.n < $2::int8) \
         SELECT p.execution_id, \
                (SELECT max(e.sequence) FROM {s}.events e WHERE e.execution_id = p.execution_id), \
                ended.sequence, ended.at \
         FROM page p \
         LEFT JOIN LATERAL (SELECT e.sequence, e.at FROM {s}.events e \
                            WHERE e.execution_id = p.execution_id AND {terminal} \
                            ORDER BY e.sequence LIMIT 1) ended ON true \
         WHERE p.execution_id IS NOT NULL \
         ORDER BY p.n",
        terminal = terminal_filter("e.kind"),
    )
}

/// The guarded delete's answer codes (the function's `outcome` column).
pub(crate) mod outcome {
    /// The log was deleted.
    pub(crate) const DELETED: &str = "deleted";
    /// The log's head is not the guard's; `head` says what it is.
    pub(crate) const LOG_CHANGED: &str = "log_changed";
    /// A parent moved; `moved` names the first, in guard order.
    pub(crate) const PARENT_MOVED: &str = "parent_moved";
}

/// The guarded delete's call: `$1` id, `$2` the guard's head, `$3`/`$4` the
/// parents and the heads their pin checks saw (same length, guard order),
/// `$5`/`$6` the answering and all kernel kinds.
pub(crate) fn delete_execution_if_call(schema: &Schema) -> String {
    format!(
        "SELECT outcome, head, moved FROM {schema}.delete_execution_if( \
           $1, $2::int8, $3::text[], $4::int8[], $5::text[], $6::text[])"
    )
}

/// The guarded delete as a PL/pgSQL function (READ COMMITTED, as every
/// function of the store): one round trip, one transaction, bound values.
///
/// 1. The execution locks (the key every append takes first) of the child
///    and of every parent, each once, in one global order (the lock key,
///    then the id), so two guarded deletes whose children and parents
///    cross take them in the same order and cannot deadlock. A parent's
///    append (its park) therefore either committed before the lock was
///    granted, and the checks below see it, or waits until this delete
///    commits, and then it is a park on an already-deleted child.
/// 2. The child's fence row `FOR UPDATE`, as the plain delete takes it.
/// 3. Fresh-snapshot checks (each statement of a volatile function takes
///    its own snapshot under READ COMMITTED, after the locks were granted):
///    the child's head against the guard's, then each parent, the first
///    moved one in guard order (a log again, shorter than what was seen,
///    or an answering event past it: the conditional acquire's own test;
///    a parent with no log has not moved, as the core's `parent_moved`
///    says).
/// 4. The plain delete's deletion, the same SQL ([`delete_log`]).
///
/// A parent list longer than the seen list is refused (`22023`): the store
/// binds them from one guard, so that is a caller this store did not write.
pub(crate) fn delete_execution_if_function(schema: &Schema) -> String {
    let s = schema.as_str();
    format!(
        "CREATE OR REPLACE FUNCTION {s}.delete_execution_if( \
           p_id text, p_head bigint, p_parents text[], p_seen bigint[], \
           p_answering text[], p_kernel text[], \
           OUT outcome text, OUT head bigint, OUT moved text) \
         LANGUAGE plpgsql VOLATILE AS $fn$ \
         DECLARE v_key text; v_deleted bigint; \
         BEGIN \
           {rc} \
           IF cardinality(p_parents) <> cardinality(p_seen) THEN \
             RAISE EXCEPTION 'loomfence: delete_execution_if got % parents and % seen heads', \
               cardinality(p_parents), cardinality(p_seen) USING ERRCODE = '22023'; \
           END IF; \
           FOR v_key IN SELECT k.id FROM unnest(array_append(p_parents, p_id)) AS k(id) \
                        GROUP BY k.id ORDER BY hashtext(k.id), k.id LOOP \
             {lock} \
           END LOOP; \
           {fence_row} \
           SELECT COALESCE(max(e.sequence), 0) INTO head FROM {s}.events e WHERE e.execution_id = p_id; \
           IF head <> p_head THEN \
             outcome := '{log_changed}'; \
             RETURN; \
           END IF; \
           SELECT m.parent INTO moved \
             FROM unnest(p_parents, p_seen) WITH ORDINALITY AS m(parent, seen, n) \
             WHERE {moved} \
                OR EXISTS (SELECT 1 FROM {s}.events e \
                           WHERE e.execution_id = m.parent AND e.sequence > m.seen AND {answering}) \
             ORDER BY m.n LIMIT 1; \
           IF moved IS NOT NULL THEN \
             outcome := '{parent_moved}'; \
             RETURN; \
           END IF; \
           {delete} \
           outcome := '{deleted}'; \
         END $fn$",
        rc = require_read_committed("delete_execution_if"),
        moved = replaced_parent(s, "m"),
        lock = execution_lock_of(s, "v_key"),
        fence_row = lock_fence_row(s),
        answering = answering("p_answering", "p_kernel"),
        delete = delete_log(s),
        log_changed = outcome::LOG_CHANGED,
        parent_moved = outcome::PARENT_MOVED,
        deleted = outcome::DELETED,
    )
}

/// Whether the guard entry `m` (with `m.parent` and `m.seen`) names a
/// parent whose log was replaced: it has a log again, shorter than the one
/// its pin check saw. With the answering test, the core's `parent_moved`.
fn replaced_parent(s: &str, m: &str) -> String {
    format!(
        "COALESCE((SELECT max(e.sequence) FROM {s}.events e \
                   WHERE e.execution_id = {m}.parent), 0) BETWEEN 1 AND {m}.seen - 1"
    )
}

/// The batched guarded delete's call: `$1`/`$2` the entries' ids and the
/// heads their guards saw, `$3`/`$4`/`$5` every guard's parents flattened
/// (the entry each belongs to, 1-based, the parent, the head seen), `$6`/
/// `$7` the answering and all kernel kinds. It answers one outcome, head
/// and moved parent per entry, in order.
pub(crate) fn delete_executions_if_call(schema: &Schema) -> String {
    format!(
        "SELECT outcomes, heads, moved FROM {schema}.delete_executions_if( \
           $1::text[], $2::int8[], $3::int4[], $4::text[], $5::int8[], $6::text[], $7::text[])"
    )
}

/// The batched guarded delete as a PL/pgSQL function: one round trip and
/// one transaction for a batch the sweep sized ([`DELETE_BATCH_KEYS`]
/// executions locked at most), judged and deleted set-based.
///
/// 1. The execution locks of every entry and every parent, each once, in
///    the single delete's global order (the lock key, then the id), so a
///    batch, a single guarded delete and the appends can never deadlock.
/// 2. The entries' fence rows `FOR UPDATE`, in id order.
/// 3. One statement judges every entry against the state once the locks
///    are held, as the single delete does: its head against its guard's,
///    then the first moved parent in guard order. The entries' own logs
///    are distinct, and a parent deleted by the same batch was unchanged
///    (else its own entry is refused), so judging all before deleting any
///    gives the outcomes entry-by-entry deletion gives.
/// 4. The single delete's statements ([`delete_logs`]), for every entry
///    judged `deleted`, at once.
///
/// The function runs with `enable_seqscan = off`: its statements match a
/// few hundred ids with `= ANY(array)`, which the planner, without
/// statistics on a freshly filled table, estimated at half the table and
/// answered with a sequential scan of `events` per batch (measured: 17 to
/// 21 ms a batch at 100,000 executions, "Rows Removed by Filter: 189,491";
/// an index scan takes about 1 ms). Every statement here has an index for
/// its ids, so the setting only takes away the plan that grows with the
/// table.
///
/// [`DELETE_BATCH_KEYS`]: loomfence_core::retention::DELETE_BATCH_KEYS
pub(crate) fn delete_executions_if_function(schema: &Schema) -> String {
    let s = schema.as_str();
    format!(
        "CREATE OR REPLACE FUNCTION {s}.delete_executions_if( \
           p_ids text[], p_heads bigint[], p_owners int[], p_parents text[], p_seen bigint[], \
           p_answering text[], p_kernel text[], \
           OUT outcomes text[], OUT heads bigint[], OUT moved text[]) \
         LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $fn$ \
         DECLARE v_key text; v_gone text[]; v_deleted bigint; \
         BEGIN \
           {rc} \
           IF cardinality(p_ids) <> cardinality(p_heads) \
              OR cardinality(p_owners) <> cardinality(p_parents) \
              OR cardinality(p_parents) <> cardinality(p_seen) THEN \
             RAISE EXCEPTION 'loomfence: delete_executions_if got arrays of different lengths' \
               USING ERRCODE = '22023'; \
           END IF; \
           FOR v_key IN SELECT k.id FROM unnest(p_ids || p_parents) AS k(id) \
                        GROUP BY k.id ORDER BY hashtext(k.id), k.id LOOP \
             {lock} \
           END LOOP; \
           PERFORM 1 FROM {s}.fences f WHERE f.execution_id = ANY(p_ids) \
             ORDER BY f.execution_id FOR UPDATE; \
           WITH moved_by AS ( \
             SELECT DISTINCT ON (m.owner) m.owner, m.parent \
             FROM unnest(p_owners, p_parents, p_seen) WITH ORDINALITY AS m(owner, parent, seen, n) \
             WHERE {replaced} \
                OR EXISTS (SELECT 1 FROM {s}.events e \
                           WHERE e.execution_id = m.parent AND e.sequence > m.seen AND {answering}) \
             ORDER BY m.owner, m.n) \
           SELECT array_agg(CASE WHEN h.head <> c.want THEN '{log_changed}' \
                                 WHEN mb.parent IS NOT NULL THEN '{parent_moved}' \
                                 ELSE '{deleted}' END ORDER BY c.n), \
                  array_agg(h.head ORDER BY c.n), \
                  array_agg(mb.parent ORDER BY c.n), \
                  array_agg(c.id ORDER BY c.n) FILTER (WHERE h.head = c.want AND mb.parent IS NULL) \
             INTO outcomes, heads, moved, v_gone \
             FROM unnest(p_ids, p_heads) WITH ORDINALITY AS c(id, want, n) \
             CROSS JOIN LATERAL (SELECT COALESCE(max(e.sequence), 0) AS head FROM {s}.events e \
                                 WHERE e.execution_id = c.id) h \
             LEFT JOIN moved_by mb ON mb.owner = c.n; \
           IF v_gone IS NOT NULL THEN \
             {delete} \
           END IF; \
         END $fn$",
        rc = require_read_committed("delete_executions_if"),
        lock = execution_lock_of(s, "v_key"),
        replaced = replaced_parent(s, "m"),
        answering = answering("p_answering", "p_kernel"),
        delete = delete_logs(s, "= ANY(v_gone)"),
        log_changed = outcome::LOG_CHANGED,
        parent_moved = outcome::PARENT_MOVED,
        deleted = outcome::DELETED,
    )
}

/// The batched read of whole logs through [`read_logs_function`]: `$1`
/// the ids. Rows come in the order asked, each log in sequence order; the
/// caller puts each row in the log of the id at its position `n`
/// (1-based).
pub(crate) fn read_logs(schema: &Schema) -> String {
    format!("SELECT n, sequence, kind, payload, metadata, at FROM {schema}.read_logs($1::text[])")
}

/// The batched read as a function, so that it can run with
/// `enable_seqscan = off`, as [`delete_executions_if_function`] does and
/// for the same reason: on a freshly filled table without statistics the
/// planner took a few hundred ids for half the table, and read the logs
/// of one page with a sequential scan (a plain statement cannot carry the
/// setting; measured 41 ms a page at 100,000 executions against 3 ms at
/// 10,000). Each id is a lookup of the primary key. PL/pgSQL, like every
/// function of the store: a `LANGUAGE sql` body is parsed when it is
/// created, which locks `events`, so a boot's migration would wait behind
/// any lock on the table.
pub(crate) fn read_logs_function(schema: &Schema) -> String {
    let s = schema.as_str();
    format!(
        "CREATE OR REPLACE FUNCTION {s}.read_logs(p_ids text[]) \
           RETURNS TABLE (n bigint, sequence bigint, kind text, payload jsonb, metadata jsonb, at bigint) \
         LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $fn$ \
         #variable_conflict use_column \
         BEGIN \
           RETURN QUERY \
             SELECT a.n, e.sequence, e.kind, e.payload, e.metadata, e.at \
             FROM unnest(p_ids) WITH ORDINALITY AS a(id, n) \
             JOIN {s}.events e ON e.execution_id = a.id \
             ORDER BY a.n, e.sequence; \
         END $fn$"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_filter_is_the_folds_four_end_kinds_quoted_safely() {
        let names: Vec<&str> = terminal_kinds().map(KernelKind::as_str).collect();
        assert_eq!(
            names,
            [
                "EXECUTION_COMPLETED",
                "EXECUTION_FAILED",
                "EXECUTION_CANCELLED",
                "EXECUTION_CONTINUED"
            ]
        );
        for name in names {
            assert!(name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
        }
    }

    #[test]
    fn the_listing_filters_ends_with_the_indexs_own_predicate() {
        let schema = Schema::default();
        let index = ended_index_ddl(&schema, false);
        let predicate = index.split(" WHERE ").nth(1).expect("a partial index");
        assert!(
            list_executions(&schema).contains(&format!("e.{predicate}")),
            "the planner proves the partial index usable only from the same kinds"
        );
    }

    #[test]
    fn the_guarded_delete_locks_every_execution_before_it_reads() {
        let ddl = delete_execution_if_function(&Schema::default());
        let lock = ddl.find("pg_advisory_xact_lock").expect("takes locks");
        let order = ddl.find("ORDER BY hashtext(k.id), k.id").expect("sorted");
        let row = ddl.find("FOR UPDATE").expect("locks the fence row");
        let head = ddl.find("INTO head").expect("reads the head");
        assert!(order < lock && lock < row && row < head);
        assert!(ddl.contains(&delete_log("loomfence")));
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;

    #[test]
    fn the_batched_delete_locks_every_execution_before_it_judges_and_deletes_as_one_does() {
        let ddl = delete_executions_if_function(&Schema::default());
        let order = ddl.find("ORDER BY hashtext(k.id), k.id").expect("sorted");
        let lock = ddl.find("pg_advisory_xact_lock").expect("takes locks");
        let rows = ddl.find("FOR UPDATE").expect("locks the fence rows");
        let judge = ddl.find("moved_by AS").expect("judges");
        let delete = ddl.find("DELETE FROM loomfence.events").expect("deletes");
        assert!(order < lock && lock < rows && rows < judge && judge < delete);
        assert!(ddl.contains(&delete_logs("loomfence", "= ANY(v_gone)")));
        assert!(
            delete_execution_if_function(&Schema::default())
                .contains(&replaced_parent("loomfence", "m")),
            "the single and the batched delete share the parent rule"
        );
    }

    #[test]
    fn the_batched_statements_never_scan_the_whole_table() {
        for ddl in [
            delete_executions_if_function(&Schema::default()),
            read_logs_function(&Schema::default()),
        ] {
            assert!(ddl.contains("SET enable_seqscan = off"), "{ddl}");
        }
        assert!(read_logs(&Schema::default()).contains("loomfence.read_logs($1::text[])"));
    }
}
