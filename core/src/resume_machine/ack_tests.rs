//! The resume's append acknowledgement is compared with the event sent,
//! field by field: a store that answers with anything else breaks its
//! contract, and the machine records nothing as landed.

use serde_json::json;

use super::*;
use crate::memory::MemoryStore;

fn id() -> ExecutionId {
    ExecutionId::new("acked").expect("valid id")
}

/// A machine over a parked log, stepped to its resume append (not
/// performed), with the event it asks to append.
fn at_the_append(capability: Capability) -> (ResumeMachine, NewEvent) {
    let mut store = MemoryStore::new();
    store
        .append_many(
            &id(),
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
            ],
        )
        .expect("appends");
    let request = ResumeRequest::new(2, json!({ "child": "done" }), 10);
    let mut machine = ResumeMachine::new(id(), request, capability);
    loop {
        match machine.poll() {
            Poll::Act(Action::AppendIfParked { mut events, .. }) => {
                return (machine, events.pop().expect("a resume"));
            }
            Poll::Act(_) => assert_eq!(
                crate::drive::step(&mut store, &mut machine),
                Ok(Stepped::Progressed)
            ),
            Poll::Done(result) => panic!("finished before the append: {result:?}"),
        }
    }
}

/// The faithful acknowledgement of `event`: what a store stores at 3.
fn stored(event: &NewEvent) -> Envelope {
    event.clone().into_envelope(id(), 3)
}

/// Each forgery of one field of the acknowledgement, by name.
fn forgeries(event: &NewEvent) -> Vec<(&'static str, Envelope)> {
    let mut payload = stored(event);
    payload.payload.insert("answer".to_owned(), json!("forged"));
    let mut extra = stored(event);
    extra.payload.insert("more".to_owned(), json!(1));
    let mut at = stored(event);
    at.at += 1;
    let mut metadata = stored(event);
    metadata.metadata.insert("host".to_owned(), json!("forged"));
    // The token: dropped when one was sent, added when none was.
    let mut token = stored(event);
    if token.metadata.remove("fence").is_none() {
        token.metadata.insert("fence".to_owned(), json!(1));
    }
    // Another token, or the same one written as another JSON number.
    let mut other_token = stored(event);
    let sent = other_token.metadata.get("fence").and_then(Value::as_u64);
    other_token.metadata.insert(
        "fence".to_owned(),
        sent.map_or_else(|| json!(null), |t| json!(t + 1)),
    );
    let mut float_token = stored(event);
    float_token.metadata.insert(
        "fence".to_owned(),
        sent.map_or_else(|| json!(false), |t| json!(t as f64)),
    );
    let mut kind = stored(event);
    kind.kind = "STEP_STARTED".to_owned();
    vec![
        ("payload", payload),
        ("payload", extra),
        ("at", at),
        ("metadata", metadata),
        ("metadata", token),
        ("metadata", other_token),
        ("metadata", float_token),
        ("kind", kind),
    ]
}

#[test]
fn a_forged_acknowledgement_is_refused_and_nothing_lands() {
    for capability in [Capability::Conditional, Capability::NonFencing] {
        let (machine, event) = at_the_append(capability);
        for (field, forged) in forgeries(&event) {
            let mut fed = machine.clone();
            let expected = if field == "kind" {
                ContractError::WrongAppend {
                    count: 1,
                    kind: forged.kind.clone(),
                }
            } else {
                ContractError::ForgedAppend { field }
            };
            assert_eq!(
                fed.handle_appended(vec![forged]),
                Err(expected),
                "{capability:?}, forged {field}"
            );
            assert_eq!(
                fed, machine,
                "{capability:?}, forged {field}: a refusal changed it"
            );
        }
    }
}

#[test]
fn the_faithful_acknowledgement_lands() {
    for capability in [Capability::Conditional, Capability::NonFencing] {
        let (mut machine, event) = at_the_append(capability);
        let ack = stored(&event);
        assert_eq!(machine.handle_appended(vec![ack.clone()]), Ok(()));
        let resumed = match machine.poll() {
            Poll::Done(Ok(resumed)) => resumed,
            other => panic!("{other:?}"),
        };
        assert_eq!(resumed.resumed, ack);
    }
}
