//! `loomfence race`, run as a user runs it: the built binary, its stdout,
//! stderr and exit code.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::process::Output;

use serde_json::Value;

use crate::common::Scratch;

/// Runs `loomfence race ARGS…` to completion.
fn race(args: &[&str]) -> Output {
    common::loomfence("race", args)
}

/// Runs `loomfence race --json ARGS…`; see [`common::loomfence_json`].
fn race_json(args: &[&str]) -> Value {
    common::loomfence_json("race", args)
}

/// A count from the JSON object.
fn count(json: &Value, key: &str) -> u64 {
    json[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is a count: {json}"))
}

#[test]
fn default_run_reports_the_thirteen_keys_and_no_bug() {
    let json = race_json(&["--parks", "100"]);
    let mut keys: Vec<&str> = json
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "contended",
            "double_deliveries",
            "double_resumes",
            "elapsed_ms",
            "fenced_out",
            "left_parked",
            "messages_consumed",
            "messages_lost",
            "messages_sent",
            "parks",
            "redriven",
            "refused",
            "resumed"
        ]
    );
    // A race of resumes sends nothing.
    for key in [
        "messages_sent",
        "messages_consumed",
        "double_deliveries",
        "messages_lost",
    ] {
        assert_eq!(count(&json, key), 0, "{key}: {json}");
    }
    assert_eq!(count(&json, "parks"), 100);
    assert_eq!(
        count(&json, "left_parked"),
        100 - count(&json, "resumed"),
        "{json}"
    );
    assert_eq!(count(&json, "double_resumes"), 0, "{json}");
    assert_eq!(count(&json, "fenced_out"), 0, "{json}");
    // With crashes some executions may be left parked (every resumer that
    // got to it crashed); the rest are resumed. In practice a later
    // resumer gets past a dead acquirer, so nearly all are.
    let resumed = count(&json, "resumed");
    assert!((50..=100).contains(&resumed), "{json}");
    // 8 resumers × 100 executions: every loser is refused or contended.
    assert!(
        count(&json, "refused") + count(&json, "contended") <= 800,
        "{json}"
    );
}

#[test]
fn without_crashes_every_park_is_resumed_exactly_once() {
    // Heavy contention: 16 resumers over 20 parks.
    let json = race_json(&["--crash-rate", "0", "--parks", "20", "--resumers", "16"]);
    assert_eq!(count(&json, "resumed"), 20, "{json}");
    assert_eq!(count(&json, "double_resumes"), 0, "{json}");
    assert_eq!(count(&json, "fenced_out"), 0, "{json}");
    let json = race_json(&["--crash-rate", "0", "--parks", "100"]);
    assert_eq!(count(&json, "resumed"), 100, "{json}");
    assert_eq!(count(&json, "double_resumes"), 0, "{json}");
    assert_eq!(count(&json, "fenced_out"), 0, "{json}");
}

#[test]
fn every_attempt_crashing_leaves_every_park_parked() {
    // Without re-drive: the crashed resumers' dead acquirers can make a
    // rival's resume contended, and the re-driver (which never crashes)
    // would then resume that park.
    let out = race(&[
        "--crash-rate",
        "1",
        "--parks",
        "10",
        "--seed",
        "1",
        "--no-redrive",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("resumed 0 of 10 (10 left parked)"),
        "{stdout}"
    );
    // Both crash points were reached: a resumer that never met its crash
    // point would have resumed the park.
    let crashed = |point: &str| -> u64 {
        let (before, _) = stdout
            .split_once(&format!(" {point}"))
            .unwrap_or_else(|| panic!("the summary counts crashes {point}: {stdout}"));
        let count = before.rsplit([' ', '(']).next().unwrap_or_default();
        count
            .parse()
            .unwrap_or_else(|_| panic!("{count:?}: {stdout}"))
    };
    assert!(crashed("after acquire") > 0, "{stdout}");
    assert!(crashed("before append") > 0, "{stdout}");
}

#[test]
fn every_attempt_crashing_is_redriven_where_a_resume_ended_contended() {
    // The racing resumers all crash; the parks where their dead acquirers
    // made a rival's resume contended got a re-drive row, and the re-driver
    // resumes those. The others have no row: left for an operator, which
    // is not a failure.
    for seed in ["1", "2", "3"] {
        let json = race_json(&["--crash-rate", "1", "--parks", "10", "--seed", seed]);
        assert_eq!(count(&json, "resumed"), count(&json, "redriven"), "{json}");
        assert_eq!(
            count(&json, "left_parked") + count(&json, "redriven"),
            10,
            "{json}"
        );
        assert_eq!(count(&json, "double_resumes"), 0, "{json}");
        assert_eq!(count(&json, "fenced_out"), 0, "{json}");
    }
}

#[test]
fn unconditional_control_fences_winners_out() {
    // The negative control: with the plain acquire, a loser that read the
    // park before the winner's resume landed still takes the token after
    // it, and the winner's next body append is refused. The window is a
    // few steps wide, so the count varies from run to run. Measured with
    // 16 resumers over 200 parks, 2 cores: debug build (what `cargo test`
    // runs) ~5 per run, 1 run in 300 saw none (pinned to one core: 0 in
    // 100); release build ~6 per run but 11 runs in 100 saw none. Up to
    // eight tries make a miss ~1e-8 likely even in release; a miss every
    // time means the control no longer shows the window.
    let args = [
        "--unconditional",
        "--crash-rate",
        "0",
        "--resumers",
        "16",
        "--parks",
        "200",
    ];
    control_fences_a_body_out(&args, 200, 8);
}

/// Runs the unconditional control `race ARGS` up to `tries` times until a
/// body is fenced out, checking every run: fenced out, but never answered
/// twice (the append guard refuses the older token's resume), and every
/// one of `parks` resumed. Fails when no run fenced a body out.
fn control_fences_a_body_out(args: &[&str], parks: u64, tries: usize) {
    let mut seen = Vec::new();
    for _ in 0..tries {
        let json = race_json(args);
        assert_eq!(count(&json, "double_resumes"), 0, "{json}");
        assert_eq!(count(&json, "resumed"), parks, "{json}");
        if count(&json, "fenced_out") > 0 {
            return;
        }
        seen.push(json);
    }
    panic!("the unconditional control fenced no body out in {tries} runs of {args:?}: {seen:?}");
}

#[test]
fn human_summary_names_the_seed() {
    let out = race(&["--seed", "42", "--parks", "20"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("seed 42"), "{stdout}");
    assert!(stdout.contains("--seed 42"), "{stdout}");
    assert!(stdout.contains("resumes/s"), "{stdout}");
    assert!(stdout.lines().count() <= 6, "a short summary: {stdout}");
}

#[test]
fn bad_options_exit_2_with_a_clear_message() {
    // Ours: one line. clap's (an unknown flag, a value of the wrong type):
    // its own format, which adds a hint after the error line.
    for (args, expect, one_line) in [
        (&["--crash-rate", "2"][..], "--crash-rate 2", true),
        (&["--crash-rate", "-0.5"][..], "--crash-rate -0.5", true),
        (&["--crash-rate", "NaN"][..], "--crash-rate NaN", true),
        (&["--parks", "0"][..], "--parks 0", true),
        (&["--resumers", "0"][..], "--resumers 0", true),
        (&["--store", "nosuch"][..], "unknown store", true),
        (&["--store", "sqlite:"][..], "names no file", true),
        (
            &["--sqlite-durability", "normal"][..],
            "--sqlite-durability: only for --store sqlite",
            true,
        ),
        (
            &["--store", "sqlite::memory:", "--sqlite-durability", "fast"][..],
            "fast",
            false,
        ),
        (&["--nosuch"][..], "--nosuch", false),
        (&["--parks", "many"][..], "many", false),
        // A negative count is a bad value, named, not an unknown flag.
        (
            &["--parks", "-5"][..],
            "invalid value '-5' for '--parks <M>'",
            false,
        ),
        (
            &["--resumers", "-2"][..],
            "invalid value '-2' for '--resumers <N>'",
            false,
        ),
    ] {
        let out = race(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        if one_line {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
    }
}

#[test]
fn postgres_race_answers_every_park_once() {
    // Runs only when a server is named (`cargo xtask` sets it); the race gets
    // a schema of its own, dropped at the end.
    let Some(url) = common::postgres_url("the PostgreSQL races") else {
        return;
    };
    let store = format!("postgres:{url}");
    let json = race_json(&["--store", &store, "--crash-rate", "0", "--parks", "30"]);
    assert_eq!(count(&json, "resumed"), 30, "{json}");
    assert_eq!(count(&json, "double_resumes"), 0, "{json}");
    assert_eq!(count(&json, "fenced_out"), 0, "{json}");
}

#[test]
fn sqlite_race_with_defaults_holds_and_leaves_no_file() {
    let scratch = Scratch::new("race-defaults");
    let json = race_json(&["--store", &scratch.store("race.db")]);
    assert_eq!(count(&json, "parks"), 200, "{json}");
    assert_eq!(count(&json, "double_resumes"), 0, "{json}");
    assert_eq!(count(&json, "fenced_out"), 0, "{json}");
    assert!((100..=200).contains(&count(&json, "resumed")), "{json}");
    // The database, its WAL and its shared-memory file are all gone.
    assert_eq!(scratch.files(), Vec::<String>::new());
}

#[test]
fn sqlite_summary_names_the_file_and_its_durability() {
    let scratch = Scratch::new("race-summary");
    let store = scratch.store("race.db");
    let out = race(&[
        "--store",
        &store,
        "--sqlite-durability",
        "normal",
        "--parks",
        "20",
        "--crash-rate",
        "0",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("{store} (durability normal) store")),
        "{stdout}"
    );
    assert!(stdout.contains("resumed 20 of 20"), "{stdout}");
    assert_eq!(scratch.files(), Vec::<String>::new());
}

#[test]
fn sqlite_in_memory_answers_every_park_once() {
    let json = race_json(&[
        "--store",
        "sqlite::memory:",
        "--crash-rate",
        "0",
        "--parks",
        "50",
        "--resumers",
        "16",
    ]);
    assert_eq!(count(&json, "resumed"), 50, "{json}");
    assert_eq!(count(&json, "double_resumes"), 0, "{json}");
    assert_eq!(count(&json, "fenced_out"), 0, "{json}");
}

#[test]
fn sqlite_unconditional_control_fences_winners_out() {
    // On SQLite every store call is a hop to another thread and, for a
    // write, a turn in the writer's next group commit, so a loser's read of
    // the park goes stale far more often than on memory. Measured with these
    // options, 16 resumers over 50 parks: 3 to 11 bodies fenced out per run
    // over 30 release runs (a file and :memory:), never 0. Three tries keep
    // the test honest if a scheduler ever closes the window once.
    let scratch = Scratch::new("race-unconditional");
    let store = scratch.store("race.db");
    let args = [
        "--store",
        &store,
        "--unconditional",
        "--crash-rate",
        "0",
        "--resumers",
        "16",
        "--parks",
        "50",
    ];
    control_fences_a_body_out(&args, 50, 3);
}

#[test]
fn bad_sqlite_paths_exit_2_and_touch_nothing() {
    let scratch = Scratch::new("race-bad-paths");
    let dir = scratch.path();
    std::fs::write(dir.join("notes.txt"), "not a database").expect("a plain file");
    std::fs::write(dir.join("killed.db-wal"), "").expect("a stale WAL");
    let missing_dir = scratch.store("nosuch/race.db");
    let plain_file = scratch.store("notes.txt");
    let under_file = scratch.store("notes.txt/race.db");
    let killed = scratch.store("killed.db");
    let directory = format!("sqlite:{}", dir.display());
    for (store, expect) in [
        (&missing_dir, "does not exist"),
        (&plain_file, "already exists"),
        (&under_file, "is not a directory"),
        (&killed, "killed.db-wal exists"),
        (&directory, "already exists"),
    ] {
        let out = race(&["--store", store]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{store}: {stderr}");
        assert!(out.stdout.is_empty(), "{store}: nothing on stdout");
        assert!(
            stderr.starts_with("error: --store sqlite:"),
            "{store}: {stderr}"
        );
        assert!(stderr.contains(expect), "{store}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{store}: {stderr}");
    }
    // Refused, not opened: nothing was written, created or removed.
    assert_eq!(scratch.files(), ["killed.db-wal", "notes.txt"]);
    let notes = std::fs::read_to_string(dir.join("notes.txt")).expect("still there");
    assert_eq!(notes, "not a database");
}

/// Checks a run with dead acquirers and re-drive on: every park resumed,
/// none twice, no body fenced out, and some by the re-drive.
fn assert_redriven(json: &Value, parks: u64) {
    assert_eq!(count(json, "parks"), parks, "{json}");
    assert_eq!(count(json, "left_parked"), 0, "{json}");
    assert_eq!(count(json, "resumed"), parks, "{json}");
    assert_eq!(count(json, "double_resumes"), 0, "{json}");
    assert_eq!(count(json, "fenced_out"), 0, "{json}");
    assert!(count(json, "contended") > 0, "{json}");
    assert!(count(json, "redriven") > 0, "{json}");
}

#[test]
fn dead_acquirers_are_redriven_on_memory_and_sqlite() {
    for store in ["memory", "sqlite::memory:"] {
        let json = race_json(&["--store", store, "--dead-acquirers", "3", "--parks", "50"]);
        assert_redriven(&json, 50);
    }
    // A file: the timer rows live in it too, and it is removed with them.
    let scratch = Scratch::new("race-redrive");
    let json = race_json(&[
        "--store",
        &scratch.store("race.db"),
        "--dead-acquirers",
        "3",
        "--parks",
        "20",
    ]);
    assert_redriven(&json, 20);
    assert_eq!(scratch.files(), Vec::<String>::new());
}

#[test]
fn without_redrive_dead_acquirers_leave_parks_for_an_operator() {
    for store in ["memory", "sqlite::memory:"] {
        let json = race_json(&[
            "--store",
            store,
            "--dead-acquirers",
            "3",
            "--parks",
            "50",
            "--no-redrive",
        ]);
        assert!(count(&json, "left_parked") > 0, "{json}");
        assert_eq!(count(&json, "redriven"), 0, "{json}");
        assert_eq!(count(&json, "double_resumes"), 0, "{json}");
        assert_eq!(count(&json, "fenced_out"), 0, "{json}");
    }
}

#[test]
fn fewer_dead_acquirers_than_tries_are_passed_by_retrying() {
    // One resumer, no crashes: nothing but the dead acquirers contends.
    // Two are passed by the resume's third try; three take all three.
    let one = ["--resumers", "1", "--crash-rate", "0", "--parks", "20"];
    let two = race_json(&[&one[..], &["--dead-acquirers", "2", "--no-redrive"]].concat());
    assert_eq!(count(&two, "resumed"), 20, "{two}");
    assert_eq!(count(&two, "contended"), 0, "{two}");
    let three = race_json(&[&one[..], &["--dead-acquirers", "3", "--no-redrive"]].concat());
    assert_eq!(count(&three, "left_parked"), 20, "{three}");
    assert_eq!(count(&three, "contended"), 20, "{three}");
    let redriven = race_json(&[&one[..], &["--dead-acquirers", "3"]].concat());
    assert_eq!(count(&redriven, "redriven"), 20, "{redriven}");
    assert_eq!(count(&redriven, "left_parked"), 0, "{redriven}");
}

#[test]
fn human_summary_shows_the_redrive() {
    let out = race(&["--seed", "7", "--parks", "20", "--dead-acquirers", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("resumed 20 of 20 (0 left parked), 20 re-driven"),
        "{stdout}"
    );
    assert!(stdout.contains("re-drive on: "), "{stdout}");
    assert!(stdout.contains("3 dead acquirers per resume"), "{stdout}");
    let off = race(&[
        "--seed",
        "7",
        "--parks",
        "20",
        "--dead-acquirers",
        "3",
        "--no-redrive",
    ]);
    let stdout = String::from_utf8_lossy(&off.stdout);
    assert_eq!(off.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("resumed 0 of 20 (20 left parked), 0 re-driven"),
        "{stdout}"
    );
    assert!(stdout.contains("re-drive off (--no-redrive)"), "{stdout}");
}

#[test]
fn postgres_dead_acquirers_are_redriven() {
    let Some(url) = common::postgres_url("the PostgreSQL races") else {
        return;
    };
    let store = format!("postgres:{url}");
    let json = race_json(&["--store", &store, "--dead-acquirers", "3", "--parks", "30"]);
    assert_redriven(&json, 30);
    let off = race_json(&[
        "--store",
        &store,
        "--dead-acquirers",
        "3",
        "--parks",
        "30",
        "--no-redrive",
    ]);
    assert!(count(&off, "left_parked") > 0, "{off}");
    assert_eq!(count(&off, "redriven"), 0, "{off}");
}

/// Checks a race of messages that held: every park got its one message,
/// consumed once, none lost, none left parked, no body fenced out.
fn assert_delivered(json: &Value, parks: u64) {
    assert_eq!(count(json, "parks"), parks, "{json}");
    assert_eq!(count(json, "messages_sent"), parks, "{json}");
    assert_eq!(count(json, "messages_consumed"), parks, "{json}");
    assert_eq!(count(json, "double_deliveries"), 0, "{json}");
    assert_eq!(count(json, "messages_lost"), 0, "{json}");
    assert_eq!(count(json, "left_parked"), 0, "{json}");
    assert_eq!(count(json, "resumed"), parks, "{json}");
    assert_eq!(count(json, "double_resumes"), 0, "{json}");
    assert_eq!(count(json, "fenced_out"), 0, "{json}");
}

/// `race --wait message --dead-acquirers 3` with `extra` arguments on
/// `store`: every notify is contended by its dead acquirers, so the
/// inbox's re-drive and intent rows deliver the messages.
fn message_race(store: &str, parks: &str, extra: &[&str]) -> Value {
    let args = [
        &[
            "--wait",
            "message",
            "--store",
            store,
            "--dead-acquirers",
            "3",
            "--parks",
            parks,
        ][..],
        extra,
    ]
    .concat();
    race_json(&args)
}

#[test]
fn message_race_delivers_every_message_once_on_memory() {
    let json = message_race("memory", "100", &[]);
    assert_delivered(&json, 100);
    // Three dead acquirers take every try of every racing delivery: the
    // timer service's re-drives delivered them all.
    assert!(count(&json, "contended") > 0, "{json}");
    assert_eq!(count(&json, "redriven"), 100, "{json}");
    // Without re-drive rows the intent rows alone deliver them.
    let intents = message_race("memory", "50", &["--no-redrive"]);
    assert_delivered(&intents, 50);
    assert_eq!(count(&intents, "redriven"), 50, "{intents}");
    // Every sender crashing right after its send: only the intent rows
    // deliver.
    let crashed = message_race("memory", "30", &["--crash-rate", "1"]);
    assert_delivered(&crashed, 30);
    assert_eq!(count(&crashed, "refused"), 0, "{crashed}");
}

#[test]
fn message_race_delivers_every_message_once_on_sqlite() {
    let scratch = Scratch::new("race-messages");
    let json = message_race(&scratch.store("race.db"), "30", &["--resumers", "4"]);
    assert_delivered(&json, 30);
    assert_eq!(scratch.files(), Vec::<String>::new());
    let json = message_race("sqlite::memory:", "30", &[]);
    assert_delivered(&json, 30);
}

#[test]
fn postgres_message_race_delivers_every_message_once() {
    let Some(url) = common::postgres_url("the PostgreSQL races of messages") else {
        return;
    };
    let json = message_race(&format!("postgres:{url}"), "30", &[]);
    assert_delivered(&json, 30);
}

#[test]
fn the_message_checker_bites_on_unguarded_deliveries() {
    // Every sender appends the pair under a plain acquire_fence, with no
    // look at the park: each message is consumed by more than one sender,
    // and the race must say so and fail.
    let out = race(&[
        "--json",
        "--wait",
        "message",
        "--unguarded-delivery",
        "--parks",
        "20",
        "--resumers",
        "4",
        "--crash-rate",
        "0",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let json: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert!(count(&json, "double_deliveries") > 0, "{json}");
    assert!(
        count(&json, "messages_consumed") > count(&json, "messages_sent"),
        "{json}"
    );
    assert_eq!(count(&json, "messages_sent"), 20, "{json}");
    assert!(stderr.contains("double deliveries"), "{stderr}");
}

#[test]
fn message_race_summary_and_its_bad_options() {
    let out = race(&["--wait", "message", "--seed", "9", "--parks", "20"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("messages delivered by notify"), "{stdout}");
    assert!(
        stdout.contains("messages: 20 sent, 20 consumed, 0 double deliveries, 0 lost"),
        "{stdout}"
    );
    for (args, expect) in [
        (
            &["--wait", "message", "--unconditional"][..],
            "--unconditional: not with --wait message",
        ),
        (
            &["--unguarded-delivery"][..],
            "--unguarded-delivery: only with --wait message",
        ),
        (&["--wait", "letter"][..], "letter"),
    ] {
        let out = race(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}
