//! Hostile input against SQLite, as the file itself shows it. The kit's
//! `hostile` cases check what every store must do (awkward ids round-trip
//! and never collide, NUL is refused, a 16 MB payload round-trips); these
//! look at the tables: exactly the awkward ids are stored, no injected SQL
//! ran, and a refused NUL wrote no row anywhere.

mod common;

use std::collections::BTreeSet;

use common::TempDir;
use common::files::{self, raw};
use loomfence_conformance::cases::hostile::{refuse_nul_everywhere, write_awkward_ids};
use loomfence_sqlite::SqliteEventStore;

/// A store on a fresh file, and the directory holding it.
async fn fresh(label: &str) -> (SqliteEventStore, TempDir) {
    let dir = TempDir::new(label);
    let store = common::open(&dir.file("store.db")).await;
    (store, dir)
}

/// The kit's awkward ids (`hostile::write_awkward_ids`), checked against
/// the file: the table holds exactly these ids, byte for byte, and no
/// injected `DROP` ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awkward_ids_are_stored_verbatim_and_inject_nothing() {
    let (store, dir) = fresh("ids").await;
    let ids = write_awkward_ids(&store).await;
    let stored: BTreeSet<String> = {
        let conn = raw(&dir.file("store.db"));
        let mut statement = conn
            .prepare("SELECT DISTINCT execution_id FROM events")
            .expect("prepares");
        statement
            .query_map([], |row| row.get(0))
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads the table")
    };
    assert_eq!(
        stored,
        ids.iter().cloned().collect::<BTreeSet<_>>(),
        "the table holds exactly these ids, byte for byte"
    );
    let tables: i64 = raw(&dir.file("store.db"))
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('events', 'fences')",
            [],
            |row| row.get(0),
        )
        .expect("reads the catalog");
    assert_eq!(tables, 2, "no injected DROP ran");
}

/// The kit's NUL refusals (`hostile::refuse_nul_everywhere`), checked
/// against the file itself: no row was written to any table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_refusals_write_no_row_anywhere() {
    let (store, dir) = fresh("nul").await;
    let target = &common::id("nul-target");
    let park_seq = common::park(&store, target).await;
    let counts = files::row_counts(&dir.file("store.db"));
    refuse_nul_everywhere(&store, target, park_seq).await;
    assert_eq!(
        files::row_counts(&dir.file("store.db")),
        counts,
        "no row anywhere"
    );
}
