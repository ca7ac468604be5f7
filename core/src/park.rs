//! What a park waits for, read from its payload.
//!
//! You need it when you write a park, or read what one waits for (a
//! supervisor, a timer service); the store and the resume machine do not.
//!
//! A park's payload is `{ "waits": [ … ] }`, each wait one of
//! `{"kind":"CHILD_DONE","key":"<id>"}`, `{"kind":"CHILD_DONE","group":["<id>", …]}`,
//! `{"kind":"TIMER","wakeAt":<ms>}` or `{"kind":"MESSAGE","channel":"<name>"}`.
//! The waits of one park are alternatives: whichever is satisfied first
//! answers it (a child with a timeout is `[CHILD_DONE, TIMER]`). A group is
//! satisfied when all of its members are.

use serde_json::Value;

use crate::event::Envelope;
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;

/// One thing a park waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Wait {
    /// One child execution reaching a terminal status.
    Child(ExecutionId),
    /// Every child of a group reaching a terminal status.
    Group(Vec<ExecutionId>),
    /// A point in time, in ms since the epoch.
    Timer {
        /// When the timer fires.
        wake_at: i64,
    },
    /// A message on a channel.
    Message {
        /// The channel's name.
        channel: String,
    },
}

impl Wait {
    /// The children this wait is about; empty for timers and messages.
    #[must_use]
    pub fn children(&self) -> &[ExecutionId] {
        match self {
            Wait::Child(key) => std::slice::from_ref(key),
            Wait::Group(members) => members,
            Wait::Timer { .. } | Wait::Message { .. } => &[],
        }
    }

    /// The wire shape, for writing a park's payload.
    #[must_use]
    pub fn to_json(&self) -> Value {
        RawWait::from(self).to_value()
    }
}

/// The waits of `park`, in payload order.
pub fn waits_of(park: &Envelope) -> Result<Vec<Wait>, InputError> {
    if !park.is_park() {
        return Err(InputError::NotParkEvent {
            sequence: park.sequence,
            kind: park.kind.clone(),
        });
    }
    waits_in(&park.payload)
}

/// The waits listed in a park payload.
pub(crate) fn waits_in(payload: &JsonObject) -> Result<Vec<Wait>, InputError> {
    let Some(Value::Array(raw)) = payload.get("waits") else {
        return Err(InputError::NoWaits);
    };
    raw.iter()
        .enumerate()
        .map(|(index, value)| {
            let raw = RawWait::read(value)
                .map_err(|reason| InputError::MalformedWait { index, reason })?;
            raw.into_wait(index)
        })
        .collect()
}

/// A park payload listing `waits`.
#[must_use]
pub fn park_payload(waits: &[Wait]) -> JsonObject {
    let mut payload = JsonObject::new();
    payload.insert(
        "waits".to_owned(),
        Value::Array(waits.iter().map(Wait::to_json).collect()),
    );
    payload
}

/// The fields a wait may carry on the wire.
const WAIT_FIELDS: [&str; 5] = ["kind", "key", "group", "wakeAt", "channel"];

/// The wire shape of a wait, before its fields are checked against its kind.
///
/// Read and written by hand rather than through serde's derives: the reader
/// is five fields, and serde's deserializer (with its float-formatting error
/// messages) would be the largest part of the npm package's timer code.
struct RawWait {
    /// `CHILD_DONE`, `TIMER` or `MESSAGE`.
    kind: String,
    /// A single child.
    key: Option<String>,
    /// A group of children.
    group: Option<Vec<String>>,
    /// A timer's due time.
    wake_at: Option<i64>,
    /// A message channel.
    channel: Option<String>,
}

impl RawWait {
    /// Reads the wire shape: an object with a string `kind` and only the
    /// known fields, each of its type (`null` counts as absent, as a
    /// missing optional field).
    fn read(value: &Value) -> Result<Self, String> {
        let Value::Object(fields) = value else {
            return Err(format!("a wait must be an object, got {}", type_of(value)));
        };
        if let Some(unknown) = fields
            .keys()
            .find(|key| !WAIT_FIELDS.contains(&key.as_str()))
        {
            return Err(format!(
                "unknown field `{unknown}`, expected one of {}",
                WAIT_FIELDS.join(", ")
            ));
        }
        let text = |name: &str| -> Result<Option<String>, String> {
            match fields.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(other) => Err(format!("`{name}` must be a string, got {}", type_of(other))),
            }
        };
        let kind = text("kind")?.ok_or_else(|| "missing field `kind`".to_owned())?;
        let group = match fields.get("group") {
            None | Some(Value::Null) => None,
            Some(Value::Array(members)) => Some(
                members
                    .iter()
                    .map(|member| match member {
                        Value::String(id) => Ok(id.clone()),
                        other => Err(format!("`group` must list strings, got {}", type_of(other))),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(other) => return Err(format!("`group` must be an array, got {}", type_of(other))),
        };
        let wake_at = match fields.get("wakeAt") {
            None | Some(Value::Null) => None,
            Some(number) => Some(
                number
                    .as_i64()
                    .ok_or_else(|| format!("`wakeAt` must be an integer ms time, got {number}"))?,
            ),
        };
        Ok(Self {
            kind,
            key: text("key")?,
            group,
            wake_at,
            channel: text("channel")?,
        })
    }

    /// The wire shape as JSON, absent fields left out.
    fn to_value(&self) -> Value {
        let mut fields = JsonObject::new();
        fields.insert("kind".to_owned(), Value::String(self.kind.clone()));
        if let Some(key) = &self.key {
            fields.insert("key".to_owned(), Value::String(key.clone()));
        }
        if let Some(group) = &self.group {
            let members = group.iter().cloned().map(Value::String).collect();
            fields.insert("group".to_owned(), Value::Array(members));
        }
        if let Some(wake_at) = self.wake_at {
            fields.insert("wakeAt".to_owned(), Value::from(wake_at));
        }
        if let Some(channel) = &self.channel {
            fields.insert("channel".to_owned(), Value::String(channel.clone()));
        }
        Value::Object(fields)
    }

    /// Checks that exactly the fields of its kind are present.
    fn into_wait(self, index: usize) -> Result<Wait, InputError> {
        let malformed = |reason: &str| InputError::MalformedWait {
            index,
            reason: reason.to_owned(),
        };
        let child = |id: String| {
            ExecutionId::new(id).map_err(|source| InputError::BadChild {
                index,
                source: Box::new(source),
            })
        };
        match (
            self.kind.as_str(),
            self.key,
            self.group,
            self.wake_at,
            self.channel,
        ) {
            ("CHILD_DONE", Some(key), None, None, None) => Ok(Wait::Child(child(key)?)),
            ("CHILD_DONE", None, Some(group), None, None) if !group.is_empty() => Ok(Wait::Group(
                group.into_iter().map(child).collect::<Result<_, _>>()?,
            )),
            ("CHILD_DONE", None, Some(_), None, None) => {
                Err(malformed("a CHILD_DONE group is empty"))
            }
            ("CHILD_DONE", ..) => Err(malformed(
                "a CHILD_DONE wait names exactly one of `key` or `group`",
            )),
            ("TIMER", None, None, Some(wake_at), None) => Ok(Wait::Timer { wake_at }),
            ("TIMER", ..) => Err(malformed("a TIMER wait has exactly `wakeAt`")),
            ("MESSAGE", None, None, None, Some(channel)) => Ok(Wait::Message { channel }),
            ("MESSAGE", ..) => Err(malformed("a MESSAGE wait has exactly `channel`")),
            (other, ..) => Err(malformed(&format!("unknown wait kind {other:?}"))),
        }
    }
}

/// A JSON value's type, for messages.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl From<&Wait> for RawWait {
    fn from(wait: &Wait) -> Self {
        let empty = RawWait {
            kind: String::new(),
            key: None,
            group: None,
            wake_at: None,
            channel: None,
        };
        match wait {
            Wait::Child(key) => RawWait {
                kind: "CHILD_DONE".to_owned(),
                key: Some(key.to_string()),
                ..empty
            },
            Wait::Group(members) => RawWait {
                kind: "CHILD_DONE".to_owned(),
                group: Some(members.iter().map(ToString::to_string).collect()),
                ..empty
            },
            Wait::Timer { wake_at } => RawWait {
                kind: "TIMER".to_owned(),
                wake_at: Some(*wake_at),
                ..empty
            },
            Wait::Message { channel } => RawWait {
                kind: "MESSAGE".to_owned(),
                channel: Some(channel.clone()),
                ..empty
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id(s: &str) -> ExecutionId {
        ExecutionId::new(s).expect("valid")
    }

    fn payload(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn every_shape_round_trips() {
        let waits = vec![
            Wait::Child(id("c1")),
            Wait::Group(vec![id("c2"), id("c3")]),
            Wait::Timer { wake_at: 5_000 },
            Wait::Message {
                channel: "approvals".to_owned(),
            },
        ];
        let written = park_payload(&waits);
        assert_eq!(
            Value::Object(written.clone()),
            json!({ "waits": [
                { "kind": "CHILD_DONE", "key": "c1" },
                { "kind": "CHILD_DONE", "group": ["c2", "c3"] },
                { "kind": "TIMER", "wakeAt": 5000 },
                { "kind": "MESSAGE", "channel": "approvals" },
            ]})
        );
        assert_eq!(waits_in(&written), Ok(waits));
    }

    #[test]
    fn malformed_waits_name_their_index() {
        let cases = [
            json!({ "waits": [{ "kind": "CHILD_DONE", "key": "a", "group": ["b"] }] }),
            json!({ "waits": [{ "kind": "CHILD_DONE" }] }),
            json!({ "waits": [{ "kind": "CHILD_DONE", "group": [] }] }),
            json!({ "waits": [{ "kind": "TIMER", "wakeAt": "soon" }] }),
            json!({ "waits": [{ "kind": "SIGNAL" }] }),
            json!({ "waits": [{ "kind": "MESSAGE", "channel": "x", "extra": 1 }] }),
        ];
        for case in cases {
            assert!(
                matches!(
                    waits_in(&payload(case.clone())),
                    Err(InputError::MalformedWait { index: 0, .. })
                ),
                "{case}"
            );
        }
        assert_eq!(waits_in(&payload(json!({}))), Err(InputError::NoWaits));
        assert!(matches!(
            waits_in(&payload(
                json!({ "waits": [{ "kind": "CHILD_DONE", "key": "" }] })
            )),
            Err(InputError::BadChild {
                index: 0,
                source
            }) if *source == InputError::IdEmpty
        ));
    }
}
