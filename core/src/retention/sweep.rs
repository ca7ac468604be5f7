//! The retention sweep as a sans-IO machine: the same decisions for the
//! Rust runtime, the npm package and the simulation, with the reads,
//! archives and deletes done by whoever drives it.
//!
//! The order of steps is the policy. The sweep works a listing page at a
//! time, and asks for each step's IO for the whole page at once (one call
//! for the page's logs, one for their parents, one archive, deletes in
//! batches), while every decision stays per execution:
//!
//! 1. **List** a page of executions (`list_executions(after, limit)`). Each
//!    listed execution is *examined*; only those that ended before the
//!    cutoff are *eligible*, judged from the listing alone, so nothing else
//!    is read for the rest (they are *skipped*).
//! 2. **Read** the eligible executions' logs, and judge each again from
//!    what was read (the listing may be older than the log).
//! 3. **Read each parent** that could wait on one of them, once per page:
//!    the one a child's `EXECUTION_STARTED` records ([`parent_of`]) and any
//!    the driver knows of (a supervisor's edges, for logs written without
//!    the field). The first of a child's parents parked on it
//!    ([`pin_parked_children`]) *pins* it: it is left exactly where it is.
//! 4. **Archive** the page's remaining logs, if the sweep archives, before
//!    anything of the page is deleted: a failed archive stops the sweep
//!    with every log still there.
//! 5. **Delete** them, each under a [`DeleteGuard`] of what steps 2 and 3
//!    saw, in batches that lock at most [`DELETE_BATCH_KEYS`] executions;
//!    the store refuses an entry (the execution is *kept*) if its log grew
//!    or a parent moved meanwhile. This closes the window where a parent
//!    parks on a child between the pin check and the delete.
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
//! for good while the store grows. A batched read that fails for good is
//! asked again one log at a time, so that only the children of the log
//! that cannot be read are undecided. Any other failure (one that may pass,
//! or a listing, archive or delete that fails) is
//! [`SweepFailureVerdict::Stop`]: the driver ends the run with its own
//! error, and [`SweepMachine::report`] says what was done before it.
//!
//! Every rule of the sweep is here, so that each host is a pump that only
//! does IO and callbacks: the options' default and check
//! ([`SweepOptions::new`], [`SweepOptions::check`]), the batches, what a
//! store's answers must be (a [`ContractError`] otherwise), what a failure
//! means, and when a listing page is done
//! ([`SweepMachine::poll_page_done`], for progress).

use crate::contract::ContractError;
use crate::event::Envelope;
use crate::input::{ExecutionId, InputError};
use crate::lineage::parent_of;
use crate::retention::guard::{
    DELETE_BATCH_KEYS, DeleteGuard, DeleteIf, GuardedDelete, ParentMark,
};
use crate::retention::pin::pin_parked_children;
use crate::retention::summary::{Ended, ExecutionSummary, ended_of};
use crate::retention::sweep_answers::{check_answer_count, check_log, check_outcome, check_page};
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
    /// The machine took the failure in (a batch is asked again one log at
    /// a time, or the child at hand is kept and reported undecided); poll
    /// again.
    GoOn,
}

/// An execution's whole log, as the sweep read it: what an archive is
/// handed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExecutionLog {
    /// The execution.
    pub execution_id: ExecutionId,
    /// Its whole log.
    pub events: Vec<Envelope>,
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
    /// Read these eligible executions' whole logs (a store's `read_logs`);
    /// answer with [`SweepMachine::handle_logs`], in the same order, adding
    /// any parents the driver knows wait on each, or with
    /// [`SweepMachine::handle_failed`] if the read failed.
    ReadLogs {
        /// The executions, in listing order.
        execution_ids: Vec<ExecutionId>,
    },
    /// Read these parents' whole logs (no log reads as empty); answer with
    /// [`SweepMachine::handle_parents`], in the same order, or with
    /// [`SweepMachine::handle_failed`] if the read failed.
    ReadParents {
        /// The parents, each once.
        parents: Vec<ExecutionId>,
    },
    /// Hand these logs to the archive; answer with
    /// [`SweepMachine::handle_archived`] once all of them are durably
    /// written (one sync for the lot is enough).
    Archive {
        /// Every log of the page that is about to be deleted, as read.
        logs: Vec<ExecutionLog>,
    },
    /// Delete each entry's log under its guard (a store's
    /// `delete_executions_if`); answer with [`SweepMachine::handle_deleted`],
    /// one outcome per entry, in the same order. Each entry is judged by
    /// its own guard; the batch may be one atomic step or one per entry.
    Delete {
        /// The entries, in listing order.
        batch: Vec<DeleteIf>,
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
    /// Parent logs read, or tried, for pins: each parent once per page.
    pub parent_reads: u64,
    /// Batches of guarded deletes sent.
    pub delete_batches: u64,
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
    /// The parents whose pins decide it, in order, each once.
    parents: Vec<ExecutionId>,
    /// What each parent's read showed, once decided not to pin.
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

    /// Its entry in a batch of guarded deletes.
    fn delete(&self) -> DeleteIf {
        DeleteIf {
            execution_id: self.execution_id.clone(),
            guard: self.guard(),
        }
    }
}

/// What a parent's read gave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ParentRead {
    /// Its whole log.
    Log(Vec<Envelope>),
    /// It cannot be read for good: the store's reason.
    Unreadable(String),
}

/// Logs still to be read, and how: the whole rest at once, or one at a
/// time once a batch failed for good.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Reads {
    /// The ids not read yet, in order.
    ids: Vec<ExecutionId>,
    /// Whether each is asked alone.
    one_by_one: bool,
}

impl Reads {
    /// The ids the next read asks for.
    fn asked(&self) -> &[ExecutionId] {
        if self.one_by_one {
            &self.ids[..self.ids.len().min(1)]
        } else {
            &self.ids
        }
    }

    /// Drops the ids just read; whether any are left.
    fn done(&mut self, read: usize) -> bool {
        self.ids.drain(..read);
        !self.ids.is_empty()
    }
}

/// The ids `reads` asked for, once `logs` answers them: one whole log per
/// id, in order. The one check of a read's answer, for its logs and its
/// parents alike.
fn checked_logs(reads: &Reads, logs: &[Vec<Envelope>]) -> Result<Vec<ExecutionId>, ContractError> {
    let asked = reads.asked();
    check_answer_count("logs", asked.len(), logs.len())?;
    for (id, events) in asked.iter().zip(logs) {
        check_log(id, events)?;
    }
    Ok(asked.to_vec())
}

/// Where the sweep stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// Waiting for a listing page.
    List,
    /// Waiting for eligible executions' logs.
    ReadLogs(Reads),
    /// Waiting for parents' logs.
    ReadParents(Reads),
    /// Waiting for the archive of every remaining candidate.
    Archive,
    /// Waiting for a batch of guarded deletes: the next `len` candidates.
    Delete {
        /// How many candidates the pending batch holds.
        len: usize,
    },
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
    /// The pending step.
    stage: Stage,
    /// The page's eligible executions being judged, in listing order; from
    /// the archive on, only those still to be deleted.
    candidates: Vec<Candidate>,
    /// The page's parents read so far, each once.
    parent_reads: Vec<(ExecutionId, ParentRead)>,
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
            stage: Stage::List,
            candidates: Vec::new(),
            parent_reads: Vec::new(),
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
            Stage::ReadLogs(reads) => SweepAction::ReadLogs {
                execution_ids: reads.asked().to_vec(),
            },
            Stage::ReadParents(reads) => SweepAction::ReadParents {
                parents: reads.asked().to_vec(),
            },
            Stage::Archive => SweepAction::Archive {
                logs: self
                    .candidates
                    .iter()
                    .map(|candidate| ExecutionLog {
                        execution_id: candidate.execution_id.clone(),
                        events: candidate.events.clone(),
                    })
                    .collect(),
            },
            Stage::Delete { len } => SweepAction::Delete {
                batch: self.candidates[..*len]
                    .iter()
                    .map(Candidate::delete)
                    .collect(),
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
        let eligible: Vec<ExecutionId> = page
            .into_iter()
            .filter(|summary| self.is_eligible(summary.ended))
            .map(|summary| summary.execution_id)
            .collect();
        self.report.eligible += eligible.len() as u64;
        self.stage = if eligible.is_empty() {
            self.page_done = true;
            Stage::List
        } else {
            Stage::ReadLogs(Reads {
                ids: eligible,
                one_by_one: false,
            })
        };
        Ok(())
    }

    /// The answer to [`SweepAction::ReadLogs`]: each execution's whole log,
    /// in the order asked, and the parents the driver knows wait on each (a
    /// supervisor's edges): one list per log, or none at all when it knows
    /// of none. Any log that is not its execution's whole log, or a count
    /// that does not match, refuses the lot.
    pub fn handle_logs(
        &mut self,
        logs: Vec<Vec<Envelope>>,
        known_parents: Vec<Vec<ExecutionId>>,
    ) -> Result<(), ContractError> {
        let Stage::ReadLogs(reads) = &self.stage else {
            return Err(self.unexpected("handle_logs"));
        };
        let asked = checked_logs(reads, &logs)?;
        if !known_parents.is_empty() {
            check_answer_count("known parent lists", asked.len(), known_parents.len())?;
        }
        let mut known = known_parents.into_iter();
        for (execution_id, events) in asked.iter().zip(logs) {
            self.report.log_reads += 1;
            self.judge_log(
                execution_id.clone(),
                events,
                known.next().unwrap_or_default(),
            );
        }
        self.after_read(asked.len());
        Ok(())
    }

    /// The answer to [`SweepAction::ReadParents`]: each parent's whole log,
    /// in the order asked, empty when it has none. Any log that is not its
    /// parent's whole log, or a count that does not match, refuses the lot.
    pub fn handle_parents(&mut self, logs: Vec<Vec<Envelope>>) -> Result<(), ContractError> {
        let Stage::ReadParents(reads) = &self.stage else {
            return Err(self.unexpected("handle_parents"));
        };
        let asked = checked_logs(reads, &logs)?;
        for (parent, events) in asked.iter().zip(logs) {
            self.report.parent_reads += 1;
            self.parent_reads
                .push((parent.clone(), ParentRead::Log(events)));
        }
        self.after_read(asked.len());
        Ok(())
    }

    /// The answer to [`SweepAction::ReadLogs`] or
    /// [`SweepAction::ReadParents`] when the store cannot do that read for
    /// good (a corrupt row, a payload it cannot decode: an error retrying
    /// cannot help), `detail` saying why. A read of several logs is asked
    /// again one log at a time, to find the one at fault; a read of one
    /// keeps its children, reported undecided, and the sweep goes on. A
    /// failure that may pass is not this: the driver ends the run with it,
    /// and the next run reads again.
    /// [`handle_failed`](Self::handle_failed) is the same answer for a
    /// driver that hands the machine every failure, and says which it is.
    pub fn handle_unreadable(&mut self, detail: String) -> Result<(), ContractError> {
        let (Stage::ReadLogs(reads) | Stage::ReadParents(reads)) = &mut self.stage else {
            return Err(self.unexpected("handle_unreadable"));
        };
        if reads.asked().len() > 1 {
            reads.one_by_one = true;
            return Ok(());
        }
        let id = reads.ids[0].clone();
        if matches!(self.stage, Stage::ReadLogs(_)) {
            self.report.log_reads += 1;
            self.undecided(id, UndecidedReason::UnreadableLog { detail });
        } else {
            self.report.parent_reads += 1;
            self.parent_reads.push((id, ParentRead::Unreadable(detail)));
        }
        self.after_read(1);
        Ok(())
    }

    /// The answer to any action that failed (the store's or the archive's
    /// error), read by the host as [`SweepFailure`]. A read that cannot
    /// succeed for good is taken in as
    /// [`handle_unreadable`](Self::handle_unreadable) takes it, and the
    /// sweep goes on ([`SweepFailureVerdict::GoOn`]); anything else ends the
    /// run ([`SweepFailureVerdict::Stop`]) with the machine as it was: a
    /// failure that may pass is tried again by the next run, and a listing,
    /// archive or delete that fails for good is not one child's problem.
    pub fn handle_failed(
        &mut self,
        failure: SweepFailure,
    ) -> Result<SweepFailureVerdict, ContractError> {
        match (&self.stage, failure) {
            (Stage::Done, _) => Err(self.unexpected("handle_failed")),
            (Stage::ReadLogs(_) | Stage::ReadParents(_), SweepFailure::ForGood { detail }) => {
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

    /// The answer to [`SweepAction::Archive`]: every log is durably
    /// archived.
    pub fn handle_archived(&mut self) -> Result<(), ContractError> {
        self.expect(matches!(self.stage, Stage::Archive), "handle_archived")?;
        self.report.archived += self.candidates.len() as u64;
        self.stage = self.next_batch();
        Ok(())
    }

    /// The answer to [`SweepAction::Delete`]: one outcome per entry, in
    /// order. A count that does not match, or a refusal that cannot answer
    /// its entry's guard (the log "changed" to the guard's own head, a
    /// parent the guard does not name "moved"), refuses the lot: a broken
    /// store.
    pub fn handle_deleted(&mut self, outcomes: Vec<GuardedDelete>) -> Result<(), ContractError> {
        let Stage::Delete { len } = self.stage else {
            return Err(self.unexpected("handle_deleted"));
        };
        check_answer_count("outcomes", len, outcomes.len())?;
        for (candidate, outcome) in self.candidates.iter().zip(&outcomes) {
            check_outcome(&candidate.execution_id, &candidate.guard(), outcome)?;
        }
        self.report.delete_batches += 1;
        for (candidate, outcome) in self.candidates.drain(..len).zip(outcomes) {
            match outcome {
                GuardedDelete::Deleted => self.report.deleted += 1,
                refusal => self.report.kept.push(Kept {
                    execution_id: candidate.execution_id,
                    refusal,
                }),
            }
        }
        self.stage = self.next_batch();
        Ok(())
    }

    /// Judges an eligible execution again from its log, as read: it may
    /// have been deleted, or deleted and grown back, since the listing.
    fn judge_log(
        &mut self,
        execution_id: ExecutionId,
        events: Vec<Envelope>,
        known_parents: Vec<ExecutionId>,
    ) {
        if !self.is_eligible(ended_of(&events)) {
            return;
        }
        let recorded = match parent_of(&events) {
            Ok(recorded) => recorded,
            Err(source) => {
                self.undecided(execution_id, UndecidedReason::InvalidLineage(source));
                return;
            }
        };
        let mut parents: Vec<ExecutionId> = Vec::new();
        for parent in recorded.into_iter().chain(known_parents) {
            if !parents.contains(&parent) {
                parents.push(parent);
            }
        }
        self.candidates.push(Candidate {
            execution_id,
            events,
            parents,
            marks: Vec::new(),
        });
    }

    /// Moves on after `read` logs of the pending read were taken in: the
    /// rest of it, the parents once the logs are read, the decisions once
    /// the parents are.
    fn after_read(&mut self, read: usize) {
        let (Stage::ReadLogs(reads) | Stage::ReadParents(reads)) = &mut self.stage else {
            unreachable!("only reads are taken in");
        };
        if reads.done(read) {
            return;
        }
        if matches!(self.stage, Stage::ReadLogs(_)) {
            let mut ids: Vec<ExecutionId> = Vec::new();
            for parent in self.candidates.iter().flat_map(|c| &c.parents) {
                if !ids.contains(parent) {
                    ids.push(parent.clone());
                }
            }
            if !ids.is_empty() {
                self.stage = Stage::ReadParents(Reads {
                    ids,
                    one_by_one: false,
                });
                return;
            }
        }
        self.decide();
    }

    /// Decides every candidate of the page from its parents' reads: the
    /// first parent, in its order, that pins it or cannot be judged
    /// decides; a candidate no parent holds goes on to the archive or the
    /// delete.
    fn decide(&mut self) {
        let reads = std::mem::take(&mut self.parent_reads);
        let candidates = std::mem::take(&mut self.candidates);
        for mut candidate in candidates {
            let mut held = None;
            for parent in &candidate.parents {
                let read = reads
                    .iter()
                    .find_map(|(id, read)| (id == parent).then_some(read))
                    .expect("every parent of a candidate is read before it is decided");
                let events = match read {
                    ParentRead::Log(events) => events,
                    ParentRead::Unreadable(detail) => {
                        held = Some(Err(UndecidedReason::UnreadableParent {
                            parent: parent.clone(),
                            detail: detail.clone(),
                        }));
                        break;
                    }
                };
                match pin_parked_children(&candidate.execution_id, events) {
                    Ok(true) => {
                        held = Some(Ok(parent.clone()));
                        break;
                    }
                    Ok(false) => candidate.marks.push(ParentMark {
                        parent: parent.clone(),
                        seen: events.last().map_or(0, |e| e.sequence),
                    }),
                    Err(InputError::UnknownKind { sequence, kind }) => {
                        held = Some(Err(UndecidedReason::UnknownKind {
                            parent: parent.clone(),
                            sequence,
                            kind,
                        }));
                        break;
                    }
                    Err(source) => {
                        held = Some(Err(UndecidedReason::InvalidPark {
                            parent: parent.clone(),
                            source,
                        }));
                        break;
                    }
                }
            }
            match held {
                None => self.candidates.push(candidate),
                Some(Ok(parent)) => self.report.pinned.push(Pinned {
                    child: candidate.execution_id,
                    parent,
                }),
                Some(Err(reason)) => self.undecided(candidate.execution_id, reason),
            }
        }
        self.stage = if self.options.dry_run {
            self.report.deleted += self.candidates.len() as u64;
            self.candidates.clear();
            self.next_batch()
        } else if self.options.archive && !self.candidates.is_empty() {
            Stage::Archive
        } else {
            self.next_batch()
        };
    }

    /// The next batch of guarded deletes: as many of the remaining
    /// candidates, in order, as lock at most [`DELETE_BATCH_KEYS`]
    /// executions (always at least one); the next page once none remain.
    fn next_batch(&mut self) -> Stage {
        if self.candidates.is_empty() {
            self.page_done = true;
            return Stage::List;
        }
        let mut keys: Vec<&ExecutionId> = Vec::new();
        let mut len = 0;
        for candidate in &self.candidates {
            let before = keys.len();
            for key in std::iter::once(&candidate.execution_id)
                .chain(candidate.marks.iter().map(|mark| &mark.parent))
            {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            if len > 0 && keys.len() > DELETE_BATCH_KEYS {
                keys.truncate(before);
                break;
            }
            len += 1;
        }
        Stage::Delete { len }
    }

    /// Keeps `execution_id`, which cannot be judged.
    fn undecided(&mut self, execution_id: ExecutionId, reason: UndecidedReason) {
        self.report.undecided.push(Undecided {
            execution_id,
            reason,
        });
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
            Stage::ReadLogs(_) => "handle_logs",
            Stage::ReadParents(_) => "handle_parents",
            Stage::Archive => "handle_archived",
            Stage::Delete { .. } => "handle_deleted",
            Stage::Done => "nothing (the sweep is done)",
        };
        ContractError::UnexpectedInput { expected, got }
    }
}
