//! `loomfence worker`'s options, and the checks that refuse them before
//! anything runs (exit 2).

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use loomfence_core::timer::NodeId;
use loomfence_postgres::Schema;

use crate::error::CliError;
use crate::store::StoreArg;

/// `loomfence worker`'s options.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The shared store: `postgres:URL` or `sqlite:PATH` (an existing file;
    /// several workers may share it). The store is opened as it is:
    /// nothing is created, dropped or removed.
    #[arg(long, value_name = "STORE")]
    pub(crate) store: String,
    /// PostgreSQL only: the schema the store's tables are in (default: the
    /// adapter's).
    #[arg(long, value_name = "NAME")]
    pub(crate) schema: Option<String>,
    /// Step events each resumed body appends before it completes.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub(crate) steps: u32,
    /// The longest a caught-up worker waits before reading the change feed
    /// without a wake from the store, aligned to the wall clock: the whole
    /// latency when the store cannot wake it (another process writing the
    /// same SQLite file), and what a lost wake costs otherwise.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = humantime::parse_duration)]
    pub(crate) feed_poll: Duration,
    /// How often the timer service polls for due rows.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = humantime::parse_duration)]
    pub(crate) poll_every: Duration,
    /// How long the timer service's claims last: a killed worker's rows
    /// are fired by another one after this.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    pub(crate) lease: Duration,
    /// PostgreSQL connections in the worker's pool.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) pool: usize,
    /// How long a shutdown waits for the bodies in flight.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    pub(crate) grace: Duration,
    /// The negative control: resume with the unconditional acquire
    /// (`acquire_fence`), which the conditional acquire replaced.
    #[arg(long)]
    pub(crate) unconditional: bool,
    /// Log one JSON object per line instead of text.
    #[arg(long)]
    pub(crate) log_json: bool,
    /// Serve the counters in the Prometheus text format at
    /// `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<SocketAddr>,
    /// This worker's name in logs, completions and timer claims (default:
    /// `worker-<pid>`).
    #[arg(long, value_name = "NAME")]
    pub(crate) node: Option<String>,
}

/// The options that need more than clap's checks, checked.
pub(crate) struct Checked {
    /// This worker's name (`--node`, or `worker-<pid>`).
    pub(crate) node: String,
    /// The same, as timer claims carry it.
    pub(crate) node_id: NodeId,
    /// `--schema`, PostgreSQL only.
    pub(crate) schema: Option<Schema>,
    /// The shared store.
    pub(crate) store: StoreArg,
}

/// The longest `--feed-poll`: a longer one would leave a worker whose
/// store cannot wake it deaf for longer than any deployment would accept.
const MAX_FEED_POLL: Duration = Duration::from_secs(3_600);

/// The longest `--lease` the timer store takes; outside 1 ms to this,
/// every claim would be refused, poll after poll.
const MAX_LEASE: Duration = Duration::from_secs(86_400);

impl WorkerArgs {
    /// Checks what clap cannot: a valid node id, a schema name, a lease
    /// the timer store takes, and an existing store other processes can
    /// reach (a schema only with PostgreSQL).
    pub(crate) fn check(&self) -> Result<Checked, CliError> {
        let node = self
            .node
            .clone()
            .unwrap_or_else(|| format!("worker-{}", std::process::id()));
        let node_id = NodeId::new(node.clone()).map_err(|_| {
            CliError::bad_value(
                "node",
                &format!("{node:?} is not a valid node id (1 to 255 bytes, no NUL)"),
            )
        })?;
        if !(Duration::from_millis(1)..=MAX_FEED_POLL).contains(&self.feed_poll) {
            return Err(CliError::OutOfRange {
                option: "feed-poll",
                given: humantime::format_duration(self.feed_poll).to_string(),
                range: "from 1ms to 1 hour",
            });
        }
        if !(Duration::from_millis(1)..=MAX_LEASE).contains(&self.lease) {
            return Err(CliError::OutOfRange {
                option: "lease",
                given: humantime::format_duration(self.lease).to_string(),
                range: "from 1ms to 1 day",
            });
        }
        let store = StoreArg::existing(&self.store)?;
        if store.is_in_memory() {
            return Err(CliError::InMemory { command: "worker" });
        }
        let schema = store.schema_option(self.schema.clone())?;
        Ok(Checked {
            node,
            node_id,
            schema,
            store,
        })
    }
}
