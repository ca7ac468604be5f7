//! The inbox's pump: runs the core's [`DeliverMachine`] against the event
//! store and the inbox. Every branch here is the machine's answer; this
//! file only does the IO it names.

use loomfence_core::{
    Envelope, ResumeError,
    inbox::{DeliverAction, DeliverMachine, DeliverOutcome, DeliverPoll, NotDeliverable, Sent},
    redrive::Draw,
};
use loomfence_store::{EventStore, InboxStore};

use super::{Delivery, Inbox};
use crate::counters;
use crate::driver::resume_answer;
use crate::error::RuntimeError;

/// How a delivery ended, for the entry points to shape.
#[derive(Debug)]
pub(super) enum Ended {
    /// A notify stored nothing.
    Refused(NotDeliverable),
    /// What the delivery did.
    Delivery(Delivery),
}

impl<S: EventStore + ?Sized, I: InboxStore + ?Sized> Inbox<S, I> {
    /// Runs `machine` to its end; a store error stops it (whatever was
    /// stored stays, and the intent row finishes the work). Answers the
    /// end, what a notify's send answered, and the park a park wrote.
    pub(super) async fn deliver(
        &self,
        mut machine: DeliverMachine,
    ) -> Result<(Ended, Option<Sent>, Option<Envelope>), RuntimeError> {
        let id = machine.execution_id().clone();
        loop {
            let action = match machine.poll() {
                DeliverPoll::Done(outcome) => {
                    return Ok((ended(outcome)?, machine.sent(), machine.parked().cloned()));
                }
                DeliverPoll::Act(action) => action,
                other => return Err(unsupported(&other)),
            };
            tracing::trace!(execution_id = %id, ?action, "delivery step");
            match action {
                DeliverAction::ReadLog => {
                    let log = self
                        .store
                        .read_range(&id, 1, None)
                        .await
                        .map_err(RuntimeError::Store)?;
                    machine.handle_log(&log)?;
                }
                DeliverAction::Send { message, intent } => {
                    let sent = self
                        .inbox
                        .send(&message, &intent)
                        .await
                        .map_err(RuntimeError::Timers)?;
                    counters::one(match sent {
                        Sent::Stored { .. } => counters::MESSAGES_STORED,
                        Sent::Duplicate { .. } => counters::MESSAGES_DUPLICATE,
                    });
                    machine.handle_sent(sent)?;
                }
                DeliverAction::ReadPending { channels, limit } => {
                    let pending = self
                        .inbox
                        .pending(&id, &channels, limit)
                        .await
                        .map_err(RuntimeError::Timers)?;
                    machine.handle_pending(&pending, (self.options.now)())?;
                }
                DeliverAction::MarkConsumed(key) => {
                    self.inbox
                        .mark_consumed(&key)
                        .await
                        .map_err(RuntimeError::Timers)?;
                    machine.handle_marked()?;
                }
                DeliverAction::Resume { request, log } => {
                    let result = resume_answer(&*self.store, &id, request, &log).await?;
                    if let Err(ResumeError::Refused(_)) = &result {
                        tracing::debug!(execution_id = %id, "park answered first; reading again");
                    }
                    machine.handle_resumed(result.as_ref())?;
                }
                DeliverAction::Draw => {
                    let draw = Draw::new((self.options.random)())?;
                    machine.handle_draw(draw, (self.options.now)()).map_err(
                        |error| match error {
                            loomfence_core::Error::Input(input) => RuntimeError::Input(input),
                            loomfence_core::Error::Contract(contract) => {
                                RuntimeError::Contract(contract)
                            }
                            other => unsupported(&other),
                        },
                    )?;
                }
                DeliverAction::ReadFence => {
                    let current = self
                        .store
                        .current_fence(&id)
                        .await
                        .map_err(RuntimeError::Store)?;
                    machine.handle_fence(current)?;
                }
                DeliverAction::AppendPark(event) => {
                    let park = self
                        .store
                        .append(&id, event)
                        .await
                        .map_err(RuntimeError::Store)?;
                    machine.handle_parked(&park)?;
                }
                DeliverAction::WriteRow(row) => {
                    self.inbox
                        .schedule(&row)
                        .await
                        .map_err(RuntimeError::Timers)?;
                    counters::one(counters::REDRIVE_ROWS);
                    machine.handle_written()?;
                }
                other => return Err(unsupported(&other)),
            }
        }
    }
}

/// The machine's end as the entry points see it.
fn ended(outcome: DeliverOutcome) -> Result<Ended, RuntimeError> {
    Ok(match outcome {
        DeliverOutcome::Refused(why) => Ended::Refused(why),
        DeliverOutcome::Delivered { message, resumed } => {
            counters::one(counters::MESSAGES_DELIVERED);
            Ended::Delivery(Delivery::Delivered { message, resumed })
        }
        DeliverOutcome::Waiting => Ended::Delivery(Delivery::Waiting),
        DeliverOutcome::Contended(contended) => Ended::Delivery(Delivery::Contended(contended)),
        DeliverOutcome::RedriveScheduled(row) => Ended::Delivery(Delivery::RedriveScheduled {
            wake_at: row.wake_at,
        }),
        // What the store's guard would have said to the park.
        DeliverOutcome::Fenced(stale) => {
            return Err(RuntimeError::Store(
                loomfence_store::StoreError::StaleFence(stale),
            ));
        }
        other => return Err(unsupported(&other)),
    })
}

/// Something of a newer core than this pump knows.
fn unsupported(what: &dyn std::fmt::Debug) -> RuntimeError {
    RuntimeError::unsupported("deliver", what)
}
