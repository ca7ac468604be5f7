//! `loomfence timers`, run as an operator runs it: the built binary on a
//! store the test wrote with the adapters (an SQLite file, a PostgreSQL
//! schema), each filter checked, and the store checked unchanged.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;
#[allow(dead_code, reason = "each test file uses part of the shared fixture")]
mod fixture;

use serde_json::{Value, json};

use crate::common::Scratch;
use crate::fixture::{MINUTE, PostgresFixture, SqliteFixture, Target, block_on, now_ms};

/// `loomfence timers --json ARGS…`, exit 0 and one object.
fn timers_json(target: &Target, rest: &[&str]) -> Value {
    let args = target.with(rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::loomfence_json("timers", &args)
}

/// `loomfence timers ARGS…`: exit code, stdout, stderr.
fn timers(target: &Target, rest: &[&str]) -> (Option<i32>, String, String) {
    let args = target.with(rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::loomfence("timers", &args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rows of a listing as (execution, wake time - now, state).
fn rows(json: &Value, now: i64) -> Vec<(String, i64, String)> {
    json["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["executionId"].as_str().expect("a string").to_owned(),
                r["wakeAt"].as_i64().expect("an integer") - now,
                r["state"].as_str().expect("a string").to_owned(),
            )
        })
        .collect()
}

/// (execution, offset from now, state), owned.
fn expect(rows: &[(&str, i64, &str)]) -> Vec<(String, i64, String)> {
    rows.iter()
        .map(|(id, at, state)| ((*id).to_owned(), *at, (*state).to_owned()))
        .collect()
}

/// What every store must list for the fixture written at `now`.
fn check_fixture(target: &Target, now: i64) {
    let hour = 60 * MINUTE;
    let claimed = ("parent", -10 * MINUTE, "claimed");
    let due = ("other", -5 * MINUTE, "due");
    let intent_0 = ("parent", 9 * MINUTE, "pending");
    let intent_1 = ("parent", 10 * MINUTE, "pending");
    let wake = ("parent", hour, "pending");
    let later = ("kid-running", 2 * hour, "pending");

    let all = timers_json(target, &[]);
    assert_eq!(
        rows(&all, now),
        expect(&[claimed, due, intent_0, intent_1, wake, later]),
        "{all}"
    );
    assert_eq!(
        all["counts"],
        json!({ "rows": 6, "due": 1, "pending": 4, "claimed": 1, "exhausted": 1, "unreadable": 0 }),
        "{all}"
    );
    assert_eq!(all["rows"][0]["claim"]["holder"], "node-a", "{all}");
    assert_eq!(all["rows"][0]["claim"]["current"], true, "{all}");
    assert_eq!(all["rows"][0]["attempt"], 2, "{all}");
    assert_eq!(all["rows"][1]["redrive"], false, "{all}");
    assert_eq!(all["rows"][1]["claim"], Value::Null, "{all}");
    assert_eq!(all["exhausted"][0]["executionId"], "parent", "{all}");
    assert_eq!(all["exhausted"][0]["wakeAt"], now - 20 * MINUTE, "{all}");
    assert_eq!(all["exhausted"][0]["attempts"], 8, "{all}");
    assert_eq!(all["unreadable"], json!([]), "{all}");
    assert_eq!(
        all["truncated"],
        json!({ "rows": false, "exhausted": false }),
        "{all}"
    );

    let due_only = timers_json(target, &["--due"]);
    assert_eq!(rows(&due_only, now), expect(&[claimed, due]), "{due_only}");
    let redrive = timers_json(target, &["--redrive"]);
    assert_eq!(
        rows(&redrive, now),
        expect(&[claimed, intent_0, intent_1]),
        "{redrive}"
    );
    assert_eq!(
        redrive["counts"]["exhausted"], 1,
        "a re-drive row's record: {redrive}"
    );
    let both = timers_json(target, &["--due", "--redrive"]);
    assert_eq!(rows(&both, now), expect(&[claimed]), "{both}");
    let parent = timers_json(target, &["--execution", "parent"]);
    assert_eq!(
        rows(&parent, now),
        expect(&[claimed, intent_0, intent_1, wake]),
        "{parent}"
    );
    assert_eq!(parent["counts"]["exhausted"], 1, "{parent}");
    let other = timers_json(target, &["--execution", "other"]);
    assert_eq!(rows(&other, now), expect(&[due]), "{other}");
    assert_eq!(other["exhausted"], json!([]), "{other}");
    let nobody = timers_json(target, &["--execution", "nobody"]);
    assert_eq!(
        nobody["counts"]["rows"], 0,
        "an id with no rows lists none: {nobody}"
    );
    // The filters apply before the limit.
    let two = timers_json(target, &["--limit", "2"]);
    assert_eq!(rows(&two, now), expect(&[claimed, due]), "{two}");
    assert_eq!(two["truncated"]["rows"], true, "{two}");
    let pending_redrive = timers_json(
        target,
        &["--redrive", "--execution", "parent", "--limit", "2"],
    );
    assert_eq!(
        rows(&pending_redrive, now),
        expect(&[claimed, intent_0]),
        "{pending_redrive}"
    );
    let exact = timers_json(target, &["--due", "--limit", "2"]);
    assert_eq!(exact["truncated"]["rows"], false, "{exact}");

    let (code, text, stderr) = timers(target, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    for expected in [
        "rows (6: 1 due, 4 pending, 1 claimed):",
        "parent 20",
        "re-drive (try 2)  claimed by node-a (claim 1) until",
        "plain  due",
        "exhausted records (1):",
        "gave up after 8 tries",
        "unreadable rows (0):",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }

    for (args, expected) in [
        (vec!["--execution", ""], "--execution: "),
        (vec!["--limit", "0"], "--limit 0: must be at least 1"),
        (
            vec!["--limit", "-1"],
            "invalid value '-1' for '--limit <N>'",
        ),
    ] {
        let (code, stdout, stderr) = timers(target, &args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
}

#[test]
fn sqlite_lists_rows_records_and_filters_and_changes_nothing() {
    let scratch = Scratch::new("timers-sqlite");
    let now = now_ms();
    let made = SqliteFixture::new(&scratch, now);
    let target = &made.target;
    check_fixture(target, now);
    let (code, _, stderr) = timers(target, &["--schema", "app"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--schema: only for --store postgres"),
        "{stderr}"
    );
    made.assert_unchanged(&scratch);
}

/// A row whose re-drive flag is damaged is listed in its own section by
/// both commands, not skipped and not failing them.
#[test]
fn sqlite_shows_an_unreadable_row() {
    let scratch = Scratch::new("timers-unreadable");
    let path = scratch.path().join("store.db");
    let now = now_ms();
    block_on(async {
        fixture::populate(&fixture::sqlite(&path).await, now).await;
    });
    let damaged = now - 30 * MINUTE;
    rusqlite::Connection::open(&path)
        .expect("opens")
        .execute(
            "INSERT INTO timers (execution_id, wake_at, redrive) VALUES ('parent', ?1, 'not json')",
            [damaged],
        )
        .expect("writes the damaged row");
    let target = Target {
        args: vec!["--store".to_owned(), scratch.store("store.db")],
    };
    let all = timers_json(&target, &[]);
    assert_eq!(all["counts"]["unreadable"], 1, "{all}");
    assert_eq!(
        all["counts"]["rows"], 6,
        "the others are still listed: {all}"
    );
    let row = &all["unreadable"][0];
    assert_eq!(
        (&row["executionId"], &row["wakeAt"], &row["field"]),
        (
            &Value::from("parent"),
            &Value::from(damaged),
            &Value::from("redrive")
        ),
        "{all}"
    );
    let (code, text, _) = timers(&target, &[]);
    assert_eq!(code, Some(0));
    assert!(
        text.contains("unreadable rows (1):\n  \"parent\" at "),
        "{text}"
    );
    let args = target.with(&["parent"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let inspected = common::loomfence_json("inspect", &args);
    assert_eq!(
        inspected["timers"]["unreadable"][0]["field"], "redrive",
        "{inspected}"
    );
    assert_eq!(
        inspected["timers"]["rows"].as_array().map(Vec::len),
        Some(4),
        "{inspected}"
    );
}

#[test]
fn postgres_lists_rows_records_and_filters_and_changes_nothing() {
    let Some(url) = common::postgres_url("the PostgreSQL timers test") else {
        return;
    };
    let now = now_ms();
    let made = PostgresFixture::new(&url, "cli_timers", now);
    let target = &made.target;
    check_fixture(target, now);
    made.assert_unchanged_and_drop();
}

#[test]
fn stores_that_are_not_usable_exit_2_and_stay_as_they_were() {
    fixture::assert_unusable_stores_refused(
        "timers",
        "timers",
        &[&["--due", "--redrive"], &["--json"]],
    );
}

#[test]
fn memory_is_an_empty_smoke_test() {
    let out = common::loomfence("timers", &["--store", "memory", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("a new, empty store"), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["counts"]["rows"], 0, "{json}");
    let out = common::loomfence("inspect", &["--store", "memory", "anyone"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("a new, empty store"), "{stderr}");
    assert!(
        stderr.contains("no execution with id anyone in memory"),
        "{stderr}"
    );
}
