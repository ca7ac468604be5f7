//! Marking a message consumed: once, and it only leaves the listings.

use loomfence_core::inbox::{InboxEntry, Sent, StoredMessage};
use serde_json::json;

use super::Inbox;
use super::support::{all_pending, key, message, messages, send, stored};

/// The first mark answers true, every later one false; the message leaves
/// `pending` but stays in `messages`, marked, in its place; a key that was
/// never sent answers false and creates nothing.
pub async fn mark_consumed_answers_true_once_then_false(store: Inbox) {
    let first = message("a", "c", "1", json!(1));
    let second = message("a", "c", "2", json!(2));
    let one = stored(&store, &first).await;
    let two = stored(&store, &second).await;
    let mark = |k| {
        let store = store.clone();
        async move { store.mark_consumed(&k).await.expect("marks") }
    };
    assert!(mark(first.key.clone()).await, "the first mark");
    assert!(!mark(first.key.clone()).await, "already marked");
    assert!(!mark(key("a", "c", "3")).await, "never sent");
    assert!(!mark(key("a", "d", "1")).await, "another channel");
    assert!(!mark(key("b", "c", "1")).await, "another execution");
    let second_listed = StoredMessage {
        message: second.clone(),
        arrival: two,
    };
    assert_eq!(
        all_pending(&store, "a", &["c"]).await,
        vec![second_listed.clone()]
    );
    assert_eq!(
        messages(&store, "a").await,
        vec![
            InboxEntry {
                message: StoredMessage {
                    message: first,
                    arrival: one
                },
                consumed: true,
            },
            InboxEntry {
                message: second_listed,
                consumed: false,
            },
        ]
    );
    assert_eq!(messages(&store, "b").await, [], "a mark creates nothing");
    assert!(mark(second.key).await);
    assert_eq!(all_pending(&store, "a", &["c"]).await, []);
}

/// A late resend of a consumed message is still recognised as the same
/// message: `Duplicate`, and it stays consumed (not delivered twice).
pub async fn a_consumed_key_sent_again_is_still_a_duplicate(store: Inbox) {
    let sent = message("a", "c", "1", json!(1));
    let arrival = stored(&store, &sent).await;
    assert!(store.mark_consumed(&sent.key).await.expect("marks"));
    assert_eq!(send(&store, &sent).await, Sent::Duplicate { arrival });
    assert_eq!(all_pending(&store, "a", &["c"]).await, []);
    assert!(messages(&store, "a").await[0].consumed);
}
