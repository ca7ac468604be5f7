//! The one fault of a broken contract: a machine fed out of turn, or a
//! store answering outside its interface. Every machine reports it, so a
//! host has one type to stop on whichever machine it pumps.

use crate::input::ExecutionId;
use crate::retention::GuardedDelete;

/// The host fed a machine something that cannot be the answer to what it
/// asked: a driver bug, or a store breaking its contract. The input is
/// rejected and the machine is unchanged; the host stops with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ContractError {
    /// A `handle_*` call that does not answer the pending action.
    #[error("{got} does not answer the pending action ({expected})")]
    UnexpectedInput {
        /// What the machine waits for.
        expected: &'static str,
        /// What it was given.
        got: &'static str,
    },
    /// A read whose events are not the contiguous run the machine asked for.
    #[error("the store returned sequence {got} where {expected} was next")]
    Gap {
        /// The sequence the machine expected.
        expected: u64,
        /// The one it got.
        got: u64,
    },
    /// Events or an append acknowledgement for another execution.
    #[error("the store answered for execution {got:?} to a resume of {expected:?}")]
    WrongExecution {
        /// This resume's execution.
        expected: ExecutionId,
        /// The one in the answer.
        got: ExecutionId,
    },
    /// An append acknowledgement that is not the resume's batch (the resume,
    /// after the message it consumes if it delivers one).
    #[error("the store acknowledged {count} events ({kind}) that are not the resume's batch")]
    WrongAppend {
        /// How many envelopes came back.
        count: usize,
        /// The first one's kind, or `none`.
        kind: String,
    },
    /// An append acknowledgement in the right place whose event is not the
    /// one sent: another payload, `at` or metadata (the token included). A
    /// store stores exactly what it is sent, so the resume cannot tell what
    /// was written and records nothing as landed.
    #[error("the store acknowledged the resume with another {field} than was sent")]
    ForgedAppend {
        /// The first field that differs: `payload`, `metadata` or `at`.
        field: &'static str,
    },
    /// A refusal of a resume that names another park than the one resumed.
    #[error("the refusal names park {got}, the resume was of park {expected}")]
    WrongPark {
        /// The park the resume was of.
        expected: u64,
        /// The park the refusal names.
        got: u64,
    },
    /// Events of another execution than the one asked for.
    #[error("the store answered with events of {got:?} to a read of {expected:?}")]
    WrongLog {
        /// The execution asked for.
        expected: ExecutionId,
        /// The one in the answer.
        got: ExecutionId,
    },
    /// A page that lists the previous page's last id again: a listing
    /// whose `after` is not exclusive would never end.
    #[error(
        "the listing after {after:?} listed {after:?} again: the cursor is exclusive, or the sweep would never end"
    )]
    PageRepeatsCursor {
        /// The cursor given.
        after: ExecutionId,
    },
    /// A page longer than the limit asked for: the listing ignores its
    /// bound, so its paging cannot be trusted either.
    #[error("the listing answered {listed} executions to a limit of {limit}")]
    PageOverLimit {
        /// The limit asked for.
        limit: u32,
        /// How many were listed.
        listed: usize,
    },
    /// A summary that contradicts itself: a head of 0 (a listed execution
    /// has a log) or an end outside the log. Its end is what eligibility
    /// is judged by, so it cannot be used.
    #[error(
        "the listing's summary of {execution_id:?} is not of a log: a head of 0, or an end outside it (head {head})"
    )]
    InvalidSummary {
        /// The execution.
        execution_id: ExecutionId,
        /// The head listed.
        head: u64,
        /// The end's sequence listed.
        ended: Option<u64>,
    },
    /// A whole-log read whose events do not run from sequence 1, one by
    /// one: judging or archiving it would miss events.
    #[error(
        "the read of {execution_id:?}'s whole log answered sequence {got} where {expected} belongs: a log runs from 1, contiguous"
    )]
    LogNotWhole {
        /// The execution read.
        execution_id: ExecutionId,
        /// The sequence due at that place.
        expected: u64,
        /// The one answered.
        got: u64,
    },
    /// A refused delete that cannot be the answer to the guard sent: the
    /// log "changed" to the very head the guard names, or a parent the
    /// guard does not name "moved".
    #[error(
        "the guarded delete of {execution_id:?} was refused with an answer that cannot answer its guard: the log's own head, or a parent it does not name"
    )]
    OutcomeOutsideGuard {
        /// The execution.
        execution_id: ExecutionId,
        /// The answer.
        outcome: GuardedDelete,
    },
    /// A tick input that does not fit the pending action: an answer to
    /// another action, or any answer while no tick runs.
    #[error("the tick expected {expected}, got {got}")]
    TickOutOfTurn {
        /// What the pending action is answered with.
        expected: &'static str,
        /// What was called.
        got: &'static str,
    },
    /// [`TickMachine::begin`](crate::tick::TickMachine::begin) while a tick
    /// is running: one node runs one tick at a time.
    #[error("a tick is already running")]
    TickBusy,
    /// The clock of a fire was fed without the random draw the fire asked
    /// for.
    #[error("a fire needs a random draw")]
    NoDraw,
    /// An inbox listing that breaks its contract: a message of another
    /// execution or channel than asked for, more than the limit, or out of
    /// arrival order.
    #[error("the inbox answered out of its contract: {reason}")]
    InboxOutOfContract {
        /// What was wrong.
        reason: &'static str,
    },
    /// A feed read or an open-parks page that breaks its contract: more
    /// than the limit, or out of order (a cursor that does not move
    /// forward would read the same events forever, or skip some).
    #[error("the feed answered out of its contract: {reason}")]
    FeedOutOfContract {
        /// What was wrong.
        reason: &'static str,
    },
    /// A batched call answered with another number of answers than it was
    /// asked for: the answers cannot be matched to what was asked, so none
    /// of them is taken.
    #[error("the store answered {answered} {what} to a batch of {asked}")]
    BatchLength {
        /// What the batch was of (`logs`, `outcomes`).
        what: &'static str,
        /// How many were asked for.
        asked: usize,
        /// How many came back.
        answered: usize,
    },
}
