//! The verdict of a race of messages, read from what is stored: every log
//! and every execution's inbox, never what the senders believe they did.

use std::collections::BTreeMap;

use loomfence_core::{ExecutionView, KernelKind};
use loomfence_store::{EventStore, InboxStore};
use serde_json::Value;

use crate::error::CliError;
use crate::harness::race::report::{LogCounts, MessageCounts};
use crate::harness::race::resumer::Parked;

/// Counts, per execution: resumes (more than one is a double delivery, as
/// the park was answered twice), `MESSAGE_CONSUMED` events per message
/// (more than one of the same message is a double delivery), the inbox's
/// messages (sent), and those never consumed while the execution is still
/// parked (lost). `redriven` is not in the logs (a delivery's answer is
/// the message, whoever delivered it): the caller sets it.
pub(crate) async fn verify(
    store: &dyn EventStore,
    inbox: &dyn InboxStore,
    parked: &[Parked],
) -> Result<LogCounts, CliError> {
    let mut counts = LogCounts::default();
    let mut messages = MessageCounts::default();
    for execution in parked {
        let events = store.read_range(&execution.id, 1, None).await?;
        let count = |kind: KernelKind| {
            events
                .iter()
                .filter(|e| e.kernel_kind() == Some(kind))
                .count()
        };
        let resumes = count(KernelKind::ExecutionResumed);
        counts.resumed += u64::from(resumes >= 1);
        counts.double_resumes += u64::from(resumes > 1);
        counts.completed += u64::from(count(KernelKind::ExecutionCompleted) >= 1);

        let mut consumed: BTreeMap<(String, String), u64> = BTreeMap::new();
        for event in &events {
            if event.kernel_kind() != Some(KernelKind::MessageConsumed) {
                continue;
            }
            let text = |name: &str| match event.payload.get(name) {
                Some(Value::String(text)) => text.clone(),
                _ => String::new(),
            };
            *consumed
                .entry((text("channel"), text("messageId")))
                .or_default() += 1;
        }
        messages.consumed += consumed.values().sum::<u64>();
        messages.double_deliveries += consumed.values().filter(|&&n| n > 1).count() as u64;
        messages.double_deliveries += u64::from(resumes > 1);

        let still_parked = ExecutionView::fold(&events).open_park.is_some();
        let stored = inbox
            .messages(&execution.id)
            .await
            .map_err(CliError::store("inbox"))?;
        messages.sent += stored.len() as u64;
        messages.lost += stored
            .iter()
            .filter(|entry| {
                let key = &entry.message.message.key;
                still_parked
                    && !consumed.contains_key(&(key.channel.clone(), key.message_id.clone()))
            })
            .count() as u64;
    }
    counts.messages = messages;
    Ok(counts)
}
