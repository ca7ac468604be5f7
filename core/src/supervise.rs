//! The child supervisor's decisions: when a parent parked on its children can
//! be resumed, and with what answer ([`child_outcome`], [`answer_for`]), and
//! the loop of one supervision that puts them together
//! ([`SuperviseMachine`], in `supervise/machine.rs`).
//!
//! You need it when you resume parents parked on their children.
//!
//! The supervisors that do the IO (the runtime's `ChildSupervisor`, the npm
//! package's, the simulation's) are pumps over the machine; everything they
//! decide is here, pure.

mod machine;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::event::Envelope;
use crate::fold::ExecutionView;
use crate::input::ExecutionId;
use crate::json::JsonObject;
use crate::park::Wait;
use crate::status::Terminal;

pub use self::machine::{
    OnContention, SuperviseAction, SuperviseMachine, SuperviseOptions, SuperviseOutcome,
    SupervisePoll,
};

/// How a child ended, as its parent is told.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChildOutcome {
    /// How it ended.
    pub status: Terminal,
    /// The payload of the event that ended it.
    pub output: JsonObject,
}

/// The child's outcome if its log shows it has ended, else `None` (still
/// running, or no log at all).
#[must_use]
pub fn child_outcome(events: &[Envelope]) -> Option<ChildOutcome> {
    let mut view = ExecutionView::default();
    for event in events {
        let was_terminal = view.status.is_terminal();
        view.apply(event);
        if let (false, crate::Status::Terminal(status)) = (was_terminal, view.status) {
            return Some(ChildOutcome {
                status,
                output: event.payload.clone(),
            });
        }
    }
    None
}

/// The answer that resumes a parent parked on `waits`, given the outcomes of
/// the children known to have ended; `None` while no child wait is
/// satisfied.
///
/// Waits are alternatives, so the first satisfied child wait (in payload
/// order) answers: `{"wait": <index>, "children": {"<id>": {"status": …,
/// "output": …}}}`. Timer and message waits are other services' to answer.
#[must_use]
pub fn answer_for(waits: &[Wait], ended: &BTreeMap<ExecutionId, ChildOutcome>) -> Option<Value> {
    answer_with(waits, |child| ended.get(child))
}

/// [`answer_for`] over any lookup of the ended children's outcomes.
///
/// Built by hand, without `json!` or collecting into a map: in the npm
/// package, serde's conversion and a sorted collect would be most of the
/// supervision's size.
pub(crate) fn answer_with<'a>(
    waits: &[Wait],
    ended: impl Fn(&ExecutionId) -> Option<&'a ChildOutcome>,
) -> Option<Value> {
    waits.iter().enumerate().find_map(|(index, wait)| {
        let children = wait.children();
        if children.is_empty() {
            return None;
        }
        let mut outcomes = Map::new();
        for child in children {
            let outcome = ended(child)?;
            let mut entry = Map::new();
            entry.insert("status".to_owned(), Value::from(outcome.status.as_str()));
            entry.insert("output".to_owned(), Value::Object(outcome.output.clone()));
            outcomes.insert(child.to_string(), Value::Object(entry));
        }
        let mut answer = Map::new();
        answer.insert("wait".to_owned(), Value::from(index));
        answer.insert("children".to_owned(), Value::Object(outcomes));
        Some(Value::Object(answer))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::NewEvent;
    use crate::kind::KernelKind;

    fn id(s: &str) -> ExecutionId {
        ExecutionId::new(s).expect("valid")
    }

    fn outcome(status: Terminal) -> ChildOutcome {
        ChildOutcome {
            status,
            output: JsonObject::new(),
        }
    }

    #[test]
    fn a_child_ends_at_its_first_terminal_event() {
        let mut output = JsonObject::new();
        output.insert("total".to_owned(), json!(42));
        let events: Vec<Envelope> = [
            NewEvent::kernel(KernelKind::ExecutionStarted, 0),
            NewEvent::kernel(KernelKind::ExecutionCompleted, 1).with_payload(output.clone()),
            NewEvent::kernel(KernelKind::ExecutionFailed, 2),
        ]
        .into_iter()
        .zip(1..)
        .map(|(event, seq)| event.into_envelope(id("child"), seq))
        .collect();
        assert_eq!(child_outcome(&events[..1]), None);
        assert_eq!(
            child_outcome(&events),
            Some(ChildOutcome {
                status: Terminal::Completed,
                output
            })
        );
    }

    #[test]
    fn a_group_waits_for_every_member_and_a_key_for_one() {
        let waits = [Wait::Group(vec![id("a"), id("b")]), Wait::Child(id("c"))];
        let mut ended = BTreeMap::new();
        ended.insert(id("a"), outcome(Terminal::Completed));
        assert_eq!(answer_for(&waits, &ended), None);
        ended.insert(id("c"), outcome(Terminal::Failed));
        assert_eq!(
            answer_for(&waits, &ended),
            Some(json!({ "wait": 1, "children": { "c": { "status": "failed", "output": {} } } }))
        );
        ended.insert(id("b"), outcome(Terminal::Cancelled));
        let answer = answer_for(&waits, &ended).expect("the group is complete");
        assert_eq!(answer["wait"], json!(0));
        assert_eq!(answer["children"]["b"]["status"], json!("cancelled"));
    }

    #[test]
    fn timers_and_messages_are_not_the_supervisors() {
        let waits = [
            Wait::Timer { wake_at: 0 },
            Wait::Message {
                channel: "m".to_owned(),
            },
        ];
        assert_eq!(answer_for(&waits, &BTreeMap::new()), None);
    }
}
