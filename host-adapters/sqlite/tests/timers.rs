//! The SQLite timer store as the file shows it: a row it cannot have
//! written fails a listing with a typed, permanent error and is reported,
//! unclaimed and unchanged, by a claim; a lease is
//! exclusive across connections, not only across tasks of one store; the
//! timer handle and the event store share one database.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::TempDir;
use common::files::raw;
use loomfence_core::timer::{
    Completed, DueFilter, Lease, MAX_DUE_LIMIT, MAX_TIMER_MS, NodeId, TimerRow,
};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions, SqliteTimerStore};
use loomfence_store::{EventStore, StoreError, TimerStore};
use tokio::sync::Barrier;

/// The base time of the rows, in ms.
const T0: i64 = 1_700_000_000_000;

/// A lease for `holder` at `now`, for 30 s.
fn lease(holder: &str, now: i64) -> Lease {
    Lease {
        holder: NodeId::new(holder).expect("a node id"),
        now,
        duration_ms: 30_000,
    }
}

/// Opens a timer store on `path`.
async fn open(path: &Path) -> SqliteTimerStore {
    SqliteTimerStore::open(path, SqliteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()))
}

/// Every column of every stored row, as text, by key: the witness that a
/// refused call changed nothing.
fn stored(path: &Path) -> Vec<Vec<String>> {
    let conn = raw(path);
    let mut statement = conn
        .prepare(
            "SELECT quote(execution_id), quote(wake_at), quote(redrive), quote(holder), \
             quote(lease_until), quote(claims) FROM timers ORDER BY execution_id, wake_at",
        )
        .expect("prepares");
    statement
        .query_map([], |row| (0..6).map(|i| row.get(i)).collect())
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads the rows")
}

/// The permanent backend error inside `result`; panics on anything else.
fn permanent<T: std::fmt::Debug>(result: Result<T, StoreError>) -> String {
    match result {
        Err(StoreError::Backend(backend)) if !backend.retryable => backend.to_string(),
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
}

/// One way a row can be damaged in the file.
struct Damage {
    /// What the case is.
    name: &'static str,
    /// The `SET` clause applied to the row `("victim", T0 + 1)`.
    set: &'static str,
    /// What the error must say.
    says: &'static str,
    /// Whether a listing reads the damaged column (the claim count is read
    /// only by a claim).
    listing_fails: bool,
}

/// Damage a listing or a claim reads.
const DAMAGE: &[Damage] = &[
    Damage {
        name: "redrive that is not JSON",
        set: "redrive = 'attempt three'",
        says: "redrive the text \"attempt three\" is not a re-drive flag",
        listing_fails: true,
    },
    Damage {
        name: "redrive that is a number (the column keeps it as text)",
        set: "redrive = 1",
        says: "redrive the text \"1\" is not a re-drive flag",
        listing_fails: true,
    },
    Damage {
        name: "redrive with a negative attempt",
        set: "redrive = '{\"attempt\":-1}'",
        says: "is not a re-drive flag",
        listing_fails: true,
    },
    Damage {
        name: "redrive with a field of another design",
        set: "redrive = '{\"attempt\":1,\"reason\":\"x\"}'",
        says: "unknown field",
        listing_fails: true,
    },
    Damage {
        name: "redrive stored as a blob",
        set: "redrive = X'7B7D'",
        says: "redrive is a blob of 2 bytes, not JSON text or NULL",
        listing_fails: true,
    },
    Damage {
        name: "negative wake_at",
        set: "wake_at = -5",
        says: "wake_at -5 is outside 0..=2^53-1",
        listing_fails: true,
    },
    Damage {
        name: "fractional wake_at",
        set: "wake_at = 1700000000001.5",
        says: "wake_at is the real",
        listing_fails: true,
    },
    Damage {
        name: "empty execution id",
        set: "execution_id = ''",
        says: "execution_id \"\" is not a valid id",
        listing_fails: true,
    },
    Damage {
        name: "execution id as a blob",
        set: "execution_id = X'FF00'",
        says: "execution_id is a blob of 2 bytes, not text",
        listing_fails: true,
    },
    Damage {
        name: "negative claim count",
        set: "claims = -3",
        says: "claims is the integer -3, not a non-negative integer",
        listing_fails: false,
    },
];

/// Each kind of damage to one row, on a fresh file: the listing (when it
/// reads the column) fails with a permanent backend error naming the column
/// and value; the claim takes the good rows beside the damaged one, leaves
/// that one exactly as it was, and reports it, with the same words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_row_is_reported_by_the_claim_and_left_as_it_is() {
    for damage in DAMAGE {
        let dir = TempDir::new("timers-damaged");
        let path = dir.file("store.db");
        let store = open(&path).await;
        let good = [
            TimerRow::wake(common::id("before"), T0),
            TimerRow::redrive(common::id("after"), T0 + 2, 0),
        ];
        for row in [
            &good[0],
            &TimerRow::wake(common::id("victim"), T0 + 1),
            &good[1],
        ] {
            store.schedule(row).await.expect("schedules");
        }
        let changed = raw(&path)
            .execute(
                &format!(
                    "UPDATE timers SET {} WHERE execution_id = 'victim'",
                    damage.set
                ),
                [],
            )
            .expect("damages the row");
        assert_eq!(changed, 1);
        let victim = |path: &Path| {
            stored(path)
                .into_iter()
                .filter(|row| row[0] != "'before'" && row[0] != "'after'")
                .collect::<Vec<_>>()
        };
        let before = victim(&path);
        let name = damage.name;

        let listing = store
            .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
            .await;
        if damage.listing_fails {
            let error = permanent(listing);
            assert!(error.contains(damage.says), "{name}: listing: {error}");
            assert!(error.contains("corrupt row: timers"), "{name}: {error}");
        } else {
            assert_eq!(listing.expect("lists").len(), 3, "{name}");
        }
        let page = store
            .claim_due(&lease("n1", T0 + 10), 10, DueFilter::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: the claim fails: {e}"));
        assert_eq!(
            page.claims.iter().map(|c| &c.row).collect::<Vec<_>>(),
            good.iter().collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(page.unreadable.len(), 1, "{name}: {:?}", page.unreadable);
        let detail = &page.unreadable[0].detail;
        assert!(detail.contains(damage.says), "{name}: claim: {detail}");
        assert_eq!(
            victim(&path),
            before,
            "{name}: the damaged row is left as it is"
        );
    }
}

/// A damaged re-drive flag is read only by the nodes that claim re-drive
/// rows: a node that asks for plain wakes never reads the column's JSON and
/// is told nothing; a node with re-drivers gets it reported, unclaimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_redrive_flag_is_reported_only_to_redriving_claims() {
    let dir = TempDir::new("timers-damaged-plain");
    let path = dir.file("store.db");
    let store = open(&path).await;
    store
        .schedule(&TimerRow::redrive(common::id("victim"), T0, 1))
        .await
        .expect("schedules");
    store
        .schedule(&TimerRow::wake(common::id("plain"), T0 + 1))
        .await
        .expect("schedules");
    raw(&path)
        .execute(
            "UPDATE timers SET redrive = '{' WHERE execution_id = 'victim'",
            [],
        )
        .expect("damages the flag");
    let plain = DueFilter { redrive: false };
    let page = store
        .claim_due(&lease("plain-node", T0 + 1), 10, plain)
        .await
        .expect("claims the plain wake");
    assert_eq!(
        page.claims.iter().map(|c| &c.row).collect::<Vec<_>>(),
        [&TimerRow::wake(common::id("plain"), T0 + 1)]
    );
    assert_eq!(page.unreadable, []);
    let page = store
        .claim_due(&lease("redriver", T0 + 1), 10, DueFilter::default())
        .await
        .expect("claims");
    assert_eq!(page.claims, []);
    assert_eq!(
        page.unreadable
            .iter()
            .map(|row| (row.execution_id.as_str(), row.wake_at))
            .collect::<Vec<_>>(),
        [("victim", Some(T0))]
    );
}

/// Eight timer stores on one file, each with its own connections and
/// writer thread, claim one due row at the same moment, twenty times over:
/// each time exactly one gets it, and only its complete retires the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_claimers_on_eight_connections_one_winner() {
    let dir = TempDir::new("timers-lease");
    let path = dir.file("store.db");
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(Arc::new(open(&path).await));
    }
    for round in 0..20_i64 {
        let row = TimerRow::wake(common::id(&format!("round-{round}")), T0 + round);
        stores[0].schedule(&row).await.expect("schedules");
        let start = Arc::new(Barrier::new(stores.len()));
        let claimers: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(n, store)| {
                let (store, start) = (Arc::clone(store), Arc::clone(&start));
                tokio::spawn(async move {
                    start.wait().await;
                    let claims = store
                        .claim_due(
                            &lease(&format!("node-{n}"), T0 + round),
                            10,
                            DueFilter::default(),
                        )
                        .await
                        .expect("claims")
                        .claims;
                    (n, claims)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for claimer in claimers {
            let (n, claims) = claimer.await.expect("a claimer panicked");
            if !claims.is_empty() {
                winners.push((n, claims));
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: one winner: {winners:?}");
        let (winner, claims) = winners.remove(0);
        assert_eq!(claims.len(), 1, "round {round}");
        let claim = &claims[0];
        assert_eq!((&claim.row, claim.number), (&row, 1), "round {round}");
        let loser = (winner + 1) % stores.len();
        let stolen = loomfence_core::timer::Claim {
            holder: NodeId::new(format!("node-{loser}")).expect("a node id"),
            ..claim.clone()
        };
        assert_eq!(
            stores[loser].complete(&stolen).await.expect("completes"),
            Completed::NotHeld
        );
        assert_eq!(
            stores[loser].complete(claim).await.expect("completes"),
            Completed::Done,
            "round {round}: the claim, not the connection, retires the row"
        );
    }
    assert!(stored(&path).is_empty());
}

/// The timer handle of an event store is the same database: in `:memory:`
/// (one connection) a second handle sees the first's rows, and keeps the
/// database open after the event store is dropped; a separately opened
/// `:memory:` store is another database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timer_handle_shares_the_event_stores_database() {
    let events = SqliteEventStore::open_in_memory().await.expect("opens");
    let (first, second) = (events.timers(), events.timers());
    let row = TimerRow::redrive(common::id("shared"), T0, 3);
    first.schedule(&row).await.expect("schedules");
    drop((events, first));
    assert_eq!(
        second
            .due(T0, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .expect("lists"),
        [row]
    );
    let other = SqliteTimerStore::open_in_memory().await.expect("opens");
    assert!(
        other
            .due(T0, MAX_DUE_LIMIT, DueFilter::default())
            .await
            .expect("lists")
            .is_empty()
    );
    assert_eq!(second.path(), Path::new(":memory:"));
}

/// On a file, the event store and a timer store opened separately are one
/// database: rows written by one handle are claimed through the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_written_through_an_event_store_are_seen_by_a_timer_store_on_the_file() {
    let dir = TempDir::new("timers-shared-file");
    let path = dir.file("store.db");
    let events = common::open(&path).await;
    let row = TimerRow::wake(common::id("job"), T0);
    events.timers().schedule(&row).await.expect("schedules");
    assert_eq!(
        events
            .current_fence(&common::id("job"))
            .await
            .expect("reads"),
        0
    );
    let timers = open(&path).await;
    let claims = timers
        .claim_due(&lease("n1", T0), 10, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    assert_eq!(claims.iter().map(|c| &c.row).collect::<Vec<_>>(), [&row]);
}
