//! Concurrent senders: one key is stored once, and distinct messages on
//! one channel all arrive, in an order every listing agrees on.

use std::collections::BTreeSet;
use std::sync::Arc;

use loomfence_core::inbox::{Message, Sent};
use serde_json::json;
use tokio::sync::Barrier;

use super::Inbox;
use super::support::{T0, all_pending, intent, message, messages, timer_rows};

/// Tasks sending at once.
const SENDERS: usize = 16;

/// Rounds of the same-key race, each on a fresh execution.
const ROUNDS: usize = 8;

/// Sends every message at once, one task each, released together; the
/// answers in the same order.
async fn send_at_once(store: &Inbox, sent: Vec<Message>) -> Vec<Sent> {
    let start = Arc::new(Barrier::new(sent.len()));
    let tasks: Vec<_> = sent
        .into_iter()
        .map(|message| {
            let store = Arc::clone(store);
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                store
                    .send(&message, &intent(&message))
                    .await
                    .unwrap_or_else(|e| panic!("sending {:?}: {e}", message.key))
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(tasks.len());
    for task in tasks {
        answers.push(task.await.expect("a sender panicked"));
    }
    answers
}

/// Sixteen tasks send one key at once, each with its own payload and send
/// time: exactly one is `Stored`, the rest `Duplicate` of its arrival; the
/// stored payload is the winner's, and the only intent row is the
/// winner's.
pub async fn sixteen_senders_of_one_key_store_it_once(store: Inbox) {
    for round in 0..ROUNDS {
        let execution = format!("race-{round}");
        let sent: Vec<Message> = (0..SENDERS)
            .map(|n| Message {
                sent_at: T0 + i64::try_from(n).unwrap_or(0),
                ..message(&execution, "c", "same", json!(n))
            })
            .collect();
        let answers = send_at_once(&store, sent.clone()).await;
        let winners: Vec<usize> = (0..SENDERS)
            .filter(|n| matches!(answers[*n], Sent::Stored { .. }))
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {answers:?}");
        let winner = winners[0];
        let Sent::Stored { arrival } = answers[winner] else {
            unreachable!("filtered above");
        };
        for (n, answer) in answers.iter().enumerate() {
            if n != winner {
                assert_eq!(*answer, Sent::Duplicate { arrival }, "round {round}");
            }
        }
        let stored = messages(&store, &execution).await;
        assert_eq!(stored.len(), 1, "round {round}");
        assert_eq!(stored[0].message.message, sent[winner], "round {round}");
        assert_eq!(stored[0].message.arrival, arrival);
        let rows: Vec<_> = timer_rows(&store)
            .await
            .into_iter()
            .filter(|row| row.execution_id.as_str() == execution)
            .collect();
        assert_eq!(rows, vec![intent(&sent[winner])], "round {round}");
    }
}

/// Sixteen tasks send distinct messages on one channel at once: all are
/// stored, each with its own arrival, and `pending` lists every one, in
/// strictly increasing arrival order, with the arrival each send answered.
pub async fn sixteen_senders_on_one_channel_all_arrive_in_order(store: Inbox) {
    let sent: Vec<Message> = (0..SENDERS)
        .map(|n| message("a", "c", &format!("m-{n:02}"), json!(n)))
        .collect();
    let answers = send_at_once(&store, sent.clone()).await;
    let mut arrivals = Vec::new();
    for answer in &answers {
        match answer {
            Sent::Stored { arrival } => arrivals.push(*arrival),
            other => panic!("distinct keys are all stored: {other:?}"),
        }
    }
    let listed = all_pending(&store, "a", &["c"]).await;
    assert_eq!(listed.len(), SENDERS);
    assert!(
        listed.is_sorted_by(|a, b| a.arrival < b.arrival),
        "strictly increasing arrivals: {:?}",
        listed.iter().map(|m| m.arrival).collect::<Vec<_>>()
    );
    for stored in &listed {
        let n = stored.message.payload.as_u64().expect("a number payload");
        let n = usize::try_from(n).expect("a small number");
        assert_eq!(stored.message, sent[n]);
        assert_eq!(stored.arrival, arrivals[n], "the arrival its send answered");
    }
    let ids: BTreeSet<u64> = listed
        .iter()
        .filter_map(|m| m.message.payload.as_u64())
        .collect();
    assert_eq!(ids.len(), SENDERS, "every sender's message, once");
}
