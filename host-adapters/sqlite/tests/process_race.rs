//! The kernel's promise across OS processes on one file: an answering append
//! in one process races `acquire_fence_if` on the same park in another, and
//! either the append lands and the acquire is stale, or the acquire wins and
//! the append is refused with `StaleFence`; never both, never neither.
//!
//! Two long-lived children (this test binary re-run, see
//! `common::child`) each open the shared file with their own
//! `SqliteEventStore`. Per trial the parent parks a fresh execution through
//! a third store on the same file, takes the first token on fenced paths,
//! then writes both commands (one line each) before reading either answer,
//! alternating which child hears first. Counts are printed
//! (`--nocapture`); both orders must occur, or the race proved nothing.
//!
//! The last test shows the check bites: an acquirer that reads the token and
//! the tail and then bumps in a second transaction (the race the single
//! `BEGIN IMMEDIATE` closes) must be caught winning alongside the append.

mod common;

use std::fmt;
use std::time::Instant;

use common::child::{self, Child};
use common::{TempDir, kernel};
use loomfence_core::backend::decide_acquire_if;
use loomfence_core::{
    AcquireOutcome, ConditionalAppend, Envelope, ExecutionId, KernelKind, ParkExpectation,
};
use loomfence_sqlite::SqliteEventStore;
use loomfence_store::{EventStore, StoreError};

/// Trials per safe path.
const TRIALS: usize = 600;

/// The unsafe variant runs at least this many trials, to measure its hit
/// rate...
const UNSAFE_MIN: usize = 100;

/// ...and at most this many while it has found no double success.
const UNSAFE_CAP: usize = 2000;

/// The child-role test's name, for `--exact`.
const CHILD_TEST: &str = "child";

/// The child: a no-op in a normal run; with a role, it opens the shared file
/// and serves race commands until its stdin closes.
///
/// Roles: `appender` answers the `APPEND*` commands; `acquirer` answers
/// `ACQUIRE` with the store's conditional acquire; `unsafe-acquirer` answers
/// it with a check and a bump in two separate transactions.
#[test]
fn child() {
    let Some(role) = child::role() else { return };
    let rt = common::runtime();
    let store = rt.block_on(common::open(&child::path()));
    child::say("READY");
    child::serve(|line| rt.block_on(answer(&store, &role, line)));
}

/// One command's answer.
async fn answer(store: &SqliteEventStore, role: &str, line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let number = |word: &str| -> u64 { word.parse().expect("a number") };
    let id = |word: &str| common::id(word);
    match (role, words.as_slice()) {
        ("appender", ["APPEND", execution, token]) => appended(
            store
                .append(
                    &id(execution),
                    kernel(KernelKind::ExecutionResumed).with_fence(number(token)),
                )
                .await
                .map(|written| vec![written]),
        ),
        ("appender", ["APPEND_BATCH", execution, token]) => {
            let token = number(token);
            appended(
                store
                    .append_many(
                        &id(execution),
                        vec![
                            kernel(KernelKind::MessageConsumed).with_fence(token),
                            kernel(KernelKind::ExecutionResumed).with_fence(token),
                        ],
                    )
                    .await,
            )
        }
        ("appender", ["APPEND_IF_PARKED", execution, park_seq]) => match store
            .append_if_parked(
                &id(execution),
                number(park_seq),
                vec![kernel(KernelKind::ExecutionResumed)],
            )
            .await
        {
            Ok(ConditionalAppend::Appended(written)) => appended(Ok(written)),
            Ok(ConditionalAppend::ParkAnswered) => "PARK_ANSWERED".to_owned(),
            Err(e) => appended(Err(e)),
        },
        ("acquirer", ["ACQUIRE", execution, fence, park_seq]) => acquired(
            store
                .acquire_fence_if(
                    &id(execution),
                    ParkExpectation {
                        fence: number(fence),
                        park_seq: number(park_seq),
                    },
                )
                .await,
        ),
        ("unsafe-acquirer", ["ACQUIRE", execution, fence, park_seq]) => acquired(
            unsafe_acquire(
                store,
                &id(execution),
                ParkExpectation {
                    fence: number(fence),
                    park_seq: number(park_seq),
                },
            )
            .await,
        ),
        _ => format!("ERR {role} cannot answer {line:?}"),
    }
}

/// The conditional acquire done WRONG, on purpose: the check (token and
/// tail, read outside any write) and the bump (an unconditional acquire)
/// are two transactions, so an answer can land between them.
async fn unsafe_acquire(
    store: &SqliteEventStore,
    id: &ExecutionId,
    expect: ParkExpectation,
) -> Result<AcquireOutcome, StoreError> {
    let current = store.current_fence(id).await?;
    let tail = store.read_range(id, expect.park_seq + 1, None).await?;
    let answered = tail.iter().any(Envelope::is_answering);
    match decide_acquire_if(current, expect, answered) {
        AcquireOutcome::Acquired { .. } => Ok(AcquireOutcome::Acquired {
            fence: store.acquire_fence(id).await?,
        }),
        stale => Ok(stale),
    }
}

/// An append's answer: `OK <last sequence>`, `STALE_FENCE <current>` or
/// `ERR ...`.
fn appended(result: Result<Vec<Envelope>, StoreError>) -> String {
    match result {
        Ok(written) => format!("OK {}", written.last().map_or(0, |e| e.sequence)),
        Err(StoreError::StaleFence(stale)) => format!("STALE_FENCE {}", stale.current),
        Err(e) => format!("ERR {e:?}"),
    }
}

/// An acquire's answer: `ACQUIRED <token>`, `STALE <token>` or `ERR ...`.
fn acquired(result: Result<AcquireOutcome, StoreError>) -> String {
    match result {
        Ok(AcquireOutcome::Acquired { fence }) => format!("ACQUIRED {fence}"),
        Ok(AcquireOutcome::Stale { fence }) => format!("STALE {fence}"),
        Err(e) => format!("ERR {e:?}"),
    }
}

/// Which answering write races the conditional acquire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// `append` of `EXECUTION_RESUMED` under the token of an earlier
    /// conditional acquire, against `acquire_fence_if({t, park})`.
    Single,
    /// `append_many([MESSAGE_CONSUMED, EXECUTION_RESUMED])` under `t`.
    Batch,
    /// `append_if_parked(park, [EXECUTION_RESUMED])`, unfenced at token 0,
    /// against `acquire_fence_if({0, park})`.
    IfParked,
}

/// Outcome counts.
#[derive(Debug, Default)]
struct Tally {
    /// Trials run.
    trials: u64,
    /// The answer landed, the acquire was stale.
    append_won: u64,
    /// The acquire won, the answer was refused.
    acquire_won: u64,
    /// Both succeeded.
    both_won: u64,
    /// Anything else (neither, an error, a log that contradicts the
    /// answers).
    other: u64,
    /// Of `append_won`, the trials where the appender heard first.
    append_won_heard_first: u64,
    /// Of `acquire_won`, the trials where the acquirer heard first.
    acquire_won_heard_first: u64,
    /// The first few `other` descriptions.
    examples: Vec<String>,
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} trials: append won {} ({} when told first), acquire won {} ({} when told first), BOTH won {}, other {}",
            self.trials,
            self.append_won,
            self.append_won_heard_first,
            self.acquire_won,
            self.acquire_won_heard_first,
            self.both_won,
            self.other
        )
    }
}

/// The parent's side: its own store on the shared file and the two
/// children.
struct Race {
    /// The parent's runtime.
    rt: tokio::runtime::Runtime,
    /// The parent's store on the shared file (setup and checks).
    store: SqliteEventStore,
    /// Answers the park.
    appender: Child,
    /// Acquires conditionally (or unsafely).
    acquirer: Child,
    /// Names this race's executions.
    label: String,
    /// Holds the file; dropped last.
    _dir: TempDir,
}

impl Race {
    /// Starts the two children on a fresh file.
    fn start(label: &str, acquirer_role: &str) -> Self {
        let dir = TempDir::new(label);
        let path = dir.file("race.db");
        let rt = common::runtime();
        // The parent creates the file first, so the children's opens find
        // it migrated (racing opens are `opening.rs`'s subject).
        let store = rt.block_on(common::open(&path));
        let appender = Child::spawn(CHILD_TEST, "appender", &path, dir.path());
        let acquirer = Child::spawn(CHILD_TEST, acquirer_role, &path, dir.path());
        appender.ready();
        acquirer.ready();
        Self {
            rt,
            store,
            appender,
            acquirer,
            label: label.to_owned(),
            _dir: dir,
        }
    }

    /// Runs `trials` trials of `path` (stopping early once `stop` says so)
    /// and counts the outcomes.
    fn run(&mut self, path: Path, trials: usize, stop: impl Fn(&Tally) -> bool) -> Tally {
        let mut tally = Tally::default();
        for n in 0..trials {
            if stop(&tally) {
                break;
            }
            let appender_first = n % 2 == 0;
            let id = format!("{}-{path:?}-{n}", self.label);
            let outcome = self.trial(&id, path, appender_first);
            tally.trials += 1;
            match outcome {
                Ok(Winner::Append) => {
                    tally.append_won += 1;
                    tally.append_won_heard_first += u64::from(appender_first);
                }
                Ok(Winner::Acquire) => {
                    tally.acquire_won += 1;
                    tally.acquire_won_heard_first += u64::from(!appender_first);
                }
                Ok(Winner::Both) => tally.both_won += 1,
                Err(what) => {
                    tally.other += 1;
                    if tally.examples.len() < 5 {
                        tally.examples.push(what);
                    }
                }
            }
        }
        tally
    }

    /// One trial on the fresh execution `id`.
    fn trial(&mut self, id: &str, path: Path, appender_first: bool) -> Result<Winner, String> {
        let execution = common::id(id);
        let (park_seq, token) = self.rt.block_on(async {
            let park_seq = common::park(&self.store, &execution).await;
            let token = if path == Path::IfParked {
                0
            } else {
                self.store
                    .acquire_fence_if(&execution, ParkExpectation { fence: 0, park_seq })
                    .await
                    .expect("the first, uncontended acquire")
                    .fence()
            };
            (park_seq, token)
        });
        let append = match path {
            Path::Single => format!("APPEND {id} {token}"),
            Path::Batch => format!("APPEND_BATCH {id} {token}"),
            Path::IfParked => format!("APPEND_IF_PARKED {id} {park_seq}"),
        };
        let acquire = format!("ACQUIRE {id} {token} {park_seq}");
        if appender_first {
            self.appender.send(&append);
            self.acquirer.send(&acquire);
        } else {
            self.acquirer.send(&acquire);
            self.appender.send(&append);
        }
        let appended = self.appender.recv();
        let acquired = self.acquirer.recv();
        let answers = format!("{id}: the append answered {appended:?}, the acquire {acquired:?}");

        let appended_ok = appended.starts_with("OK ");
        let winner = match (appended_ok, acquired.split_once(' ')) {
            (true, Some(("STALE", fence))) if fence == token.to_string() => Winner::Append,
            (false, Some(("ACQUIRED", fence)))
                if fence == (token + 1).to_string()
                    && appended == format!("STALE_FENCE {fence}") =>
            {
                Winner::Acquire
            }
            (true, Some(("ACQUIRED", _))) => Winner::Both,
            _ => return Err(answers),
        };

        // The log and the token must agree with what each side was told.
        let common::Witness {
            events: log, fence, ..
        } = self
            .rt
            .block_on(common::Witness::capture(&self.store, &execution));
        let tail: Vec<_> = log.iter().filter(|e| e.sequence > park_seq).collect();
        let count = |kind: KernelKind| tail.iter().filter(|e| e.kind == kind.as_str()).count();
        let resumes = count(KernelKind::ExecutionResumed);
        let expected = match winner {
            Winner::Append => (1, token),
            Winner::Acquire => (0, token + 1),
            Winner::Both => (1, token + 1),
        };
        let batch_ok = path != Path::Batch || count(KernelKind::MessageConsumed) == resumes;
        if (resumes, fence) == expected
            && batch_ok
            && tail.len() == resumes * (1 + usize::from(path == Path::Batch))
        {
            Ok(winner)
        } else {
            Err(format!(
                "{answers}, yet the tail holds {resumes} resume(s) and the token is {fence}: {log:?}"
            ))
        }
    }
}

/// Who won a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Winner {
    /// The answer landed, the acquire was stale.
    Append,
    /// The acquire won, the answer was refused.
    Acquire,
    /// Both: the bug.
    Both,
}

/// Races `path` `TRIALS` times between two processes; exactly one side wins
/// every trial, and both orders occur.
fn exclusive(path: Path) {
    let started = Instant::now();
    let label = format!("race-{path:?}").to_lowercase();
    let mut race = Race::start(&label, "acquirer");
    let tally = race.run(path, TRIALS, |_| false);
    println!(
        "two-process race {path:?}: {tally} [{:.1?}]",
        started.elapsed()
    );
    assert!(
        tally.both_won == 0 && tally.other == 0,
        "{path:?}: exactly one side must win every trial: {tally}; examples: {:#?}",
        tally.examples
    );
    assert_eq!(tally.trials, TRIALS as u64);
    assert!(
        tally.append_won > 0 && tally.acquire_won > 0,
        "{path:?}: only one order occurred ({tally}); the race did not race"
    );
}

/// `append` of `EXECUTION_RESUMED` under `t` in one process against
/// `acquire_fence_if({t, park})` in another.
#[test]
fn single_append_and_conditional_acquire_in_two_processes_never_both_win() {
    exclusive(Path::Single);
}

/// The inbox batch `[MESSAGE_CONSUMED, EXECUTION_RESUMED]` under `t` against
/// `acquire_fence_if({t, park})`.
#[test]
fn batch_append_and_conditional_acquire_in_two_processes_never_both_win() {
    exclusive(Path::Batch);
}

/// `append_if_parked`, unfenced at token 0, against
/// `acquire_fence_if({0, park})`.
#[test]
fn park_conditional_append_and_conditional_acquire_in_two_processes_never_both_win() {
    exclusive(Path::IfParked);
}

/// The same race as `single_...`, with an acquirer that checks and bumps in
/// two transactions: it must be caught winning alongside the append, which
/// shows the trials above would catch a check that is not atomic with its
/// bump.
#[test]
fn an_acquire_that_checks_and_bumps_in_two_transactions_is_caught_double_winning() {
    let started = Instant::now();
    let mut race = Race::start("race-unsafe", "unsafe-acquirer");
    let tally = race.run(Path::Single, UNSAFE_CAP, |tally| {
        tally.trials >= UNSAFE_MIN as u64 && tally.both_won > 0
    });
    #[allow(clippy::cast_precision_loss)]
    let rate = tally.both_won as f64 / tally.trials as f64;
    println!(
        "two-process race, UNSAFE acquirer: {tally}; double-success rate {:.1}% [{:.1?}]",
        100.0 * rate,
        started.elapsed()
    );
    assert_eq!(
        tally.other, 0,
        "only the three outcomes are possible: {:#?}",
        tally.examples
    );
    assert!(
        tally.both_won > 0,
        "the unsafe acquirer never double-won in {} trials: the race harness would not catch a non-atomic acquire ({tally})",
        tally.trials
    );
}
