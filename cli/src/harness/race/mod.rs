//! The race: park M executions, let N resumers loose on all of them at once
//! (with re-drive on, a timer service re-drives the contended ones beside
//! them until no re-drive row is left), then read every log to see what
//! really happened. With `--wait message` the racers deliver a message
//! instead of resuming (see [`crate::harness::race::messages`]).

pub(crate) mod args;
pub(crate) mod messages;
pub(crate) mod report;
pub(crate) mod resumer;
pub(crate) mod settings;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use indicatif::ProgressBar;
use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    park::{Wait, park_payload},
};
use loomfence_store::{EventStore, TimerStore};
use tokio::task::JoinSet;

use crate::clock::now_ms;
use crate::error::CliError;
use crate::harness::race::report::{LogCounts, RedriveCounts, Report, Tally};
use crate::harness::race::resumer::{Arena, Parked, Resumer};
use crate::harness::race::settings::{Settings, WaitOn};
use crate::harness::redrive::{RaceRedriver, RedriveRows, Service};
use crate::harness::start_line::StartLine;
use crate::interrupt::until_interrupted;
use crate::store::OpenOptions;
use loomfence_runtime::Redriver;

/// Runs one race as `settings` say, ticking `progress` once per attempt,
/// on a fresh store that is closed (a PostgreSQL schema dropped) at the end,
/// whether the race finished, failed or was interrupted. Lost races are not
/// errors: they are counted in the report.
pub(crate) async fn run(settings: Settings, progress: ProgressBar) -> Result<Report, CliError> {
    let opened = settings
        .store
        .open(OpenOptions {
            prefix: "race",
            pool_size: settings.resumers as usize,
            acquire: loomfence_postgres::AcquireStrategy::default(),
        })
        .await?;
    let store = Arc::clone(&opened.store);
    let timers = Arc::clone(&opened.timers);
    let outcome = match settings.wait {
        WaitOn::Resume => until_interrupted(race(settings, store, timers, progress.clone())).await,
        WaitOn::Message => {
            let inbox = Arc::clone(&opened.inbox);
            let race = messages::race(settings, store, timers, inbox, progress.clone());
            until_interrupted(race).await
        }
    };
    // Cleared on failure too, so the error is not printed under a stale bar.
    progress.finish_and_clear();
    let closed = opened.close().await;
    let report = outcome.ok_or(CliError::Interrupted)??;
    closed?;
    Ok(report)
}

/// The race itself, on an open store.
async fn race(
    settings: Settings,
    store: Arc<dyn EventStore>,
    timers: Arc<dyn TimerStore>,
    progress: ProgressBar,
) -> Result<Report, CliError> {
    let parked = park_all(&*store, settings.parks, "race").await?;

    // With re-drive on, the service runs beside the race from the start, as
    // it would in a fleet: a row is due within the policy's first delay.
    let rows = settings
        .redrive
        .then(|| Arc::new(RedriveRows::new(Arc::clone(&timers))));
    let service = settings.redrive.then(|| {
        let redriver = Arc::new(RaceRedriver::new(Arc::clone(&store), settings.steps));
        let service = Service::spawn(
            Arc::clone(&store),
            Arc::clone(&timers),
            Arc::clone(&redriver) as Arc<dyn Redriver>,
            settings.seed,
        );
        (service, redriver)
    });

    let arena = Arena {
        store: Arc::clone(&store),
        parked: Arc::clone(&parked),
        capability: settings.capability,
        steps: settings.steps,
        crash_rate: settings.crash_rate,
        progress: progress.clone(),
        dead_acquirers: settings.dead_acquirers,
        redrive: rows.clone(),
    };
    // Every resumer waits at the start line, and the clock starts when the
    // last one is spawned, before any is let go: spawning is set-up, not
    // race.
    let start = StartLine::new(settings.resumers as usize);
    let mut tasks = JoinSet::new();
    for index in 0..settings.resumers {
        let resumer = Resumer::new(index, settings.seed, arena.clone());
        let runner = start.runner();
        tasks.spawn(async move {
            runner.ready().await;
            resumer.run().await
        });
    }
    let began = start.start().await;
    let tally = join_all(&mut tasks).await;
    progress.finish_and_clear();
    // On a failure the service is dropped, which stops it.
    let tally = tally?;

    let mut exhausted = HashSet::new();
    let redrive = match service {
        None => None,
        Some((service, redriver)) => {
            let raced = Instant::now();
            let errors = service
                .drain()
                .await
                .map_err(CliError::store("timer store"))?;
            if let Some(first) = errors.failures.first() {
                return Err(CliError::TimerService {
                    count: errors.failures.len(),
                    first: first.clone(),
                });
            }
            let counts = &redriver.counts;
            exhausted = errors.exhausted;
            Some(RedriveCounts {
                landed: counts.landed.load(Ordering::Relaxed),
                contended: counts.contended.load(Ordering::Relaxed),
                fenced_out: counts.fenced_out.load(Ordering::Relaxed),
                exhausted: exhausted.len() as u64,
                drain: raced.elapsed(),
            })
        }
    };
    let elapsed = began.elapsed();

    let logs = verify(&*store, &parked, rows.as_deref(), &exhausted).await?;
    Ok(Report {
        settings,
        tally,
        logs,
        redrive,
        elapsed,
    })
}

/// Sums the resumers' tallies. The first failure ends the race: the
/// caller drops the set, which aborts the other resumers.
pub(crate) async fn join_all(
    tasks: &mut JoinSet<Result<Tally, CliError>>,
) -> Result<Tally, CliError> {
    let mut tally = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        tally += joined.map_err(CliError::task("resumer task"))??;
    }
    Ok(tally)
}

/// Parks `count` executions: `EXECUTION_STARTED` then `EXECUTION_SUSPENDED`
/// waiting for a message on `channel`, unfenced (token 0), as a body parks
/// before anyone has resumed it.
pub(crate) async fn park_all(
    store: &dyn EventStore,
    count: u32,
    channel: &str,
) -> Result<Arc<[Parked]>, CliError> {
    let width = count.to_string().len();
    let mut parked = Vec::with_capacity(count as usize);
    for i in 0..count {
        let id = ExecutionId::new(format!("race-{i:0width$}"))
            .map_err(CliError::input("execution id"))?;
        let at = now_ms();
        let park =
            NewEvent::kernel(KernelKind::ExecutionSuspended, at).with_payload(park_payload(&[
                Wait::Message {
                    channel: channel.to_owned(),
                },
            ]));
        let written = store
            .append_many(
                &id,
                vec![NewEvent::kernel(KernelKind::ExecutionStarted, at), park],
            )
            .await?;
        let park_seq = written.last().map_or(2, |park| park.sequence);
        parked.push(Parked { id, park_seq });
    }
    Ok(parked.into())
}

/// Reads every log and counts resumes per execution: the verdict rests on
/// what is stored, not on what the resumers believe they did. A park is
/// re-driven when its resume carries the re-driver's answer; it is lost to
/// re-drive when it is still parked although `rows` wrote a row for it and
/// its chain is not in `exhausted`.
async fn verify(
    store: &dyn EventStore,
    parked: &[Parked],
    rows: Option<&RedriveRows>,
    exhausted: &HashSet<loomfence_core::ExecutionId>,
) -> Result<LogCounts, CliError> {
    let mut counts = LogCounts::default();
    for execution in parked {
        let events = store.read_range(&execution.id, 1, None).await?;
        let count = |kind: KernelKind| {
            events
                .iter()
                .filter(|e| e.kernel_kind() == Some(kind))
                .count()
        };
        let resumes = count(KernelKind::ExecutionResumed);
        counts.resumed += u64::from(resumes >= 1);
        counts.double_resumes += u64::from(resumes > 1);
        counts.completed += u64::from(count(KernelKind::ExecutionCompleted) >= 1);
        let redriven = events.iter().any(|e| {
            e.kernel_kind() == Some(KernelKind::ExecutionResumed)
                && e.payload
                    .get("answer")
                    .and_then(|answer| answer.get("redrive"))
                    == Some(&serde_json::Value::Bool(true))
        });
        counts.redriven += u64::from(redriven);
        let lost = resumes == 0
            && rows.is_some_and(|rows| rows.was_scheduled(&execution.id))
            && !exhausted.contains(&execution.id);
        counts.lost_to_redrive += u64::from(lost);
    }
    Ok(counts)
}
