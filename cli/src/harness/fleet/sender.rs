//! The fleet's sender: the world outside the fleet sending messages to
//! the parents that wait on one, while the fleet runs.
//!
//! Each message is sent at its drawn time through an [`Inbox`] of this
//! process, over the shared store, and sent again on the next tick with
//! the same id, as a sender unsure of its first send does: the inbox stores
//! it once. A delivery this process lands runs the parent's body here, as
//! a worker's would. A contended delivery writes a re-drive row, and every
//! send its intent row: the workers, which register the inbox's re-driver,
//! finish those.

use std::collections::VecDeque;
use std::sync::Arc;

use loomfence_core::{ExecutionId, inbox::MessageKey};
use loomfence_runtime::{
    Features, Inbox,
    inbox::{Delivery, InboxOptions, Notified},
};
use loomfence_store::{EventStore, InboxStore, StoreError};
use serde_json::json;
use tokio::task::JoinSet;

use super::plan::MESSAGE_CHANNEL;
use crate::error::CliError;
use crate::harness::body::{BodyEnd, run_body};
use crate::harness::redrive::POLICY;

/// The id of every parent's message.
pub(crate) const MESSAGE_ID: &str = "poke-1";

/// How long after a send its intent row is due: a second, so a delivery
/// left to it lands well within the drain.
const INTENT_DELAY_MS: i64 = 1_000;

/// What the sender did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SenderCounts {
    /// Notifies made (first sends and their repeats).
    pub(crate) notifies: u64,
    /// Deliveries this process landed.
    pub(crate) delivered: u64,
    /// Bodies of those fenced out (a kernel bug).
    pub(crate) fenced_out: u64,
}

/// The sends still to make, and the inbox they go through.
pub(crate) struct Sender {
    /// The inbox.
    inbox: Inbox<dyn EventStore, dyn InboxStore>,
    /// The store, for the bodies.
    store: Arc<dyn EventStore>,
    /// Step events per body.
    steps: u32,
    /// `(when, parent)`, earliest first.
    due: VecDeque<(i64, ExecutionId)>,
    /// Parents whose first send was made on the last tick: sent again on
    /// this one.
    repeats: Vec<ExecutionId>,
    /// The bodies started.
    bodies: JoinSet<Result<BodyEnd, StoreError>>,
    /// What it did.
    pub(crate) counts: SenderCounts,
}

impl Sender {
    /// A sender of `sends` (`(when, parent)`, earliest first).
    pub(crate) fn new(
        store: Arc<dyn EventStore>,
        inbox: Arc<dyn InboxStore>,
        steps: u32,
        sends: Vec<(i64, ExecutionId)>,
    ) -> Self {
        let options = InboxOptions {
            intent_delay_ms: INTENT_DELAY_MS,
            features: Features::none().with_redrive(true),
            policy: POLICY,
            ..InboxOptions::default()
        };
        Self {
            inbox: Inbox::new(Arc::clone(&store), inbox, options),
            store,
            steps,
            due: sends.into(),
            repeats: Vec::new(),
            bodies: JoinSet::new(),
            counts: SenderCounts::default(),
        }
    }

    /// Whether every send (and its repeat) was made.
    pub(crate) fn is_done(&self) -> bool {
        self.due.is_empty() && self.repeats.is_empty()
    }

    /// Repeats the last tick's sends, then makes the sends due at `now`
    /// (repeated on the next tick).
    pub(crate) async fn act(&mut self, now: i64) -> Result<(), CliError> {
        for parent in std::mem::take(&mut self.repeats) {
            self.notify(&parent).await?;
        }
        while self.due.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, parent)) = self.due.pop_front() else {
                break;
            };
            self.notify(&parent).await?;
            self.repeats.push(parent);
        }
        Ok(())
    }

    /// One notify of `parent`'s message.
    async fn notify(&mut self, parent: &ExecutionId) -> Result<(), CliError> {
        let key = MessageKey::new(parent.clone(), MESSAGE_CHANNEL, MESSAGE_ID)
            .map_err(CliError::input("message key"))?;
        self.counts.notifies += 1;
        let notified = self
            .inbox
            .notify(key, json!({ "from": "fleet" }))
            .await
            .map_err(CliError::runtime("notify"))?;
        if let Notified::Sent {
            delivery: Delivery::Delivered { resumed, .. },
            ..
        } = notified
        {
            self.counts.delivered += 1;
            let (store, steps) = (Arc::clone(&self.store), self.steps);
            self.bodies.spawn(async move {
                run_body(&*store, *resumed, steps, json!({ "path": "sender" })).await
            });
        }
        Ok(())
    }

    /// Waits for the bodies this process started.
    pub(crate) async fn finish(&mut self) -> Result<SenderCounts, CliError> {
        while let Some(joined) = self.bodies.join_next().await {
            match joined.map_err(CliError::task("sender body"))?? {
                BodyEnd::Completed => {}
                BodyEnd::FencedOut => self.counts.fenced_out += 1,
            }
        }
        Ok(self.counts)
    }
}
