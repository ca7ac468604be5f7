//! `loomfence retention`, run as a user runs it: the built binary against a
//! store the test made and wrote itself (an SQLite file, or a PostgreSQL
//! schema), then read back directly to see what the sweep did.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::{SystemTime, UNIX_EPOCH};

use loomfence_core::{
    Envelope, ExecutionId, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
};
use loomfence_sqlite::{SCHEMA_VERSION, SqliteEventStore, SqliteOptions};
use loomfence_store::EventStore;
use serde_json::Value;

use crate::common::Scratch;

/// A day, in ms.
const DAY: i64 = 86_400_000;

/// Every execution the fixture writes, and what a sweep with
/// `--older-than 7d` must do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Ended before the cutoff, nobody waits on it: deleted.
    Deleted,
    /// Ended before the cutoff, but its parent is parked on it: kept.
    Pinned,
    /// Running, or ended after the cutoff: not even eligible.
    Skipped,
}

/// The fixture: ids and fates.
const FIXTURE: [(&str, Fate); 8] = [
    ("child-free", Fate::Deleted),
    ("child-pinned", Fate::Pinned),
    ("failed-old", Fate::Deleted),
    ("parent-parked", Fate::Skipped),
    ("parent-running", Fate::Skipped),
    ("root-old-1", Fate::Deleted),
    ("root-old-2", Fate::Deleted),
    ("root-young", Fate::Skipped),
];

/// Executions of the fixture with fate `fate`, sorted.
fn with_fate(fate: Fate) -> Vec<&'static str> {
    FIXTURE
        .iter()
        .filter(|(_, f)| *f == fate)
        .map(|(id, _)| *id)
        .collect()
}

fn id(name: &str) -> ExecutionId {
    ExecutionId::new(name).expect("a valid id")
}

/// Now by the system clock, ms since the epoch (the binary reads the same
/// clock for its cutoff).
fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    i64::try_from(since.as_millis()).expect("ms fit i64")
}

/// Writes the fixture: a parent parked on its finished child (pinned), a
/// running parent with a finished child (deleted, one parent read), old
/// roots that completed or failed (deleted), a root that ended an hour ago
/// (skipped). "Old" is 30 days ago, well past `--older-than 7d`.
async fn populate(store: &dyn EventStore) {
    let now = now_ms();
    let old = now - 30 * DAY;
    let started = |at| NewEvent::kernel(KernelKind::ExecutionStarted, at);
    let done = |at| NewEvent::kernel(KernelKind::ExecutionCompleted, at);
    let write = |name: &'static str, events: Vec<NewEvent>| async move {
        store
            .append_many(&id(name), events)
            .await
            .expect("the fixture is written");
    };
    write("parent-running", vec![started(old - DAY)]).await;
    write(
        "child-free",
        vec![started_child(&id("parent-running"), old - DAY), done(old)],
    )
    .await;
    write("parent-parked", vec![started(old - DAY)]).await;
    write(
        "child-pinned",
        vec![started_child(&id("parent-parked"), old - DAY), done(old)],
    )
    .await;
    let park = NewEvent::kernel(KernelKind::ExecutionSuspended, old)
        .with_payload(park_payload(&[Wait::Child(id("child-pinned"))]));
    write("parent-parked", vec![park]).await;
    write("root-old-1", vec![started(old - DAY), done(old)]).await;
    write("root-old-2", vec![started(old - DAY), done(old - DAY)]).await;
    write(
        "failed-old",
        vec![
            started(old - DAY),
            NewEvent::kernel(KernelKind::ExecutionFailed, old),
        ],
    )
    .await;
    write(
        "root-young",
        vec![started(now - DAY), done(now - 3_600_000)],
    )
    .await;
}

/// Every fixture execution's log (empty once deleted).
async fn logs(store: &dyn EventStore) -> BTreeMap<&'static str, Vec<Envelope>> {
    let mut all = BTreeMap::new();
    for (name, _) in FIXTURE {
        let log = store.read_range(&id(name), 1, None).await.expect("reads");
        all.insert(name, log);
    }
    all
}

/// The fixture executions whose log is still there.
fn present(logs: &BTreeMap<&'static str, Vec<Envelope>>) -> Vec<&'static str> {
    logs.iter()
        .filter(|(_, log)| !log.is_empty())
        .map(|(name, _)| *name)
        .collect()
}

/// Runs async test code on a runtime of its own (the binary runs between
/// the calls, outside any runtime).
fn block_on<F: std::future::Future>(work: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(work)
}

async fn open_sqlite(path: &Path) -> SqliteEventStore {
    SqliteEventStore::open(path, SqliteOptions::default())
        .await
        .expect("the test's database opens")
}

/// A new SQLite file holding the fixture, closed again.
fn sqlite_fixture(scratch: &Scratch) -> std::path::PathBuf {
    let path = scratch.path().join("store.db");
    block_on(async {
        let store = open_sqlite(&path).await;
        populate(&store).await;
    });
    path
}

/// The fixture's logs as they stand in the SQLite file.
fn sqlite_logs(path: &Path) -> BTreeMap<&'static str, Vec<Envelope>> {
    block_on(async { logs(&open_sqlite(path).await).await })
}

/// Runs `loomfence retention ARGS…` to completion.
fn retention(args: &[&str]) -> Output {
    common::loomfence("retention", args)
}

/// Runs `loomfence retention --json ARGS…`; see
/// [`common::loomfence_json`].
fn retention_json(args: &[&str]) -> Value {
    common::loomfence_json("retention", args)
}

/// What every sweep of the fixture (real or dry) reports.
fn assert_fixture_counts(json: &Value, dry_run: bool) {
    assert_eq!(json["outcome"], "done", "{json}");
    assert_eq!(json["dryRun"], dry_run, "{json}");
    assert_eq!(json["examined"], 8, "{json}");
    assert_eq!(json["eligible"], 5, "{json}");
    assert_eq!(json["skipped"], 3, "{json}");
    assert_eq!(json["deleted"], 4, "{json}");
    assert_eq!(
        json["logReads"], 5,
        "one read per eligible execution: {json}"
    );
    assert_eq!(json["parentReads"], 2, "the two children's parents: {json}");
    assert_eq!(json["pinned"]["count"], 1, "{json}");
    assert_eq!(
        json["pinned"]["list"][0],
        serde_json::json!({ "child": "child-pinned", "parent": "parent-parked" }),
        "{json}"
    );
    assert_eq!(json["kept"]["count"], 0, "{json}");
    assert_eq!(json["olderThan"], "7d", "{json}");
    let cutoff = json["endedBefore"].as_i64().expect("endedBefore is ms");
    assert!((now_ms() - cutoff - 7 * DAY).abs() < 60_000, "{json}");
    assert!(json["elapsedMs"].is_u64(), "{json}");
    assert!(json["examinedPerSecond"].as_f64().is_some(), "{json}");
}

#[test]
fn a_dry_run_changes_nothing_and_counts_what_it_would_delete() {
    let scratch = Scratch::new("retention-dry");
    let path = sqlite_fixture(&scratch);
    let before = sqlite_logs(&path);
    let store = scratch.store("store.db");
    let archive = scratch.path().join("archive.jsonl");
    let json = retention_json(&[
        "--store",
        &store,
        "--older-than",
        "7d",
        "--dry-run",
        "--archive",
        &archive.display().to_string(),
    ]);
    assert_fixture_counts(&json, true);
    assert_eq!(json["archived"], 0, "{json}");
    assert_eq!(sqlite_logs(&path), before, "a dry run changes no log");
    assert!(!archive.exists(), "a dry run does not create the archive");
}

/// Runs `retention --dry-run --json` on `store` as a user who may not
/// write it (see [`common::loomfence_unprivileged`]) and checks it reports
/// the fixture; then checks a real sweep, in the same place, cannot write
/// (so the dry run was really read-only ground).
fn dry_run_on_ground_it_may_not_write(store: &str) {
    let dry = common::loomfence_unprivileged(
        "retention",
        &[
            "--store",
            store,
            "--older-than",
            "7d",
            "--dry-run",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&dry.stdout);
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert_eq!(dry.status.code(), Some(0), "{stdout}\n{stderr}");
    let json: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_fixture_counts(&json, true);
    let real =
        common::loomfence_unprivileged("retention", &["--store", store, "--older-than", "7d"]);
    let stderr = String::from_utf8_lossy(&real.stderr);
    assert_eq!(
        real.status.code(),
        Some(1),
        "a real sweep cannot write: {stderr}"
    );
    assert!(stderr.contains("readonly database"), "{stderr}");
}

#[test]
fn a_dry_run_reads_a_file_it_may_not_write_and_changes_no_byte() {
    let scratch = Scratch::new("retention-ro-file");
    let path = sqlite_fixture(&scratch);
    let bytes = std::fs::read(&path).expect("reads the store");
    // The file is read-only; its directory is open to the user, as a
    // file made read-only on purpose in a shared directory is.
    common::chmod(&path, 0o444);
    common::chmod(scratch.path(), 0o777);
    let files = scratch.files();
    let store = scratch.store("store.db");
    let dry = common::loomfence_unprivileged(
        "retention",
        &[
            "--store",
            &store,
            "--older-than",
            "7d",
            "--dry-run",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(dry.status.code(), Some(0), "{stdout}");
    let json: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_fixture_counts(&json, true);
    assert_eq!(std::fs::read(&path).expect("reads the store"), bytes);
    // Not even a `-wal` or `-shm` (owned by this user, which the store's
    // writer could not use) is left beside it.
    assert_eq!(scratch.files(), files, "no file was added");
    dry_run_on_ground_it_may_not_write(&store);
    assert_eq!(std::fs::read(&path).expect("reads the store"), bytes);
}

#[test]
fn a_dry_run_reads_a_store_in_a_read_only_directory_and_adds_no_file() {
    let scratch = Scratch::new("retention-ro-dir");
    let path = sqlite_fixture(&scratch);
    let bytes = std::fs::read(&path).expect("reads the store");
    let files = scratch.files();
    // The directory is read-only: no `-wal` or `-shm` can be made beside
    // the file (a closed WAL store has none), which a read-only connection
    // with SQLite's locks would need.
    common::chmod(scratch.path(), 0o555);
    dry_run_on_ground_it_may_not_write(&scratch.store("store.db"));
    assert_eq!(std::fs::read(&path).expect("reads the store"), bytes);
    assert_eq!(scratch.files(), files, "no file was added");
    common::chmod(scratch.path(), 0o755);
}

#[test]
fn a_dry_run_refuses_a_store_that_needs_a_migration_and_changes_nothing() {
    let scratch = Scratch::new("retention-dry-old");
    let path = sqlite_fixture(&scratch);
    // A store of the schema version before this build's.
    rusqlite::Connection::open(&path)
        .and_then(|conn| conn.pragma_update(None, "user_version", SCHEMA_VERSION - 1))
        .expect("makes the store older");
    let bytes = std::fs::read(&path).expect("reads the store");
    let store = scratch.store("store.db");
    let out = retention(&["--store", &store, "--older-than", "7d", "--dry-run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("would need a migration"), "{stderr}");
    assert!(
        stderr.contains(&format!("run `loomfence init --store {store}`")),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&path).expect("reads the store"), bytes);
}

#[test]
fn a_sweep_deletes_exactly_the_old_unpinned_and_keeps_the_pinned_child() {
    let scratch = Scratch::new("retention-real");
    let path = sqlite_fixture(&scratch);
    let before = sqlite_logs(&path);
    let json = retention_json(&["--store", &scratch.store("store.db"), "--older-than", "7d"]);
    assert_fixture_counts(&json, false);
    let after = sqlite_logs(&path);
    let mut kept = with_fate(Fate::Pinned);
    kept.extend(with_fate(Fate::Skipped));
    kept.sort_unstable();
    assert_eq!(present(&after), kept);
    for name in kept {
        assert_eq!(after[name], before[name], "{name} is untouched");
    }
    // A second sweep finds nothing more to delete: the pin still holds.
    let again = retention_json(&["--store", &scratch.store("store.db"), "--older-than", "7d"]);
    assert_eq!(again["examined"], 4, "{again}");
    assert_eq!(again["deleted"], 0, "{again}");
    assert_eq!(again["pinned"]["count"], 1, "{again}");
}

#[test]
fn the_archive_holds_exactly_the_deleted_logs() {
    let scratch = Scratch::new("retention-archive");
    let path = sqlite_fixture(&scratch);
    let before = sqlite_logs(&path);
    let archive = scratch.path().join("archive.jsonl");
    let json = retention_json(&[
        "--store",
        &scratch.store("store.db"),
        "--older-than",
        "7d",
        "--archive",
        &archive.display().to_string(),
        "--page-limit",
        "3",
    ]);
    assert_eq!(json["deleted"], 4, "{json}");
    assert_eq!(json["archived"], 4, "{json}");
    assert_eq!(
        json["pages"], 4,
        "8 executions in pages of 3, then an empty one: {json}"
    );
    let text = std::fs::read_to_string(&archive).expect("the archive exists");
    let mut archived: BTreeMap<String, Vec<Envelope>> = BTreeMap::new();
    for line in text.lines() {
        let event: Envelope = serde_json::from_str(line).expect("each line is one envelope");
        archived
            .entry(event.execution_id.as_str().to_owned())
            .or_default()
            .push(event);
    }
    let deleted = with_fate(Fate::Deleted);
    assert_eq!(
        archived.keys().map(String::as_str).collect::<Vec<_>>(),
        deleted
    );
    for name in deleted {
        assert_eq!(archived[name], before[name], "{name}'s whole log, in order");
    }
    assert!(
        present(&sqlite_logs(&path))
            .iter()
            .all(|n| !archived.contains_key(*n))
    );
}

#[test]
fn the_human_summary_names_the_counts_and_the_pinned_child() {
    let scratch = Scratch::new("retention-human");
    sqlite_fixture(&scratch);
    let out = retention(&["--store", &scratch.store("store.db"), "--older-than", "7d"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("examined 8: 5 eligible, 3 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("deleted 4\n"), "{stdout}");
    assert!(
        stdout.contains("child-pinned (parent parent-parked)"),
        "{stdout}"
    );
}

#[test]
fn a_missing_sqlite_file_exits_2_and_creates_nothing() {
    let scratch = Scratch::new("retention-missing");
    let out = retention(&["--store", &scratch.store("nosuch.db"), "--older-than", "7d"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nosuch.db: no such file"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(scratch.files(), Vec::<String>::new(), "nothing was created");
}

#[test]
fn a_bad_older_than_exits_2_with_a_clear_message_and_touches_nothing() {
    let scratch = Scratch::new("retention-bad-duration");
    let path = sqlite_fixture(&scratch);
    let before = sqlite_logs(&path);
    for bad in ["7", "seven days", "-7d", ""] {
        let out = retention(&["--store", &scratch.store("store.db"), "--older-than", bad]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains(&format!("error: --older-than {bad:?}: ")),
            "{bad}: {stderr}"
        );
        assert!(stderr.contains("such as 7d, 12h, 30m or 90s"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(sqlite_logs(&path), before);
}

#[test]
fn other_bad_options_exit_2() {
    let scratch = Scratch::new("retention-bad-options");
    sqlite_fixture(&scratch);
    let store = scratch.store("store.db");
    for (args, expected) in [
        (
            vec!["--store", &store, "--older-than", "7d", "--page-limit", "0"],
            "--page-limit",
        ),
        (
            vec!["--store", &store, "--older-than", "7d", "--schema", "app"],
            "--schema: only for --store postgres",
        ),
        (
            vec!["--store", "nosuch", "--older-than", "7d"],
            "unknown store",
        ),
        (
            vec![
                "--store",
                &store,
                "--older-than",
                "7d",
                "--page-limit",
                "-3",
            ],
            "invalid value '-3' for '--page-limit <N>'",
        ),
        (
            vec!["--store", &scratch.store(""), "--older-than", "7d"],
            "not a regular file",
        ),
    ] {
        let out = retention(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Files that are not usable stores are refused (exit 2) and left as
    // they were: an empty file (it was migrated into a database, even by a
    // dry run), a damaged database, a cut copy of the store (exit 1
    // before), and a text file.
    let whole = std::fs::read(scratch.path().join("store.db")).expect("reads the store");
    let cut = &whole[..4096.min(whole.len())];
    for (name, contents, expect) in [
        (
            "empty.db",
            &b""[..],
            "an empty file, not a loomfence database",
        ),
        ("damaged.db", cut, "damaged SQLite database"),
        (
            "junk.db",
            &b"not a database, just text"[..],
            "not an SQLite database",
        ),
    ] {
        for dry in [&["--dry-run"][..], &[]] {
            let args: Vec<&str> = ["--older-than", "7d"]
                .into_iter()
                .chain(dry.iter().copied())
                .collect();
            common::assert_refused_unchanged(
                "retention",
                &scratch.path().join(name),
                contents,
                &args,
                expect,
            );
        }
    }
    // A missing file: the message says what the command does, not which.
    let out = retention(&["--store", &scratch.store("nope.db"), "--older-than", "7d"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no such file; this command opens an existing loomfence database"),
        "{stderr}"
    );
}

#[test]
fn memory_is_an_empty_smoke_test() {
    let out = retention(&["--store", "memory", "--older-than", "7d", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("a new, empty store"), "{stderr}");
    let json: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(json["examined"], 0, "{json}");
    assert_eq!(json["store"], "memory", "{json}");
}

/// Whether `schema` exists on the server.
async fn schema_exists(store: &loomfence_postgres::PostgresEventStore, schema: &str) -> bool {
    let client = store.pool().get().await.expect("a connection");
    client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .await
        .expect("asks")
        .get(0)
}

#[test]
fn postgres_sweeps_an_existing_schema_and_drops_nothing() {
    let Some(url) = common::postgres_url("the PostgreSQL retention test") else {
        return;
    };
    let schema = format!("cli_retention_{}", std::process::id());
    let missing = format!("{schema}_missing");
    let store = format!("postgres:{url}");
    let before = block_on(async {
        let pg = common::connect_schema(&url, &schema, true).await;
        common::drop_schema(&pg, &missing).await;
        populate(&pg).await;
        logs(&pg).await
    });

    let dry = retention_json(&[
        "--store",
        &store,
        "--schema",
        &schema,
        "--older-than",
        "7d",
        "--dry-run",
    ]);
    assert_fixture_counts(&dry, true);
    let json = retention_json(&["--store", &store, "--schema", &schema, "--older-than", "7d"]);
    assert_fixture_counts(&json, false);

    // A schema that holds no store is refused, and not created.
    let out = retention(&[
        "--store",
        &store,
        "--schema",
        &missing,
        "--older-than",
        "7d",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds no loomfence store"), "{stderr}");

    block_on(async {
        let pg = common::connect_schema(&url, &schema, true).await;
        let after = logs(&pg).await;
        let mut kept = with_fate(Fate::Pinned);
        kept.extend(with_fate(Fate::Skipped));
        kept.sort_unstable();
        assert_eq!(present(&after), kept);
        for name in kept {
            assert_eq!(after[name], before[name], "{name} is untouched");
        }
        assert!(!schema_exists(&pg, &missing).await, "nothing was created");
        common::drop_schema(&pg, &schema).await;
    });
}

/// Adds to the fixture a child that ended long ago whose recorded parent is
/// corrupt (`payload.parent` is a number): the sweep cannot judge it.
fn corrupt_child(path: &Path) {
    block_on(async {
        let old = now_ms() - 30 * DAY;
        let mut payload = loomfence_core::JsonObject::new();
        payload.insert("parent".to_owned(), serde_json::json!(42));
        open_sqlite(path)
            .await
            .append_many(
                &id("child-corrupt"),
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, old - DAY).with_payload(payload),
                    NewEvent::kernel(KernelKind::ExecutionCompleted, old),
                ],
            )
            .await
            .expect("the corrupt child is written");
    });
}

#[test]
fn an_undecided_child_is_kept_and_listed_and_the_sweep_still_exits_0() {
    let scratch = Scratch::new("retention-undecided");
    let path = sqlite_fixture(&scratch);
    corrupt_child(&path);
    let out = retention(&["--store", &scratch.store("store.db"), "--older-than", "7d"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "undecided is an answer, not a failure: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("deleted 4\n"),
        "the rest was swept: {stdout}"
    );
    assert!(stdout.contains("UNDECIDED 1"), "{stdout}");
    assert!(
        stdout.contains("  child-corrupt INVALID_LINEAGE: "),
        "{stdout}"
    );

    let json = retention_json(&["--store", &scratch.store("store.db"), "--older-than", "7d"]);
    assert_eq!(json["outcome"], "done", "{json}");
    assert_eq!(json["undecided"]["count"], 1, "{json}");
    let entry = &json["undecided"]["list"][0];
    assert_eq!(
        (&entry["executionId"], &entry["code"], &entry["parent"]),
        (
            &Value::from("child-corrupt"),
            &Value::from("INVALID_LINEAGE"),
            &Value::Null
        ),
        "{json}"
    );
    let still = block_on(async {
        open_sqlite(&path)
            .await
            .read_range(&id("child-corrupt"), 1, None)
            .await
            .expect("reads")
    });
    assert_eq!(still.len(), 2, "the undecided child is kept");
}

/// An unreachable PostgreSQL server is named with its host, port and the
/// cause, never the password (it was "storage backend failed (retryable):
/// error connecting to server", with none of them).
#[test]
fn an_unreachable_postgres_is_named_with_its_host_port_and_cause() {
    let out = retention(&[
        "--store",
        "postgres:postgres://app:hunter2@127.0.0.1:1/orders",
        "--older-than",
        "7d",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a store that fails, not a bad option: {stderr}"
    );
    assert!(
        stderr.contains("could not connect to PostgreSQL at app@127.0.0.1:1/orders"),
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

/// `url` (`postgres://USER@HOST…`, as `cargo xtask pg` gives it) with
/// another user.
fn as_user(url: &str, user: &str) -> String {
    let rest = url.strip_prefix("postgres://").expect("a postgres:// URL");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("postgres://{user}@{host}")
}

#[test]
fn postgres_dry_run_needs_only_usage_and_select_and_migrates_nothing() {
    let Some(url) = common::postgres_url("the PostgreSQL read-only dry run test") else {
        return;
    };
    let pid = std::process::id();
    let schema = format!("cli_retention_ro_{pid}");
    let role = format!("cli_reader_{pid}");
    let ledger = format!("SELECT name, detail FROM {schema}.migrations ORDER BY name");
    let (before, ledger_before) = block_on(async {
        let pg = common::connect_schema(&url, &schema, true).await;
        populate(&pg).await;
        let client = pg.pool().get().await.expect("a connection");
        client
            .batch_execute(&format!(
                "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN; \
                 GRANT USAGE ON SCHEMA {schema} TO {role}; \
                 GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}"
            ))
            .await
            .expect("creates the reader role");
        let rows: Vec<(String, Option<String>)> = client
            .query(ledger.as_str(), &[])
            .await
            .expect("reads the ledger")
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        drop(client);
        (logs(&pg).await, rows)
    });
    let reader = format!("postgres:{}", as_user(&url, &role));
    let dry = retention_json(&[
        "--store",
        &reader,
        "--schema",
        &schema,
        "--older-than",
        "7d",
        "--dry-run",
    ]);
    assert_fixture_counts(&dry, true);
    // A real sweep opens as a writer, which the role is not: the open
    // migrates, and the role may not.
    let out = retention(&[
        "--store",
        &reader,
        "--schema",
        &schema,
        "--older-than",
        "7d",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");

    // An outdated store is refused by a dry run, naming init, untouched.
    let store = format!("postgres:{url}");
    block_on(async {
        let pg = common::connect_schema(&url, &schema, true).await;
        let client = pg.pool().get().await.expect("a connection");
        client
            .batch_execute(&format!(
                "UPDATE {schema}.migrations SET detail = '{}' WHERE name = 'schema-version'",
                loomfence_postgres::migration::SCHEMA_VERSION - 1
            ))
            .await
            .expect("makes the store look older");
    });
    let out = retention(&[
        "--store",
        &store,
        "--schema",
        &schema,
        "--older-than",
        "7d",
        "--dry-run",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("would need a migration"), "{stderr}");
    assert!(
        stderr.contains("run `loomfence init --store postgres:"),
        "{stderr}"
    );

    block_on(async {
        let admin = common::connect_schema(&url, &schema, false).await;
        let client = admin.pool().get().await.expect("a connection");
        let mut rows: Vec<(String, Option<String>)> = client
            .query(ledger.as_str(), &[])
            .await
            .expect("reads the ledger")
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        for row in &mut rows {
            if row.0 == "schema-version" {
                row.1 = Some(loomfence_postgres::migration::SCHEMA_VERSION.to_string());
            }
        }
        assert_eq!(rows, ledger_before, "nothing but the test's own change");
        drop(client);
        assert_eq!(logs(&admin).await, before, "no log changed");
        let client = admin.pool().get().await.expect("a connection");
        client
            .batch_execute(&format!(
                "DROP OWNED BY {role}; DROP ROLE {role}; DROP SCHEMA {schema} CASCADE"
            ))
            .await
            .expect("cleans up");
    });
}
