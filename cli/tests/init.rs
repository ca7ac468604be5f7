//! `loomfence init`, run as a user runs it: a new store is created, an
//! existing loomfence store is only migrated (its data kept), and anything
//! else is refused, exit 2, untouched; a retention dry run then works on
//! the store init made.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::path::Path;

use loomfence_core::{Envelope, ExecutionId, KernelKind, NewEvent};
use loomfence_sqlite::{SCHEMA_VERSION, SqliteEventStore, SqliteOptions};
use loomfence_store::EventStore;
use serde_json::Value;

use crate::common::Scratch;

fn block_on<F: std::future::Future>(work: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(work)
}

fn id(name: &str) -> ExecutionId {
    ExecutionId::new(name).expect("a valid id")
}

/// Writes two executions (one ended) to `store` and returns their logs.
async fn write_some(store: &dyn EventStore) -> Vec<Vec<Envelope>> {
    store
        .append_many(
            &id("ended"),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
                NewEvent::kernel(KernelKind::ExecutionCompleted, 2_000),
            ],
        )
        .await
        .expect("appends");
    store
        .append(
            &id("running"),
            NewEvent::kernel(KernelKind::ExecutionStarted, 3_000),
        )
        .await
        .expect("appends");
    read_some(store).await
}

/// The two executions' logs.
async fn read_some(store: &dyn EventStore) -> Vec<Vec<Envelope>> {
    store
        .read_logs(&[id("ended"), id("running")])
        .await
        .expect("reads")
}

/// `loomfence init --json ARGS…`, exit 0, its one object.
fn init_json(args: &[&str]) -> Value {
    common::loomfence_json("init", args)
}

/// `loomfence init ARGS…` to completion.
fn init(args: &[&str]) -> std::process::Output {
    common::loomfence("init", args)
}

/// `retention --dry-run` on `args`' store exits 0 and reports a dry run.
fn dry_run_works(args: &[&str]) -> Value {
    let all: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--older-than", "1s", "--dry-run"])
        .collect();
    let json = common::loomfence_json("retention", &all);
    assert_eq!(json["outcome"], "done", "{json}");
    assert_eq!(json["dryRun"], true, "{json}");
    json
}

async fn open(path: &Path) -> SqliteEventStore {
    SqliteEventStore::open(path, SqliteOptions::default())
        .await
        .expect("opens")
}

#[test]
fn a_new_sqlite_file_is_created_and_a_second_init_finds_it_up_to_date() {
    let scratch = Scratch::new("init-new");
    let store = scratch.store("new.db");
    let json = init_json(&["--store", &store]);
    assert_eq!(
        json,
        serde_json::json!({
            "store": store,
            "schema": null,
            "created": true,
            "migrated": true,
            "version": SCHEMA_VERSION,
        })
    );
    assert_eq!(scratch.files(), ["new.db"], "no -wal or -shm is left");
    let again = init(&["--store", &store]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.trim(),
        format!("{store}: already a loomfence store, version {SCHEMA_VERSION}: up to date")
    );
    let report = dry_run_works(&["--store", &store]);
    assert_eq!(report["examined"], 0, "{report}");
}

#[test]
fn an_existing_sqlite_store_is_only_migrated_and_keeps_its_data() {
    let scratch = Scratch::new("init-existing");
    let path = scratch.path().join("kept.db");
    let store = scratch.store("kept.db");
    let before = block_on(async { write_some(&open(&path).await).await });

    // Current: nothing to do, nothing changed.
    let bytes = std::fs::read(&path).expect("reads the store");
    let json = init_json(&["--store", &store]);
    assert_eq!(
        (json["created"].clone(), json["migrated"].clone()),
        (false.into(), false.into())
    );
    assert_eq!(std::fs::read(&path).expect("reads the store"), bytes);

    // Of the version before this build's: migrated, the data kept.
    rusqlite::Connection::open(&path)
        .and_then(|conn| conn.pragma_update(None, "user_version", SCHEMA_VERSION - 1))
        .expect("makes the store older");
    let out = init(&["--store", &store]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.trim(),
        format!("{store}: already a loomfence store; migrated to version {SCHEMA_VERSION}")
    );
    let after = block_on(async { read_some(&open(&path).await).await });
    assert_eq!(after, before, "the data is kept");
    let report = dry_run_works(&["--store", &store]);
    assert_eq!(report["examined"], 2, "{report}");
    assert_eq!(report["deleted"], 1, "{report}");
}

#[test]
fn what_is_not_a_loomfence_store_is_refused_unchanged() {
    let scratch = Scratch::new("init-refused");
    // A real store, for a damaged copy and a newer one.
    let real = scratch.path().join("real.db");
    block_on(async { write_some(&open(&real).await).await });
    let whole = std::fs::read(&real).expect("reads the store");
    let cut = whole[..4096.min(whole.len())].to_vec();
    rusqlite::Connection::open(&real)
        .and_then(|conn| conn.pragma_update(None, "user_version", 99))
        .expect("makes the store newer");
    let newer = std::fs::read(&real).expect("reads the store");
    // Another application's database, and an SQLite database with nothing
    // in it.
    let other = scratch.path().join("other.db");
    rusqlite::Connection::open(&other)
        .and_then(|conn| {
            conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
        })
        .expect("makes another application's database");
    let foreign = std::fs::read(&other).expect("reads it");
    let bare = scratch.path().join("bare.db");
    rusqlite::Connection::open(&bare)
        .and_then(|conn| conn.execute_batch("PRAGMA user_version = 0; VACUUM;"))
        .expect("makes an SQLite database with nothing in it");
    let nothing = std::fs::read(&bare).expect("reads it");
    assert!(!nothing.is_empty(), "the header at least");

    for (name, contents, expect) in [
        (
            "empty.db",
            &b""[..],
            "an empty file, not a loomfence database",
        ),
        (
            "notes.txt",
            &b"not a database, just text long enough to be a file\n"[..],
            "not an SQLite database",
        ),
        ("damaged.db", &cut[..], "damaged SQLite database"),
        (
            "foreign.db",
            &foreign[..],
            "another application's SQLite database",
        ),
        (
            "nothing.db",
            &nothing[..],
            "init creates a store only where there is none",
        ),
        ("newer.db", &newer[..], "newer than this build's"),
    ] {
        for json in [&["--json"][..], &[]] {
            let stderr = common::assert_refused_unchanged(
                "init",
                &scratch.path().join(name),
                contents,
                json,
                expect,
            );
            assert!(stderr.starts_with("error: "), "{name}: {stderr}");
        }
        for suffix in ["-wal", "-shm", "-journal"] {
            let companion = scratch.path().join(format!("{name}{suffix}"));
            assert!(!companion.exists(), "{name}: {suffix} left");
        }
    }

    // A missing directory, and a leftover companion, are refused too.
    let out = init(&["--store", &scratch.store("nosuch/x.db")]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::write(scratch.path().join("left.db-wal"), b"").expect("writes");
    let out = init(&["--store", &scratch.store("left.db")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("left.db-wal"), "{stderr}");
    assert!(
        !scratch.path().join("left.db").exists(),
        "nothing was created"
    );
}

#[test]
fn stores_in_memory_are_refused() {
    for store in ["memory", "sqlite::memory:"] {
        let out = init(&["--store", store]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{store}: {stderr}");
        assert!(
            stderr.contains("nothing to initialise"),
            "{store}: {stderr}"
        );
    }
    let out = init(&["--store", "sqlite:x.db", "--schema", "app"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A plain connection to the test server, for what the store does not
/// offer: foreign tables, the catalog.
async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("an admin connection");
    tokio::spawn(async move {
        let _ended = connection.await;
    });
    client
}

/// Whether `schema` has the table `table`.
async fn has_table(client: &tokio_postgres::Client, schema: &str, table: &str) -> bool {
    client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = $2)",
            &[&schema, &table],
        )
        .await
        .expect("asks")
        .get(0)
}

#[test]
fn postgres_creates_migrates_and_refuses_a_schema_that_is_not_ours() {
    let Some(url) = common::postgres_url("the PostgreSQL init test") else {
        return;
    };
    let pid = std::process::id();
    let fresh = format!("cli_init_new_{pid}");
    let empty = format!("cli_init_empty_{pid}");
    let foreign = format!("cli_init_foreign_{pid}");
    let store = format!("postgres:{url}");
    let version = loomfence_postgres::migration::SCHEMA_VERSION;
    block_on(async {
        admin(&url)
            .await
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {fresh} CASCADE; DROP SCHEMA IF EXISTS {empty} CASCADE; \
                 DROP SCHEMA IF EXISTS {foreign} CASCADE; CREATE SCHEMA {empty}; \
                 CREATE SCHEMA {foreign}; CREATE TABLE {foreign}.orders (id int); \
                 INSERT INTO {foreign}.orders VALUES (7)"
            ))
            .await
            .expect("sets up the schemas");
    });

    // A missing schema is created; a second init finds it up to date.
    let json = init_json(&["--store", &store, "--schema", &fresh]);
    assert_eq!(json["schema"], fresh.as_str(), "{json}");
    assert_eq!(
        (
            json["created"].clone(),
            json["migrated"].clone(),
            json["version"].clone()
        ),
        (true.into(), true.into(), version.into()),
        "{json}"
    );
    let out = init(&["--store", &store, "--schema", &fresh]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "(schema {fresh}): already a loomfence store, version {version}: up to date"
        )),
        "{stdout}"
    );

    // Data written into it is kept by another init, and a dry run reads it.
    let before = block_on(async {
        let pg = common::connect_schema(&url, &fresh, false).await;
        write_some(&pg).await
    });
    let json = init_json(&["--store", &store, "--schema", &fresh]);
    assert_eq!(json["migrated"], false, "{json}");
    // A store whose ledger says the version before this build's is
    // migrated, and keeps its data.
    block_on(async {
        admin(&url)
            .await
            .batch_execute(&format!(
                "UPDATE {fresh}.migrations SET detail = '{}' WHERE name = 'schema-version'",
                version - 1
            ))
            .await
            .expect("makes the store look older");
    });
    let out = init(&["--store", &store, "--schema", &fresh]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "(schema {fresh}): already a loomfence store; migrated to version {version}"
        )),
        "{stdout}"
    );
    let after = block_on(async {
        let pg = loomfence_postgres::PostgresEventStore::connect_read_only(
            &url,
            loomfence_postgres::PostgresOptions {
                schema: loomfence_postgres::Schema::new(&fresh).expect("a schema name"),
                pool_size: 2,
                ..loomfence_postgres::PostgresOptions::default()
            },
        )
        .await
        .expect("connects");
        read_some(&pg).await
    });
    assert_eq!(after, before, "the data is kept");
    let report = dry_run_works(&["--store", &store, "--schema", &fresh]);
    assert_eq!(report["examined"], 2, "{report}");

    // An existing, empty schema is made a store.
    let json = init_json(&["--store", &store, "--schema", &empty]);
    assert_eq!(json["created"], true, "{json}");
    dry_run_works(&["--store", &store, "--schema", &empty]);

    // A schema holding another application's table is refused, untouched.
    let out = init(&["--store", &store, "--schema", &foreign]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("another application's"), "{stderr}");
    assert!(stderr.contains("left this untouched"), "{stderr}");
    block_on(async {
        let client = admin(&url).await;
        assert!(
            !has_table(&client, &foreign, "migrations").await,
            "no ledger was made"
        );
        assert!(
            !has_table(&client, &foreign, "events").await,
            "no table was made"
        );
        let rows: i64 = client
            .query_one(&format!("SELECT count(*) FROM {foreign}.orders"), &[])
            .await
            .expect("counts")
            .get(0);
        assert_eq!(rows, 1, "its table is as it was");
        client
            .batch_execute(&format!(
                "DROP SCHEMA {fresh} CASCADE; DROP SCHEMA {empty} CASCADE; DROP SCHEMA {foreign} CASCADE"
            ))
            .await
            .expect("cleans up");
    });
}
