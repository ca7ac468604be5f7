//! Pending: one execution's unconsumed messages on the channels asked
//! for, in arrival order, at most the limit.

use loomfence_core::inbox::{Message, StoredMessage};
use serde_json::json;

use super::Inbox;
use super::support::{T0, all_pending, message, pending, stored};

/// Sends `message` and returns it as listed.
async fn listed(store: &Inbox, message: Message) -> StoredMessage {
    let arrival = stored(store, &message).await;
    StoredMessage { message, arrival }
}

/// Messages of other executions and other channels are never listed; a
/// listing of several channels interleaves them in arrival order; a
/// channel named twice lists its messages once; an execution or channel
/// with no messages lists nothing.
pub async fn pending_lists_only_the_executions_unconsumed_messages_on_its_channels(store: Inbox) {
    let x1 = listed(&store, message("a", "x", "1", json!("x1"))).await;
    let b_x = listed(&store, message("b", "x", "1", json!("b"))).await;
    let y1 = listed(&store, message("a", "y", "1", json!("y1"))).await;
    let z1 = listed(&store, message("a", "z", "1", json!("z1"))).await;
    let x2 = listed(&store, message("a", "x", "2", json!("x2"))).await;
    let ab_x = listed(&store, message("ab", "x", "1", json!("ab"))).await;

    assert_eq!(
        all_pending(&store, "a", &["x"]).await,
        vec![x1.clone(), x2.clone()]
    );
    assert_eq!(
        all_pending(&store, "a", &["y", "x"]).await,
        vec![x1.clone(), y1.clone(), x2.clone()],
        "arrival order, whatever order the channels are named in"
    );
    assert_eq!(
        all_pending(&store, "a", &["x", "z", "x"]).await,
        vec![x1, z1, x2]
    );
    assert_eq!(all_pending(&store, "b", &["x"]).await, vec![b_x]);
    assert_eq!(all_pending(&store, "ab", &["x", "y"]).await, vec![ab_x]);
    assert_eq!(all_pending(&store, "a", &["w"]).await, []);
    assert_eq!(all_pending(&store, "A", &["x"]).await, [], "ids are exact");
    assert_eq!(all_pending(&store, "nobody", &["x"]).await, []);
    assert_eq!(
        all_pending(&store, "a", &["X"]).await,
        [],
        "channels are exact"
    );
    assert_eq!(all_pending(&store, "a", &["y"]).await, vec![y1]);
}

/// Ten messages whose ids and send times run opposite to their arrival
/// list in the order they arrived, and a limit takes the earliest.
pub async fn pending_comes_in_arrival_order_and_stops_at_the_limit(store: Inbox) {
    let mut sent = Vec::new();
    for n in 0..10_i64 {
        let message = Message {
            sent_at: T0 - n,
            ..message("a", "c", &format!("m-{}", 9 - n), json!(n))
        };
        sent.push(listed(&store, message).await);
    }
    assert!(
        sent.is_sorted_by(|a, b| a.arrival < b.arrival),
        "arrivals increase with each send"
    );
    assert_eq!(all_pending(&store, "a", &["c"]).await, sent);
    for limit in [1, 3, 9, 10, 11] {
        assert_eq!(
            pending(&store, "a", &["c"], limit).await,
            sent[..limit.min(sent.len())].to_vec(),
            "limit {limit}"
        );
    }
}
