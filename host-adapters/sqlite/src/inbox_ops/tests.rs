//! The statements on a bare connection: a listing reads through the
//! pending index, so the consumed rows an old execution piles up cost it
//! nothing.

use loomfence_core::inbox::{Message, MessageKey};
use loomfence_core::timer::TimerRow;
use rusqlite::types::Value as Sql;
use serde_json::json;

use super::*;
use crate::{inbox_schema, timer_schema};

/// Messages of the busy execution, all but the last few consumed.
const ROWS: usize = 5_000;

/// An in-memory database whose execution `busy` has [`ROWS`] messages on
/// three channels, all consumed but the last ten, and a neighbour with a
/// hundred.
fn busy_inbox() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    timer_schema::migrate(&conn).unwrap();
    inbox_schema::migrate(&conn).unwrap();
    for (execution, count) in [("busy", ROWS), ("other", 100)] {
        for n in 0..count {
            let message = Message {
                key: MessageKey::new(
                    ExecutionId::new(execution).unwrap(),
                    ["x", "y", "z"][n % 3],
                    format!("m-{n}"),
                )
                .unwrap(),
                payload: json!(n),
                sent_at: 1_000,
            };
            let intent = TimerRow::redrive(message.key.execution_id.clone(), 6_000, 0);
            let payload = encode_payload(&message).unwrap();
            send(&conn, &message, &payload, &intent, Some("{\"attempt\":0}")).unwrap();
            if n + 10 < count {
                assert!(mark_consumed(&conn, &message.key).unwrap());
            }
        }
    }
    conn
}

#[test]
fn a_listing_searches_the_pending_index_and_skips_the_consumed_rows() {
    let conn = busy_inbox();
    let mut explain = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {PENDING}"))
        .unwrap();
    let plan: Vec<String> = explain
        .query_map(
            rusqlite::params![Sql::Text("busy".into()), "[\"x\",\"y\"]", 10],
            |row| row.get(3),
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter()
            .any(|line| line.contains("USING INDEX inbox_pending")),
        "a range of the pending index: {plan:#?}"
    );
    assert!(
        !plan.iter().any(|line| line.starts_with("SCAN inbox")),
        "no full scan: {plan:#?}"
    );
    let busy = ExecutionId::new("busy").unwrap();
    let listed = pending(&conn, &busy, &["x".to_owned(), "y".to_owned()], 10).unwrap();
    // The last ten of 5,000 are unconsumed: 4990..5000, seven on x or y.
    let numbers: Vec<u64> = listed
        .iter()
        .filter_map(|m| m.message.payload.as_u64())
        .collect();
    assert_eq!(numbers, [4990, 4992, 4993, 4995, 4996, 4998, 4999]);
    let statement = conn.prepare_cached(PENDING).unwrap();
    let steps = statement.get_status(rusqlite::StatementStatus::VmStep);
    println!("pending over {ROWS} rows, 10 unconsumed: {steps} VM steps");
    assert!(
        steps < 1_000,
        "{steps} VM steps: the listing stepped over consumed rows"
    );
    assert_eq!(
        statement.get_status(rusqlite::StatementStatus::FullscanStep),
        0
    );
}
