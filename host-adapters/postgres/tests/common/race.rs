//! The race the kernel exists to win, as a harness the race, fail-first,
//! isolation and backfill tests share.
//!
//! One trial: an execution is parked; a writer answers the park while a
//! rival calls `acquire_fence_if` on the same park, both released together
//! by a barrier on a multi-threaded runtime. Exactly one of them may win:
//! the answer lands and the acquire is stale, or the acquire wins and the
//! answer is refused with `StaleFence`. The harness classifies every trial,
//! checks the log and the token agree with the answers, and counts.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use loomfence_core::{AcquireOutcome, ConditionalAppend, ExecutionId, KernelKind, ParkExpectation};
use loomfence_postgres::PostgresEventStore;
use loomfence_store::{EventStore, StoreError};
use tokio::sync::Barrier;

use super::{id, kernel, park};

/// Which answering write races the conditional acquire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Window 2 on the single-append path: A holds token `t` from a
    /// conditional acquire and appends `EXECUTION_RESUMED` under it with
    /// `append`; B re-read `t` and calls `acquire_fence_if({t, park})`.
    Single,
    /// The same on the batch path: A appends `[MESSAGE_CONSUMED,
    /// EXECUTION_RESUMED]` under `t` with `append_many` (the inbox notify
    /// batch).
    Batch,
    /// The park-conditional path: A answers with `append_if_parked(park,
    /// [EXECUTION_RESUMED])`, unfenced, at token 0; B calls
    /// `acquire_fence_if({0, park})`.
    IfParked,
    /// A plain unfenced `append` of `EXECUTION_RESUMED` at token 0 against
    /// `acquire_fence_if({0, park})`.
    Unfenced,
}

impl Path {
    /// Whether the answer carries the token of an earlier acquire.
    fn fenced(self) -> bool {
        matches!(self, Path::Single | Path::Batch)
    }
}

/// Where a trial's park is and which token the rival expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The park's sequence.
    pub park_seq: u64,
    /// The token both sides hold when the race starts.
    pub token: u64,
}

/// One trial, with its execution prepared by the harness (`setup: None`) or
/// beforehand (a park written by an "older version", say).
#[derive(Clone, Debug)]
pub struct Trial {
    /// The execution raced over.
    pub id: String,
    /// Which answer races the acquire.
    pub path: Path,
    /// The prepared park, or `None` to park (and, on fenced paths, acquire)
    /// first.
    pub setup: Option<Setup>,
}

impl Trial {
    /// A trial on a fresh execution `id`, prepared by the harness.
    pub fn fresh(id: String, path: Path) -> Self {
        Self {
            id,
            path,
            setup: None,
        }
    }
}

/// How one trial ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The answer landed and the acquire was stale.
    AppendWon,
    /// The acquire won and the answer was refused as stale.
    AcquireWon,
    /// Both succeeded: the bug the kernel exists to prevent.
    BothWon,
    /// Neither, an unexpected error, or answers the log contradicts.
    Other(String),
}

/// Outcome counts over many trials.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Trials run.
    pub trials: u64,
    /// The answer landed, the acquire was stale.
    pub append_won: u64,
    /// The acquire won, the answer was refused.
    pub acquire_won: u64,
    /// Both succeeded.
    pub both_won: u64,
    /// Anything else.
    pub other: u64,
    /// The first few descriptions of `Other` outcomes.
    pub examples: Vec<String>,
}

impl Tally {
    /// Counts one outcome.
    fn add(&mut self, outcome: Outcome) {
        self.trials += 1;
        match outcome {
            Outcome::AppendWon => self.append_won += 1,
            Outcome::AcquireWon => self.acquire_won += 1,
            Outcome::BothWon => self.both_won += 1,
            Outcome::Other(what) => {
                self.other += 1;
                if self.examples.len() < 5 {
                    self.examples.push(what);
                }
            }
        }
    }

    /// Adds another lane's counts.
    fn merge(&mut self, lane: Tally) {
        self.trials += lane.trials;
        self.append_won += lane.append_won;
        self.acquire_won += lane.acquire_won;
        self.both_won += lane.both_won;
        self.other += lane.other;
        self.examples.extend(lane.examples);
        self.examples.truncate(5);
    }

    /// Fails unless every trial had exactly one winner.
    pub fn assert_exclusive(&self, label: &str) {
        assert!(
            self.both_won == 0 && self.other == 0,
            "{label}: exactly one side must win every trial: {self}; examples: {:#?}",
            self.examples
        );
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} trials: append won {}, acquire won {}, BOTH won {}, other {}",
            self.trials, self.append_won, self.acquire_won, self.both_won, self.other
        )
    }
}

/// Parks `id` and, on fenced paths, takes the first token with a conditional
/// acquire (A's own acquire, before the race).
pub async fn prepare(store: &PostgresEventStore, id: &ExecutionId, path: Path) -> Setup {
    let park_seq = park(store, id).await;
    let token = if path.fenced() {
        match store
            .acquire_fence_if(id, ParkExpectation { fence: 0, park_seq })
            .await
            .expect("A's own conditional acquire")
        {
            AcquireOutcome::Acquired { fence } => fence,
            stale => panic!("A's uncontended acquire on {id} was {stale:?}"),
        }
    } else {
        0
    };
    Setup { park_seq, token }
}

/// A's answer: `Ok(true)` when it landed, `Ok(false)` when a conditional
/// append found the park answered.
async fn answer(
    store: &PostgresEventStore,
    id: &ExecutionId,
    setup: Setup,
    path: Path,
) -> Result<bool, StoreError> {
    let token = setup.token;
    match path {
        Path::Single => store
            .append(id, kernel(KernelKind::ExecutionResumed).with_fence(token))
            .await
            .map(|_| true),
        Path::Batch => store
            .append_many(
                id,
                vec![
                    kernel(KernelKind::MessageConsumed).with_fence(token),
                    kernel(KernelKind::ExecutionResumed).with_fence(token),
                ],
            )
            .await
            .map(|_| true),
        Path::IfParked => store
            .append_if_parked(
                id,
                setup.park_seq,
                vec![kernel(KernelKind::ExecutionResumed)],
            )
            .await
            .map(|answer| matches!(answer, ConditionalAppend::Appended(_))),
        Path::Unfenced => store
            .append(id, kernel(KernelKind::ExecutionResumed))
            .await
            .map(|_| true),
    }
}

/// Runs one race on a prepared execution and classifies it, checking that
/// the log and the token agree with what each side was told.
pub async fn race(
    store: &Arc<PostgresEventStore>,
    id: &ExecutionId,
    setup: Setup,
    path: Path,
) -> Outcome {
    let start = Arc::new(Barrier::new(2));
    let appender = {
        let (store, start, id) = (store.clone(), start.clone(), id.to_owned());
        tokio::spawn(async move {
            start.wait().await;
            answer(&store, &id, setup, path).await
        })
    };
    let acquirer = {
        let (store, start, id) = (store.clone(), start.clone(), id.to_owned());
        tokio::spawn(async move {
            start.wait().await;
            store
                .acquire_fence_if(
                    &id,
                    ParkExpectation {
                        fence: setup.token,
                        park_seq: setup.park_seq,
                    },
                )
                .await
        })
    };
    let answered = appender.await.expect("the appender task");
    let acquired = acquirer.await.expect("the acquirer task");
    let token = setup.token;
    let presented = path.fenced().then_some(token);
    let outcome = match (&answered, &acquired) {
        (Ok(true), Ok(AcquireOutcome::Stale { fence })) if *fence == token => Outcome::AppendWon,
        (Err(StoreError::StaleFence(stale)), Ok(AcquireOutcome::Acquired { fence }))
            if *fence == token + 1 && stale.presented == presented && stale.current == *fence =>
        {
            Outcome::AcquireWon
        }
        (Ok(true), Ok(AcquireOutcome::Acquired { .. })) => Outcome::BothWon,
        _ => {
            return Outcome::Other(format!(
                "{id} ({path:?}): the answer gave {answered:?}, the acquire gave {acquired:?}"
            ));
        }
    };
    let log = store.read_range(id, 1, None).await.expect("reads the log");
    let fence = store.current_fence(id).await.expect("reads the token");
    // Only what follows the park counts: a re-parked log has older resumes.
    let tail: Vec<_> = log.iter().filter(|e| e.sequence > setup.park_seq).collect();
    let resumes = tail
        .iter()
        .filter(|e| e.kind == KernelKind::ExecutionResumed.as_str())
        .count();
    let expected = match outcome {
        Outcome::AppendWon => (1, token),
        Outcome::AcquireWon => (0, token + 1),
        _ => (1, token + 1),
    };
    let batch_ok = path != Path::Batch
        || tail
            .iter()
            .filter(|e| e.kind == KernelKind::MessageConsumed.as_str())
            .count()
            == resumes;
    if (resumes, fence) == expected && batch_ok {
        outcome
    } else {
        Outcome::Other(format!(
            "{id} ({path:?}): {outcome:?}, yet the log holds {resumes} resume(s) and the token is {fence}: {log:?}"
        ))
    }
}

/// Runs `trials` spread over `lanes` tasks side by side (each lane runs its
/// trials one after another). With `stop_at_double`, every lane stops once
/// any lane has seen a double success.
pub async fn run(
    store: &Arc<PostgresEventStore>,
    trials: Vec<Trial>,
    lanes: usize,
    stop_at_double: bool,
) -> Tally {
    let lanes = lanes.max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let mut per_lane: Vec<Vec<Trial>> = vec![Vec::new(); lanes];
    for (index, trial) in trials.into_iter().enumerate() {
        per_lane[index % lanes].push(trial);
    }
    let tasks: Vec<_> = per_lane
        .into_iter()
        .map(|mine| {
            let (store, stop) = (store.clone(), stop.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                for trial in mine {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let execution = id(&trial.id);
                    let setup = match trial.setup {
                        Some(setup) => setup,
                        None => prepare(&store, &execution, trial.path).await,
                    };
                    let outcome = race(&store, &execution, setup, trial.path).await;
                    if stop_at_double && outcome == Outcome::BothWon {
                        stop.store(true, Ordering::SeqCst);
                    }
                    tally.add(outcome);
                }
                tally
            })
        })
        .collect();
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await.expect("a race lane"));
    }
    tally
}

/// `n` fresh trials of `path`, ids `<prefix>-<i>`.
pub fn fresh_trials(prefix: &str, path: Path, n: usize) -> Vec<Trial> {
    (0..n)
        .map(|i| Trial::fresh(format!("{prefix}-{i}"), path))
        .collect()
}
