//! A park through the machine: its intent row, the park, then the check.

use super::*;
use crate::contract::ContractError;

/// A park event on `waits` at [`NOW`].
fn park_event(waits: &[Wait]) -> NewEvent {
    NewEvent::kernel(KernelKind::ExecutionSuspended, NOW).with_payload(park_payload(waits))
}

fn park(execution: &str, waits: &[Wait]) -> DeliverMachine {
    DeliverMachine::park(id(execution), park_event(waits), DeliverOptions::default())
        .expect("a park")
}

#[test]
fn a_park_on_a_channel_writes_its_intent_row_before_the_park_and_takes_a_waiting_message() {
    let mut host = Host::new();
    host.start("e");
    let mut send = notify(message("e", "approvals", "m-1", json!(1)));
    assert_eq!(host.finish(&mut send), DeliverOutcome::Waiting);
    host.trace.clear();

    let mut machine = park("e", &[on("approvals")]);
    let outcome = host.finish(&mut machine);
    assert!(
        matches!(outcome, DeliverOutcome::Delivered { .. }),
        "{outcome:?}"
    );
    let intent = TimerRow::redrive(id("e"), NOW + DEFAULT_INTENT_DELAY_MS, 0);
    assert_eq!(host.trace[0], DeliverAction::ReadFence);
    assert_eq!(host.trace[1], DeliverAction::WriteRow(intent.clone()));
    assert!(
        matches!(&host.trace[2], DeliverAction::AppendPark(event) if event.kind == "EXECUTION_SUSPENDED")
    );
    assert!(
        host.timers
            .due(MAX_TIMER, 10, Default::default())
            .expect("lists")
            .contains(&intent)
    );
    let parked = machine.parked().expect("the park is kept");
    assert_eq!(parked.sequence, 2);
    assert_eq!(
        host.consumed("e"),
        [("approvals".to_owned(), "m-1".to_owned())]
    );
}

#[test]
fn a_park_with_no_message_wait_writes_no_row() {
    let mut host = Host::new();
    host.start("e");
    let mut machine = park("e", &[Wait::Timer { wake_at: 9_000 }]);
    assert_eq!(host.finish(&mut machine), DeliverOutcome::Waiting);
    assert!(matches!(host.trace[0], DeliverAction::AppendPark(_)));
    assert!(
        host.timers
            .due(MAX_TIMER, 10, Default::default())
            .expect("lists")
            .is_empty()
    );
}

#[test]
fn what_is_not_a_readable_park_is_refused_before_anything_is_written() {
    let not_a_park = NewEvent::kernel(KernelKind::StepStarted, NOW);
    assert!(matches!(
        DeliverMachine::park(id("e"), not_a_park, DeliverOptions::default()),
        Err(InputError::NotParkEvent { .. })
    ));
    let unreadable = NewEvent::kernel(KernelKind::ExecutionSuspended, NOW);
    assert_eq!(
        DeliverMachine::park(id("e"), unreadable, DeliverOptions::default()),
        Err(InputError::NoWaits)
    );
    let mut late = park_event(&[on("c")]);
    late.at = -1;
    assert!(DeliverMachine::park(id("e"), late, DeliverOptions::default()).is_err());
}

#[test]
fn a_park_answered_out_of_turn_or_forged_changes_nothing() {
    let mut host = Host::new();
    host.start("e");
    let mut machine = park("e", &[on("c")]);
    let before = machine.clone();
    let stray = host.log("e")[0].clone();
    assert!(
        machine.handle_parked(&stray).is_err(),
        "the token is read first"
    );
    assert!(machine.handle_written().is_err(), "the token is read first");
    assert_eq!(machine, before);
    machine.handle_fence(0).expect("the token");
    machine.handle_written().expect("the intent row");
    let before = machine.clone();
    assert!(matches!(
        machine.handle_parked(&stray),
        Err(ContractError::WrongAppend { .. })
    ));
    assert_eq!(machine, before);
}

#[test]
fn a_park_under_a_stale_token_writes_nothing_not_even_its_intent_row() {
    let mut host = Host::new();
    host.start("e");
    host.store.acquire_fence(&id("e"));
    host.store.acquire_fence(&id("e"));
    for token in [None, Some(1)] {
        let mut event = park_event(&[on("c")]);
        if let Some(token) = token {
            event = event.with_fence(token);
        }
        let mut machine =
            DeliverMachine::park(id("e"), event, DeliverOptions::default()).expect("a park");
        let outcome = host.finish(&mut machine);
        assert!(
            matches!(&outcome, DeliverOutcome::Fenced(stale) if stale.current == 2 && stale.presented == token),
            "{outcome:?}"
        );
        assert_eq!(outcome.redrive_answer(), crate::fire::RedriveAnswer::Noop);
    }
    assert_eq!(host.log("e").len(), 1, "no park");
    assert!(
        host.timers
            .due(MAX_TIMER, 10, Default::default())
            .expect("lists")
            .is_empty()
    );
    let mut current = park_event(&[on("c")]).with_fence(2);
    current.at = NOW;
    let mut machine =
        DeliverMachine::park(id("e"), current, DeliverOptions::default()).expect("a park");
    assert_eq!(
        host.finish(&mut machine),
        DeliverOutcome::Waiting,
        "the current token parks"
    );
}

/// Later than every row of these tests.
const MAX_TIMER: i64 = 1 << 40;
