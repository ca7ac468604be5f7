//! What a delivery does over the stores: refusals, waiting, delivering,
//! duplicates, order, stale flags, a rival answer, contention.

use super::*;
use crate::fire::RedriveAnswer;
use crate::fire::timer_answer;
use crate::redrive_policy::RedrivePolicy;
use crate::resume_machine::ResumeRequest;

#[test]
fn a_notify_to_an_unknown_or_ended_execution_is_refused_with_nothing_stored() {
    let mut host = Host::new();
    host.start("ended");
    host.store
        .append(
            &id("ended"),
            NewEvent::kernel(KernelKind::ExecutionCompleted, 5),
        )
        .expect("ends");
    for (execution, why) in [
        ("nobody", NotDeliverable::Unknown),
        ("ended", NotDeliverable::Ended),
    ] {
        host.trace.clear();
        let mut machine = notify(message(execution, "c", "m1", json!(1)));
        let outcome = host.finish(&mut machine);
        assert_eq!(outcome, DeliverOutcome::Refused(why), "{execution}");
        assert_eq!(outcome.redrive_answer(), RedriveAnswer::Noop);
        assert_eq!(host.trace, [DeliverAction::ReadLog], "only the log is read");
        assert_eq!(machine.sent(), None);
        assert!(
            host.inbox.messages(&id(execution)).is_empty(),
            "{execution}"
        );
    }
    assert!(host.timers.is_empty(), "no intent row");
    assert!(
        host.store
            .read_range(&id("nobody"), 1, None)
            .expect("reads")
            .is_empty()
    );
}

#[test]
fn a_malformed_message_is_refused_before_anything_is_read() {
    let mut bad = message("e", "c", "m1", json!(1));
    bad.key.channel = String::new();
    assert!(matches!(
        DeliverMachine::notify(bad, DeliverOptions::default()),
        Err(InputError::MessageField {
            field: "channel",
            ..
        })
    ));
    let mut late = message("e", "c", "m1", json!(1));
    late.sent_at = crate::redrive_policy::MAX_TIMER_MS;
    assert!(
        DeliverMachine::notify(late, DeliverOptions::default()).is_err(),
        "no intent row could follow it"
    );
}

#[test]
fn a_notify_before_the_park_waits_and_the_park_time_check_delivers_it() {
    let mut host = Host::new();
    host.start("e");
    let sent = message("e", "c", "m1", json!({ "n": 1 }));
    let mut machine = notify(sent.clone());
    assert_eq!(host.finish(&mut machine), DeliverOutcome::Waiting);
    assert_eq!(machine.sent(), Some(Sent::Stored { arrival: 1 }));
    assert_eq!(host.trace.len(), 2, "read, send: {:?}", host.trace);
    let stored = host.inbox.messages(&id("e"));
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].consumed);
    assert_eq!(
        host.timers.rows(),
        [TimerRow::redrive(
            id("e"),
            SENT_AT + DEFAULT_INTENT_DELAY_MS,
            0
        )],
        "the intent row, stored with the message"
    );
    assert!(host.consumed("e").is_empty());

    let park = host.park("e", &[on("c")]);
    let outcome = host.finish(&mut check("e"));
    let DeliverOutcome::Delivered { message, resumed } = &outcome else {
        panic!("expected a delivery: {outcome:?}");
    };
    assert_eq!(*message, sent.key);
    assert_eq!(resumed.resumed.sequence, park + 2);
    assert_eq!(outcome.redrive_answer(), RedriveAnswer::Done);
    assert_eq!(host.consumed("e"), [("c".to_owned(), "m1".to_owned())]);
    assert!(host.inbox.messages(&id("e"))[0].consumed, "marked");
}

#[test]
fn a_notify_while_parked_delivers_at_once_as_one_batch_answering_its_wait() {
    let mut host = Host::new();
    let park = host.parked(
        "e",
        &[
            Wait::Timer { wake_at: 9_999 },
            on("other"),
            on("c"),
            on("other"),
        ],
    );
    let sent = message("e", "c", "m1", json!({ "total": 7 }));
    let mut machine = notify(sent.clone());
    let outcome = host.finish(&mut machine);
    let DeliverOutcome::Delivered { message, resumed } = &outcome else {
        panic!("expected a delivery: {outcome:?}");
    };
    assert_eq!(*message, sent.key);
    let log = host.log("e");
    assert_eq!(log.len() as u64, park + 2);
    let (consumed, resume) = (&log[log.len() - 2], &log[log.len() - 1]);
    assert_eq!(consumed.kind, KernelKind::MessageConsumed.as_str());
    assert_eq!(resume.kind, KernelKind::ExecutionResumed.as_str());
    assert_eq!(resume.sequence, consumed.sequence + 1, "adjacent");
    assert_eq!(consumed.payload["channel"], json!("c"));
    assert_eq!(consumed.payload["messageId"], json!("m1"));
    let token = resume.fence().expect("a token");
    assert!(token.is_some(), "under the acquired token");
    assert_eq!(consumed.fence().expect("a token"), token, "the same token");
    assert_eq!(resumed.fence, token);
    assert_eq!(*resume, resumed.resumed);
    assert_eq!(resume.at, NOW, "stamped with the listing's time");
    assert_eq!(
        resume.payload["answer"],
        json!({
            "wait": 2,
            "message": { "channel": "c", "messageId": "m1", "payload": { "total": 7 }, "sentAt": SENT_AT }
        }),
        "the first MESSAGE wait on its channel"
    );
    assert_eq!(
        resume.payload["answer"],
        message_answer(2, &sent),
        "the shape message_answer builds"
    );
    let kinds: Vec<&str> = host
        .trace
        .iter()
        .map(|action| match action {
            DeliverAction::ReadLog => "read",
            DeliverAction::Send { .. } => "send",
            DeliverAction::ReadPending { .. } => "pending",
            DeliverAction::MarkConsumed(_) => "mark",
            DeliverAction::Resume { .. } => "resume",
            DeliverAction::Draw => "draw",
            DeliverAction::WriteRow(_) => "row",
            DeliverAction::AppendPark(_) => "park",
            DeliverAction::ReadFence => "fence",
        })
        .collect();
    assert_eq!(kinds, ["read", "send", "pending", "resume", "mark"]);
    assert_eq!(
        host.trace[2],
        DeliverAction::ReadPending {
            channels: vec!["other".to_owned(), "c".to_owned()],
            limit: PENDING_PAGE,
        },
        "the park's channels in wait order, once each"
    );
    let DeliverAction::Resume { request, log } = &host.trace[3] else {
        panic!("{:?}", host.trace);
    };
    assert_eq!(request.fence_if_parked_at, park);
    assert_eq!(log.len() as u64, park, "the log as read");
    assert!(host.inbox.messages(&id("e"))[0].consumed);
}

#[test]
fn a_duplicate_send_stores_once_and_is_delivered_once() {
    let mut host = Host::new();
    host.start("e");
    let first = message("e", "c", "m1", json!("first"));
    let mut again = first.clone();
    again.payload = json!("second");
    assert_eq!(
        host.finish(&mut notify(first.clone())),
        DeliverOutcome::Waiting
    );
    let mut retry = notify(again.clone());
    assert_eq!(host.finish(&mut retry), DeliverOutcome::Waiting);
    assert_eq!(retry.sent(), Some(Sent::Duplicate { arrival: 1 }));
    assert_eq!(host.inbox.messages(&id("e")).len(), 1);
    assert_eq!(
        host.timers.len(),
        1,
        "one intent row: the duplicate wrote none"
    );

    host.park("e", &[on("c")]);
    let mut retry = notify(again.clone());
    let outcome = host.finish(&mut retry);
    let DeliverOutcome::Delivered { resumed, .. } = &outcome else {
        panic!("a retry while parked delivers at once: {outcome:?}");
    };
    assert_eq!(
        resumed.resumed.payload["answer"]["message"]["payload"],
        json!("first"),
        "the first payload stands"
    );
    assert_eq!(retry.sent(), Some(Sent::Duplicate { arrival: 1 }));

    // Parked again on the channel: a late retry finds nothing to deliver.
    host.park("e", &[on("c")]);
    assert_eq!(host.finish(&mut notify(again)), DeliverOutcome::Waiting);
    assert_eq!(host.finish(&mut check("e")), DeliverOutcome::Waiting);
    assert_eq!(host.consumed("e"), [("c".to_owned(), "m1".to_owned())]);
}

#[test]
fn one_channel_is_consumed_in_arrival_order() {
    let mut host = Host::new();
    host.parked("e", &[on("c")]);
    // m1 was stored by a sender that died before delivering it; m2's
    // notify delivers the older message first.
    let m1 = message("e", "c", "m1", json!(1));
    let m2 = message("e", "c", "m2", json!(2));
    assert_eq!(host.inbox.send(&m1), Ok(Sent::Stored { arrival: 1 }));
    let outcome = host.finish(&mut notify(m2.clone()));
    assert!(
        matches!(&outcome, DeliverOutcome::Delivered { message, .. } if *message == m1.key),
        "{outcome:?}"
    );
    host.park("e", &[on("c")]);
    let outcome = host.finish(&mut check("e"));
    assert!(
        matches!(&outcome, DeliverOutcome::Delivered { message, .. } if *message == m2.key),
        "{outcome:?}"
    );
    assert_eq!(
        host.consumed("e"),
        [
            ("c".to_owned(), "m1".to_owned()),
            ("c".to_owned(), "m2".to_owned())
        ]
    );
    host.park("e", &[on("c")]);
    assert_eq!(host.finish(&mut check("e")), DeliverOutcome::Waiting);
}

#[test]
fn a_stale_flag_is_skipped_and_repaired_never_delivered_twice() {
    let mut host = Host::new();
    host.parked("e", &[on("c")]);
    let m1 = message("e", "c", "m1", json!(1));
    host.fault = Fault::DieBeforeMark;
    assert_eq!(
        host.run(&mut notify(m1.clone())),
        None,
        "died before the mark"
    );
    host.fault = Fault::None;
    assert_eq!(host.consumed("e").len(), 1, "consumed in the log");
    assert!(!host.inbox.messages(&id("e"))[0].consumed, "but not marked");

    // Parked again on the channel, nothing new: the check repairs the flag
    // and lists again rather than deliver m1 twice.
    host.park("e", &[on("c")]);
    host.trace.clear();
    assert_eq!(host.finish(&mut check("e")), DeliverOutcome::Waiting);
    assert_eq!(
        host.trace[1..],
        [
            DeliverAction::ReadPending {
                channels: vec!["c".to_owned()],
                limit: PENDING_PAGE
            },
            DeliverAction::MarkConsumed(m1.key.clone()),
            DeliverAction::ReadPending {
                channels: vec!["c".to_owned()],
                limit: PENDING_PAGE
            },
        ]
    );
    assert!(host.inbox.messages(&id("e"))[0].consumed, "repaired");
    assert_eq!(host.consumed("e").len(), 1);

    // The same with a fresh message behind it: repaired on the way, and
    // the fresh one delivered.
    let m2 = message("e", "c", "m2", json!(2));
    host.inbox.send(&m2).expect("stores");
    let m3 = message("e", "c", "m3", json!(3));
    assert_eq!(host.inbox.send(&m3), Ok(Sent::Stored { arrival: 3 }));
    let mut unmark = InboxTable::new();
    for entry in host.inbox.messages(&id("e")) {
        unmark.send(&entry.message.message).expect("stores");
    }
    host.inbox = unmark; // m1's flag stale again
    host.trace.clear();
    let outcome = host.finish(&mut check("e"));
    assert!(
        matches!(&outcome, DeliverOutcome::Delivered { message, .. } if *message == m2.key),
        "{outcome:?}"
    );
    assert_eq!(host.trace[2], DeliverAction::MarkConsumed(m1.key.clone()));
    assert!(matches!(host.trace[3], DeliverAction::Resume { .. }));
    assert_eq!(
        host.consumed("e"),
        [
            ("c".to_owned(), "m1".to_owned()),
            ("c".to_owned(), "m2".to_owned())
        ]
    );
}

#[test]
fn a_park_answered_by_its_timer_first_leaves_the_delivery_waiting_having_written_nothing() {
    let mut host = Host::new();
    let park = host.parked("e", &[on("c"), Wait::Timer { wake_at: 800 }]);
    host.inbox
        .send(&message("e", "c", "m1", json!(1)))
        .expect("stores");
    let mut machine = check("e");
    // The delivery reads the park and lists the message ...
    for _ in 0..2 {
        let DeliverPoll::Act(action) = machine.poll() else {
            panic!("more to do");
        };
        host.trace.push(action.clone());
        assert!(host.act(&mut machine, action));
    }
    assert!(matches!(
        machine.poll(),
        DeliverPoll::Act(DeliverAction::Resume { .. })
    ));
    // ... then the timer answers the park.
    let mut wake = ResumeMachine::new(
        id("e"),
        ResumeRequest::new(park, timer_answer(1, 800), 900),
        Capability::Conditional,
    );
    assert!(
        drive::run(&mut host.store, &mut wake)
            .expect("drives")
            .is_ok()
    );
    let (log_before, inbox_before, timers_before) =
        (host.log("e"), host.inbox.clone(), host.timers.clone());
    assert_eq!(host.finish(&mut machine), DeliverOutcome::Waiting);
    assert_eq!(host.log("e"), log_before, "nothing appended");
    assert_eq!(host.inbox, inbox_before, "nothing marked");
    assert_eq!(host.timers, timers_before, "no row");
    assert!(host.consumed("e").is_empty());
    assert_eq!(
        host.trace
            .iter()
            .filter(|a| **a == DeliverAction::ReadLog)
            .count(),
        2,
        "the refused resume read the log again"
    );
}

#[test]
fn a_contended_resume_writes_the_first_redrive_row_when_asked_to() {
    let mut host = Host::new();
    host.parked("e", &[on("c")]);
    host.fault = Fault::BumpBeforeAcquire;
    let mut machine = DeliverMachine::notify(
        message("e", "c", "m1", json!(1)),
        options(OnContention::WriteRow),
    )
    .expect("a valid message");
    let outcome = host.finish(&mut machine);
    let row = TimerRow::first_redrive(
        id("e"),
        LATER,
        &RedrivePolicy::default(),
        Draw::new(0.5).expect("a draw"),
    )
    .expect("a time");
    assert_eq!(outcome, DeliverOutcome::RedriveScheduled(row.clone()));
    assert_eq!(outcome.redrive_answer(), RedriveAnswer::Noop);
    assert_eq!(
        host.trace[host.trace.len() - 2..],
        [DeliverAction::Draw, DeliverAction::WriteRow(row.clone())]
    );
    let intent = TimerRow::redrive(id("e"), SENT_AT + DEFAULT_INTENT_DELAY_MS, 0);
    let mut rows = host.timers.rows();
    rows.sort();
    let mut expected = vec![intent, row];
    expected.sort();
    assert_eq!(rows, expected, "the intent row and the re-drive row");
    assert!(host.consumed("e").is_empty());
    assert!(!host.inbox.messages(&id("e"))[0].consumed);

    // Without a row asked for, contended is the end, with no draw.
    host.trace.clear();
    let mut machine = DeliverMachine::check(id("e"), options(OnContention::Answer));
    let outcome = host.finish(&mut machine);
    assert!(
        matches!(&outcome, DeliverOutcome::Contended(c) if c.execution_id == id("e")),
        "{outcome:?}"
    );
    assert_eq!(outcome.redrive_answer(), RedriveAnswer::Contended);
    assert!(!host.trace.contains(&DeliverAction::Draw));
}
