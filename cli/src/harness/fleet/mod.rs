//! `loomfence fleet`: several `loomfence worker` processes on one store,
//! killed at random, and a check from the logs that nothing was lost or
//! run twice.
//!
//! The run:
//! 1. a fresh store (a PostgreSQL schema of its own, or a new SQLite file
//!    the workers share); with `--history N`, N finished family trees
//!    written first and not timed ([`history`]); the workload written into
//!    it ([`plan`]): P
//!    parents, each fenced and parked on a group of C children or a
//!    deadline;
//! 2. W workers started as child processes ([`workers`]);
//! 3. over `--spread`, the children end at their drawn times (this process
//!    appends their completions, as the world outside the fleet would),
//!    and the parents waiting on a message are sent it ([`sender`]);
//!    meanwhile, every `--kill-every` a random worker is SIGKILLed and
//!    started again, and with `--terminate-every` (PostgreSQL) a random
//!    worker's database connection is ended with `pg_terminate_backend`;
//! 4. the drain: no more faults; the run waits until every parent is
//!    resumed and the logs stop changing, or `--drain-timeout`;
//! 5. every worker gets SIGTERM and must exit 0;
//! 6. the verdict, from the logs alone ([`verdict`]), with the history
//!    checked untouched and the workers' slowest catch-up read from their
//!    logs ([`rebuilds`]), and the store is dropped (schema) or removed
//!    (file).
//!
//! Exit codes: 0 when the kernel held (no double resume, no fenced-out
//! body, no parent left parked, no sequence fault) and every worker
//! behaved (none exited on its own, each stopped cleanly); 1 otherwise,
//! the negative control `--unconditional` included, which is expected to
//! fail; 2 on bad options; 130 on Ctrl-C.

mod args;
mod chaos;
mod children;
mod drain;
mod history;
mod plan;
mod rebuilds;
mod report;
mod sender;
mod verdict;
mod workers;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use self::args::FleetArgs;
use self::chaos::Chaos;
use self::children::end_children;
use self::drain::drain;
use self::history::History;
use self::plan::{Plan, Shape};
use self::report::Report;
use self::sender::Sender;
use self::verdict::Verdict;
use self::workers::{Launch, Workers, worker_options, worker_store};
use crate::clock::now_ms;
use crate::error::CliError;
use crate::interrupt::until_interrupted;
use crate::store::{OpenOptions, OpenedStore, StoreArg};

/// How long the workers are given to rebuild before the first child ends.
const WARM_UP: Duration = Duration::from_secs(2);

/// How often the fleet ends due children and checks the drain.
const TICK: Duration = Duration::from_millis(10);

/// Runs `loomfence fleet`.
pub(crate) async fn command(args: FleetArgs) -> ExitCode {
    let store = match args.check() {
        Ok(store) => store,
        Err(usage) => return usage.exit("the fleet failed"),
    };
    let seed = args
        .seed
        .unwrap_or_else(crate::harness::race::settings::fresh_seed);
    let (logs, temporary) = match &args.logs {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("loomfence-fleet-{}", std::process::id())),
            true,
        ),
    };
    let created = !logs.exists();
    let report = match run(&args, store, seed, &logs).await {
        Ok(report) => report,
        Err(error) => {
            // A fleet that failed before any worker wrote a log leaves no
            // empty folder behind, and does not point at one.
            let where_logs = if created && is_empty_dir(&logs) {
                let _ = std::fs::remove_dir(&logs);
                String::new()
            } else {
                format!("worker logs in {}", logs.display())
            };
            if matches!(error, CliError::Interrupted) {
                if where_logs.is_empty() {
                    eprintln!("interrupted");
                } else {
                    eprintln!("interrupted ({where_logs})");
                }
            } else if where_logs.is_empty() {
                eprintln!("error: the fleet failed: {error} (seed {seed})");
            } else {
                eprintln!("error: the fleet failed: {error} (seed {seed}; {where_logs})");
            }
            return ExitCode::from(error.exit_code());
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

/// Whether `dir` is a folder with nothing in it.
fn is_empty_dir(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// The run, from a fresh store to its verdict; the store is dropped or
/// removed whatever happens.
async fn run(
    args: &FleetArgs,
    store: StoreArg,
    seed: u64,
    logs: &PathBuf,
) -> Result<Report, CliError> {
    std::fs::create_dir_all(logs)
        .map_err(CliError::io(format!("log directory {}", logs.display())))?;
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
    let report = outcome.ok_or(CliError::Interrupted)??;
    closed?;
    Ok(report)
}

/// The fleet itself, on an open store.
async fn fleet(
    args: &FleetArgs,
    opened: &OpenedStore,
    launch: Launch,
    mut chaos: Chaos,
    seed: u64,
) -> Result<Report, CliError> {
    let events = Arc::clone(&opened.store);
    let history = History {
        trees: args.history,
        children: args.children,
    };
    if history.trees > 0 {
        let bar = crate::progress::history_bar(u64::from(history.trees));
        history.write(&*events, now_ms(), &bar).await?;
        bar.finish_and_clear();
    }
    // Set-up is timed so the children start ending once it and the
    // workers' rebuild are done: a generous estimate, checked below.
    let setup = Duration::from_millis(u64::from(args.parents) * 3) + WARM_UP;
    let start = now_ms() + i64::try_from(setup.as_millis()).unwrap_or(i64::MAX);
    let plan = Plan::draw(Shape {
        parents: args.parents,
        children: args.children,
        start,
        spread: args.spread,
        beat: args.feed_poll,
        seed,
        message_every: args.message_every,
    })?;
    plan.write(&*events, &*opened.timers, now_ms()).await?;
    let launch_logs = launch.logs.clone();
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
    let mut sender = Sender::new(
        Arc::clone(&events),
        Arc::clone(&opened.inbox),
        args.steps,
        plan.sends(),
    );
    chaos.schedule(args.kill_every, args.terminate_every);
    while endings.peek().is_some() || !sender.is_done() {
        let now = now_ms();
        let mut due = Vec::new();
        while let Some((at, _)) = endings.peek() {
            if *at > now {
                break;
            }
            due.extend(endings.next().map(|(_, child)| child));
        }
        end_children(&*events, due).await?;
        sender.act(now).await?;
        chaos.act(&mut workers).await?;
        workers.restart_the_dead()?;
        tokio::time::sleep(TICK).await;
    }
    let drained = drain(&*events, &plan, args.drain_timeout, &mut workers).await?;
    let sent = sender.finish().await?;
    let elapsed = began.elapsed();
    let died = workers.died;
    let stopped = workers.stop(Duration::from_secs(20)).await?;
    let verdict: Verdict = verdict::judge(&*events, &*opened.inbox, &plan).await?;
    let listing = crate::harness::listing::list_all(&*events).await?;
    let history = history::untouched(&listing);
    let rebuilds = rebuilds::read(&launch_logs)?;
    Ok(Report {
        args: args.clone(),
        seed,
        verdict,
        kills: chaos.kills,
        terminated: chaos.terminated,
        died,
        unclean: stopped.unclean,
        drained,
        sent,
        elapsed,
        history,
        rebuilds,
    })
}
