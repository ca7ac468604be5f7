//! `loomfence fleet`'s options, and the checks that refuse them before
//! anything runs (exit 2).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::CliError;
use crate::store::StoreArg;

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
    /// One parent in N waits on a message instead of a deadline (in turn
    /// beside its children's group, and alone), and this process sends
    /// each its message (twice, with the same id) at a time drawn within
    /// the spread; the verdict then also checks that no message was
    /// consumed twice and none was lost (stored while its parent stays
    /// parked). 0 for none.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub(crate) message_every: u32,
    /// Finished family trees (a parent resumed and completed, its children
    /// completed) written before the workers start and not timed: the
    /// weight of a store in use, which every listing and every worker's
    /// rebuild carries. The verdict checks that none was touched.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) history: u32,
    /// The workers' own read of the change feed when no wake comes
    /// (`worker --feed-poll`).
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = humantime::parse_duration)]
    pub(crate) feed_poll: Duration,
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

impl FleetArgs {
    /// The store, if the options make a fleet: a store the worker
    /// processes can share, at least one of each, faults that are more than
    /// zero apart, and connection faults only on PostgreSQL.
    pub(crate) fn check(&self) -> Result<StoreArg, CliError> {
        let store = StoreArg::from_options(&self.store, None)?;
        if store.is_in_memory() {
            return Err(CliError::InMemory { command: "fleet" });
        }
        for (option, count) in [
            ("workers", self.workers),
            ("parents", self.parents),
            ("children", self.children),
        ] {
            if count == 0 {
                return Err(CliError::zero(option));
            }
        }
        for (option, every) in [
            ("kill-every", self.kill_every),
            ("terminate-every", self.terminate_every),
        ] {
            if every == Some(Duration::ZERO) {
                return Err(CliError::OutOfRange {
                    option,
                    given: "0s".to_owned(),
                    range: "longer than zero",
                });
            }
        }
        if self.terminate_every.is_some() && !store.is_postgres() {
            return Err(CliError::OnlyForStore {
                option: "terminate-every",
                store: "postgres:URL",
            });
        }
        Ok(store)
    }
}
