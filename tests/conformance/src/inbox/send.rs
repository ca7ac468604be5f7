//! Sends: a message round-trips exactly, and a key is stored once.

use loomfence_core::inbox::{InboxEntry, MAX_NAME_BYTES, Message, Sent, StoredMessage};
use serde_json::json;

use super::Inbox;
use super::support::{T0, all_pending, intent, key, message, messages, send, stored, timer_rows};

/// Two messages on one channel come back from `pending` and `messages`
/// exactly as sent (key, payload, `sent_at`), with the arrival numbers
/// their sends answered, in that order, unconsumed.
pub async fn a_send_round_trips_through_pending_and_messages(store: Inbox) {
    let first = Message {
        sent_at: T0 + 7,
        ..message("a", "approvals", "m-1", json!({"ok": true, "by": "ann"}))
    };
    let second = message("a", "approvals", "m-0", json!([1, 2.5, null, "three"]));
    let one = stored(&store, &first).await;
    let two = stored(&store, &second).await;
    assert!(two > one, "arrivals increase: {one} then {two}");
    let expected = vec![
        StoredMessage {
            message: first.clone(),
            arrival: one,
        },
        StoredMessage {
            message: second.clone(),
            arrival: two,
        },
    ];
    assert_eq!(all_pending(&store, "a", &["approvals"]).await, expected);
    assert_eq!(
        messages(&store, "a").await,
        expected
            .into_iter()
            .map(|message| InboxEntry {
                message,
                consumed: false,
            })
            .collect::<Vec<_>>()
    );
}

/// Channels and ids with quotes, SQL, JSON syntax, non-ASCII text and the
/// longest allowed length, and payloads of every JSON shape (scalars,
/// deep nesting, large numbers, escapes), round-trip unchanged.
pub async fn awkward_names_and_payloads_round_trip(store: Inbox) {
    let long = "é".repeat(MAX_NAME_BYTES / 2) + "x";
    assert_eq!(long.len(), MAX_NAME_BYTES);
    let names = [
        "it's \"quoted\"",
        "'); DROP TABLE inbox; --",
        "{\"channel\": 1}",
        "ünïcode 📨",
        long.as_str(),
    ];
    let payloads = [
        json!(null),
        json!(false),
        json!(-9_007_199_254_740_991_i64),
        json!(u64::MAX),
        json!(0.1),
        json!("line\nbreak \"quote\" \\ tab\t é"),
        json!({"nested": {"deeper": [[[{"k": "v"}]]]}, "": ""}),
    ];
    let mut sent = Vec::new();
    for name in names {
        for (m, payload) in payloads.iter().enumerate() {
            // Each name is a channel, and the id of its first message.
            let message_id = if m == 0 {
                name.to_owned()
            } else {
                m.to_string()
            };
            let message = Message {
                sent_at: T0 + i64::try_from(m).unwrap_or(0),
                ..message("awkward", name, &message_id, payload.clone())
            };
            let arrival = stored(&store, &message).await;
            sent.push(StoredMessage { message, arrival });
        }
    }
    let listed: Vec<StoredMessage> = messages(&store, "awkward")
        .await
        .into_iter()
        .map(|entry| entry.message)
        .collect();
    assert_eq!(listed, sent);
    assert_eq!(all_pending(&store, "awkward", &names).await, sent);
}

/// Sending a key again answers `Duplicate` with the first arrival; the
/// first payload and `sent_at` stand, and no second intent row is written
/// (neither an exact resend nor one with another payload and time).
pub async fn sending_the_same_key_twice_stores_it_once(store: Inbox) {
    let first = message("a", "c", "m", json!({"n": 1}));
    let arrival = stored(&store, &first).await;
    let rows = timer_rows(&store).await;
    assert_eq!(rows, vec![intent(&first)], "the first send's intent row");
    let changed = Message {
        payload: json!({"n": 2}),
        sent_at: T0 + 60_000,
        ..first.clone()
    };
    for again in [&first, &changed] {
        assert_eq!(send(&store, again).await, Sent::Duplicate { arrival });
    }
    assert_eq!(
        messages(&store, "a").await,
        vec![InboxEntry {
            message: StoredMessage {
                message: first.clone(),
                arrival
            },
            consumed: false,
        }],
        "the first payload stands"
    );
    assert_eq!(timer_rows(&store).await, rows, "no second intent row");
    assert_eq!(first.key, key("a", "c", "m"));
}

/// The same message id on another channel, or for another execution, is
/// another key: stored, with an arrival of its own.
pub async fn the_same_id_on_another_channel_or_execution_is_another_message(store: Inbox) {
    let here = message("a", "c", "m", json!(1));
    let other_channel = message("a", "d", "m", json!(2));
    let other_execution = message("b", "c", "m", json!(3));
    let mut arrivals = Vec::new();
    for sent in [&here, &other_channel, &other_execution] {
        arrivals.push(stored(&store, sent).await);
    }
    assert!(
        arrivals.is_sorted_by(|a, b| a < b),
        "three stored messages, three increasing arrivals: {arrivals:?}"
    );
    assert_eq!(messages(&store, "a").await.len(), 2);
    assert_eq!(messages(&store, "b").await.len(), 1);
    assert_eq!(
        all_pending(&store, "a", &["d"]).await[0].message,
        other_channel
    );
}
