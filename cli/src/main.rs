//! `loomfence`, the command line.
//!
//! Its main job is `loomfence race`: park many executions, let many
//! resumers race to resume every one of them with the real resume driver,
//! crash some of them midway, and check from the logs that no park was
//! answered twice and no winner was fenced out. The exit code is the
//! verdict, so the command works as a smoke test in scripts and CI:
//!
//! - 0: the race ran and the kernel held (or, with `--unconditional`, the
//!   negative control ran; whatever it shows is expected);
//! - 1: a kernel bug (a double resume or a fenced-out winner) on a
//!   conditional run, a failed delivery with `--wait message` (a message
//!   consumed twice, a message lost, a park left parked), a park lost to
//!   re-drive (its resume ended contended,
//!   and it is still parked after the timer service drained with no
//!   exhaustion reported), or a store, machine or timer service failure
//!   during the race;
//! - 2: bad options.
//!
//! `loomfence bench` measures the kernel's workloads (unfenced, fenced, and
//! park/resume on each resume path) on a store and prints a Markdown table
//! (or one JSON object); it exits 0, 1 on a store failure, 2 on bad options.
//!
//! Either command (and `loomfence fleet`) stopped by Ctrl-C drops its
//! PostgreSQL schema (or removes its SQLite file) and exits 130.
//!
//! `loomfence retention` is the one command that works on a real, existing
//! store: it deletes (or archives, then deletes) the executions that ended
//! before a cutoff, keeping every child a parent is parked on. It exits 0
//! when the sweep finished, 1 when it failed (with what it did before), 2
//! on bad options (a missing store included: it creates nothing), 130 on
//! Ctrl-C (see [`retention`]).
//!
//! `loomfence worker` is one node of a fleet on a shared store, running
//! until SIGTERM (see [`worker`]); `loomfence fleet` starts several, kills
//! them at random, and judges from the logs whether every park was
//! answered once, no body was fenced out and no parent was left parked:
//! 0 if so, 1 if not (the `--unconditional` control included), 2 on bad
//! options (see [`fleet`]).

mod bench;
mod body;
mod clock;
mod error;
mod fleet;
mod interrupt;
mod listing;
mod messages;
mod progress;
mod race;
mod redrive;
mod report;
mod resumer;
mod retention;
mod settings;
mod sqlite_file;
mod start_line;
mod store_arg;
mod worker;

use std::process::ExitCode;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use loomfence_sqlite::Durability;

use crate::settings::{RawSettings, WaitOn};

/// The exit codes, the same for every command.
const EXIT_CODES: &str = "Exit codes, the same for every command: 0 done (and, for a check, \
it held); 1 the run failed (a store that failed while in use, a check that did not hold); \
2 a bad option, or a store that is not a usable loomfence store (missing, empty, damaged, \
another application's, written by a newer loomfence); 130 interrupted.";

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "loomfence",
    version,
    about = "The loomfence fence kernel, from the command line.",
    after_help = EXIT_CODES
)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Race N resumers to resume each of M parked executions, with crashes,
    /// and check that every park is answered at most once and no winner's
    /// body is fenced out; with --wait message, race senders to deliver
    /// one message to each park instead.
    ///
    /// Each resumer walks all executions in its own random order, drives the
    /// real resume machine step by step, and runs a body (K step events and
    /// a completion, under its token) when it wins. Orders and crashes come
    /// from per-resumer PRNGs derived from --seed, but the interleaving of
    /// the tasks on threads is not deterministic: the same seed gives the
    /// same decisions, not necessarily the same counts.
    ///
    /// Live re-drive is on by default: a resume that ends contended (every
    /// conditional try found the token moved, the park still open) writes a
    /// re-drive row (try 0) to the store's timer store, and a timer service
    /// running beside the race (real clock, random source seeded from
    /// --seed, 20 ms polls, retries 20 ms doubling to 1 s, 8 of them)
    /// re-derives the park's resume from the log, conditionally, and runs
    /// the body under its token when it lands. The race ends when the
    /// resumers are done and the timer store holds no row. With
    /// --no-redrive, contended parks are left parked for an operator.
    ///
    /// Exit code: 0 when the kernel held (always, with --unconditional);
    /// 1 on a double resume or a fenced-out body (racing or re-driven) in a
    /// conditional run, on a park lost to re-drive (a re-drive row was
    /// written for it and it is still parked after the service drained,
    /// with no exhaustion reported for it), or on a store or timer service
    /// failure; 2 on bad options. Parks left by crashes alone (no resume of
    /// theirs ended contended, so no row) and parks whose re-drive chain
    /// was reported exhausted are left for an operator, as the design says,
    /// and do not fail the run; neither do parks left with --no-redrive.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Race(RaceArgs),
    /// Measure throughput and latency of the kernel's workloads on a store,
    /// or (--workload retention) the speed of one retention sweep.
    ///
    /// Workloads: unfenced (five single appends), fenced append (the same
    /// five appends under a token acquired before the clock starts), fenced
    /// (acquire_fence, then the five appends under the token), acquire_fence
    /// alone, and park/resume (start, park, resume, one step, completion)
    /// with the resume taking no token, under acquire_fence, and under
    /// acquire_fence_if (fence_if_parked_at); on PostgreSQL the last once
    /// more with the pipelined conditional acquire instead of the function.
    /// Each runs --executions executions through --concurrency tasks; the
    /// workloads run round-robin for --runs rounds after a short warm-up,
    /// and the table gives the median over rounds, then the comparisons:
    /// the fenced append vs the unfenced one, fenced vs unfenced, the conditional
    /// resume vs the acquire_fence resume (as extra time per execution), and
    /// on PostgreSQL the function vs the pipelined acquire.
    ///
    /// --workload retention measures the retention sweep instead: the
    /// store is filled (not timed) with --executions executions of mixed
    /// shapes (parents parked on their old children, old roots, old
    /// children of a running parent, young ones, running ones), then one
    /// sweep (delete only, pages of 1000) is timed and its counts checked;
    /// with --archive the store is emptied, filled again, and a second
    /// sweep archives each log to a JSON-lines file in the temporary
    /// directory (synced once per listing page; removed at the end) before its
    /// delete. The table gives the counts, executions examined per second
    /// and deleted per second.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Bench(BenchArgs),
    /// Delete the executions of an existing store that ended more than
    /// --older-than ago, except the children a parent is parked on.
    ///
    /// One sweep pages through the store's executions (--page-limit per
    /// page), reads the log of each one that ended before the cutoff (now,
    /// by the system clock, minus --older-than), reads its parent's log if
    /// it has one, keeps it when the parent is parked on it (pinned), and
    /// otherwise deletes it with a guarded delete that re-checks, in the
    /// same atomic step, that neither the log nor the parent moved. With
    /// --archive each log is first appended to a JSON-lines file and synced.
    /// Running executions and those that ended recently are skipped.
    ///
    /// The store must exist: nothing is created, dropped or removed.
    ///
    /// Exit code: 0 when the sweep went through the whole store; 1 when the
    /// store could not be opened or the sweep stopped on an error (printed,
    /// with what was done before: each delete is atomic, so the next sweep
    /// simply goes on); 2 on bad options, a missing store included; 130 on
    /// Ctrl-C (the first stops before the sweep's next step, a second at
    /// once), with what was done before.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Retention(RetentionArgs),
    /// One node of a fleet: the child supervisor, a timer service with
    /// re-drive on, and resumed bodies, on a shared store, until SIGTERM.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Worker(worker::WorkerArgs),
    /// Start W workers on one store, park P parents on C children and a
    /// deadline each, end the children over time while killing workers at
    /// random, and check from the logs that every park was answered once,
    /// no body was fenced out and no parent was left parked.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Fleet(fleet::FleetArgs),
}

/// `loomfence retention`'s options.
#[derive(Debug, Args)]
struct RetentionArgs {
    /// The existing store to sweep: `sqlite:PATH`, an existing loomfence
    /// SQLite file (a missing one is refused, never created);
    /// `postgres:URL`, a server whose schema (--schema) already holds a
    /// loomfence store; both are migrated as their adapter does on open.
    /// `memory` and `sqlite::memory:` are accepted but are a new, empty
    /// store (nothing else can reach one): a smoke test of the command.
    #[arg(long, value_name = "STORE")]
    store: String,
    /// The PostgreSQL schema holding the store; only with --store
    /// postgres:…. Default: the adapter's default schema, `loomfence`.
    #[arg(long, value_name = "NAME")]
    schema: Option<String>,
    /// Sweep executions that ended more than this long ago: a duration
    /// such as 7d, 12h, 30m or 90s (units combine: `1d 12h`; w, M and y
    /// work too).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    older_than: String,
    /// Append each log to this JSON-lines file (created if missing, synced
    /// after each execution) before deleting it. Not opened in a dry run.
    #[arg(long, value_name = "FILE")]
    archive: Option<PathBuf>,
    /// Decide everything and change nothing: report what would be deleted
    /// (and pinned), delete and archive nothing.
    #[arg(long)]
    dry_run: bool,
    /// Executions per listing page, 1 to 10000.
    #[arg(long, value_name = "N", default_value_t = retention::DEFAULT_PAGE_LIMIT)]
    page_limit: u32,
    /// Print exactly one JSON object on stdout instead of the summary:
    /// outcome (done, failed, interrupted, aborted), store, olderThan,
    /// endedBefore (ms), archive, dryRun, examined, eligible, skipped,
    /// deleted, archived, pinned {count, list of {child, parent}}, kept
    /// {count, list}, pages, logReads, parentReads, elapsedMs,
    /// examinedPerSecond, and error when it failed. A sweep that stopped
    /// early counts its last page as examined when it was listed, so its
    /// skipped includes the part of that page it had not reached.
    #[arg(long)]
    json: bool,
}

impl From<RetentionArgs> for retention::RawRetention {
    fn from(args: RetentionArgs) -> Self {
        retention::RawRetention {
            store: args.store,
            schema: args.schema,
            older_than: args.older_than,
            archive: args.archive,
            dry_run: args.dry_run,
            page_limit: args.page_limit,
            json: args.json,
        }
    }
}

/// `loomfence race`'s options.
#[derive(Debug, Args)]
struct RaceArgs {
    /// Executions to park before the race (M).
    #[arg(long, value_name = "M", default_value_t = 200)]
    parks: u32,
    /// Concurrent resumer tasks (N).
    #[arg(long, value_name = "N", default_value_t = 8)]
    resumers: u32,
    /// Step events each winning body appends before it completes (K).
    #[arg(long, value_name = "K", default_value_t = 3)]
    steps: u32,
    /// Probability in [0, 1] that a resumer crashes during a resume attempt,
    /// either right after an acquire that won the token (leaving a dead
    /// acquirer) or right before its append (holding a token); a crashed
    /// resumer moves on to its next execution. An attempt refused before it
    /// reaches that point does not crash.
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0.1,
        allow_negative_numbers = true
    )]
    crash_rate: f64,
    /// Seed for every random decision (orders, crashes, the jitter of
    /// re-drive rows); default: a fresh one, printed in the summary so the
    /// run can be repeated.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// The negative control: resume with the plain, unconditional
    /// acquire_fence. Under contention losers then fence out winners'
    /// bodies; that is reported, and does not fail the run. Re-drive is off
    /// in the control: it re-derives a conditional resume.
    #[arg(long)]
    unconditional: bool,
    /// Dead acquirers in front of every racing resume (K): right before
    /// each of the resume's first K acquires, a node that read the same log
    /// takes the token with the same expectation (the conditional acquire;
    /// acquire_fence with --unconditional) and dies without appending.
    /// Dead acquires made once before the race would contend nothing: the
    /// resume retries on the token the store reports and passes them. A
    /// resume makes at most 3 tries, so K = 1 or 2 are passed by retrying
    /// (unless a rival's dead acquirers on the same park add up to 3
    /// stale tries, which a few resumes meet) and K >= 3 makes every
    /// racing resume end contended. A conditional dead acquire is refused
    /// once the park is answered, so it never fences out a running body.
    /// The dead acquirers strike racing resumes only, never the timer
    /// service's re-drive (though, while the race runs, one may land in a
    /// re-drive's window, as any rival may); they die with the race.
    #[arg(long, value_name = "K", default_value_t = 0)]
    dead_acquirers: u32,
    /// Switch live re-drive off: a resume that ends contended writes no
    /// row, and its park is left parked for an operator (the behaviour
    /// before live re-drive).
    #[arg(long)]
    no_redrive: bool,
    /// What the parks wait on, and so what the racers do: `resume` (each
    /// resumer resumes every park with the resume machine) or `message`
    /// (each park waits on channel `go`, and every resumer sends every
    /// park the same message, id `go-1`, through the inbox's notify, which
    /// stores it once and delivers it: `[MESSAGE_CONSUMED,
    /// EXECUTION_RESUMED]` as one conditional batch). In the race of
    /// messages the dead acquirers strike each notify's first acquires; a
    /// crash is a sender that dies right after its send stored the message,
    /// before delivering it; the inbox's intent rows (due 250 ms after
    /// their send, the short delay of a race) and, with re-drive on, its
    /// re-drive rows are finished by the inbox's re-driver on the timer
    /// service beside the race, and the race ends when no row is left.
    /// It exits 1 on a double delivery (a message consumed twice, or a
    /// park resumed twice), a lost message (stored, never consumed, its
    /// execution still parked) or a park left parked. --no-redrive keeps
    /// only the intent rows; --unconditional is refused.
    #[arg(long, value_name = "WHAT", default_value = "resume")]
    wait: WaitArg,
    /// The negative control of --wait message: every sender stores the
    /// message, then appends the delivery's pair under a plain
    /// acquire_fence without the park condition, so the report must show
    /// double deliveries and the run exits 1. Hidden: it shows the checker
    /// bites, nothing more.
    #[arg(long, hide = true)]
    unguarded_delivery: bool,
    /// The store to race over: `memory`; `postgres:URL` (a fresh schema
    /// for the race, dropped at the end); `sqlite:PATH`, a new SQLite file
    /// for the race, removed at the end with its -wal and -shm (PATH must
    /// not exist yet: an existing file is refused, never opened or
    /// deleted; its directory must exist); or `sqlite::memory:`.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    store: String,
    /// How an SQLite store commits; only with --store sqlite:…. Default:
    /// full.
    #[arg(long, value_name = "MODE")]
    sqlite_durability: Option<DurabilityArg>,
    /// Print exactly one JSON object (parks, resumed, left_parked,
    /// redriven, double_resumes, fenced_out, contended, refused,
    /// messages_sent, messages_consumed, double_deliveries, messages_lost,
    /// elapsed_ms) and nothing else on stdout. left_parked: parks with no
    /// EXECUTION_RESUMED at the end, read from the logs; messages_sent:
    /// messages the inbox stored; messages_consumed: MESSAGE_CONSUMED
    /// events in the logs; double_deliveries: messages consumed more than
    /// once plus parks resumed more than once; messages_lost: messages
    /// stored and never consumed while their execution is still parked
    /// (the four are 0 with --wait resume, which sends nothing); redriven: parks
    /// resumed by the timer service's re-drive (their resume carries the
    /// re-driver's answer); fenced_out counts racing and re-driven bodies;
    /// elapsed_ms runs from the start of the race until the timer store
    /// held no row.
    #[arg(long)]
    json: bool,
}

impl From<RaceArgs> for RawSettings {
    fn from(args: RaceArgs) -> Self {
        RawSettings {
            parks: args.parks,
            resumers: args.resumers,
            steps: args.steps,
            crash_rate: args.crash_rate,
            seed: args.seed,
            unconditional: args.unconditional,
            store: args.store,
            sqlite_durability: args.sqlite_durability.map(Durability::from),
            dead_acquirers: args.dead_acquirers,
            no_redrive: args.no_redrive,
            wait: match args.wait {
                WaitArg::Resume => WaitOn::Resume,
                WaitArg::Message => WaitOn::Message,
            },
            unguarded_delivery: args.unguarded_delivery,
        }
    }
}

/// `--wait`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum WaitArg {
    /// Resume every park.
    Resume,
    /// Deliver a message to every park.
    Message,
}

/// `loomfence bench`'s options.
#[derive(Debug, Args)]
struct BenchArgs {
    /// What to measure: `kernel` (the fence kernel's workloads) or
    /// `retention` (one retention sweep).
    #[arg(long, value_name = "WORKLOAD", default_value = "kernel")]
    workload: WorkloadArg,
    /// The store to measure: `memory`; `postgres:URL` (e.g.
    /// `postgres:postgres://postgres@127.0.0.1:5432/postgres`), where every
    /// store the bench opens gets a fresh schema, dropped at the end;
    /// `sqlite:PATH`, a new SQLite file for the whole bench (every round
    /// writes into it), removed at the end with its -wal and -shm (PATH
    /// must not exist yet: an existing file is refused, never opened or
    /// deleted; its directory must exist; put it on the disk to measure); or
    /// `sqlite::memory:`.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    store: String,
    /// How an SQLite store commits; only with --store sqlite:…. Default:
    /// full.
    #[arg(long, value_name = "MODE")]
    sqlite_durability: Option<DurabilityArg>,
    /// Concurrent tasks; each takes the next execution until all are done
    /// (with --workload retention: the tasks that fill the store).
    #[arg(long, value_name = "N", default_value_t = 64)]
    concurrency: u32,
    /// Executions per run of each workload (default 3000); with --workload
    /// retention, executions in the swept store (default 10000).
    #[arg(long, value_name = "N")]
    executions: Option<u32>,
    /// Measured rounds; each runs every workload once, in turn (default
    /// 3). Not with --workload retention, which times one sweep.
    #[arg(long, value_name = "N")]
    runs: Option<u32>,
    /// With --workload retention: also time a sweep that archives every
    /// log to a JSON-lines file before deleting it.
    #[arg(long)]
    archive: bool,
    /// PostgreSQL connections per store; default: --concurrency.
    #[arg(long, value_name = "N")]
    pool: Option<u32>,
    /// With --workload kernel: run only these workloads (their JSON keys,
    /// comma-separated: unfenced, fenced_append, fenced, acquire,
    /// park_resume_unfenced, park_resume_acquire_fence,
    /// park_resume_fence_if_parked_at,
    /// park_resume_fence_if_parked_at_pipelined), e.g. to profile one.
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    only: Vec<String>,
    /// Print exactly one JSON object (settings, per-workload medians and
    /// runs, comparisons) and nothing else on stdout.
    #[arg(long)]
    json: bool,
}

impl From<BenchArgs> for bench::RawBench {
    fn from(args: BenchArgs) -> Self {
        bench::RawBench {
            suite: match args.workload {
                WorkloadArg::Kernel => bench::Suite::Kernel,
                WorkloadArg::Retention => bench::Suite::Retention,
            },
            store: args.store,
            concurrency: args.concurrency,
            executions: args.executions,
            runs: args.runs,
            archive: args.archive,
            pool: args.pool,
            sqlite_durability: args.sqlite_durability.map(Durability::from),
            only: args.only,
        }
    }
}

/// `--workload`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum WorkloadArg {
    /// The fence kernel's workloads.
    Kernel,
    /// One retention sweep.
    Retention,
}

/// `--sqlite-durability`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum DurabilityArg {
    /// synchronous=FULL: every commit is fsynced before it returns.
    Full,
    /// synchronous=NORMAL: the WAL is fsynced only at checkpoints; a crash
    /// of the process loses nothing, a power loss may lose the last commits.
    Normal,
}

impl From<DurabilityArg> for Durability {
    fn from(arg: DurabilityArg) -> Self {
        match arg {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        }
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> ExitCode {
    // clap prints its own usage errors and exits 2.
    match Cli::parse().command {
        Command::Race(args) => race_command(args).await,
        Command::Bench(args) => bench_command(args).await,
        Command::Retention(args) => retention::command(args.into()).await,
        Command::Worker(args) => worker::command(args).await,
        Command::Fleet(args) => fleet::command(args).await,
    }
}

/// `loomfence bench`.
async fn bench_command(args: BenchArgs) -> ExitCode {
    let json = args.json;
    let printed = async {
        let settings = bench::RawBench::from(args).validate()?;
        match settings.suite {
            bench::Suite::Kernel => bench::run(settings, progress::phases_bar("workload runs"))
                .await
                .map(|report| (report.to_json(), report.markdown())),
            bench::Suite::Retention => {
                bench::retention::run(settings, progress::phases_bar("phases"))
                    .await
                    .map(|report| (report.to_json(), report.markdown()))
            }
        }
    };
    let (as_json, markdown) = match printed.await {
        Ok(printed) => printed,
        Err(error) => return error.exit("the bench failed"),
    };
    if json {
        println!("{as_json}");
    } else {
        print!("{markdown}");
    }
    ExitCode::SUCCESS
}

/// `loomfence race`.
async fn race_command(args: RaceArgs) -> ExitCode {
    let json = args.json;
    let settings = match RawSettings::from(args).validate() {
        Ok(settings) => settings,
        Err(usage) => return usage.exit("the race failed"),
    };
    let progress = progress::attempts_bar(
        u64::from(settings.parks) * u64::from(settings.resumers),
        json,
    );
    let report = match race::run(settings, progress).await {
        Ok(report) => report,
        Err(error) => return error.exit("the race failed"),
    };
    if json {
        println!("{}", report.to_json());
    } else {
        println!("{}", report.human());
    }
    if report.delivery_failed() {
        let m = &report.logs.messages;
        eprintln!(
            "error: delivery failed: {} double deliveries, {} lost messages, {} parks left parked (seed {})",
            m.double_deliveries,
            m.lost,
            report.left_parked(),
            report.settings.seed
        );
        return ExitCode::FAILURE;
    }
    if report.kernel_bug() {
        eprintln!(
            "error: kernel bug: {} double resumes, {} fenced-out bodies (seed {})",
            report.logs.double_resumes,
            report.fenced_out(),
            report.settings.seed
        );
        return ExitCode::FAILURE;
    }
    if report.redrive_failed() {
        eprintln!(
            "error: re-drive lost {} parks: their resume ended contended, a re-drive row was written, and they are still parked with no exhaustion reported (seed {})",
            report.logs.lost_to_redrive, report.settings.seed
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
