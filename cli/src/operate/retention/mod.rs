//! `loomfence retention`: one retention sweep over an existing store, from
//! a cron job or by hand.
//!
//! The sweep is the runtime's [`Sweep`] (the core decides, the runtime
//! reads and deletes); this command opens the store as it is (see
//! [`StoreArg::open_existing`](crate::store::StoreArg::open_existing): it creates, drops and removes nothing; a
//! dry run opens it read-only and migrates nothing, see
//! [`StoreArg::open_existing_read_only`](crate::store::StoreArg::open_existing_read_only)),
//! computes the cutoff from the system clock (`now - --older-than`), shows
//! a spinner on a terminal, and prints what was done. Exit codes:
//!
//! - 0: the sweep went through the whole listing;
//! - 1: the store could not be opened, or the sweep stopped on an error
//!   (printed, with the report of what it did before: each delete is
//!   atomic, so a half-done sweep is safe and the next one goes on);
//! - 2: bad options, including a store that does not exist or is not a
//!   loomfence store (nothing is created);
//! - 130: Ctrl-C. The first stops the sweep before its next store call
//!   (the report is exact); a second stops it at once (the report is the
//!   one of the last finished page).

mod args;
mod options;
mod report;
mod stop;

pub(crate) use self::args::RetentionArgs;

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use loomfence_core::retention::{SweepOptions, SweepReport};
use loomfence_runtime::{Sweep, retention::JsonLinesArchive};

pub(crate) use self::options::{DEFAULT_PAGE_LIMIT, RawRetention};
use self::options::{RetentionSettings, cutoff};
use self::report::{Outcome, RetentionOutput};
use self::stop::{StoppableArchive, stoppable, stopped_by_user};
use crate::clock::now_ms;
use crate::error::CliError;
use crate::interrupt::{self, StopRequest, Stopped, until_stopped};
use crate::progress;
use crate::store::KeptStore;

/// PostgreSQL connections: the sweep makes one call at a time.
const POOL_SIZE: usize = 2;

/// Validates the options, runs one sweep, prints its report, and returns
/// the exit code.
pub(crate) async fn command(raw: RawRetention) -> ExitCode {
    let settings = match raw.validate() {
        Ok(settings) => settings,
        Err(usage) => return usage.exit("the sweep failed"),
    };
    // A dry run changes nothing, so it opens read-only: a store it may not
    // write is read, and nothing is migrated.
    let opened = if settings.dry_run {
        settings
            .store
            .open_existing_read_only(settings.schema.as_ref(), POOL_SIZE)
            .await
    } else {
        settings
            .store
            .open_existing(settings.schema.as_ref(), POOL_SIZE)
            .await
    };
    let store = match opened {
        Ok(store) => store.events,
        Err(failure) => return failure.exit("could not open the store"),
    };
    if settings.store.is_in_memory() {
        eprintln!(
            "note: --store {} is a new, empty store (a store in memory cannot be reached from outside its process); the sweep finds nothing: a smoke test of the command",
            settings.store
        );
    }
    // A dry run archives nothing, so it does not create the file either.
    let archive = match (&settings.archive, settings.dry_run) {
        (Some(path), false) => match JsonLinesArchive::open(path) {
            Ok(archive) => Some(archive),
            Err(failure) => {
                return CliError::bad_value("archive", &failure).exit("the sweep failed");
            }
        },
        _ => None,
    };
    let output = sweep(&settings, &*store, archive.as_ref()).await;
    if let Outcome::Failed(error) = &output.outcome {
        eprintln!("error: {error}");
    }
    if settings.json {
        println!("{}", output.to_json());
    } else {
        print!("{}", output.human());
    }
    match output.outcome {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::Failed(_) => ExitCode::FAILURE,
        Outcome::Interrupted | Outcome::Aborted => ExitCode::from(interrupt::EXIT_CODE),
    }
}

/// Runs the sweep under Ctrl-C's two stages, with the spinner.
async fn sweep(
    settings: &RetentionSettings,
    store: &dyn loomfence_store::EventStore,
    archive: Option<&JsonLinesArchive>,
) -> RetentionOutput {
    let ended_before = cutoff(now_ms(), settings.older_than);
    let options = SweepOptions {
        ended_before,
        page_limit: settings.page_limit,
        archive: false,
        dry_run: settings.dry_run,
    };
    let stop = StopRequest::default();
    let stoppable = stoppable(store, stop.clone());
    let stoppable_archive = archive.map(|archive| StoppableArchive::new(archive, stop.clone()));
    let spinner = progress::sweep_spinner();
    // The last page's report, for a sweep dropped by a second Ctrl-C.
    let last = Arc::new(Mutex::new(SweepReport {
        dry_run: settings.dry_run,
        ..SweepReport::default()
    }));
    let mut run = Sweep::new(&stoppable, options).on_page({
        let (spinner, last) = (spinner.clone(), Arc::clone(&last));
        move |report: &SweepReport| {
            spinner.set_message(progress::sweep_counts(report));
            *last.lock().unwrap_or_else(PoisonError::into_inner) = report.clone();
        }
    });
    if let Some(archive) = &stoppable_archive {
        run = run.archive(archive);
    }
    let began = Instant::now();
    let ran = until_stopped(run.run(), &stop, || {
        spinner.suspend(|| {
            eprintln!("stopping before the sweep's next step (Ctrl-C again to stop at once)");
        });
    })
    .await;
    let elapsed = began.elapsed();
    spinner.finish_and_clear();
    let (report, outcome) = match ran {
        Stopped::Finished(Ok(report)) => (report, Outcome::Done),
        Stopped::Finished(Err(error)) if stopped_by_user(&error) => (
            error.partial_report().cloned().unwrap_or_default(),
            Outcome::Interrupted,
        ),
        Stopped::Finished(Err(error)) => (
            error.partial_report().cloned().unwrap_or_default(),
            Outcome::Failed(error.to_string()),
        ),
        Stopped::Aborted => (
            last.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            Outcome::Aborted,
        ),
    };
    RetentionOutput {
        store: shown(settings),
        older_than: settings.older_than_text.clone(),
        ended_before,
        archive: settings
            .archive
            .as_ref()
            .map(|path| path.display().to_string()),
        report,
        elapsed,
        outcome,
    }
}

/// The store as the report names it: with its schema on PostgreSQL.
fn shown(settings: &RetentionSettings) -> String {
    KeptStore {
        store: settings.store.clone(),
        schema: settings.schema.clone(),
    }
    .shown()
}
