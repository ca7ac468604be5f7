//! Crash safety, with real crashes: a process that dies inside a write
//! transaction leaves the log and the token exactly as before it, one that
//! dies right after `COMMIT` leaves them exactly as after it, and the store
//! keeps working either way. A store process killed with SIGKILL while it
//! appends in a loop, racing another, loses no acknowledged append and
//! leaves no gap and no duplicate.
//!
//! The aborting children write with a raw `rusqlite` connection, exactly as
//! the adapter's own transactions do (`BEGIN IMMEDIATE`, the head read, the
//! fence-row upsert, the event insert), because the adapter has no hook to
//! stop between its statements; `std::process::abort()` then ends the
//! process with no unwinding, no rollback and no close.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Instant;

use common::child::{self, Child};
use common::files::{self, Rng, side_files};
use common::{AT, TempDir, kernel, object};
use loomfence_core::{AcquireOutcome, JsonObject, KernelKind, ParkExpectation};
use loomfence_store::EventStore;
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use serde_json::json;

/// The child-role test's name, for `--exact`.
const CHILD_TEST: &str = "child";

/// SIGABRT, as `ExitStatus::signal` reports it.
const SIGABRT: i32 = 6;

/// SIGKILL.
const SIGKILL: i32 = 9;

/// Kill rounds.
const KILL_ROUNDS: u64 = 6;

/// The crashed transaction's payload: large enough that SQLite spills
/// dirty pages into the WAL before the commit (the page cache is set to a
/// few pages), so the uncommitted case leaves real frames for recovery to
/// ignore.
fn big_payload() -> JsonObject {
    object(json!({ "answer": "crash ".repeat(400_000) }))
}

/// The child: a no-op in a normal run. Roles:
/// - `abort-before-commit` / `abort-after-commit`: on `CRASH <id>`, run the
///   acquire-and-resume transaction on a raw connection, report the WAL's
///   size, and abort before (or right after) `COMMIT`;
/// - `looper`: on `LOOP <id> <writer>`, open the store and append to `<id>`
///   forever, printing `ACK <sequence> <n>` after each acknowledged append.
#[test]
fn child() {
    let Some(role) = child::role() else { return };
    child::say("READY");
    let Some(command) = child::command() else {
        return;
    };
    let words: Vec<&str> = command.split(' ').collect();
    match (role.as_str(), words.as_slice()) {
        ("abort-before-commit", ["CRASH", id]) => crash(&child::path(), id, false),
        ("abort-after-commit", ["CRASH", id]) => crash(&child::path(), id, true),
        ("looper", ["LOOP", id, writer]) => append_forever(&child::path(), id, writer),
        _ => panic!("{role} cannot run {command:?}"),
    }
}

/// The crashing transaction: what an acquire followed by a resume writes,
/// as the adapter writes it, in one `BEGIN IMMEDIATE`; then abort.
fn crash(path: &Path, id: &str, commit: bool) {
    let mut conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .expect("a raw connection");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    conn.pragma_update(None, "cache_size", 8)
        .expect("a tiny cache, so the big row spills");
    let payload = serde_json::to_string(&big_payload()).expect("serialises");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .expect("BEGIN IMMEDIATE");
    let head: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE execution_id = ?1",
            [id],
            |row| row.get(0),
        )
        .expect("reads the head");
    let token: i64 = tx
        .query_row(
            "INSERT INTO fences (execution_id, token) VALUES (?1, 1) \
             ON CONFLICT (execution_id) DO UPDATE SET token = token + 1 RETURNING token",
            [id],
            |row| row.get(0),
        )
        .expect("bumps the token");
    tx.execute(
        "INSERT INTO events (execution_id, sequence, kind, payload, metadata, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            id,
            head + 1,
            KernelKind::ExecutionResumed.as_str(),
            payload,
            json!({ "fence": token }).to_string(),
            AT
        ],
    )
    .expect("inserts the resume");
    if commit {
        tx.commit().expect("COMMIT");
    } else {
        // Leak the open transaction: no rollback may run before the abort.
        std::mem::forget(tx);
    }
    let wal = std::fs::metadata(files::with_suffix(path, "-wal")).map_or(0, |m| m.len());
    child::say(&format!("WAL {wal}"));
    std::process::abort();
}

/// Appends to `id` until killed, acknowledging each append on stdout.
fn append_forever(path: &Path, id: &str, writer: &str) {
    let rt = common::runtime();
    rt.block_on(async {
        let store = common::open(path).await;
        child::say("LOOPING");
        for n in 0_u64.. {
            let written = store
                .append(
                    &common::id(id),
                    kernel(KernelKind::StepStarted)
                        .with_payload(object(json!({ "writer": writer, "n": n }))),
                )
                .await
                .expect("appends");
            child::say(&format!("ACK {} {n}", written.sequence));
        }
    });
}

/// Parks `id`, acquires token 1, crashes a child in (or right after) its
/// acquire-and-resume transaction, and checks the state is exactly before
/// (or exactly after) it and the store keeps working.
fn abort_in_a_transaction(commit: bool) {
    let dir = TempDir::new(if commit {
        "abort-after"
    } else {
        "abort-before"
    });
    let path = dir.file("crash.db");
    let rt = common::runtime();
    let id = &common::id("crashed");
    let before = rt.block_on(async {
        let store = common::open(&path).await;
        let park_seq = common::park(&store, id).await;
        let first = store
            .acquire_fence_if(id, ParkExpectation { fence: 0, park_seq })
            .await
            .expect("acquires");
        assert_eq!(first, AcquireOutcome::Acquired { fence: 1 });
        common::Witness::capture(&store, id).await
    });
    // Start the crash from an empty WAL, so the WAL the child reports is
    // its own transaction's.
    files::raw(&path)
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoints");
    assert!(side_files(&path).is_empty(), "{:?}", side_files(&path));

    let role = if commit {
        "abort-after-commit"
    } else {
        "abort-before-commit"
    };
    let mut crasher = Child::spawn(CHILD_TEST, role, &path, dir.path());
    crasher.ready();
    crasher.send(&format!("CRASH {id}"));
    let wal = crasher.recv();
    let status = crasher.wait();
    assert_eq!(status.signal(), Some(SIGABRT), "{role}: {status}");
    let wal_bytes: u64 = wal
        .strip_prefix("WAL ")
        .and_then(|n| n.parse().ok())
        .expect("the WAL's size");
    assert!(
        wal_bytes > 0,
        "{role}: the transaction's pages reached the WAL before the crash"
    );

    rt.block_on(async {
        let store = common::open(&path).await;
        let common::Witness {
            events: log, fence, ..
        } = common::Witness::capture(&store, id).await;
        let park_seq = if commit {
            let common::Witness {
                events: mut expected,
                fence: token,
                ..
            } = before.clone();
            let resume = log.last().expect("a log");
            assert_eq!(
                log.len(),
                expected.len() + 1,
                "{role}: exactly one more event"
            );
            assert_eq!(fence, token + 1, "{role}: the token moved once");
            assert_eq!(resume.kind, KernelKind::ExecutionResumed.as_str());
            assert_eq!(resume.fence(), Ok(Some(token + 1)));
            assert!(resume.payload == big_payload(), "{role}: the whole payload");
            expected.push(resume.clone());
            assert_eq!(log, expected, "{role}: and nothing else changed");
            // The committed resume answered the park: park again to go on.
            store
                .append(id, kernel(KernelKind::ExecutionSuspended).with_fence(fence))
                .await
                .expect("parks again")
                .sequence
        } else {
            assert_eq!(
                (&log, fence),
                (&before.events, before.fence),
                "{role}: exactly as before"
            );
            2
        };
        let current = store.current_fence(id).await.expect("reads");
        let next = store
            .acquire_fence_if(
                id,
                ParkExpectation {
                    fence: current,
                    park_seq,
                },
            )
            .await
            .expect("a conditional acquire after the crash");
        assert_eq!(next, AcquireOutcome::Acquired { fence: current + 1 });
        let resumed = store
            .append(
                id,
                kernel(KernelKind::ExecutionResumed).with_fence(current + 1),
            )
            .await
            .expect("an append after the crash");
        assert_eq!(resumed.sequence, park_seq + 1);
        println!(
            "{role}: WAL held {wal_bytes} bytes at the abort; reopened {}; acquire and append work",
            if commit {
                "exactly as after"
            } else {
                "exactly as before"
            }
        );
    });
    assert_eq!(files::integrity(&path), "ok");
}

/// A process that dies inside its write transaction changed nothing.
#[test]
fn an_abort_before_commit_leaves_the_log_and_token_as_before() {
    abort_in_a_transaction(false);
}

/// A process that dies right after its `COMMIT` lost nothing.
#[test]
fn an_abort_after_commit_leaves_the_log_and_token_as_after() {
    abort_in_a_transaction(true);
}

/// What the log says about one writer's appends.
#[derive(Debug, Default)]
struct Writer {
    /// `(sequence, n)` the writer acknowledged.
    acked: Vec<(u64, u64)>,
    /// `(sequence, n)` of its events in the log.
    logged: Vec<(u64, u64)>,
}

/// Parses `ACK <sequence> <n>` answers (skipping `LOOPING`).
fn acks(lines: impl IntoIterator<Item = String>) -> Vec<(u64, u64)> {
    lines
        .into_iter()
        .filter(|line| line != "LOOPING")
        .map(|line| {
            let mut words = line.split(' ');
            assert_eq!(words.next(), Some("ACK"), "{line}");
            let mut number = || {
                words
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or_else(|| panic!("a number in {line:?}"))
            };
            (number(), number())
        })
        .collect()
}

/// Kills `child` with SIGKILL; returns the acknowledgements it wrote before
/// it died.
fn killed(child: &mut Child) -> Vec<(u64, u64)> {
    let (status, rest) = child.kill();
    assert_eq!(status.signal(), Some(SIGKILL), "{}: {status}", child.name());
    acks(rest)
}

/// Reads acknowledgements from `child` until it has acknowledged `count`.
fn acks_until(child: &Child, seen: &mut Vec<(u64, u64)>, count: usize) {
    while seen.len() < count {
        seen.extend(acks([child.recv()]));
    }
}

/// Two store processes append to one execution in a loop; one is killed
/// with SIGKILL mid-stream, the other a little later. After each round the
/// log is contiguous from 1, each writer's events are its own 0, 1, 2, …
/// with no gap and no duplicate, and every acknowledged append is at the
/// sequence it was acknowledged at (at most one more, unacknowledged,
/// commit per writer).
#[test]
fn sigkill_mid_append_loses_nothing_acknowledged() {
    let started = Instant::now();
    let dir = TempDir::new("sigkill");
    let path = dir.file("kill.db");
    let rt = common::runtime();
    drop(rt.block_on(common::open(&path)));
    let mut rng = Rng::new(0x5191_c111);
    let mut report = Vec::new();
    for round in 0..KILL_ROUNDS {
        let id = format!("looped-{round}");
        let mut a = Child::spawn(CHILD_TEST, "looper", &path, dir.path());
        let mut b = Child::spawn(CHILD_TEST, "looper", &path, dir.path());
        a.ready();
        b.ready();
        a.send(&format!("LOOP {id} a"));
        b.send(&format!("LOOP {id} b"));
        assert_eq!(a.recv(), "LOOPING");
        assert_eq!(b.recv(), "LOOPING");
        let (mut acked_a, mut acked_b) = (Vec::new(), Vec::new());
        let kill_a_at = usize::try_from(rng.between(5, 80)).expect("small");
        acks_until(&a, &mut acked_a, kill_a_at);
        acked_a.extend(killed(&mut a));
        // B carries on past A's death (A may have died holding the write
        // lock): it must commit several appends after everything A
        // committed, then it dies too.
        let head_at_death: i64 = files::raw(&path)
            .query_row(
                "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE execution_id = ?1",
                [&id],
                |row| row.get(0),
            )
            .expect("reads the head");
        let head_at_death = u64::try_from(head_at_death).expect("a sequence");
        while acked_b.last().map_or(0, |&(sequence, _)| sequence) <= head_at_death + 5 {
            acked_b.extend(acks([b.recv()]));
        }
        acked_b.extend(killed(&mut b));

        let log = rt.block_on(async {
            let store = common::open(&path).await;
            store
                .read_range(&common::id(&id), 1, None)
                .await
                .expect("reads")
        });
        let sequences: Vec<u64> = log.iter().map(|e| e.sequence).collect();
        let contiguous: Vec<u64> = (1..=log.len() as u64).collect();
        assert_eq!(sequences, contiguous, "round {round}: contiguous from 1");
        let mut writers = [Writer::default(), Writer::default()];
        writers[0].acked = acked_a;
        writers[1].acked = acked_b;
        for event in &log {
            let slot = match event.payload["writer"].as_str() {
                Some("a") => 0,
                Some("b") => 1,
                other => panic!("round {round}: an event from {other:?}"),
            };
            let n = event.payload["n"].as_u64().expect("a counter");
            writers[slot].logged.push((event.sequence, n));
        }
        let mut extras = Vec::new();
        for (name, writer) in ["a", "b"].iter().zip(&writers) {
            let counters: Vec<u64> = writer.logged.iter().map(|&(_, n)| n).collect();
            let expected: Vec<u64> = (0..counters.len() as u64).collect();
            assert_eq!(
                counters, expected,
                "round {round}: writer {name}'s appends, each once, in order"
            );
            assert_eq!(
                writer.logged[..writer.acked.len()],
                writer.acked[..],
                "round {round}: every acknowledged append of {name} is where it was acknowledged"
            );
            let extra = writer.logged.len() - writer.acked.len();
            assert!(
                extra <= 1,
                "round {round}: {name} has {extra} unacknowledged commits"
            );
            extras.push(extra);
        }
        assert_eq!(files::integrity(&path), "ok", "round {round}");
        report.push(format!(
            "round {round}: {} events; a killed after {} acks (+{} unacked commit), b after {} (+{})",
            log.len(),
            writers[0].acked.len(),
            extras[0],
            writers[1].acked.len(),
            extras[1]
        ));
    }
    for line in report {
        println!("sigkill {line}");
    }
    println!("sigkill: {KILL_ROUNDS} rounds [{:.1?}]", started.elapsed());
}
