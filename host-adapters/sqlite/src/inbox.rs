//! The `InboxStore` implementation, on the timer store: a send's message
//! and its intent row are one job on the writer thread, so they commit in
//! one transaction.

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId,
    inbox::{InboxEntry, Message, MessageKey, Sent, StoredMessage, check_pending},
    timer::{TimerRow, check_row},
};
use loomfence_store::{InboxStore, StoreError};

use crate::inbox_ops;
use crate::timer_ops;
use crate::timers::SqliteTimerStore;

#[async_trait]
impl InboxStore for SqliteTimerStore {
    async fn send(&self, message: &Message, intent: &TimerRow) -> Result<Sent, StoreError> {
        message.check()?;
        check_row(intent)?;
        let redrive = timer_ops::encode_redrive(intent.redrive)?;
        let (message, intent) = (message.clone(), intent.clone());
        // The payload is encoded on the writer thread before the group's
        // transaction, as an append's events are: not under the lock.
        self.db()
            .write(
                move || {
                    let payload = inbox_ops::encode_payload(&message)?;
                    Ok((message, payload))
                },
                move |conn, (message, payload): (Message, String)| {
                    inbox_ops::send(conn, &message, &payload, &intent, redrive.as_deref())
                },
            )
            .await
    }

    async fn pending(
        &self,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        check_pending(channels, limit)?;
        let (id, channels) = (execution_id.clone(), channels.to_vec());
        self.db()
            .read(move |conn| inbox_ops::pending(conn, &id, &channels, limit))
            .await
    }

    async fn mark_consumed(&self, key: &MessageKey) -> Result<bool, StoreError> {
        key.check()?;
        let key = key.clone();
        self.db()
            .write(
                || Ok(()),
                move |conn, ()| inbox_ops::mark_consumed(conn, &key),
            )
            .await
    }

    async fn purge(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let id = execution_id.clone();
        self.db()
            .write(
                || Ok(()),
                move |conn, ()| inbox_ops::purge(conn, id.as_str()),
            )
            .await
    }

    async fn messages(&self, execution_id: &ExecutionId) -> Result<Vec<InboxEntry>, StoreError> {
        let id = execution_id.clone();
        self.db()
            .read(move |conn| inbox_ops::messages(conn, &id))
            .await
    }
}
