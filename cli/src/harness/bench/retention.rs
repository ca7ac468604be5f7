//! `loomfence bench --workload retention`: how fast one retention sweep
//! goes through a store of mixed executions.
//!
//! The store is filled (not timed) with `executions` executions of the
//! shapes the conformance kit's 10,000-execution sweep case uses: parents
//! parked on their old children (pinned), old roots, old children of a
//! running parent (one parent read each), young ones, running ones. Then
//! one sweep with the runtime's [`Sweep`] is timed, from its first listing
//! to its report; the counts it reports are checked against the shapes, so
//! a wrong sweep fails the bench instead of being measured. With
//! `--archive` the store is emptied (not timed), filled again the same way,
//! and swept once more archiving to a JSON-lines file, which shows what the
//! archive (written and synced once per listing page) costs. The file is created exclusively in
//! the system's temporary directory (`TMPDIR` picks the disk) and removed
//! at the end.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use indicatif::ProgressBar;
use loomfence_conformance::mixed::{Expected, Mixed};
use loomfence_core::{
    ExecutionId,
    retention::{MAX_PAGE_LIMIT, SweepOptions, SweepReport},
};
use loomfence_postgres::AcquireStrategy;
use loomfence_runtime::{Sweep, retention::JsonLinesArchive};
use loomfence_store::EventStore;
use tokio::task::{JoinSet, yield_now};

use super::options::BenchSettings;
use super::retention_report::{RetentionBenchReport, SweepResult, Variant};
use crate::clock::now_ms;
use crate::error::CliError;
use crate::interrupt::until_interrupted;
use crate::store::OpenOptions;

/// Executions per listing page: `loomfence retention`'s default.
pub(crate) const PAGE_LIMIT: u32 = crate::operate::retention::DEFAULT_PAGE_LIMIT;

/// A day, in ms.
const DAY: i64 = 86_400_000;

/// Execution `n`'s id.
fn name(n: u32) -> Result<ExecutionId, CliError> {
    ExecutionId::new(format!("ret-{n:07}")).map_err(CliError::input("execution id"))
}

/// The counts `report` gives, to compare with [`Expected::of`].
fn found(report: &SweepReport) -> Expected {
    Expected {
        examined: report.examined,
        eligible: report.eligible,
        deleted: report.deleted,
        pinned: report.pinned.len() as u64,
        parent_reads: report.parent_reads,
    }
}

/// Runs the retention bench as `settings` say, ticking `progress` once per
/// phase (fill, sweep, and empty before a second fill). Its store is
/// closed (schema dropped, file removed) at the end, whether it finished,
/// failed or was interrupted.
pub(crate) async fn run(
    settings: BenchSettings,
    progress: ProgressBar,
) -> Result<RetentionBenchReport, CliError> {
    let opened = settings
        .store
        .open(OpenOptions {
            prefix: "bench",
            pool_size: settings.pool,
            acquire: AcquireStrategy::default(),
        })
        .await?;
    let variants: Vec<Variant> = if settings.archive {
        vec![Variant::Delete, Variant::Archive]
    } else {
        vec![Variant::Delete]
    };
    progress.set_length(variants.len() as u64 * 3 - 1);
    let store = Arc::clone(&opened.store);
    let outcome = until_interrupted(async {
        let mut sweeps = Vec::new();
        for (i, &variant) in variants.iter().enumerate() {
            if i > 0 {
                progress.set_message("emptying the store");
                empty(&store, settings.concurrency).await?;
                progress.inc(1);
            }
            sweeps.push(measure(&settings, &store, variant, &progress).await?);
        }
        Ok::<_, CliError>(sweeps)
    })
    .await;
    progress.finish_and_clear();
    drop(store);
    let closed = opened.close().await;
    let sweeps = outcome.ok_or(CliError::Interrupted)??;
    closed?;
    Ok(RetentionBenchReport {
        store: settings.store.to_string(),
        summary: settings.store.summary(),
        executions: settings.executions,
        concurrency: settings.concurrency,
        page_limit: PAGE_LIMIT,
        sqlite_durability: settings.store.durability(),
        pool: settings.store.is_postgres().then_some(settings.pool),
        sweeps,
    })
}

/// Fills the store, then times one sweep of `variant` and checks its
/// counts.
async fn measure(
    settings: &BenchSettings,
    store: &Arc<dyn EventStore>,
    variant: Variant,
    progress: &ProgressBar,
) -> Result<SweepResult, CliError> {
    progress.set_message(format!(
        "filling the store with {} executions (not timed)",
        settings.executions
    ));
    let now = now_ms();
    let filling = Instant::now();
    fill(store, settings.executions, settings.concurrency, now).await?;
    let populate = filling.elapsed();
    progress.inc(1);

    progress.set_message(format!("sweeping: {}", variant.label()));
    let options = SweepOptions {
        ended_before: now - 7 * DAY,
        page_limit: PAGE_LIMIT,
        archive: false,
        dry_run: false,
    };
    let file = match variant {
        Variant::Delete => None,
        Variant::Archive => Some(ArchiveFile::create()?),
    };
    let sweep = Sweep::new(&**store, options);
    let sweep = match &file {
        Some(file) => sweep.archive(&file.archive),
        None => sweep,
    };
    let began = Instant::now();
    let report = sweep.run().await.map_err(CliError::runtime("sweep"))?;
    let elapsed = began.elapsed();
    let archive_bytes = match file {
        Some(file) => Some(file.finish()?),
        None => None,
    };
    progress.inc(1);

    let expected = Expected::of(settings.executions, PAGE_LIMIT);
    let found = found(&report);
    let archived_ok = match variant {
        Variant::Delete => report.archived == 0,
        Variant::Archive => report.archived == report.deleted,
    };
    if found != expected || !archived_ok || !report.kept.is_empty() {
        return Err(CliError::Counts {
            variant: variant.key(),
            found: format!("{report:?}"),
            expected: format!("{expected:?}"),
        });
    }
    Ok(SweepResult {
        variant,
        report,
        elapsed,
        populate,
        archive_bytes,
    })
}

/// Writes the executions through `concurrency` tasks; `now` places the
/// old ones 30 days back and the young ones an hour back (the sweep's
/// cutoff is 7 days back).
async fn fill(
    store: &Arc<dyn EventStore>,
    executions: u32,
    concurrency: u32,
    now: i64,
) -> Result<(), CliError> {
    let mixed = Arc::new(mixed(now)?);
    store
        .append(&mixed.running_parent, mixed.running_parent_start())
        .await?;
    let next = Arc::new(AtomicU32::new(0));
    let mut set = JoinSet::new();
    for _ in 0..concurrency.min(executions) {
        let (store, next, mixed) = (Arc::clone(store), Arc::clone(&next), Arc::clone(&mixed));
        set.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= executions {
                    return Ok::<_, CliError>(());
                }
                store.append_many(&name(n)?, mixed.events(n, name)?).await?;
                // The memory store never awaits (see the kernel bench).
                yield_now().await;
            }
        });
    }
    while let Some(joined) = set.join_next().await {
        joined.map_err(CliError::task("bench task"))??;
    }
    Ok(())
}

/// The kit's mixed store around `now`: old executions ended 30 days back,
/// young ones an hour back (the sweep's cutoff is 7 days back).
fn mixed(now: i64) -> Result<Mixed, CliError> {
    Ok(Mixed {
        old: now - 30 * DAY,
        young: now - 3_600_000,
        running_parent: ExecutionId::new("ret-running-parent")
            .map_err(CliError::input("execution id"))?,
    })
}

/// Deletes every execution in the store (what the last sweep kept), so
/// the next fill starts from an empty store; not timed.
async fn empty(store: &Arc<dyn EventStore>, concurrency: u32) -> Result<(), CliError> {
    loop {
        let page = store.list_executions(None, MAX_PAGE_LIMIT).await?;
        if page.is_empty() {
            return Ok(());
        }
        let ids: Arc<Vec<ExecutionId>> =
            Arc::new(page.into_iter().map(|s| s.execution_id).collect());
        let next = Arc::new(AtomicU32::new(0));
        let mut set = JoinSet::new();
        for _ in 0..concurrency {
            let (store, ids, next) = (Arc::clone(store), Arc::clone(&ids), Arc::clone(&next));
            set.spawn(async move {
                while let Some(id) = ids.get(next.fetch_add(1, Ordering::Relaxed) as usize) {
                    store.delete_execution(id).await?;
                }
                Ok::<_, CliError>(())
            });
        }
        while let Some(joined) = set.join_next().await {
            joined.map_err(CliError::task("bench task"))??;
        }
    }
}

/// The archiving sweep's file: created exclusively, removed at the end.
struct ArchiveFile {
    /// Where.
    path: PathBuf,
    /// The sink on it.
    archive: JsonLinesArchive,
}

impl ArchiveFile {
    /// Creates `loomfence-bench-archive-<pid>.jsonl` in the temporary
    /// directory; an existing file is an error, never appended to.
    fn create() -> Result<Self, CliError> {
        let path = std::env::temp_dir().join(format!(
            "loomfence-bench-archive-{}.jsonl",
            std::process::id()
        ));
        let fail = |reason: String| CliError::ArchiveFile {
            path: path.display().to_string(),
            reason,
        };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| fail(e.to_string()))?;
        let archive = JsonLinesArchive::open(&path).map_err(|e| fail(e.to_string()));
        match archive {
            Ok(archive) => Ok(Self { path, archive }),
            Err(failure) => {
                let _ = std::fs::remove_file(&path);
                Err(failure)
            }
        }
    }

    /// Removes the file; returns how many bytes the sweep wrote to it.
    fn finish(self) -> Result<u64, CliError> {
        let fail = |reason: String| CliError::ArchiveFile {
            path: self.path.display().to_string(),
            reason,
        };
        let bytes = std::fs::metadata(&self.path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        std::fs::remove_file(&self.path).map_err(|e| fail(e.to_string()))?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_give_the_kits_counts() {
        assert_eq!(
            Expected::of(10_000, PAGE_LIMIT),
            Expected {
                examined: 10_001,
                eligible: 6_000,
                deleted: 5_000,
                pinned: 1_000,
                // A pinned child's own parent each, and the running parent
                // of the free children once on each of the 10 pages.
                parent_reads: 1_010,
            }
        );
        // A parked parent whose child is past the end is still a parent.
        assert_eq!(Expected::of(1, PAGE_LIMIT).eligible, 0);
        assert_eq!(Expected::of(3, PAGE_LIMIT).deleted, 1);
    }
}
