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

mod args;
mod options;
mod report;
pub(crate) mod retention;
mod retention_report;
mod stats;
mod workloads;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use indicatif::ProgressBar;
use loomfence_core::ExecutionId;
use loomfence_postgres::AcquireStrategy;
use loomfence_store::{EventStore, MemoryEventStore};
use tokio::task::{JoinSet, yield_now};

pub(crate) use self::args::{BenchArgs, command};
pub(crate) use self::options::{BenchSettings, RawBench, Suite};
pub(crate) use self::report::BenchReport;
use self::report::WorkloadResult;
use self::stats::RunStats;
use self::workloads::{Sample, Workload};
use crate::error::CliError;
use crate::harness::start_line::StartLine;
use crate::interrupt::until_interrupted;
use crate::store::{OpenOptions, OpenedStore, StoreArg, close_all};

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
) -> Result<BenchReport, CliError> {
    let postgres = settings.store.is_postgres();
    let workloads: Vec<Workload> = Workload::for_store(postgres)
        .into_iter()
        .filter(|w| settings.only.is_empty() || settings.only.contains(w))
        .collect();
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
                return Err(failure);
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
    let results = outcome.ok_or(CliError::Interrupted)??;
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
) -> Result<Vec<WorkloadResult>, CliError> {
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
/// A workload that [prepares](Workload::prepare) does so for every
/// execution first, through the same tasks, before the clock starts.
async fn phase(
    target: &Target,
    executions: u32,
    tag: &str,
    concurrency: u32,
) -> Result<(Vec<Sample>, Duration), CliError> {
    let store: Arc<dyn EventStore> = match &target.backing {
        Backing::Shared(store) => Arc::clone(store),
        Backing::FreshMemory => Arc::new(MemoryEventStore::new()),
    };
    let workload = target.workload;
    let prefix = format!("{}-{tag}-", workload.key());
    let tasks = concurrency.min(executions);
    let prepared = Arc::new(if workload.prepares() {
        prepare(&store, workload, &prefix, executions, tasks).await?
    } else {
        vec![None; executions as usize]
    });
    let next = Arc::new(AtomicU32::new(0));
    // Spawning is set-up: the clock starts when every task is waiting,
    // before any is let go.
    let start = StartLine::new(tasks as usize);
    let mut set = JoinSet::new();
    for _ in 0..tasks {
        let (next, runner) = (Arc::clone(&next), start.runner());
        let (store, prepared) = (Arc::clone(&store), Arc::clone(&prepared));
        let prefix = prefix.clone();
        set.spawn(async move {
            runner.ready().await;
            let mut samples = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= executions {
                    return Ok::<_, CliError>(samples);
                }
                let id = execution_id(&prefix, i)?;
                let token = prepared[i as usize];
                samples.push(workload.execute(&*store, &id, token).await?);
                // The memory store never awaits: without this a task would
                // run execution after execution without letting the others
                // in, and the concurrency would be nominal.
                yield_now().await;
            }
        });
    }
    let began = start.start().await;
    let mut samples = Vec::with_capacity(executions as usize);
    // The first failure ends the run: returning drops the set, which aborts
    // the other tasks.
    while let Some(joined) = set.join_next().await {
        samples.extend(joined.map_err(CliError::task("bench task"))??);
    }
    let elapsed = began.elapsed();
    drop(store);
    Ok((samples, elapsed))
}

/// The untimed preparation of `executions` executions of `workload`
/// through `tasks` tasks: what each one's [`Workload::prepare`] returned,
/// by execution.
async fn prepare(
    store: &Arc<dyn EventStore>,
    workload: Workload,
    prefix: &str,
    executions: u32,
    tasks: u32,
) -> Result<Vec<Option<u64>>, CliError> {
    let next = Arc::new(AtomicU32::new(0));
    let mut set = JoinSet::new();
    for _ in 0..tasks {
        let (next, store, prefix) = (Arc::clone(&next), Arc::clone(store), prefix.to_owned());
        set.spawn(async move {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= executions {
                    return Ok::<_, CliError>(done);
                }
                let id = execution_id(&prefix, i)?;
                done.push((i, workload.prepare(&*store, &id).await?));
                yield_now().await;
            }
        });
    }
    let mut prepared = vec![None; executions as usize];
    while let Some(joined) = set.join_next().await {
        for (i, token) in joined.map_err(CliError::task("bench task"))?? {
            prepared[i as usize] = token;
        }
    }
    Ok(prepared)
}

/// The id of execution `i` of a run.
fn execution_id(prefix: &str, i: u32) -> Result<ExecutionId, CliError> {
    ExecutionId::new(format!("{prefix}{i}")).map_err(CliError::input("execution id"))
}

#[cfg(test)]
mod tests {
    use super::options::tests::raw;
    use super::*;

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
        assert_eq!(report.results.len(), 7);
        for result in &report.results {
            assert_eq!(result.runs.len(), 2);
            assert!(result.throughput() > 0.0, "{result:?}");
        }
    }
}
