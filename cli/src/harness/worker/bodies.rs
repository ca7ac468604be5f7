//! The worker's bodies: every resume the worker lands, on any path, runs
//! the race's body (steps under its token, then the completion) in a task
//! of its own.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use loomfence_core::Resumed;
use loomfence_runtime::OnResumed;
use loomfence_store::EventStore;
use serde_json::json;
use tokio::task::JoinSet;

use crate::harness::body::{BodyEnd, run_body};

/// Bodies that ran to their completion.
const COMPLETED: &str = "loomfence_worker_bodies_completed_total";
/// Bodies stopped by a store failure (a terminated backend, say): the
/// execution stays resumed and unfinished, as after a crash.
const FAILED: &str = "loomfence_worker_bodies_failed_total";

/// Describes the worker's own counters and registers them at zero, beside
/// the runtime's ([`loomfence_runtime::counters::describe`]).
pub(crate) fn describe_counters() {
    metrics::describe_counter!(COMPLETED, "Bodies the worker ran to their completion.");
    metrics::describe_counter!(
        FAILED,
        "Bodies stopped by a store failure; the execution stays resumed and unfinished."
    );
    metrics::counter!(COMPLETED).increment(0);
    metrics::counter!(FAILED).increment(0);
}

/// Starts and tracks the worker's bodies.
pub(crate) struct Bodies {
    /// Where the bodies write.
    store: Arc<dyn EventStore>,
    /// Step events per body.
    steps: u32,
    /// This worker's name, written into each completion's output.
    node: String,
    /// The bodies in flight.
    running: Mutex<JoinSet<()>>,
}

impl Bodies {
    /// Bodies of `steps` steps over `store`, signed `node`.
    pub(crate) fn new(store: Arc<dyn EventStore>, steps: u32, node: String) -> Arc<Self> {
        Arc::new(Self {
            store,
            steps,
            node,
            running: Mutex::new(JoinSet::new()),
        })
    }

    /// An [`OnResumed`] that starts the body of each resume a service
    /// lands; `path` names the service in the logs.
    pub(crate) fn hook(self: &Arc<Self>, path: &'static str) -> OnResumed {
        let bodies = Arc::clone(self);
        Arc::new(move |resumed| bodies.start(resumed, path))
    }

    /// Starts `resumed`'s body; `path` is who resumed it.
    pub(crate) fn start(&self, resumed: Resumed, path: &'static str) {
        let store = Arc::clone(&self.store);
        let (steps, by) = (self.steps, json!({ "node": self.node, "path": path }));
        let mut running = self.lock();
        // Finished bodies are reaped here, so the set stays small.
        while running.try_join_next().is_some() {}
        running.spawn(async move {
            let id = resumed.execution_id.clone();
            let fence = resumed.fence;
            tracing::debug!(execution_id = %id, ?fence, path, "resumed; body starts");
            match run_body(&*store, resumed, steps, by).await {
                Ok(BodyEnd::Completed) => metrics::counter!(COMPLETED).increment(1),
                // Counted by the runtime (`loomfence_bodies_fenced_out_total`).
                Ok(BodyEnd::FencedOut) => {
                    tracing::error!(execution_id = %id, ?fence, path, "body fenced out after its resume landed");
                }
                Err(error) => {
                    metrics::counter!(FAILED).increment(1);
                    tracing::warn!(execution_id = %id, ?fence, path, %error, "body stopped by a store failure");
                }
            }
        });
    }

    /// Waits up to `grace` for the bodies in flight, then abandons the rest
    /// (their executions stay resumed and unfinished, as after a crash).
    /// Answers how many were abandoned.
    pub(crate) async fn drain(&self, grace: Duration) -> usize {
        let mut running = std::mem::take(&mut *self.lock());
        let finished = tokio::time::timeout(grace, async {
            while running.join_next().await.is_some() {}
        })
        .await;
        if finished.is_ok() { 0 } else { running.len() }
    }

    /// The set, locked; a panicking body cannot leave it inconsistent.
    fn lock(&self) -> std::sync::MutexGuard<'_, JoinSet<()>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
