//! The statements on a bare connection: the due index carries the claim on
//! a large table, and a stored row that is not one this store writes is
//! reported, never guessed at.

use loomfence_core::{
    ExecutionId,
    timer::{DueFilter, Lease, NodeId},
};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, StatementStatus};

use super::*;
use crate::timer_schema;

/// Rows in the large table.
const ROWS: i64 = 10_000;

/// An in-memory table of [`ROWS`] due rows, a tenth of them re-drive rows,
/// and the first hundred held by another node.
fn large_table() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    timer_schema::migrate(&conn).unwrap();
    for n in 0..ROWS {
        let id = ExecutionId::new(format!("exec-{:05}", (n * 7919) % ROWS)).unwrap();
        let redrive = (n % 10 == 0).then_some("{\"attempt\":0}");
        schedule(&conn, &id, 1_000 + n, redrive).unwrap();
    }
    let held = Lease {
        holder: NodeId::new("other").unwrap(),
        now: 1_000 + ROWS,
        duration_ms: 60_000,
    };
    claim_due(&conn, &held, held.now + 60_000, 100, DueFilter::default()).unwrap();
    conn
}

/// The query plan of `sql`, one detail line each.
fn plan(conn: &Connection, sql: &str, params: &[Value]) -> Vec<String> {
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    statement
        .query_map(rusqlite::params_from_iter(params), |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Asserts a plan reads the table through the due index, in its order:
/// no full scan, no sort.
fn assert_uses_the_due_index(what: &str, plan: &[String]) {
    assert!(
        plan.iter()
            .any(|line| line.contains("USING INDEX timers_due (wake_at<?)")),
        "{what}: the due scan is a range of timers_due: {plan:#?}"
    );
    assert!(
        !plan
            .iter()
            .any(|line| line.starts_with("SCAN timers") || line.contains("TEMP B-TREE")),
        "{what}: no full scan, no sort: {plan:#?}"
    );
}

#[test]
fn the_claim_and_the_listing_use_the_due_index_on_ten_thousand_rows() {
    let conn = large_table();
    let now = Value::Integer(1_000 + ROWS);
    for redrive in [true, false] {
        let claim = plan(
            &conn,
            CANDIDATES,
            &[now.clone(), Value::Integer(redrive.into())],
        );
        assert_uses_the_due_index("claim", &claim);
        let listing = plan(
            &conn,
            DUE,
            &[
                now.clone(),
                Value::Integer(redrive.into()),
                Value::Integer(10),
            ],
        );
        assert_uses_the_due_index("due", &listing);
    }
}

#[test]
fn a_claim_of_ten_on_ten_thousand_rows_neither_scans_nor_sorts() {
    let conn = large_table();
    let lease = Lease {
        holder: NodeId::new("n1").unwrap(),
        now: 1_000 + ROWS,
        duration_ms: 30_000,
    };
    let claims = claim_due(
        &conn,
        &lease,
        lease.now + 30_000,
        10,
        DueFilter { redrive: false },
    )
    .unwrap()
    .claims;
    // The first hundred are held; of the rest, every tenth is a re-drive row.
    let times: Vec<i64> = claims.iter().map(|c| c.row.wake_at).collect();
    assert_eq!(
        times,
        [1101, 1102, 1103, 1104, 1105, 1106, 1107, 1108, 1109, 1111]
    );
    assert!(
        claims
            .iter()
            .all(|c| c.number == 1 && c.row.redrive.is_none())
    );
    let statement = conn.prepare_cached(CANDIDATES).unwrap();
    assert_eq!(statement.get_status(StatementStatus::FullscanStep), 0);
    assert_eq!(statement.get_status(StatementStatus::Sort), 0);
}

/// Decodes a row from owned values.
fn decode_values(id: &Value, wake_at: &Value, redrive: &Value) -> Result<TimerRow, String> {
    decode(
        ValueRef::from(id),
        ValueRef::from(wake_at),
        ValueRef::from(redrive),
    )
    .map_err(|row| row.detail)
}

#[test]
fn rows_this_store_cannot_have_written_are_reported_by_column() {
    let id = Value::Text("job".into());
    let at = Value::Integer(5);
    let null = Value::Null;
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        decode_values(&id, &at, &text("{\"attempt\":3}")).unwrap(),
        TimerRow::redrive(ExecutionId::new("job").unwrap(), 5, 3)
    );
    let cases = [
        (
            Value::Integer(1),
            at.clone(),
            null.clone(),
            "execution_id is the integer 1",
        ),
        (text(""), at.clone(), null.clone(), "not a valid id"),
        (
            Value::Blob(vec![0xff]),
            at.clone(),
            null.clone(),
            "execution_id is a blob",
        ),
        (
            id.clone(),
            Value::Integer(-1),
            null.clone(),
            "wake_at -1 is outside",
        ),
        (
            id.clone(),
            Value::Integer(1 << 60),
            null.clone(),
            "is outside 0..=2^53-1",
        ),
        (
            id.clone(),
            text("soon"),
            null.clone(),
            "wake_at is the text \"soon\"",
        ),
        (
            id.clone(),
            Value::Real(5.5),
            null.clone(),
            "wake_at is the real 5.5",
        ),
        (
            id.clone(),
            at.clone(),
            text("yes"),
            "redrive the text \"yes\" is not",
        ),
        (
            id.clone(),
            at.clone(),
            text("{\"attempt\":-1}"),
            "is not a re-drive flag",
        ),
        (
            id.clone(),
            at.clone(),
            text("{\"attempt\":1,\"x\":2}"),
            "unknown field",
        ),
        (
            id.clone(),
            at.clone(),
            text("{\"attempt\":4294967295}"),
            "holds attempt 4294967295, above the limit",
        ),
        (
            id.clone(),
            at.clone(),
            Value::Integer(1),
            "redrive is the integer 1",
        ),
    ];
    for (id, wake_at, redrive, expected) in cases {
        let error = decode_values(&id, &wake_at, &redrive).unwrap_err();
        assert!(
            error.contains(expected),
            "({id:?}, {wake_at:?}, {redrive:?}): {error:?} should say {expected:?}"
        );
    }
}
