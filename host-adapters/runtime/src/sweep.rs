//! Retention that never deletes a child its parent waits on: the core's
//! [`SweepMachine`] driven against an [`EventStore`]. Its archive sinks
//! are in [`retention`](crate::retention).
//!
//! Run it from a service or a cron job:
//!
//! ```
//! use loomfence_core::{ExecutionId, KernelKind, NewEvent, retention::SweepOptions, lineage::started_child};
//! use loomfence_runtime::Sweep;
//! use loomfence_store::{EventStore, MemoryEventStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryEventStore::new();
//! let (parent, child) = (ExecutionId::new("order-7")?, ExecutionId::new("order-7/charge")?);
//! store.append(&parent, NewEvent::kernel(KernelKind::ExecutionStarted, 0)).await?;
//! store
//!     .append_many(&child, vec![
//!         started_child(&parent, 1),
//!         NewEvent::kernel(KernelKind::ExecutionCompleted, 2),
//!     ])
//!     .await?;
//!
//! let week = 7 * 24 * 3_600_000;
//! let now = 30 * 24 * 3_600_000;
//! let options = SweepOptions { ended_before: now - week, page_limit: 1_000, archive: false, dry_run: false };
//! let report = Sweep::new(&store, options).run().await?;
//! assert_eq!((report.examined, report.eligible, report.deleted), (2, 1, 1));
//! assert!(store.read_range(&child, 1, None).await?.is_empty());
//! # Ok(())
//! # }
//! ```

pub(crate) mod archive;

use loomfence_core::{
    ExecutionId, InputError,
    retention::{
        GuardedDelete, SweepAction, SweepFailure, SweepFailureVerdict, SweepMachine, SweepOptions,
        SweepPoll, SweepReport,
    },
};
use loomfence_store::{EventStore, InboxStore, StoreError};

use self::archive::ArchiveSink;
use crate::error::RuntimeError;
use crate::supervisor::ChildSupervisor;

/// The parents a host knows wait on a child, beyond the one its log
/// records.
type KnownParents<'a> = Box<dyn Fn(&ExecutionId) -> Vec<ExecutionId> + Send + Sync + 'a>;

/// A progress callback, given the report so far.
type OnPage<'a> = Box<dyn FnMut(&SweepReport) + Send + 'a>;

/// One retention sweep over a store, configured and then [run](Sweep::run).
pub struct Sweep<'a, S: EventStore + ?Sized> {
    /// The store swept.
    store: &'a S,
    /// What the sweep does.
    options: SweepOptions,
    /// Where logs go before their delete, when `options.archive` is set.
    archive: Option<&'a dyn ArchiveSink>,
    /// The fallback edges for logs without `payload.parent`.
    known_parents: Option<KnownParents<'a>>,
    /// Called after each page with the report so far.
    on_page: Option<OnPage<'a>>,
    /// Where the deleted executions' messages are purged.
    inbox: Option<&'a dyn InboxStore>,
}

impl<'a, S: EventStore + ?Sized> Sweep<'a, S> {
    /// A sweep of `store` with `options` and no archive, fallback edges or
    /// progress callback.
    pub fn new(store: &'a S, options: SweepOptions) -> Self {
        Self {
            store,
            options,
            archive: None,
            known_parents: None,
            on_page: None,
            inbox: None,
        }
    }

    /// Purges each deleted execution's messages from `inbox`, right after
    /// its log's delete: its rows go with its retention. (The SQL stores
    /// also delete them in the delete's own transaction; this purge is
    /// what keeps the memory and third-party stores alike, and a crash
    /// between the two leaves rows no park can ever consume.) A purge that
    /// fails stops the sweep as a store failure does.
    #[must_use]
    pub fn inbox(mut self, inbox: &'a dyn InboxStore) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// Hands every log to `sink` before its delete, and sets
    /// `SweepOptions::archive`. A sweep whose options ask for an archive
    /// without a sink is refused (a [`RuntimeError::Input`] in [`RuntimeError::Sweep`]).
    #[must_use]
    pub fn archive(mut self, sink: &'a dyn ArchiveSink) -> Self {
        self.options.archive = true;
        self.archive = Some(sink);
        self
    }

    /// Also treats the parents `supervisor` knows wait on a child as its
    /// parents: for logs written without `payload.parent`, the supervisor's
    /// edges (rebuilt from the parents' parks after a restart) are the only
    /// way to know who waits.
    #[must_use]
    pub fn supervisor<T: EventStore + ?Sized>(
        mut self,
        supervisor: &'a ChildSupervisor<T>,
    ) -> Self {
        self.known_parents = Some(Box::new(|child| supervisor.parents_waiting_on(child)));
        self
    }

    /// Calls `on_page` after each listing page is done, with the report so
    /// far: for a progress bar.
    #[must_use]
    pub fn on_page(mut self, on_page: impl FnMut(&SweepReport) + Send + 'a) -> Self {
        self.on_page = Some(Box::new(on_page));
        self
    }

    /// Runs the sweep to the end of the listing. Children it cannot judge
    /// are kept and listed in [`SweepReport::undecided`]; only a failure
    /// the machine says ends the run (a store error that may pass, the
    /// archive, a broken adapter) ends it early.
    ///
    /// Options the core refuses ([`SweepOptions::check`]) are refused
    /// before anything is listed: `archive: true` without a
    /// [sink](Sweep::archive) (dry runs included), and a page limit out of
    /// bounds (the listing's own error, as a store gives it). Every
    /// failure is a [`RuntimeError::Sweep`], which carries what was done
    /// before it ([`RuntimeError::partial_report`]).
    pub async fn run(mut self) -> Result<SweepReport, RuntimeError> {
        if let Err(refused) = self.options.check(self.archive.is_some()) {
            return Err(refused_options(refused, self.options.dry_run));
        }
        let mut machine = SweepMachine::new(self.options);
        loop {
            let action = match machine.poll() {
                SweepPoll::Done(report) => {
                    self.page_done(&mut machine);
                    return Ok(report);
                }
                SweepPoll::Act(action) => action,
                other => unreachable!("a poll this driver does not know: {other:?}"),
            };
            if let Err(error) = self.perform(&mut machine, action).await {
                return Err(with_report(error, machine.report()));
            }
            self.page_done(&mut machine);
        }
    }

    /// Performs one action and hands its answer to the machine; a failure
    /// is the machine's to judge.
    async fn perform(
        &mut self,
        machine: &mut SweepMachine,
        action: SweepAction,
    ) -> Result<(), RuntimeError> {
        let failure = match self.attempt(machine, action).await {
            Ok(()) => return Ok(()),
            Err(failure) => failure,
        };
        let Some(judged) = as_sweep_failure(&failure) else {
            return Err(failure);
        };
        match machine.handle_failed(judged)? {
            SweepFailureVerdict::GoOn => {
                if let RuntimeError::Store(error) = &failure {
                    tracing::warn!(%error, "retention: a log cannot be read; its child is kept");
                }
                Ok(())
            }
            SweepFailureVerdict::Stop => Err(failure),
        }
    }

    /// Performs one action; any failure is returned as it came.
    async fn attempt(
        &mut self,
        machine: &mut SweepMachine,
        action: SweepAction,
    ) -> Result<(), RuntimeError> {
        match action {
            SweepAction::List { after, limit } => {
                let page = self
                    .store
                    .list_executions(after.as_ref(), limit)
                    .await
                    .map_err(RuntimeError::Store)?;
                machine.handle_page(page)?;
            }
            SweepAction::ReadLogs { execution_ids } => {
                let logs = self
                    .store
                    .read_logs(&execution_ids)
                    .await
                    .map_err(RuntimeError::Store)?;
                let known = match &self.known_parents {
                    Some(parents) => execution_ids.iter().map(parents).collect(),
                    None => Vec::new(),
                };
                machine.handle_logs(logs, known)?;
            }
            SweepAction::ReadParents { parents } => {
                let logs = self
                    .store
                    .read_logs(&parents)
                    .await
                    .map_err(RuntimeError::Store)?;
                machine.handle_parents(logs)?;
            }
            SweepAction::Archive { logs } => {
                let sink = self
                    .archive
                    .expect("archive actions only come with a sink (run checks)");
                sink.archive_page(&logs).await?;
                machine.handle_archived()?;
            }
            SweepAction::Delete { batch } => {
                let outcomes = self
                    .store
                    .delete_executions_if(&batch)
                    .await
                    .map_err(RuntimeError::Store)?;
                if let Some(inbox) = self.inbox {
                    for (entry, outcome) in batch.iter().zip(&outcomes) {
                        if matches!(outcome, GuardedDelete::Deleted) {
                            inbox
                                .purge(&entry.execution_id)
                                .await
                                .map_err(RuntimeError::Timers)?;
                        }
                    }
                }
                let moved: Vec<(ExecutionId, ExecutionId)> = batch
                    .iter()
                    .zip(&outcomes)
                    .filter_map(|(entry, outcome)| match outcome {
                        GuardedDelete::ParentMoved { parent } => {
                            Some((entry.execution_id.clone(), parent.clone()))
                        }
                        _ => None,
                    })
                    .collect();
                machine.handle_deleted(outcomes)?;
                for (execution_id, parent) in moved {
                    tracing::info!(%execution_id, %parent, "kept: a parent moved after the pin check");
                }
            }
            other => unreachable!("an action this driver does not know: {other:?}"),
        }
        Ok(())
    }

    /// Reports progress when the machine says a page is done.
    fn page_done(&mut self, machine: &mut SweepMachine) {
        if machine.poll_page_done()
            && let Some(on_page) = &mut self.on_page
        {
            on_page(machine.report());
        }
    }
}

/// What the machine needs to know of a failed action: a non-retryable
/// backend error cannot succeed however often it is tried; any other
/// failure of the store or the archive may pass. `None` for a broken
/// answer, which is no action's failure.
fn as_sweep_failure(failure: &RuntimeError) -> Option<SweepFailure> {
    match failure {
        RuntimeError::Store(StoreError::Backend(error)) if !error.retryable => {
            Some(SweepFailure::ForGood {
                detail: error.to_string(),
            })
        }
        RuntimeError::Store(_)
        | RuntimeError::ArchiveIo { .. }
        | RuntimeError::ArchiveEncode { .. }
        | RuntimeError::ArchiveBroken { .. }
        | RuntimeError::Host(_) => Some(SweepFailure::MayPass),
        _ => None,
    }
}

/// The error a caller sees, with what was done before.
fn with_report(source: RuntimeError, report: &SweepReport) -> RuntimeError {
    RuntimeError::Sweep {
        report: Box::new(report.clone()),
        source: Box::new(source),
    }
}

/// The error for options the core refused before anything was listed,
/// with an empty report: a page limit out of bounds is the listing's own
/// error, as the store would have given it.
fn refused_options(refused: InputError, dry_run: bool) -> RuntimeError {
    let source = match refused {
        InputError::ArchiveWithoutSink => RuntimeError::Input(refused),
        other => RuntimeError::Store(StoreError::Input(other)),
    };
    let report = SweepReport {
        dry_run,
        ..SweepReport::default()
    };
    with_report(source, &report)
}
