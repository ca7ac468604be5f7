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
//! `loomfence init` makes the lasting store those commands work on (an
//! SQLite file, a PostgreSQL schema), or migrates an existing loomfence
//! store, and refuses, untouched, anything else it finds there: 0 done, 1
//! the store failed, 2 bad options or a refusal (see [`init`]). A
//! retention dry run opens the store read-only and migrates nothing.
//! `loomfence inspect` and `loomfence timers` only read an existing store:
//! one execution as an operator needs to see it (log, token, park and
//! which waits can answer it, timer rows and claims, exhausted records,
//! inbox, lineage, retention's verdict), and the timer store's rows,
//! exhausted records and unreadable rows. They exit 0 when shown, 1 on an
//! unknown execution or a failed store, 2 on bad options or a store that
//! is not a usable loomfence store.
//!
//! `loomfence worker` is one node of a fleet on a shared store, running
//! until SIGTERM (see [`worker`]); `loomfence fleet` starts several, kills
//! them at random, and judges from the logs whether every park was
//! answered once, no body was fenced out and no parent was left parked:
//! 0 if so, 1 if not (the `--unconditional` control included), 2 on bad
//! options (see [`fleet`]).
//!
//! The source is laid out by those two jobs: `operate/` holds the commands
//! that work on a store somebody keeps, `harness/` the ones that exercise
//! the kernel on a store of their own (or, for `worker` and `fleet`, on a
//! shared one), and `store/` the one path both open stores through
//! (`--store` parsed once; a throwaway store for a run, or an existing one
//! opened as it is).

mod clock;
mod error;
mod harness;
mod interrupt;
mod operate;
mod progress;
mod redrivers;
mod store;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::harness::bench::BenchArgs;
use crate::harness::race::args::{self as race_args, RaceArgs};
use crate::harness::{bench, fleet, worker};
use crate::operate::init::{self, InitArgs};
use crate::operate::inspect::{self, InspectArgs};
use crate::operate::recover::{self, RecoverArgs};
use crate::operate::retention::{self, RetentionArgs};
use crate::operate::timers::{self, TimersArgs};

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
    /// Make a lasting store (an SQLite file, a PostgreSQL schema) for
    /// `worker` and `retention`, or bring an existing loomfence store up to
    /// date.
    ///
    /// A missing SQLite file (in an existing directory) or PostgreSQL schema
    /// is created and migrated, as is a PostgreSQL schema that exists and
    /// holds nothing. An existing loomfence store is only migrated, its
    /// data untouched ("migrated to version N", or "up to date"). Anything
    /// else there is refused and left untouched: an empty (0-byte) file, a
    /// text file, another application's SQLite database, a damaged file, a
    /// store written by a newer loomfence, a schema holding tables that are
    /// not loomfence's. `memory` and `sqlite::memory:` are refused: nothing
    /// would last.
    ///
    /// Exit code: 0 when the store is in place; 1 when the store failed
    /// (could not connect, could not be written); 2 on bad options or
    /// anything refused above.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Init(InitArgs),
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
    /// The store must exist (`loomfence init` makes one): nothing is
    /// created, dropped or removed. A dry run opens it read-only and
    /// migrates nothing, so it works on a store it may not write (an
    /// SQLite file of mode 0444 or in a read-only directory, a PostgreSQL
    /// role with only USAGE and SELECT); a store that would need a
    /// migration is then refused (exit 2) until a writer or `loomfence
    /// init` migrates it.
    ///
    /// Exit code: 0 when the sweep went through the whole store; 1 when the
    /// store could not be opened or the sweep stopped on an error (printed,
    /// with what was done before: each delete is atomic, so the next sweep
    /// simply goes on); 2 on bad options, a missing store included; 130 on
    /// Ctrl-C (the first stops before the sweep's next step, a second at
    /// once), with what was done before.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Retention(RetentionArgs),
    /// Move on executions whose re-drive chain or timer wake ran out of
    /// tries (--exhausted), or the executions named.
    ///
    /// A fire that gives up records its exhaustion beside the timers. Each
    /// record (or named execution) is recovered by firing one fresh row
    /// through the timer services' own decision, with the re-drivers every
    /// worker registers: a re-drive record starts a fresh chain at try 0, a
    /// timer-wake record fires its wake, a named execution with no record is
    /// re-driven now. The resume is conditional, so it is safe while
    /// workers run: the fence settles any race. Per recovery it reports
    /// resumed, not parked (nothing waits any more; the record is cleared),
    /// or contended again (the next try is handed to the timer services,
    /// the record cleared). A resumed execution's body is its engine's to
    /// run: this command runs none.
    ///
    /// Exit code: 0 when every recovery ran, whatever it found; 1 when an
    /// id names nothing in the store (checked before anything is done) or
    /// the store failed; 2 on bad options, a malformed id or a store that
    /// is not usable.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Recover(RecoverArgs),
    /// Show one execution of an existing store: its log, token, status,
    /// open park and which of its waits can answer it now, its timer and
    /// re-drive rows with their claims, its exhausted records, its inbox,
    /// the store's feed head, its parent and children, and what retention
    /// would do with it. Only reads.
    ///
    /// A child wait is answerable when the child's log ended, a timer wait
    /// when it is due, a message wait when a pending message is on its
    /// channel. Retention's verdict is the sweep's own rule: kept while it
    /// has not ended; pinned while it ended and its parent is parked on
    /// it; otherwise eligible once its end is older than --older-than.
    ///
    /// Exit code: 0 shown; 1 no execution with that id (no log), or a store
    /// that failed while read; 2 an invalid id, bad options, or a store that
    /// is not a usable loomfence store (nothing is created); 130 on Ctrl-C.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Inspect(InspectArgs),
    /// List the timer store of an existing store: the live rows (plain and
    /// re-drive, with their try), each due, pending, or claimed by a node
    /// until its lease ends; then the exhausted records, then the rows that
    /// do not read back, each section with its count. Only reads.
    ///
    /// Exit code: 0 listed; 1 a store that failed while read; 2 bad options
    /// (an invalid --execution id included) or a store that is not a usable
    /// loomfence store (nothing is created); 130 on Ctrl-C.
    #[command(allow_negative_numbers = true, after_help = EXIT_CODES)]
    Timers(TimersArgs),
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

#[tokio::main(flavor = "multi_thread")]
async fn main() -> ExitCode {
    // clap prints its own usage errors and exits 2.
    match Cli::parse().command {
        Command::Race(args) => race_args::command(args).await,
        Command::Bench(args) => bench::command(args).await,
        Command::Init(args) => init::command(args).await,
        Command::Retention(args) => retention::command(args.into()).await,
        Command::Recover(args) => recover::command(args).await,
        Command::Inspect(args) => inspect::command(args).await,
        Command::Timers(args) => timers::command(args).await,
        Command::Worker(args) => worker::command(args).await,
        Command::Fleet(args) => fleet::command(args).await,
    }
}
