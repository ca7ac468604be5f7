//! The supervisor as a re-driver: what a timer service hands a parent's due
//! re-drive row to.

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId,
    supervise::{OnContention, SuperviseOutcome},
    timer::RedriveAnswer,
};
use loomfence_store::EventStore;

use super::ChildSupervisor;
use super::pump::supervised;
use crate::error::RuntimeError;
use crate::redriver::Redriver;

/// Re-runs the supervision of the parent from the log (re-reads its park
/// and its children, resumes conditionally), without writing a row on
/// contention ([`OnContention::Answer`]): the timer service that fired the
/// row carries the chain on. The answer is the machine's
/// ([`SuperviseOutcome::redrive_answer`]):
///
/// | the supervision | the answer |
/// |---|---|
/// | resumed the parent | [`RedriveAnswer::Done`], after handing the resume to [`SupervisorOptions::on_resumed`](crate::supervise::SupervisorOptions::on_resumed) |
/// | already answered, waiting on children, or not waiting on children | [`RedriveAnswer::Noop`] |
/// | every conditional try contended | [`RedriveAnswer::Contended`], not passed to `on_error` (the service reports an exhausted chain, once) |
/// | failed (a fenced parent with no conditional try allowed), or any error | the error, also passed to `on_error` |
#[async_trait]
impl<S: EventStore + ?Sized> Redriver for ChildSupervisor<S> {
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        let fail = |error: RuntimeError| -> Result<RedriveAnswer, RuntimeError> {
            (self.options.on_error)(execution_id, &error);
            Err(error)
        };
        let outcome = match self.supervise(execution_id, OnContention::Answer).await {
            Ok(outcome) => outcome,
            Err(error) => return fail(error),
        };
        match (outcome.redrive_answer(), outcome) {
            (RedriveAnswer::Done, SuperviseOutcome::Resumed(resumed)) => {
                (self.options.on_resumed)(resumed);
                Ok(RedriveAnswer::Done)
            }
            (RedriveAnswer::Failed, failed) => match supervised(failed) {
                Err(error) => fail(error),
                Ok(_) => Ok(RedriveAnswer::Failed),
            },
            (answer, _) => Ok(answer),
        }
    }
}
