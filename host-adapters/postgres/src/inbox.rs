//! The `InboxStore` implementation on the timer store: the core's
//! `InboxTable` rules over the `inbox` table, and a send that writes its
//! message and its intent row in one transaction.

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId,
    inbox::{InboxEntry, Message, MessageKey, Sent, StoredMessage, check_pending},
    timer::{TimerRow, check_row},
};
use loomfence_store::{BackendError, InboxStore, StoreError};
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::{Json, ToSql};

use crate::timers::{PostgresTimerStore, roll_back};

/// A row of the inbox that does not read back as a message (an invalid
/// channel or id, a payload a send would refuse, a time or arrival out of
/// range): the table holds data this store did not write. Permanent, and
/// it names the row.
fn corrupt_message(
    execution_id: &ExecutionId,
    row: &str,
    detail: impl std::fmt::Display,
) -> StoreError {
    StoreError::Backend(BackendError::permanent(format!(
        "corrupt inbox row of {:?} {row}: {detail}",
        execution_id.as_str()
    )))
}

/// Reads one listed row of `execution_id`: `channel`, `message_id`,
/// `payload`, `sent_at`, `arrival` from column 0, held to the checks a
/// send makes before it stores a message.
fn read_message(execution_id: &ExecutionId, row: &Row) -> Result<StoredMessage, StoreError> {
    let channel: String = column(execution_id, "", row, 0, "channel")?;
    let message_id: String = column(execution_id, "", row, 1, "message_id")?;
    let name = format!("({channel:?}, {message_id:?})");
    let Json(payload): Json<Value> = column(execution_id, &name, row, 2, "payload")?;
    let sent_at: i64 = column(execution_id, &name, row, 3, "sent_at")?;
    let arrival: i64 = column(execution_id, &name, row, 4, "arrival")?;
    let message = Message {
        key: MessageKey {
            execution_id: execution_id.clone(),
            channel,
            message_id,
        },
        payload,
        sent_at,
    };
    message
        .check()
        .map_err(|e| corrupt_message(execution_id, &name, e))?;
    let arrival = arrival_of(execution_id, &name, arrival)?;
    Ok(StoredMessage { message, arrival })
}

/// An arrival number as stored, which the identity column starts at 1.
fn arrival_of(execution_id: &ExecutionId, row_name: &str, arrival: i64) -> Result<u64, StoreError> {
    u64::try_from(arrival)
        .ok()
        .filter(|&arrival| arrival >= 1)
        .ok_or_else(|| {
            corrupt_message(
                execution_id,
                row_name,
                format!("arrival {arrival} is not 1 or more"),
            )
        })
}

/// One column, a type mismatch being a table this store did not make.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    execution_id: &ExecutionId,
    row_name: &str,
    row: &'a Row,
    index: usize,
    name: &str,
) -> Result<T, StoreError> {
    row.try_get(index)
        .map_err(|e| corrupt_message(execution_id, row_name, format!("column {name}: {e}")))
}

/// A `LIMIT` for the server; `check_pending` bounds it by
/// `MAX_PENDING_LIMIT`.
fn limit_of(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl PostgresTimerStore {
    /// The send's transaction, on one connection, in two round trips:
    ///
    /// 1. `BEGIN` (READ COMMITTED), the channel lock and the insert,
    ///    pipelined. The lock comes before the insert draws its arrival, so
    ///    the channel's sends draw and commit one at a time (see the lock's
    ///    SQL in `inbox_sql`), and a key sent before is seen by the insert
    ///    (its statement's snapshot is taken after the lock was granted),
    ///    which then answers that row's arrival and inserts nothing.
    /// 2. Inserted: the intent row with the timer store's own upsert and
    ///    `COMMIT`, pipelined. Found: `ROLLBACK`, having written nothing.
    ///
    /// Until `COMMIT` is sent nothing can commit, so a failure before it is
    /// a plain [`StoreError::Backend`] (the transaction is rolled back, or
    /// the connection discarded); a lost answer once `COMMIT` was sent is
    /// [`StoreError::OutcomeUnknown`]. The same send again is then safe:
    /// it stores the message or answers [`Sent::Duplicate`].
    async fn send_in_transaction(
        &self,
        message: &Message,
        intent: &TimerRow,
    ) -> Result<Sent, StoreError> {
        let client = self.client().await?;
        let prepare = |sql: &'static str| client.prepare_cached(sql);
        let begin = prepare("BEGIN ISOLATION LEVEL READ COMMITTED")
            .await
            .map_err(|e| client.store(e))?;
        let commit = prepare("COMMIT").await.map_err(|e| client.store(e))?;
        let lock = client
            .prepare_cached(&self.inbox.lock)
            .await
            .map_err(|e| client.store(e))?;
        let insert = client
            .prepare_cached(&self.inbox.insert)
            .await
            .map_err(|e| client.store(e))?;
        let schedule = client
            .prepare_cached(&self.sql.schedule)
            .await
            .map_err(|e| client.store(e))?;
        let key = &message.key;
        let (id, channel) = (key.execution_id.as_str(), key.channel.as_str());
        let message_id = key.message_id.as_str();
        let name = format!("({channel:?}, {message_id:?})");
        let payload = Json(&message.payload);
        let lock_params: [&(dyn ToSql + Sync); 2] = [&id, &channel];
        let insert_params: [&(dyn ToSql + Sync); 5] =
            [&id, &channel, &message_id, &payload, &message.sent_at];
        client.ready_to_write()?;
        let (began, locked, answered) = tokio::join!(
            client.execute(&begin, &[]),
            client.query_one(&lock, &lock_params),
            client.query_opt(&insert, &insert_params)
        );
        if let Err(e) = began {
            // No transaction is open. Had `BEGIN` been refused by the server
            // while the connection lived, the insert would have run (and
            // committed) on its own: its outcome is then not what we think.
            return Err(match answered {
                Ok(_) => StoreError::OutcomeUnknown(client.backend(e)),
                Err(_) => StoreError::Backend(client.backend(e)),
            });
        }
        let answer = match locked.and(answered) {
            Ok(Some(row)) => row
                .try_get::<_, i64>(0)
                .and_then(|arrival| Ok((arrival, row.try_get::<_, bool>(1)?)))
                .map_err(|e| {
                    corrupt_message(&key.execution_id, &name, format!("the send's answer: {e}"))
                }),
            Ok(None) => Err(StoreError::Backend(BackendError::retryable(format!(
                "the inbox row {name} of {id:?} was inserted by a writer that did not take \
                 the channel lock; nothing was written"
            )))),
            Err(e) => Err(client.store(e)),
        };
        let (arrival, inserted) = match answer {
            Ok(answer) => answer,
            Err(failed) => {
                roll_back(&client).await;
                return Err(failed);
            }
        };
        let arrival = arrival_of(&key.execution_id, &name, arrival);
        if !inserted {
            roll_back(&client).await;
            return Ok(Sent::Duplicate { arrival: arrival? });
        }
        let arrival = match arrival {
            Ok(arrival) => arrival,
            Err(failed) => {
                roll_back(&client).await;
                return Err(failed);
            }
        };
        let redrive = intent.redrive.map(Json);
        let intent_id = intent.execution_id.as_str();
        let schedule_params: [&(dyn ToSql + Sync); 3] = [&intent_id, &intent.wake_at, &redrive];
        let (scheduled, committed) = tokio::join!(
            client.execute(&schedule, &schedule_params),
            client.execute(&commit, &[])
        );
        match (scheduled, committed) {
            (Ok(_), Ok(_)) => Ok(Sent::Stored { arrival }),
            // The upsert failed at the server, so the transaction was aborted
            // and the `COMMIT` behind it rolled it back: nothing was written.
            (Err(e), Ok(_)) if e.as_db_error().is_some() => Err(client.store(e)),
            // No answer to `COMMIT` (or to the upsert before it): it may
            // have committed.
            (_, Err(e)) | (Err(e), Ok(_)) => Err(client.write_failed(e)),
        }
    }

    /// TEST ONLY: the send's channel lock and insert statements (`$1` id,
    /// `$2` channel; the insert then `$3` message id, `$4` payload, `$5`
    /// sent_at), so a test can hold a channel's send open in its own
    /// transaction and show what the lock orders.
    #[cfg(feature = "unsafe-test-hooks")]
    #[must_use]
    pub fn inbox_send_statements(&self) -> (&str, &str) {
        (&self.inbox.lock, &self.inbox.insert)
    }
}

/// Messages beside the timer rows, in the same schema: a send's message and
/// its intent row commit in one transaction. Arrival numbers come from an
/// identity column, drawn under a per-channel lock so that on each channel
/// they are the commit order (see `send_in_transaction`).
#[async_trait]
impl InboxStore for PostgresTimerStore {
    async fn send(&self, message: &Message, intent: &TimerRow) -> Result<Sent, StoreError> {
        message.check()?;
        check_row(intent)?;
        self.send_in_transaction(message, intent).await
    }

    async fn pending(
        &self,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        check_pending(channels, limit)?;
        let rows = self
            .client()
            .await?
            .rows(
                &self.inbox.pending,
                &[&execution_id.as_str(), &channels, &limit_of(limit)],
            )
            .await?;
        rows.iter()
            .map(|row| read_message(execution_id, row))
            .collect()
    }

    async fn mark_consumed(&self, key: &MessageKey) -> Result<bool, StoreError> {
        key.check()?;
        let changed = self
            .client()
            .await?
            .write(
                &self.inbox.mark_consumed,
                &[
                    &key.execution_id.as_str(),
                    &key.channel.as_str(),
                    &key.message_id.as_str(),
                ],
            )
            .await?;
        Ok(changed > 0)
    }

    async fn purge(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        self.client()
            .await?
            .write(&self.inbox.purge, &[&execution_id.as_str()])
            .await
    }

    async fn messages(&self, execution_id: &ExecutionId) -> Result<Vec<InboxEntry>, StoreError> {
        let rows = self
            .client()
            .await?
            .rows(&self.inbox.messages, &[&execution_id.as_str()])
            .await?;
        rows.iter()
            .map(|row| {
                let message = read_message(execution_id, row)?;
                let name = format!(
                    "({:?}, {:?})",
                    message.message.key.channel, message.message.key.message_id
                );
                let consumed: bool = column(execution_id, &name, row, 5, "consumed")?;
                Ok(InboxEntry { message, consumed })
            })
            .collect()
    }
}
