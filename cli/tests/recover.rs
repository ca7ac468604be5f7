//! `loomfence recover` as a process, on SQLite and PostgreSQL: exhausted
//! records recovered (resumed, not parked), a named execution re-driven,
//! bad ids and stores refused with nothing changed, and recoveries racing
//! running workers, each park still answered once.

#[allow(dead_code, reason = "each test file uses part of the shared helpers")]
mod common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Scratch, loomfence, loomfence_json, postgres_url};
use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
    timer::{DueFilter, ExhaustedQuery, Exhaustion, Lease, NodeId, TimerRow},
};
use loomfence_postgres::PostgresEventStore;
use loomfence_sqlite::{SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, TimerStore};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

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

/// A store made by `loomfence init`, and how the test reaches it.
struct Target {
    /// `--store` (and `--schema`) as the commands take them.
    args: Vec<String>,
    /// Its logs.
    events: Arc<dyn EventStore>,
    /// Its timers.
    timers: Arc<dyn TimerStore>,
    /// The PostgreSQL store and its schema, to drop at the end.
    drop: Option<(Arc<PostgresEventStore>, String)>,
    /// Keeps the SQLite file's directory.
    _scratch: Option<Scratch>,
}

impl Target {
    /// A new SQLite file, made by `loomfence init`.
    async fn sqlite(name: &str) -> Self {
        let scratch = Scratch::new(name);
        let path = scratch.path().join("store.db");
        let store = format!("sqlite:{}", path.display());
        init(&["--store", &store]);
        let events = SqliteEventStore::open(&path, SqliteOptions::default())
            .await
            .expect("opens the store init made");
        let timers: Arc<dyn TimerStore> = Arc::new(events.timers());
        Self {
            args: vec!["--store".into(), store],
            events: Arc::new(events),
            timers,
            drop: None,
            _scratch: Some(scratch),
        }
    }

    /// A new schema on the test server, made by `loomfence init`; `None`
    /// when there is no server outside CI.
    async fn postgres(name: &str) -> Option<Self> {
        let url = postgres_url(name)?;
        let schema = format!("recover_{name}_{}", std::process::id());
        let store = format!("postgres:{url}");
        init(&["--store", &store, "--schema", &schema]);
        let events = Arc::new(common::connect_schema(&url, &schema, false).await);
        let timers: Arc<dyn TimerStore> = Arc::new(events.timers());
        Some(Self {
            args: vec!["--store".into(), store, "--schema".into(), schema.clone()],
            events: Arc::clone(&events) as Arc<dyn EventStore>,
            timers,
            drop: Some((events, schema)),
            _scratch: None,
        })
    }

    /// The store arguments, then `more`.
    fn with<'a>(&'a self, more: &[&'a str]) -> Vec<&'a str> {
        self.args
            .iter()
            .map(String::as_str)
            .chain(more.iter().copied())
            .collect()
    }

    /// Drops the PostgreSQL schema.
    async fn finish(self) {
        if let Some((store, schema)) = self.drop {
            common::drop_schema(&store, &schema).await;
        }
    }

    /// `id` started and parked on `wait`.
    async fn park(&self, id: &ExecutionId, wait: Wait) {
        let at = now_ms();
        self.events
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

    /// `parent` parked on `child`, which has ended: ready for its
    /// supervisor to resume.
    async fn park_on_ended_child(&self, parent: &ExecutionId, child: &ExecutionId) {
        let at = now_ms();
        self.events
            .append(child, started_child(parent, at))
            .await
            .expect("starts the child");
        self.park(parent, Wait::Child(child.clone())).await;
        self.events
            .append(child, NewEvent::kernel(KernelKind::ExecutionCompleted, at))
            .await
            .expect("ends the child");
    }

    /// Writes each row, claims them all and exhausts every claim: what the
    /// fire that gave up on each leaves.
    async fn exhaust(&self, rows: &[TimerRow]) {
        for row in rows {
            self.timers.schedule(row).await.expect("schedules");
        }
        let lease = Lease {
            holder: NodeId::new("gave-up").expect("a node id"),
            now: now_ms(),
            duration_ms: 60_000,
        };
        let page = self
            .timers
            .claim_due(&lease, 1_000, DueFilter::default())
            .await
            .expect("claims");
        assert_eq!(page.claims.len(), rows.len(), "every row claimed");
        for claim in &page.claims {
            let exhaustion = Exhaustion {
                attempts: 8,
                at: lease.now,
            };
            let done = self
                .timers
                .exhaust(claim, &exhaustion)
                .await
                .expect("exhausts");
            assert_eq!(done, loomfence_core::timer::Completed::Done);
        }
    }

    /// How many records are left.
    async fn records(&self) -> usize {
        self.timers
            .exhausted(&ExhaustedQuery::default())
            .await
            .expect("lists the records")
            .len()
    }

    /// How many times `id` was resumed.
    async fn resumes(&self, id: &ExecutionId) -> usize {
        self.events
            .read_range(id, 1, None)
            .await
            .expect("reads")
            .iter()
            .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
            .count()
    }
}

/// `loomfence init ARGS…`, which must succeed.
fn init(args: &[&str]) {
    let out = loomfence("init", args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The recoveries of a JSON report, by execution: its outcome.
fn outcomes(report: &Value) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = report["recovered"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            (
                r["executionId"].as_str().expect("an id").to_owned(),
                r["outcome"].as_str().expect("an outcome").to_owned(),
            )
        })
        .collect();
    all.sort();
    all
}

/// The exhausted records are recovered (a parent whose children ended is
/// resumed through the supervisor's re-driver, a timer wake through its
/// own check, a finished execution is not parked), every record is
/// cleared, a second run finds nothing, and a named execution without a
/// record is re-driven.
async fn recovers(target: Target) {
    let now = now_ms();
    let (parent, child) = (id("parent"), id("child"));
    target.park_on_ended_child(&parent, &child).await;
    let sleeper = id("sleeper");
    target
        .park(&sleeper, Wait::Timer { wake_at: now - 5 })
        .await;
    let done = id("done");
    target
        .events
        .append_many(
            &done,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, now),
                NewEvent::kernel(KernelKind::ExecutionCompleted, now),
            ],
        )
        .await
        .expect("a finished execution");
    let (named, named_child) = (id("named"), id("named-child"));
    target.park_on_ended_child(&named, &named_child).await;
    target
        .exhaust(&[
            TimerRow::redrive(parent.clone(), now - 10, 7),
            TimerRow::wake(sleeper.clone(), now - 5),
            TimerRow::redrive(done.clone(), now - 10, 7),
        ])
        .await;
    assert_eq!(target.records().await, 3);

    let report = loomfence_json("recover", &target.with(&["--exhausted"]));
    assert_eq!(
        outcomes(&report),
        [
            ("done".to_owned(), "notParked".to_owned()),
            ("parent".to_owned(), "resumed".to_owned()),
            ("sleeper".to_owned(), "resumed".to_owned()),
        ],
        "{report}"
    );
    assert_eq!(report["counts"]["resumed"], 2, "{report}");
    assert_eq!(target.records().await, 0, "every record cleared");
    assert_eq!(target.resumes(&parent).await, 1);
    assert_eq!(target.resumes(&sleeper).await, 1);
    assert_eq!(target.resumes(&named).await, 0, "not named, no record");

    let again = loomfence_json("recover", &target.with(&["--exhausted"]));
    assert_eq!(outcomes(&again), [], "nothing left: {again}");

    // Named, with no record: re-driven through the same re-drivers.
    let out = loomfence("recover", &target.with(&["named"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("named: no exhausted record; re-driven: resumed"),
        "{stdout}"
    );
    assert!(stdout.contains("1 recovery: 1 resumed"), "{stdout}");
    assert_eq!(target.resumes(&named).await, 1);
    // Again: the park is answered, nothing waits.
    let report = loomfence_json("recover", &target.with(&["named", "parent"]));
    assert_eq!(
        outcomes(&report),
        [
            ("named".to_owned(), "notParked".to_owned()),
            ("parent".to_owned(), "notParked".to_owned()),
        ]
    );
    assert_eq!(target.resumes(&named).await, 1, "resumed once");
    target.finish().await;
}

/// Bad ids and a store that is not there are refused before anything is
/// done: an id the store has no trace of exits 1 (and the good id beside
/// it is not recovered), a malformed id exits 2.
async fn refuses(target: Target) {
    let now = now_ms();
    let (parent, child) = (id("parent"), id("child"));
    target.park_on_ended_child(&parent, &child).await;
    target
        .exhaust(&[TimerRow::redrive(parent.clone(), now - 10, 7)])
        .await;

    let out = loomfence("recover", &target.with(&["parent", "nobody"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no execution with id \"nobody\""),
        "{stderr}"
    );
    assert_eq!(target.resumes(&parent).await, 0, "nothing recovered");
    assert_eq!(target.records().await, 1, "the record is kept");

    let long = "x".repeat(256);
    for (bad, expect) in [("", "ID"), (long.as_str(), "ID")] {
        let out = loomfence("recover", &target.with(&["parent", bad]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(stderr.contains(expect), "{bad:?}: {stderr}");
    }
    let out = loomfence("recover", &target.with(&[]));
    assert_eq!(out.status.code(), Some(2), "neither ids nor --exhausted");
    let out = loomfence("recover", &target.with(&["--exhausted", "parent"]));
    assert_eq!(out.status.code(), Some(2), "both ids and --exhausted");
    assert_eq!(target.resumes(&parent).await, 0);
    assert_eq!(target.records().await, 1);
    target.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_on_sqlite() {
    recovers(Target::sqlite("recover").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_on_postgres() {
    if let Some(target) = Target::postgres("recovers").await {
        recovers(target).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_refuses_bad_ids_on_sqlite() {
    refuses(Target::sqlite("recover-refuses").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_refuses_bad_ids_on_postgres() {
    if let Some(target) = Target::postgres("refuses").await {
        refuses(target).await;
    }
}

#[test]
fn recover_refuses_a_store_that_is_not_there() {
    let scratch = Scratch::new("recover-no-store");
    let missing = scratch.store("missing.db");
    let out = loomfence("recover", &["--store", &missing, "--exhausted"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(scratch.files(), Vec::<String>::new(), "nothing created");
    let text = scratch.path().join("text.db");
    common::assert_refused_unchanged(
        "recover",
        &text,
        b"not a database\n",
        &["--exhausted"],
        "is not an SQLite database",
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

/// Parents whose chains ran out are recovered while two workers run on
/// the same store: the workers' followers rebuild and resume the same
/// parents (their children have ended), so recoveries and workers race
/// for every park. The fence settles each race: every parent is resumed
/// exactly once, every recovery reports resumed or not parked, and every
/// record is cleared.
async fn races_running_workers(target: Target) {
    const PARENTS: usize = 12;
    let now = now_ms();
    let mut rows = Vec::new();
    let mut parents = Vec::new();
    for n in 0..PARENTS {
        let (parent, child) = (id(&format!("parent-{n:02}")), id(&format!("child-{n:02}")));
        target.park_on_ended_child(&parent, &child).await;
        rows.push(TimerRow::redrive(parent.clone(), now - 10, 7));
        parents.push(parent);
    }
    target.exhaust(&rows).await;

    let mut workers: Vec<Child> = (0..2)
        .map(|n| {
            Command::new(env!("CARGO_BIN_EXE_loomfence"))
                .arg("worker")
                .args(&target.args)
                .args(["--node", &format!("w{n}"), "--feed-poll", "50ms"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starts a worker")
        })
        .collect();
    let report = loomfence_json("recover", &target.with(&["--exhausted"]));
    let recovered = outcomes(&report);
    assert_eq!(recovered.len(), PARENTS, "{report}");
    assert!(
        recovered
            .iter()
            .all(|(_, outcome)| outcome == "resumed" || outcome == "notParked"),
        "{report}"
    );
    let until = Instant::now() + Duration::from_secs(30);
    for parent in &parents {
        while target.resumes(parent).await == 0 {
            assert!(Instant::now() < until, "{parent} is resumed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    for worker in &mut workers {
        let pid = Pid::from_raw(i32::try_from(worker.id()).expect("a pid"));
        kill(pid, Signal::SIGTERM).expect("signals");
        let status = wait(worker, Duration::from_secs(20)).expect("exits after SIGTERM");
        assert_eq!(status.code(), Some(0), "a clean stop");
    }
    for parent in &parents {
        assert_eq!(target.resumes(parent).await, 1, "{parent}: answered once");
    }
    assert_eq!(target.records().await, 0, "every record cleared");
    target.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_races_running_workers_on_sqlite() {
    races_running_workers(Target::sqlite("recover-race").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_races_running_workers_on_postgres() {
    if let Some(target) = Target::postgres("race").await {
        races_running_workers(target).await;
    }
}
