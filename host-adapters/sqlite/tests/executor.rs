//! The store never stalls the async executor: its blocking SQLite calls
//! run on tokio's blocking pool. On a `current_thread` runtime, where a
//! blocking call on the executor would freeze every other task, an interval
//! keeps ticking while one task commits many large appends with
//! `Durability::Full`, and while an append waits seconds for another
//! connection's write lock.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{TempDir, kernel, object};
use loomfence_core::KernelKind;
use loomfence_sqlite::{Durability, SqliteEventStore, SqliteOptions};
use loomfence_store::EventStore;
use serde_json::json;

/// Appends in the large-append run.
const APPENDS: usize = 200;

/// Each of those appends' payload, in bytes.
const PAYLOAD: usize = 512 * 1024;

/// The ticker's period.
const PERIOD: Duration = Duration::from_millis(5);

/// The largest gap between ticks the tests accept.
const MAX_GAP: Duration = Duration::from_millis(100);

/// How long a raw connection holds the write lock in the lock-wait test.
const HOLD: Duration = Duration::from_millis(1000);

/// An interval task on the current runtime that records its ticks until
/// stopped.
struct Ticker {
    /// Tells the task to stop.
    stop: Arc<AtomicBool>,
    /// The task: `(ticks, largest gap)`.
    task: tokio::task::JoinHandle<(u64, Duration)>,
}

impl Ticker {
    /// Starts ticking every [`PERIOD`], and lets the first tick happen.
    async fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let stop = stop.clone();
            async move {
                let mut interval = tokio::time::interval(PERIOD);
                interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                interval.tick().await;
                let (mut last, mut largest, mut ticks) = (Instant::now(), Duration::ZERO, 0_u64);
                while !stop.load(Ordering::SeqCst) {
                    interval.tick().await;
                    let now = Instant::now();
                    largest = largest.max(now - last);
                    last = now;
                    ticks += 1;
                }
                (ticks, largest)
            }
        });
        tokio::time::sleep(PERIOD * 2).await;
        Self { stop, task }
    }

    /// Stops; returns the ticks seen and the largest gap between two.
    async fn stop(self) -> (u64, Duration) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("the ticker")
    }
}

/// The share of the ticks a free executor would have given in `took`.
fn tick_share(ticks: u64, took: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let ticks = ticks as f64;
    ticks / (took.as_secs_f64() / PERIOD.as_secs_f64())
}

/// While one task commits `APPENDS` appends of 512 KiB each (fsync'd), an
/// interval on the same single-threaded runtime never waits longer than
/// `MAX_GAP` for its tick, far below the time the appends take.
#[tokio::test(flavor = "current_thread")]
async fn large_appends_do_not_stall_a_current_thread_executor() {
    let dir = TempDir::new("executor");
    let store = SqliteEventStore::open(
        dir.file("store.db"),
        SqliteOptions {
            durability: Durability::Full,
            ..SqliteOptions::default()
        },
    )
    .await
    .expect("opens");
    let blob = "b".repeat(PAYLOAD);

    let ticker = Ticker::start().await;
    let started = Instant::now();
    for n in 0..APPENDS {
        store
            .append(
                &common::id("big"),
                kernel(KernelKind::StepStarted)
                    .with_payload(object(json!({ "n": n, "blob": blob }))),
            )
            .await
            .expect("appends");
    }
    let took = started.elapsed();
    let (ticks, largest) = ticker.stop().await;

    println!(
        "{APPENDS} appends of {} KiB (Durability::Full) took {took:.2?}; the {PERIOD:?} ticker ticked {ticks} times ({:.0}% of a free executor's), largest gap {largest:.2?}",
        PAYLOAD / 1024,
        100.0 * tick_share(ticks, took)
    );
    assert_eq!(
        store
            .read_range(&common::id("big"), 1, None)
            .await
            .expect("reads")
            .len(),
        APPENDS
    );
    assert!(
        largest < MAX_GAP,
        "the executor stalled for {largest:?} while the appends took {took:?}"
    );
    assert!(
        took > largest * 10,
        "the largest gap ({largest:?}) must be well below the appends' time ({took:?})"
    );
}

/// An append that waits inside SQLite for another connection's write lock
/// (the busy handler sleeping for [`HOLD`]) waits on the blocking pool: the
/// ticker keeps its pace the whole time.
#[tokio::test(flavor = "current_thread")]
async fn an_append_waiting_for_the_write_lock_does_not_stall_the_executor() {
    let dir = TempDir::new("lockwait");
    let path = dir.file("store.db");
    let store = common::open(&path).await;
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn({
        let path = path.clone();
        move || {
            let conn = common::files::raw(&path);
            conn.execute_batch("BEGIN IMMEDIATE")
                .expect("takes the write lock");
            locked_tx.send(()).expect("tells the test");
            std::thread::sleep(HOLD);
            conn.execute_batch("COMMIT").expect("releases it");
        }
    });
    locked_rx.recv().expect("the lock is held");

    let ticker = Ticker::start().await;
    let started = Instant::now();
    let written = store
        .append(&common::id("waiting"), kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends once the lock is free");
    let took = started.elapsed();
    let (ticks, largest) = ticker.stop().await;
    holder.join().expect("the holder thread");

    println!(
        "an append waited {took:.2?} for the write lock; the ticker ticked {ticks} times ({:.0}% of a free executor's), largest gap {largest:.2?}",
        100.0 * tick_share(ticks, took)
    );
    assert_eq!(written.sequence, 1);
    assert!(
        took >= HOLD / 2,
        "the append really waited for the lock: {took:?}"
    );
    assert!(
        largest < MAX_GAP,
        "the executor stalled for {largest:?} while the append waited {took:?}"
    );
    assert!(
        tick_share(ticks, took) > 0.5,
        "the ticker lost most of its ticks: {ticks} in {took:?}"
    );
}
