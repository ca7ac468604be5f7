//! `loomfence race`'s options and the command that runs it: the options
//! become [`RawSettings`], the race runs, and its report decides the exit
//! code.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use loomfence_sqlite::Durability;

use crate::harness::race;
use crate::harness::race::settings::{RawSettings, WaitOn};
use crate::progress;
use crate::store::DurabilityArg;

/// `loomfence race`'s options.
#[derive(Debug, Args)]
pub(crate) struct RaceArgs {
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
pub(crate) enum WaitArg {
    /// Resume every park.
    Resume,
    /// Deliver a message to every park.
    Message,
}

/// `loomfence race`: validates the options, runs the race and turns its
/// report into the exit code.
pub(crate) async fn command(args: RaceArgs) -> ExitCode {
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
