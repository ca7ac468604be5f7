//! `loomfence fleet` end to end: worker processes on one real store, killed
//! at random, and the verdict read from the logs. The negative control
//! shows that the verdict bites: the same fleet with the unconditional
//! acquire fences bodies out, and the command says so and exits 1.
//!
//! Every run takes its seed from `SIM_SEED` if set (else a fixed one) and
//! prints it; the seed fixes the workload and the faults (the interleaving
//! of the processes is the machine's).

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::process::Output;

use common::{Scratch, loomfence, postgres_url};
use serde_json::Value;

/// The seed of every run here, printed.
fn seed() -> String {
    let seed = std::env::var("SIM_SEED").unwrap_or_else(|_| "1603".to_owned());
    println!("SIM_SEED={seed}");
    seed
}

/// Runs `loomfence fleet --json` on `store` with 3 workers, `parents`
/// parents of 2 children each, this file's seed and `extra`, with the
/// workers' logs in a scratch directory named after the test (`name`).
/// Returns its exit code and its report (one JSON object alone on
/// stdout), and prints both with stderr.
fn fleet(name: &str, store: &str, parents: u64, extra: &[&str]) -> (Option<i32>, Value) {
    let scratch = Scratch::new(&format!("{name}-logs"));
    let logs = scratch.path().to_string_lossy().into_owned();
    let (parents, seed) = (parents.to_string(), seed());
    let shared = [
        "--json",
        "--logs",
        &logs,
        "--store",
        store,
        "--workers",
        "3",
        "--parents",
        &parents,
        "--children",
        "2",
        "--seed",
        &seed,
    ];
    let Output {
        status,
        stdout,
        stderr,
    } = loomfence("fleet", &[&shared[..], extra].concat());
    let stdout = String::from_utf8(stdout).expect("stdout is UTF-8");
    let stderr = String::from_utf8_lossy(&stderr);
    assert_eq!(
        stdout.lines().count(),
        1,
        "one line: {stdout}\nstderr: {stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).expect("one JSON object");
    println!("{report}\n{stderr}");
    (status.code(), report)
}

/// The figures every passing run must show.
fn assert_held(report: &Value, parents: u64) {
    for (field, expected) in [
        ("parents", parents),
        ("resumed", parents),
        ("double_resumes", 0),
        ("fenced_out", 0),
        ("left_parked", 0),
        ("sequence_faults", 0),
        ("violations", 0),
        ("children_open", 0),
        ("workers_died", 0),
        ("unclean_shutdowns", 0),
        ("double_deliveries", 0),
        ("messages_lost", 0),
    ] {
        assert_eq!(report[field], expected, "{field}: {report}");
    }
    assert_eq!(report["drained"], true, "{report}");
    assert!(report["elapsed_ms"].as_u64().is_some(), "{report}");
}

/// The figures of the parents waiting on a message (one in four by
/// default): no message stored twice, and every parent waiting on its
/// message alone resumed by it (nothing else can resume it).
fn assert_messages(report: &Value, parents: u64) {
    // Parents 2, 6, 10, …; those 6, 14, 22, … wait on it alone.
    let message_parents = (parents + 1) / 4;
    let alone = (parents + 1) / 8;
    assert_eq!(report["message_parents"], message_parents, "{report}");
    // A parent its children answered, and whose body completed, before
    // its message was sent refuses it (nothing stored): only the parents
    // waiting on a message alone are sure to store theirs.
    let sent = report["messages_sent"].as_u64().unwrap_or(0);
    assert!((alone..=message_parents).contains(&sent), "{report}");
    let by_message = report["resumed_by_message"].as_u64().unwrap_or(0);
    assert!(
        by_message >= alone,
        "the parents waiting on a message alone: {report}"
    );
    assert!(
        report["messages_consumed"].as_u64() == Some(by_message),
        "each message consumed once, by the resume it delivered: {report}"
    );
    assert_eq!(
        report["notifies"].as_u64(),
        Some(2 * message_parents),
        "every message sent twice: {report}"
    );
}

#[test]
fn a_postgres_fleet_holds_under_kills_and_ended_connections() {
    let Some(url) = postgres_url("the PostgreSQL fleet") else {
        return;
    };
    let store = format!("postgres:{url}");
    let (code, report) = fleet(
        "pg-fleet",
        &store,
        150,
        &[
            "--spread",
            "12s",
            "--kill-every",
            "2s",
            "--terminate-every",
            "1s",
        ],
    );
    assert_eq!(code, Some(0), "{report}");
    assert_held(&report, 150);
    assert_messages(&report, 150);
    assert!(
        report["kills"].as_u64() >= Some(3),
        "killed as asked: {report}"
    );
    assert!(
        report["terminated_backends"].as_u64() >= Some(1),
        "connections ended as asked: {report}"
    );
    // Both answers raced for parks: the children's and the deadline's.
    assert!(report["resumed_by_children"].as_u64() > Some(0), "{report}");
    assert!(report["resumed_by_timer"].as_u64() > Some(0), "{report}");
}

/// The negative control: the unconditional acquire lets a loser take the
/// token after the winner's resume landed, and the fleet must see it.
#[test]
fn the_unconditional_acquire_fences_bodies_out_and_the_fleet_fails() {
    let Some(url) = postgres_url("the PostgreSQL fleet's negative control") else {
        return;
    };
    let store = format!("postgres:{url}");
    let (code, report) = fleet(
        "pg-control",
        &store,
        150,
        &["--spread", "8s", "--kill-every", "2s", "--unconditional"],
    );
    assert_eq!(code, Some(1), "a violation exits 1: {report}");
    assert_eq!(report["unconditional"], true);
    assert!(
        report["fenced_out"].as_u64() > Some(0),
        "the check bites: {report}"
    );
    assert_eq!(report["violations"], report["fenced_out"], "{report}");
    assert_eq!(
        report["double_resumes"], 0,
        "the park-conditional append still holds"
    );
}

#[test]
fn an_sqlite_fleet_shares_one_file_and_holds_under_kills() {
    let scratch = Scratch::new("fleet-sqlite");
    let store = scratch.store("fleet.db");
    let (code, report) = fleet(
        "sqlite-fleet",
        &store,
        60,
        &["--spread", "6s", "--kill-every", "1500ms"],
    );
    assert_eq!(code, Some(0), "{report}");
    assert_held(&report, 60);
    assert_messages(&report, 60);
    assert!(report["kills"].as_u64() >= Some(2), "{report}");
    assert!(
        scratch.files().is_empty(),
        "the file is removed: {:?}",
        scratch.files()
    );
}

/// A store in use: finished family trees written before the workers
/// start, which a correct worker never reads (its rebuild reads the open
/// parks) and touches none of. The workers time their catch-up, and the
/// report carries the slowest, with the offered rate beside the kept one.
#[test]
fn an_sqlite_fleet_over_a_history_leaves_it_untouched_and_times_its_rebuilds() {
    let scratch = Scratch::new("fleet-history");
    let store = scratch.store("fleet.db");
    let (code, report) = fleet(
        "history-fleet",
        &store,
        30,
        &["--spread", "3s", "--kill-every", "1s", "--history", "200"],
    );
    assert_eq!(code, Some(0), "{report}");
    assert_held(&report, 30);
    assert_eq!(report["history"], 200, "{report}");
    assert_eq!(
        report["history_touched"], 0,
        "every history execution still ended, with the head it was written with: {report}"
    );
    // Three workers started, at least one restarted after a kill.
    assert!(report["rebuilds"].as_u64() >= Some(4), "{report}");
    assert!(report["rebuild_ms"].as_u64() > Some(0), "{report}");
    // 30 parents over 3 s.
    assert_eq!(report["offered_per_s"], 10.0, "{report}");
    assert!(report["drain_after_ms"].is_u64(), "{report}");
    assert!(
        report["parents_per_second"].as_f64() > Some(0.0),
        "{report}"
    );
}

#[test]
fn fleets_refuse_stores_their_workers_cannot_share_and_bad_counts() {
    for args in [
        &["--store", "memory"][..],
        &["--store", "sqlite::memory:"],
        &["--store", "sqlite:/tmp/x.db", "--workers", "0"],
        &["--store", "sqlite:/tmp/x.db", "--terminate-every", "1s"],
        &["--store", "sqlite:/tmp/x.db", "--kill-every", "0s"],
    ] {
        let out = loomfence("fleet", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with("error: "),
            "{args:?}"
        );
    }
}

/// A fleet that fails before any worker starts (here: no server at the
/// URL) leaves no empty log folder behind and does not point at one; it
/// printed "worker logs in DIR" for a folder it had made and left empty.
#[test]
fn a_fleet_that_fails_before_any_worker_leaves_no_log_folder() {
    let scratch = Scratch::new("fleet-early-failure");
    let logs = scratch.path().join("logs");
    let out: Output = loomfence(
        "fleet",
        &[
            "--store",
            "postgres:postgres://app@127.0.0.1:1/orders",
            "--logs",
            &logs.to_string_lossy(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("could not connect to PostgreSQL at app@127.0.0.1:1/orders"),
        "{stderr}"
    );
    assert!(!stderr.contains("worker logs in"), "{stderr}");
    assert!(!logs.exists(), "no empty log folder left behind");
}
