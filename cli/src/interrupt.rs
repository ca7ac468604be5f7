//! Ctrl-C during a run that holds a PostgreSQL schema or an SQLite file.
//!
//! A run against PostgreSQL creates a schema and drops it at the end; a run
//! against `sqlite:PATH` creates the file and removes it at the end. If
//! Ctrl-C simply killed the process they would stay behind, so a run races
//! its work against the signal: on Ctrl-C the work is dropped (which aborts
//! its tasks), the schema is still dropped or the file removed, and the
//! command exits with 130 as an interrupted shell command does.

use std::future::Future;

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
