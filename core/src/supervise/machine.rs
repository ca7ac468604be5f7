//! The supervision of one parent as a sans-IO state machine: every rule of
//! the child supervisor's loop, for every host (the async runtime's
//! `ChildSupervisor`, the npm package's, the simulation) to pump.
//!
//! [`SuperviseMachine::poll`] names the next [`SuperviseAction`]; the host
//! does it and feeds the answer back through the matching `handle_*`
//! method, until `poll` gives [`SupervisePoll::Done`] with a
//! [`SuperviseOutcome`]. The steps, and why:
//!
//! 1. **Read the parent's whole log** ([`SuperviseAction::ReadParent`]). No
//!    open park (as the fold sees it, so never after an end), or an open
//!    park with no `CHILD_DONE` wait: [`SuperviseOutcome::NotWaitingOnChildren`].
//!    A park whose waits cannot be read is refused as input
//!    ([`InputError::UnreadablePark`]): nothing can be decided from it.
//! 2. **Read each child** the park's waits name, sorted and once each
//!    ([`SuperviseAction::ReadChild`]), and fold its outcome
//!    ([`child_outcome`](super::child_outcome)).
//! 3. **Answer the waits** ([`answer_for`](super::answer_for)); no child
//!    wait satisfied: [`SuperviseOutcome::Waiting`]. The resume is stamped
//!    with the time given with the last child's log.
//! 4. **The unfenced try first**: a resume from the log already read, with
//!    [`ResumeRequest::unfenced`], so its only store step is the
//!    park-conditional append. Taking a token up front would fence every
//!    supervised parent for good, and a fenced execution refuses an
//!    unfenced manual resume forever after; the conditional append keeps
//!    two supervisors trying at once to one resume. Landed:
//!    [`Resumed`](SuperviseOutcome::Resumed); refused:
//!    [`AlreadyAnswered`](SuperviseOutcome::AlreadyAnswered).
//! 5. **Only a stale fence switches to conditional resumes** (someone
//!    acquired): up to [`SuperviseOptions::conditional_tries`] fenced
//!    resumes, each reading the log itself, while they are contended. With
//!    no conditional try allowed, the stale fence is the end
//!    ([`Fenced`](SuperviseOutcome::Fenced)).
//! 6. **Every try contended**: as [`SuperviseOptions::on_contention`] says,
//!    either the end ([`Contended`](SuperviseOutcome::Contended): a
//!    re-driver's supervision, whose timer service carries the chain on, or
//!    a supervisor without re-drive), or the chain's first re-drive row:
//!    the machine asks for a draw ([`SuperviseAction::Draw`]), then for the
//!    write of [`TimerRow::first_redrive`] ([`SuperviseAction::WriteRow`]),
//!    and ends [`RedriveScheduled`](SuperviseOutcome::RedriveScheduled).
//!    The draw is asked for only then, so a host's random source is called
//!    once per row written.
//!
//! What a re-driver answers a timer service for each end is
//! [`SuperviseOutcome::redrive_answer`]; which children a host indexes the
//! parent under (to know whom a child's end concerns) is
//! [`SuperviseMachine::watching`].
//!
//! A store error is not an answer: the host stops and drops the machine,
//! as for the other machines.

use crate::contract::ContractError;
use crate::error::Error;
use crate::event::Envelope;
use crate::fire::{RedriveAnswer, TimerRow};
use crate::fold::ExecutionView;
use crate::input::{ExecutionId, InputError};
use crate::park::{Wait, waits_of};
use crate::redrive_policy::{Draw, RedrivePolicy};
use crate::resume_machine::{
    ResumeContendedError, ResumeError, ResumeRequest, Resumed, check_id, check_run,
};

use super::{ChildOutcome, answer_with, child_outcome};

/// What a supervision does when every try of its resume was contended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnContention {
    /// End [`SuperviseOutcome::Contended`], writing nothing: a re-driver's
    /// supervision (the timer service that fired the row carries the chain
    /// on), or a supervisor with re-drive off.
    #[default]
    Answer,
    /// Write the chain's first re-drive row and end
    /// [`SuperviseOutcome::RedriveScheduled`]: a supervisor with re-drive
    /// on, so the park is not left for an operator.
    WriteRow,
}

/// How a supervision behaves: the same for every supervision of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SuperviseOptions {
    /// Fenced resumes after the unfenced try met a stale fence (each is
    /// itself up to [`MAX_ATTEMPTS`](crate::resume::MAX_ATTEMPTS) acquisitions).
    pub conditional_tries: u32,
    /// The schedule of the first re-drive row's delay (try 0): the timer
    /// services' policy, so that a chain follows one schedule.
    pub policy: RedrivePolicy,
    /// What every try contended leads to.
    pub on_contention: OnContention,
}

impl Default for SuperviseOptions {
    /// Three conditional tries, the default policy, no re-drive row.
    fn default() -> Self {
        Self {
            conditional_tries: 3,
            policy: RedrivePolicy::default(),
            on_contention: OnContention::Answer,
        }
    }
}

/// One thing for the host to do.
///
/// Non-exhaustive: a host that does not know an action must stop rather
/// than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SuperviseAction {
    /// Read the parent's whole log, `read_range(parent, 1, None)`; answer
    /// with [`SuperviseMachine::handle_parent`].
    ReadParent,
    /// Read this child's whole log, `read_range(child, 1, None)`; answer with
    /// [`SuperviseMachine::handle_child`].
    ReadChild(ExecutionId),
    /// Run a [`ResumeMachine`](crate::ResumeMachine) of the parent,
    /// `ResumeMachine::with_events(parent, request, capability, &log)`, to
    /// its end; answer with its result through
    /// [`SuperviseMachine::handle_resumed`]. `log` is the parent's log as
    /// read for the unfenced try (so its only store step is the append),
    /// and empty for a conditional try (which reads the log itself).
    Resume {
        /// The resume.
        request: ResumeRequest,
        /// The log to start from.
        log: Vec<Envelope>,
    },
    /// Draw a number in `[0, 1)` for the re-drive row's jitter and read
    /// the clock; answer with [`SuperviseMachine::handle_draw`].
    Draw,
    /// Write this re-drive row to the timer store (its schedule); answer
    /// with [`SuperviseMachine::handle_written`].
    WriteRow(TimerRow),
}

/// How a supervision ended.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SuperviseOutcome {
    /// The parent was resumed with its children's outcomes.
    Resumed(Resumed),
    /// Someone else answered the park first (another supervisor, a timer,
    /// a manual resume). Nothing to do.
    AlreadyAnswered,
    /// The parent waits on children that have not ended yet.
    Waiting,
    /// The parent has no open park with a child wait: not the supervisor's.
    NotWaitingOnChildren,
    /// Every conditional try was contended and no row was written
    /// ([`OnContention::Answer`]): the park is still open and a later try
    /// is expected to work.
    Contended(ResumeContendedError),
    /// The unfenced try met a fenced parent and no conditional try is
    /// allowed (`conditional_tries` is 0).
    Fenced(crate::StaleFenceError),
    /// Every conditional try was contended and this first re-drive row
    /// (try 0) was written ([`OnContention::WriteRow`]).
    RedriveScheduled(TimerRow),
}

impl SuperviseOutcome {
    /// What a re-driver answers the timer service that fired a re-drive
    /// row, when this supervision is its re-drive: resumed is done; already
    /// answered, waiting and not waiting on children are noop (nothing of
    /// its own to re-derive); contended is contended (the service carries
    /// the chain on); a fenced parent with no conditional try allowed is
    /// failed. A row written (never, by a re-driver's supervision) carries
    /// the chain on by itself: noop, and the fired row is retired.
    #[must_use]
    pub fn redrive_answer(&self) -> RedriveAnswer {
        match self {
            SuperviseOutcome::Resumed(_) => RedriveAnswer::Done,
            SuperviseOutcome::AlreadyAnswered
            | SuperviseOutcome::Waiting
            | SuperviseOutcome::NotWaitingOnChildren
            | SuperviseOutcome::RedriveScheduled(_) => RedriveAnswer::Noop,
            SuperviseOutcome::Contended(_) => RedriveAnswer::Contended,
            SuperviseOutcome::Fenced(_) => RedriveAnswer::Failed,
        }
    }

    /// Whether the park may still be this supervisor's to resume: the
    /// parent still waits on its children, or its resume was contended.
    #[must_use]
    pub fn keeps_watch(&self) -> bool {
        matches!(
            self,
            SuperviseOutcome::Waiting
                | SuperviseOutcome::Contended(_)
                | SuperviseOutcome::RedriveScheduled(_)
        )
    }
}

/// What [`SuperviseMachine::poll`] says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SupervisePoll {
    /// Do this, then feed the answer back.
    Act(SuperviseAction),
    /// The supervision is over.
    Done(SuperviseOutcome),
}

/// Where the machine is. Each state but `Done` has exactly one pending
/// action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum State {
    /// Read the parent's log.
    ReadParent,
    /// Read `children[next]`.
    ReadChild {
        /// Its index in the sorted children.
        next: usize,
    },
    /// Resume try `tried` (0 is the unfenced try).
    Resume {
        /// The request, fenced as the store allows.
        request: ResumeRequest,
        /// Which try.
        tried: u32,
    },
    /// Draw the first re-drive row's jitter.
    Draw,
    /// Write the first re-drive row.
    WriteRow(TimerRow),
    /// Finished.
    Done(SuperviseOutcome),
}

/// The supervision of one parent, as a value: `Clone + Eq + Hash`, so a
/// simulation can snapshot it between any two steps.
///
/// [`SuperviseMachine::new`], then [`poll`](SuperviseMachine::poll) and the
/// `handle_*` methods, as for the resume machine. Its steps head
/// `core/src/supervise/machine.rs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuperviseMachine {
    /// The parent.
    parent: ExecutionId,
    /// Behaviour.
    options: SuperviseOptions,
    /// The parent's log as read (for the unfenced try).
    log: Vec<Envelope>,
    /// The open park's sequence.
    park: u64,
    /// Its waits.
    waits: Vec<Wait>,
    /// The children its waits name, sorted, once each.
    children: Vec<ExecutionId>,
    /// Outcomes of the children read so far that ended, in the children's
    /// order. (Sorted vectors, not B-tree collections: the npm package
    /// carries this machine, and every B-tree or sort instance costs it
    /// kilobytes.)
    ended: Vec<(ExecutionId, ChildOutcome)>,
    /// The pending step.
    state: State,
}

impl SuperviseMachine {
    /// A supervision of `parent`; its first action reads the parent's log.
    #[must_use]
    pub fn new(parent: ExecutionId, options: SuperviseOptions) -> Self {
        Self {
            parent,
            options,
            log: Vec::new(),
            park: 0,
            waits: Vec::new(),
            children: Vec::new(),
            ended: Vec::new(),
            state: State::ReadParent,
        }
    }

    /// The parent supervised.
    #[must_use]
    pub fn parent(&self) -> &ExecutionId {
        &self.parent
    }

    /// The children a host's index (child → parents) should list this
    /// parent under, as of the last input: those its open child park
    /// names, from the parent's read on, unless the supervision ended in a
    /// way that makes the parent no longer the supervisor's (resumed,
    /// already answered, not waiting on children, fenced). `None` before
    /// the parent is read, and then: drop the parent from the index.
    #[must_use]
    pub fn watching(&self) -> Option<&[ExecutionId]> {
        match &self.state {
            State::ReadParent => None,
            State::Done(outcome) if !outcome.keeps_watch() => None,
            _ => Some(&self.children),
        }
    }

    /// What to do next, or the outcome. Asking twice without handling an
    /// answer gives the same action.
    pub fn poll(&self) -> SupervisePoll {
        let action = match &self.state {
            State::Done(outcome) => return SupervisePoll::Done(outcome.clone()),
            State::ReadParent => SuperviseAction::ReadParent,
            State::ReadChild { next } => SuperviseAction::ReadChild(self.children[*next].clone()),
            State::Resume { request, tried: 0 } => SuperviseAction::Resume {
                request: request.clone().unfenced(),
                log: self.log.clone(),
            },
            State::Resume { request, .. } => SuperviseAction::Resume {
                request: request.clone(),
                log: Vec::new(),
            },
            State::Draw => SuperviseAction::Draw,
            State::WriteRow(row) => SuperviseAction::WriteRow(row.clone()),
        };
        SupervisePoll::Act(action)
    }

    /// Feeds the answer to [`SuperviseAction::ReadParent`]: the parent's
    /// whole log from sequence 1, possibly empty.
    pub fn handle_parent(&mut self, events: &[Envelope]) -> Result<(), Error> {
        if !matches!(self.state, State::ReadParent) {
            return Err(self.unexpected("handle_parent").into());
        }
        check_run(&self.parent, 1, events)?;
        let Some(open) = ExecutionView::fold(events).open_park else {
            self.state = State::Done(SuperviseOutcome::NotWaitingOnChildren);
            return Ok(());
        };
        let Some(park) = events.iter().find(|event| event.sequence == open.sequence) else {
            self.state = State::Done(SuperviseOutcome::NotWaitingOnChildren);
            return Ok(());
        };
        let waits = waits_of(park).map_err(|source| InputError::UnreadablePark {
            parent: self.parent.clone(),
            source: Box::new(source),
        })?;
        let mut children: Vec<ExecutionId> = Vec::new();
        for child in waits.iter().flat_map(Wait::children) {
            if let Err(at) = children.binary_search(child) {
                children.insert(at, child.clone());
            }
        }
        if children.is_empty() {
            self.state = State::Done(SuperviseOutcome::NotWaitingOnChildren);
            return Ok(());
        }
        self.log = events.to_vec();
        self.park = open.sequence;
        self.waits = waits;
        self.children = children;
        self.state = State::ReadChild { next: 0 };
        Ok(())
    }

    /// Feeds the answer to [`SuperviseAction::ReadChild`]: that child's
    /// whole log from sequence 1, possibly empty, and the time now (the
    /// resume is stamped with the time given with the last child).
    pub fn handle_child(&mut self, events: &[Envelope], now: i64) -> Result<(), ContractError> {
        let State::ReadChild { next } = self.state else {
            return Err(self.unexpected("handle_child"));
        };
        let child = &self.children[next];
        check_run(child, 1, events)?;
        if let Some(outcome) = child_outcome(events) {
            self.ended.push((child.clone(), outcome));
        }
        self.state = if next + 1 < self.children.len() {
            State::ReadChild { next: next + 1 }
        } else {
            let ended = |child: &ExecutionId| {
                let at = self.ended.binary_search_by(|(id, _)| id.cmp(child)).ok()?;
                Some(&self.ended[at].1)
            };
            match answer_with(&self.waits, ended) {
                Some(answer) => State::Resume {
                    request: ResumeRequest::new(self.park, answer, now),
                    tried: 0,
                },
                None => State::Done(SuperviseOutcome::Waiting),
            }
        };
        Ok(())
    }

    /// Feeds the result of the [`SuperviseAction::Resume`]: what the resume
    /// machine's [`Poll::Done`](crate::Poll::Done) held (`result.as_ref()`).
    pub fn handle_resumed(
        &mut self,
        result: Result<&Resumed, &ResumeError>,
    ) -> Result<(), ContractError> {
        let State::Resume { request, tried } = &self.state else {
            return Err(self.unexpected("handle_resumed"));
        };
        let tried = *tried;
        let next = match result {
            Ok(resumed) => {
                check_id(&self.parent, &resumed.execution_id)?;
                State::Done(SuperviseOutcome::Resumed(resumed.clone()))
            }
            Err(ResumeError::Refused(refused)) => {
                check_id(&self.parent, &refused.execution_id)?;
                if refused.park_seq != self.park {
                    return Err(ContractError::WrongPark {
                        expected: self.park,
                        got: refused.park_seq,
                    });
                }
                State::Done(SuperviseOutcome::AlreadyAnswered)
            }
            Err(ResumeError::StaleFence(stale)) if tried == 0 => {
                check_id(&self.parent, &stale.execution_id)?;
                if self.options.conditional_tries == 0 {
                    State::Done(SuperviseOutcome::Fenced(stale.clone()))
                } else {
                    State::Resume {
                        request: request.clone(),
                        tried: 1,
                    }
                }
            }
            Err(ResumeError::StaleFence(_)) => {
                return Err(ContractError::UnexpectedInput {
                    expected: "the result of the fenced resume requested",
                    got: "a stale-fence refusal, which only an unfenced resume gets",
                });
            }
            Err(ResumeError::Contended(contended)) => {
                check_id(&self.parent, &contended.execution_id)?;
                if tried >= 1 && tried < self.options.conditional_tries {
                    State::Resume {
                        request: request.clone(),
                        tried: tried + 1,
                    }
                } else {
                    match self.options.on_contention {
                        OnContention::Answer => {
                            State::Done(SuperviseOutcome::Contended(contended.clone()))
                        }
                        OnContention::WriteRow => State::Draw,
                    }
                }
            }
        };
        self.state = next;
        Ok(())
    }

    /// Feeds the answer to [`SuperviseAction::Draw`]: a checked draw and
    /// the time now, from which the first re-drive row is due
    /// ([`TimerRow::first_redrive`]).
    pub fn handle_draw(&mut self, draw: Draw, now: i64) -> Result<(), Error> {
        if !matches!(self.state, State::Draw) {
            return Err(self.unexpected("handle_draw").into());
        }
        let row = TimerRow::first_redrive(self.parent.clone(), now, &self.options.policy, draw)
            .ok_or(InputError::NoWakeTime { now })?;
        self.state = State::WriteRow(row);
        Ok(())
    }

    /// Acknowledges [`SuperviseAction::WriteRow`]: the row is stored.
    pub fn handle_written(&mut self) -> Result<(), ContractError> {
        let State::WriteRow(row) = &self.state else {
            return Err(self.unexpected("handle_written"));
        };
        self.state = State::Done(SuperviseOutcome::RedriveScheduled(row.clone()));
        Ok(())
    }

    /// The error for an input that does not answer the pending action.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match &self.state {
            State::Done(_) => "nothing: the supervision is over",
            State::ReadParent => "handle_parent",
            State::ReadChild { .. } => "handle_child",
            State::Resume { .. } => "handle_resumed",
            State::Draw => "handle_draw",
            State::WriteRow(_) => "handle_written",
        };
        ContractError::UnexpectedInput { expected, got }
    }
}

#[cfg(test)]
mod tests;
