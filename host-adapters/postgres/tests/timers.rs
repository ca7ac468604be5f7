//! The PostgreSQL timer store against a real server: lease claims raced by
//! nodes on separate connections, rows the store did not write, ids ordered
//! by bytes whatever the database's collation. The store is held to the
//! core's `TimerTable` call for call by the timer kit's model case.

mod common;

use std::sync::Arc;

use loomfence_core::InputError;
use loomfence_core::timer::{
    Claim, Completed, DueFilter, ExhaustedQuery, Exhaustion, Held, Lease, MAX_DUE_LIMIT,
    MAX_TIMER_MS, NodeId, TimerQuery, TimerRow, UnreadableField,
};
use loomfence_postgres::{PostgresEventStore, PostgresOptions, PostgresTimerStore};
use loomfence_store::{StoreError, TimerStore};
use tokio::sync::Barrier;

/// Claimers racing for one row.
const CLAIMERS: usize = 8;

/// Races per test.
const ROUNDS: usize = 12;

/// A node id.
fn node(name: &str) -> NodeId {
    NodeId::new(name).expect("a valid node id")
}

/// A lease for `holder` at `now` for a minute.
fn lease(holder: &str, now: i64) -> Lease {
    Lease {
        holder: node(holder),
        now,
        duration_ms: 60_000,
    }
}

/// `CLAIMERS` timer stores on one fresh schema, each with a pool of one
/// connection, so each claimer is its own session, as separate nodes are.
async fn claimers(url: &str) -> (PostgresEventStore, Vec<Arc<PostgresTimerStore>>) {
    let first = common::store(url).await;
    let mut stores = Vec::new();
    for _ in 0..CLAIMERS {
        let node = PostgresEventStore::connect(
            url,
            PostgresOptions {
                schema: first.schema().clone(),
                pool_size: 1,
                migrate_on_connect: false,
                ..PostgresOptions::default()
            },
        )
        .await
        .expect("connects");
        stores.push(Arc::new(node.timers()));
    }
    (first, stores)
}

/// Every claimer claims at once (a barrier releases them together, on a
/// multi-threaded runtime); returns every claim made.
async fn race(stores: &[Arc<PostgresTimerStore>], now: i64) -> Vec<Claim> {
    let barrier = Arc::new(Barrier::new(stores.len()));
    let tasks: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                store
                    .claim_due(&lease(&format!("node-{i}"), now), 10, DueFilter::default())
                    .await
                    .expect("claims")
                    .claims
            })
        })
        .collect();
    let mut claims = Vec::new();
    for task in tasks {
        claims.extend(task.await.expect("a claim task"));
    }
    claims
}

/// Eight nodes on eight sessions claim one due row at once: exactly one
/// gets it (claim 1). Once its lease has ended, eight claim it again at
/// once: exactly one takes it over (claim 2), and only that one can retire
/// it. Rows of earlier rounds, still leased, are never claimed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn one_due_row_goes_to_exactly_one_of_eight_claimers() {
    let Some(url) = common::url() else { return };
    let (_events, stores) = claimers(&url).await;
    for round in 0..ROUNDS {
        // A millisecond apart: every earlier row's lease (taken over at
        // its `wake_at + 60 s`, for a minute) outlasts this round's races.
        let wake_at = 1_000_000 + i64::try_from(round).expect("small");
        let row = TimerRow::wake(common::id(&format!("raced-{round}")), wake_at);
        stores[0].schedule(&row).await.expect("schedules");

        let first = race(&stores, wake_at).await;
        assert_eq!(first.len(), 1, "round {round}: {first:?}");
        assert_eq!((first[0].row.clone(), first[0].number), (row.clone(), 1));

        let later = wake_at + 60_000;
        let second = race(&stores, later).await;
        assert_eq!(
            second.len(),
            1,
            "round {round}, after the lease: {second:?}"
        );
        assert_eq!((second[0].row.clone(), second[0].number), (row.clone(), 2));

        assert_eq!(
            stores[0].complete(&first[0]).await.expect("completes"),
            Completed::NotHeld,
            "the first claim was taken over"
        );
        if round % 2 == 0 {
            assert_eq!(
                stores[3].complete(&second[0]).await.expect("completes"),
                Completed::Done
            );
        }
    }
    let left = stores[0]
        .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("lists");
    assert_eq!(left.len(), ROUNDS / 2, "the odd rounds' rows stay, held");
}

/// Bad values, written behind the store's back, each in a row due now:
/// `(execution_id, wake_at, redrive, claims)` as SQL literals.
const CORRUPT: &[(&str, &str, &str, &str)] = &[
    ("'bad-json'", "10", "'\"oops\"'", "0"),
    ("'negative-attempt'", "10", "'{\"attempt\": -1}'", "0"),
    ("'fraction'", "10", "'{\"attempt\": 1.5}'", "0"),
    ("'too-large'", "10", "'{\"attempt\": 2147483648}'", "0"),
    ("'extra-field'", "10", "'{\"attempt\": 1, \"x\": 2}'", "0"),
    ("'no-attempt'", "10", "'{}'", "0"),
    ("'json-null'", "10", "'null'", "0"),
    ("'negative-time'", "-5", "NULL", "0"),
    ("''", "10", "NULL", "0"),
];

/// The error a corrupt row reads back as.
fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    match &result {
        Err(error @ StoreError::Backend(backend)) => {
            assert!(!backend.retryable, "{what}: {error}");
            assert!(
                error.to_string().contains("corrupt timer row"),
                "{what}: {error}"
            );
        }
        other => panic!("{what}: expected a permanent corrupt-row error, got {other:?}"),
    }
}

/// A row the store did not write (a re-drive flag that is not
/// `{"attempt": n}` with n in 0..=2^31-1, JSON null, a negative time, an
/// empty id) is a typed permanent error, never a panic, for a listing; a
/// claim leaves it unclaimed and reports it. A claim count out of range is
/// caught by the claim alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_row_that_does_not_read_back_fails_a_listing_and_is_not_claimed() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let table = format!("{}.timers", store.schema());
    let admin = common::admin(&url).await;
    let mut cases: Vec<(&str, &str, &str, &str)> = CORRUPT.to_vec();
    cases.push(("'claims-out-of-range'", "10", "NULL", "-2"));
    for (id, wake_at, redrive, claims) in cases {
        admin
            .batch_execute(&format!(
                "INSERT INTO {table} (execution_id, wake_at, redrive, claims) \
                 VALUES ({id}, {wake_at}, {redrive}::jsonb, {claims})"
            ))
            .await
            .expect("writes the bad row");
        if claims == "0" {
            assert_corrupt(store.due(100, 10, DueFilter::default()).await, id);
        }
        let page = store
            .claim_due(&lease("claimer", 100), 10, DueFilter::default())
            .await
            .unwrap_or_else(|e| panic!("{id}: the claim fails: {e}"));
        assert_eq!(page.claims, [], "{id}");
        assert_eq!(page.unreadable.len(), 1, "{id}: reported: {page:?}");
        let row = admin
            .query_one(
                &format!("SELECT holder, lease_until, claims FROM {table}"),
                &[],
            )
            .await
            .expect("reads the row");
        let (holder, until, after): (Option<String>, Option<i64>, i64) =
            (row.get(0), row.get(1), row.get(2));
        assert_eq!(
            (holder, until, after.to_string()),
            (None, None, claims.to_owned()),
            "{id}: the damaged row was not claimed"
        );
        admin
            .batch_execute(&format!("DELETE FROM {table}"))
            .await
            .expect("clears the table");
    }
    // The store still works on the same pool.
    let row = TimerRow::redrive(common::id("after"), 10, 3);
    store.schedule(&row).await.expect("schedules");
    let claimed = store
        .claim_due(&lease("claimer", 100), 10, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].row, row);
}

/// Gives the table's `execution_id` a linguistic collation, as a table
/// created in a database whose default is one (`en_US.UTF-8`, ICU) has, so
/// that ordering by the column's own collation would put `"a"` before
/// `"B"`. Returns the collation used, or `None` if the server has none (the
/// test then runs on the database's default, and says so).
async fn linguistic_ids(url: &str, store: &PostgresTimerStore) -> Option<String> {
    let admin = common::admin(url).await;
    let collation: Option<String> = admin
        .query_opt(
            "SELECT collname::text FROM pg_collation \
             WHERE collname IN ('und-x-icu', 'en-x-icu', 'en_US.utf8', 'en_US.UTF-8', 'en_US') \
               AND collencoding IN (-1, pg_char_to_encoding('UTF8')) \
             ORDER BY collname DESC LIMIT 1",
            &[],
        )
        .await
        .expect("reads the catalog")
        .map(|row| row.get(0));
    let Some(collation) = collation else {
        eprintln!("no linguistic collation on this server: ordering checked on the default only");
        return None;
    };
    let linguistic: bool = admin
        .query_one(&format!("SELECT 'a' < ('B' COLLATE \"{collation}\")"), &[])
        .await
        .expect("compares")
        .get(0);
    assert!(linguistic, "{collation} puts \"a\" before \"B\"");
    admin
        .batch_execute(&format!(
            "ALTER TABLE {}.timers ALTER COLUMN execution_id TYPE text COLLATE \"{collation}\"",
            store.schema()
        ))
        .await
        .expect("changes the column's collation");
    Some(collation)
}

/// Ids sort by their bytes, as the core's `TimerTable` sorts them: `"B"`
/// (0x42) before `"a"` (0x61) before `"é"` (0xC3 0xA9), whatever the
/// column's or the database's collation says; listings and claims page by
/// that order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ids_are_ordered_by_their_bytes() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let collation = linguistic_ids(&url, &store).await;
    println!("execution_id collation: {collation:?}");
    let ids = ["é", "a", "B", "_", "a b", "Z", "ab"];
    for id in ids {
        store
            .schedule(&TimerRow::wake(common::id(id), 5))
            .await
            .expect("schedules");
    }
    let mut sorted: Vec<&str> = ids.to_vec();
    sorted.sort_unstable();
    let listed: Vec<String> = store
        .due(5, 100, DueFilter::default())
        .await
        .expect("lists")
        .into_iter()
        .map(|row| row.execution_id.as_str().to_owned())
        .collect();
    assert_eq!(listed, sorted);
    let page: Vec<String> = store
        .claim_due(&lease("n", 5), 3, DueFilter::default())
        .await
        .expect("claims")
        .claims
        .into_iter()
        .map(|claim| claim.row.execution_id.as_str().to_owned())
        .collect();
    assert_eq!(page, sorted[..3]);
    // The operator's listing: its order, its `after` and its unreadable
    // half's bound compare ids as bytes too.
    let listing = store
        .list(&TimerQuery::default())
        .await
        .expect("lists with claims");
    assert_eq!(listing.unreadable, []);
    let ids_of = |entries: &[loomfence_core::timer::TimerEntry]| -> Vec<String> {
        entries
            .iter()
            .map(|entry| entry.row.execution_id.as_str().to_owned())
            .collect()
    };
    assert_eq!(ids_of(&listing.entries), sorted);
    let after_a = store
        .list(&TimerQuery {
            after: Some((5, common::id("a"))),
            limit: 2,
            ..TimerQuery::default()
        })
        .await
        .expect("lists after a key");
    let from_a = sorted.iter().position(|id| *id == "a").expect("listed") + 1;
    assert_eq!(ids_of(&after_a.entries), sorted[from_a..from_a + 2]);
    // The exhausted records, keyed in their own table, come in byte order:
    // every row claimed after the leases ended, and exhausted.
    let claims = store
        .claim_due(&lease("m", 100_000), 100, DueFilter::default())
        .await
        .expect("claims every row")
        .claims;
    assert_eq!(claims.len(), sorted.len());
    let given_up = Exhaustion { attempts: 1, at: 6 };
    for claim in claims.iter().rev() {
        assert_eq!(
            store.exhaust(claim, &given_up).await.expect("exhausts"),
            Completed::Done
        );
    }
    let records: Vec<String> = store
        .exhausted(&ExhaustedQuery::default())
        .await
        .expect("lists the records")
        .into_iter()
        .map(|record| record.row.execution_id.as_str().to_owned())
        .collect();
    assert_eq!(records, sorted);
    let after_b: Vec<String> = store
        .exhausted(&ExhaustedQuery {
            after: Some((common::id("B"), 5)),
            limit: 1,
            ..ExhaustedQuery::default()
        })
        .await
        .expect("lists after a key")
        .into_iter()
        .map(|record| record.row.execution_id.as_str().to_owned())
        .collect();
    let from_b = sorted.iter().position(|id| *id == "B").expect("listed") + 1;
    assert_eq!(after_b, sorted[from_b..from_b + 1]);
}

/// Input out of range is refused with the core's typed error before the
/// server is asked anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn input_out_of_range_is_refused_before_anything_is_touched() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let refused = store.schedule(&TimerRow::wake(common::id("x"), -1)).await;
    assert!(
        matches!(refused, Err(StoreError::Input(InputError::Time { .. }))),
        "{refused:?}"
    );
    let refused = store.due(0, 0, DueFilter::default()).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Input(InputError::DueLimit { limit: 0 }))
        ),
        "{refused:?}"
    );
    let mut long = lease("n", 0);
    long.duration_ms = 0;
    let refused = store.claim_due(&long, 1, DueFilter::default()).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Input(InputError::LeaseDuration { .. }))
        ),
        "{refused:?}"
    );
    assert!(
        store
            .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .expect("lists")
            .is_empty()
    );
}

/// A row whose claim does not read back (an empty holder, a holder with
/// no lease end) is reported by the operator's listing, by key and as the
/// claim's column, and the rows around it are listed with their claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_that_does_not_read_back_is_reported_by_the_listing() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let admin = common::admin(&url).await;
    admin
        .batch_execute(&format!(
            "INSERT INTO {}.timers (execution_id, wake_at, holder, lease_until, claims) VALUES \
               ('ok', 1, 'n1', 50, 2), ('holder-empty', 2, '', 50, 1), \
               ('holder-no-lease', 3, 'n1', NULL, 1), ('free', 4, NULL, NULL, 0)",
            store.schema()
        ))
        .await
        .expect("plants the rows");
    let listing = store.list(&TimerQuery::default()).await.expect("lists");
    let listed: Vec<_> = listing
        .entries
        .iter()
        .map(|entry| (entry.row.execution_id.as_str(), entry.held.clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "ok",
                Some(Held {
                    holder: node("n1"),
                    number: 2,
                    expires_at: 50
                })
            ),
            ("free", None)
        ]
    );
    let reported: Vec<_> = listing
        .unreadable
        .iter()
        .map(|row| (row.execution_id.as_str(), row.wake_at, row.field))
        .collect();
    assert_eq!(
        reported,
        [
            ("holder-empty", Some(2), UnreadableField::Claim),
            ("holder-no-lease", Some(3), UnreadableField::Claim),
        ]
    );
    // A page of one is the first row, and the damaged rows after it wait
    // for their own pages.
    let first = store
        .list(&TimerQuery {
            limit: 1,
            ..TimerQuery::default()
        })
        .await
        .expect("lists a page");
    assert_eq!(first.entries.len(), 1);
    assert_eq!(first.unreadable, []);
    // A page of two: the damaged rows take no slot of it.
    let two = store
        .list(&TimerQuery {
            limit: 2,
            ..TimerQuery::default()
        })
        .await
        .expect("lists a page");
    assert_eq!(two.entries, listing.entries);
    assert_eq!(two.unreadable, listing.unreadable);
}
