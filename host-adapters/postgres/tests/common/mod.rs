//! Reaching the test server: `LOOMFENCE_PG_URL`, which `cargo xtask test`
//! sets after starting a throwaway cluster.
//!
//! Without it a test skips, unless `CI` is set: then it fails, because a CI
//! run that silently skipped the database would prove nothing.
//!
//! Also the helpers the PostgreSQL-specific tests share: fresh schemas and
//! names, admin connections beside the store, finding the store's backends
//! in `pg_stat_activity`, and (in [`race`]) the answer-versus-acquire race.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod race;

use std::sync::atomic::{AtomicU32, Ordering};

pub use loomfence_conformance::support::{AT, Witness, id, kernel, object, park};
use loomfence_conformance::{Store, cases, run_all};
use loomfence_postgres::{PostgresEventStore, PostgresOptions, Schema};
use tokio_postgres::NoTls;

/// The server's URL, or `None` (after saying so) when tests may skip.
pub fn url() -> Option<String> {
    server_var(
        "LOOMFENCE_PG_URL",
        "set LOOMFENCE_PG_URL, or run `cargo xtask test`, to run the PostgreSQL tests",
    )
}

/// The variable `name` that `cargo xtask test` sets for the test server:
/// its value; unset, `None` after printing `hint`, or, in CI, a failure.
fn server_var(name: &str, hint: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty()) => {
            panic!("CI is set but {name} is not: the PostgreSQL tests must not skip in CI")
        }
        _ => {
            eprintln!("skipped: {hint}");
            None
        }
    }
}

/// A schema name no other test in any process uses.
pub fn fresh_schema() -> Schema {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    Schema::new(format!("t{}_{n}", std::process::id())).expect("a valid schema name")
}

/// Options for a fresh schema.
pub fn options() -> PostgresOptions {
    PostgresOptions {
        schema: fresh_schema(),
        pool_size: 12,
        ..PostgresOptions::default()
    }
}

/// A migrated store on a fresh schema.
pub async fn store(url: &str) -> PostgresEventStore {
    PostgresEventStore::connect(url, options())
        .await
        .expect("connects and migrates")
}

/// A timer store on a fresh, migrated schema.
pub async fn timers(url: &str) -> loomfence_postgres::PostgresTimerStore {
    store(url).await.timers()
}

/// A name no other test in any process uses, for databases and ids:
/// `<prefix>_<pid>_<n>`, lowercase, a valid unquoted identifier when
/// `prefix` is one.
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    format!("{prefix}_{}_{n}", std::process::id())
}

/// A store opened with `options` (which should name a fresh schema).
pub async fn store_with(url: &str, options: PostgresOptions) -> PostgresEventStore {
    PostgresEventStore::connect(url, options)
        .await
        .expect("connects and migrates")
}

/// A plain connection outside the store, for setting up and inspecting what
/// the store cannot: row locks held on purpose, deleted rows, the catalog.
pub async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("an admin connection");
    tokio::spawn(async move {
        // The connection ends when the client is dropped or the server
        // closes it; either is fine for a test's admin session.
        let _ended = connection.await;
    });
    client
}

/// `url` with its database name replaced by `dbname`.
pub fn with_dbname(url: &str, dbname: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{dbname}", &base[..path_start]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `url` with `application_name=<name>` added, so a test can find its own
/// store's backends in `pg_stat_activity` whatever SQL they run.
pub fn with_application_name(url: &str, name: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name={name}")
}

/// An admin session holding `lock` (SQL naming the table as `{t}`) on
/// `table` in an open transaction, until the caller rolls it back.
pub async fn hold_lock(url: &str, lock: &str, table: &str) -> tokio_postgres::Client {
    let holder = admin(url).await;
    holder.batch_execute("BEGIN").await.expect("begins");
    holder
        .batch_execute(&lock.replace("{t}", table))
        .await
        .expect("takes the lock");
    holder
}

/// The control of the lock tests: the bare `ddl`, run on a fresh session
/// with a 200 ms lock timeout while the lock is held, gives up with
/// `LOCK_NOT_AVAILABLE`, which shows the lock really blocks what a boot
/// must not wait for. `what` names the case.
pub async fn assert_ddl_waits(url: &str, ddl: &str, what: &str) {
    let refused = admin(url)
        .await
        .batch_execute(&format!("SET lock_timeout = '200ms'; {ddl}"))
        .await
        .expect_err("the bare statement waits for the lock");
    assert_eq!(
        refused.code(),
        Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE),
        "{what}: {refused}"
    );
}

/// The backends named `$1` that wait on a lock, but the monitor itself.
const LOCK_WAITERS: &str = "SELECT pid FROM pg_stat_activity \
     WHERE wait_event_type = 'Lock' AND application_name = $1 AND pid <> pg_backend_pid()";

/// The backends named `$1` that wait for an advisory lock (the lock every
/// append and guarded delete takes on its execution first).
const ADVISORY_WAITERS: &str = "SELECT DISTINCT a.pid FROM pg_stat_activity a \
     JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted AND l.locktype = 'advisory' \
     WHERE a.application_name = $1";

/// The pids `query` lists for `application_name`. `monitor` must not be
/// inside a transaction: a session reads `pg_stat_activity` once per
/// transaction and keeps that snapshot.
async fn pids(monitor: &tokio_postgres::Client, query: &str, application_name: &str) -> Vec<i32> {
    monitor
        .query(query, &[&application_name])
        .await
        .expect("reads pg_stat_activity")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// The pids of the backends named `application_name` that wait on a lock.
pub async fn lock_waiters(monitor: &tokio_postgres::Client, application_name: &str) -> Vec<i32> {
    pids(monitor, LOCK_WAITERS, application_name).await
}

/// Waits (up to 10 s) until `ready` holds for the pids `query` lists for
/// `application_name`, or `done` says there is nothing left to wait for;
/// returns the pids last seen.
async fn poll_pids(
    monitor: &tokio_postgres::Client,
    query: &str,
    application_name: &str,
    ready: impl Fn(&[i32]) -> bool,
    done: impl Fn() -> bool,
) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let waiters = pids(monitor, query, application_name).await;
        if ready(&waiters) || done() || std::time::Instant::now() >= deadline {
            return waiters;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Waits (up to 10 s) until `ready` holds for the lock waiters named
/// `application_name`, or `done` says there is nothing left to wait for;
/// returns the waiters last seen.
pub async fn wait_for_waiters(
    monitor: &tokio_postgres::Client,
    application_name: &str,
    ready: impl Fn(&[i32]) -> bool,
    done: impl Fn() -> bool,
) -> Vec<i32> {
    poll_pids(monitor, LOCK_WAITERS, application_name, ready, done).await
}

/// Waits (up to 10 s) until one of `application_name`'s backends waits for
/// an advisory lock (an execution lock), or `done` says the call it would
/// be making has already finished (so it never will). Returns whether one
/// waits.
pub async fn wait_for_advisory_waiter(
    monitor: &tokio_postgres::Client,
    application_name: &str,
    done: impl Fn() -> bool,
) -> bool {
    !poll_pids(
        monitor,
        ADVISORY_WAITERS,
        application_name,
        |waiters| !waiters.is_empty(),
        done,
    )
    .await
    .is_empty()
}

/// Runs the whole conformance kit against the server at `url` with
/// `acquire`, each case on a fresh schema, and requires every case to pass.
pub async fn run_kit(label: &str, url: &str, acquire: loomfence_postgres::AcquireStrategy) {
    run_kit_through(label, url, acquire, |store| store).await;
}

/// [`run_kit`], with each case's store passed through `wrap` first.
pub async fn run_kit_through(
    label: &str,
    url: &str,
    acquire: loomfence_postgres::AcquireStrategy,
    wrap: fn(Store) -> Store,
) {
    let report = run_all(label, || {
        let url = url.to_owned();
        async move {
            let options = PostgresOptions {
                acquire,
                ..options()
            };
            wrap(std::sync::Arc::new(
                PostgresEventStore::connect(&url, options)
                    .await
                    .expect("connects"),
            ))
        }
    })
    .await;
    assert_eq!(report.passed, cases::ALL.len());
}

/// The throwaway server's certificate authority (`LOOMFENCE_PG_TLS_CA`,
/// which `cargo xtask test` sets beside the URL), under the same rule as
/// [`url`].
pub fn tls_ca() -> Option<std::path::PathBuf> {
    server_var(
        "LOOMFENCE_PG_TLS_CA",
        "set LOOMFENCE_PG_TLS_CA (the server's CA), or run `cargo xtask test`, to run the TLS tests",
    )
    .map(Into::into)
}

/// The test server's port, from its URL.
pub fn port(url: &str) -> u16 {
    let authority = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("a postgres:// URL");
    authority
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("the URL names its port")
}

/// A URL to the test server at `host` (`localhost`, which its certificate
/// names, or `127.0.0.1`, which it does not) as `user`, with `query`.
pub fn tls_url(url: &str, host: &str, user: &str, query: &str) -> String {
    format!("postgres://{user}@{host}:{}/postgres?{query}", port(url))
}

/// Whether the connection `store` hands out runs over TLS, as the server
/// sees it.
pub async fn over_tls(store: &PostgresEventStore) -> bool {
    let client = store.pool().get().await.expect("a pooled connection");
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .expect("reads pg_stat_ssl")
        .get(0)
}
