//! The send's intent row: written in the same step as the message, under
//! the timer store's upsert rules.

use loomfence_core::inbox::Sent;
use loomfence_core::timer::{Completed, DueFilter, Lease, MAX_DUE_LIMIT, NodeId, TimerRow};
use serde_json::json;

use super::Inbox;
use super::support::{intent, message, messages, stored, timer_rows};
use crate::support::id;

/// After a send, the store's timer side lists the intent row the send was
/// given, a re-drive row of the execution at its `wake_at`: due from that
/// instant, not before, and left out when re-drive rows are.
pub async fn the_intent_row_is_written_with_the_send(store: Inbox) {
    assert_eq!(timer_rows(&store).await, []);
    let sent = message("a", "c", "m", json!("hi"));
    // Any intent the caller picks is the one written: here a minute out.
    let row = sent.intent(60_000).expect("an intent a minute out");
    assert!(matches!(
        store.send(&sent, &row).await.expect("sends"),
        Sent::Stored { .. }
    ));
    let all = DueFilter::default();
    assert_eq!(
        store
            .due(row.wake_at, MAX_DUE_LIMIT, all)
            .await
            .expect("lists"),
        vec![TimerRow::redrive(id("a"), row.wake_at, 0)]
    );
    assert_eq!(
        store
            .due(row.wake_at - 1, MAX_DUE_LIMIT, all)
            .await
            .expect("lists"),
        []
    );
    assert_eq!(
        store
            .due(row.wake_at, MAX_DUE_LIMIT, DueFilter { redrive: false })
            .await
            .expect("lists"),
        [],
        "the intent is a re-drive row"
    );
}

/// An intent landing on a plain wake of the same key (the execution
/// already sleeps until that instant) keeps one row and flags it: the
/// wake becomes a re-drive row, so the re-driver delivers when it fires.
pub async fn an_intent_on_a_plain_row_of_its_key_flags_it(store: Inbox) {
    let sent = message("a", "c", "m", json!(1));
    let row = intent(&sent);
    let wake = TimerRow::wake(id("a"), row.wake_at);
    let other = TimerRow::wake(id("b"), row.wake_at);
    store.schedule(&wake).await.expect("schedules a wake");
    store.schedule(&other).await.expect("schedules a wake");
    stored(&store, &sent).await;
    assert_eq!(
        timer_rows(&store).await,
        vec![TimerRow::redrive(id("a"), row.wake_at, 0), other],
        "one row for the key, now flagged; the other execution's wake untouched"
    );
    assert_eq!(messages(&store, "a").await.len(), 1);
}

/// An intent landing on a re-drive row of its key carries its own attempt
/// (`coalesce(new, old)`), and a plain schedule afterwards never clears
/// the flag.
pub async fn an_intent_on_a_redrive_row_carries_its_own_attempt(store: Inbox) {
    let sent = message("a", "c", "m", json!(1));
    let row = intent(&sent);
    store
        .schedule(&TimerRow::redrive(id("a"), row.wake_at, 3))
        .await
        .expect("schedules a re-drive row");
    stored(&store, &sent).await;
    assert_eq!(timer_rows(&store).await, vec![row.clone()]);
    store
        .schedule(&TimerRow::wake(id("a"), row.wake_at))
        .await
        .expect("schedules a wake");
    assert_eq!(timer_rows(&store).await, vec![row], "the flag stays");
}

/// A duplicate send touches no timer row: the first send's intent row,
/// claimed by a re-driver, stays held by it (a second upsert would have
/// ended the claim), and the claimer still retires it.
pub async fn a_duplicate_send_leaves_a_claimed_intent_row_held(store: Inbox) {
    let sent = message("a", "c", "m", json!(1));
    stored(&store, &sent).await;
    let row = intent(&sent);
    let lease = Lease {
        holder: NodeId::new("redriver").expect("a node id"),
        now: row.wake_at,
        duration_ms: 30_000,
    };
    let claims = store
        .claim_due(&lease, 10, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    assert_eq!(claims.iter().map(|c| &c.row).collect::<Vec<_>>(), [&row]);
    assert!(matches!(
        store.send(&sent, &row).await.expect("sends"),
        Sent::Duplicate { .. }
    ));
    let rival = Lease {
        holder: NodeId::new("rival").expect("a node id"),
        ..lease
    };
    assert_eq!(
        store
            .claim_due(&rival, 10, DueFilter::default())
            .await
            .expect("claims")
            .claims,
        [],
        "the row is still held"
    );
    assert_eq!(
        store.complete(&claims[0]).await.expect("completes"),
        Completed::Done
    );
    assert_eq!(timer_rows(&store).await, []);
}
