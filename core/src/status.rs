//! Where an execution stands after each kernel kind. It sits apart from the
//! fold so an event can say whether it ends an execution without importing the
//! fold that reads events.

use crate::kind::KernelKind;

/// How an execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Terminal {
    /// `EXECUTION_COMPLETED`.
    Completed,
    /// `EXECUTION_FAILED`.
    Failed,
    /// `EXECUTION_CANCELLED`.
    Cancelled,
    /// `EXECUTION_CONTINUED`: ended by continuing as a new execution.
    Continued,
}

impl Terminal {
    /// The lowercase name a parent sees in a child's outcome.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Terminal::Completed => "completed",
            Terminal::Failed => "failed",
            Terminal::Cancelled => "cancelled",
            Terminal::Continued => "continued",
        }
    }
}

/// Where an execution stands, as its log says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Status {
    /// No events yet.
    #[default]
    Pending,
    /// Started or resumed: a body is (or should be) running.
    Running,
    /// Suspended on a park that nothing has answered.
    Parked,
    /// Ended. Terminal is absorbing: nothing written after an end revives the
    /// execution, so a stray late event cannot make a finished parent
    /// resumable again.
    Terminal(Terminal),
}

impl Status {
    /// The status after one event of `kind`. Ignorable and unknown kinds leave
    /// it as it is.
    #[must_use]
    pub fn after(self, kind: Option<KernelKind>) -> Status {
        if let Status::Terminal(_) = self {
            return self;
        }
        match kind {
            Some(KernelKind::ExecutionStarted | KernelKind::ExecutionResumed) => Status::Running,
            Some(KernelKind::ExecutionSuspended) => Status::Parked,
            Some(KernelKind::ExecutionCompleted) => Status::Terminal(Terminal::Completed),
            Some(KernelKind::ExecutionFailed) => Status::Terminal(Terminal::Failed),
            Some(KernelKind::ExecutionCancelled) => Status::Terminal(Terminal::Cancelled),
            Some(KernelKind::ExecutionContinued) => Status::Terminal(Terminal::Continued),
            Some(
                KernelKind::ExecutionDenied
                | KernelKind::ExecutionMigrated
                | KernelKind::OutcomeRecorded
                | KernelKind::StepStarted
                | KernelKind::StepCompleted
                | KernelKind::StepFailed
                | KernelKind::MessageConsumed
                | KernelKind::AnnotationAdded,
            )
            | None => self,
        }
    }

    /// Whether the execution has ended.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Terminal(_))
    }
}
