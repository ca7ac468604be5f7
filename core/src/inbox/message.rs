//! A message and its checks, the `MESSAGE_CONSUMED` event that records its
//! delivery, and the answer a body receives.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{Envelope, NewEvent};
use crate::fire::TimerRow;
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;
use crate::kind::KernelKind;
use crate::redrive_policy::MAX_TIMER_MS;

/// The longest channel name and message id, in UTF-8 bytes: the id limit,
/// so every backend's key columns hold them.
pub const MAX_NAME_BYTES: usize = 255;

/// The largest message payload, as serialized JSON bytes. A delivered
/// payload is copied into the resume's event, so it is bounded where it
/// enters: one message cannot grow a log (or a `jsonb` row) without limit.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// How long after a send its intent row comes due by default, in ms: long
/// enough that the sender's own delivery is normally over by then, so the
/// row only finds work when the sender crashed or was contended.
pub const DEFAULT_INTENT_DELAY_MS: i64 = 5_000;

/// A message's key in the inbox: sending the same key twice stores it once,
/// so a sender retries freely.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageKey {
    /// The execution the message is for.
    pub execution_id: ExecutionId,
    /// The channel a park waits on (`{"kind":"MESSAGE","channel":…}`).
    pub channel: String,
    /// The sender's id for the message, unique per channel.
    pub message_id: String,
}

impl MessageKey {
    /// A key, checked: channel and id are 1 to [`MAX_NAME_BYTES`] bytes
    /// with no NUL.
    pub fn new(
        execution_id: ExecutionId,
        channel: impl Into<String>,
        message_id: impl Into<String>,
    ) -> Result<Self, InputError> {
        let key = Self {
            execution_id,
            channel: channel.into(),
            message_id: message_id.into(),
        };
        key.check()?;
        Ok(key)
    }

    /// Checks the channel and the id, as every inbox does before it
    /// touches anything.
    pub fn check(&self) -> Result<(), InputError> {
        check_name("channel", &self.channel)?;
        check_name("messageId", &self.message_id)
    }
}

/// Checks a channel name: 1 to [`MAX_NAME_BYTES`] bytes, no NUL.
pub fn check_channel(channel: &str) -> Result<(), InputError> {
    check_name("channel", channel)
}

/// Checks a channel name or message id.
fn check_name(field: &'static str, name: &str) -> Result<(), InputError> {
    let problem = if name.is_empty() {
        "is empty".to_owned()
    } else if name.len() > MAX_NAME_BYTES {
        format!(
            "is {} bytes long; the limit is {MAX_NAME_BYTES}",
            name.len()
        )
    } else if let Some(at) = name.find('\0') {
        format!("contains a NUL byte at byte {at}")
    } else {
        return Ok(());
    };
    Err(InputError::MessageField { field, problem })
}

/// A message as sent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Message {
    /// Its key.
    #[serde(flatten)]
    pub key: MessageKey,
    /// What the body receives, any JSON value.
    pub payload: Value,
    /// When it was sent, in ms since the epoch (`0..=2^53-1`).
    pub sent_at: i64,
}

impl Message {
    /// Checks the message as every inbox does before it stores it: the key,
    /// `sent_at`, and a payload a log can hold (no NUL, at most
    /// [`MAX_MESSAGE_BYTES`] serialized).
    pub fn check(&self) -> Result<(), InputError> {
        self.key.check()?;
        if !(0..=MAX_TIMER_MS).contains(&self.sent_at) {
            return Err(InputError::Time {
                what: "sentAt",
                value: self.sent_at,
            });
        }
        let mut wrapped = JsonObject::new();
        wrapped.insert(PAYLOAD.to_owned(), self.payload.clone());
        if crate::event::contains_nul(&wrapped) {
            return Err(InputError::Nul { field: "payload" });
        }
        let bytes = serialized_len(&self.payload);
        if bytes > MAX_MESSAGE_BYTES {
            return Err(InputError::Limit {
                what: "message payload bytes",
                value: bytes as u64,
                max: MAX_MESSAGE_BYTES as u64,
            });
        }
        Ok(())
    }

    /// The row that carries this send's intent to deliver: a re-drive row
    /// (try 0) of the execution due `delay_ms` after the send, written in
    /// the same atomic step as the message. If the sender dies before its
    /// delivery, the inbox re-driver finishes it when the row comes due.
    pub fn intent(&self, delay_ms: i64) -> Result<TimerRow, InputError> {
        super::deliver::intent_row(&self.key.execution_id, self.sent_at, delay_ms)
    }
}

/// The length of `value`'s compact JSON text, counted by walking it rather
/// than writing it (serde_json's writer and float formatting would be most
/// of the npm package's message code): exact, except that a number that
/// is not an integer counts as 24 bytes, at least its longest text.
fn serialized_len(value: &Value) -> usize {
    let text = |text: &str| -> usize {
        2 + text
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
                c if u32::from(c) < 0x20 => 6,
                c => c.len_utf8(),
            })
            .sum::<usize>()
    };
    let digits = |mut n: u64| {
        let mut count = 1;
        while n >= 10 {
            n /= 10;
            count += 1;
        }
        count
    };
    let mut total = 0;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        total += match value {
            Value::Null => 4,
            Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(number) => match (number.as_u64(), number.as_i64()) {
                (Some(n), _) => digits(n),
                (None, Some(n)) => 1 + digits(n.unsigned_abs()),
                (None, None) => 24,
            },
            Value::String(string) => text(string),
            Value::Array(items) => {
                pending.extend(items);
                2 + items.len().saturating_sub(1)
            }
            Value::Object(fields) => {
                pending.extend(fields.values());
                2 + fields.len().saturating_sub(1)
                    + fields.keys().map(|k| text(k) + 1).sum::<usize>()
            }
        };
    }
    total
}

/// A stored message, as an inbox lists it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredMessage {
    /// The message.
    #[serde(flatten)]
    pub message: Message,
    /// Its place in the order messages arrived, from 1: increasing with
    /// arrival on each channel of an execution (the order they are
    /// consumed in), assigned by the inbox.
    pub arrival: u64,
}

/// What a send answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sent {
    /// The message is stored (with its intent row).
    Stored {
        /// Its arrival number.
        arrival: u64,
    },
    /// A message with this key was already there: nothing was written, and
    /// the first payload stands.
    Duplicate {
        /// The stored message's arrival number.
        arrival: u64,
    },
}

/// The payload fields of `MESSAGE_CONSUMED`.
const CHANNEL: &str = "channel";
/// The payload fields of `MESSAGE_CONSUMED`.
const MESSAGE_ID: &str = "messageId";
/// The answer field holding the payload.
const PAYLOAD: &str = "payload";

/// The `MESSAGE_CONSUMED` of a delivery, without a token: payload
/// `{"channel": …, "messageId": …}`. Ignorable: it never answers a park by
/// itself, and it lands only in the same batch as the resume it delivers.
#[must_use]
pub fn consumed_event(channel: &str, message_id: &str, at: i64) -> NewEvent {
    let mut payload = JsonObject::new();
    payload.insert(CHANNEL.to_owned(), Value::String(channel.to_owned()));
    payload.insert(MESSAGE_ID.to_owned(), Value::String(message_id.to_owned()));
    NewEvent::kernel(KernelKind::MessageConsumed, at).with_payload(payload)
}

/// The `(channel, message_id)` of every message `events` record as
/// consumed, sorted and once each (for a binary search): the log's own
/// account, which a delivery trusts over the inbox's flag.
#[must_use]
pub fn consumed_in(events: &[Envelope]) -> Vec<(String, String)> {
    let mut consumed: Vec<(String, String)> = Vec::new();
    for event in events {
        if event.kind != KernelKind::MessageConsumed.as_str() {
            continue;
        }
        let text = |name| match event.payload.get(name) {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        };
        if let (Some(channel), Some(id)) = (text(CHANNEL), text(MESSAGE_ID)) {
            let pair = (channel, id);
            if let Err(at) = consumed.binary_search(&pair) {
                consumed.insert(at, pair);
            }
        }
    }
    consumed
}

/// What the body of a delivered message receives as the resume's
/// `payload.answer`: `{"wait": i, "message": {"channel", "messageId",
/// "payload", "sentAt"}}`, where `i` is the MESSAGE wait it answers.
#[must_use]
pub fn message_answer(wait: usize, message: &Message) -> Value {
    // Built field by field rather than with `json!`, which would serialize
    // each value into a new one (code the npm package need not carry).
    let text = |text: &str| Value::String(text.to_owned());
    let mut inner = JsonObject::new();
    inner.insert(CHANNEL.to_owned(), text(&message.key.channel));
    inner.insert(MESSAGE_ID.to_owned(), text(&message.key.message_id));
    inner.insert(PAYLOAD.to_owned(), message.payload.clone());
    inner.insert("sentAt".to_owned(), Value::from(message.sent_at));
    let mut answer = JsonObject::new();
    answer.insert("wait".to_owned(), Value::from(wait));
    answer.insert("message".to_owned(), Value::Object(inner));
    Value::Object(answer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_answer_has_the_documented_shape() {
        let message = Message {
            key: MessageKey::new(ExecutionId::new("e").expect("id"), "c", "m").expect("key"),
            payload: json!({ "n": 1.5 }),
            sent_at: 9,
        };
        assert_eq!(
            message_answer(2, &message),
            json!({ "wait": 2, "message": {
                "channel": "c", "messageId": "m", "payload": { "n": 1.5 }, "sentAt": 9
            }})
        );
    }

    #[test]
    fn the_counted_length_is_the_json_texts_except_for_fractions() {
        for value in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-7),
            json!(u64::MAX),
            json!(i64::MIN),
            json!("plain"),
            json!("quote \" backslash \\ newline \n tab \t bell \u{7} é 😀"),
            json!([]),
            json!({}),
            json!([1, "two", [3], { "four": 4 }]),
            json!({ "a": { "b\n": [null, false, ""] }, "c": -12 }),
        ] {
            let text = serde_json::to_string(&value).expect("serializes");
            assert_eq!(serialized_len(&value), text.len(), "{text}");
        }
        for fraction in [0.5, -1.7976931348623157e308, 1e-7] {
            let value = json!(fraction);
            let text = serde_json::to_string(&value).expect("serializes");
            assert!(serialized_len(&value) >= text.len(), "{text}");
        }
    }
}
