//! Re-drivers: who re-derives a contended resume when its re-drive row
//! comes due.

use async_trait::async_trait;
use loomfence_core::{ExecutionId, timer::RedriveAnswer};

use crate::error::RuntimeError;

/// Re-derives a resume from the log and tries it conditionally, when a
/// re-drive row of the execution comes due.
///
/// A re-drive row names an execution, not a resume: the resume it stands
/// for (which park, which answer) is re-read from the log at fire time, by
/// the component that wanted it (the child supervisor for a parent whose
/// children ended). Each answers for its own kind of resume only:
/// [`RedriveAnswer::Noop`] when there is nothing of its own to do (the park
/// was answered meanwhile, or it is not waiting on what this re-driver
/// knows), so the next one is asked. Every node that fires re-drive rows
/// must register the same re-drivers.
#[async_trait]
pub trait Redriver: Send + Sync {
    /// Re-derives and tries this re-driver's resume of `execution_id`:
    /// [`RedriveAnswer::Done`] if it landed (or had landed),
    /// [`RedriveAnswer::Noop`] if there is nothing of its own to do,
    /// [`RedriveAnswer::Contended`] if rivals kept the fence moving again.
    /// An error is treated as contended, so the chain continues and the
    /// row is not lost; a failure of the host's own is
    /// [`RuntimeError::Host`].
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RuntimeError>;
}
