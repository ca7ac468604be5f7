//! Events coming in from JavaScript (what writers hand to a store) and
//! envelopes (what host stores and callers hand back): checked by
//! `js/events.js`, each mistake with its own typed error, and handed over
//! as JSON text, which `json_text.rs` reads here. The rest (an id's or a
//! kind's length, NUL characters) is the core's check, made by the store.
//!
//! The checks, for an event: an object (`TypeError` `NOT_AN_OBJECT`) with
//! no field but `kind`, `payload`, `metadata` and `at` (an envelope passed
//! where an event belongs, a misspelt `metdata`: `InputError`
//! `INVALID_EVENT`); `kind` a string; `at` a safe integer (`RangeError`
//! `AT_OUT_OF_RANGE`); `metadata.fence`, if present, a safe non-negative
//! integer (`BAD_FENCE`: `RangeError` for a number, `TypeError` otherwise);
//! payload and metadata plain JSON objects, `undefined` being `{}`.

use std::sync::atomic::{AtomicBool, Ordering};

use loomfence_core::log::{KERNEL_EVENT_KINDS, KindFacts};
use loomfence_core::{Envelope, ExecutionId, JsonObject, NewEvent};
use wasm_bindgen::JsValue;

use crate::js_errors;
use crate::json;
use crate::json_text::{Reader, TextError};

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/events.js")]
extern "C" {
    #[wasm_bindgen(js_name = eventText)]
    fn event_text(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = eventsText)]
    fn events_text(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = envelopeText)]
    fn envelope_text(value: &JsValue, what: &str, code: &str) -> JsValue;
    #[wasm_bindgen(js_name = envelopesText)]
    fn envelopes_text(value: &JsValue, what: &str, code: &str) -> JsValue;
    #[wasm_bindgen(js_name = foldText)]
    fn fold_text(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = foldCodes)]
    fn fold_codes_js(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = setKernelKinds)]
    fn set_kernel_kinds(names: &str);
}

/// Reads one event as a writer hands it over, as a batch of one; with it,
/// the JS text it was read from, from which
/// [`out::stored`](crate::out::stored) builds the envelope handed back.
pub(crate) fn event(value: &JsValue) -> Result<(Vec<NewEvent>, JsValue), JsValue> {
    let text = event_text(value);
    let event = json::lines("event", INVALID_EVENT, &text, read_event)?;
    // As `json::one` refuses anything but one item; the one-event batch
    // the store appends is this vector itself.
    if event.len() != 1 {
        return Err(js_errors::invalid("event: not one item", INVALID_EVENT));
    }
    Ok((event, text))
}

/// Reads a batch of events, with the JS text they were read from; an error
/// says where in the batch it was.
pub(crate) fn events(value: &JsValue) -> Result<(Vec<NewEvent>, JsValue), JsValue> {
    let text = events_text(value);
    Ok((
        json::lines("events", INVALID_EVENT, &text, read_event)?,
        text,
    ))
}

/// Reads the envelopes a host store returned (or a log handed to
/// `parentOf`, `pinParkedChildren` or a fire machine), refusing anything
/// else with an `InputError` with `code`.
/// Fields an envelope does not have are ignored: a host store may keep its
/// own beside them.
pub(crate) fn envelopes(what: &str, code: &str, value: &JsValue) -> Result<Vec<Envelope>, JsValue> {
    json::lines(
        what,
        code,
        &envelopes_text(value, what, code),
        read_envelope,
    )
}

/// What a fold reads of a log (`locatePark`'s `events`, refused with
/// `INVALID_EVENT`), one `(kind, stamped)` per envelope (see
/// [`KindFacts`](loomfence_core::log::KindFacts)): each envelope checked as far
/// as its fields' types, and nothing else brought over, so folding a log a
/// host holds costs little more than reading its kinds.
pub(crate) fn fold_facts(value: &JsValue) -> Result<Vec<(String, bool)>, JsValue> {
    json::lines("events", INVALID_EVENT, &fold_text(value), |reader| {
        let stamped = reader.eat("1");
        if !stamped {
            reader.literal("0")?;
        }
        Ok((reader.read_string()?, stamped))
    })
}

/// What [`fold_facts`] reads of a log, as one code per envelope (see
/// `foldCodes` in `js/events.js`): an index into [`KERNEL_EVENT_KINDS`]
/// (as `b'A' + index`) for a kernel kind, `b'1'` or `b'0'` for any other
/// kind stamped or not. `None` when the log has a kind only the text path
/// reads (not a well-formed string): the caller then takes
/// [`fold_facts`]. Each envelope is checked as [`fold_facts`] checks it.
pub(crate) fn fold_codes(value: &JsValue) -> Result<Option<String>, JsValue> {
    static SENT: AtomicBool = AtomicBool::new(false);
    if !SENT.swap(true, Ordering::Relaxed) {
        let mut names = String::new();
        for name in KERNEL_EVENT_KINDS {
            if !names.is_empty() {
                names.push('\n');
            }
            names.push_str(name);
        }
        set_kernel_kinds(&names);
    }
    let answer = fold_codes_js(value);
    if answer.is_null() {
        return Ok(None);
    }
    answer.as_string().map(Some).ok_or(answer)
}

/// The fold's facts of one code [`fold_codes`] wrote: a kernel kind by
/// its name, any other kind as the empty kind (no kernel kind's name),
/// which the fold reads exactly as it would read the kind itself: by its
/// stamp alone. `None` for a byte no code is.
pub(crate) fn code_facts(code: u8) -> Option<KindFacts<'static>> {
    Some(match code {
        b'0' | b'1' => KindFacts {
            kind: "",
            stamped: code == b'1',
        },
        _ => KindFacts {
            kind: KERNEL_EVENT_KINDS.get(usize::from(code.checked_sub(b'A')?))?,
            stamped: false,
        },
    })
}

/// Reads one stored event, as [`envelopes`] reads each.
pub(crate) fn envelope(what: &str, code: &str, value: &JsValue) -> Result<Envelope, JsValue> {
    json::one(what, code, &envelope_text(value, what, code), read_envelope)
}

/// The code of every refused event.
const INVALID_EVENT: &str = "INVALID_EVENT";

/// An event as `js/events.js` writes it:
/// `{"kind":…,"payload":…,"metadata":…,"at":…}`.
fn read_event(reader: &mut Reader<'_>) -> Result<NewEvent, TextError> {
    reader.literal("{\"kind\":")?;
    let kind = reader.read_string()?;
    let (payload, metadata, at) = read_rest(reader)?;
    Ok(NewEvent {
        kind,
        payload,
        metadata,
        at,
    })
}

/// An envelope as `js/events.js` writes it: `{"executionId":…,
/// "sequence":…,"kind":…,"payload":…,"metadata":…,"at":…}`; its id checked
/// by the core.
fn read_envelope(reader: &mut Reader<'_>) -> Result<Envelope, TextError> {
    reader.literal("{\"executionId\":")?;
    let execution_id = ExecutionId::try_from(reader.read_string()?.as_str())?;
    reader.literal(",\"sequence\":")?;
    let sequence = u64::try_from(reader.read_integer()?).unwrap_or(u64::MAX);
    reader.literal(",\"kind\":")?;
    let kind = reader.read_string()?;
    let (payload, metadata, at) = read_rest(reader)?;
    Ok(Envelope {
        execution_id,
        sequence,
        kind,
        payload,
        metadata,
        at,
    })
}

/// `,"payload":…,"metadata":…,"at":…}`.
fn read_rest(reader: &mut Reader<'_>) -> Result<(JsonObject, JsonObject, i64), TextError> {
    reader.literal(",\"payload\":")?;
    let payload = reader.read_object()?;
    reader.literal(",\"metadata\":")?;
    let metadata = reader.read_object()?;
    reader.literal(",\"at\":")?;
    let at = reader.read_integer()?;
    reader.literal("}")?;
    Ok((payload, metadata, at))
}
