//! The park-fence backfill: parks written before fence rows existed.
//!
//! A park append writes the execution's token-0 fence row, so an answering
//! append always has a row to lock `FOR SHARE`. A park written by an older
//! version has none; these tests simulate that by deleting the fence rows
//! and the backfill's marker, then show that `migrate` (or the offline,
//! batched `backfill_park_fences`) writes exactly the missing rows, that the
//! race holds over such parks afterwards, and that it does not before.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::race::{self, Path, Setup, Trial};
use common::{kernel, park};
use loomfence_core::{KernelKind, NewEvent};
use loomfence_postgres::migration::{BackfillReport, MigrateOptions, backfill_park_fences};
use loomfence_postgres::{PostgresEventStore, PostgresOptions};
use loomfence_store::EventStore;

/// How an execution's log looks when the "older version" stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Started and parked.
    Open,
    /// Parked, then an unfenced `EXECUTION_DENIED` (ignorable): still open.
    OpenDenied,
    /// Parked, then an unstamped application event: still open.
    OpenAppEvent,
    /// Parked, resumed, parked again: the newest park is open.
    Reparked,
    /// Parked, then answered by an unfenced `EXECUTION_RESUMED`.
    Answered,
    /// Parked, then completed.
    Ended,
    /// Parked, then a kind from a newer node stamped `kernel: true`
    /// (answering).
    Stamped,
    /// Started, never parked.
    Running,
}

impl Shape {
    /// Writes the log; returns the sequence of the open park, if any.
    async fn write(self, store: &PostgresEventStore, id: &str) -> Option<u64> {
        let id = &common::id(id);
        if self == Shape::Running {
            store
                .append(id, kernel(KernelKind::ExecutionStarted))
                .await
                .expect("starts");
            return None;
        }
        let park_seq = park(store, id).await;
        let after: Option<NewEvent> = match self {
            Shape::Open | Shape::Running => None,
            Shape::OpenDenied => Some(kernel(KernelKind::ExecutionDenied)),
            Shape::OpenAppEvent => Some(NewEvent::new("app.progress", common::AT)),
            Shape::Reparked => {
                store
                    .append(id, kernel(KernelKind::ExecutionResumed))
                    .await
                    .expect("resumes");
                let again = store
                    .append(id, kernel(KernelKind::ExecutionSuspended))
                    .await
                    .expect("parks again");
                return Some(again.sequence);
            }
            Shape::Answered => Some(kernel(KernelKind::ExecutionResumed)),
            Shape::Ended => Some(kernel(KernelKind::ExecutionCompleted)),
            Shape::Stamped => {
                Some(NewEvent::new("NEWER_KERNEL_KIND", common::AT).with_kernel_stamp())
            }
        };
        if let Some(event) = after {
            store
                .append(id, event)
                .await
                .expect("appends after the park");
        }
        match self {
            Shape::Open | Shape::OpenDenied | Shape::OpenAppEvent => Some(park_seq),
            _ => None,
        }
    }
}

/// Writes every `(id, shape)` with a few tasks side by side; returns the open
/// parks, by id.
async fn write_all(
    store: &Arc<PostgresEventStore>,
    executions: Vec<(String, Shape)>,
) -> Vec<(String, u64)> {
    const LANES: usize = 8;
    let mut lanes: Vec<Vec<(String, Shape)>> = vec![Vec::new(); LANES];
    for (index, execution) in executions.into_iter().enumerate() {
        lanes[index % LANES].push(execution);
    }
    let tasks: Vec<_> = lanes
        .into_iter()
        .map(|mine| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut open = Vec::new();
                for (id, shape) in mine {
                    if let Some(park_seq) = shape.write(&store, &id).await {
                        open.push((id, park_seq));
                    }
                }
                open
            })
        })
        .collect();
    let mut open = Vec::new();
    for task in tasks {
        open.extend(task.await.expect("a writer lane"));
    }
    open.sort();
    open
}

/// Turns the schema back into what an older version left: no fence rows and
/// no backfill marker.
async fn forget_fences(admin: &tokio_postgres::Client, store: &PostgresEventStore) {
    let schema = store.schema();
    admin
        .batch_execute(&format!(
            "DELETE FROM {schema}.fences; \
             DELETE FROM {schema}.migrations WHERE name = 'park-fence-backfill'"
        ))
        .await
        .expect("simulates the older version");
    assert!(fence_rows(admin, store).await.is_empty());
}

/// Every fence row: `(id, token)`, ordered by id.
async fn fence_rows(
    admin: &tokio_postgres::Client,
    store: &PostgresEventStore,
) -> Vec<(String, i64)> {
    admin
        .query(
            &format!(
                "SELECT execution_id, token FROM {}.fences ORDER BY execution_id",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("reads the fence rows")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// Asserts a walk finished: its marker is written and its cursor is gone.
async fn assert_walk_finished(admin: &tokio_postgres::Client, store: &PostgresEventStore) {
    assert!(
        ledger(admin, store, "park-fence-backfill").await.is_some(),
        "the walk writes its marker"
    );
    assert!(
        ledger(admin, store, "park-fence-backfill-cursor")
            .await
            .is_none(),
        "the cursor goes once the walk is done"
    );
}

/// The ledger row `name`'s detail, if the row exists.
async fn ledger(
    admin: &tokio_postgres::Client,
    store: &PostgresEventStore,
    name: &str,
) -> Option<Option<String>> {
    admin
        .query_opt(
            &format!(
                "SELECT detail FROM {}.migrations WHERE name = $1",
                store.schema()
            ),
            &[&name],
        )
        .await
        .expect("reads the ledger")
        .map(|row| row.get(0))
}

/// Token-0 rows for exactly `ids`.
fn zero_rows(ids: impl IntoIterator<Item = String>) -> Vec<(String, i64)> {
    let mut rows: Vec<(String, i64)> = ids.into_iter().map(|id| (id, 0)).collect();
    rows.sort();
    rows
}

/// Races an unfenced answer (alternately `append_if_parked` and a plain
/// `append`) against `acquire_fence_if({0, park})` on each open park.
fn unfenced_trials(open: &[(String, u64)]) -> Vec<Trial> {
    open.iter()
        .enumerate()
        .map(|(index, (id, park_seq))| Trial {
            id: id.clone(),
            path: if index % 2 == 0 {
                Path::IfParked
            } else {
                Path::Unfenced
            },
            setup: Some(Setup {
                park_seq: *park_seq,
                token: 0,
            }),
        })
        .collect()
}

/// A store with room for the race's lanes.
async fn store(url: &str, migrate: MigrateOptions) -> Arc<PostgresEventStore> {
    Arc::new(
        common::store_with(
            url,
            PostgresOptions {
                pool_size: 12,
                migrate,
                ..common::options()
            },
        )
        .await,
    )
}

/// `migrate` writes a token-0 row for exactly the parked, unanswered
/// executions of an older version, once; afterwards the unfenced answer and
/// the conditional acquire never both win over those parks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrate_backfills_exactly_the_open_parks_and_the_race_then_holds() {
    let Some(url) = common::url() else { return };
    let store = store(&url, MigrateOptions::default()).await;
    let admin = common::admin(&url).await;
    let mut executions = Vec::new();
    for i in 0..300 {
        let shape = match i % 25 {
            0 => Shape::Reparked,
            1 | 2 => Shape::OpenDenied,
            3 => Shape::OpenAppEvent,
            _ => Shape::Open,
        };
        executions.push((format!("pre-open-{i:03}"), shape));
    }
    for i in 0..40 {
        executions.push((format!("pre-answered-{i:02}"), Shape::Answered));
    }
    for (i, shape) in [Shape::Ended, Shape::Stamped, Shape::Running]
        .into_iter()
        .cycle()
        .take(15)
        .enumerate()
    {
        executions.push((format!("pre-other-{i:02}"), shape));
    }
    let open = write_all(&store, executions).await;
    assert_eq!(open.len(), 300);
    forget_fences(&admin, &store).await;

    let report = store.migrate().await.expect("migrates");
    println!(
        "migrate over an older version's log: backfilled {:?} of {} executions",
        report.backfilled, 355
    );
    assert_eq!(report.backfilled, Some(open.len() as u64));
    assert_eq!(
        fence_rows(&admin, &store).await,
        zero_rows(open.iter().map(|(id, _)| id.clone())),
        "exactly the open parks have a token-0 row"
    );
    assert!(
        ledger(&admin, &store, "park-fence-backfill")
            .await
            .is_some()
    );
    let again = store.migrate().await.expect("migrates again");
    assert_eq!(again.backfilled, None, "the backfill runs once");

    let tally = race::run(&store, unfenced_trials(&open), 4, false).await;
    println!("race over backfilled pre-version parks: {tally}");
    tally.assert_exclusive("race over backfilled pre-version parks");
    assert_eq!(tally.trials, 300);
    assert!(tally.append_won > 0 && tally.acquire_won > 0, "{tally}");
}

/// Why the backfill exists: without a fence row (a pre-version park, no
/// backfill), an unfenced answer locks nothing, so the conditional acquire
/// can win over an answer that landed. Each answer path gets 150 such parks
/// and stops at its first double success.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_backfill_an_unfenced_answer_and_the_acquire_can_both_win() {
    let Some(url) = common::url() else { return };
    let store = store(&url, MigrateOptions::default()).await;
    let admin = common::admin(&url).await;
    let executions = (0..300)
        .map(|i| (format!("unfilled-{i:03}"), Shape::Open))
        .collect();
    let open = write_all(&store, executions).await;
    forget_fences(&admin, &store).await;
    let no_stop = std::env::var("LOOMFENCE_FAIL_FIRST_NO_STOP").is_ok_and(|v| !v.is_empty());
    for (path, parks) in [
        (Path::IfParked, &open[..150]),
        (Path::Unfenced, &open[150..]),
    ] {
        let trials = parks
            .iter()
            .map(|(id, park_seq)| Trial {
                id: id.clone(),
                path,
                setup: Some(Setup {
                    park_seq: *park_seq,
                    token: 0,
                }),
            })
            .collect();
        let tally = race::run(&store, trials, 4, !no_stop).await;
        println!(
            "race {path:?} over pre-version parks WITHOUT the backfill: {tally} (hit rate {:.2}%)",
            100.0 * tally.both_won as f64 / tally.trials.max(1) as f64
        );
        assert!(
            tally.both_won > 0,
            "{path:?}: no double success without the backfill: {tally}"
        );
    }
}

/// The offline, batched backfill: switched off in `migrate`, nothing is
/// written; offline it writes the same rows in `ceil(n / batch)` batches,
/// writes the marker, drops its temporary index, and a second run does
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_offline_backfill_walks_in_batches_writes_the_marker_and_drops_its_index() {
    let Some(url) = common::url() else { return };
    let off = MigrateOptions {
        backfill_park_fences: false,
        ..MigrateOptions::default()
    };
    let store = store(&url, off).await;
    let admin = common::admin(&url).await;
    let executions = (0..25)
        .map(|i| {
            let shape = if i % 3 == 0 {
                Shape::Answered
            } else {
                Shape::Open
            };
            (format!("bf-{i:02}"), shape)
        })
        .chain((0..3).map(|i| (format!("bf-running-{i}"), Shape::Running)))
        .collect();
    let open = write_all(&store, executions).await;
    assert_eq!(open.len(), 16);
    forget_fences(&admin, &store).await;

    let report = store.migrate().await.expect("migrates");
    assert_eq!(report.backfilled, None, "the backfill is switched off");
    assert!(
        fence_rows(&admin, &store).await.is_empty(),
        "nothing written"
    );
    assert!(
        ledger(&admin, &store, "park-fence-backfill")
            .await
            .is_none()
    );

    let report = backfill_park_fences(store.pool(), store.schema(), 7)
        .await
        .expect("the offline backfill");
    println!("offline backfill, 25 parked executions in batches of 7: {report:?}");
    assert_eq!(
        report,
        BackfillReport {
            already_done: false,
            batches: 4,
            written: 16,
        },
        "25 parked executions in batches of 7"
    );
    assert_eq!(
        fence_rows(&admin, &store).await,
        zero_rows(open.iter().map(|(id, _)| id.clone()))
    );
    assert_walk_finished(&admin, &store).await;
    let leftover: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'events_parks_backfill'",
            &[&store.schema().as_str()],
        )
        .await
        .expect("reads pg_indexes")
        .get(0);
    assert_eq!(leftover, 0, "the temporary index is dropped");

    let second = backfill_park_fences(store.pool(), store.schema(), 7)
        .await
        .expect("a second offline backfill");
    assert_eq!(
        second,
        BackfillReport {
            already_done: true,
            batches: 0,
            written: 0,
        }
    );
    let with_backfill = loomfence_postgres::migration::migrate(
        store.pool(),
        store.schema(),
        &MigrateOptions::default(),
    )
    .await
    .expect("migrates with the backfill on");
    assert_eq!(
        with_backfill.backfilled, None,
        "migrate honours the offline marker"
    );
}

/// An interrupted offline walk resumes from its cursor: only executions after
/// the cursor's id are visited.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_offline_backfill_resumes_from_its_cursor() {
    let Some(url) = common::url() else { return };
    let off = MigrateOptions {
        backfill_park_fences: false,
        ..MigrateOptions::default()
    };
    let store = store(&url, off).await;
    let admin = common::admin(&url).await;
    let executions = (0..25)
        .map(|i| {
            let shape = if i % 3 == 0 {
                Shape::Answered
            } else {
                Shape::Open
            };
            (format!("cur-{i:02}"), shape)
        })
        .collect();
    let open = write_all(&store, executions).await;
    forget_fences(&admin, &store).await;
    admin
        .execute(
            &format!(
                "INSERT INTO {}.migrations (name, detail) VALUES ('park-fence-backfill-cursor', 'cur-09')",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("plants the cursor");

    let report = backfill_park_fences(store.pool(), store.schema(), 5)
        .await
        .expect("the offline backfill resumes");
    println!("offline backfill resumed after cur-09, batches of 5: {report:?}");
    let after: BTreeSet<String> = open
        .iter()
        .map(|(id, _)| id.clone())
        .filter(|id| id.as_str() > "cur-09")
        .collect();
    assert_eq!(after.len(), 10, "cur-10..cur-24 minus the answered ones");
    assert_eq!(
        report,
        BackfillReport {
            already_done: false,
            batches: 3,
            written: 10,
        },
        "15 parked executions after the cursor, in batches of 5"
    );
    assert_eq!(fence_rows(&admin, &store).await, zero_rows(after));
    assert_walk_finished(&admin, &store).await;
}

/// The temporary index the offline walk reads parks through.
const WALK_INDEX: &str = "events_parks_backfill";

/// The walk's index in `store`'s schema: `None` when there is none, else
/// whether it is valid (`pg_index.indisvalid`: the planner uses an index
/// only when it is).
async fn walk_index(admin: &tokio_postgres::Client, store: &PostgresEventStore) -> Option<bool> {
    admin
        .query_opt(
            "SELECT i.indisvalid FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = $2",
            &[&store.schema().as_str(), &WALK_INDEX],
        )
        .await
        .expect("reads pg_index")
        .map(|row| row.get(0))
}

/// Whether the planner, told to avoid sequential scans and given fresh
/// statistics (on a table this small its guesses decide the plan), reads parks by kind
/// through the walk's index (it never plans with an invalid one).
async fn planner_uses_walk_index(
    admin: &tokio_postgres::Client,
    store: &PostgresEventStore,
) -> bool {
    let park = KernelKind::ExecutionSuspended.as_str();
    let plan = admin
        .simple_query(&format!(
            "ANALYZE {schema}.events; SET enable_seqscan = off; \
             EXPLAIN SELECT DISTINCT execution_id FROM {schema}.events \
             WHERE kind = '{park}' AND execution_id > '' ORDER BY execution_id LIMIT 4; \
             RESET enable_seqscan",
            schema = store.schema()
        ))
        .await
        .expect("explains a park lookup");
    plan.iter().any(|message| match message {
        tokio_postgres::SimpleQueryMessage::Row(row) => {
            row.get(0).is_some_and(|line| line.contains(WALK_INDEX))
        }
        _ => false,
    })
}

/// Waits (up to 10 s) until a backend named `application_name` waits on a
/// lock while running a statement that starts with `statement`; returns its
/// pid. Panics if `run` ends first or the time runs out.
async fn waiting_backend<T>(
    monitor: &tokio_postgres::Client,
    application_name: &str,
    statement: &str,
    run: &tokio::task::JoinHandle<T>,
) -> i32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = monitor
            .query_opt(
                "SELECT pid FROM pg_stat_activity \
                 WHERE application_name = $1 AND wait_event_type = 'Lock' \
                   AND starts_with(query, $2) AND pid <> pg_backend_pid()",
                &[&application_name, &statement],
            )
            .await
            .expect("reads pg_stat_activity");
        if let Some(row) = found {
            return row.get(0);
        }
        assert!(
            !run.is_finished(),
            "the backfill ended before it waited in `{statement}`"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no backend of {application_name} waited in `{statement}` within 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Parked executions of every shape for the interruption tests; returns the
/// open parks' ids.
async fn older_version_parks(
    admin: &tokio_postgres::Client,
    store: &Arc<PostgresEventStore>,
    prefix: &str,
) -> Vec<String> {
    let executions = (0..30)
        .map(|i| {
            let shape = match i % 5 {
                0 => Shape::Answered,
                1 => Shape::Ended,
                2 => Shape::Reparked,
                _ => Shape::Open,
            };
            (format!("{prefix}-{i:02}"), shape)
        })
        .collect();
    let open = write_all(store, executions).await;
    forget_fences(admin, store).await;
    open.into_iter().map(|(id, _)| id).collect()
}

/// An interruption test's start: a store whose connections are named `app`
/// (so [`waiting_backend`] finds them), migrated with the backfill switched
/// off, over [`older_version_parks`]; an admin connection, and one to watch
/// the runs' backends from.
struct Interruptible {
    app: String,
    store: Arc<PostgresEventStore>,
    admin: tokio_postgres::Client,
    monitor: tokio_postgres::Client,
    /// The open parks' ids.
    open: Vec<String>,
}

impl Interruptible {
    /// Sets up an interruption test named `name`, its parks' ids starting
    /// with `prefix`.
    async fn new(url: &str, name: &str, prefix: &str) -> Self {
        let app = common::unique(name);
        let off = MigrateOptions {
            backfill_park_fences: false,
            ..MigrateOptions::default()
        };
        let store = store(&common::with_application_name(url, &app), off).await;
        let admin = common::admin(url).await;
        let monitor = common::admin(url).await;
        let open = older_version_parks(&admin, &store, prefix).await;
        Self {
            app,
            store,
            admin,
            monitor,
            open,
        }
    }

    /// Runs the offline backfill while an open transaction holds `lock` on
    /// events; once the run's backend waits on it in `statement`, stops
    /// that backend with `signal` (`pg_terminate_backend` or
    /// `pg_cancel_backend`), asserts the run fails, and ends the
    /// transaction.
    async fn interrupt_a_run(&self, url: &str, lock: &str, statement: &str, signal: &str) {
        let holder = common::hold_lock(
            url,
            &format!("LOCK TABLE {{t}} IN {lock} MODE"),
            &format!("{}.events", self.store.schema()),
        )
        .await;
        let run = {
            let store = self.store.clone();
            tokio::spawn(async move { backfill_park_fences(store.pool(), store.schema(), 4).await })
        };
        let pid = waiting_backend(&self.monitor, &self.app, statement, &run).await;
        let signalled: bool = self
            .admin
            .query_one(&format!("SELECT {signal}($1)"), &[&pid])
            .await
            .expect("signals the run's backend")
            .get(0);
        assert!(signalled, "{signal} found the run's backend");
        let first = run.await.expect("the first run's task");
        println!("backfill whose `{statement}` got {signal}: {first:?}");
        assert!(first.is_err(), "the interrupted run fails: {first:?}");
        holder
            .batch_execute("ROLLBACK")
            .await
            .expect("ends the transaction that held the lock");
    }
}

/// Kill the build: a `CREATE INDEX CONCURRENTLY` whose backend is terminated
/// while it waits for an open write transaction leaves an INVALID index
/// behind. The next run must not walk with it (`IF NOT EXISTS` alone would
/// keep it, and every batch would be a full scan): while that run's first
/// batch is held on a lock, the index it walks with is valid and the planner
/// uses it; afterwards every open park has its token-0 row and no index is
/// left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_index_build_is_rebuilt_not_reused() {
    let Some(url) = common::url() else { return };
    let world = Interruptible::new(&url, "bf_kill_build", "kill").await;
    assert_eq!(world.open.len(), 18);

    // An open write transaction on events: CREATE INDEX CONCURRENTLY records
    // the index, then waits for it before building.
    world
        .interrupt_a_run(
            &url,
            "ROW EXCLUSIVE",
            "CREATE INDEX",
            "pg_terminate_backend",
        )
        .await;
    let Interruptible {
        app,
        store,
        admin,
        monitor,
        open,
    } = world;
    let schema = store.schema().clone();
    assert_eq!(
        walk_index(&admin, &store).await,
        Some(false),
        "the killed build left an INVALID index"
    );
    assert!(fence_rows(&admin, &store).await.is_empty());

    // Hold the next run's first batch on a lock, to look at the index it
    // walks with.
    let blocker = common::admin(&url).await;
    blocker
        .batch_execute(&format!("BEGIN; LOCK TABLE {schema}.fences IN SHARE MODE"))
        .await
        .expect("locks the fence table");
    let run = {
        let store = store.clone();
        tokio::spawn(async move { backfill_park_fences(store.pool(), store.schema(), 4).await })
    };
    waiting_backend(
        &monitor,
        &app,
        &format!("INSERT INTO {schema}.fences"),
        &run,
    )
    .await;
    let walked_with = walk_index(&admin, &store).await;
    let planned = planner_uses_walk_index(&admin, &store).await;
    blocker
        .batch_execute("ROLLBACK")
        .await
        .expect("releases the fence table");
    let report = run
        .await
        .expect("the second run's task")
        .expect("the second run");
    println!(
        "backfill after a killed index build: {report:?}; walked with valid index: {walked_with:?}, planner used it: {planned}"
    );
    assert_eq!(
        walked_with,
        Some(true),
        "the walk read parks through a VALID index"
    );
    assert!(planned, "the planner reads parks through the walk's index");
    assert_eq!(
        report,
        BackfillReport {
            already_done: false,
            batches: 8,
            written: 18,
        },
        "30 parked executions in batches of 4, 18 of them open"
    );
    assert_eq!(fence_rows(&admin, &store).await, zero_rows(open));
    assert_walk_finished(&admin, &store).await;
    assert_eq!(walk_index(&admin, &store).await, None, "no index is left");
}

/// Cancel the drop: a run that wrote its marker but whose final
/// `DROP INDEX CONCURRENTLY` is cancelled (it waited for an open reader of
/// events) leaves the index. The next run sees the marker, writes nothing,
/// and still drops the index; no cursor row is left either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_index_drop_is_finished_by_the_next_run() {
    let Some(url) = common::url() else { return };
    let world = Interruptible::new(&url, "bf_cancel_drop", "drop").await;

    // An open transaction that has read events: the build and the walk do
    // not wait for it, DROP INDEX CONCURRENTLY does.
    world
        .interrupt_a_run(&url, "ACCESS SHARE", "DROP INDEX", "pg_cancel_backend")
        .await;
    let Interruptible {
        store, admin, open, ..
    } = world;
    assert!(
        ledger(&admin, &store, "park-fence-backfill")
            .await
            .is_some(),
        "the cancelled run wrote its marker"
    );
    assert!(
        walk_index(&admin, &store).await.is_some(),
        "the cancelled drop left the index"
    );
    assert_eq!(fence_rows(&admin, &store).await, zero_rows(open.clone()));

    let second = backfill_park_fences(store.pool(), store.schema(), 4)
        .await
        .expect("the second run");
    println!("backfill after a cancelled index drop: {second:?}");
    assert_eq!(
        second,
        BackfillReport {
            already_done: true,
            batches: 0,
            written: 0,
        }
    );
    assert_eq!(
        walk_index(&admin, &store).await,
        None,
        "the next run drops the index left behind"
    );
    assert!(
        ledger(&admin, &store, "park-fence-backfill-cursor")
            .await
            .is_none(),
        "no cursor row is left"
    );
    assert_eq!(fence_rows(&admin, &store).await, zero_rows(open));
}

/// A cursor row beside the marker (what a run of the previous version left
/// when it died between writing the marker and deleting the cursor) goes on
/// the next run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cursor_left_beside_the_marker_is_deleted() {
    let Some(url) = common::url() else { return };
    let store = store(&url, MigrateOptions::default()).await;
    let admin = common::admin(&url).await;
    admin
        .execute(
            &format!(
                "INSERT INTO {}.migrations (name, detail) VALUES ('park-fence-backfill-cursor', 'x')",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("plants the cursor");
    assert!(
        ledger(&admin, &store, "park-fence-backfill")
            .await
            .is_some()
    );
    let report = backfill_park_fences(store.pool(), store.schema(), 4)
        .await
        .expect("the offline backfill");
    assert!(report.already_done);
    assert!(
        ledger(&admin, &store, "park-fence-backfill-cursor")
            .await
            .is_none(),
        "the cursor left beside the marker is deleted"
    );
}
