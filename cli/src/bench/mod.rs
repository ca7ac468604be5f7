//! `loomfence bench`: throughput and latency of the fence kernel's
//! workloads on one store.
//!
//! Each workload runs `executions` executions through `concurrency` tokio
//! tasks; each task takes the next execution from a shared counter until
//! all are done, and times every execution. The workloads run interleaved,
//! round-robin (`runs` rounds of workload 1..N), after one short warm-up
//! round, so that machine noise hits all of them alike; the report takes
//! the median over rounds.
//!
//! On PostgreSQL every store gets its own fresh schema, dropped at the end.
//! The conditional resume is measured twice there, once per
//! [`AcquireStrategy`], each on its own store and schema. On SQLite the
//! bench makes one new database (the file `sqlite:PATH` names, removed at
//! the end, or one in memory) and every run writes into it. On memory every
//! run gets a fresh store (see [`Backing`]).
//!
//! `--workload retention` measures something else, the retention sweep
//! (see [`retention`]).

mod report;
pub(crate) mod retention;
mod retention_report;
mod stats;
mod workloads;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use loomfence_core::ExecutionId;
use loomfence_postgres::AcquireStrategy;
use loomfence_sqlite::Durability;
use loomfence_store::{EventStore, MemoryEventStore};
use tokio::sync::Barrier;
use tokio::task::{JoinSet, yield_now};

pub(crate) use self::report::BenchReport;
use self::report::WorkloadResult;
use self::stats::RunStats;
use self::workloads::{Sample, Workload, WorkloadError};
use crate::interrupt::until_interrupted;
use crate::settings::UsageError;
use crate::store_arg::{OpenError, OpenOptions, OpenedStore, StoreArg, close_all};

/// Which measurement `loomfence bench` makes (`--workload`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suite {
    /// The kernel's workloads: appends, fences, park/resume.
    Kernel,
    /// One retention sweep over a store of mixed executions.
    Retention,
}

/// Executions per run of each kernel workload by default.
pub(crate) const KERNEL_EXECUTIONS: u32 = 3_000;
/// Executions in the retention bench's store by default (the size of the
/// conformance kit's sweep case).
pub(crate) const RETENTION_EXECUTIONS: u32 = 10_000;
/// Measured rounds of the kernel workloads by default.
pub(crate) const KERNEL_RUNS: u32 = 3;

/// The bench's options after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BenchSettings {
    /// What is measured.
    pub(crate) suite: Suite,
    /// The backend.
    pub(crate) store: StoreArg,
    /// Concurrent tasks.
    pub(crate) concurrency: u32,
    /// Executions per run of each workload.
    pub(crate) executions: u32,
    /// Measured rounds.
    pub(crate) runs: u32,
    /// PostgreSQL connections per store.
    pub(crate) pool: usize,
    /// Retention only: time a second sweep that archives.
    pub(crate) archive: bool,
}

/// The options as typed, before the checks clap cannot do.
#[derive(Clone, Debug)]
pub(crate) struct RawBench {
    /// `--workload`.
    pub(crate) suite: Suite,
    /// `--store`, unparsed.
    pub(crate) store: String,
    /// `--concurrency`.
    pub(crate) concurrency: u32,
    /// `--executions`, if given.
    pub(crate) executions: Option<u32>,
    /// `--runs`, if given.
    pub(crate) runs: Option<u32>,
    /// `--archive`.
    pub(crate) archive: bool,
    /// `--pool`, if given.
    pub(crate) pool: Option<u32>,
    /// `--sqlite-durability`, if given.
    pub(crate) sqlite_durability: Option<Durability>,
}

impl RawBench {
    /// Checks the ranges and the options that belong to one workload
    /// only; fills in the workload's defaults; the pool defaults to one
    /// connection per task.
    pub(crate) fn validate(self) -> Result<BenchSettings, UsageError> {
        match self.suite {
            Suite::Kernel if self.archive => {
                return Err(UsageError::OnlyFor("archive", "--workload retention"));
            }
            // The retention bench times one sweep: there are no rounds.
            Suite::Retention if self.runs.is_some() => {
                return Err(UsageError::OnlyFor("runs", "--workload kernel"));
            }
            _ => {}
        }
        let executions = self.executions.unwrap_or(match self.suite {
            Suite::Kernel => KERNEL_EXECUTIONS,
            Suite::Retention => RETENTION_EXECUTIONS,
        });
        let runs = self.runs.unwrap_or(match self.suite {
            Suite::Kernel => KERNEL_RUNS,
            Suite::Retention => 1,
        });
        for (name, value) in [
            ("concurrency", self.concurrency),
            ("executions", executions),
            ("runs", runs),
            ("pool", self.pool.unwrap_or(1)),
        ] {
            if value == 0 {
                return Err(UsageError::Zero(name));
            }
        }
        Ok(BenchSettings {
            suite: self.suite,
            store: StoreArg::from_options(&self.store, self.sqlite_durability)?,
            concurrency: self.concurrency,
            executions,
            runs,
            pool: self.pool.unwrap_or(self.concurrency) as usize,
            archive: self.archive,
        })
    }
}

impl BenchSettings {
    /// Executions of each workload in the warm-up round: a tenth of a run,
    /// but at least one per task, and never more than a run.
    pub(crate) fn warmup(&self) -> u32 {
        (self.executions / 10)
            .max(self.concurrency)
            .min(self.executions)
    }
}

/// Why the bench could not be run to the end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchError {
    /// A store could not be opened, or its schema not dropped afterwards.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// An execution failed.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A task panicked or was cancelled.
    #[error("bench task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// Ctrl-C: the bench was stopped (and its schemas dropped).
    #[error("interrupted")]
    Interrupted,
    /// The retention bench failed.
    #[error(transparent)]
    Retention(#[from] retention::RetentionBenchError),
}

/// Where a workload's executions are written.
enum Backing {
    /// One store for the whole bench: a PostgreSQL schema or an SQLite
    /// database. A table that grows by a few thousand executions per run
    /// barely changes its cost (a B-tree a level deeper at most), and a
    /// real deployment's tables are not empty either.
    Shared(Arc<dyn EventStore>),
    /// A fresh in-memory store for every run. The memory store slows down
    /// as it fills (measured: from ~150 K to ~26 K executions/s over a
    /// million executions), so a shared one would make every workload pay
    /// for the logs of the ones that ran before it.
    FreshMemory,
}

/// One workload and where it writes.
struct Target {
    /// The workload.
    workload: Workload,
    /// Its store.
    backing: Backing,
}

/// Runs the bench as `settings` say, ticking `progress` once per workload
/// run (the warm-up included). Its stores are closed (schemas dropped) at
/// the end, whether it finished, failed or was interrupted.
pub(crate) async fn run(
    settings: BenchSettings,
    progress: ProgressBar,
) -> Result<BenchReport, BenchError> {
    let postgres = settings.store.is_postgres();
    let workloads = Workload::for_store(postgres);
    let mut opened: Vec<OpenedStore> = Vec::new();
    for acquire in shared_stores(&settings.store) {
        let options = OpenOptions {
            prefix: "bench",
            pool_size: settings.pool,
            acquire,
        };
        match settings.store.open(options).await {
            Ok(store) => opened.push(store),
            Err(failure) => {
                // Best effort: the open failure is the one worth reporting.
                let _ = close_all(opened).await;
                return Err(failure.into());
            }
        }
    }
    let targets: Vec<Target> = workloads
        .iter()
        .map(|&workload| {
            let pipelined = usize::from(workload == Workload::ParkConditionalPipelined);
            let backing = match opened.get(pipelined) {
                Some(opened) => Backing::Shared(Arc::clone(&opened.store)),
                None => Backing::FreshMemory,
            };
            Target { workload, backing }
        })
        .collect();

    progress.set_length(u64::from(settings.runs + 1) * targets.len() as u64);
    let outcome = until_interrupted(measure(&settings, &targets, &progress)).await;
    progress.finish_and_clear();
    drop(targets);
    let closed = close_all(opened).await;
    let results = outcome.ok_or(BenchError::Interrupted)??;
    closed?;
    Ok(BenchReport {
        store: settings.store.to_string(),
        summary: settings.store.summary(),
        postgres,
        concurrency: settings.concurrency,
        executions: settings.executions,
        runs: settings.runs,
        warmup: settings.warmup(),
        pool: postgres.then_some(settings.pool),
        sqlite_durability: settings.store.durability(),
        results,
    })
}

/// The shared stores the bench opens on `store`, one per acquire strategy
/// measured: both on PostgreSQL (the pipelined workload gets the second),
/// one on SQLite (which has no strategy to choose; the value is ignored),
/// none on memory (a fresh store per run instead).
fn shared_stores(store: &StoreArg) -> Vec<AcquireStrategy> {
    match store {
        StoreArg::Postgres { .. } => vec![AcquireStrategy::Function, AcquireStrategy::Pipelined],
        StoreArg::Sqlite { .. } => vec![AcquireStrategy::default()],
        StoreArg::Memory => Vec::new(),
    }
}

/// The warm-up round, then the measured rounds, each running every target
/// once in order.
async fn measure(
    settings: &BenchSettings,
    targets: &[Target],
    progress: &ProgressBar,
) -> Result<Vec<WorkloadResult>, BenchError> {
    let postgres = settings.store.is_postgres();
    for target in targets {
        progress.set_message(format!("warm-up: {}", target.workload.label(postgres)));
        phase(target, settings.warmup(), "w", settings.concurrency).await?;
        progress.inc(1);
    }
    let mut results: Vec<WorkloadResult> = targets
        .iter()
        .map(|t| WorkloadResult {
            workload: t.workload,
            runs: Vec::new(),
        })
        .collect();
    for round in 1..=settings.runs {
        for (target, result) in targets.iter().zip(&mut results) {
            progress.set_message(format!(
                "run {round}/{}: {}",
                settings.runs,
                target.workload.label(postgres)
            ));
            let tag = format!("r{round}");
            let (samples, elapsed) =
                phase(target, settings.executions, &tag, settings.concurrency).await?;
            result.runs.push(RunStats::of(&samples, elapsed));
            progress.inc(1);
        }
    }
    Ok(results)
}

/// One run of one workload: `executions` executions (ids
/// `<workload>-<tag>-<i>`) through `concurrency` tasks. Returns every
/// execution's sample and the wall time from the moment all tasks were
/// ready to the last one's end (a fresh memory store is freed after that).
async fn phase(
    target: &Target,
    executions: u32,
    tag: &str,
    concurrency: u32,
) -> Result<(Vec<Sample>, Duration), BenchError> {
    let store: Arc<dyn EventStore> = match &target.backing {
        Backing::Shared(store) => Arc::clone(store),
        Backing::FreshMemory => Arc::new(MemoryEventStore::new()),
    };
    let next = Arc::new(AtomicU32::new(0));
    let tasks = concurrency.min(executions);
    // Spawning is set-up: the clock starts when every task is waiting.
    let start = Arc::new(Barrier::new(tasks as usize + 1));
    let mut set = JoinSet::new();
    for _ in 0..tasks {
        let (next, start) = (Arc::clone(&next), Arc::clone(&start));
        let store = Arc::clone(&store);
        let workload = target.workload;
        let prefix = format!("{}-{tag}-", workload.key());
        set.spawn(async move {
            start.wait().await;
            let mut samples = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= executions {
                    return Ok::<_, WorkloadError>(samples);
                }
                let id = ExecutionId::new(format!("{prefix}{i}"))?;
                samples.push(workload.execute(&*store, &id).await?);
                // The memory store never awaits: without this a task would
                // run execution after execution without letting the others
                // in, and the concurrency would be nominal.
                yield_now().await;
            }
        });
    }
    start.wait().await;
    let began = Instant::now();
    let mut samples = Vec::with_capacity(executions as usize);
    // The first failure ends the run: returning drops the set, which aborts
    // the other tasks.
    while let Some(joined) = set.join_next().await {
        samples.extend(joined??);
    }
    let elapsed = began.elapsed();
    drop(store);
    Ok((samples, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawBench {
        RawBench {
            suite: Suite::Kernel,
            store: "memory".to_owned(),
            concurrency: 64,
            executions: None,
            runs: None,
            archive: false,
            pool: None,
            sqlite_durability: None,
        }
    }

    #[test]
    fn validates_and_defaults_the_pool_to_the_concurrency() {
        let settings = raw().validate().unwrap();
        assert_eq!(settings.pool, 64);
        assert_eq!(settings.warmup(), 300);
        for (field, bad) in [
            (
                "concurrency",
                RawBench {
                    concurrency: 0,
                    ..raw()
                },
            ),
            (
                "executions",
                RawBench {
                    executions: Some(0),
                    ..raw()
                },
            ),
            (
                "runs",
                RawBench {
                    runs: Some(0),
                    ..raw()
                },
            ),
            (
                "pool",
                RawBench {
                    pool: Some(0),
                    ..raw()
                },
            ),
        ] {
            assert_eq!(bad.validate().unwrap_err(), UsageError::Zero(field));
        }
        for (store, durability) in [
            ("sqlite:", None),
            ("nosuch", None),
            ("memory", Some(Durability::Normal)),
        ] {
            let bad = RawBench {
                store: store.to_owned(),
                sqlite_durability: durability,
                ..raw()
            };
            assert!(
                matches!(bad.validate(), Err(UsageError::Store(_))),
                "{store}"
            );
        }
    }

    #[test]
    fn each_workload_has_its_defaults_and_its_own_options() {
        let kernel = raw().validate().unwrap();
        assert_eq!((kernel.executions, kernel.runs), (3_000, 3));
        let retention = RawBench {
            suite: Suite::Retention,
            archive: true,
            ..raw()
        }
        .validate()
        .unwrap();
        assert_eq!((retention.executions, retention.archive), (10_000, true));
        assert_eq!(
            RawBench {
                archive: true,
                ..raw()
            }
            .validate()
            .unwrap_err(),
            UsageError::OnlyFor("archive", "--workload retention")
        );
        assert_eq!(
            RawBench {
                suite: Suite::Retention,
                runs: Some(3),
                ..raw()
            }
            .validate()
            .unwrap_err(),
            UsageError::OnlyFor("runs", "--workload kernel")
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_retention_bench_on_memory_checks_and_times_both_sweeps() {
        let settings = RawBench {
            suite: Suite::Retention,
            executions: Some(200),
            concurrency: 4,
            archive: true,
            ..raw()
        }
        .validate()
        .unwrap();
        let report = retention::run(settings, ProgressBar::hidden())
            .await
            .unwrap();
        assert_eq!(report.sweeps.len(), 2);
        for sweep in &report.sweeps {
            assert_eq!(sweep.report.examined, 201, "{sweep:?}");
            assert_eq!(sweep.report.deleted, 100, "{sweep:?}");
            assert_eq!(sweep.report.pinned.len(), 20, "{sweep:?}");
        }
        assert_eq!(report.sweeps[1].report.archived, 100);
        assert!(report.sweeps[1].archive_bytes.unwrap() > 0);
    }

    #[test]
    fn the_warmup_is_short_but_covers_every_task() {
        let small = RawBench {
            executions: Some(50),
            ..raw()
        };
        assert_eq!(small.validate().unwrap().warmup(), 50);
        let many = RawBench {
            executions: Some(100_000),
            concurrency: 8,
            ..raw()
        };
        assert_eq!(many.validate().unwrap().warmup(), 10_000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_bench_on_memory_measures_every_workload() {
        let settings = RawBench {
            concurrency: 4,
            executions: Some(20),
            runs: Some(2),
            ..raw()
        }
        .validate()
        .unwrap();
        let report = run(settings, ProgressBar::hidden()).await.unwrap();
        assert_eq!(report.results.len(), 5);
        for result in &report.results {
            assert_eq!(result.runs.len(), 2);
            assert!(result.throughput() > 0.0, "{result:?}");
        }
    }
}
