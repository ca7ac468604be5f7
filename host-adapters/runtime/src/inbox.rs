//! Messages: a sender's notify, a park that checks the inbox, and the
//! inbox's re-driver, all as one pump over the core's
//! [`DeliverMachine`], which holds
//! every rule (its steps head `core/src/inbox/deliver.rs`). This module
//! adds the IO (`pump.rs`), the clock and randomness, tracing and metrics.
//!
//! - **A message is consumed at most once**: its delivery appends
//!   `[MESSAGE_CONSUMED, EXECUTION_RESUMED]` as one park-conditional batch
//!   under the acquired token, and a message the log records as consumed
//!   is never offered again.
//! - **And at least once**: a send writes its message and an intent row (a
//!   re-drive row, due [`InboxOptions::intent_delay_ms`] later) in one
//!   atomic step of the inbox. A sender that dies before delivering leaves
//!   the row, and the inbox's re-driver ([`Inbox`] is a [`Redriver`]) on a
//!   timer service finishes the delivery when it comes due.
//! - **A message that arrives before its park waits in the inbox**: a park
//!   written with [`Inbox::park`] checks the inbox for its channels and,
//!   if one holds a message, resumes at once (the park-time self-resume).
//!   Its own intent row, written before the park, covers a crash between
//!   the park and the check.

mod options;
mod pump;
mod redriver;

use std::fmt;
use std::sync::Arc;

use loomfence_core::{
    Envelope, ExecutionId, KernelKind, NewEvent, Resumed,
    inbox::{DeliverMachine, DeliverOptions, Message, MessageKey, NotDeliverable, Sent},
    park::{Wait, park_payload},
    resume::ResumeContendedError,
    supervise::OnContention,
};
use loomfence_store::{EventStore, InboxStore};
use serde_json::Value;

pub use self::options::InboxOptions;
use crate::error::RuntimeError;
use crate::redriver::Redriver;

/// What a delivery did.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// This message was delivered: the park was resumed with it. The
    /// caller holds the resume and starts the body from it (the body's
    /// answer is `{"wait": i, "message": {"channel", "messageId",
    /// "payload", "sentAt"}}`). Under a notify it may be an older message
    /// of the channel than the one sent: a channel is consumed in the
    /// order it arrived.
    Delivered {
        /// The message delivered.
        message: MessageKey,
        /// The resume.
        resumed: Box<Resumed>,
    },
    /// Nothing to deliver now: no open park waits on a channel that holds
    /// a message. What was sent waits in the inbox.
    Waiting,
    /// Rivals kept the fence moving, and re-drive is off. The send's or
    /// the park's intent row tries again when it comes due (after a bare
    /// [`check`](Inbox::check), whichever intent row is still due).
    Contended(ResumeContendedError),
    /// Rivals kept the fence moving, and re-drive is on: a re-drive row
    /// (try 0) was written, due at `wake_at`.
    RedriveScheduled {
        /// When the row is due, in ms since the epoch.
        wake_at: i64,
    },
}

/// What a notify did.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notified {
    /// The message is stored (or was already: see [`Sent`]), and this is
    /// what its delivery did.
    Sent {
        /// Whether this send stored it or found it there.
        sent: Sent,
        /// The delivery.
        delivery: Delivery,
    },
    /// Nothing was stored: the execution has no log, or has ended, so no
    /// park can ever consume the message. A value, not an error: a
    /// message racing its execution's end is an expected race.
    Refused(NotDeliverable),
}

/// What a park did.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parked {
    /// The `EXECUTION_SUSPENDED` written.
    pub park: Envelope,
    /// The park-time check: [`Delivery::Delivered`] if a message was
    /// already waiting on one of its channels (the caller's body goes on
    /// at once, under the resume's token).
    pub delivery: Delivery,
}

/// The inbox of a fleet: sends messages, parks executions on them, and
/// re-drives deliveries left unfinished.
///
/// # Switching messages on
///
/// Every send writes an intent row, which is a re-drive row: only a timer
/// service with this inbox's re-driver registered finishes it, and a
/// timer service whose re-drivers all answer noop retires it. So, as for
/// re-drive, register the re-driver ([`TimerService::register_redriver`](crate::TimerService::register_redriver)
/// with this inbox) on every node's timer service before any node sends.
/// [`Features::redrive`](crate::Features::redrive) adds, on a contended
/// delivery, a re-drive row due after the policy's short delay instead of
/// waiting for the intent row.
pub struct Inbox<S: EventStore + ?Sized, I: InboxStore + ?Sized> {
    /// Where every log lives.
    store: Arc<S>,
    /// Where the messages (and the timer rows) live.
    inbox: Arc<I>,
    /// Behaviour.
    options: InboxOptions,
}

impl<S: EventStore + ?Sized, I: InboxStore + ?Sized> fmt::Debug for Inbox<S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<S: EventStore + ?Sized, I: InboxStore + ?Sized> Inbox<S, I> {
    /// An inbox over `store`'s logs and `inbox`'s messages.
    pub fn new(store: Arc<S>, inbox: Arc<I>, options: InboxOptions) -> Self {
        Self {
            store,
            inbox,
            options,
        }
    }

    /// Sends `payload` as message `key`, stamped with the clock, and
    /// delivers what the execution's open park can take.
    ///
    /// Sending the same key again stores nothing ([`Sent::Duplicate`]) and
    /// still tries the delivery, so a sender that is unsure whether its
    /// send landed simply sends again. A malformed message (a channel or
    /// id out of bounds, a payload over
    /// [`MAX_MESSAGE_BYTES`](loomfence_core::inbox::MAX_MESSAGE_BYTES)) is
    /// refused as [`RuntimeError::Input`] before anything is read.
    pub async fn notify(&self, key: MessageKey, payload: Value) -> Result<Notified, RuntimeError> {
        let message = Message {
            key,
            payload,
            sent_at: (self.options.now)(),
        };
        let machine = DeliverMachine::notify(message, self.deliver_options(true))?;
        let (outcome, sent, _) = self.deliver(machine).await?;
        Ok(match (sent, outcome) {
            (_, pump::Ended::Refused(why)) => Notified::Refused(why),
            (Some(sent), pump::Ended::Delivery(delivery)) => Notified::Sent { sent, delivery },
            (None, other) => return Err(RuntimeError::unsupported("deliver", &other)),
        })
    }

    /// Parks `execution_id` on `waits` (an `EXECUTION_SUSPENDED` stamped
    /// with `fence`, the token the body holds, if any), then checks the
    /// inbox for the park's channels: a message already waiting is
    /// delivered at once.
    ///
    /// A park on a channel writes an intent row first, as a send does: if
    /// this process dies between the park and its check, or the check is
    /// contended, the row finishes the delivery of a message that arrived
    /// before the park. The park is an ordinary fenced append: a body
    /// fenced out by a rival gets [`RuntimeError::Store`] with a stale
    /// fence, and nothing more is done.
    pub async fn park(
        &self,
        execution_id: &ExecutionId,
        waits: &[Wait],
        fence: Option<u64>,
    ) -> Result<Parked, RuntimeError> {
        let mut event = NewEvent::kernel(KernelKind::ExecutionSuspended, (self.options.now)())
            .with_payload(park_payload(waits));
        if let Some(token) = fence {
            event = event.with_fence(token);
        }
        let machine =
            DeliverMachine::park(execution_id.clone(), event, self.deliver_options(true))?;
        let (ended, _, park) = self.deliver(machine).await?;
        match (ended, park) {
            (pump::Ended::Delivery(delivery), Some(park)) => Ok(Parked { park, delivery }),
            (other, _) => Err(RuntimeError::unsupported("deliver", &other)),
        }
    }

    /// Delivers whatever the execution's open park can take from the inbox.
    pub async fn check(&self, execution_id: &ExecutionId) -> Result<Delivery, RuntimeError> {
        let machine = DeliverMachine::check(execution_id.clone(), self.deliver_options(true));
        match self.deliver(machine).await?.0 {
            pump::Ended::Delivery(delivery) => Ok(delivery),
            other => Err(RuntimeError::unsupported("deliver", &other)),
        }
    }

    /// The machine's options: a re-drive row on contention when re-drive
    /// is on and the caller is not a re-driver.
    fn deliver_options(&self, caller: bool) -> DeliverOptions {
        DeliverOptions {
            intent_delay_ms: self.options.intent_delay_ms,
            policy: self.options.policy,
            on_contention: if caller && self.options.features.redrive {
                OnContention::WriteRow
            } else {
                OnContention::Answer
            },
        }
    }
}

impl<S: EventStore + ?Sized, I: InboxStore + ?Sized> Inbox<S, I>
where
    S: 'static,
    I: 'static,
{
    /// This inbox as a re-driver, for [`TimerService::register_redriver`](crate::TimerService::register_redriver).
    #[must_use]
    pub fn redriver(self: &Arc<Self>) -> Arc<dyn Redriver> {
        Arc::clone(self) as Arc<dyn Redriver>
    }
}
