//! Ctrl-C during a run that holds a PostgreSQL schema or an SQLite file, or
//! during a retention sweep.
//!
//! A run against PostgreSQL creates a schema and drops it at the end; a run
//! against `sqlite:PATH` creates the file and removes it at the end. If
//! Ctrl-C simply killed the process they would stay behind, so a run races
//! its work against the signal: on Ctrl-C the work is dropped (which aborts
//! its tasks), the schema is still dropped or the file removed, and the
//! command exits with 130 as an interrupted shell command does.
//!
//! A retention sweep wants more than that: it should stop *between* two of
//! its store calls and say exactly what it did. So [`until_stopped`] turns
//! the first Ctrl-C into a [`StopRequest`] the sweep's store reads before
//! each call, and only a second Ctrl-C drops the work where it stands.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT).
pub(crate) const EXIT_CODE: u8 = 130;

/// Runs `work` to the end, or until Ctrl-C (`None`). If the handler cannot
/// be installed, `work` simply runs to the end.
pub(crate) async fn until_interrupted<F: Future>(work: F) -> Option<F::Output> {
    tokio::select! {
        output = work => Some(output),
        Ok(()) = tokio::signal::ctrl_c() => None,
    }
}

/// A request to stop, made by the first Ctrl-C and honoured by the work at
/// its next step. Clones share it.
#[derive(Clone, Debug, Default)]
pub(crate) struct StopRequest(Arc<AtomicBool>);

impl StopRequest {
    /// Whether a stop was requested.
    pub(crate) fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Requests a stop.
    pub(crate) fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// How a run under [`until_stopped`] ended.
#[derive(Debug)]
pub(crate) enum Stopped<T> {
    /// The work returned, on its own or because it honoured the stop
    /// request (which it then says in its output).
    Finished(T),
    /// A second Ctrl-C: the work was dropped wherever it was.
    Aborted,
}

/// Runs `work`. The first Ctrl-C requests `stop` and calls `on_first` (to
/// tell the user what happens now); the work is expected to notice and
/// return soon. A second Ctrl-C drops it. If the handler cannot be
/// installed, `work` simply runs to the end.
pub(crate) async fn until_stopped<F: Future>(
    work: F,
    stop: &StopRequest,
    on_first: impl FnOnce(),
) -> Stopped<F::Output> {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        output = &mut work => return Stopped::Finished(output),
        Ok(()) = tokio::signal::ctrl_c() => {}
    }
    stop.request();
    on_first();
    tokio::select! {
        output = work => Stopped::Finished(output),
        Ok(()) = tokio::signal::ctrl_c() => Stopped::Aborted,
    }
}
