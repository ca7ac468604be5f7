//! The inbox as a re-driver: what a timer service hands a due intent or
//! re-drive row to.

use async_trait::async_trait;
use loomfence_core::{ExecutionId, timer::RedriveAnswer};
use loomfence_store::{EventStore, InboxStore};

use super::{Delivery, Inbox, pump::Ended};
use crate::error::RuntimeError;
use crate::redriver::Redriver;

/// Re-runs the delivery of the execution from the log and the inbox,
/// without writing a row on contention (the timer service that fired the
/// row carries the chain on):
///
/// | the delivery | the answer |
/// |---|---|
/// | delivered a message | [`RedriveAnswer::Done`], after handing the resume to [`InboxOptions::on_resumed`](super::InboxOptions::on_resumed) |
/// | nothing to deliver (not parked on a channel with a message) | [`RedriveAnswer::Noop`] |
/// | contended | [`RedriveAnswer::Contended`] |
#[async_trait]
impl<S, I> Redriver for Inbox<S, I>
where
    S: EventStore + ?Sized,
    I: InboxStore + ?Sized,
{
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        let machine = loomfence_core::inbox::DeliverMachine::check(
            execution_id.clone(),
            self.deliver_options(false),
        );
        Ok(match self.deliver(machine).await?.0 {
            Ended::Delivery(Delivery::Delivered { resumed, .. }) => {
                (self.options.on_resumed)(*resumed);
                RedriveAnswer::Done
            }
            Ended::Delivery(Delivery::Contended(_)) => RedriveAnswer::Contended,
            Ended::Delivery(Delivery::Waiting | Delivery::RedriveScheduled { .. })
            | Ended::Refused(_) => RedriveAnswer::Noop,
        })
    }
}
