//! A `timers` table of the older shape (design: the re-drive), `(execution_id,
//! wake_at)` and nothing else, written by hand into a store's file: opening
//! adds the missing columns, the old rows read back as plain wakes nobody
//! holds, and re-drive rows can be written beside them. Two processes
//! opening one such file at the same moment both boot.

mod common;

use std::path::Path;
use std::time::Instant;

use common::child::{self, Child};
use common::files::{self, raw};
use common::{TempDir, id};
use loomfence_core::timer::{
    Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Lease, MAX_DUE_LIMIT,
    MAX_TIMER_MS, NodeId, TimerQuery, TimerRow,
};
use loomfence_sqlite::{OpenError, SqliteOptions, SqliteTimerStore};
use loomfence_store::{EventStore, TimerStore};

/// The base time of the rows, in ms.
const T0: i64 = 1_700_000_000_000;

/// Fresh old-shape files raced over.
const ROUNDS: usize = 25;

/// Processes opening each file at once.
const OPENERS: usize = 2;

/// The child-role test's name, for `--exact`.
const CHILD_TEST: &str = "child";

/// The old table exactly as the older shape was created: a rowid table,
/// no `redrive`, no claim columns.
const OLD_TABLE: &str =
    "CREATE TABLE timers (execution_id TEXT, wake_at INTEGER, PRIMARY KEY (execution_id, wake_at))";

/// The rows the old table holds.
fn old_rows() -> Vec<TimerRow> {
    vec![
        TimerRow::wake(id("old-a"), T0),
        TimerRow::wake(id("old-b"), T0 + 5),
        TimerRow::wake(id("old-a"), T0 + 9),
    ]
}

/// Makes `path` a store's file (an event log in it) whose `timers` table is
/// the old shape, holding [`old_rows`].
async fn old_shape_file(path: &Path) {
    {
        let store = common::open(path).await;
        common::park(&store, &id("kept")).await;
    }
    let conn = raw(path);
    conn.execute_batch(&format!("DROP TABLE timers; {OLD_TABLE};"))
        .expect("replaces the table with the old shape");
    for row in old_rows() {
        conn.execute(
            "INSERT INTO timers (execution_id, wake_at) VALUES (?1, ?2)",
            rusqlite::params![row.execution_id.as_str(), row.wake_at],
        )
        .expect("inserts an old row");
    }
    assert_eq!(columns(path), ["execution_id", "wake_at"]);
}

/// The `timers` table's columns, in order.
fn columns(path: &Path) -> Vec<String> {
    let conn = raw(path);
    let mut statement = conn
        .prepare("SELECT name FROM pragma_table_info('timers')")
        .expect("prepares");
    statement
        .query_map([], |row| row.get(0))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads the columns")
}

/// The `timers` table's rows as stored: key, `redrive` text, holder, claim
/// count.
type Stored = (String, i64, Option<String>, Option<String>, i64);

/// Every stored row, by key.
fn stored(path: &Path) -> Vec<Stored> {
    let conn = raw(path);
    let mut statement = conn
        .prepare(
            "SELECT execution_id, wake_at, redrive, holder, claims FROM timers \
             ORDER BY wake_at, execution_id",
        )
        .expect("prepares");
    statement
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads the rows")
}

/// The schema as the catalog records it.
fn catalog(path: &Path) -> Vec<(String, Option<String>)> {
    let conn = raw(path);
    let mut statement = conn
        .prepare("SELECT name, sql FROM sqlite_master ORDER BY name")
        .expect("prepares");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads the catalog")
}

/// Every row the store lists.
async fn all_rows(store: &SqliteTimerStore) -> Vec<TimerRow> {
    store
        .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("lists every row")
}

/// The columns a migrated table has, in order.
const MIGRATED: [&str; 6] = [
    "execution_id",
    "wake_at",
    "redrive",
    "holder",
    "lease_until",
    "claims",
];

/// The old rows survive as plain, unclaimed wakes; a re-drive row lands
/// beside them and on one of their keys; every row reads back, is claimed
/// from number 1 and retires; the event log is untouched; reopening
/// changes nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_shape_table_gains_its_columns_and_keeps_its_rows_as_plain_wakes() {
    let dir = TempDir::new("timers-old");
    let path = dir.file("old.db");
    old_shape_file(&path).await;

    let store = SqliteTimerStore::open(&path, SqliteOptions::default())
        .await
        .expect("opens the old file");
    assert_eq!(columns(&path), MIGRATED);
    assert_eq!(all_rows(&store).await, old_rows_sorted());
    assert!(
        stored(&path)
            .iter()
            .all(|(_, _, redrive, holder, claims)| redrive.is_none()
                && holder.is_none()
                && *claims == 0),
        "old rows are plain and unclaimed: {:?}",
        stored(&path)
    );

    let fresh = TimerRow::redrive(id("new"), T0 + 1, 2);
    let flagged = TimerRow::redrive(id("old-b"), T0 + 5, 0);
    store.schedule(&fresh).await.expect("schedules");
    store.schedule(&flagged).await.expect("schedules");
    let expected = vec![
        TimerRow::wake(id("old-a"), T0),
        fresh.clone(),
        flagged.clone(),
        TimerRow::wake(id("old-a"), T0 + 9),
    ];
    assert_eq!(all_rows(&store).await, expected);
    let texts: Vec<Option<String>> = stored(&path).into_iter().map(|row| row.2).collect();
    assert_eq!(
        texts,
        [
            None,
            Some("{\"attempt\":2}".to_owned()),
            Some("{\"attempt\":0}".to_owned()),
            None
        ],
        "the flag is stored as the design's JSON"
    );
    let plain_only = store
        .due(T0 + 9, MAX_DUE_LIMIT, DueFilter { redrive: false })
        .await
        .expect("lists");
    assert_eq!(
        plain_only,
        [
            TimerRow::wake(id("old-a"), T0),
            TimerRow::wake(id("old-a"), T0 + 9)
        ]
    );

    let lease = Lease {
        holder: NodeId::new("n1").expect("a node id"),
        now: T0 + 9,
        duration_ms: 1_000,
    };
    let claims = store
        .claim_due(&lease, 10, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    assert_eq!(
        claims.iter().map(|c| &c.row).collect::<Vec<_>>(),
        expected.iter().collect::<Vec<_>>()
    );
    assert!(claims.iter().all(|c| c.number == 1));
    for claim in &claims {
        assert!(matches!(
            store.complete(claim).await.expect("completes"),
            loomfence_core::timer::Completed::Done
        ));
    }
    assert!(all_rows(&store).await.is_empty());
    store.schedule(&fresh).await.expect("schedules again");
    drop(store);

    let schema = catalog(&path);
    for _ in 0..2 {
        let again = SqliteTimerStore::open(&path, SqliteOptions::default())
            .await
            .expect("reopens");
        assert_eq!(all_rows(&again).await, std::slice::from_ref(&fresh));
    }
    assert_eq!(catalog(&path), schema, "reopening changed nothing");
    assert_eq!(columns(&path), MIGRATED);
    let events = common::open(&path).await;
    assert_eq!(
        events
            .read_range(&id("kept"), 1, None)
            .await
            .expect("reads")
            .len(),
        2,
        "the event log is untouched"
    );
    assert_eq!(files::integrity(&path), "ok");
}

/// [`old_rows`], earliest first.
fn old_rows_sorted() -> Vec<TimerRow> {
    let mut rows = old_rows();
    rows.sort_by(|a, b| (a.wake_at, &a.execution_id).cmp(&(b.wake_at, &b.execution_id)));
    rows
}

/// A file of an earlier build of this crate (an event log, no `timers`
/// table at all) gets the table on open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_a_timers_table_gets_one() {
    let dir = TempDir::new("timers-none");
    let path = dir.file("earlier.db");
    {
        let store = common::open(&path).await;
        common::park(&store, &id("kept")).await;
    }
    raw(&path)
        .execute_batch("DROP TABLE timers")
        .expect("drops the table");
    let store = SqliteTimerStore::open(&path, SqliteOptions::default())
        .await
        .expect("opens");
    assert_eq!(columns(&path), MIGRATED);
    let row = TimerRow::redrive(id("r"), T0, 1);
    store.schedule(&row).await.expect("schedules");
    assert_eq!(all_rows(&store).await, [row]);
}

/// A `timers` table that lacks a key column is another application's: the
/// open is refused with `ForeignTimers`, and the file is byte for byte what
/// it was, its event log and its table untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_timers_table_is_refused_and_left_untouched() {
    let dir = TempDir::new("timers-foreign");
    let path = dir.file("theirs.db");
    {
        let store = common::open(&path).await;
        common::park(&store, &id("kept")).await;
    }
    raw(&path)
        .execute_batch(
            "DROP TABLE timers; \
             CREATE TABLE timers (id INTEGER PRIMARY KEY, wake_at INTEGER, what TEXT); \
             INSERT INTO timers (wake_at, what) VALUES (5, 'theirs');",
        )
        .expect("makes their table");
    assert!(files::side_files(&path).is_empty(), "clean before");
    let before = files::bytes(&path);
    match SqliteTimerStore::open(&path, SqliteOptions::default()).await {
        Err(OpenError::ForeignTimers { missing, .. }) => assert_eq!(missing, "execution_id"),
        other => panic!("expected ForeignTimers, got {other:?}"),
    }
    assert!(files::bytes(&path) == before, "the refused file changed");
    assert!(files::side_files(&path).is_empty(), "no side file left");
    assert_eq!(columns(&path), ["id", "wake_at", "what"]);
}

/// An old table whose ids were declared with a linguistic collation
/// (`NOCASE`) still lists and claims them in byte order, as every store
/// does: `B` before `a` before `b`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_come_in_byte_order_whatever_the_old_table_declared() {
    let dir = TempDir::new("timers-nocase");
    let path = dir.file("nocase.db");
    {
        let store = common::open(&path).await;
        common::park(&store, &id("kept")).await;
    }
    raw(&path)
        .execute_batch(
            "DROP TABLE timers; \
             CREATE TABLE timers (execution_id TEXT COLLATE NOCASE, wake_at INTEGER, \
                 PRIMARY KEY (execution_id, wake_at));",
        )
        .expect("makes the old table");
    let store = SqliteTimerStore::open(&path, SqliteOptions::default())
        .await
        .expect("opens");
    for name in ["b", "a", "B2", "é"] {
        store
            .schedule(&TimerRow::wake(id(name), T0))
            .await
            .expect("schedules");
    }
    let byte_order = ["B2", "a", "b", "é"].map(|name| TimerRow::wake(id(name), T0));
    assert_eq!(all_rows(&store).await, byte_order);
    let lease = Lease {
        holder: NodeId::new("n1").expect("a node id"),
        now: T0,
        duration_ms: 1_000,
    };
    let first_two = store
        .claim_due(&lease, 2, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    assert_eq!(
        first_two.iter().map(|c| &c.row).collect::<Vec<_>>(),
        byte_order[..2].iter().collect::<Vec<_>>()
    );
    // The operator's listing compares ids as bytes too: in its order, its
    // `after`, and its execution filter (`A` is not `a`).
    let listed = |query: TimerQuery| {
        let store = store.clone();
        async move {
            let listing = store.list(&query).await.expect("lists");
            assert_eq!(listing.unreadable, []);
            listing
                .entries
                .into_iter()
                .map(|entry| entry.row)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed(TimerQuery::default()).await, byte_order);
    let after_a = TimerQuery {
        after: Some((T0, id("a"))),
        ..TimerQuery::default()
    };
    assert_eq!(listed(after_a).await, byte_order[2..]);
    let of_upper_a = TimerQuery {
        execution: Some(id("A")),
        ..TimerQuery::default()
    };
    assert_eq!(listed(of_upper_a).await, []);
}

/// A file of the build before exhaustion records (its `timers` table
/// current, no `exhausted_timers`) gains the table on open, in the schema's
/// one transaction: its rows stay, an exhaustion is recorded and survives
/// a reopen, and reopening changes the schema no more. The version stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_the_exhausted_table_gets_one() {
    let dir = TempDir::new("timers-no-exhausted");
    let path = dir.file("earlier.db");
    {
        let store = common::open(&path).await;
        common::park(&store, &id("kept")).await;
        let timers = store.timers();
        timers
            .schedule(&TimerRow::redrive(id("chain"), T0, 3))
            .await
            .expect("schedules");
    }
    let version = |path: &Path| -> i64 {
        raw(path)
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .expect("reads the version")
    };
    let before = version(&path);
    raw(&path)
        .execute_batch("DROP TABLE exhausted_timers")
        .expect("drops the table");
    assert!(
        !catalog(&path)
            .iter()
            .any(|(name, _)| name == "exhausted_timers")
    );
    let store = SqliteTimerStore::open(&path, SqliteOptions::default())
        .await
        .expect("opens");
    assert!(
        catalog(&path)
            .iter()
            .any(|(name, _)| name == "exhausted_timers"),
        "the open created the table"
    );
    assert_eq!(
        version(&path),
        before,
        "an additive table keeps the version"
    );
    assert_eq!(
        all_rows(&store).await,
        [TimerRow::redrive(id("chain"), T0, 3)]
    );
    let lease = Lease {
        holder: NodeId::new("n1").expect("a node id"),
        now: T0,
        duration_ms: 1_000,
    };
    let claims = store
        .claim_due(&lease, 10, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    let given_up = Exhaustion {
        attempts: 4,
        at: T0 + 1,
    };
    assert_eq!(
        store
            .exhaust(&claims[0], &given_up)
            .await
            .expect("exhausts"),
        Completed::Done
    );
    drop(store);
    let schema = catalog(&path);
    let again = SqliteTimerStore::open(&path, SqliteOptions::default())
        .await
        .expect("reopens");
    assert_eq!(catalog(&path), schema, "reopening changed nothing");
    assert_eq!(all_rows(&again).await, []);
    assert_eq!(
        again
            .exhausted(&ExhaustedQuery::default())
            .await
            .expect("lists the records"),
        [ExhaustedRow::new(
            TimerRow::redrive(id("chain"), T0, 3),
            given_up
        )],
        "the record survived the reopen"
    );
    assert_eq!(files::integrity(&path), "ok");
}

/// The child: a no-op in a normal run. As an `opener` it says `READY`,
/// waits for `GO <name>`, then opens the old file as a timer store, writes
/// a re-drive row and a plain wake of execution `<name>`, lists every row,
/// and answers `DONE <rows listed>` (or `ERR ...`).
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
        for row in written_by(&name) {
            store
                .schedule(&row)
                .await
                .map_err(|e| format!("schedule {row:?}: {e:?}"))?;
        }
        let listed = store
            .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .map_err(|e| format!("due: {e:?}"))?;
        Ok::<_, String>(listed.len())
    });
    child::say(&answer.map_or_else(|e| format!("ERR {e}"), |n| format!("DONE {n}")));
}

/// What the opener `name` writes.
fn written_by(name: &str) -> [TimerRow; 2] {
    [
        TimerRow::redrive(id(name), T0 + 2, 1),
        TimerRow::wake(id(name), T0 + 3),
    ]
}

/// [`OPENERS`] processes, released together, open the same old-shape file
/// and write; [`ROUNDS`] fresh files. Every opener boots, the table gains
/// each column once, and every row (old and new) reads back. All rounds run
/// before the verdict, so a failure reports how often it happened.
#[test]
fn processes_opening_one_old_shape_file_at_once_all_boot() {
    let started = Instant::now();
    let dir = TempDir::new("timers-race");
    let rt = common::runtime();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let path = dir.file(&format!("old-{round}.db"));
        rt.block_on(old_shape_file(&path));
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
            if answer.starts_with("DONE ") {
                booted.push(n);
            } else {
                failures.push(format!("round {round}: {}: {answer}", opener.name()));
            }
        }
        assert_eq!(columns(&path), MIGRATED, "round {round}: each column once");
        assert_eq!(files::integrity(&path), "ok", "round {round}");
        let mut expected = old_rows();
        for n in &booted {
            expected.extend(written_by(&format!("opener-{n}")));
        }
        expected.sort_by(|a, b| (a.wake_at, &a.execution_id).cmp(&(b.wake_at, &b.execution_id)));
        rt.block_on(async {
            let store = SqliteTimerStore::open(&path, SqliteOptions::default())
                .await
                .expect("opens after the race");
            assert_eq!(all_rows(&store).await, expected, "round {round}");
        });
    }
    println!(
        "{ROUNDS} old-shape files, {OPENERS} processes opening each at once: {} of {} opens failed [{:.1?}]",
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
