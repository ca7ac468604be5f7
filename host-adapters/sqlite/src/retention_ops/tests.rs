//! The listing's SQL, looked at from inside: its query plan on a large
//! table, and the terminal filter it shares with its index.

use rusqlite::Connection;

use super::*;
use crate::schema;

/// Executions in the large table.
const EXECUTIONS: usize = 10_000;

/// An in-memory database at the current schema holding [`EXECUTIONS`]
/// executions of four events each (started, two steps, and for every other
/// one an end), ids inserted out of order.
fn large_table() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    assert_eq!(
        schema::migrate(&mut conn).unwrap(),
        schema::Migrated::Current
    );
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO events (execution_id, sequence, kind, payload, metadata, at) \
                 VALUES (?1, ?2, ?3, '{}', '{}', ?4)",
            )
            .unwrap();
        for n in 0..EXECUTIONS {
            let id = format!("exec-{:05}", (n * 7919) % EXECUTIONS);
            let last = if n.is_multiple_of(2) {
                KernelKind::ExecutionCompleted.as_str()
            } else {
                "app.step"
            };
            let kinds = [
                KernelKind::ExecutionStarted.as_str(),
                "app.step",
                "app.step",
                last,
            ];
            for (sequence, kind) in (1_i64..).zip(kinds) {
                insert
                    .execute(params![id, sequence, kind, 1_000 + sequence])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
    conn
}

/// The query plan of `sql`, one detail line each.
fn plan(conn: &Connection, sql: &str, after: &str, limit: u32) -> Vec<String> {
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    statement
        .query_map(params![after, limit], |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Every step of the listing is a seek: the next id, its head and its first
/// end each come from an index, the end from the partial index of terminal
/// events, with no scan of `events` and no sort, for the first page and for
/// one in the middle.
#[test]
fn the_listing_seeks_through_indexes_on_ten_thousand_executions() {
    let conn = large_table();
    for after in ["", "exec-05000"] {
        let plan = plan(&conn, &LIST, after, 1_000);
        println!("EXPLAIN QUERY PLAN of the listing (after {after:?}):");
        for line in &plan {
            println!("  {line}");
        }
        let has = |needle: &str| plan.iter().any(|line| line.contains(needle));
        assert!(
            has("SEARCH events USING PRIMARY KEY (execution_id>?)"),
            "the next id is a seek on the primary key: {plan:#?}"
        );
        assert!(
            has("SEARCH events USING PRIMARY KEY (execution_id=?)"),
            "the head is a seek on the primary key: {plan:#?}"
        );
        assert!(
            has(&format!("INDEX {ENDED_INDEX} (execution_id=?)")),
            "the first end is a seek on the partial index: {plan:#?}"
        );
        assert!(
            !plan.iter().any(|line| line.starts_with("SCAN events")
                || line.starts_with("SCAN ended")
                || line.contains("TEMP B-TREE")),
            "no full scan of events, no sort: {plan:#?}"
        );
    }
}

/// The page the plan above describes is the right one, in order.
#[test]
fn the_large_table_lists_in_byte_order_with_every_other_one_ended() {
    let conn = large_table();
    let page = list_executions(&conn, Some(&ExecutionId::new("exec-04999").unwrap()), 3).unwrap();
    let ids: Vec<&str> = page.iter().map(|s| s.execution_id.as_str()).collect();
    assert_eq!(ids, ["exec-05000", "exec-05001", "exec-05002"]);
    assert!(page.iter().all(|s| s.head == 4));
    assert_eq!(
        page.iter()
            .filter(|s| s.ended
                == Some(Ended {
                    sequence: 4,
                    at: 1_004
                }))
            .count()
            + page.iter().filter(|s| s.ended.is_none()).count(),
        3
    );
}

/// The filter names exactly the kinds the core's fold ends on, each quoted
/// and safe to inline.
#[test]
fn the_terminal_filter_is_the_folds_four_end_kinds() {
    assert_eq!(
        *TERMINAL_FILTER,
        "kind IN ('EXECUTION_COMPLETED', 'EXECUTION_FAILED', 'EXECUTION_CANCELLED', \
         'EXECUTION_CONTINUED')"
    );
    for kind in terminal_kinds() {
        assert!(
            kind.as_str()
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_'),
            "{kind:?} is safe to inline"
        );
    }
}
