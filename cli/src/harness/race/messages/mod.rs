//! The race of messages (`loomfence race --wait message`): park M
//! executions on a MESSAGE wait, let N senders send every one of them the
//! same message through one [`Inbox`] at once, with the inbox's re-driver
//! on a timer service beside them until no intent or re-drive row is left,
//! then read every log and every inbox to see what really happened.
//!
//! The inbox's intent rows come due [`INTENT_DELAY_MS`] after their send:
//! a race's time scale, where the runtime's default (5 s) would only make
//! the run wait. Every intent row is fired once (most find their message
//! delivered and retire as nothing to do), so the race lasts at least
//! that long after the last send.

mod hooks;
mod sender;
mod verify;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use indicatif::ProgressBar;
use loomfence_core::{ExecutionId, timer::RedriveAnswer};
use loomfence_runtime::{
    Features, Inbox, Redriver, RuntimeError, clock::seeded_random, inbox::InboxOptions,
};
use loomfence_store::{EventStore, Forwarding, InboxStore, StoreError, TimerStore};
use serde_json::json;
use tokio::task::{JoinHandle, JoinSet};

use self::hooks::RaceHooks;
use self::sender::{CHANNEL, Post, Sender};
use crate::error::CliError;
use crate::harness::body::{BodyEnd, run_body};
use crate::harness::race::report::{RedriveCounts, Report};
use crate::harness::race::settings::Settings;
use crate::harness::race::{join_all, park_all};
use crate::harness::redrive::{POLICY, Service};
use crate::harness::start_line::StartLine;

/// How long after a send its intent row is due, in ms: a few hundred, so
/// a crashed sender's message is delivered within the run.
pub(crate) const INTENT_DELAY_MS: i64 = 250;

/// Mixed into `--seed` for the inbox's own random source (the jitter of
/// its re-drive rows).
const INBOX_SEED_SALT: u64 = 0x696e_626f_7872_6163;

/// The race's inbox: over the store seen through [`RaceHooks`], and the
/// store's inbox.
pub(crate) type RaceInbox = Inbox<Forwarding<Arc<dyn EventStore>, RaceHooks>, dyn InboxStore>;

/// The bodies the inbox's re-driver started (it hands each resume to the
/// inbox's `on_resumed`, which cannot wait for a body).
type Bodies = Arc<Mutex<Vec<JoinHandle<Result<BodyEnd, StoreError>>>>>;

/// The race of messages itself, on an open store.
pub(crate) async fn race(
    settings: Settings,
    store: Arc<dyn EventStore>,
    timers: Arc<dyn TimerStore>,
    inbox_store: Arc<dyn InboxStore>,
    progress: ProgressBar,
) -> Result<Report, CliError> {
    let parked = park_all(&*store, settings.parks, CHANNEL).await?;
    let hooks = RaceHooks::default();
    let dead_acquires = Arc::clone(&hooks.dead_acquires);
    let bodies: Bodies = Arc::default();
    let options = InboxOptions {
        intent_delay_ms: INTENT_DELAY_MS,
        features: Features::none().with_redrive(settings.redrive),
        policy: POLICY,
        random: seeded_random(settings.seed ^ INBOX_SEED_SALT),
        on_resumed: start_body(Arc::clone(&store), settings.steps, Arc::clone(&bodies)),
        ..InboxOptions::default()
    };
    let inbox = Arc::new(Inbox::new(
        Arc::new(Forwarding::new(Arc::clone(&store), hooks)),
        Arc::clone(&inbox_store),
        options,
    ));
    // The intent rows are the inbox's own: the service runs whether or
    // not contended deliveries add re-drive rows.
    let redriver = Arc::new(Counted::new(inbox.redriver()));
    let service = Service::spawn(
        Arc::clone(&store),
        Arc::clone(&timers),
        Arc::clone(&redriver) as Arc<dyn Redriver>,
        settings.seed,
    );

    let post = Post {
        store: Arc::clone(&store),
        inbox,
        inbox_store: Arc::clone(&inbox_store),
        intent_delay_ms: INTENT_DELAY_MS,
        parked: Arc::clone(&parked),
        steps: settings.steps,
        crash_rate: settings.crash_rate,
        progress: progress.clone(),
        dead_acquirers: settings.dead_acquirers,
        unguarded: settings.unguarded_delivery,
    };
    let start = StartLine::new(settings.resumers as usize);
    let mut tasks = JoinSet::new();
    for index in 0..settings.resumers {
        let sender = Sender::new(index, settings.seed, post.clone());
        let runner = start.runner();
        tasks.spawn(async move {
            runner.ready().await;
            sender.run().await
        });
    }
    drop(post);
    let began = start.start().await;
    let tally = join_all(&mut tasks).await;
    progress.finish_and_clear();
    let mut tally = tally?;
    tally.dead_acquires = dead_acquires.load(Ordering::Relaxed);

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
    let mut redrive = RedriveCounts {
        contended: redriver.contended.load(Ordering::Relaxed),
        exhausted: errors.exhausted.len() as u64,
        drain: raced.elapsed(),
        ..RedriveCounts::default()
    };
    let started = std::mem::take(&mut *bodies.lock().unwrap_or_else(PoisonError::into_inner));
    for body in started {
        redrive.landed += 1;
        match body.await.map_err(CliError::task("re-driven body"))?? {
            BodyEnd::Completed => {}
            BodyEnd::FencedOut => redrive.fenced_out += 1,
        }
    }
    let elapsed = began.elapsed();

    let mut logs = verify::verify(&*store, &*inbox_store, &parked).await?;
    logs.redriven = redrive.landed;
    Ok(Report {
        settings,
        tally,
        logs,
        redrive: Some(redrive),
        elapsed,
    })
}

/// The inbox's `on_resumed`: starts the race's body from a resume the
/// re-driver landed, and keeps its handle for the verdict.
fn start_body(
    store: Arc<dyn EventStore>,
    steps: u32,
    bodies: Bodies,
) -> loomfence_runtime::OnResumed {
    Arc::new(move |resumed| {
        let store = Arc::clone(&store);
        let body =
            tokio::spawn(async move { run_body(&*store, resumed, steps, json!("redriver")).await });
        bodies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(body);
    })
}

/// The inbox's re-driver, counting the re-drives contended again.
struct Counted {
    /// The inbox.
    inner: Arc<dyn Redriver>,
    /// Answers [`RedriveAnswer::Contended`].
    contended: AtomicU64,
}

impl Counted {
    /// Counts `inner`'s answers.
    fn new(inner: Arc<dyn Redriver>) -> Self {
        Self {
            inner,
            contended: AtomicU64::new(0),
        }
    }
}

#[async_trait]
impl Redriver for Counted {
    async fn redrive(&self, execution_id: &ExecutionId) -> Result<RedriveAnswer, RuntimeError> {
        let answer = self.inner.redrive(execution_id).await?;
        if answer == RedriveAnswer::Contended {
            self.contended.fetch_add(1, Ordering::Relaxed);
        }
        Ok(answer)
    }
}
