//! `loomfence bench`, run as a user runs it: the built binary on the memory
//! store, small enough to take well under a second.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs `loomfence bench ARGS…` to completion.
fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loomfence"))
        .arg("bench")
        .args(args)
        .output()
        .expect("the loomfence binary runs")
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
    let out = bench(&["--executions", "50", "--runs", "1", "--json"]);
    let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.is_empty(), "no progress off a terminal: {stderr}");
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout}");
    let json: Value = serde_json::from_str(&stdout).expect("stdout is one JSON value");
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
            "fenced",
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
        ["conditional_vs_acquire_fence", "fenced_vs_unfenced"],
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
    assert_eq!(rows, 1 + 5, "a header and five rows: {stdout}");
    assert!(
        stdout.contains("| park/resume, fence_if_parked_at |"),
        "{stdout}"
    );
    assert!(stdout.contains("- fenced / unfenced: "), "{stdout}");
    assert!(stdout.contains("time per execution"), "{stdout}");
}

#[test]
fn bad_options_exit_2() {
    for (args, expect) in [
        (&["--executions", "0"][..], "--executions 0"),
        (&["--runs", "0"][..], "--runs 0"),
        (&["--concurrency", "0"][..], "--concurrency 0"),
        (&["--store", "sqlite:/tmp/x.db"][..], "not built yet"),
        (
            &["--store", "postgres:"][..],
            "not a PostgreSQL connection string",
        ),
        (&["--store", "nosuch"][..], "unknown store"),
    ] {
        let out = bench(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

/// The PostgreSQL server the tests may use (`cargo xtask` sets it); unset
/// or empty, the PostgreSQL test passes without running.
fn postgres_url() -> Option<String> {
    std::env::var("LOOMFENCE_PG_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

#[test]
fn postgres_measures_both_acquire_strategies() {
    let Some(url) = postgres_url() else {
        eprintln!("LOOMFENCE_PG_URL is not set: skipping the PostgreSQL bench");
        return;
    };
    let store = format!("postgres:{url}");
    let out = bench(&[
        "--store",
        &store,
        "--executions",
        "20",
        "--concurrency",
        "4",
        "--runs",
        "1",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let json: Value = serde_json::from_str(&stdout).expect("stdout is one JSON value");
    let workloads = json["workloads"].as_array().expect("a workloads array");
    assert_eq!(workloads.len(), 6, "{json}");
    assert_eq!(
        workloads[5]["workload"], "park_resume_fence_if_parked_at_pipelined",
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
