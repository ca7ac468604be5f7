//! Pieces of SQL that the statements of the logs ([`sql`](crate::sql))
//! and of retention ([`retention_sql`](crate::retention_sql)) share, so
//! the two lock, test and delete the same way.

/// The answering test over an `events` row aliased `e`, given the answering
/// kernel kinds and every kernel kind as `text[]` expressions. It is the SQL
/// twin of `loomfence_core::log::is_answering`; the conformance kit checks the two
/// agree.
pub(crate) fn answering(answering_kinds: &str, kernel_kinds: &str) -> String {
    format!(
        "(e.kind = ANY({answering_kinds}) OR (e.kind <> ALL({kernel_kinds}) \
         AND e.metadata -> 'kernel' = 'true'::jsonb))"
    )
}

/// Fails a function called outside READ COMMITTED, whose fresh snapshot per
/// statement the functions rely on.
pub(crate) fn require_read_committed(function: &str) -> String {
    format!(
        "IF current_setting('transaction_isolation') <> 'read committed' THEN \
           RAISE EXCEPTION 'loomfence: {function} needs READ COMMITTED, the transaction is %', \
             current_setting('transaction_isolation') USING ERRCODE = '25000'; \
         END IF;"
    )
}

/// The execution lock (the one the append and delete functions take on
/// `p_id`) of the execution whose id is the PL/pgSQL expression
/// `id`: the one lock key every append and delete of that execution takes,
/// so a function that must exclude the appends of several executions (the
/// guarded delete, for the child and each parent) takes exactly theirs.
pub(crate) fn execution_lock_of(s: &str, id: &str) -> String {
    format!("PERFORM {};", execution_lock_call(s, id))
}

/// The call that takes [`execution_lock_of`]'s lock, as an expression.
pub(crate) fn execution_lock_call(s: &str, id: &str) -> String {
    format!("pg_advisory_xact_lock(hashtext('loomfence.{s}'), hashtext({id}))")
}

/// The delete's first row lock, after the execution lock: the fence row of
/// `p_id` `FOR UPDATE`, so a conditional acquire (which locks that row and
/// takes no execution lock) is not half-way when the log goes.
pub(crate) fn lock_fence_row(s: &str) -> String {
    format!("PERFORM 1 FROM {s}.fences f WHERE f.execution_id = p_id FOR UPDATE;")
}

/// The deletion itself, for `p_id`, once the locks are held: the log (with
/// its open park, and what the feed's head keeps of it), then a token-0
/// fence row (inert, a park's); a real token is kept, so a zombie
/// writer of a re-created id stays fenced out. Then the execution's inbox
/// messages, which go with its log: a re-created id must not find the old
/// one's messages pending, or a sender's new message refused as a
/// duplicate of an old one. Counts the deleted events into `v_deleted`
/// (which the function declares). Shared by the plain and the guarded
/// delete, so the two cannot delete differently.
pub(crate) fn delete_log(s: &str) -> String {
    delete_logs(s, "= p_id")
}

/// [`delete_log`] for every execution whose id `ids` matches (an SQL
/// comparison completing `execution_id …`, as `= ANY(v_gone)`): the same
/// statements, set-based, so a batch of guarded deletes deletes exactly as
/// the single ones do.
pub(crate) fn delete_logs(s: &str, ids: &str) -> String {
    format!(
        "{log} \
         DELETE FROM {s}.fences f WHERE f.execution_id {ids} AND f.token = 0; \
         {inbox}",
        log = crate::feed_sql::delete_upkeep(s, ids),
        inbox = crate::inbox_sql::delete_of_execution(s, ids),
    )
}
