//! The invariants, judged on a world where nothing can act any more: the
//! senders finished or crashed, the wake fired, the body parked as often as
//! it does, and the re-driver fired every row until the timer table is
//! empty.
//!
//! - **Exactly once**: every stored message has exactly one
//!   `MESSAGE_CONSUMED` ([`Breach::ConsumedTwice`],
//!   [`Breach::Undelivered`]). The body parks once per message (and once
//!   more when its first park also waits on a timer), so a message left
//!   unconsumed is one an open park is still waiting for.
//! - **One resume per park**: each park is answered at most once
//!   ([`Breach::ResumedTwice`]); the body parks again only after an
//!   answer, so every park but the last is answered.
//! - **The pair**: every `MESSAGE_CONSUMED` at sequence `s` is followed by
//!   the `EXECUTION_RESUMED` at `s + 1` under the same token whose answer
//!   carries that message, as stored, first payload
//!   ([`Breach::ConsumedWithoutItsResume`]).
//! - **Arrival order**: each channel is consumed in the order its messages
//!   arrived ([`Breach::OutOfOrder`]).
//!
//! And the harness's own: no machine rejected a store's answer
//! ([`Breach::Rejected`]), no re-drive chain gave up
//! ([`Breach::Exhausted`]), no park of the body was refused as stale
//! ([`Breach::BodyFencedOut`]).

use loomfence_core::{ContractError, Envelope, KernelKind, inbox::InboxEntry};

use super::error::InboxSimError;
use super::pump::Deliverer;
use super::world::{Actor, World, execution_id};

/// One thing wrong.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Breach {
    /// A message consumed more than once.
    ConsumedTwice {
        /// Its id.
        message_id: String,
        /// The sequences of its `MESSAGE_CONSUMED`s.
        sequences: Vec<u64>,
    },
    /// A stored message never consumed.
    Undelivered {
        /// Its id.
        message_id: String,
    },
    /// A park answered more than once.
    ResumedTwice {
        /// The park's sequence.
        park: u64,
        /// The answering events' sequences.
        answers: Vec<u64>,
    },
    /// A `MESSAGE_CONSUMED` not followed at once by its resume.
    ConsumedWithoutItsResume {
        /// Its sequence.
        sequence: u64,
        /// What is wrong with the event after it.
        problem: &'static str,
    },
    /// A channel consumed out of arrival order.
    OutOfOrder {
        /// Message ids in the order consumed.
        consumed: Vec<String>,
        /// The same in arrival order.
        arrival: Vec<String>,
    },
    /// A machine rejected a store's answer.
    Rejected {
        /// Whose.
        actor: char,
        /// What it said.
        error: ContractError,
    },
    /// A re-drive chain gave up.
    Exhausted,
    /// A park of the body was refused as stale.
    BodyFencedOut,
}

impl Breach {
    /// A short name, for counts.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Breach::ConsumedTwice { .. } => "consumed twice",
            Breach::Undelivered { .. } => "undelivered",
            Breach::ResumedTwice { .. } => "resumed twice",
            Breach::ConsumedWithoutItsResume { .. } => "consumed without its resume",
            Breach::OutOfOrder { .. } => "out of order",
            Breach::Rejected { .. } => "rejected answer",
            Breach::Exhausted => "exhausted",
            Breach::BodyFencedOut => "body fenced out",
        }
    }
}

/// A string field of an event's payload.
fn text<'a>(event: &'a Envelope, field: &str) -> Option<&'a str> {
    event.payload.get(field).and_then(|value| value.as_str())
}

/// Everything wrong with a quiescent `world`.
pub fn breaches(world: &World) -> Result<Vec<Breach>, InboxSimError> {
    let id = execution_id()?;
    let log = world.store.read_range(&id, 1, None)?;
    let stored: Vec<InboxEntry> = world.inbox.messages(&id);
    let mut found = Vec::new();
    let consumed = KernelKind::MessageConsumed.as_str();
    let resumed = KernelKind::ExecutionResumed.as_str();

    // Exactly once, and in arrival order.
    let consumptions: Vec<(&str, u64)> = log
        .iter()
        .filter(|event| event.kind == consumed)
        .filter_map(|event| Some((text(event, "messageId")?, event.sequence)))
        .collect();
    for entry in &stored {
        let message_id = entry.message.message.key.message_id.as_str();
        let sequences: Vec<u64> = consumptions
            .iter()
            .filter(|(consumed_id, _)| *consumed_id == message_id)
            .map(|(_, sequence)| *sequence)
            .collect();
        match sequences.len() {
            0 => found.push(Breach::Undelivered {
                message_id: message_id.to_owned(),
            }),
            1 => {}
            _ => found.push(Breach::ConsumedTwice {
                message_id: message_id.to_owned(),
                sequences,
            }),
        }
    }
    let mut order: Vec<String> = Vec::new();
    for (message_id, _) in &consumptions {
        if !order.iter().any(|seen| seen == message_id) {
            order.push((*message_id).to_owned());
        }
    }
    let arrival: Vec<String> = stored
        .iter()
        .map(|entry| entry.message.message.key.message_id.clone())
        .filter(|message_id| order.contains(message_id))
        .collect();
    if order != arrival {
        found.push(Breach::OutOfOrder {
            consumed: order,
            arrival,
        });
    }

    // The pair, with the message as stored.
    for event in log.iter().filter(|event| event.kind == consumed) {
        let next = log
            .iter()
            .find(|later| later.sequence == event.sequence + 1);
        let message = next
            .and_then(|next| next.payload.get("answer"))
            .map(|answer| &answer["message"]);
        let entry = stored.iter().find(|entry| {
            Some(entry.message.message.key.message_id.as_str()) == text(event, "messageId")
        });
        let problem = match next {
            None => Some("nothing follows it"),
            Some(next) if next.kind != resumed => Some("the next event is not a resume"),
            Some(next) if next.fence().ok() != event.fence().ok() => {
                Some("the resume is under another token")
            }
            Some(_)
                if message.and_then(|m| m["messageId"].as_str()) != text(event, "messageId") =>
            {
                Some("the resume answers with another message")
            }
            Some(_)
                if entry.map(|entry| &entry.message.message.payload)
                    != message.map(|m| &m["payload"]) =>
            {
                Some("the resume carries another payload than the stored one")
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            found.push(Breach::ConsumedWithoutItsResume {
                sequence: event.sequence,
                problem,
            });
        }
    }

    // One resume per park.
    let parks: Vec<u64> = log
        .iter()
        .filter(|event| event.is_park())
        .map(|event| event.sequence)
        .collect();
    for (index, park) in parks.iter().enumerate() {
        let until = parks.get(index + 1).copied().unwrap_or(u64::MAX);
        let answers: Vec<u64> = log
            .iter()
            .filter(|event| event.sequence > *park && event.sequence < until)
            .filter(|event| event.is_answering())
            .map(|event| event.sequence)
            .collect();
        if answers.len() > 1 {
            found.push(Breach::ResumedTwice {
                park: *park,
                answers,
            });
        }
    }

    // The harness's own.
    for (actor, label) in world.actors.iter().zip(&world.labels) {
        let rejected = match actor {
            Actor::Sender(sender) => sender.delivery.rejected(),
            Actor::Body(body) => body.check.as_ref().and_then(Deliverer::rejected),
            Actor::Redriver(redriver) => redriver.rejected(),
            _ => None,
        };
        if let Some(error) = rejected {
            found.push(Breach::Rejected {
                actor: *label,
                error: error.clone(),
            });
        }
        match actor {
            Actor::Redriver(redriver) if redriver.exhausted > 0 => found.push(Breach::Exhausted),
            Actor::Body(body) if body.fenced_out => found.push(Breach::BodyFencedOut),
            _ => {}
        }
    }
    Ok(found)
}
