//! Every SQL statement the inbox sends, and the DDL of its table, built
//! once per schema.
//!
//! As in `timer_sql.rs`, the schema name is the only text spliced in, and
//! it is a validated identifier; ids, channels, payloads and times are
//! bound parameters.

use crate::config::Schema;

/// The table's name inside the schema.
pub(crate) const TABLE: &str = "inbox";

/// The pending scan's index, inside the schema.
pub(crate) const PENDING_INDEX: &str = "inbox_pending";

/// Every column the table has, as `migrate` creates it: an `inbox` table
/// without one of them is not one this store can use.
pub(crate) const COLUMNS: [&str; 7] = [
    "execution_id",
    "channel",
    "message_id",
    "payload",
    "sent_at",
    "arrival",
    "consumed",
];

/// The table, for a schema that has none.
///
/// `arrival` is an identity column: numbers increase with the order the
/// sends drew them in, across every execution and channel, which is the
/// core's `InboxTable` numbering. Drawing order is not commit order by
/// itself; the send's channel lock makes it so per channel (see
/// [`InboxSql::lock`]).
pub(crate) fn create_table(schema: &Schema) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {schema}.{TABLE} ( \
           execution_id text NOT NULL, \
           channel text NOT NULL, \
           message_id text NOT NULL, \
           payload jsonb NOT NULL, \
           sent_at bigint NOT NULL, \
           arrival bigint GENERATED ALWAYS AS IDENTITY, \
           consumed boolean NOT NULL DEFAULT false, \
           PRIMARY KEY (execution_id, channel, message_id))"
    )
}

/// The pending scan's index: `(execution_id, arrival)` over the rows not
/// consumed.
///
/// `pending` asks for one execution's unconsumed messages on a set of
/// channels, in arrival order, up to a limit. This index hands them over in
/// that order for any set of channels: the scan walks one execution's
/// entries by arrival, drops the other channels' rows, and stops at the
/// limit, with no sort. Keyed by channel too, it would need a merge of one
/// range per channel. Partial, so consumed messages (which stay until
/// retention purges them, to recognise a late duplicate) leave it when
/// they are marked, and a long-lived execution's scan reads only what is
/// still pending.
pub(crate) fn create_index(schema: &Schema) -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS {PENDING_INDEX} ON {schema}.{TABLE} \
         (execution_id, arrival) WHERE NOT consumed"
    )
}

/// The deletion of the messages of the executions whose id `ids` matches
/// (`= p_id` for one) inside the delete functions, in their
/// transaction, when the table exists. `migrate` creates the functions
/// before the table, and a schema can lose the table (an operator drops
/// it) while keeping its logs: the deletes must work there too. PL/pgSQL
/// plans the `DELETE` only when it runs, so the function is valid either
/// way.
pub(crate) fn delete_of_execution(s: &str, ids: &str) -> String {
    format!(
        "IF to_regclass('{s}.{TABLE}') IS NOT NULL THEN \
           DELETE FROM {s}.{TABLE} i WHERE i.execution_id {ids}; \
         END IF;"
    )
}

/// The statements, for one schema.
#[derive(Debug)]
pub(crate) struct InboxSql {
    /// The channel lock of a send: `$1` execution id, `$2` channel.
    pub(crate) lock: String,
    /// The insert, or the stored arrival of a key already there: `$1` id,
    /// `$2` channel, `$3` message id, `$4` payload (`jsonb`), `$5`
    /// sent_at. Answers one row, `arrival` and `inserted`.
    pub(crate) insert: String,
    /// Pending messages: `$1` id, `$2` channels (`text[]`), `$3` limit.
    /// Columns `channel`, `message_id`, `payload`, `sent_at`, `arrival`.
    pub(crate) pending: String,
    /// Marks a key consumed if it is not: `$1`..`$3`.
    pub(crate) mark_consumed: String,
    /// Deletes an execution's messages: `$1` id.
    pub(crate) purge: String,
    /// Every message of an execution: `$1` id. Columns as `pending`, then
    /// `consumed`.
    pub(crate) messages: String,
}

impl InboxSql {
    /// Builds every statement for `schema`.
    pub(crate) fn new(schema: &Schema) -> Self {
        let t = format!("{schema}.{TABLE}");
        Self {
            lock: lock(schema),
            insert: insert(&t),
            pending: format!(
                "SELECT channel, message_id, payload, sent_at, arrival FROM {t} \
                 WHERE execution_id = $1 AND channel = ANY($2::text[]) AND NOT consumed \
                 ORDER BY arrival LIMIT $3"
            ),
            mark_consumed: format!(
                "UPDATE {t} SET consumed = true \
                 WHERE execution_id = $1 AND channel = $2 AND message_id = $3 AND NOT consumed"
            ),
            purge: format!("DELETE FROM {t} WHERE execution_id = $1"),
            messages: format!(
                "SELECT channel, message_id, payload, sent_at, arrival, consumed FROM {t} \
                 WHERE execution_id = $1 ORDER BY arrival"
            ),
        }
    }
}

/// The send's insert, run after the channel lock was granted: the stored
/// row of the key if there is one, else a new row with the next arrival.
///
/// The insert draws its arrival only when the key is absent (an `INSERT …
/// SELECT … WHERE NOT EXISTS`): a bare `INSERT … ON CONFLICT DO NOTHING`
/// evaluates the identity default before it finds the conflict, so every
/// duplicate would burn an arrival number, and the numbers would stop
/// being the core's `InboxTable` numbering (a duplicate assigns none).
/// The statement's snapshot is taken after the lock, so a send of the same
/// key (same channel, same lock) that committed earlier is seen by
/// `found`; `ON CONFLICT DO NOTHING` stays as the backstop for a writer
/// that did not take the lock, whose conflicting row makes the statement
/// answer no row.
fn insert(t: &str) -> String {
    format!(
        "WITH found AS (\
             SELECT arrival FROM {t} \
             WHERE execution_id = $1 AND channel = $2 AND message_id = $3), \
         inserted AS (\
             INSERT INTO {t} (execution_id, channel, message_id, payload, sent_at) \
             SELECT $1::text, $2::text, $3::text, $4::jsonb, $5::bigint \
             WHERE NOT EXISTS (SELECT 1 FROM found) \
             ON CONFLICT (execution_id, channel, message_id) DO NOTHING \
             RETURNING arrival) \
         SELECT arrival, true AS inserted FROM inserted \
         UNION ALL SELECT arrival, false FROM found"
    )
}

/// The channel lock: a transaction-scoped advisory lock on the pair
/// `(execution_id, channel)`, taken by every send before it draws its
/// arrival number.
///
/// An identity column hands out numbers when the `INSERT` runs, not when
/// it commits: a send that drew 5 can commit after one that drew 6, and a
/// delivery reading the channel in between would consume 6 first, then
/// find 5 behind it. The lock makes the sends of one channel draw and
/// commit one at a time, so a listed message never has an earlier one of
/// its channel still to commit: arrival order is commit order on each
/// channel, as the inbox trait promises.
///
/// The key is two `int4`s. The first is `hashtext` of a text naming the
/// inbox of this schema, which keeps the keys apart from the execution
/// locks of the appends (`hashtext('loomfence.<schema>')`) and from other
/// schemas. The second is `hashtext` of the pair, encoded without
/// ambiguity (the id's length, a colon, the id, the channel), so two pairs
/// never share an input. `hashtext` is the server's own stable text hash,
/// computed from the bound values in the statement: the lock needs no
/// client code to agree with it. Two pairs whose hashes collide only
/// serialize each other's sends; they never change what a send stores or
/// the order a channel reads in. The lock is the first thing a send
/// takes and it is held only for the send, so it waits for no other lock
/// while it holds one that another send needs.
fn lock(schema: &Schema) -> String {
    format!(
        "SELECT pg_advisory_xact_lock(hashtext('loomfence.inbox.{schema}'), \
         hashtext(length($1::text)::text || ':' || $1::text || $2::text))"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_apart_from_the_execution_locks() {
        let sql = InboxSql::new(&Schema::default());
        assert!(sql.lock.contains("hashtext('loomfence.inbox.loomfence')"));
        assert!(!sql.lock.contains("hashtext('loomfence.loomfence')"));
    }

    #[test]
    fn the_insert_draws_an_arrival_only_for_an_absent_key() {
        let sql = InboxSql::new(&Schema::default());
        let found = sql
            .insert
            .find("WITH found AS")
            .expect("reads the key first");
        let guarded = sql
            .insert
            .find("WHERE NOT EXISTS (SELECT 1 FROM found)")
            .expect("inserts only when absent");
        assert!(found < guarded);
        assert!(
            !sql.insert.contains("VALUES"),
            "a VALUES row would draw always"
        );
    }

    #[test]
    fn the_pending_scan_reads_the_partial_index_order() {
        let schema = Schema::default();
        let sql = InboxSql::new(&schema);
        assert!(create_index(&schema).contains("(execution_id, arrival) WHERE NOT consumed"));
        assert!(
            sql.pending
                .contains("AND NOT consumed ORDER BY arrival LIMIT $3")
        );
    }
}
