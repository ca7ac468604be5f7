//! `loomfence inspect`, run as an operator runs it: the built binary on a
//! store the test wrote with the adapters (an SQLite file, a PostgreSQL
//! schema), its output checked, and the store checked unchanged.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;
#[allow(dead_code, reason = "each test file uses part of the shared fixture")]
mod fixture;

use serde_json::Value;

use crate::common::Scratch;
use crate::fixture::{MINUTE, PostgresFixture, SqliteFixture, Target, block_on, now_ms};

/// `loomfence inspect --json ARGS…`, exit 0 and one object.
fn inspect_json(target: &Target, id: &str) -> Value {
    let args = target.with(&[id]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::loomfence_json("inspect", &args)
}

/// `loomfence inspect ARGS…`: exit code, stdout, stderr.
fn inspect(target: &Target, rest: &[&str]) -> (Option<i32>, String, String) {
    let args = target.with(rest);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::loomfence("inspect", &args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What every store must show for the fixture written at `now`.
fn check_fixture(target: &Target, now: i64) {
    let hour = 60 * MINUTE;
    let parent = inspect_json(target, "parent");
    let p = &parent;
    assert_eq!(p["executionId"], "parent", "{p}");
    assert_eq!(p["status"], "parked", "{p}");
    assert_eq!(
        (&p["head"], &p["fence"]),
        (&Value::from(3), &Value::from(1)),
        "{p}"
    );

    // The log: kinds, classes, tokens.
    let events = p["events"].as_array().expect("events");
    let shown: Vec<(u64, &str, &str, bool, Value)> = events
        .iter()
        .map(|e| {
            (
                e["sequence"].as_u64().expect("an integer"),
                e["kind"].as_str().expect("a string"),
                e["class"].as_str().expect("a string"),
                e["answering"].as_bool().expect("a boolean"),
                e["fence"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (1, "EXECUTION_STARTED", "kernel", false, Value::Null),
            (2, "app.note", "application", false, Value::Null),
            (3, "EXECUTION_SUSPENDED", "kernel", true, Value::from(1)),
        ],
        "{p}"
    );
    assert_eq!(events[2]["at"], now - hour, "{p}");

    // The open park and which waits can answer it now.
    let park = &p["openPark"];
    assert_eq!(
        (&park["sequence"], &park["fence"]),
        (&Value::from(3), &Value::from(1)),
        "{p}"
    );
    let waits = park["waits"].as_array().expect("waits");
    assert_eq!(waits.len(), 5, "{p}");
    assert_eq!(
        (
            &waits[0]["kind"],
            &waits[0]["child"],
            &waits[0]["answerable"]
        ),
        (
            &Value::from("child"),
            &Value::from("kid-done"),
            &Value::from(true)
        ),
        "a finished child answers: {p}"
    );
    assert_eq!(waits[0]["children"][0]["status"], "completed", "{p}");
    assert_eq!(waits[1]["kind"], "group", "{p}");
    assert_eq!(waits[1]["answerable"], false, "one member runs: {p}");
    assert_eq!(waits[1]["children"][1]["id"], "kid-running", "{p}");
    assert_eq!(waits[1]["children"][1]["ended"], false, "{p}");
    assert_eq!(waits[1]["children"][1]["status"], "running", "{p}");
    assert_eq!(
        (
            &waits[2]["kind"],
            &waits[2]["wakeAt"],
            &waits[2]["answerable"]
        ),
        (
            &Value::from("timer"),
            &Value::from(now + hour),
            &Value::from(false)
        ),
        "not due for an hour: {p}"
    );
    assert_eq!(
        (
            &waits[3]["channel"],
            &waits[3]["pending"],
            &waits[3]["answerable"]
        ),
        (
            &Value::from("approvals"),
            &Value::from(1),
            &Value::from(true)
        ),
        "one pending message (the other is consumed): {p}"
    );
    assert_eq!(
        (
            &waits[4]["channel"],
            &waits[4]["pending"],
            &waits[4]["answerable"]
        ),
        (&Value::from("later"), &Value::from(0), &Value::from(false)),
        "{p}"
    );

    // Its rows, in due order, with the claim; the exhausted record.
    let rows = p["timers"]["rows"].as_array().expect("rows");
    let keys: Vec<(i64, Value, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["wakeAt"].as_i64().expect("an integer") - now,
                r["attempt"].clone(),
                r["state"].as_str().expect("a string"),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (-10 * MINUTE, Value::from(2), "claimed"),
            (9 * MINUTE, Value::from(0), "pending"),
            (10 * MINUTE, Value::from(0), "pending"),
            (hour, Value::Null, "pending"),
        ],
        "{p}"
    );
    let claim = &rows[0]["claim"];
    assert_eq!(claim["holder"], "node-a", "{p}");
    assert_eq!(claim["number"], 1, "{p}");
    assert_eq!(claim["current"], true, "{p}");
    assert!(
        claim["expiresAt"].as_i64().expect("an integer") > now,
        "{p}"
    );
    assert_eq!(rows[3]["claim"], Value::Null, "{p}");
    let exhausted = p["timers"]["exhausted"].as_array().expect("exhausted");
    assert_eq!(exhausted.len(), 1, "{p}");
    assert_eq!(exhausted[0]["wakeAt"], now - 20 * MINUTE, "{p}");
    assert_eq!(exhausted[0]["attempt"], 7, "{p}");
    assert_eq!(exhausted[0]["attempts"], 8, "{p}");
    assert_eq!(exhausted[0]["at"], now - MINUTE, "{p}");
    assert_eq!(p["timers"]["unreadable"], serde_json::json!([]), "{p}");

    // The inbox.
    let inbox = p["inbox"].as_array().expect("inbox");
    let messages: Vec<(&str, &str, bool)> = inbox
        .iter()
        .map(|m| {
            (
                m["channel"].as_str().expect("a string"),
                m["messageId"].as_str().expect("a string"),
                m["consumed"].as_bool().expect("a boolean"),
            )
        })
        .collect();
    assert_eq!(
        messages,
        vec![("approvals", "m-0", true), ("approvals", "m-1", false)],
        "{p}"
    );
    assert!(
        inbox[0]["arrival"].as_u64() < inbox[1]["arrival"].as_u64(),
        "{p}"
    );

    // The feed head: the store's cursor.
    assert_eq!(p["feed"]["supported"], true, "{p}");
    let head = p["feed"]["head"].as_str().expect("a head");
    assert_eq!(
        head,
        format!("{}.{}", p["feed"]["epoch"], p["feed"]["position"]),
        "{p}"
    );
    assert!(
        p["feed"]["position"].as_u64().expect("an integer") > 0
            || p["feed"]["epoch"].as_u64().expect("an integer") > 0
    );

    // Lineage and retention.
    assert_eq!(p["parent"], Value::Null, "{p}");
    assert_eq!(
        p["children"]["parked"],
        serde_json::json!(["kid-done", "kid-running"]),
        "{p}"
    );
    assert_eq!(
        p["children"]["waitedOn"],
        serde_json::json!(["kid-done", "kid-running"]),
        "{p}"
    );
    assert_eq!(p["retention"]["verdict"], "kept", "{p}");

    let kid = inspect_json(target, "kid-done");
    assert_eq!(kid["status"], "completed", "{kid}");
    assert_eq!(kid["openPark"], Value::Null, "{kid}");
    assert_eq!(kid["parent"], "parent", "{kid}");
    assert_eq!(kid["retention"]["verdict"], "pinned", "{kid}");
    assert_eq!(kid["retention"]["pinnedBy"], "parent", "{kid}");
    assert_eq!(kid["retention"]["endedAt"], now - hour, "{kid}");
    for (name, verdict, parent) in [
        ("kid-free", "eligible", Value::from("parent")),
        ("kid-running", "kept", Value::from("parent")),
        ("root-done", "eligible", Value::Null),
    ] {
        let json = inspect_json(target, name);
        assert_eq!(json["retention"]["verdict"], verdict, "{name}: {json}");
        assert_eq!(json["retention"]["pinnedBy"], Value::Null, "{name}: {json}");
        assert_eq!(json["parent"], parent, "{name}: {json}");
    }
    let stamped = inspect_json(target, "stamped");
    assert_eq!(stamped["events"][1]["class"], "kernel-stamped", "{stamped}");
    assert_eq!(stamped["events"][1]["answering"], true, "{stamped}");
    let corrupt = inspect_json(target, "kid-corrupt");
    assert_eq!(corrupt["parent"], Value::Null, "{corrupt}");
    assert!(corrupt["parentError"].is_string(), "{corrupt}");
    assert_eq!(corrupt["retention"]["verdict"], "undecided", "{corrupt}");
    let other = inspect_json(target, "other");
    assert_eq!(other["timers"]["rows"][0]["state"], "due", "{other}");

    // The text says the same.
    let (code, text, stderr) = inspect(target, &["parent"]);
    assert_eq!(code, Some(0), "{stderr}");
    for expected in [
        "status parked (head 3), current fence token 1",
        "#2 app.note [application] no token",
        "#3 EXECUTION_SUSPENDED [kernel] token 1",
        "open park: #3 (written under token 1)",
        "child kid-done (ended (completed)): answerable now",
        "kid-running (running): not answerable yet",
        "message on channel approvals (1 pending): answerable now",
        "re-drive (try 2)  claimed by node-a (claim 1) until",
        "exhausted records (1):",
        "gave up after 8 tries",
        "channel approvals message m-0",
        "): consumed",
        "(the store's cursor, not this execution's)",
        "parent: none recorded (a root)",
        "children its open park waits on: kid-done, kid-running",
        "retention: kept: it has not ended (parked)",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    let (code, text, _) = inspect(target, &["kid-done"]);
    assert_eq!(code, Some(0));
    assert!(
        text.contains("retention: pinned: it ended at")
            && text.contains("its parent parent is parked waiting on it"),
        "{text}"
    );

    // Ids: an unknown valid one fails (1), an invalid one is a bad option (2).
    let (code, stdout, stderr) = inspect(target, &["nobody"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("no execution with id nobody in "),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
    let long = "x".repeat(256);
    for bad in ["", long.as_str()] {
        let (code, stdout, stderr) = inspect(target, &[bad]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("not a valid execution id"), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
}

#[test]
fn sqlite_shows_an_execution_and_changes_nothing() {
    let scratch = Scratch::new("inspect-sqlite");
    let now = now_ms();
    let made = SqliteFixture::new(&scratch, now);
    let target = &made.target;
    check_fixture(target, now);
    let (code, _, stderr) = inspect(target, &["--schema", "app", "parent"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--schema: only for --store postgres"),
        "{stderr}"
    );
    made.assert_unchanged(&scratch);

    // An id with no log but a row left (its log deleted, say) still exits
    // 1, and says what is left.
    block_on(async {
        let stores = fixture::sqlite(&scratch.path().join("store.db")).await;
        let row = loomfence_core::timer::TimerRow::wake(fixture::id("ghost"), now);
        stores.timers.schedule(&row).await.expect("schedules");
    });
    let (code, stdout, stderr) = inspect(target, &["ghost"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("no execution with id ghost in sqlite:")
            && stderr.contains(
                "; the store still holds 1 timer row, 0 exhausted records, 0 messages for it"
            ),
        "{stderr}"
    );
}

#[test]
fn postgres_shows_an_execution_and_changes_nothing() {
    let Some(url) = common::postgres_url("the PostgreSQL inspect test") else {
        return;
    };
    let now = now_ms();
    let made = PostgresFixture::new(&url, "cli_inspect", now);
    let target = &made.target;
    check_fixture(target, now);
    // A schema that holds no store is refused, and not created.
    let missing = Target {
        args: vec![
            "--store".to_owned(),
            format!("postgres:{url}"),
            "--schema".to_owned(),
            format!("{}_missing", made.schema()),
        ],
    };
    let (code, _, stderr) = inspect(&missing, &["parent"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("holds no loomfence store"), "{stderr}");
    made.assert_unchanged_and_drop();
}

#[test]
fn stores_that_are_not_usable_exit_2_and_stay_as_they_were() {
    fixture::assert_unusable_stores_refused(
        "inspect",
        "inspect",
        &[&["parent"], &["parent", "--json"]],
    );
}
