//! What a `NOTIFY` in every append would cost, against the coalesced one
//! the store sends: concurrent appenders, each append in a transaction of
//! its own, with and without a `pg_notify` in that transaction. Run by hand
//! for the figures (`-- --ignored --nocapture`).

mod common;

use std::time::{Duration, Instant};

use loomfence_core::KernelKind;

/// Concurrent appenders.
const WRITERS: usize = 8;

/// Appends per writer per round.
const EACH: usize = 300;

/// `WRITERS` connections appending `EACH` events each, to executions of
/// their own, in one transaction per append, notifying in it if `notify`;
/// answers the wall time.
async fn round(url: &str, schema: &loomfence_postgres::Schema, notify: bool) -> Duration {
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (url, schema) = (url.to_owned(), schema.clone());
            tokio::spawn(async move {
                let mut client = common::admin(&url).await;
                let answering: Vec<&str> =
                    KernelKind::answering().map(KernelKind::as_str).collect();
                let kernel: Vec<&str> = KernelKind::ALL.iter().map(|k| k.as_str()).collect();
                // One statement either way, so the difference is the
                // notification alone, not a round trip.
                let notifying = if notify {
                    "CROSS JOIN (SELECT pg_notify('loomfence_feed', $4::text)) n"
                } else {
                    "WHERE $4::text IS NOT NULL"
                };
                let append = format!(
                    "SELECT inserted FROM {schema}.append($1, ARRAY['app.step'], \
                     ARRAY['{{}}'::jsonb], ARRAY['{{}}'::jsonb], ARRAY[0::int8], NULL::int8, \
                     false, false, false, NULL::int8, $2::text[], $3::text[], NULL::int8, false) \
                     {notifying}"
                );
                let id = format!("w{writer}");
                for _ in 0..EACH {
                    let transaction = client.transaction().await.expect("begins");
                    transaction
                        .query_one(&append, &[&id, &answering, &kernel, &schema.as_str()])
                        .await
                        .expect("appends");
                    transaction.commit().await.expect("commits");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("a writer");
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement, run by hand"]
async fn a_notify_in_every_append_against_none() {
    const ROUNDS: usize = 4;
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let listener = common::admin(&url).await;
    listener
        .batch_execute("LISTEN loomfence_feed")
        .await
        .expect("listens");
    let mut totals = [Duration::ZERO; 2];
    for n in 0..ROUNDS {
        for (which, notify) in [false, true].into_iter().enumerate() {
            let took = round(&url, store.schema(), notify).await;
            if n > 0 {
                totals[which] += took;
            }
        }
    }
    let rate = |total: Duration| (WRITERS * EACH * (ROUNDS - 1)) as f64 / total.as_secs_f64();
    println!(
        "{WRITERS} concurrent appenders: {:.0} appends/s without NOTIFY, {:.0} with one in \
         every append (ratio {:.3})",
        rate(totals[0]),
        rate(totals[1]),
        rate(totals[1]) / rate(totals[0]),
    );
}
