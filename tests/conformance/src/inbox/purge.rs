//! Purge: an execution's messages go with its retention, and only its.

use loomfence_core::inbox::{Message, Sent};
use serde_json::json;

use super::Inbox;
use super::support::{T0, all_pending, message, messages, send, stored, timer_rows};
use crate::support::id;

/// Purging answers how many messages the execution had (consumed or not)
/// and deletes exactly those: another execution's messages, even one
/// whose id extends this one's, and every timer row stay. A second purge
/// finds nothing.
pub async fn purge_deletes_only_that_executions_messages(store: Inbox) {
    for (execution, channel, message_id) in [
        ("a", "x", "1"),
        ("a", "x", "2"),
        ("a", "y", "1"),
        ("ab", "x", "1"),
        ("b", "x", "1"),
    ] {
        stored(
            &store,
            &message(execution, channel, message_id, json!(null)),
        )
        .await;
    }
    assert!(
        store
            .mark_consumed(&message("a", "x", "1", json!(null)).key)
            .await
            .expect("marks")
    );
    let kept_ab = messages(&store, "ab").await;
    let kept_b = messages(&store, "b").await;
    let rows = timer_rows(&store).await;
    assert_eq!(store.purge(&id("a")).await.expect("purges"), 3);
    assert_eq!(messages(&store, "a").await, []);
    assert_eq!(all_pending(&store, "a", &["x", "y"]).await, []);
    assert_eq!(messages(&store, "ab").await, kept_ab);
    assert_eq!(messages(&store, "b").await, kept_b);
    assert_eq!(
        timer_rows(&store).await,
        rows,
        "timer rows are not messages"
    );
    assert_eq!(store.purge(&id("a")).await.expect("purges"), 0);
    assert_eq!(store.purge(&id("nobody")).await.expect("purges"), 0);
}

/// After a purge the key is free: the same key sent again is stored anew,
/// with its new payload and a later arrival than any handed out before.
pub async fn a_key_sent_after_a_purge_is_stored_anew(store: Inbox) {
    let before = message("a", "c", "m", json!("before"));
    let first = stored(&store, &before).await;
    assert!(store.mark_consumed(&before.key).await.expect("marks"));
    assert_eq!(store.purge(&id("a")).await.expect("purges"), 1);
    let after = Message {
        payload: json!("after"),
        sent_at: T0 + 1,
        ..before.clone()
    };
    let Sent::Stored { arrival } = send(&store, &after).await else {
        panic!("a purged key is stored anew");
    };
    assert!(arrival > first, "arrival {arrival} after {first}");
    let listed = all_pending(&store, "a", &["c"]).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].message, after, "unconsumed, with the new payload");
}
