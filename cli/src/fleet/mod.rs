//! `loomfence fleet`: several `loomfence worker` processes on one store,
//! killed at random, and a check from the logs that nothing was lost or
//! run twice.
//!
//! The run:
//! 1. a fresh store (a PostgreSQL schema of its own, or a new SQLite file
//!    the workers share), and the workload written into it ([`plan`]): P
//!    parents, each fenced and parked on a group of C children or a
//!    deadline;
//! 2. W workers started as child processes ([`workers`]);
//! 3. over `--spread`, the children end at their drawn times (this process
//!    appends their completions, as the world outside the fleet would);
//!    meanwhile, every `--kill-every` a random worker is SIGKILLed and
//!    started again, and with `--terminate-every` (PostgreSQL) a random
//!    worker's database connection is ended with `pg_terminate_backend`;
//! 4. the drain: no more faults; the run waits until every parent is
//!    resumed and the logs stop changing, or `--drain-timeout`;
//! 5. every worker gets SIGTERM and must exit 0;
//! 6. the verdict, from the logs alone ([`verdict`]), and the store is
//!    dropped (schema) or removed (file).
//!
//! Exit codes: 0 when the kernel held (no double resume, no fenced-out
//! body, no parent left parked, no sequence fault) and every worker
//! behaved (none exited on its own, each stopped cleanly); 1 otherwise,
//! the negative control `--unconditional` included, which is expected to
//! fail; 2 on bad options; 130 on Ctrl-C.

mod chaos;
mod plan;
mod report;
mod verdict;
mod workers;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use loomfence_core::{ExecutionId, KernelKind, NewEvent};
use loomfence_store::{EventStore, StoreError};
use serde_json::json;
use tokio::task::JoinSet;

use self::chaos::Chaos;
use self::plan::{Plan, PlanError, Shape};
use self::report::Report;
use self::verdict::Verdict;
use self::workers::{Launch, WorkerError, Workers};
use crate::interrupt::{self, until_interrupted};
use crate::resumer::now_ms;
use crate::store_arg::{OpenError, OpenOptions, StoreArg};

/// `loomfence fleet`'s options.
#[derive(Clone, Debug, Args)]
pub(crate) struct FleetArgs {
    /// `postgres:URL` (a schema of its own, dropped at the end) or
    /// `sqlite:PATH` (a new file the workers share, removed at the end).
    #[arg(long, value_name = "STORE")]
    pub(crate) store: String,
    /// Worker processes.
    #[arg(long, value_name = "W", default_value_t = 4)]
    pub(crate) workers: u32,
    /// Parents.
    #[arg(long, value_name = "P", default_value_t = 200)]
    pub(crate) parents: u32,
    /// Children per parent.
    #[arg(long, value_name = "C", default_value_t = 3)]
    pub(crate) children: u32,
    /// Step events each resumed body appends.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub(crate) steps: u32,
    /// Over how long the children end.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = humantime::parse_duration)]
    pub(crate) spread: Duration,
    /// SIGKILL a random worker (and start it again) this often, ±50%.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) kill_every: Option<Duration>,
    /// PostgreSQL: end a random worker connection this often, ±50%.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) terminate_every: Option<Duration>,
    /// The longest wait, after the last child ended, for every parent to be
    /// resumed and every body to settle.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
    pub(crate) drain_timeout: Duration,
    /// The workers' beat (`worker --scan-every`).
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = humantime::parse_duration)]
    pub(crate) scan_every: Duration,
    /// The seed of the workload and of the faults (default: a fresh one,
    /// printed).
    #[arg(long, value_name = "S")]
    pub(crate) seed: Option<u64>,
    /// The negative control: the workers resume with the unconditional
    /// acquire. Expected to show violations (and exit 1).
    #[arg(long)]
    pub(crate) unconditional: bool,
    /// Keep the workers' logs in DIR (default: a temporary directory, kept
    /// only when the run fails).
    #[arg(long, value_name = "DIR")]
    pub(crate) logs: Option<PathBuf>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Why a fleet could not be run to its verdict.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FleetError {
    /// The store could not be opened or dropped.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The workload could not be written.
    #[error("setting up: {0}")]
    Plan(#[from] PlanError),
    /// Ending a child or reading a log failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A worker could not be started or stopped.
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// The log directory could not be made.
    #[error("log directory {dir}: {source}")]
    Logs {
        /// Which.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A task ending a child panicked.
    #[error("ending a child: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}

/// How long the workers are given to rebuild before the first child ends.
const WARM_UP: Duration = Duration::from_secs(2);

/// How often the fleet ends due children and checks the drain.
const TICK: Duration = Duration::from_millis(10);

/// Runs `loomfence fleet`.
pub(crate) async fn command(args: FleetArgs) -> ExitCode {
    let store = match StoreArg::from_options(&args.store, None) {
        Ok(StoreArg::Memory)
        | Ok(StoreArg::Sqlite {
            target: crate::sqlite_file::SqliteTarget::Memory,
            ..
        }) => {
            eprintln!(
                "error: --store: a fleet's workers are separate processes; they share postgres:URL or sqlite:PATH, not a store in memory"
            );
            return ExitCode::from(2);
        }
        Ok(store) => store,
        Err(error) => {
            eprintln!("error: --store: {error}");
            return ExitCode::from(2);
        }
    };
    if args.workers == 0 || args.parents == 0 || args.children == 0 {
        eprintln!("error: --workers, --parents and --children must be at least 1");
        return ExitCode::from(2);
    }
    if [args.kill_every, args.terminate_every].contains(&Some(Duration::ZERO)) {
        eprintln!("error: --kill-every and --terminate-every must be longer than zero");
        return ExitCode::from(2);
    }
    if args.terminate_every.is_some() && !store.is_postgres() {
        eprintln!(
            "error: --terminate-every ends PostgreSQL connections; it needs a postgres: store"
        );
        return ExitCode::from(2);
    }
    let seed = args.seed.unwrap_or_else(crate::settings::fresh_seed);
    let (logs, temporary) = match &args.logs {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("loomfence-fleet-{}", std::process::id())),
            true,
        ),
    };
    let report = match run(&args, store, seed, &logs).await {
        Ok(report) => report,
        Err(FleetError::Interrupted) => {
            eprintln!("interrupted (worker logs in {})", logs.display());
            return ExitCode::from(interrupt::EXIT_CODE);
        }
        Err(error) => {
            eprintln!(
                "error: the fleet failed: {error} (seed {seed}; worker logs in {})",
                logs.display()
            );
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        println!("{}", report.to_json());
    } else {
        println!("{}", report.human());
    }
    if report.passed() {
        if temporary {
            let _ = std::fs::remove_dir_all(&logs);
        }
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "error: {} (seed {seed}; worker logs in {})",
        report.failures().join("; "),
        logs.display()
    );
    ExitCode::FAILURE
}

/// The run, from a fresh store to its verdict; the store is dropped or
/// removed whatever happens.
async fn run(
    args: &FleetArgs,
    store: StoreArg,
    seed: u64,
    logs: &PathBuf,
) -> Result<Report, FleetError> {
    std::fs::create_dir_all(logs).map_err(|source| FleetError::Logs {
        dir: logs.clone(),
        source,
    })?;
    let opened = store
        .open(OpenOptions {
            prefix: "fleet",
            pool_size: 8,
            acquire: loomfence_postgres::AcquireStrategy::default(),
        })
        .await?;
    let launch = Launch {
        store: worker_store(&args.store),
        schema: opened.schema(),
        options: worker_options(args),
        logs: logs.clone(),
    };
    let chaos = Chaos::new(opened.postgres(), seed);
    let outcome = until_interrupted(fleet(args, &opened, launch, chaos, seed)).await;
    let closed = opened.close().await;
    let report = outcome.ok_or(FleetError::Interrupted)??;
    closed?;
    Ok(report)
}

/// The fleet itself, on an open store.
async fn fleet(
    args: &FleetArgs,
    opened: &crate::store_arg::OpenedStore,
    launch: Launch,
    mut chaos: Chaos,
    seed: u64,
) -> Result<Report, FleetError> {
    let events = Arc::clone(&opened.store);
    // Set-up is timed so the children start ending once it and the
    // workers' rebuild are done: a generous estimate, checked below.
    let setup = Duration::from_millis(u64::from(args.parents) * 3) + WARM_UP;
    let start = now_ms() + i64::try_from(setup.as_millis()).unwrap_or(i64::MAX);
    let plan = Plan::draw(Shape {
        parents: args.parents,
        children: args.children,
        start,
        spread: args.spread,
        beat: args.scan_every,
        seed,
    })
    .map_err(PlanError::from)?;
    plan.write(&events, &opened.timers, now_ms()).await?;
    let mut workers = Workers::start(launch, args.workers as usize)?;
    if now_ms() > start {
        eprintln!(
            "fleet: set-up ran {} ms past the first child's end; those children end at once",
            now_ms() - start
        );
    }

    // The clock starts when the first child ends: set-up and the workers'
    // rebuild are not the fleet's work.
    if let Ok(ahead) = u64::try_from(start - now_ms()) {
        tokio::time::sleep(Duration::from_millis(ahead)).await;
    }
    let began = Instant::now();
    let mut endings = plan.endings().into_iter().peekable();
    chaos.schedule(args.kill_every, args.terminate_every);
    while endings.peek().is_some() {
        let now = now_ms();
        let mut due = Vec::new();
        while let Some((at, _)) = endings.peek() {
            if *at > now {
                break;
            }
            due.extend(endings.next().map(|(_, child)| child));
        }
        end_children(&events, due).await?;
        chaos.act(&mut workers).await?;
        workers.restart_the_dead()?;
        tokio::time::sleep(TICK).await;
    }
    let drained = drain(&*events, &plan, args.drain_timeout, &mut workers).await?;
    let elapsed = began.elapsed();
    let died = workers.died;
    let stopped = workers.stop(Duration::from_secs(20)).await?;
    let verdict: Verdict = verdict::judge(&*events, &plan).await?;
    Ok(Report {
        args: args.clone(),
        seed,
        verdict,
        kills: chaos.kills,
        terminated: chaos.terminated,
        died,
        unclean: stopped.unclean,
        drained,
        elapsed,
    })
}

/// Waits until every parent has been resumed and no parent's log changed
/// for half a second (the bodies in flight finished), or `timeout`;
/// answers whether it settled in time. Workers that exit on their own
/// meanwhile are started again.
async fn drain(
    events: &dyn EventStore,
    plan: &Plan,
    timeout: Duration,
    workers: &mut Workers,
) -> Result<bool, FleetError> {
    let parents: std::collections::HashSet<&ExecutionId> =
        plan.families.iter().map(|f| &f.parent).collect();
    let deadline = Instant::now() + timeout;
    let mut last = None;
    let mut still_since = Instant::now();
    loop {
        workers.restart_the_dead()?;
        let mut heads = Vec::with_capacity(parents.len());
        let mut after: Option<ExecutionId> = None;
        loop {
            let page = events
                .list_executions(after.as_ref(), loomfence_core::MAX_PAGE_LIMIT)
                .await?;
            let Some(end) = page.last() else { break };
            after = Some(end.execution_id.clone());
            heads.extend(
                page.into_iter()
                    .filter(|s| parents.contains(&s.execution_id))
                    .map(|s| (s.execution_id, s.head)),
            );
        }
        // A parked parent's head is its park (2); anything after it
        // answered the park.
        let all_resumed = heads.len() == parents.len() && heads.iter().all(|(_, head)| *head > 2);
        if last.as_ref() != Some(&heads) {
            still_since = Instant::now();
            last = Some(heads);
        }
        if all_resumed && still_since.elapsed() >= Duration::from_millis(500) {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Ends `children` (an `EXECUTION_COMPLETED` each, unfenced, as the world
/// outside the fleet ends them), a few at a time.
async fn end_children(
    events: &Arc<dyn EventStore>,
    children: Vec<ExecutionId>,
) -> Result<(), FleetError> {
    let mut tasks = JoinSet::new();
    for child in children {
        let events = Arc::clone(events);
        tasks.spawn(async move {
            let mut payload = loomfence_core::JsonObject::new();
            payload.insert("output".to_owned(), json!({ "child": child.as_str() }));
            events
                .append(
                    &child,
                    NewEvent::kernel(KernelKind::ExecutionCompleted, now_ms())
                        .with_payload(payload),
                )
                .await
        });
        if tasks.len() >= 8
            && let Some(done) = tasks.join_next().await
        {
            done??;
        }
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// `--store` as the workers take it: on PostgreSQL, with the application
/// name `loomfence-worker`, by which `--terminate-every` finds their
/// connections.
fn worker_store(store: &str) -> String {
    let Some(url) = store.strip_prefix("postgres:") else {
        return store.to_owned();
    };
    let tagged = if url.contains("://") {
        let join = if url.contains('?') { '&' } else { '?' };
        format!("{url}{join}application_name={}", chaos::APPLICATION_NAME)
    } else {
        format!("{url} application_name={}", chaos::APPLICATION_NAME)
    };
    format!("postgres:{tagged}")
}

/// The options every worker gets.
fn worker_options(args: &FleetArgs) -> Vec<String> {
    let mut options = vec![
        "--steps".to_owned(),
        args.steps.to_string(),
        "--scan-every".to_owned(),
        format!("{}ms", args.scan_every.as_millis()),
        "--log-json".to_owned(),
    ];
    if args.unconditional {
        options.push("--unconditional".to_owned());
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_stores_carry_the_application_name() {
        assert_eq!(
            worker_store("postgres:postgres://u@h/db"),
            "postgres:postgres://u@h/db?application_name=loomfence-worker"
        );
        assert_eq!(
            worker_store("postgres:postgres://u@h/db?sslmode=disable"),
            "postgres:postgres://u@h/db?sslmode=disable&application_name=loomfence-worker"
        );
        assert_eq!(
            worker_store("postgres:host=/tmp user=u"),
            "postgres:host=/tmp user=u application_name=loomfence-worker"
        );
        assert_eq!(worker_store("sqlite:/tmp/f.db"), "sqlite:/tmp/f.db");
    }
}
