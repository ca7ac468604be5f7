//! Bad input: every refusal is the core's own [`InputError`], and it
//! leaves the inbox and the timer rows as they were.

use loomfence_core::InputError;
use loomfence_core::inbox::{
    MAX_MESSAGE_BYTES, MAX_NAME_BYTES, MAX_PENDING_LIMIT, Message, MessageKey, check_pending,
};
use loomfence_core::timer::{MAX_REDRIVE_ATTEMPT, MAX_TIMER_MS, TimerRow, check_row};
use loomfence_store::StoreError;
use serde_json::{Value, json};

use super::Inbox;
use super::support::{Witness, all_pending, channels, intent, message, stored};
use crate::support::id;

/// The input error inside `result`; panics on anything else.
fn input_error<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) -> InputError {
    match result {
        Err(StoreError::Input(error)) => error,
        other => panic!("{what}: expected an InputError, got {other:?}"),
    }
}

/// The executions the witnesses watch.
const WATCHED: [&str; 2] = ["a", "b"];

/// A key of `a` with a raw channel and id, unchecked.
fn raw_key(channel: &str, message_id: &str) -> MessageKey {
    MessageKey {
        execution_id: id("a"),
        channel: channel.to_owned(),
        message_id: message_id.to_owned(),
    }
}

/// Names a key must not have: empty, one byte too long, a NUL.
fn bad_names() -> Vec<String> {
    vec![
        String::new(),
        "n".repeat(MAX_NAME_BYTES + 1),
        "nul\0here".to_owned(),
    ]
}

/// Messages with a bad channel or id, a payload over
/// [`MAX_MESSAGE_BYTES`] or holding a NUL (in a string or a key), or a
/// `sent_at` out of `0..=2^53-1` are refused with the core's own check's
/// error, whether or not their key is stored already (a bad resend is not
/// a duplicate), and write neither a message nor an intent row. The store
/// takes a good send after.
pub async fn bad_messages_are_refused_and_change_nothing(store: Inbox) {
    let good = message("a", "c", "m", json!({"n": 1}));
    stored(&store, &good).await;
    let before = Witness::capture(&store, &WATCHED).await;
    let mut bad: Vec<Message> = Vec::new();
    for name in bad_names() {
        bad.push(Message {
            key: raw_key(&name, "m"),
            ..good.clone()
        });
        bad.push(Message {
            key: raw_key("c", &name),
            ..good.clone()
        });
    }
    // Exactly one byte over: the quotes count.
    let oversize = Value::String("x".repeat(MAX_MESSAGE_BYTES - 1));
    for payload in [
        oversize,
        json!({"text": "a\0b"}),
        json!({"k\0ey": 1}),
        json!(["deep", ["\0"]]),
    ] {
        bad.push(Message {
            payload,
            ..good.clone()
        });
    }
    for sent_at in [-1, MAX_TIMER_MS + 1, i64::MIN] {
        bad.push(Message {
            sent_at,
            ..good.clone()
        });
    }
    for message in &bad {
        let expected = message.check().expect_err("the core refuses it");
        // A well-formed intent, so only the message is at fault.
        let row = TimerRow::redrive(id("a"), 5_000, 0);
        let got = input_error(store.send(message, &row).await, "a bad message");
        assert_eq!(got, expected, "{:?}", message.key);
    }
    before
        .assert_unchanged(&store, &WATCHED, "bad messages")
        .await;
    // A payload of exactly the limit is taken.
    let largest = Message {
        key: raw_key("c", "largest"),
        payload: Value::String("x".repeat(MAX_MESSAGE_BYTES - 2)),
        ..good
    };
    largest.check().expect("exactly the limit");
    stored(&store, &largest).await;
    assert_eq!(all_pending(&store, "a", &["c"]).await.len(), 2);
}

/// A good message with an intent row the timer store would refuse (a time
/// out of range, an attempt over the limit) is refused as that row would
/// be, and stores nothing: the message and its row are one step.
pub async fn bad_intent_rows_are_refused_and_change_nothing(store: Inbox) {
    stored(&store, &message("b", "c", "kept", json!(1))).await;
    let before = Witness::capture(&store, &WATCHED).await;
    let fresh = message("a", "c", "m", json!(1));
    for row in [
        TimerRow::redrive(id("a"), -1, 0),
        TimerRow::redrive(id("a"), MAX_TIMER_MS + 1, 0),
        TimerRow::wake(id("a"), i64::MIN),
        TimerRow::redrive(id("a"), 5_000, MAX_REDRIVE_ATTEMPT + 1),
    ] {
        let expected = check_row(&row).expect_err("the core refuses it");
        let got = input_error(store.send(&fresh, &row).await, "a bad intent");
        assert_eq!(got, expected, "{row:?}");
    }
    before
        .assert_unchanged(&store, &WATCHED, "bad intent rows")
        .await;
    stored(&store, &fresh).await;
    assert_eq!(
        super::support::timer_rows(&store).await.len(),
        2,
        "the good send wrote its intent row"
    );
    assert!(
        super::support::timer_rows(&store)
            .await
            .contains(&intent(&fresh))
    );
}

/// A listing with a limit of 0 or over [`MAX_PENDING_LIMIT`], a bad
/// channel, or more channels than the limit, and a mark of a bad key, are
/// refused with the core's errors and change nothing; nothing is marked.
pub async fn bad_listings_and_marks_are_refused_and_change_nothing(store: Inbox) {
    let sent = message("a", "c", "m", json!(1));
    stored(&store, &sent).await;
    let before = Witness::capture(&store, &WATCHED).await;
    let good = channels(&["c"]);
    let mut listings: Vec<(Vec<String>, usize)> = [0, MAX_PENDING_LIMIT + 1, usize::MAX]
        .into_iter()
        .map(|limit| (good.clone(), limit))
        .collect();
    for name in bad_names() {
        listings.push((vec!["c".to_owned(), name], 10));
    }
    listings.push((vec!["c".to_owned(); MAX_PENDING_LIMIT + 1], 10));
    for (names, limit) in &listings {
        let expected = check_pending(names, *limit).expect_err("the core refuses it");
        let got = input_error(
            store.pending(&id("a"), names, *limit).await,
            "a bad listing",
        );
        assert_eq!(got, expected, "{} channels, limit {limit}", names.len());
    }
    for name in bad_names() {
        for key in [raw_key(&name, "m"), raw_key("c", &name)] {
            let expected = key.check().expect_err("the core refuses it");
            let got = input_error(store.mark_consumed(&key).await, "a bad mark");
            assert_eq!(got, expected);
        }
    }
    before
        .assert_unchanged(&store, &WATCHED, "bad listings and marks")
        .await;
    assert_eq!(all_pending(&store, "a", &["c"]).await.len(), 1);
    assert!(store.mark_consumed(&sent.key).await.expect("marks"));
}
