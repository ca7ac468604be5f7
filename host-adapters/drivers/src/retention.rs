//! Retention that never deletes a child its parent waits on: the core's
//! [`SweepMachine`] driven against an [`EventStore`].
//!
//! Run it from a service or a cron job:
//!
//! ```
//! use loomfence_core::{ExecutionId, KernelKind, NewEvent, SweepOptions, started_child};
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

mod archive;
mod error;

use loomfence_core::{
    Envelope, ExecutionId, SweepAction, SweepMachine, SweepMachineError, SweepOptions, SweepPoll,
    SweepReport,
};
use loomfence_store::{EventStore, StoreError};

pub use self::archive::{ArchiveError, ArchiveSink, JsonLinesArchive};
pub use self::error::RetentionError;
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
        }
    }

    /// Hands every log to `sink` before its delete, and sets
    /// `SweepOptions::archive`. A sweep whose options ask for an archive
    /// without a sink is refused ([`RetentionError::ArchiveWithoutSink`]).
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
    /// that may pass (a retryable store error, the archive, a broken
    /// adapter) ends it early.
    ///
    /// `archive: true` without a [sink](Sweep::archive) is refused before
    /// anything is listed, dry runs included: a sweep asked to archive must
    /// never delete what it did not archive.
    pub async fn run(mut self) -> Result<SweepReport, RetentionError> {
        if self.options.archive && self.archive.is_none() {
            return Err(RetentionError::ArchiveWithoutSink {
                report: Box::new(SweepReport {
                    dry_run: self.options.dry_run,
                    ..SweepReport::default()
                }),
            });
        }
        let mut machine = SweepMachine::new(self.options);
        loop {
            let action = match machine.poll() {
                SweepPoll::Done(report) => {
                    self.page_done(&report);
                    return Ok(report);
                }
                SweepPoll::Act(action) => action,
                other => unreachable!("a poll this driver does not know: {other:?}"),
            };
            if let Err(error) = self.perform(&mut machine, action).await {
                return Err(error.with_report(machine.report()));
            }
        }
    }

    /// Performs one action and hands its answer to the machine.
    async fn perform(
        &mut self,
        machine: &mut SweepMachine,
        action: SweepAction,
    ) -> Result<(), Failure> {
        match action {
            SweepAction::List { after, limit } => {
                if after.is_some() {
                    self.page_done(machine.report());
                }
                let page = self.store.list_executions(after.as_ref(), limit).await?;
                machine.handle_page(page)?;
            }
            SweepAction::ReadLog { execution_id } => {
                let Some(events) = read(self.store, machine, &execution_id).await? else {
                    return Ok(());
                };
                let known = self
                    .known_parents
                    .as_ref()
                    .map(|parents| parents(&execution_id))
                    .unwrap_or_default();
                machine.handle_log(events, known)?;
            }
            SweepAction::ReadParent { parent, .. } => {
                if let Some(events) = read(self.store, machine, &parent).await? {
                    machine.handle_parent(events)?;
                }
            }
            SweepAction::Archive {
                execution_id,
                events,
            } => {
                let sink = self
                    .archive
                    .expect("archive actions only come with a sink (run checks)");
                sink.archive(&execution_id, &events)
                    .await
                    .map_err(Failure::Archive)?;
                machine.handle_archived()?;
            }
            SweepAction::Delete {
                execution_id,
                guard,
            } => {
                let outcome = self
                    .store
                    .delete_execution_if(&execution_id, &guard)
                    .await?;
                if let loomfence_core::GuardedDelete::ParentMoved { parent } = &outcome {
                    tracing::info!(%execution_id, %parent, "kept: a parent moved after the pin check");
                }
                machine.handle_deleted(outcome)?;
            }
            other => unreachable!("an action this driver does not know: {other:?}"),
        }
        Ok(())
    }

    /// Reports progress.
    fn page_done(&mut self, report: &SweepReport) {
        if let Some(on_page) = &mut self.on_page {
            on_page(report);
        }
    }
}

/// Reads a whole log. A read the store says cannot succeed (a
/// non-retryable backend error: a row it cannot decode) is answered to
/// the machine as unreadable, which keeps the child and goes on
/// (`None`); any other failure ends the run.
async fn read<S: EventStore + ?Sized>(
    store: &S,
    machine: &mut SweepMachine,
    id: &ExecutionId,
) -> Result<Option<Vec<Envelope>>, Failure> {
    match store.read_range(id, 1, None).await {
        Ok(events) => Ok(Some(events)),
        Err(StoreError::Backend(error)) if !error.retryable => {
            tracing::warn!(%id, %error, "retention: a log cannot be read; its child is kept");
            machine.handle_unreadable(error.to_string())?;
            Ok(None)
        }
        Err(error) => Err(error.into()),
    }
}

/// A failed action, before the report is attached.
enum Failure {
    /// The store.
    Store(StoreError),
    /// The archive.
    Archive(ArchiveError),
    /// The store's answer broke the contract.
    Contract(SweepMachineError),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::Store(error)
    }
}

impl From<SweepMachineError> for Failure {
    fn from(error: SweepMachineError) -> Self {
        Failure::Contract(error)
    }
}

impl Failure {
    /// The error a caller sees, with what was done before.
    fn with_report(self, report: &SweepReport) -> RetentionError {
        let report = Box::new(report.clone());
        match self {
            Failure::Store(source) => RetentionError::Store { report, source },
            Failure::Archive(source) => RetentionError::Archive { report, source },
            Failure::Contract(source) => RetentionError::Contract { report, source },
        }
    }
}
