//! `loomfence worker` as a process: it resumes what is due on a real
//! store (a timer wake, and a parent whose child ended before it started:
//! the rebuild), runs their bodies, counts what it did on its Prometheus
//! endpoint, logs JSON lines, and exits 0 on SIGTERM.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Scratch, loomfence};
use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
    timer::TimerRow,
};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, TimerStore};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn id(text: &str) -> ExecutionId {
    ExecutionId::new(text).expect("a valid id")
}

/// Now, in ms since the epoch.
fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_millis()).expect("in range")
}

/// Starts `id` and parks it on `wait`, at `at`.
async fn park(store: &SqliteEventStore, id: &ExecutionId, wait: Wait, at: i64) {
    store
        .append_many(
            id,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, at),
                NewEvent::kernel(KernelKind::ExecutionSuspended, at)
                    .with_payload(park_payload(&[wait])),
            ],
        )
        .await
        .unwrap_or_else(|e| panic!("parks {id}: {e}"));
}

/// A store with two executions ready to resume: `sleeper`, parked on a
/// timer that is due, and `parent`, parked on `child`, which has ended.
async fn ready_store(path: &std::path::Path) {
    let store = SqliteEventStore::open(path, SqliteOptions::default())
        .await
        .expect("creates the file");
    let timers = store.timers();
    let at = now_ms();
    let sleeper = id("sleeper");
    park(&store, &sleeper, Wait::Timer { wake_at: at }, at).await;
    timers
        .schedule(&TimerRow::wake(sleeper, at))
        .await
        .expect("schedules its wake");
    let (parent, child) = (id("parent"), id("child"));
    store
        .append(&child, started_child(&parent, at))
        .await
        .expect("starts the child");
    park(&store, &parent, Wait::Child(child.clone()), at).await;
    store
        .append(&child, NewEvent::kernel(KernelKind::ExecutionCompleted, at))
        .await
        .expect("ends the child");
}

/// Whether `ids` have all completed.
async fn completed(path: &std::path::Path, ids: &[&str]) -> bool {
    let store = SqliteEventStore::open(path, SqliteOptions::default())
        .await
        .expect("opens the file");
    for text in ids {
        let log = store.read_range(&id(text), 1, None).await.expect("reads");
        if !log
            .iter()
            .any(|e| e.kernel_kind() == Some(KernelKind::ExecutionCompleted))
        {
            return false;
        }
    }
    true
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    listener.local_addr().expect("an address").port()
}

/// The body of `GET /metrics`.
fn scrape(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the endpoint listens");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("asks");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("reads the answer");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

/// The value of counter `name` in a Prometheus text answer.
fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        line.strip_prefix(name)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Every counter is on `/metrics` from the start, at zero, before the
/// worker did anything: a dashboard or an alert sees 0, not a missing
/// series (only the counters something had touched were listed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_counter_is_listed_at_zero_before_anything_happens() {
    let scratch = Scratch::new("worker-metrics");
    let path = scratch.path().join("store.db");
    // A store with nothing to resume.
    drop(
        SqliteEventStore::open(&path, SqliteOptions::default())
            .await
            .expect("creates the file"),
    );
    let port = free_port();
    let mut worker = Command::new(env!("CARGO_BIN_EXE_loomfence"))
        .args(["worker", "--store", &format!("sqlite:{}", path.display())])
        .args([
            "--metrics",
            &format!("127.0.0.1:{port}"),
            "--node",
            "w-idle",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let until = Instant::now() + Duration::from_secs(30);
    let text = loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break scrape(port);
        }
        assert!(Instant::now() < until, "the endpoint listens");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for name in [
        "loomfence_resumes_total",
        "loomfence_resumes_refused_total",
        "loomfence_resumes_contended_total",
        "loomfence_redrive_rows_total",
        "loomfence_redrive_exhausted_total",
        "loomfence_timer_wakes_total",
        "loomfence_bodies_fenced_out_total",
        "loomfence_messages_delivered_total",
        "loomfence_worker_bodies_completed_total",
        "loomfence_worker_bodies_failed_total",
    ] {
        assert_eq!(counter(&text, name), Some(0), "{name}: {text}");
    }
    kill(
        Pid::from_raw(i32::try_from(worker.id()).expect("a pid")),
        Signal::SIGTERM,
    )
    .expect("signals");
    assert!(
        wait(&mut worker, Duration::from_secs(30)).is_some(),
        "it stops"
    );
}

/// Waits up to `patience` for `child` to exit.
fn wait(child: &mut Child, patience: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + patience;
    while Instant::now() < until {
        if let Some(status) = child.try_wait().expect("waits") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_resumes_counts_logs_json_and_stops_on_sigterm() {
    let scratch = Scratch::new("worker");
    let path = scratch.path().join("store.db");
    ready_store(&path).await;
    let port = free_port();
    let mut worker = Command::new(env!("CARGO_BIN_EXE_loomfence"))
        .args(["worker", "--store", &format!("sqlite:{}", path.display())])
        .args(["--log-json", "--metrics", &format!("127.0.0.1:{port}")])
        .args([
            "--feed-poll",
            "50ms",
            "--poll-every",
            "20ms",
            "--node",
            "w-test",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");

    let until = Instant::now() + Duration::from_secs(30);
    while !completed(&path, &["sleeper", "parent"]).await {
        assert!(Instant::now() < until, "both bodies complete");
        assert!(
            worker.try_wait().expect("polls").is_none(),
            "the worker runs on"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = scrape(port);
    assert_eq!(counter(&text, "loomfence_resumes_total"), Some(2), "{text}");
    assert_eq!(
        counter(&text, "loomfence_timer_wakes_total"),
        Some(1),
        "{text}"
    );
    assert_eq!(
        counter(&text, "loomfence_worker_bodies_completed_total"),
        Some(2),
        "{text}"
    );
    // Listed at zero from the start, and still zero.
    assert_eq!(
        counter(&text, "loomfence_bodies_fenced_out_total"),
        Some(0),
        "{text}"
    );
    assert!(
        text.contains("# HELP loomfence_resumes_total Resumes that landed"),
        "described: {text}"
    );

    let pid = Pid::from_raw(i32::try_from(worker.id()).expect("a pid"));
    kill(pid, Signal::SIGTERM).expect("signals");
    let status = wait(&mut worker, Duration::from_secs(20)).expect("exits after SIGTERM");
    assert_eq!(status.code(), Some(0), "a clean stop");
    let mut log = String::new();
    worker
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut log)
        .expect("reads the log");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["fields"]["message"].as_str())
        .collect();
    for expected in ["worker started", "rebuilt", "stopping", "stopped"] {
        assert!(messages.contains(&expected), "{expected}: {log}");
    }
}

/// Each bad option is refused by its own check (the message names it),
/// with exit code 2, and nothing is created or changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_refuses_bad_options_and_a_missing_store() {
    let scratch = Scratch::new("worker-options");
    let path = scratch.path().join("store.db");
    ready_store(&path).await;
    let store = format!("sqlite:{}", path.display());
    let before = std::fs::read(&path).expect("reads the file");
    let missing = scratch.store("missing.db");
    for (args, names) in [
        (vec!["--store", "nowhere:x"], "--store"),
        (vec!["--store", &missing], "--store"),
        (vec!["--store", "memory"], "--store"),
        (vec!["--store", "sqlite::memory:"], "--store"),
        (
            vec!["--store", &store, "--schema", "no such schema!"],
            "--schema",
        ),
        (vec!["--store", &store, "--schema", "app"], "--schema"),
        (vec!["--store", &store, "--node", ""], "--node"),
        (vec!["--store", &store, "--lease", "0s"], "--lease"),
        (
            vec!["--store", &store, "--feed-poll", "soon"],
            "--feed-poll",
        ),
        (vec!["--store", &store, "--feed-poll", "0s"], "--feed-poll"),
    ] {
        let out = loomfence("worker", &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?} names {names}: {stderr}");
    }
    // The missing file's message is about this command, not retention.
    let out = loomfence("worker", &["--store", &missing]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("this command opens an existing loomfence database"),
        "{stderr}"
    );
    assert!(!stderr.contains("retention"), "{stderr}");
    // A damaged database (a cut copy) is not a usable store: refused at
    // once, exit 2, unchanged (it was retried 7 times over 9 s, then exit
    // 1); an empty file is refused and stays empty.
    let cut = &before[..4096.min(before.len())];
    let stderr = common::assert_refused_unchanged(
        "worker",
        &scratch.path().join("damaged.db"),
        cut,
        &[],
        "damaged SQLite database",
    );
    assert!(!stderr.contains("trying again"), "no retry: {stderr}");
    common::assert_refused_unchanged(
        "worker",
        &scratch.path().join("empty.db"),
        b"",
        &[],
        "an empty file, not a loomfence database",
    );
    assert_eq!(scratch.files(), ["store.db"], "nothing created");
    assert_eq!(
        std::fs::read(&path).expect("reads the file"),
        before,
        "nothing changed"
    );
}
