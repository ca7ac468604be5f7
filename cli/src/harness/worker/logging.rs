//! The worker's log: `tracing` to stderr, as text or one JSON object per
//! line, filtered by `RUST_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

/// Installs the subscriber. Called once, first thing; a second call (a
/// test that runs two workers in one process) keeps the first.
pub(super) fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = if json {
        builder.json().try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
    // Only fails if one is installed already, which is then used.
    drop(installed);
}
