//! Answers that do not fit: every `handle_*` out of turn, and a pending
//! listing outside the inbox's contract, is refused and changes nothing.

use super::*;
use crate::contract::ContractError;
use crate::error::Error;
use crate::resume_machine::{RefusalReason, ResumeContendedError, ResumeRefusedError};

/// Feeds `machine` every answer but the one to `poll`'s action, each of
/// which must be refused as unexpected and leave it as it was.
fn refuses_every_other_answer(machine: &mut DeliverMachine, host: &Host) {
    let before = machine.clone();
    let log = host.log("e");
    let draw = Draw::new(0.5).expect("a draw");
    let refused = ResumeError::Refused(ResumeRefusedError {
        execution_id: id("e"),
        park_seq: 2,
        reason: RefusalReason::NotSuspended,
    });
    let pending = machine.poll();
    let expect = |name: &str, result: Result<(), ContractError>| {
        assert!(
            matches!(result, Err(ContractError::UnexpectedInput { .. })),
            "{name} while {pending:?}: {result:?}"
        );
    };
    let answers_log = matches!(pending, DeliverPoll::Act(DeliverAction::ReadLog));
    let answers_send = matches!(pending, DeliverPoll::Act(DeliverAction::Send { .. }));
    let answers_pending = matches!(pending, DeliverPoll::Act(DeliverAction::ReadPending { .. }));
    let answers_mark = matches!(pending, DeliverPoll::Act(DeliverAction::MarkConsumed(_)));
    let answers_resume = matches!(pending, DeliverPoll::Act(DeliverAction::Resume { .. }));
    let answers_draw = matches!(pending, DeliverPoll::Act(DeliverAction::Draw));
    let answers_row = matches!(pending, DeliverPoll::Act(DeliverAction::WriteRow(_)));
    if !answers_log {
        expect("handle_log", machine.handle_log(&log));
    }
    if !answers_send {
        expect(
            "handle_sent",
            machine.handle_sent(Sent::Stored { arrival: 1 }),
        );
    }
    if !answers_pending {
        expect("handle_pending", machine.handle_pending(&[], NOW));
    }
    if !answers_mark {
        expect("handle_marked", machine.handle_marked());
    }
    if !answers_resume {
        expect("handle_resumed", machine.handle_resumed(Err(&refused)));
    }
    if !answers_draw {
        match machine.handle_draw(draw, NOW) {
            Err(Error::Contract(error)) => expect("handle_draw", Err(error)),
            other => panic!("handle_draw while {pending:?}: {other:?}"),
        }
    }
    if !answers_row {
        expect("handle_written", machine.handle_written());
    }
    assert_eq!(*machine, before, "unchanged while {pending:?}");
}

#[test]
fn every_answer_out_of_turn_is_unexpected_and_changes_nothing() {
    let mut host = Host::new();
    host.parked("e", &[on("c")]);
    host.fault = Fault::BumpBeforeAcquire;
    let mut machine = DeliverMachine::notify(
        message("e", "c", "m1", json!(1)),
        options(OnContention::WriteRow),
    )
    .expect("a valid message");
    // Every state of a contended notify that writes a row: read, send,
    // list, resume, draw, row, done.
    let mut seen = Vec::new();
    loop {
        refuses_every_other_answer(&mut machine, &host);
        let action = match machine.poll() {
            DeliverPoll::Done(_) => break,
            DeliverPoll::Act(action) => action,
        };
        seen.push(std::mem::discriminant(&action));
        host.trace.push(action.clone());
        assert!(host.act(&mut machine, action));
    }
    assert_eq!(seen.len(), 6, "{:?}", host.trace);
    // And the marks: a delivery that lands, stopped at each mark.
    let mut host = Host::new();
    host.parked("e", &[on("c")]);
    let mut machine = notify(message("e", "c", "m1", json!(1)));
    while let DeliverPoll::Act(action) = machine.poll() {
        refuses_every_other_answer(&mut machine, &host);
        host.trace.push(action.clone());
        assert!(host.act(&mut machine, action));
    }
    refuses_every_other_answer(&mut machine, &host);
    assert!(matches!(
        machine.poll(),
        DeliverPoll::Done(DeliverOutcome::Delivered { .. })
    ));
}

/// A check of `e` parked on channel `c` with m1 stored, stopped at its
/// listing.
fn at_the_listing() -> (Host, DeliverMachine) {
    let mut host = Host::new();
    host.parked("e", &[on("c")]);
    host.inbox
        .send(&message("e", "c", "m1", json!(1)))
        .expect("stores");
    let mut machine = check("e");
    let DeliverPoll::Act(action) = machine.poll() else {
        panic!("a read first");
    };
    assert!(host.act(&mut machine, action));
    assert!(matches!(
        machine.poll(),
        DeliverPoll::Act(DeliverAction::ReadPending { .. })
    ));
    (host, machine)
}

fn stored(execution: &str, channel: &str, message_id: &str, arrival: u64) -> StoredMessage {
    StoredMessage {
        message: message(execution, channel, message_id, json!(arrival)),
        arrival,
    }
}

#[test]
fn a_listing_out_of_contract_is_refused_and_changes_nothing() {
    let (_host, mut machine) = at_the_listing();
    let before = machine.clone();
    let too_many: Vec<StoredMessage> = (1..=PENDING_PAGE as u64 + 1)
        .map(|n| stored("e", "c", &format!("m{n}"), n))
        .collect();
    let cases: [(&str, Vec<StoredMessage>); 5] = [
        ("another execution's", vec![stored("f", "c", "m1", 1)]),
        ("another channel", vec![stored("e", "d", "m1", 1)]),
        (
            "out of arrival order",
            vec![stored("e", "c", "m2", 2), stored("e", "c", "m1", 1)],
        ),
        (
            "one arrival twice",
            vec![stored("e", "c", "m1", 1), stored("e", "c", "m2", 1)],
        ),
        ("over the limit", too_many),
    ];
    for (what, messages) in cases {
        let result = machine.handle_pending(&messages, NOW);
        let fits = match what {
            "another execution's" => matches!(result, Err(ContractError::WrongExecution { .. })),
            _ => matches!(result, Err(ContractError::InboxOutOfContract { .. })),
        };
        assert!(fits, "{what}: {result:?}");
        assert_eq!(machine, before, "{what}: unchanged");
    }
    // The listing as the inbox gives it still fits afterwards.
    machine
        .handle_pending(&[stored("e", "c", "m1", 1)], NOW)
        .expect("fits");
    assert!(matches!(
        machine.poll(),
        DeliverPoll::Act(DeliverAction::Resume { .. })
    ));
}

#[test]
fn a_log_or_a_resume_result_out_of_contract_is_refused_and_changes_nothing() {
    let (mut host, mut machine) = at_the_listing();
    machine
        .handle_pending(&[stored("e", "c", "m1", 1)], NOW)
        .expect("fits");
    let before = machine.clone();
    let other = |park_seq| {
        ResumeError::Refused(ResumeRefusedError {
            execution_id: id("e"),
            park_seq,
            reason: RefusalReason::NotSuspended,
        })
    };
    assert_eq!(
        machine.handle_resumed(Err(&other(7))),
        Err(ContractError::WrongPark {
            expected: 2,
            got: 7
        })
    );
    let elsewhere = ResumeError::Contended(ResumeContendedError {
        execution_id: id("f"),
        attempts: 3,
    });
    assert!(matches!(
        machine.handle_resumed(Err(&elsewhere)),
        Err(ContractError::WrongExecution { .. })
    ));
    let stale = ResumeError::StaleFence(crate::fence::StaleFenceError {
        execution_id: id("e"),
        presented: None,
        current: 1,
    });
    assert!(matches!(
        machine.handle_resumed(Err(&stale)),
        Err(ContractError::UnexpectedInput { .. })
    ));
    assert_eq!(machine, before);

    // A log of another execution, or with a gap, at the read.
    host.start("f");
    let mut machine = check("e");
    let before = machine.clone();
    assert!(matches!(
        machine.handle_log(&host.log("f")),
        Err(ContractError::WrongExecution { .. })
    ));
    let gapped: Vec<Envelope> = host.log("e").into_iter().skip(1).collect();
    assert!(matches!(
        machine.handle_log(&gapped),
        Err(ContractError::Gap { .. })
    ));
    assert_eq!(machine, before);
}
