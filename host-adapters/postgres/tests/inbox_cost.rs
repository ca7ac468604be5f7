//! What a send costs beside a timer `schedule` on the same server: one
//! session, the two loops interleaved round by round, the median of the
//! rounds printed with their ratio. A send is one transaction of two round
//! trips (`BEGIN`, the channel lock and the insert pipelined; the intent
//! row's upsert and `COMMIT` pipelined); a schedule is one statement.

mod common;

use std::time::{Duration, Instant};

use loomfence_core::inbox::{Message, MessageKey, Sent};
use loomfence_core::timer::TimerRow;
use loomfence_postgres::{PostgresEventStore, PostgresOptions};
use loomfence_store::{InboxStore, TimerStore};
use serde_json::json;

/// Rounds; the median is printed.
const ROUNDS: usize = 5;

/// Calls of each kind per round.
const CALLS: usize = 200;

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_against_a_schedule() {
    let Some(url) = common::url() else { return };
    let store = PostgresEventStore::connect(
        &url,
        PostgresOptions {
            pool_size: 1,
            ..common::options()
        },
    )
    .await
    .expect("connects");
    let timers = store.timers();
    let (mut sends, mut schedules) = (Vec::new(), Vec::new());
    // Round 0 warms the statement caches and is not counted.
    for round in 0..=ROUNDS {
        let started = Instant::now();
        for n in 0..CALLS {
            let id = common::id(&format!("send-{round}-{n}"));
            let message = Message {
                key: MessageKey::new(id, "c", "m").expect("a valid key"),
                payload: json!({"n": n, "text": "a small payload"}),
                sent_at: 1_000,
            };
            let intent = message.intent(5_000).expect("an intent row");
            let sent = timers.send(&message, &intent).await.expect("sends");
            assert!(matches!(sent, Sent::Stored { .. }), "{sent:?}");
        }
        let send = started.elapsed();
        let started = Instant::now();
        for n in 0..CALLS {
            let row = TimerRow::redrive(common::id(&format!("wake-{round}-{n}")), 6_000, 0);
            timers.schedule(&row).await.expect("schedules");
        }
        let schedule = started.elapsed();
        if round > 0 {
            sends.push(send / CALLS as u32);
            schedules.push(schedule / CALLS as u32);
        }
    }
    let admin = common::admin(&url).await;
    let count = |table: &str| {
        let sql = format!("SELECT count(*) FROM {}.{table}", store.schema());
        let admin = &admin;
        async move {
            admin
                .query_one(&sql, &[])
                .await
                .expect("counts")
                .get::<_, i64>(0)
        }
    };
    let calls = i64::try_from((ROUNDS + 1) * CALLS).expect("small");
    assert_eq!(count("inbox").await, calls, "every message stored");
    assert_eq!(
        count("timers").await,
        2 * calls,
        "every intent row and every schedule's row"
    );
    let (send, schedule) = (median(sends), median(schedules));
    println!(
        "one send with its intent row: {send:?}; one schedule: {schedule:?}; ratio {:.2} \
         (median of {ROUNDS} rounds of {CALLS}, one session)",
        send.as_secs_f64() / schedule.as_secs_f64()
    );
}
