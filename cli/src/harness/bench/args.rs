//! `loomfence bench`'s options and the command that runs them.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use loomfence_sqlite::Durability;

use crate::progress;
use crate::store::DurabilityArg;

/// `loomfence bench`'s options.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
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

impl From<BenchArgs> for super::RawBench {
    fn from(args: BenchArgs) -> Self {
        super::RawBench {
            suite: match args.workload {
                WorkloadArg::Kernel => super::Suite::Kernel,
                WorkloadArg::Retention => super::Suite::Retention,
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
pub(crate) enum WorkloadArg {
    /// The fence kernel's workloads.
    Kernel,
    /// One retention sweep.
    Retention,
}

/// `loomfence bench`: validates the options, runs the suite and prints
/// its report.
pub(crate) async fn command(args: BenchArgs) -> ExitCode {
    let json = args.json;
    let printed = async {
        let settings = super::RawBench::from(args).validate()?;
        match settings.suite {
            super::Suite::Kernel => super::run(settings, progress::phases_bar("workload runs"))
                .await
                .map(|report| (report.to_json(), report.markdown())),
            super::Suite::Retention => {
                super::retention::run(settings, progress::phases_bar("phases"))
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
