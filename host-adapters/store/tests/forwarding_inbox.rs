//! The forwarding decorator around an inbox store: every inbox call (and
//! every timer call, the store being a timer store too) goes through its
//! hook, and a hook that answers keeps the call from the store.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use loomfence_core::ExecutionId;
use loomfence_core::inbox::{Message, MessageKey, Sent};
use loomfence_core::timer::{DueFilter, TimerRow};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{
    BackendError, Forwarding, InboxStore, MemoryTimerStore, StoreError, TimerStore,
};
use serde_json::json;

/// Hooks that record every operation and refuse the ones named in
/// `refuse`.
#[derive(Default)]
struct Record {
    /// The operations seen, in order.
    seen: Mutex<Vec<&'static str>>,
    /// The operations answered with an error instead of forwarded.
    refuse: Vec<&'static str>,
}

#[async_trait]
impl Hooks for Record {
    async fn before(&self, operation: &'static str) -> Result<(), StoreError> {
        self.seen.lock().expect("the log").push(operation);
        if self.refuse.contains(&operation) {
            return Err(StoreError::Backend(BackendError::permanent(format!(
                "{operation} refused by a hook"
            ))));
        }
        Ok(())
    }
}

fn message() -> Message {
    Message {
        key: MessageKey::new(ExecutionId::new("a").expect("an id"), "c", "m").expect("a key"),
        payload: json!({"n": 1}),
        sent_at: 1_000,
    }
}

#[tokio::test]
async fn every_inbox_call_goes_through_its_hook_to_the_same_store() {
    let inner = Arc::new(MemoryTimerStore::new());
    let store = Forwarding::new(Arc::clone(&inner) as Arc<dyn InboxStore>, Record::default());
    let sent = message();
    let intent = sent.intent(5_000).expect("an intent");
    let Sent::Stored { arrival } = store.send(&sent, &intent).await.expect("sends") else {
        panic!("a fresh key is stored");
    };
    let channels = vec!["c".to_owned()];
    let id = sent.key.execution_id.clone();
    assert_eq!(
        store
            .pending(&id, &channels, 10)
            .await
            .expect("lists")
            .len(),
        1
    );
    assert!(store.mark_consumed(&sent.key).await.expect("marks"));
    assert!(store.messages(&id).await.expect("inspects")[0].consumed);
    // The timer side reaches the same store: the send's intent row.
    assert_eq!(
        store
            .due(intent.wake_at, 10, DueFilter::default())
            .await
            .expect("lists"),
        [TimerRow::redrive(id.clone(), intent.wake_at, 0)]
    );
    assert_eq!(store.purge(&id).await.expect("purges"), 1);
    assert_eq!(inner.inbox_snapshot().messages(&id), []);
    assert_eq!(
        *store.hooks.seen.lock().expect("the log"),
        [
            "send",
            "pending",
            "mark_consumed",
            "messages",
            "due",
            "purge"
        ]
    );
    assert_eq!(arrival, 1);
}

#[tokio::test]
async fn a_hook_that_answers_keeps_the_send_from_the_store() {
    let inner = Arc::new(MemoryTimerStore::new());
    let store = Forwarding::new(
        Arc::clone(&inner) as Arc<dyn InboxStore>,
        Record {
            refuse: vec!["send"],
            ..Record::default()
        },
    );
    let sent = message();
    let refused = store
        .send(&sent, &sent.intent(5_000).expect("an intent"))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Backend(e)) if e.to_string().contains("refused by a hook")),
        "{refused:?}"
    );
    assert_eq!(inner.inbox_snapshot().messages(&sent.key.execution_id), []);
    assert!(inner.snapshot().rows().is_empty(), "no intent row either");
}
