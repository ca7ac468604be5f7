//! The listing in a database whose default collation is not byte order
//! (ICU `en`, where `é` sorts before `f`, unlike its UTF-8 bytes): it pages
//! through every execution exactly once (the kit's own case), in the
//! column's collation, and still through the primary key. A listing that
//! compared ids `COLLATE "C"` would be in byte order here, and could not
//! use the primary key, whose order is the column's.

use std::sync::Arc;

use loomfence_conformance::cases::retention::listing_pages_through_every_execution_once;
use loomfence_core::{ExecutionId, KernelKind};
use loomfence_postgres::PostgresEventStore;
use loomfence_store::EventStore;

use crate::common::{self, kernel};
use crate::plan::{assert_indexed, ten_thousand};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_listing_pages_in_the_columns_collation_through_the_primary_key() {
    let Some(url) = common::url() else { return };
    let db = common::unique("lf_icu");
    let admin = common::admin(&url).await;
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {db} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C.UTF-8'"
        ))
        .await
        .expect("creates an ICU database");
    let db_url = common::with_dbname(&url, &db);
    let outcome = tokio::spawn(async move {
        let store = Arc::new(common::store(&db_url).await);
        listing_pages_through_every_execution_once(store.clone()).await;
        let fresh = common::store(&db_url).await;
        for text in ["zz", "f", "é", "e"] {
            fresh
                .append(&common::id(text), kernel(KernelKind::ExecutionStarted))
                .await
                .expect("appends");
        }
        let listed: Vec<String> = fresh
            .list_executions(None, 10)
            .await
            .expect("lists")
            .into_iter()
            .map(|s| s.execution_id.as_str().to_owned())
            .collect();
        assert_eq!(
            listed,
            ["e", "é", "f", "zz"],
            "the column's (ICU) order, not bytes"
        );
        let after: Vec<String> = fresh
            .list_executions(Some(&common::id("é")), 10)
            .await
            .expect("lists")
            .into_iter()
            .map(|s| s.execution_id.as_str().to_owned())
            .collect();
        assert_eq!(after, ["f", "zz"]);
        ten_thousand(&fresh, &db_url).await;
        let plan = explain(&fresh, &common::id("e")).await;
        assert_indexed(&plan, "ICU database");
    })
    .await;
    admin
        .batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"))
        .await
        .expect("drops the test database");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic.into_panic());
    }
}

/// The custom plan of a page after `after`.
async fn explain(store: &PostgresEventStore, after: &ExecutionId) -> String {
    store
        .explain_list_executions(Some(after), 1_000, false)
        .await
        .expect("explains")
}
