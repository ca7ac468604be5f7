//! The supervisor as a re-driver: what a timer service hands a parent's due
//! re-drive row to.

use async_trait::async_trait;
use loomfence_core::{ExecutionId, RedriveAnswer};
use loomfence_store::EventStore;

use super::{ChildSupervisor, Contention, Supervised};
use crate::redriver::{RedriveFailure, Redriver};

/// Re-runs the supervision of the parent from the log (re-reads its park
/// and its children, resumes conditionally), without scheduling a row on
/// contention: the timer service that fired the row carries the chain on.
///
/// | the supervision | the answer |
/// |---|---|
/// | resumed the parent | [`RedriveAnswer::Done`], after handing the resume to [`SupervisorOptions::on_resumed`](crate::SupervisorOptions::on_resumed) |
/// | already answered, waiting on children, or not waiting on children | [`RedriveAnswer::Noop`] |
/// | every conditional try contended | [`RedriveAnswer::Contended`], not passed to `on_error` (the service reports an exhausted chain, once) |
/// | any other failure | the error, also passed to `on_error` |
#[async_trait]
impl<S: EventStore + ?Sized> Redriver for ChildSupervisor<S> {
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RedriveFailure> {
        match self.supervise(execution_id, Contention::Answer).await {
            Ok(Supervised::Resumed(resumed)) => {
                (self.options.on_resumed)(resumed);
                Ok(RedriveAnswer::Done)
            }
            Ok(
                Supervised::AlreadyAnswered
                | Supervised::Waiting
                | Supervised::NotWaitingOnChildren,
            ) => Ok(RedriveAnswer::Noop),
            // `Contention::Answer` never writes a row; were one written,
            // it would carry the chain on, and this row can be retired.
            Ok(Supervised::RedriveScheduled { .. }) => Ok(RedriveAnswer::Noop),
            Err(error) if error.is_contended() => Ok(RedriveAnswer::Contended),
            Err(error) => {
                (self.options.on_error)(execution_id, &error);
                Err(Box::new(error))
            }
        }
    }
}
