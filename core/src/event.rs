//! Events as they are written ([`NewEvent`]) and as they are stored
//! ([`Envelope`]), and the checks every store applies before it writes one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::ExecutionId;
use crate::input::{InputError, MAX_KIND_BYTES};
use crate::json::JsonObject;
use crate::kind::{self, KernelKind, KindClass};

/// The largest integer a JavaScript number holds exactly (2^53 - 1).
///
/// Fences, sequences and timestamps cross into JS hosts as plain numbers, so
/// the kernel refuses anything larger everywhere rather than let one backend
/// accept a value another would round.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// What a store needs to know about one valid event: its token and class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventFacts {
    /// `metadata.fence`, if the writer held a token.
    pub fence: Option<u64>,
    /// Whether the event answers a park (see [`kind::classify`]).
    pub class: KindClass,
}

/// An event as a writer hands it to a store: everything but the sequence,
/// which only the store assigns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEvent {
    /// The event kind: a kernel kind or an application kind.
    pub kind: String,
    /// The event's data.
    #[serde(default)]
    pub payload: JsonObject,
    /// Kernel bookkeeping: `fence` (the writer's token) and `kernel` (the
    /// stamp on kernel kinds unknown to older nodes), plus anything the host
    /// adds.
    #[serde(default)]
    pub metadata: JsonObject,
    /// Milliseconds since the epoch, supplied by the caller: the kernel never
    /// reads a clock.
    pub at: i64,
}

impl NewEvent {
    /// An event of `kind` at `at` ms with empty payload and metadata.
    pub fn new(kind: impl Into<String>, at: i64) -> Self {
        Self {
            kind: kind.into(),
            payload: JsonObject::new(),
            metadata: JsonObject::new(),
            at,
        }
    }

    /// A kernel event of `kind` at `at` ms.
    #[must_use]
    pub fn kernel(kind: KernelKind, at: i64) -> Self {
        Self::new(kind.as_str(), at)
    }

    /// Replaces the payload.
    #[must_use]
    pub fn with_payload(mut self, payload: JsonObject) -> Self {
        self.payload = payload;
        self
    }

    /// Sets one metadata field.
    #[must_use]
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Marks the event as written under fence token `fence`.
    #[must_use]
    pub fn with_fence(self, fence: u64) -> Self {
        self.with_meta("fence", Value::from(fence))
    }

    /// Stamps the event as a kernel kind, so nodes that do not know the kind
    /// still count it as answering.
    #[must_use]
    pub fn with_kernel_stamp(self) -> Self {
        self.with_meta("kernel", Value::Bool(true))
    }

    /// Validates the event and extracts what the append guard needs.
    pub fn check(&self) -> Result<EventFacts, InputError> {
        check_kind(&self.kind)?;
        if self.at.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(InputError::AtOutOfRange { at: self.at });
        }
        if contains_nul(&self.payload) {
            return Err(InputError::Nul { field: "payload" });
        }
        if contains_nul(&self.metadata) {
            return Err(InputError::Nul { field: "metadata" });
        }
        Ok(EventFacts {
            fence: fence_of(&self.metadata)?,
            class: kind::classify(&self.kind, &self.metadata),
        })
    }

    /// The envelope this event becomes once a store gives it `sequence`.
    #[must_use]
    pub fn into_envelope(self, execution_id: ExecutionId, sequence: u64) -> Envelope {
        Envelope {
            execution_id,
            sequence,
            kind: self.kind,
            payload: self.payload,
            metadata: self.metadata,
            at: self.at,
        }
    }
}

/// A stored event: what every read returns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Envelope {
    /// The execution whose log holds the event.
    pub execution_id: ExecutionId,
    /// Position in that log, from 1, contiguous, assigned by the store.
    pub sequence: u64,
    /// The event kind.
    pub kind: String,
    /// The event's data.
    pub payload: JsonObject,
    /// Kernel bookkeeping (`fence`, `kernel`) and host fields.
    pub metadata: JsonObject,
    /// Milliseconds since the epoch, as the writer supplied it.
    pub at: i64,
}

impl Envelope {
    /// The token the writer held, `None` for an unfenced append.
    pub fn fence(&self) -> Result<Option<u64>, InputError> {
        fence_of(&self.metadata)
    }

    /// The kernel kind, or `None` for an application kind.
    #[must_use]
    pub fn kernel_kind(&self) -> Option<KernelKind> {
        KernelKind::from_name(&self.kind)
    }

    /// Whether this event answers a park that precedes it.
    #[must_use]
    pub fn is_answering(&self) -> bool {
        kind::is_answering(&self.kind, &self.metadata)
    }

    /// Whether this is a park (`EXECUTION_SUSPENDED`).
    #[must_use]
    pub fn is_park(&self) -> bool {
        self.kernel_kind() == Some(KernelKind::ExecutionSuspended)
    }

    /// Whether this event ends the execution (a terminal kernel kind).
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        crate::status::Status::Pending
            .after(self.kernel_kind())
            .is_terminal()
    }
}

/// Reads `metadata.fence`: absent is `None`, a valid token is `Some`, anything
/// else is [`InputError::BadFence`].
pub fn fence_of(metadata: &JsonObject) -> Result<Option<u64>, InputError> {
    match metadata.get("fence") {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(token) if token <= MAX_SAFE_INTEGER => Ok(Some(token)),
            _ => Err(InputError::BadFence {
                found: value.clone(),
            }),
        },
    }
}

/// Checks a kind name against the kind rules.
fn check_kind(kind: &str) -> Result<(), InputError> {
    if kind.is_empty() {
        return Err(InputError::KindEmpty);
    }
    if kind.len() > MAX_KIND_BYTES {
        return Err(InputError::KindTooLong { len: kind.len() });
    }
    if kind.contains('\0') {
        return Err(InputError::Nul { field: "kind" });
    }
    Ok(())
}

/// Whether any key or string inside `object` holds a NUL. Iterative, so a
/// deeply nested value from a host cannot overflow the stack.
pub(crate) fn contains_nul(object: &JsonObject) -> bool {
    let mut pending: Vec<&Value> = Vec::new();
    let mut next = Some(object);
    loop {
        if let Some(map) = next.take() {
            for (key, value) in map {
                if key.contains('\0') {
                    return true;
                }
                pending.push(value);
            }
        }
        match pending.pop() {
            None => return false,
            Some(Value::String(text)) if text.contains('\0') => return true,
            Some(Value::Array(items)) => pending.extend(items),
            Some(Value::Object(map)) => next = Some(map),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("expected an object, got {other}"),
        }
    }

    #[test]
    fn a_plain_event_is_valid_and_unfenced() {
        let facts = NewEvent::new("app.output", 1).check().expect("valid");
        assert_eq!(
            facts,
            EventFacts {
                fence: None,
                class: KindClass::Ignorable
            }
        );
    }

    #[test]
    fn fences_must_be_safe_non_negative_integers() {
        for bad in [
            json!(-1),
            json!(1.5),
            json!(3.0),
            json!("3"),
            json!(null),
            json!(MAX_SAFE_INTEGER + 1),
        ] {
            let event = NewEvent::new("X", 0).with_meta("fence", bad.clone());
            assert_eq!(event.check(), Err(InputError::BadFence { found: bad }));
        }
        let event = NewEvent::kernel(KernelKind::ExecutionResumed, 0).with_fence(MAX_SAFE_INTEGER);
        assert_eq!(
            event.check(),
            Ok(EventFacts {
                fence: Some(MAX_SAFE_INTEGER),
                class: KindClass::Answering
            })
        );
    }

    #[test]
    fn kinds_and_times_are_bounded() {
        assert_eq!(NewEvent::new("", 0).check(), Err(InputError::KindEmpty));
        assert_eq!(
            NewEvent::new("k".repeat(256), 0).check(),
            Err(InputError::KindTooLong { len: 256 })
        );
        let too_late = i64::try_from(MAX_SAFE_INTEGER).expect("fits") + 1;
        assert_eq!(
            NewEvent::new("X", -too_late).check(),
            Err(InputError::AtOutOfRange { at: -too_late })
        );
    }

    #[test]
    fn nul_is_refused_anywhere_in_the_event() {
        assert_eq!(
            NewEvent::new("a\0", 0).check(),
            Err(InputError::Nul { field: "kind" })
        );
        let nested = object(json!({ "a": [1, { "b": "x\u{0}y" }] }));
        assert_eq!(
            NewEvent::new("X", 0).with_payload(nested).check(),
            Err(InputError::Nul { field: "payload" })
        );
        let key = object(json!({ "k\u{0}": 1 }));
        let mut event = NewEvent::new("X", 0);
        event.metadata = key;
        assert_eq!(event.check(), Err(InputError::Nul { field: "metadata" }));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut value = json!("leaf");
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        let payload = object(json!({}));
        let mut event = NewEvent::new("X", 0).with_payload(payload);
        event.payload.insert("deep".into(), value);
        assert!(event.check().is_ok());
        // Dropping a 100k-deep value recurses in serde_json; unwind it by hand.
        let mut current = event.payload.remove("deep");
        while let Some(Value::Array(mut items)) = current {
            current = items.pop();
        }
    }

    #[test]
    fn envelopes_use_the_wire_names() {
        let event = NewEvent::new("X", 7).with_fence(2);
        let envelope = event.into_envelope(ExecutionId::new("e").expect("valid"), 3);
        let wire = serde_json::to_value(&envelope).expect("serialises");
        assert_eq!(
            wire,
            json!({ "executionId": "e", "sequence": 3, "kind": "X", "payload": {}, "metadata": { "fence": 2 }, "at": 7 })
        );
        assert_eq!(envelope.fence(), Ok(Some(2)));
    }
}
