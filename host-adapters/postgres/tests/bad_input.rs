//! Hostile and extreme input against the real server. The kit's `hostile`
//! cases check what every store must do (awkward ids round-trip and never
//! collide, NUL is refused, a 16 MB payload round-trips); these look at the
//! server's tables, and at `jsonb`'s own size limit.

mod common;

use std::collections::BTreeSet;

use common::{kernel, object};
use loomfence_conformance::cases::hostile::{refuse_nul_everywhere, write_awkward_ids};
use loomfence_core::KernelKind;
use loomfence_postgres::PostgresEventStore;
use loomfence_store::{EventStore, StoreError};
use serde_json::json;
use tokio_postgres::error::SqlState;

/// The kit's awkward ids (`hostile::write_awkward_ids`), checked against
/// the server: the table holds exactly these ids, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn awkward_ids_are_stored_verbatim() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let ids = write_awkward_ids(&store).await;
    let admin = common::admin(&url).await;
    let stored: BTreeSet<String> = admin
        .query(
            &format!(
                "SELECT DISTINCT execution_id FROM {}.events",
                store.schema()
            ),
            &[],
        )
        .await
        .expect("reads the table")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(
        stored,
        ids.iter().cloned().collect::<BTreeSet<_>>(),
        "the table holds exactly these ids, byte for byte"
    );
}

/// How many rows the schema's two tables hold.
async fn row_counts(admin: &tokio_postgres::Client, store: &PostgresEventStore) -> (i64, i64) {
    let row = admin
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM {s}.events), (SELECT count(*) FROM {s}.fences)",
                s = store.schema()
            ),
            &[],
        )
        .await
        .expect("counts rows");
    (row.get(0), row.get(1))
}

/// The kit's NUL refusals (`hostile::refuse_nul_everywhere`), checked
/// against the server, which cannot store NUL at all: no row was written to
/// either table.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nul_refusals_write_no_row_anywhere() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let admin = common::admin(&url).await;
    let target = &common::id("nul-target");
    let park_seq = common::park(&store, target).await;
    let counts = row_counts(&admin, &store).await;
    refuse_nul_everywhere(&store, target, park_seq).await;
    assert_eq!(row_counts(&admin, &store).await, counts, "no row anywhere");
}

/// One string longer than `jsonb` can hold (about 256 MiB; this one is
/// 270,000,000 bytes) is refused by the server with a typed, permanent
/// backend error; the log is unchanged and the store keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_string_over_the_jsonb_limit_is_refused_permanently_and_changes_nothing() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let id = &common::id("too-big");
    let park_seq = common::park(&store, id).await;
    let before = common::Witness::capture(&store, id).await;
    let huge = object(json!({ "huge": "x".repeat(270_000_000) }));
    let refused = store
        .append(id, kernel(KernelKind::ExecutionResumed).with_payload(huge))
        .await;
    match &refused {
        Err(StoreError::Backend(backend)) => {
            assert!(
                !backend.retryable,
                "a too-long string never fits: {backend}"
            );
            let code = backend
                .source
                .downcast_ref::<tokio_postgres::Error>()
                .and_then(tokio_postgres::Error::code);
            assert_eq!(
                code,
                Some(&SqlState::PROGRAM_LIMIT_EXCEEDED),
                "the server's own limit: {backend}"
            );
        }
        other => panic!(
            "expected a permanent backend error, got {:?}",
            other.as_ref().map(|e| e.sequence)
        ),
    }
    assert_eq!(
        common::Witness::capture(&store, id).await,
        before,
        "the log is unchanged"
    );
    let answered = store
        .append_if_parked(id, park_seq, vec![kernel(KernelKind::ExecutionResumed)])
        .await
        .expect("the store keeps working");
    assert!(matches!(
        answered,
        loomfence_core::ConditionalAppend::Appended(_)
    ));
}
