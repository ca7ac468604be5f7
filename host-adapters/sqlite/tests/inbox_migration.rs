//! A file written before the inbox (its event log, fences and timers, no
//! `inbox` table): opening adds the table, the rows already there stay,
//! and a send works. An `inbox` table that is not ours is refused with
//! the file untouched, and two processes opening one older file at the
//! same moment both boot and both send.

mod common;

use std::path::Path;
use std::time::Instant;

use common::child::{self, Child};
use common::files::{self, raw};
use common::{TempDir, id};
use loomfence_core::inbox::{
    DEFAULT_INTENT_DELAY_MS, MAX_PENDING_LIMIT, Message, MessageKey, Sent,
};
use loomfence_core::timer::{DueFilter, MAX_DUE_LIMIT, MAX_TIMER_MS, TimerRow};
use loomfence_sqlite::{OpenError, SqliteOptions, SqliteTimerStore};
use loomfence_store::{EventStore, InboxStore, TimerStore};
use serde_json::json;

/// The base time of the rows, in ms.
const T0: i64 = 1_700_000_000_000;

/// Fresh older files raced over.
const ROUNDS: usize = 10;

/// Processes opening each file at once.
const OPENERS: usize = 2;

/// The child-role test's name, for `--exact`.
const CHILD_TEST: &str = "child";

/// The timer row the older file holds.
fn old_row() -> TimerRow {
    TimerRow::wake(id("kept"), T0)
}

/// The catalog objects of the inbox (its table, its indexes, the unique
/// key's automatic one, and `AUTOINCREMENT`'s bookkeeping table): what an
/// older file lacks.
fn is_inbox(name: &str) -> bool {
    name.starts_with("inbox")
        || name.starts_with("sqlite_autoindex_inbox")
        || name == "sqlite_sequence"
}

/// Makes `path` a file as the build before the inbox wrote it: the schema
/// a store creates today, object for object, without the inbox's table,
/// index and the `AUTOINCREMENT` bookkeeping table, at the same version,
/// holding a parked execution `kept` and one timer row. The schema is
/// copied from a file the current code created next to it, so the older
/// file is exactly today's minus the inbox.
async fn older_file(dir: &TempDir, path: &Path) {
    let template = dir.file(&format!(
        "template-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("db")
    ));
    {
        let store = common::open(&template).await;
        common::park(&store, &id("kept")).await;
        store
            .timers()
            .schedule(&old_row())
            .await
            .expect("schedules");
    }
    let from = raw(&template);
    let objects: Vec<(String, String)> = {
        let mut statement = from
            .prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
            .expect("prepares");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads the catalog")
    };
    let version = files::pragma(&template, "user_version");
    drop(from);
    let to = rusqlite::Connection::open(path).expect("creates the older file");
    to.execute_batch("PRAGMA journal_mode = WAL")
        .expect("WAL, as a store's file is");
    for (name, sql) in objects.iter().filter(|(name, _)| !is_inbox(name)) {
        to.execute_batch(sql)
            .unwrap_or_else(|e| panic!("creates {name}: {e}"));
    }
    to.execute_batch(&format!(
        "PRAGMA user_version = {version};
         ATTACH DATABASE '{}' AS template;
         INSERT INTO main.events SELECT * FROM template.events;
         INSERT INTO main.fences SELECT * FROM template.fences;
         INSERT INTO main.timers SELECT * FROM template.timers;
         DETACH DATABASE template;",
        template.display()
    ))
    .expect("copies the rows");
    drop(to);
    assert!(
        catalog(path).iter().all(|name| !is_inbox(name)),
        "no inbox before: {:?}",
        catalog(path)
    );
}

/// The names in the file's catalog.
fn catalog(path: &Path) -> Vec<String> {
    let conn = raw(path);
    let mut statement = conn
        .prepare("SELECT name FROM sqlite_master ORDER BY name")
        .expect("prepares");
    statement
        .query_map([], |row| row.get(0))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads the catalog")
}

/// A message of `execution` on channel `c`.
fn message(execution: &str, message_id: &str) -> Message {
    Message {
        key: MessageKey::new(id(execution), "c", message_id).expect("a key"),
        payload: json!({"from": message_id}),
        sent_at: T0,
    }
}

/// Sends `message` with its default intent.
async fn send(store: &SqliteTimerStore, message: &Message) -> Result<Sent, String> {
    let intent = message
        .intent(DEFAULT_INTENT_DELAY_MS)
        .map_err(|e| e.to_string())?;
    store
        .send(message, &intent)
        .await
        .map_err(|e| format!("send {:?}: {e:?}", message.key))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_from_before_the_inbox_gains_the_table_keeps_its_rows_and_takes_a_send() {
    let dir = TempDir::new("inbox-older");
    let path = dir.file("older.db");
    older_file(&dir, &path).await;
    let before = catalog(&path);

    let store = SqliteTimerStore::open(&path, SqliteOptions::default())
        .await
        .expect("opens the older file");
    let after = catalog(&path);
    for name in [
        "inbox",
        "inbox_pending",
        "sqlite_autoindex_inbox_1",
        "sqlite_sequence",
    ] {
        assert!(after.iter().any(|n| n == name), "{name} added: {after:?}");
    }
    assert_eq!(
        after
            .iter()
            .filter(|name| !is_inbox(name))
            .collect::<Vec<_>>(),
        before.iter().collect::<Vec<_>>(),
        "nothing else changed"
    );
    assert_eq!(
        store
            .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .expect("lists"),
        [old_row()],
        "the timer row is kept"
    );
    let sent = message("kept", "m");
    assert!(matches!(send(&store, &sent).await, Ok(Sent::Stored { .. })));
    let listed = store
        .pending(&id("kept"), &["c".to_owned()], MAX_PENDING_LIMIT)
        .await
        .expect("lists");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].message, sent);
    let intent = sent.intent(DEFAULT_INTENT_DELAY_MS).expect("an intent");
    assert_eq!(
        store
            .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .expect("lists"),
        [old_row(), intent],
        "the send's intent row beside the old row"
    );
    drop(store);

    let schema = catalog(&path);
    let events = common::open(&path).await;
    assert_eq!(catalog(&path), schema, "reopening changed nothing");
    assert_eq!(
        events
            .read_range(&id("kept"), 1, None)
            .await
            .expect("reads")
            .len(),
        2,
        "the event log is kept"
    );
    assert_eq!(
        events
            .timers()
            .messages(&id("kept"))
            .await
            .expect("lists")
            .len(),
        1,
        "the message is kept"
    );
    drop(events);
    assert_eq!(files::integrity(&path), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_inbox_table_is_refused_and_left_untouched() {
    let dir = TempDir::new("inbox-foreign");
    let path = dir.file("theirs.db");
    older_file(&dir, &path).await;
    raw(&path)
        .execute_batch(
            "CREATE TABLE inbox (id INTEGER PRIMARY KEY, body TEXT); \
             INSERT INTO inbox (body) VALUES ('theirs');",
        )
        .expect("makes their table");
    assert!(files::side_files(&path).is_empty(), "clean before");
    let before = files::bytes(&path);
    match SqliteTimerStore::open(&path, SqliteOptions::default()).await {
        Err(OpenError::ForeignInbox { missing, .. }) => assert_eq!(missing, "arrival"),
        other => panic!("expected ForeignInbox, got {other:?}"),
    }
    assert!(files::bytes(&path) == before, "the refused file changed");
    assert!(files::side_files(&path).is_empty(), "no side file left");
    assert!(!catalog(&path).iter().any(|name| name == "inbox_pending"));
}

/// The child: a no-op in a normal run. As an `opener` it says `READY`,
/// waits for `GO <name>`, then opens the older file, sends a message of
/// execution `kept` with id `<name>`, and answers `DONE` (or `ERR ...`).
#[test]
fn child() {
    let Some(role) = child::role() else { return };
    assert_eq!(role, "opener");
    child::say("READY");
    let Some(command) = child::command() else {
        return;
    };
    let name = command
        .strip_prefix("GO ")
        .expect("a GO command")
        .to_owned();
    let answer = common::runtime().block_on(async {
        let store = SqliteTimerStore::open(child::path(), SqliteOptions::default())
            .await
            .map_err(|e| format!("open: {e:?}"))?;
        match send(&store, &message("kept", &name)).await? {
            Sent::Stored { .. } => Ok(()),
            other => Err(format!("a fresh key answered {other:?}")),
        }
    });
    child::say(&answer.map_or_else(|e| format!("ERR {e}"), |()| "DONE".to_owned()));
}

/// [`OPENERS`] processes, released together, open the same older file and
/// send; [`ROUNDS`] fresh files. Every opener boots, the table is created
/// once, and every message reads back, in the order the sends committed.
#[test]
fn processes_opening_one_older_file_at_once_all_boot_and_send() {
    let started = Instant::now();
    let dir = TempDir::new("inbox-race");
    let rt = common::runtime();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let path = dir.file(&format!("older-{round}.db"));
        rt.block_on(older_file(&dir, &path));
        let mut openers: Vec<Child> = (0..OPENERS)
            .map(|_| Child::spawn(CHILD_TEST, "opener", &path, dir.path()))
            .collect();
        for opener in &openers {
            opener.ready();
        }
        for (n, opener) in openers.iter_mut().enumerate() {
            opener.send(&format!("GO opener-{n}"));
        }
        let mut booted = 0;
        for opener in &mut openers {
            let answer = opener.recv();
            let status = opener.finish();
            assert!(
                status.success(),
                "round {round}: {} {status}",
                opener.name()
            );
            if answer == "DONE" {
                booted += 1;
            } else {
                failures.push(format!("round {round}: {}: {answer}", opener.name()));
            }
        }
        assert_eq!(files::integrity(&path), "ok", "round {round}");
        let listed = rt.block_on(async {
            let store = SqliteTimerStore::open(&path, SqliteOptions::default())
                .await
                .expect("opens after the race");
            store
                .pending(&id("kept"), &["c".to_owned()], MAX_PENDING_LIMIT)
                .await
                .expect("lists")
        });
        assert_eq!(listed.len(), booted, "round {round}: every send landed");
        assert!(
            listed.is_sorted_by(|a, b| a.arrival < b.arrival),
            "round {round}"
        );
    }
    println!(
        "{ROUNDS} older files, {OPENERS} processes opening each at once: {} of {} opens failed [{:.1?}]",
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
