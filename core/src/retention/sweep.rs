//! The retention sweep as a sans-IO machine: the same decisions for the
//! Rust runtime, the npm package and the simulation, with the reads,
//! archives and deletes done by whoever drives it.
//!
//! The order of steps is the policy:
//!
//! 1. **List** a page of executions (`list_executions(after, limit)`). Each
//!    listed execution is *examined*; only those that ended before the
//!    cutoff are *eligible*, judged from the listing alone, so nothing else
//!    is read for the rest (they are *skipped*).
//! 2. **Read** an eligible execution's log, and judge it again from what
//!    was read (the listing may be older than the log).
//! 3. **Read each parent** that could wait on it: the one its
//!    `EXECUTION_STARTED` records ([`parent_of`]) and any the driver knows
//!    of (a supervisor's edges, for logs written without the field). The
//!    first parent parked on it ([`pin_parked_children`]) *pins* it: it is
//!    left exactly where it is.
//! 4. **Archive** the log, if the sweep archives, before anything is
//!    deleted: a failed archive stops the sweep with the log still there.
//! 5. **Delete** under a [`DeleteGuard`] of what steps 2 and 3 saw; the
//!    store refuses (the execution is *kept*) if the log grew or a parent
//!    moved meanwhile. This closes the window where a parent parks on a
//!    child between the pin check and the delete.
//!
//! An archive can therefore hold a log that was then kept, and hold it again
//! from the next sweep: archives are at-least-once, keyed by
//! `(executionId, sequence)`.
//!
//! A child the sweep cannot judge is *undecided* ([`Undecided`]): its log
//! or a parent's cannot be read for good ([`SweepMachine::handle_failed`]
//! with [`SweepFailure::ForGood`]), its recorded parent is corrupt, a
//! parent's open park cannot be read, or a kernel kind this node does not
//! know follows that park. It is kept, named in the report with its reason,
//! and the sweep goes on: one corrupt execution must not stop every sweep
//! for good while the store grows. Any other failure (one that may pass, or
//! a listing, archive or delete that fails) is [`SweepFailureVerdict::Stop`]:
//! the driver ends the run with its own error, and
//! [`SweepMachine::report`] says what was done before it.
//!
//! Every rule of the sweep is here, so that each host is a pump that only
//! does IO and callbacks: the options' default and check
//! ([`SweepOptions::new`], [`SweepOptions::check`]), what a store's answers
//! must be (a [`ContractError`] otherwise), what a failure means, and
//! when a listing page is done ([`SweepMachine::poll_page_done`], for
//! progress).

use crate::contract::ContractError;
use crate::event::Envelope;
use crate::input::{ExecutionId, InputError};
use crate::lineage::parent_of;
use crate::retention::guard::{DeleteGuard, GuardedDelete, ParentMark};
use crate::retention::pin::pin_parked_children;
use crate::retention::summary::{Ended, ExecutionSummary, ended_of};
use crate::retention::sweep_answers::{check_log, check_outcome, check_page};
use crate::retention::sweep_options::SweepOptions;
use crate::retention::undecided::{Undecided, UndecidedReason};

/// Why an action failed, as the host reads its own error: the one thing
/// about a failure the machine needs to decide what it means.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SweepFailure {
    /// It may pass if tried again (a lost connection, a timeout, a busy
    /// store), or the host cannot tell.
    MayPass,
    /// It cannot succeed however often it is tried (a stored row the store
    /// cannot decode); `detail` says why, for the report.
    ForGood {
        /// What the store said.
        detail: String,
    },
}

/// What [`SweepMachine::handle_failed`] makes of a failed action.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SweepFailureVerdict {
    /// End the run with the host's own error; [`SweepMachine::report`]
    /// says what was done before it, and the next run tries again.
    Stop,
    /// The child at hand is kept and reported undecided; poll again.
    GoOn,
}

/// What [`SweepMachine::poll`] asks the driver to do next.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SweepAction {
    /// List up to `limit` executions after `after`; answer with
    /// [`SweepMachine::handle_page`].
    List {
        /// The last id of the previous page, `None` for the first.
        after: Option<ExecutionId>,
        /// The page size.
        limit: u32,
    },
    /// Read the eligible execution's whole log; answer with
    /// [`SweepMachine::handle_log`], adding any parents the driver knows
    /// wait on it, or with [`SweepMachine::handle_failed`] if the read
    /// failed.
    ReadLog {
        /// The execution.
        execution_id: ExecutionId,
    },
    /// Read a parent's whole log (no log reads as empty); answer with
    /// [`SweepMachine::handle_parent`], or with
    /// [`SweepMachine::handle_failed`] if the read failed.
    ReadParent {
        /// The child whose pin is being decided.
        child: ExecutionId,
        /// The parent to read.
        parent: ExecutionId,
    },
    /// Hand the log to the archive; answer with
    /// [`SweepMachine::handle_archived`] once it is durably written.
    Archive {
        /// The execution.
        execution_id: ExecutionId,
        /// Its whole log, as read.
        events: Vec<Envelope>,
    },
    /// Delete the log under `guard`; answer with
    /// [`SweepMachine::handle_deleted`].
    Delete {
        /// The execution.
        execution_id: ExecutionId,
        /// What must still hold.
        guard: DeleteGuard,
    },
}

/// What [`SweepMachine::poll`] says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SweepPoll {
    /// Do this, then feed the answer back.
    Act(SweepAction),
    /// The sweep is over: what it did. Children it could not judge are in
    /// [`SweepReport::undecided`]; that is an answer, not a failure.
    Done(SweepReport),
}

/// A finished execution kept because a parent waits on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pinned {
    /// The child kept.
    pub child: ExecutionId,
    /// The parent parked on it.
    pub parent: ExecutionId,
}

/// An eligible, unpinned execution whose guarded delete was refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kept {
    /// The execution, still there.
    pub execution_id: ExecutionId,
    /// What the store found changed.
    pub refusal: GuardedDelete,
}

/// What a sweep did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SweepReport {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Executions listed.
    pub examined: u64,
    /// Of those, the ones that ended before the cutoff.
    pub eligible: u64,
    /// Deleted (would be, in a dry run).
    pub deleted: u64,
    /// Handed to the archive.
    pub archived: u64,
    /// Kept because a parent waits on them.
    pub pinned: Vec<Pinned>,
    /// Kept because the store refused the guarded delete.
    pub kept: Vec<Kept>,
    /// Kept because the sweep cannot judge them (unreadable or corrupt
    /// data, a kind this node does not know), each with why: for an
    /// operator to look at, since every sweep keeps them until then.
    pub undecided: Vec<Undecided>,
    /// Listing pages read.
    pub pages: u64,
    /// Logs of eligible executions read, or tried (one per eligible
    /// execution).
    pub log_reads: u64,
    /// Parent logs read, or tried, for pins (only ever for eligible
    /// executions).
    pub parent_reads: u64,
}

impl SweepReport {
    /// Listed but not eligible: still running, or ended too recently.
    #[must_use]
    pub fn skipped(&self) -> u64 {
        self.examined - self.eligible
    }
}

/// An eligible execution being judged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Candidate {
    /// The execution.
    execution_id: ExecutionId,
    /// Its log, as read.
    events: Vec<Envelope>,
    /// The parents to read, in order; `marks.len()` of them are read.
    parents: Vec<ExecutionId>,
    /// The parents read so far, with their heads.
    marks: Vec<ParentMark>,
}

impl Candidate {
    /// What must still hold for its delete: the log as read, the parents
    /// as read.
    fn guard(&self) -> DeleteGuard {
        DeleteGuard {
            head: self.events.last().map_or(0, |e| e.sequence),
            parents: self.marks.clone(),
        }
    }
}

/// Where the sweep stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// Waiting for a listing page.
    List,
    /// Waiting for an eligible execution's log.
    ReadLog(ExecutionId),
    /// Waiting for the next parent's log.
    ReadParent(Candidate),
    /// Waiting for the archive.
    Archive(Candidate),
    /// Waiting for the guarded delete.
    Delete(Candidate),
    /// Over.
    Done,
}

/// One retention sweep; see the module docs for its steps.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SweepMachine {
    /// What this sweep does.
    options: SweepOptions,
    /// The last id listed.
    cursor: Option<ExecutionId>,
    /// The current page's executions not yet examined, last first.
    page: Vec<ExecutionSummary>,
    /// The pending step.
    stage: Stage,
    /// What was done so far.
    report: SweepReport,
    /// Whether a listing page was finished since
    /// [`SweepMachine::poll_page_done`] last said so.
    page_done: bool,
}

impl SweepMachine {
    /// A sweep that has done nothing yet. A host checks `options` first
    /// ([`SweepOptions::check`]); the machine then only passes the page
    /// limit on.
    #[must_use]
    pub fn new(options: SweepOptions) -> Self {
        Self {
            options,
            cursor: None,
            page: Vec::new(),
            stage: Stage::List,
            report: SweepReport {
                dry_run: options.dry_run,
                ..SweepReport::default()
            },
            page_done: false,
        }
    }

    /// What was done so far: the whole report once the sweep is done, the
    /// partial one when a driver stops on a store error.
    #[must_use]
    pub fn report(&self) -> &SweepReport {
        &self.report
    }

    /// The next step.
    pub fn poll(&self) -> SweepPoll {
        let action = match &self.stage {
            Stage::List => SweepAction::List {
                after: self.cursor.clone(),
                limit: self.options.page_limit,
            },
            Stage::ReadLog(execution_id) => SweepAction::ReadLog {
                execution_id: execution_id.clone(),
            },
            Stage::ReadParent(candidate) => SweepAction::ReadParent {
                child: candidate.execution_id.clone(),
                parent: candidate.parents[candidate.marks.len()].clone(),
            },
            Stage::Archive(candidate) => SweepAction::Archive {
                execution_id: candidate.execution_id.clone(),
                events: candidate.events.clone(),
            },
            Stage::Delete(candidate) => SweepAction::Delete {
                execution_id: candidate.execution_id.clone(),
                guard: candidate.guard(),
            },
            Stage::Done => return SweepPoll::Done(self.report.clone()),
        };
        SweepPoll::Act(action)
    }

    /// The answer to [`SweepAction::List`]: the page, in the store's id
    /// order. An empty page ends the sweep. A page past the limit, one that
    /// lists its cursor again or a summary whose end is outside its own log
    /// is refused: a broken listing.
    pub fn handle_page(&mut self, page: Vec<ExecutionSummary>) -> Result<(), ContractError> {
        self.expect(matches!(self.stage, Stage::List), "handle_page")?;
        check_page(&page, self.cursor.as_ref(), self.options.page_limit)?;
        self.report.pages += 1;
        let Some(last) = page.last() else {
            self.stage = Stage::Done;
            self.page_done = true;
            return Ok(());
        };
        self.cursor = Some(last.execution_id.clone());
        self.report.examined += page.len() as u64;
        self.page = page;
        self.page.reverse();
        self.next_candidate();
        Ok(())
    }

    /// The answer to [`SweepAction::ReadLog`]: the whole log, and the
    /// parents the driver knows wait on the execution (a supervisor's
    /// edges; empty when it has none).
    pub fn handle_log(
        &mut self,
        events: Vec<Envelope>,
        known_parents: impl IntoIterator<Item = ExecutionId>,
    ) -> Result<(), ContractError> {
        let Stage::ReadLog(execution_id) = &self.stage else {
            return Err(self.unexpected("handle_log"));
        };
        let execution_id = execution_id.clone();
        check_log(&execution_id, &events)?;
        self.report.log_reads += 1;
        // Judged again from the log itself: it may have been deleted, or
        // deleted and grown back, since the listing.
        if !self.is_eligible(ended_of(&events)) {
            self.next_candidate();
            return Ok(());
        }
        let recorded = match parent_of(&events) {
            Ok(recorded) => recorded,
            Err(source) => {
                self.undecided(execution_id, UndecidedReason::InvalidLineage(source));
                return Ok(());
            }
        };
        let mut parents: Vec<ExecutionId> = Vec::new();
        for parent in recorded.into_iter().chain(known_parents) {
            if !parents.contains(&parent) {
                parents.push(parent);
            }
        }
        let candidate = Candidate {
            execution_id,
            events,
            parents,
            marks: Vec::new(),
        };
        self.after_parents(candidate);
        Ok(())
    }

    /// The answer to [`SweepAction::ReadParent`]: the parent's whole log,
    /// empty when it has none.
    pub fn handle_parent(&mut self, events: Vec<Envelope>) -> Result<(), ContractError> {
        let Stage::ReadParent(candidate) = &self.stage else {
            return Err(self.unexpected("handle_parent"));
        };
        let parent = candidate.parents[candidate.marks.len()].clone();
        check_log(&parent, &events)?;
        let Stage::ReadParent(mut candidate) = std::mem::replace(&mut self.stage, Stage::List)
        else {
            unreachable!("matched above");
        };
        self.report.parent_reads += 1;
        match pin_parked_children(&candidate.execution_id, &events) {
            Ok(true) => {
                self.report.pinned.push(Pinned {
                    child: candidate.execution_id,
                    parent,
                });
                self.next_candidate();
            }
            Ok(false) => {
                candidate.marks.push(ParentMark {
                    parent,
                    seen: events.last().map_or(0, |e| e.sequence),
                });
                self.after_parents(candidate);
            }
            Err(InputError::UnknownKind { sequence, kind }) => {
                self.undecided(
                    candidate.execution_id,
                    UndecidedReason::UnknownKind {
                        parent,
                        sequence,
                        kind,
                    },
                );
            }
            Err(source) => {
                self.undecided(
                    candidate.execution_id,
                    UndecidedReason::InvalidPark { parent, source },
                );
            }
        }
        Ok(())
    }

    /// The answer to [`SweepAction::ReadLog`] or
    /// [`SweepAction::ReadParent`] when the store cannot read that log for
    /// good (a corrupt row, a payload it cannot decode: an error retrying
    /// cannot help), `detail` saying why. The child is kept, reported
    /// undecided, and the sweep goes on. A failure that may pass is not
    /// this: the driver ends the run with it, and the next run reads again.
    /// [`handle_failed`](Self::handle_failed) is the same answer for a
    /// driver that hands the machine every failure, and says which it is.
    pub fn handle_unreadable(&mut self, detail: String) -> Result<(), ContractError> {
        let (execution_id, reason) = match &self.stage {
            Stage::ReadLog(execution_id) => {
                self.report.log_reads += 1;
                (
                    execution_id.clone(),
                    UndecidedReason::UnreadableLog { detail },
                )
            }
            Stage::ReadParent(candidate) => {
                self.report.parent_reads += 1;
                (
                    candidate.execution_id.clone(),
                    UndecidedReason::UnreadableParent {
                        parent: candidate.parents[candidate.marks.len()].clone(),
                        detail,
                    },
                )
            }
            _ => return Err(self.unexpected("handle_unreadable")),
        };
        self.undecided(execution_id, reason);
        Ok(())
    }

    /// The answer to any action that failed (the store's or the archive's
    /// error), read by the host as [`SweepFailure`]. A read that cannot
    /// succeed for good keeps the child, reported undecided, and the sweep
    /// goes on ([`SweepFailureVerdict::GoOn`]), as
    /// [`handle_unreadable`](Self::handle_unreadable) does; anything else
    /// ends the run ([`SweepFailureVerdict::Stop`]) with the machine as it was: a
    /// failure that may pass is tried again by the next run, and a listing,
    /// archive or delete that fails for good is not one child's problem.
    pub fn handle_failed(
        &mut self,
        failure: SweepFailure,
    ) -> Result<SweepFailureVerdict, ContractError> {
        match (&self.stage, failure) {
            (Stage::Done, _) => Err(self.unexpected("handle_failed")),
            (Stage::ReadLog(_) | Stage::ReadParent(_), SweepFailure::ForGood { detail }) => {
                self.handle_unreadable(detail)?;
                Ok(SweepFailureVerdict::GoOn)
            }
            _ => Ok(SweepFailureVerdict::Stop),
        }
    }

    /// Whether a listing page was finished (every execution on it decided,
    /// or the empty last page read) since this last answered `true`: when
    /// a host reports progress, with [`report`](Self::report) as it
    /// stands.
    #[must_use]
    pub fn poll_page_done(&mut self) -> bool {
        std::mem::take(&mut self.page_done)
    }

    /// The answer to [`SweepAction::Archive`]: the log is durably archived.
    pub fn handle_archived(&mut self) -> Result<(), ContractError> {
        self.expect(matches!(self.stage, Stage::Archive(_)), "handle_archived")?;
        if let Stage::Archive(candidate) = std::mem::replace(&mut self.stage, Stage::List) {
            self.report.archived += 1;
            self.stage = Stage::Delete(candidate);
        }
        Ok(())
    }

    /// The answer to [`SweepAction::Delete`]. A refusal that cannot answer
    /// the guard sent (the log "changed" to the guard's own head, a parent
    /// the guard does not name "moved") is refused: a broken store.
    pub fn handle_deleted(&mut self, outcome: GuardedDelete) -> Result<(), ContractError> {
        let Stage::Delete(candidate) = &self.stage else {
            return Err(self.unexpected("handle_deleted"));
        };
        check_outcome(&candidate.execution_id, &candidate.guard(), &outcome)?;
        match outcome {
            GuardedDelete::Deleted => self.report.deleted += 1,
            refusal => self.report.kept.push(Kept {
                execution_id: candidate.execution_id.clone(),
                refusal,
            }),
        }
        self.next_candidate();
        Ok(())
    }

    /// Keeps `execution_id`, which cannot be judged, and moves on.
    fn undecided(&mut self, execution_id: ExecutionId, reason: UndecidedReason) {
        self.report.undecided.push(Undecided {
            execution_id,
            reason,
        });
        self.next_candidate();
    }

    /// Moves on once every parent of `candidate` is read and none pins it.
    fn after_parents(&mut self, candidate: Candidate) {
        self.stage = if candidate.marks.len() < candidate.parents.len() {
            Stage::ReadParent(candidate)
        } else if self.options.dry_run {
            self.report.deleted += 1;
            self.next_stage()
        } else if self.options.archive {
            Stage::Archive(candidate)
        } else {
            Stage::Delete(candidate)
        };
    }

    /// Moves to the page's next eligible execution, or the next page.
    fn next_candidate(&mut self) {
        self.stage = self.next_stage();
    }

    /// The stage after the current candidate: the next eligible execution
    /// of the page (counting the rest as examined only), or the next page.
    fn next_stage(&mut self) -> Stage {
        while let Some(summary) = self.page.pop() {
            if self.is_eligible(summary.ended) {
                self.report.eligible += 1;
                return Stage::ReadLog(summary.execution_id);
            }
        }
        self.page_done = true;
        Stage::List
    }

    /// Whether an execution that ended as `ended` says is old enough.
    fn is_eligible(&self, ended: Option<Ended>) -> bool {
        ended.is_some_and(|ended| ended.at < self.options.ended_before)
    }

    /// Refuses a `handle_*` call when the pending step is not `ok`.
    fn expect(&self, ok: bool, got: &'static str) -> Result<(), ContractError> {
        if ok {
            Ok(())
        } else {
            Err(self.unexpected(got))
        }
    }

    /// The error for a `handle_*` call that answers nothing pending.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match &self.stage {
            Stage::List => "handle_page",
            Stage::ReadLog(_) => "handle_log",
            Stage::ReadParent(_) => "handle_parent",
            Stage::Archive(_) => "handle_archived",
            Stage::Delete(_) => "handle_deleted",
            Stage::Done => "nothing (the sweep is done)",
        };
        ContractError::UnexpectedInput { expected, got }
    }
}
