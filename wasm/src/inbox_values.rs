//! Inbox values crossing the boundary: messages, keys, send answers and
//! listings, read field by field into the core's types, and back out as
//! plain objects.
//!
//! A message is `{ executionId, channel, messageId, payload, sentAt }`; a
//! listed one adds `arrival` (and, from `messages`, `consumed`); a key is
//! `{ executionId, channel, messageId }`; a send answers `{ duplicate,
//! arrival }`. Every refusal is a `TimerInputError` (the inbox lives on the
//! timer store) whose `code` names the input, made before anything is
//! touched: these readers only turn JavaScript values into the core's
//! types; the core's own checks (`Message::check`, `check_pending`) judge
//! the rest.

use std::fmt::Write as _;

use loomfence_core::{
    ExecutionId,
    inbox::{InboxEntry, MAX_PENDING_LIMIT, Message, MessageKey, Sent, StoredMessage},
};
use wasm_bindgen::JsValue;

use crate::fire::retyped;
use crate::json;
use crate::json_text;
use crate::out;
use crate::timer_values::{self as timer, INVALID_TIME, SAFE_U64, integer, property, refuse};
use crate::values::{self, NotList, NotText};

/// A message or key whose shape or names are wrong.
pub(crate) const INVALID_MESSAGE: &str = "INVALID_MESSAGE";

/// The fields of a message.
const MESSAGE_FIELDS: [&str; 5] = ["executionId", "channel", "messageId", "payload", "sentAt"];

/// The fields of a listed message.
const STORED_FIELDS: [&str; 6] = [
    "executionId",
    "channel",
    "messageId",
    "payload",
    "sentAt",
    "arrival",
];

/// A channel or message id: a string with no lone surrogate. Its length
/// and bytes are the core's check.
fn name(what: &str, value: &JsValue) -> Result<String, JsValue> {
    values::id_text(value).map_err(|not| match not {
        NotText::NotAString => refuse(&format!("{what} must be a string"), INVALID_MESSAGE),
        NotText::LoneSurrogate => refuse(&values::lone_surrogate(what), INVALID_MESSAGE),
    })
}

/// The key fields of `value`, an object already checked for its fields.
fn key_of(what: &str, value: &JsValue) -> Result<MessageKey, JsValue> {
    Ok(MessageKey {
        execution_id: timer::execution_id(&property(value, "executionId")?)?,
        channel: name(&format!("{what}.channel"), &property(value, "channel")?)?,
        message_id: name(&format!("{what}.messageId"), &property(value, "messageId")?)?,
    })
}

/// The message fields of `value`, an object already checked for its
/// fields. A payload that is not JSON is `INVALID_MESSAGE`.
fn message_of(what: &str, value: &JsValue) -> Result<Message, JsValue> {
    let key = key_of(what, value)?;
    let path = format!("{what}.payload");
    let payload = json::value(&path, INVALID_MESSAGE, &property(value, "payload")?)
        .map_err(|e| retyped(&e, INVALID_MESSAGE))?;
    let sent_at = integer(
        &format!("{what}.sentAt"),
        INVALID_TIME,
        &property(value, "sentAt")?,
    )?;
    Ok(Message {
        key,
        payload,
        sent_at,
    })
}

/// A message `{ executionId, channel, messageId, payload, sentAt }`.
pub(crate) fn message(what: &str, value: &JsValue) -> Result<Message, JsValue> {
    timer::object(what, INVALID_MESSAGE, value, &MESSAGE_FIELDS)?;
    message_of(what, value)
}

/// A key `{ executionId, channel, messageId }`.
pub(crate) fn key(value: &JsValue) -> Result<MessageKey, JsValue> {
    timer::object(
        "key",
        INVALID_MESSAGE,
        value,
        &["executionId", "channel", "messageId"],
    )?;
    key_of("key", value)
}

/// A list of channels, at most [`MAX_PENDING_LIMIT`] (the core checks each
/// name).
pub(crate) fn channels(value: &JsValue) -> Result<Vec<String>, JsValue> {
    let list = values::list(value, MAX_PENDING_LIMIT).map_err(|not| match not {
        NotList::TooLong(length) => refuse(
            &format!(
                "channels: {} channels; the limit is {MAX_PENDING_LIMIT}",
                crate::js_errors::show(length)
            ),
            "INVALID_LIMIT",
        ),
        NotList::NotArray => refuse("channels must be an array of strings", INVALID_MESSAGE),
        NotList::Unreadable(thrown) => crate::js_errors::timer_unreadable("channels", thrown),
    })?;
    list.iter()
        .enumerate()
        .map(|(index, channel)| name(&format!("channels[{index}]"), &channel))
        .collect()
}

/// A listing's limit: a safe integer in `0..`; its range is the core's
/// check.
pub(crate) fn limit(value: &JsValue) -> Result<usize, JsValue> {
    #[allow(clippy::cast_possible_truncation)]
    timer::whole("limit", "INVALID_LIMIT", value, SAFE_U64).map(|n| n as usize)
}

/// A listing a host's inbox answered: an array of listed messages, each
/// read as [`message`] reads one, plus `arrival` (a safe integer from 1).
/// What does not read is `code`'s refusal.
pub(crate) fn listing(
    value: &JsValue,
    max: usize,
    code: &str,
) -> Result<Vec<StoredMessage>, JsValue> {
    let list = values::list(value, max).map_err(|_| {
        refuse(
            &format!("pending() must resolve to an array of at most {max} messages"),
            code,
        )
    })?;
    list.iter()
        .enumerate()
        .map(|(index, item)| {
            let what = format!("pending()[{index}]");
            let read = || -> Result<StoredMessage, JsValue> {
                timer::object(&what, code, &item, &STORED_FIELDS)?;
                let message = message_of(&what, &item)?;
                let arrival = timer::whole(
                    &format!("{what}.arrival"),
                    code,
                    &property(&item, "arrival")?,
                    SAFE_U64,
                )?;
                Ok(StoredMessage { message, arrival })
            };
            read().map_err(|e| retyped(&e, code))
        })
        .collect()
}

/// A send's answer `{ duplicate, arrival }` as a host's inbox gave it;
/// anything else is `code`'s refusal.
pub(crate) fn sent(value: &JsValue, code: &str) -> Result<Sent, JsValue> {
    timer::object("send() answer", code, value, &["duplicate", "arrival"])?;
    let duplicate = property(value, "duplicate")?;
    let arrival = timer::whole(
        "send() answer.arrival",
        code,
        &property(value, "arrival")?,
        SAFE_U64,
    )?;
    match duplicate.as_bool() {
        Some(true) => Ok(Sent::Duplicate { arrival }),
        Some(false) => Ok(Sent::Stored { arrival }),
        None => Err(refuse("send() answer.duplicate must be a boolean", code)),
    }
}

/// A send's answer on its way out: `{ duplicate, arrival }`.
pub(crate) fn sent_js(sent: Sent) -> JsValue {
    let (duplicate, arrival) = match sent {
        Sent::Stored { arrival } => (false, arrival),
        Sent::Duplicate { arrival } => (true, arrival),
    };
    #[allow(clippy::cast_possible_wrap)]
    out::Out::new()
        .set("duplicate", &JsValue::from_bool(duplicate))
        .number("arrival", arrival as i64)
        .done()
}

/// Writes `"executionId":…,"channel":…,"messageId":…` (no braces).
fn write_key(text: &mut String, key: &MessageKey) {
    text.push_str("\"executionId\":");
    json_text::write_string(text, key.execution_id.as_str());
    text.push_str(",\"channel\":");
    json_text::write_string(text, &key.channel);
    text.push_str(",\"messageId\":");
    json_text::write_string(text, &key.message_id);
}

/// Writes a message's fields (no braces).
fn write_message(text: &mut String, message: &Message) {
    write_key(text, &message.key);
    text.push_str(",\"payload\":");
    json_text::write_value(text, &message.payload);
    let _ = write!(text, ",\"sentAt\":{}", message.sent_at);
}

/// A key on its way out.
pub(crate) fn key_js(key: &MessageKey) -> JsValue {
    out::via_text(|text| {
        text.push('{');
        write_key(text, key);
        text.push('}');
    })
}

/// A message on its way out.
pub(crate) fn message_js(message: &Message) -> JsValue {
    out::via_text(|text| {
        text.push('{');
        write_message(text, message);
        text.push('}');
    })
}

/// Listed messages on their way out, each with its `arrival`.
pub(crate) fn listing_js(messages: &[StoredMessage]) -> JsValue {
    out::via_text(|text| {
        text.push('[');
        for (index, stored) in messages.iter().enumerate() {
            if index > 0 {
                text.push(',');
            }
            text.push('{');
            write_message(text, &stored.message);
            let _ = write!(text, ",\"arrival\":{}}}", stored.arrival);
        }
        text.push(']');
    })
}

/// An inspection's entries on their way out: listed messages with
/// `consumed`.
pub(crate) fn entries_js(entries: &[InboxEntry]) -> JsValue {
    out::via_text(|text| {
        text.push('[');
        for (index, entry) in entries.iter().enumerate() {
            if index > 0 {
                text.push(',');
            }
            text.push('{');
            write_message(text, &entry.message.message);
            let _ = write!(
                text,
                ",\"arrival\":{},\"consumed\":{}}}",
                entry.message.arrival, entry.consumed
            );
        }
        text.push(']');
    })
}

/// An execution id of an inbox call.
pub(crate) fn execution_id(value: &JsValue) -> Result<ExecutionId, JsValue> {
    timer::execution_id(value)
}
