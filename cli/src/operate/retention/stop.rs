//! Stopping a sweep between two of its steps.
//!
//! The runtime's [`Sweep`](loomfence_runtime::Sweep) owns its machine and
//! runs to the end of the listing; the only way to stop it early without
//! losing its report is an error from one of its calls, which it returns
//! with the report of everything done before. So the sweep is given this
//! store (and this archive): each call first looks at the [`StopRequest`]
//! and, once Ctrl-C asked for a stop, fails with [`CliError::Interrupted`]
//! instead of reaching the real store. The call under way when Ctrl-C came ends
//! normally, so nothing is cut in half and the report is exact.

use async_trait::async_trait;
use loomfence_core::{Envelope, ExecutionId};
use loomfence_runtime::{RuntimeError, retention::ArchiveSink};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{BackendError, EventStore, Forwarding, StoreError};

use crate::error::CliError;
use crate::interrupt::StopRequest;

/// Whether `error` is the sweep stopping on [`CliError::Interrupted`]
/// rather than a real failure.
pub(crate) fn stopped_by_user(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if matches!(error.downcast_ref(), Some(CliError::Interrupted)) {
            return true;
        }
        cause = error.source();
    }
    false
}

/// A store that refuses every call once a stop was requested, and passes
/// every other call to the store it wraps.
pub(crate) type Stoppable<'a> = Forwarding<&'a dyn EventStore, Stopping>;

/// `inner`, refusing every call once `stop` was requested.
pub(crate) fn stoppable(inner: &dyn EventStore, stop: StopRequest) -> Stoppable<'_> {
    Forwarding::new(inner, Stopping(stop))
}

/// The hooks of a [`Stoppable`] store: each call first looks at the stop.
pub(crate) struct Stopping(StopRequest);

#[async_trait]
impl Hooks for Stopping {
    async fn before(&self, _operation: &'static str) -> Result<(), StoreError> {
        if self.0.requested() {
            Err(StoreError::Backend(BackendError::permanent(
                CliError::Interrupted,
            )))
        } else {
            Ok(())
        }
    }
}

/// An archive that refuses every log once a stop was requested: a log
/// archived right before the stop would otherwise be archived and kept, and
/// archived again by the next sweep.
pub(crate) struct StoppableArchive<'a> {
    /// The real archive.
    inner: &'a dyn ArchiveSink,
    /// Set by the first Ctrl-C.
    stop: StopRequest,
}

impl<'a> StoppableArchive<'a> {
    /// Wraps `inner`, watching `stop`.
    pub(crate) fn new(inner: &'a dyn ArchiveSink, stop: StopRequest) -> Self {
        Self { inner, stop }
    }
}

#[async_trait]
impl ArchiveSink for StoppableArchive<'_> {
    async fn archive(
        &self,
        execution_id: &ExecutionId,
        events: &[Envelope],
    ) -> Result<(), RuntimeError> {
        if self.stop.requested() {
            return Err(RuntimeError::Host(Box::new(CliError::Interrupted)));
        }
        self.inner.archive(execution_id, events).await
    }
}

#[cfg(test)]
mod tests {
    use loomfence_core::{KernelKind, NewEvent, retention::SweepOptions};
    use loomfence_runtime::Sweep;
    use loomfence_store::MemoryEventStore;

    use super::*;

    /// A memory store with old finished roots `r0`…`r{n-1}`.
    async fn old_roots(n: usize) -> MemoryEventStore {
        let store = MemoryEventStore::new();
        for i in 0..n {
            let id = ExecutionId::new(format!("r{i}")).unwrap();
            store
                .append_many(
                    &id,
                    vec![
                        NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                        NewEvent::kernel(KernelKind::ExecutionCompleted, 10),
                    ],
                )
                .await
                .unwrap();
        }
        store
    }

    fn options() -> SweepOptions {
        SweepOptions {
            ended_before: 100,
            page_limit: 1,
            archive: false,
            dry_run: false,
        }
    }

    #[tokio::test]
    async fn a_stop_ends_the_sweep_before_its_next_call_with_an_exact_report() {
        let store = old_roots(3).await;
        let stop = StopRequest::default();
        let stoppable = stoppable(&store, stop.clone());
        // Pages of one: the first page's delete is done when the second
        // listing is about to start, and that is when the stop comes.
        let error = Sweep::new(&stoppable, options())
            .on_page(|_| stop.request())
            .run()
            .await
            .unwrap_err();
        assert!(stopped_by_user(&error), "{error}");
        let report = error.partial_report().expect("a sweep's error");
        assert_eq!((report.examined, report.deleted), (1, 1), "{report:?}");
        let left = store.list_executions(None, 10).await.unwrap();
        let ids: Vec<&str> = left.iter().map(|s| s.execution_id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2"]);
    }

    #[tokio::test]
    async fn without_a_stop_it_is_the_store_itself() {
        let store = old_roots(3).await;
        let stoppable = stoppable(&store, StopRequest::default());
        let report = Sweep::new(&stoppable, options()).run().await.unwrap();
        assert_eq!((report.examined, report.deleted), (3, 3));
        assert_eq!(stoppable.capability(), store.capability());
    }

    #[tokio::test]
    async fn a_stopped_archive_takes_nothing_and_the_log_stays() {
        struct Counting(std::sync::atomic::AtomicU32);
        #[async_trait]
        impl ArchiveSink for Counting {
            async fn archive(&self, _: &ExecutionId, _: &[Envelope]) -> Result<(), RuntimeError> {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
        }
        let store = old_roots(1).await;
        let counting = Counting(std::sync::atomic::AtomicU32::new(0));
        let stop = StopRequest::default();
        stop.request();
        let archive = StoppableArchive::new(&counting, stop);
        let error = Sweep::new(&store, options())
            .archive(&archive)
            .run()
            .await
            .unwrap_err();
        assert!(stopped_by_user(&error), "{error}");
        assert_eq!(error.partial_report().expect("a sweep's error").deleted, 0);
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(store.list_executions(None, 10).await.unwrap().len(), 1);
    }

    #[test]
    fn other_failures_are_not_a_stop() {
        let error = StoreError::Backend(BackendError::permanent("disk on fire"));
        assert!(!stopped_by_user(&error));
        let stopped = StoreError::Backend(BackendError::permanent(CliError::Interrupted));
        assert!(stopped_by_user(&stopped));
    }
}
