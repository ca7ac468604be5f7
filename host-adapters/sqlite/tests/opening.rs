//! Opening: several processes opening the same new file at once all boot
//! and lose nothing; opening again is idempotent; a file of a newer schema
//! is refused and left byte for byte as it was.

mod common;

use std::time::Instant;

use common::child::{self, Child};
use common::files::{self, bytes, side_files};
use common::{TempDir, kernel, object};
use loomfence_core::KernelKind;
use loomfence_sqlite::{OpenError, SCHEMA_VERSION, SqliteEventStore, SqliteOptions};
use loomfence_store::EventStore;
use serde_json::json;

/// Fresh files raced over.
const ROUNDS: usize = 50;

/// Processes opening each fresh file at once.
const OPENERS: usize = 4;

/// Events each opener appends to its own execution.
const EVENTS: u64 = 5;

/// The child-role test's name, for `--exact`.
const CHILD_TEST: &str = "child";

/// The child: a no-op in a normal run. As an `opener` it says `READY`,
/// waits for `GO <id>`, then opens the file (which may not exist yet),
/// appends [`EVENTS`] events to `<id>` one by one, answers `DONE` (or
/// `ERR ...`) and exits.
#[test]
fn child() {
    let Some(role) = child::role() else { return };
    assert_eq!(role, "opener");
    child::say("READY");
    let Some(command) = child::command() else {
        return;
    };
    let id = common::id(command.strip_prefix("GO ").expect("a GO command"));
    let rt = common::runtime();
    let answer = rt.block_on(async {
        let store = SqliteEventStore::open(child::path(), SqliteOptions::default())
            .await
            .map_err(|e| format!("open: {e:?}"))?;
        for n in 0..EVENTS {
            store
                .append(
                    &id,
                    kernel(KernelKind::StepStarted).with_payload(object(json!({ "n": n }))),
                )
                .await
                .map_err(|e| format!("append {n}: {e:?}"))?;
        }
        Ok::<_, String>(())
    });
    child::say(&answer.map_or_else(|e| format!("ERR {e}"), |()| "DONE".to_owned()));
}

/// [`OPENERS`] processes, released together, open the same NEW file and
/// append to their own executions; [`ROUNDS`] fresh files. Every child
/// boots and succeeds, every event is there, and the file is sound, in WAL
/// mode, at the current schema version. All rounds run before the verdict,
/// so a failure reports how often it happened.
#[test]
fn processes_opening_one_new_file_at_once_all_boot_and_lose_nothing() {
    let started = Instant::now();
    let dir = TempDir::new("opening");
    let rt = common::runtime();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let path = dir.file(&format!("fresh-{round}.db"));
        assert!(!path.exists());
        let mut openers: Vec<Child> = (0..OPENERS)
            .map(|_| Child::spawn(CHILD_TEST, "opener", &path, dir.path()))
            .collect();
        for opener in &openers {
            opener.ready();
        }
        for (n, opener) in openers.iter_mut().enumerate() {
            opener.send(&format!("GO opener-{n}"));
        }
        let mut booted = Vec::new();
        for (n, opener) in openers.iter_mut().enumerate() {
            let answer = opener.recv();
            let status = opener.finish();
            assert!(
                status.success(),
                "round {round}: {} {status}",
                opener.name()
            );
            if answer == "DONE" {
                booted.push(n);
            } else {
                failures.push(format!("round {round}: {}: {answer}", opener.name()));
            }
        }
        assert_eq!(files::integrity(&path), "ok", "round {round}");
        assert_eq!(
            files::pragma(&path, "user_version"),
            SCHEMA_VERSION.to_string()
        );
        assert_eq!(files::pragma(&path, "journal_mode"), "wal");
        rt.block_on(async {
            let store = common::open(&path).await;
            for &n in &booted {
                let id = format!("opener-{n}");
                let log = store
                    .read_range(&common::id(&id), 1, None)
                    .await
                    .expect("reads");
                let seen: Vec<_> = log
                    .iter()
                    .map(|e| (e.sequence, e.payload["n"].clone()))
                    .collect();
                let expected: Vec<_> = (0..EVENTS).map(|k| (k + 1, json!(k))).collect();
                assert_eq!(seen, expected, "round {round}: {id}'s events");
            }
        });
        let (events, _) = files::row_counts(&path);
        assert_eq!(
            u64::try_from(events).expect("a count"),
            booted.len() as u64 * EVENTS,
            "round {round}: no stray rows"
        );
    }
    println!(
        "{ROUNDS} fresh files, {OPENERS} processes opening each at once: {} of {} opens failed [{:.1?}]",
        failures.len(),
        ROUNDS * OPENERS,
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {} racing opens failed: {failures:#?}",
        failures.len(),
        ROUNDS * OPENERS
    );
}

/// Opening a file that is already open, and again after closing, is a
/// no-op: no error, the same schema, the data intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_again_is_idempotent() {
    let dir = TempDir::new("reopen");
    let path = dir.file("store.db");
    let first = common::open(&path).await;
    let park_seq = common::park(&first, &common::id("kept")).await;
    assert_eq!(
        first
            .acquire_fence(&common::id("kept"))
            .await
            .expect("acquires"),
        1
    );
    let schema = || {
        let conn = files::raw(&path);
        let mut statement = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY name")
            .expect("prepares");
        statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                ))
            })
            .expect("queries")
            .collect::<Result<Vec<_>, _>>()
            .expect("reads the schema")
    };
    let tables = schema();
    let before = common::Witness::capture(&first, &common::id("kept")).await;

    // Again while the first is open, then both write.
    let second = common::open(&path).await;
    assert_eq!(
        common::Witness::capture(&second, &common::id("kept")).await,
        before
    );
    assert_eq!(
        second
            .acquire_fence(&common::id("kept"))
            .await
            .expect("acquires"),
        2
    );
    assert_eq!(
        first
            .current_fence(&common::id("kept"))
            .await
            .expect("reads"),
        2
    );
    drop((first, second));

    // And again after both are closed, several times.
    for _ in 0..3 {
        let again = common::open(&path).await;
        let now = common::Witness::capture(&again, &common::id("kept")).await;
        assert_eq!((&now.events, now.fence), (&before.events, 2));
        assert_eq!(log_len(&again).await, park_seq);
    }
    assert_eq!(schema(), tables, "reopening changed no table");
    assert_eq!(
        files::pragma(&path, "user_version"),
        SCHEMA_VERSION.to_string()
    );
    assert_eq!(files::integrity(&path), "ok");
}

/// The length of `kept`'s log.
async fn log_len(store: &SqliteEventStore) -> u64 {
    store
        .read_range(&common::id("kept"), 1, None)
        .await
        .expect("reads")
        .len() as u64
}

/// A database whose `user_version` is 99 (set by a raw connection) is
/// refused with `NewerSchema { found: 99 }`, and the file is byte for byte
/// what it was, whether it is in WAL mode (written by this store) or in
/// rollback mode (written by something else). No side file stays behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = TempDir::new("newer");

    // A store's own file, upgraded "by a newer build".
    let wal = dir.file("wal.db");
    {
        let store = common::open(&wal).await;
        common::park(&store, &common::id("old")).await;
    }
    files::raw(&wal)
        .pragma_update(None, "user_version", 99)
        .expect("sets user_version");
    // A rollback-journal file from elsewhere.
    let rollback = dir.file("rollback.db");
    {
        let conn = rusqlite::Connection::open(&rollback).expect("creates");
        conn.execute_batch(
            "CREATE TABLE events (x); INSERT INTO events VALUES (1); PRAGMA user_version = 99;",
        )
        .expect("writes");
    }

    for path in [wal, rollback] {
        assert!(
            side_files(&path).is_empty(),
            "{}: clean before",
            path.display()
        );
        let before = bytes(&path);
        let refused = SqliteEventStore::open(&path, SqliteOptions::default()).await;
        match refused {
            Err(OpenError::NewerSchema {
                found: 99,
                supported,
                ..
            }) => assert_eq!(supported, SCHEMA_VERSION),
            other => panic!(
                "{}: expected NewerSchema(99), got {other:?}",
                path.display()
            ),
        }
        assert!(
            bytes(&path) == before,
            "{}: the refused file changed",
            path.display()
        );
        assert_eq!(
            side_files(&path),
            Vec::<(String, u64)>::new(),
            "{}: side files left behind",
            path.display()
        );
        assert_eq!(files::pragma(&path, "user_version"), "99");
    }
}

/// Another application's SQLite database (tables, but no loomfence schema
/// version) is refused with `Foreign` and left byte for byte as it was, even
/// when one of its tables happens to be called `events`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_applications_database_is_refused_and_left_untouched() {
    let dir = TempDir::new("foreign");
    let path = dir.file("theirs.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("creates");
        conn.execute_batch("CREATE TABLE events (x); INSERT INTO events VALUES (1);")
            .expect("writes");
    }
    let before = bytes(&path);
    let refused = SqliteEventStore::open(&path, SqliteOptions::default()).await;
    assert!(
        matches!(refused, Err(OpenError::Foreign { .. })),
        "{refused:?}"
    );
    assert!(bytes(&path) == before, "the refused file changed");
    assert_eq!(side_files(&path), Vec::<(String, u64)>::new());
    assert_eq!(files::pragma(&path, "user_version"), "0");
}
