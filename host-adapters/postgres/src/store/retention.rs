//! What retention asks of the store: the paged listing, the batched read of
//! whole logs and the guarded deletes, single and batched, each one
//! statement (see `retention_sql` for the SQL and why it is shaped so).

use loomfence_core::{
    Envelope, ExecutionId,
    retention::{
        DeleteGuard, DeleteIf, Ended, ExecutionSummary, GuardedDelete, check_delete_batch,
        check_guard, check_page_limit, check_read_batch,
    },
};
use loomfence_store::StoreError;
use tokio_postgres::types::ToSql;

use super::{PostgresEventStore, answering_kinds, envelope, kernel_kinds, to_i64, to_u64};
use crate::error;
use crate::retention_sql::outcome;

impl PostgresEventStore {
    /// The listing: the limit is checked before anything is sent, and the
    /// page comes from one statement (one snapshot), in the `execution_id`
    /// column's collation.
    pub(super) async fn list(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let limit = i64::from(check_page_limit(limit)?);
        let after = after.map_or("", ExecutionId::as_str);
        let rows = self
            .client()
            .await?
            .rows(&self.sql.list_executions, &[&after, &limit])
            .await?;
        rows.into_iter()
            .map(|row| {
                let id: String = row.try_get(0).map_err(error::store)?;
                let execution_id = ExecutionId::new(id)
                    .map_err(|e| error::corrupt(format!("stored execution id: {e}")))?;
                let head: Option<i64> = row.try_get(1).map_err(error::store)?;
                let head = head.ok_or_else(|| {
                    error::corrupt(format!("{execution_id:?} listed without a head"))
                })?;
                let sequence: Option<i64> = row.try_get(2).map_err(error::store)?;
                let at: Option<i64> = row.try_get(3).map_err(error::store)?;
                Ok(ExecutionSummary {
                    execution_id,
                    head: to_u64(head),
                    ended: sequence.zip(at).map(|(sequence, at)| Ended {
                        sequence: to_u64(sequence),
                        at,
                    }),
                })
            })
            .collect()
    }

    /// The whole logs of `ids` in one statement (one snapshot), put back in
    /// the order asked; an id with no log reads as empty.
    pub(super) async fn read_logs_at_once(
        &self,
        ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        check_read_batch(ids)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let asked: Vec<&str> = ids.iter().map(ExecutionId::as_str).collect();
        let rows = self
            .client()
            .await?
            .rows(&self.sql.read_logs, &[&asked])
            .await?;
        let mut logs: Vec<Vec<Envelope>> = vec![Vec::new(); ids.len()];
        for row in &rows {
            let n: i64 = row.try_get(0).map_err(error::store)?;
            let (log, execution_id) = usize::try_from(n - 1)
                .ok()
                .and_then(|at| logs.get_mut(at).zip(ids.get(at)))
                .ok_or_else(|| error::corrupt(format!("read_logs answered position {n}")))?;
            log.push(envelope(row, 1, execution_id.clone())?);
        }
        Ok(logs)
    }

    /// The batched guarded delete through the installed function: every
    /// guard is checked before any lock is taken, then one call. A
    /// connection lost once it was sent makes it
    /// [`StoreError::OutcomeUnknown`] (it may have deleted).
    pub(super) async fn delete_if_batch(
        &self,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        check_delete_batch(batch)?;
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = batch.iter().map(|e| e.execution_id.as_str()).collect();
        let heads: Vec<i64> = batch.iter().map(|e| to_i64(e.guard.head)).collect();
        let (mut owners, mut parents, mut seen) = (Vec::new(), Vec::new(), Vec::new());
        for (owner, entry) in (1_i32..).zip(batch) {
            for mark in &entry.guard.parents {
                owners.push(owner);
                parents.push(mark.parent.as_str());
                seen.push(to_i64(mark.seen));
            }
        }
        let (answering, kernel) = (answering_kinds(), kernel_kinds());
        let params: [&(dyn ToSql + Sync); 7] =
            [&ids, &heads, &owners, &parents, &seen, &answering, &kernel];
        let row = self
            .client()
            .await?
            .write_row(&self.sql.delete_executions_if_call, &params)
            .await?;
        let codes: Vec<String> = row.try_get(0).map_err(error::store)?;
        let heads: Vec<i64> = row.try_get(1).map_err(error::store)?;
        let moved: Vec<Option<String>> = row.try_get(2).map_err(error::store)?;
        if codes.len() != batch.len() || heads.len() != batch.len() || moved.len() != batch.len() {
            return Err(error::corrupt(format!(
                "delete_executions_if answered {} outcomes to {} entries",
                codes.len(),
                batch.len()
            )));
        }
        codes
            .into_iter()
            .zip(heads)
            .zip(moved)
            .map(|((code, head), moved)| outcome_of(Some(code), Some(head), moved))
            .collect()
    }

    /// The guarded delete through the installed function. The guard is
    /// checked before any lock is taken; a connection lost once the call
    /// was sent makes it [`StoreError::OutcomeUnknown`] (it may have
    /// deleted).
    pub(super) async fn delete_if(
        &self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        check_guard(guard)?;
        let parents: Vec<&str> = guard.parents.iter().map(|m| m.parent.as_str()).collect();
        let seen: Vec<i64> = guard.parents.iter().map(|m| to_i64(m.seen)).collect();
        let (answering, kernel) = (answering_kinds(), kernel_kinds());
        let id = execution_id.as_str();
        let head = to_i64(guard.head);
        let params: [&(dyn ToSql + Sync); 6] = [&id, &head, &parents, &seen, &answering, &kernel];
        let row = self
            .client()
            .await?
            .write_row(&self.sql.delete_execution_if_call, &params)
            .await?;
        let code: Option<String> = row.try_get(0).map_err(error::store)?;
        let head: Option<i64> = row.try_get(1).map_err(error::store)?;
        let moved: Option<String> = row.try_get(2).map_err(error::store)?;
        outcome_of(code, head, moved)
    }
}

/// A guarded delete's answer from the function's `outcome`, `head` and
/// `moved`; anything else is a corrupt answer.
fn outcome_of(
    code: Option<String>,
    head: Option<i64>,
    moved: Option<String>,
) -> Result<GuardedDelete, StoreError> {
    match (code.as_deref(), head, moved) {
        (Some(outcome::DELETED), _, None) => Ok(GuardedDelete::Deleted),
        (Some(outcome::LOG_CHANGED), Some(head), None) => {
            Ok(GuardedDelete::LogChanged { head: to_u64(head) })
        }
        (Some(outcome::PARENT_MOVED), _, Some(parent)) => {
            let parent = ExecutionId::new(parent)
                .map_err(|e| error::corrupt(format!("moved parent id: {e}")))?;
            Ok(GuardedDelete::ParentMoved { parent })
        }
        (code, head, moved) => Err(error::corrupt(format!(
            "a guarded delete answered outcome={code:?}, head={head:?}, moved={moved:?}"
        ))),
    }
}

#[cfg(feature = "unsafe-test-hooks")]
impl PostgresEventStore {
    /// TEST ONLY: the plan of one listing call, `EXPLAIN (ANALYZE, BUFFERS)`
    /// as text, so tests can check the indexes serve it. With `generic`,
    /// the generic plan (`plan_cache_mode = force_generic_plan`), which a
    /// pooled connection may settle on after five calls; otherwise the
    /// custom plan for these values. The session is closed afterwards.
    pub async fn explain_list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
        generic: bool,
    ) -> Result<String, StoreError> {
        let limit = i64::from(check_page_limit(limit)?);
        let after = after.map_or("", ExecutionId::as_str);
        let client = self.client().await?;
        client.discard();
        let mode = if generic {
            "force_generic_plan"
        } else {
            "force_custom_plan"
        };
        client
            .batch_execute(&format!(
                "SET plan_cache_mode = {mode}; PREPARE listing(text, int8) AS {}",
                self.sql.list_executions
            ))
            .await
            .map_err(|e| client.store(e))?;
        // `EXECUTE` takes no bind parameters: the id is quoted by the
        // server, the limit is an integer.
        let quoted: String = client
            .query_one("SELECT quote_literal($1::text)", &[&after])
            .await
            .map_err(|e| client.store(e))?
            .try_get(0)
            .map_err(error::store)?;
        let rows = client
            .query(
                &format!("EXPLAIN (ANALYZE, BUFFERS) EXECUTE listing({quoted}, {limit})"),
                &[],
            )
            .await
            .map_err(|e| client.store(e))?;
        rows.iter()
            .map(|row| row.try_get::<_, String>(0).map_err(error::store))
            .collect::<Result<Vec<_>, _>>()
            .map(|lines| lines.join("\n"))
    }
}
