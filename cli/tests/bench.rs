//! `loomfence bench`, run as a user runs it: the built binary on the memory
//! store and on SQLite, small enough to take a few seconds at most.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::process::Output;

use serde_json::Value;

use crate::common::Scratch;

/// Runs `loomfence bench ARGS…` to completion.
fn bench(args: &[&str]) -> Output {
    common::loomfence("bench", args)
}

/// A positive, finite number from the JSON.
fn positive(json: &Value, key: &str) -> f64 {
    let value = json[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number: {json}"));
    assert!(value.is_finite() && value > 0.0, "{key} > 0: {json}");
    value
}

#[test]
fn json_has_every_memory_workload_with_positive_numbers() {
    let json = common::loomfence_json("bench", &["--executions", "50", "--runs", "1"]);
    assert_eq!(json["store"], "memory");
    assert_eq!(json["executions"], 50);
    assert_eq!(json["runs"], 1);

    let workloads = json["workloads"].as_array().expect("a workloads array");
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["workload"].as_str().expect("a workload name"))
        .collect();
    // The pipelined acquire is a PostgreSQL choice: not on memory.
    assert_eq!(
        names,
        [
            "unfenced",
            "fenced_append",
            "fenced",
            "acquire",
            "park_resume_unfenced",
            "park_resume_acquire_fence",
            "park_resume_fence_if_parked_at",
        ]
    );
    for workload in workloads {
        positive(workload, "executions_per_sec");
        let p50 = positive(workload, "p50_ms");
        let p99 = positive(workload, "p99_ms");
        assert!(p50 <= p99, "{workload}");
        let resumes = workload["workload"]
            .as_str()
            .is_some_and(|w| w.starts_with("park"));
        if resumes {
            positive(workload, "resume_p50_ms");
        } else {
            assert!(workload["resume_p50_ms"].is_null(), "{workload}");
        }
        let runs = workload["per_run"].as_array().expect("per_run");
        assert_eq!(runs.len(), 1, "{workload}");
        positive(&runs[0], "executions_per_sec");
    }

    let comparisons = json["comparisons"].as_object().expect("comparisons");
    let mut keys: Vec<&str> = comparisons.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "conditional_vs_acquire_fence",
            "fenced_append_vs_unfenced",
            "fenced_vs_unfenced"
        ],
        "no function/pipelined comparison on memory"
    );
    for comparison in comparisons.values() {
        positive(comparison, "throughput_ratio");
        assert!(comparison["extra_time"].as_f64().is_some(), "{comparison}");
    }
}

#[test]
fn the_table_has_a_row_per_workload_and_the_comparisons() {
    let out = bench(&["--executions", "20", "--runs", "2", "--concurrency", "4"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rows = stdout.lines().filter(|l| l.starts_with("| ")).count();
    assert_eq!(rows, 1 + 7, "a header and seven rows: {stdout}");
    assert!(
        stdout.contains("| park/resume, fence_if_parked_at |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("- fenced append / unfenced append: "),
        "{stdout}"
    );
    assert!(stdout.contains("| acquire_fence alone |"), "{stdout}");
    assert!(stdout.contains("time per execution"), "{stdout}");
}

/// Every refusal exits 2 and names the option. Negative numbers were
/// read as unknown options ("unexpected argument '-5' found"); `--pool` on
/// a store that has no pool was accepted and meant nothing.
#[test]
fn bad_options_exit_2() {
    for (args, expect) in [
        (&["--executions", "0"][..], "--executions 0"),
        (&["--runs", "0"][..], "--runs 0"),
        (&["--concurrency", "0"][..], "--concurrency 0"),
        (&["--store", "sqlite:"][..], "names no file"),
        (
            &["--store", "sqlite:/loomfence/no/such/dir/b.db"][..],
            "does not exist",
        ),
        (
            &["--sqlite-durability", "full"][..],
            "--sqlite-durability: only for --store sqlite",
        ),
        (
            &["--store", "postgres:"][..],
            "not a PostgreSQL connection string",
        ),
        (&["--store", "nosuch"][..], "unknown store"),
        (
            &["--archive"][..],
            "--archive: only with --workload retention",
        ),
        (
            &["--workload", "retention", "--runs", "2"][..],
            "--runs: only with --workload kernel",
        ),
        (
            &["--workload", "retention", "--executions", "0"][..],
            "--executions 0",
        ),
        (
            &["--pool", "4"][..],
            "--pool: only for --store postgres:URL",
        ),
        (
            &["--store", "sqlite::memory:", "--pool", "4"][..],
            "--pool: only for --store postgres:URL",
        ),
        (
            &["--executions", "-5"][..],
            "invalid value '-5' for '--executions <N>': -5 is not in",
        ),
        (
            &["--concurrency", "-1"][..],
            "invalid value '-1' for '--concurrency <N>'",
        ),
    ] {
        let out = bench(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

#[test]
fn postgres_measures_both_acquire_strategies() {
    let Some(url) = common::postgres_url("the PostgreSQL bench") else {
        return;
    };
    let store = format!("postgres:{url}");
    let json = common::loomfence_json(
        "bench",
        &[
            "--store",
            &store,
            "--executions",
            "20",
            "--concurrency",
            "4",
            "--runs",
            "1",
        ],
    );
    let workloads = json["workloads"].as_array().expect("a workloads array");
    assert_eq!(workloads.len(), 8, "{json}");
    assert_eq!(
        workloads[7]["workload"], "park_resume_fence_if_parked_at_pipelined",
        "{json}"
    );
    for workload in workloads {
        positive(workload, "executions_per_sec");
    }
    positive(
        &json["comparisons"]["function_vs_pipelined"],
        "throughput_ratio",
    );
    assert_eq!(json["pool_size"], 4, "{json}");
}

#[test]
fn sqlite_json_has_every_workload_the_targets_and_leaves_no_file() {
    let scratch = Scratch::new("bench-sqlite");
    let store = scratch.store("bench.db");
    let json = common::loomfence_json(
        "bench",
        &["--store", &store, "--executions", "50", "--runs", "1"],
    );
    assert_eq!(json["store"], store.as_str(), "{json}");
    assert_eq!(json["sqlite_durability"], "full", "{json}");
    let workloads = json["workloads"].as_array().expect("a workloads array");
    assert_eq!(workloads.len(), 7, "no pipelined acquire on SQLite: {json}");
    for workload in workloads {
        positive(workload, "executions_per_sec");
        assert_eq!(workload["per_run"].as_array().map(Vec::len), Some(1));
    }
    let comparisons = &json["comparisons"];
    assert_eq!(
        comparisons["fenced_append_vs_unfenced"]["target"], 0.05,
        "{json}"
    );
    assert!(
        comparisons["fenced_vs_unfenced"]["target"].is_null(),
        "{json}"
    );
    assert_eq!(
        comparisons["conditional_vs_acquire_fence"]["target"], 0.15,
        "{json}"
    );
    positive(
        &comparisons["fenced_append_vs_unfenced"],
        "throughput_ratio",
    );
    // The database, its WAL and its shared-memory file are all gone.
    assert_eq!(scratch.files(), Vec::<String>::new());
}

#[test]
fn sqlite_table_names_the_durability_and_both_verdicts() {
    let out = bench(&[
        "--store",
        "sqlite::memory:",
        "--sqlite-durability",
        "normal",
        "--executions",
        "20",
        "--runs",
        "1",
        "--concurrency",
        "4",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with("loomfence bench: sqlite::memory:, 4 concurrent tasks"),
        "{stdout}"
    );
    assert!(stdout.contains("the 5.0% target)"), "{stdout}");
    assert!(stdout.contains("the 15.0% target)"), "{stdout}");
    // What a target is, said once under the comparisons.
    assert!(
        stdout.contains("a target is the most extra time per execution"),
        "{stdout}"
    );
}

#[test]
fn sqlite_refuses_an_existing_file_and_leaves_it_alone() {
    let scratch = Scratch::new("bench-existing");
    let existing = scratch.path().join("mine.db");
    std::fs::write(&existing, "someone's data").expect("a file");
    let out = bench(&["--store", &scratch.store("mine.db")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("already exists"), "{stderr}");
    let kept = std::fs::read_to_string(&existing).expect("still there");
    assert_eq!(kept, "someone's data");
    assert_eq!(scratch.files(), ["mine.db"]);
}

/// Runs `loomfence bench --workload retention --json ARGS…`, expects exit
/// code 0 and one JSON object, and returns it.
fn retention_json(args: &[&str]) -> Value {
    common::loomfence_json("bench", &[&["--workload", "retention"], args].concat())
}

/// The counts of a sweep of 200 bench executions: 20 parked parents and
/// their 20 pinned children, 60 old roots, 40 old children of the running
/// parent, 40 young, 20 running, and the running parent.
fn assert_sweep_of_200(sweep: &Value) {
    assert_eq!(sweep["examined"], 201, "{sweep}");
    assert_eq!(sweep["eligible"], 120, "{sweep}");
    assert_eq!(sweep["deleted"], 100, "{sweep}");
    assert_eq!(sweep["pinned"], 20, "{sweep}");
    assert_eq!(sweep["log_reads"], 120, "{sweep}");
    // The 20 pinned children's own parents, and the running parent of the 40
    // free children once: every execution is on one page.
    assert_eq!(sweep["parent_reads"], 21, "{sweep}");
    assert_eq!(sweep["delete_batches"], 1, "{sweep}");
    positive(sweep, "examined_per_sec");
    positive(sweep, "deleted_per_sec");
}

#[test]
fn retention_on_memory_times_a_sweep_and_an_archiving_sweep() {
    let json = retention_json(&["--executions", "200", "--archive"]);
    assert_eq!(json["workload"], "retention", "{json}");
    assert_eq!(json["store"], "memory", "{json}");
    assert_eq!(json["executions"], 200, "{json}");
    let sweeps = json["sweeps"].as_array().expect("a sweeps array");
    assert_eq!(sweeps.len(), 2, "{json}");
    assert_eq!(sweeps[0]["variant"], "delete", "{json}");
    assert_eq!(sweeps[0]["archived"], 0, "{json}");
    assert_eq!(sweeps[1]["variant"], "archive_then_delete", "{json}");
    assert_eq!(sweeps[1]["archived"], 100, "{json}");
    positive(&sweeps[1], "archive_bytes");
    for sweep in sweeps {
        assert_sweep_of_200(sweep);
    }
}

#[test]
fn retention_on_sqlite_prints_a_table_and_leaves_no_file() {
    let scratch = Scratch::new("bench-retention-sqlite");
    let out = bench(&[
        "--workload",
        "retention",
        "--store",
        &scratch.store("bench.db"),
        "--sqlite-durability",
        "normal",
        "--executions",
        "200",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("(durability normal), 200 executions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| delete | 201 | 120 | 100 | 20 | 0 | 120 | 21 |"),
        "{stdout}"
    );
    assert_eq!(scratch.files(), Vec::<String>::new());
}

/// `--store postgres:URL` goes through the adapter's TLS: `verify-full`
/// with the server's CA runs the bench; the same URL at an address the
/// certificate does not name exits 1 saying where and why, and never
/// prints the password.
#[test]
fn postgres_over_verified_tls_runs_and_a_wrong_host_is_refused_by_name() {
    let Some(url) = common::postgres_url("the PostgreSQL bench over TLS") else {
        return;
    };
    let Some(ca) = common::postgres_tls_ca("the PostgreSQL bench over TLS") else {
        return;
    };
    let port = url
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split('/').next())
        .expect("the URL names its port");
    let at = |host: &str| {
        format!(
            "postgres:postgres://postgres:hunter2@{host}:{port}/postgres?sslmode=verify-full&sslrootcert={ca}"
        )
    };
    let args = |store: &str| -> Vec<String> {
        [
            "--store",
            store,
            "--executions",
            "20",
            "--concurrency",
            "2",
            "--runs",
            "1",
            "--only",
            "unfenced",
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let verified = at("localhost");
    let json = common::loomfence_json(
        "bench",
        &args(&verified)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    positive(&json["workloads"][0], "executions_per_sec");
    let wrong = at("127.0.0.1");
    let out = bench(&args(&wrong).iter().map(String::as_str).collect::<Vec<_>>());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(
        stderr.contains("certificate not valid for host 127.0.0.1"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

/// `--help`, of the binary and of every command, states the one exit-code
/// rule they all follow.
#[test]
fn help_states_the_exit_codes() {
    for args in [
        &["--help"][..],
        &["bench", "--help"],
        &["race", "--help"],
        &["init", "--help"],
        &["retention", "--help"],
        &["recover", "--help"],
        &["worker", "--help"],
        &["fleet", "--help"],
        &["inspect", "--help"],
        &["timers", "--help"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_loomfence"))
            .args(args)
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {stdout}");
        for part in [
            "0 done",
            "1 the run failed",
            "2 a bad option, or a store that is not a usable loomfence store",
            "130 interrupted",
        ] {
            assert!(stdout.contains(part), "{args:?} {part}: {stdout}");
        }
    }
}
