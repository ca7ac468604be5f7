//! One sender task of a race of messages: a node that sends every parked
//! execution the same message.
//!
//! It walks all executions in its own seeded-random order and, for each,
//! sends message [`MESSAGE_ID`] on [`CHANNEL`] through the inbox's notify,
//! which stores it once (every later send is a duplicate) and delivers it.
//! A delivery that lands runs the race's body under the resume's token.
//!
//! A crash (`--crash-rate`) is a sender that dies right after its send
//! stored the message, before delivering: it writes the message and its
//! intent row, as the notify's first step does, and moves on. The intent
//! row, fired by the timer service with the inbox's re-driver, must
//! finish that delivery.
//!
//! The `--unguarded-delivery` control replaces the delivery with the pair
//! `[MESSAGE_CONSUMED, EXECUTION_RESUMED]` appended under a plain
//! `acquire_fence`, without the park condition: what the conditional
//! batch prevents, so that the checker has something to catch.

use std::sync::Arc;

use indicatif::ProgressBar;
use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    inbox::{Message, MessageKey, consumed_event},
};
use loomfence_runtime::inbox::{Delivery, Notified};
use loomfence_store::{EventStore, InboxStore, StoreError};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

use super::RaceInbox;
use super::hooks::with_dead_acquirers;
use crate::clock::now_ms;
use crate::error::CliError;
use crate::harness::body::{BodyEnd, run_body};
use crate::harness::race::report::Tally;
use crate::harness::race::resumer::{Parked, resumer_seed};

/// The channel every park of a race of messages waits on.
pub(crate) const CHANNEL: &str = "go";

/// The id every sender gives its message: the same for all, so the inbox
/// stores one message per park, whoever sent first.
pub(crate) const MESSAGE_ID: &str = "go-1";

/// What every sender of one race shares.
#[derive(Clone)]
pub(crate) struct Post {
    /// The store, as the bodies and the control write to it.
    pub(crate) store: Arc<dyn EventStore>,
    /// The race's inbox.
    pub(crate) inbox: Arc<RaceInbox>,
    /// The inbox's store, for the crashed sends.
    pub(crate) inbox_store: Arc<dyn InboxStore>,
    /// How long after a send its intent row is due, in ms.
    pub(crate) intent_delay_ms: i64,
    /// The executions, in set-up order.
    pub(crate) parked: Arc<[Parked]>,
    /// Step events per body.
    pub(crate) steps: u32,
    /// Crash probability per send.
    pub(crate) crash_rate: f64,
    /// Ticked once per send.
    pub(crate) progress: ProgressBar,
    /// Dead acquires in front of each notify's first acquires.
    pub(crate) dead_acquirers: u32,
    /// The negative control.
    pub(crate) unguarded: bool,
}

/// One racing sender.
pub(crate) struct Sender {
    /// Its index, 0-based: part of its seed and of its payloads.
    index: u32,
    /// The race it is in.
    post: Post,
    /// Its own PRNG: its order and its crashes depend only on the seed.
    rng: StdRng,
}

impl Sender {
    /// A sender whose random decisions derive from `seed` and `index`
    /// exactly as resumer `index`'s do.
    pub(crate) fn new(index: u32, seed: u64, post: Post) -> Self {
        Self {
            index,
            post,
            rng: StdRng::seed_from_u64(resumer_seed(seed, index)),
        }
    }

    /// Sends every execution the message once, in this sender's order.
    pub(crate) async fn run(mut self) -> Result<Tally, CliError> {
        let parked = Arc::clone(&self.post.parked);
        let mut order: Vec<&Parked> = parked.iter().collect();
        order.shuffle(&mut self.rng);
        let mut tally = Tally::default();
        for execution in order {
            tally.attempts += 1;
            let crash = self.rng.random_bool(self.post.crash_rate);
            let message = Message {
                key: MessageKey::new(execution.id.clone(), CHANNEL, MESSAGE_ID)
                    .map_err(CliError::input("message key"))?,
                payload: json!({ "sender": self.index }),
                sent_at: now_ms(),
            };
            if crash {
                self.send_only(&message).await?;
                tally.crashed_after_send += 1;
            } else if self.post.unguarded {
                self.unguarded(execution, &message, &mut tally).await?;
            } else {
                self.notify(message, &mut tally).await?;
            }
            self.post.progress.inc(1);
        }
        Ok(tally)
    }

    /// The notify, behind the dead acquirers, and what its delivery did.
    async fn notify(&self, message: Message, tally: &mut Tally) -> Result<(), CliError> {
        let post = &self.post;
        let notified = with_dead_acquirers(
            post.dead_acquirers,
            post.inbox.notify(message.key, message.payload),
        )
        .await
        .map_err(CliError::runtime("notify"))?;
        match notified {
            Notified::Sent { delivery, .. } => match delivery {
                Delivery::Delivered { resumed, .. } => {
                    tally.won += 1;
                    let by = json!(self.index);
                    match run_body(&*post.store, *resumed, post.steps, by).await? {
                        BodyEnd::Completed => tally.completed += 1,
                        BodyEnd::FencedOut => tally.fenced_out += 1,
                    }
                }
                // The park was answered by a rival: the normal fate of a
                // loser.
                Delivery::Waiting => tally.refused += 1,
                Delivery::Contended(_) => tally.contended += 1,
                Delivery::RedriveScheduled { .. } => {
                    tally.contended += 1;
                    tally.redrive_rows += 1;
                }
                other => return Err(unknown(&other)),
            },
            // The execution ended (a rival's body completed it): nothing
            // was stored, and nothing had to be.
            Notified::Refused(_) => tally.refused += 1,
            other => return Err(unknown(&other)),
        }
        Ok(())
    }

    /// A sender that dies right after its send: the message and its intent
    /// row, in the inbox's one step, and no delivery.
    async fn send_only(&self, message: &Message) -> Result<(), CliError> {
        let intent = message
            .intent(self.post.intent_delay_ms)
            .map_err(CliError::input("intent row"))?;
        self.post
            .inbox_store
            .send(message, &intent)
            .await
            .map_err(CliError::store("send"))?;
        Ok(())
    }

    /// The control's delivery: the message stored, then the pair appended
    /// under a plain `acquire_fence`, with no look at the park.
    async fn unguarded(
        &self,
        execution: &Parked,
        message: &Message,
        tally: &mut Tally,
    ) -> Result<(), CliError> {
        self.send_only(message).await?;
        let store = &self.post.store;
        let token = store.acquire_fence(&execution.id).await?;
        let at = now_ms();
        let pair = vec![
            consumed_event(CHANNEL, MESSAGE_ID, at).with_fence(token),
            resume_event(&execution.id, at).with_fence(token),
        ];
        match store.append_many(&execution.id, pair).await {
            Ok(_) => tally.won += 1,
            Err(StoreError::StaleFence(_)) => tally.refused += 1,
            Err(other) => return Err(other.into()),
        }
        Ok(())
    }
}

/// The control's `EXECUTION_RESUMED`, its answer naming the control.
fn resume_event(id: &ExecutionId, at: i64) -> NewEvent {
    let mut payload = loomfence_core::JsonObject::new();
    payload.insert(
        "answer".to_owned(),
        json!({ "unguarded": Value::String(id.to_string()) }),
    );
    NewEvent::kernel(KernelKind::ExecutionResumed, at).with_payload(payload)
}

/// A delivery outcome of a newer runtime than this sender knows.
fn unknown(what: &dyn std::fmt::Debug) -> CliError {
    CliError::UnknownStep {
        step: format!("{what:?}"),
    }
}
