//! `loomfence worker`: one node of a fleet, doing what a node of a
//! workflow engine does with this kernel, on a store it shares with the
//! other nodes, until SIGTERM.
//!
//! - **The child supervisor**, driven by the store's change feed through
//!   the runtime's [`Follower`]: a park on a child is watched, an end is
//!   reported to its parents, and nothing lists the store. When the worker
//!   starts, the follower rebuilds from the store's open parks (not from
//!   its history), so a restarted worker picks up what a killed one left
//!   and pays for the parks that are open, not for the store. It logs one
//!   `rebuilt` line when it is caught up. A caught-up follower reads when
//!   the store wakes it (PostgreSQL's `LISTEN`; a SQLite file's writers
//!   in this process), and on its own every `--feed-poll`, aligned to the
//!   wall clock, so that workers in several processes read in the same
//!   instant and race for the same parents.
//! - **A timer service with re-drive on**: it fires the parents' timer
//!   waits and the re-drive rows of contended resumes (the supervisor's
//!   re-driver is registered, and the supervisor writes the rows). Retries
//!   follow the race's schedule, on a command line's time scale: 20 ms
//!   doubling to 1 s, 8 tries. The inbox's re-driver is registered too:
//!   a message's intent row, and the re-drive row of a contended delivery,
//!   deliver what its sender left (a sender may be another process, the
//!   fleet's).
//! - **Bodies**: every resume the worker lands (the supervisor's, a timer
//!   wake's, a re-drive's) runs a body that appends `--steps` steps under
//!   its token and completes (see [`bodies`]).
//!
//! It logs through `tracing` to stderr (`--log-json` for one JSON object
//! per line; `RUST_LOG` filters, default `info`), and counts through the
//! `metrics` facade: the runtime's counters
//! ([`loomfence_runtime::counters`]) and the worker's own, served in the
//! Prometheus text format at `http://ADDR/metrics` with `--metrics ADDR`.
//!
//! **Shutdown.** SIGTERM (or Ctrl-C) stops the follower (the supervisions
//! in hand finish), stops the timer
//! service (its tick in hand finishes the fire it is making and hands its
//! other claims back), waits up to `--grace` for the bodies in flight, and
//! exits 0. SIGKILL leaves claims to expire after `--lease` and bodies
//! unfinished; the other workers carry on, and the worker rebuilds when it
//! is started again.
//!
//! Exit codes: 0 after a clean shutdown; 1 if the store cannot be opened
//! (after a few tries, unless it is not there at all),
//! the metrics endpoint cannot be served or SIGTERM cannot be watched; 2
//! on bad options.

mod args;
mod bodies;
mod fencing_only;
mod logging;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use loomfence_runtime::follower::{FollowerHandle, FollowerOptions};
use loomfence_runtime::{Follower, TimerService, timer::TimerServiceOptions};
use loomfence_store::EventStore;
use tokio::signal::unix::{Signal, SignalKind, signal};

use self::args::Checked;
pub(crate) use self::args::WorkerArgs;
use self::bodies::Bodies;
use self::fencing_only::fencing_only;
use crate::clock::now_ms;
use crate::error::CliError;
use crate::harness::redrive::POLICY;
use crate::redrivers::Redrivers;
use crate::store::{ExistingStore, StoreArg};

/// Runs a worker until SIGTERM or Ctrl-C.
pub(crate) async fn command(args: WorkerArgs) -> ExitCode {
    // A restarted worker is caught up when its rebuild is done: timed
    // from here, so opening the store counts too.
    let started = std::time::Instant::now();
    logging::init(args.log_json);
    // Watched from the start, so a SIGTERM during start-up is not lost.
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => terminate,
        Err(error) => {
            tracing::error!(%error, "cannot watch for SIGTERM");
            return ExitCode::FAILURE;
        }
    };
    let Checked {
        node,
        node_id,
        schema,
        store: store_arg,
    } = match args.check() {
        Ok(checked) => checked,
        Err(usage) => return usage.exit("the worker failed"),
    };
    if let Some(addr) = args.metrics {
        let installed = metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .install();
        if let Err(error) = installed {
            tracing::error!(%addr, %error, "cannot serve the metrics endpoint");
            return ExitCode::FAILURE;
        }
        loomfence_runtime::counters::describe();
        bodies::describe_counters();
        tracing::info!(%addr, "serving counters at /metrics");
    }
    let opened = match open_with_retries(&store_arg, schema.as_ref(), args.pool).await {
        Ok(opened) => opened,
        Err(error) => {
            tracing::error!(%error, "cannot open the store");
            // 2 for a file that is not a usable store, as every command.
            return ExitCode::from(error.exit_code());
        }
    };
    let events: Arc<dyn EventStore> = if args.unconditional {
        tracing::warn!("negative control: resuming with the unconditional acquire");
        Arc::new(fencing_only(opened.events))
    } else {
        opened.events
    };
    let timers = opened.timers;
    let bodies = Bodies::new(Arc::clone(&events), args.steps, node.clone());
    // The same re-drivers, in the same order, as every node of the fleet
    // (and `loomfence recover`).
    let redrivers = Redrivers::new(
        &events,
        &timers,
        opened.inbox,
        bodies.hook("redrive"),
        bodies.hook("message"),
    );

    let service = TimerService::new(
        Arc::clone(&events),
        timers,
        TimerServiceOptions {
            node: node_id,
            poll_interval: args.poll_every,
            lease: args.lease,
            policy: POLICY,
            on_resumed: bodies.hook("timer"),
            ..TimerServiceOptions::default()
        },
    );
    for redriver in redrivers.list() {
        service.register_redriver(redriver);
    }
    let timer_loop = Arc::new(service).spawn();
    tracing::info!(%node, store = %store_arg, unconditional = args.unconditional, "worker started");

    let follower = Follower::new(
        Arc::clone(&events),
        redrivers.supervisor,
        FollowerOptions {
            poll_interval: args.feed_poll,
            aligned_to: Some(Arc::new(now_ms)),
            on_resumed: bodies.hook("supervisor"),
            ..FollowerOptions::default()
        },
    );
    let follower = match follower {
        Ok(follower) => follower.spawn(),
        Err(error) => {
            tracing::error!(%error, "cannot follow the store");
            return ExitCode::FAILURE;
        }
    };
    let stopped = follow_until_stopped(follower, started, &mut terminate).await;
    tracing::info!(signal = stopped, "stopping");
    timer_loop.shutdown().await;
    let abandoned = bodies.drain(args.grace).await;
    if abandoned > 0 {
        tracing::warn!(
            abandoned,
            "bodies still running at the end of the grace period"
        );
    }
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// How many times a worker tries to open its store before it gives up.
const OPEN_TRIES: u32 = 8;

/// Opens the store, trying again with a doubling pause (100 ms up to
/// 3.2 s, about 13 s in all) while the failure is not "there is no store
/// here": a node that starts while the database drops connections (a
/// restart, a failover, the fleet's `--terminate-every`) waits for it
/// rather than dying.
async fn open_with_retries(
    store: &StoreArg,
    schema: Option<&loomfence_postgres::Schema>,
    pool: usize,
) -> Result<ExistingStore, CliError> {
    let mut pause = Duration::from_millis(100);
    let mut tries = 1;
    loop {
        match store.open_existing(schema, pool).await {
            Err(error) if tries < OPEN_TRIES && !error.names_no_store() => {
                tracing::warn!(%error, tries, "cannot open the store yet; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(3_200));
                tries += 1;
            }
            result => return result,
        }
    }
}

/// Follows until SIGTERM (`terminate`) or Ctrl-C; answers which. Logs the
/// `rebuilt` line once the follower is first caught up, with the time
/// since the worker started. The supervisions in hand finish before it
/// returns, so no supervision is cut in half by a clean stop.
async fn follow_until_stopped(
    mut follower: FollowerHandle,
    started: std::time::Instant,
    terminate: &mut Signal,
) -> &'static str {
    let mut caught_up = false;
    let stopped = loop {
        tokio::select! {
            _ = terminate.recv() => break "SIGTERM",
            _ = tokio::signal::ctrl_c() => break "SIGINT",
            rebuilt = follower.rebuilt(), if !caught_up => {
                caught_up = true;
                if let Some(rebuilt) = rebuilt {
                    tracing::info!(
                        elapsed_ms = millis(rebuilt.elapsed),
                        since_start_ms = millis(started.elapsed()),
                        watched = rebuilt.watched,
                        "rebuilt"
                    );
                }
            }
        }
    };
    if let Err(error) = follower.shutdown().await {
        tracing::error!(%error, "the follower stopped on a broken store contract");
    }
    stopped
}

/// Whole milliseconds of `elapsed`, saturating.
fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}
