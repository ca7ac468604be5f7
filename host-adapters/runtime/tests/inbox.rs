//! Messages through the runtime: a notify, a park that checks the inbox,
//! the inbox's re-driver on a timer service, and retention's purge.

mod common;

use std::sync::{Arc, Mutex};

use common::{VirtualClock, fenced_by_three, id, park_on, resumes};
use loomfence_core::{
    ExecutionId, KernelKind,
    inbox::{Message, MessageKey, NotDeliverable, Sent},
    park::Wait,
    retention::SweepOptions,
    timer::{DueFilter, MAX_TIMER_MS, NodeId, TimerRow},
};
use loomfence_runtime::{
    Features, Inbox, Sweep, TimerService,
    clock::seeded_random,
    inbox::{Delivery, InboxOptions, Notified},
    timer::TimerServiceOptions,
};
use loomfence_store::{EventStore, InboxStore, MemoryEventStore, MemoryTimerStore, TimerStore};
use serde_json::{Value, json};

/// The clock every test starts at.
const NOW: i64 = 1_000_000;

fn key(execution: &ExecutionId, channel: &str, message_id: &str) -> MessageKey {
    MessageKey::new(execution.clone(), channel, message_id).expect("a valid key")
}

fn approvals() -> Vec<Wait> {
    vec![Wait::Message {
        channel: "approvals".to_owned(),
    }]
}

/// An inbox over `events`, with a fresh memory inbox, a virtual clock, and
/// every re-driven resume collected.
struct World<S: EventStore + 'static> {
    events: Arc<S>,
    timers: Arc<MemoryTimerStore>,
    clock: VirtualClock,
    inbox: Arc<Inbox<S, MemoryTimerStore>>,
    redriven: Arc<Mutex<Vec<ExecutionId>>>,
}

impl<S: EventStore + 'static> World<S> {
    fn new(events: Arc<S>, features: Features) -> Self {
        let timers = Arc::new(MemoryTimerStore::new());
        let clock = VirtualClock::at(NOW);
        let redriven = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&redriven);
        let inbox = Arc::new(Inbox::new(
            Arc::clone(&events),
            Arc::clone(&timers),
            InboxOptions {
                now: clock.clock(),
                features,
                random: seeded_random(7),
                on_resumed: Arc::new(move |resumed| {
                    sink.lock().expect("lock").push(resumed.execution_id);
                }),
                ..InboxOptions::default()
            },
        ));
        Self {
            events,
            timers,
            clock,
            inbox,
            redriven,
        }
    }

    /// A timer service on this world with the inbox's re-driver.
    fn service(&self) -> TimerService<S, MemoryTimerStore> {
        let service = TimerService::new(
            Arc::clone(&self.events),
            Arc::clone(&self.timers),
            TimerServiceOptions {
                node: NodeId::new("node-a").expect("a node id"),
                now: self.clock.clock(),
                random: seeded_random(11),
                ..TimerServiceOptions::default()
            },
        );
        service.register_redriver(self.inbox.redriver());
        service
    }

    async fn rows(&self) -> Vec<TimerRow> {
        self.timers
            .due(MAX_TIMER_MS, 100, DueFilter::default())
            .await
            .expect("rows")
    }

    /// Starts `execution`: running, no park.
    async fn start(&self, execution: &ExecutionId) {
        self.events
            .append(
                execution,
                loomfence_core::NewEvent::kernel(KernelKind::ExecutionStarted, 0),
            )
            .await
            .expect("starts");
    }

    async fn kinds(&self, execution: &ExecutionId) -> Vec<String> {
        self.events
            .read_range(execution, 1, None)
            .await
            .expect("reads")
            .into_iter()
            .map(|event| event.kind)
            .collect()
    }
}

fn memory() -> World<MemoryEventStore> {
    World::new(Arc::new(MemoryEventStore::new()), Features::none())
}

#[tokio::test]
async fn a_message_sent_before_the_park_waits_and_the_park_takes_it_at_once() {
    let world = memory();
    let order = id("order-1");
    world.start(&order).await;

    let sent = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!({ "ok": true }))
        .await
        .expect("notifies");
    assert_eq!(
        sent,
        Notified::Sent {
            sent: Sent::Stored { arrival: 1 },
            delivery: Delivery::Waiting
        }
    );

    let parked = world
        .inbox
        .park(&order, &approvals(), None)
        .await
        .expect("parks");
    let Delivery::Delivered { message, resumed } = parked.delivery else {
        panic!("the park takes the waiting message: {:?}", parked.delivery);
    };
    assert_eq!(message, key(&order, "approvals", "m-1"));
    assert_eq!(
        resumed.resumed.payload["answer"],
        json!({ "wait": 0, "message": {
            "channel": "approvals", "messageId": "m-1", "payload": { "ok": true }, "sentAt": NOW
        }})
    );
    assert_eq!(
        world.kinds(&order).await,
        [
            "EXECUTION_STARTED",
            "EXECUTION_SUSPENDED",
            "MESSAGE_CONSUMED",
            "EXECUTION_RESUMED"
        ]
    );
    let entries = world.timers.messages(&order).await.expect("lists");
    assert!(entries[0].consumed, "the flag follows the log");
}

#[tokio::test]
async fn a_notify_to_a_parked_execution_delivers_once_however_often_it_is_sent() {
    let world = memory();
    let order = id("order-2");
    park_on(
        &*world.events,
        &order,
        &[Wait::Timer { wake_at: NOW * 2 }, approvals()[0].clone()],
    )
    .await;

    let first = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!("yes"))
        .await
        .expect("notifies");
    let Notified::Sent {
        sent: Sent::Stored { .. },
        delivery: Delivery::Delivered { resumed, .. },
    } = first
    else {
        panic!("delivered at once: {first:?}");
    };
    assert_eq!(
        resumed.resumed.payload["answer"]["wait"],
        json!(1),
        "the MESSAGE wait's index"
    );

    let again = world
        .inbox
        .notify(
            key(&order, "approvals", "m-1"),
            json!("a different payload"),
        )
        .await
        .expect("notifies");
    assert_eq!(
        again,
        Notified::Sent {
            sent: Sent::Duplicate { arrival: 1 },
            delivery: Delivery::Waiting
        }
    );
    let log = world
        .events
        .read_range(&order, 1, None)
        .await
        .expect("reads");
    let consumed = log.iter().filter(|e| e.kind == "MESSAGE_CONSUMED").count();
    assert_eq!(
        (consumed, resumes(&*world.events, &order).await.len()),
        (1, 1)
    );
    let entries = world.timers.messages(&order).await.expect("lists");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].message.message.payload,
        json!("yes"),
        "the first payload stands"
    );
}

#[tokio::test]
async fn a_notify_to_an_unknown_or_ended_execution_stores_nothing() {
    let world = memory();
    let unknown = id("nobody");
    assert_eq!(
        world
            .inbox
            .notify(key(&unknown, "approvals", "m-1"), Value::Null)
            .await
            .expect("answers"),
        Notified::Refused(NotDeliverable::Unknown)
    );
    let done = id("done");
    common::finish(
        &*world.events,
        &done,
        KernelKind::ExecutionCompleted,
        json!(1),
    )
    .await;
    assert_eq!(
        world
            .inbox
            .notify(key(&done, "approvals", "m-1"), Value::Null)
            .await
            .expect("answers"),
        Notified::Refused(NotDeliverable::Ended)
    );
    assert!(
        world
            .timers
            .messages(&unknown)
            .await
            .expect("lists")
            .is_empty()
    );
    assert!(
        world
            .timers
            .messages(&done)
            .await
            .expect("lists")
            .is_empty()
    );
    assert!(world.rows().await.is_empty(), "no intent row either");
}

#[tokio::test]
async fn a_sender_that_died_after_its_send_is_finished_by_the_inbox_redriver() {
    let world = memory();
    let order = id("order-3");
    park_on(&*world.events, &order, &approvals()).await;
    // The sender's send landed, then it died: the message and its intent
    // row are stored, nothing else.
    let message = Message {
        key: key(&order, "approvals", "m-1"),
        payload: json!(42),
        sent_at: NOW,
    };
    let intent = message.intent(5_000).expect("an intent row");
    world.timers.send(&message, &intent).await.expect("sends");

    let service = world.service();
    world.clock.set(NOW + 4_999);
    assert_eq!(service.poll_once().await.redriven, 0, "not due yet");
    world.clock.set(NOW + 5_000);
    let report = service.poll_once().await;
    assert_eq!(report.redriven, 1, "{report:?}");
    assert_eq!(
        *world.redriven.lock().expect("lock"),
        std::slice::from_ref(&order)
    );
    assert_eq!(
        world.kinds(&order).await[2..],
        ["MESSAGE_CONSUMED", "EXECUTION_RESUMED"]
    );
    assert!(world.rows().await.is_empty(), "the intent row is retired");
}

#[tokio::test]
async fn a_delivered_senders_intent_row_finds_nothing_left_to_do() {
    let world = memory();
    let order = id("order-4");
    park_on(&*world.events, &order, &approvals()).await;
    let sent = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!(1))
        .await
        .expect("notifies");
    assert!(matches!(
        sent,
        Notified::Sent {
            delivery: Delivery::Delivered { .. },
            ..
        }
    ));
    let [row] = world.rows().await.try_into().expect("one intent row");
    assert!(row.is_redrive());

    world.clock.set(row.wake_at);
    let report = world.service().poll_once().await;
    assert_eq!((report.redriven, report.nothing_to_redrive), (0, 1));
    assert_eq!(resumes(&*world.events, &order).await.len(), 1);
    assert!(world.redriven.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_park_on_a_message_and_a_timer_is_answered_once_by_whichever_lands_first() {
    let world = memory();
    let order = id("order-5");
    let wake_at = NOW + 100;
    park_on(
        &*world.events,
        &order,
        &[approvals()[0].clone(), Wait::Timer { wake_at }],
    )
    .await;
    world
        .timers
        .schedule(&TimerRow::wake(order.clone(), wake_at))
        .await
        .expect("schedules");
    world.clock.set(wake_at);
    assert_eq!(world.service().poll_once().await.fired, 1);

    let late = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!(1))
        .await
        .expect("notifies");
    assert_eq!(
        late,
        Notified::Sent {
            sent: Sent::Stored { arrival: 1 },
            delivery: Delivery::Waiting
        },
        "the timer answered the park; the message waits for the next one"
    );
    assert!(
        !world
            .kinds(&order)
            .await
            .contains(&"MESSAGE_CONSUMED".to_owned())
    );
    assert_eq!(resumes(&*world.events, &order).await.len(), 1);
}

#[tokio::test]
async fn messages_of_one_channel_are_delivered_in_the_order_they_arrived() {
    let world = memory();
    let order = id("order-6");
    world.start(&order).await;
    for n in ["b", "a", "c"] {
        let _ = world
            .inbox
            .notify(key(&order, "approvals", n), json!(n))
            .await
            .expect("notifies");
    }
    let mut got = Vec::new();
    // Each park is written under the token the last delivery took, as a
    // resumed body's would be.
    let mut token = None;
    for _ in 0..3 {
        let parked = world
            .inbox
            .park(&order, &approvals(), token)
            .await
            .expect("parks");
        let Delivery::Delivered { message, resumed } = parked.delivery else {
            panic!("a message waits: {:?}", parked.delivery);
        };
        got.push(message.message_id);
        token = resumed.fence;
    }
    assert_eq!(got, ["b", "a", "c"], "arrival order, not key order");
    let parked = world
        .inbox
        .park(&order, &approvals(), token)
        .await
        .expect("parks");
    assert_eq!(parked.delivery, Delivery::Waiting, "the channel is empty");
}

#[tokio::test]
async fn a_contended_delivery_with_redrive_on_writes_a_redrive_row() {
    let world = World::new(fenced_by_three(), Features::none().with_redrive(true));
    let order = id("order-7");
    park_on(&*world.events, &order, &approvals()).await;
    let sent = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!(1))
        .await
        .expect("notifies");
    let Notified::Sent {
        delivery: Delivery::RedriveScheduled { wake_at },
        ..
    } = sent
    else {
        panic!("three dead acquirers contend every try: {sent:?}");
    };
    let rows = world.rows().await;
    assert_eq!(
        rows.len(),
        2,
        "the intent row and the re-drive row: {rows:?}"
    );
    assert!(
        rows.iter()
            .any(|row| row.wake_at == wake_at && row.is_redrive())
    );
    assert!(resumes(&*world.events, &order).await.is_empty());
}

#[tokio::test]
async fn a_contended_delivery_with_redrive_off_leaves_it_to_the_intent_row() {
    let world = World::new(fenced_by_three(), Features::none());
    let order = id("order-8");
    park_on(&*world.events, &order, &approvals()).await;
    let sent = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!(1))
        .await
        .expect("notifies");
    assert!(
        matches!(
            sent,
            Notified::Sent {
                delivery: Delivery::Contended(_),
                ..
            }
        ),
        "{sent:?}"
    );
    assert_eq!(world.rows().await.len(), 1, "only the intent row");
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_read_or_written() {
    let world = memory();
    let order = id("order-9");
    park_on(&*world.events, &order, &approvals()).await;
    let huge = json!("x".repeat(loomfence_core::inbox::MAX_MESSAGE_BYTES));
    let refused = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), huge)
        .await
        .expect_err("over the limit");
    assert!(
        matches!(refused, loomfence_runtime::RuntimeError::Input(_)),
        "{refused:?}"
    );
    assert!(MessageKey::new(order.clone(), "", "m").is_err());
    assert!(
        world
            .timers
            .messages(&order)
            .await
            .expect("lists")
            .is_empty()
    );
    assert!(resumes(&*world.events, &order).await.is_empty());
    // Still usable.
    let sent = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!(1))
        .await
        .expect("notifies");
    assert!(matches!(
        sent,
        Notified::Sent {
            delivery: Delivery::Delivered { .. },
            ..
        }
    ));
}

#[tokio::test]
async fn retention_purges_a_deleted_executions_messages() {
    let world = memory();
    let (done, live) = (id("done"), id("live"));
    world.start(&done).await;
    park_on(&*world.events, &live, &[Wait::Timer { wake_at: NOW * 3 }]).await;
    for target in [&done, &live] {
        let _ = world
            .inbox
            .notify(key(target, "later", "m-1"), json!(1))
            .await
            .expect("notifies");
    }
    world
        .events
        .append(
            &done,
            loomfence_core::NewEvent::kernel(KernelKind::ExecutionCompleted, 10),
        )
        .await
        .expect("ends");
    let options = SweepOptions {
        ended_before: NOW,
        page_limit: 100,
        archive: false,
        dry_run: false,
    };
    let report = Sweep::new(&*world.events, options)
        .inbox(&*world.timers)
        .run()
        .await
        .expect("sweeps");
    assert_eq!(report.deleted, 1);
    assert!(
        world
            .timers
            .messages(&done)
            .await
            .expect("lists")
            .is_empty()
    );
    assert_eq!(world.timers.messages(&live).await.expect("lists").len(), 1);
}

#[tokio::test]
async fn a_park_on_a_channel_leaves_an_intent_row_that_finishes_a_contended_check() {
    let world = World::new(fenced_by_three(), Features::none());
    let order = id("order-10");
    world.start(&order).await;
    // The message arrives before the park, and its intent row fires and
    // finds no park: nothing but the park-time check is left to deliver it.
    let _ = world
        .inbox
        .notify(key(&order, "approvals", "m-1"), json!(1))
        .await
        .expect("notifies");
    world.clock.set(NOW + 10_000);
    let service = world.service();
    assert_eq!(service.poll_once().await.nothing_to_redrive, 1);
    assert!(world.rows().await.is_empty());

    // The park-time check is contended (three dead acquirers, re-drive
    // off): the park's own intent row is what is left.
    let parked = world
        .inbox
        .park(&order, &approvals(), None)
        .await
        .expect("parks");
    assert!(
        matches!(parked.delivery, Delivery::Contended(_)),
        "{:?}",
        parked.delivery
    );
    let [intent] = world
        .rows()
        .await
        .try_into()
        .expect("the park's intent row");
    assert!(intent.is_redrive());

    world
        .events
        .hooks
        .fencing
        .store(false, std::sync::atomic::Ordering::SeqCst);
    world.clock.set(intent.wake_at);
    assert_eq!(service.poll_once().await.redriven, 1);
    assert_eq!(
        world.kinds(&order).await[2..],
        ["MESSAGE_CONSUMED", "EXECUTION_RESUMED"]
    );
    assert_eq!(
        *world.redriven.lock().expect("lock"),
        std::slice::from_ref(&order)
    );
}

#[tokio::test]
async fn a_park_without_a_message_wait_writes_no_intent_row() {
    let world = memory();
    let order = id("order-11");
    world.start(&order).await;
    let parked = world
        .inbox
        .park(&order, &[Wait::Timer { wake_at: NOW * 2 }], None)
        .await
        .expect("parks");
    assert_eq!(parked.delivery, Delivery::Waiting);
    assert_eq!(parked.park.kind, "EXECUTION_SUSPENDED");
    assert!(world.rows().await.is_empty());
}

#[tokio::test]
async fn a_park_under_a_stale_token_is_refused_with_nothing_written() {
    let world = memory();
    let order = id("order-12");
    world.start(&order).await;
    assert_eq!(
        world.events.acquire_fence(&order).await.expect("acquires"),
        1
    );
    for stale in [None, Some(0)] {
        let refused = world
            .inbox
            .park(&order, &approvals(), stale)
            .await
            .expect_err("fenced out");
        assert!(
            matches!(
                refused.store_error(),
                Some(loomfence_store::StoreError::StaleFence(_))
            ),
            "{refused:?}"
        );
    }
    assert_eq!(world.kinds(&order).await, ["EXECUTION_STARTED"]);
    assert!(
        world.rows().await.is_empty(),
        "no intent row for a refused park"
    );
    let parked = world
        .inbox
        .park(&order, &approvals(), Some(1))
        .await
        .expect("parks");
    assert_eq!(parked.delivery, Delivery::Waiting);
}
