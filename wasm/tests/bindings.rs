//! The binding layer itself, under Node (`wasm-bindgen-test-runner`): how
//! values and errors cross the boundary. The store semantics are the
//! conformance kit's business (`tests/conformance-js`); these tests pin
//! what only this crate decides. `resume` is JavaScript over the bound
//! machine (`npm/resume.js`), so its tests are the JS suite's
//! (`resume-paths`, `store-contract`, `concurrency`, `errors`).
#![cfg(target_arch = "wasm32")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use js_sys::{Object, Promise, Reflect};
use loomfence_wasm::{MemoryEventStore, is_answering_kind, kernel_event_kinds, locate_park_js};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

/// Parses a JS literal (test data only).
fn js(source: &str) -> JsValue {
    js_sys::eval(&format!("({source})")).expect("a valid JS literal")
}

/// A property of `value`.
fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap()
}

/// Awaits a promise the bindings returned.
async fn settle(promise: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(promise).await
}

/// The error a promise rejected with.
async fn rejection(promise: Promise) -> JsValue {
    settle(promise).await.expect_err("the promise rejects")
}

/// The store's log of `id`, as JSON text, to compare before and after.
async fn log(store: &MemoryEventStore, id: &str) -> String {
    let events = settle(store.read_range(id.into(), JsValue::UNDEFINED, JsValue::UNDEFINED))
        .await
        .unwrap();
    js_sys::JSON::stringify(&events).unwrap().into()
}

#[wasm_bindgen_test]
async fn envelopes_come_back_as_plain_objects_with_number_sequences() {
    let store = MemoryEventStore::new();
    let stored = settle(store.append(
        "a".into(),
        js("{ kind: 'EXECUTION_STARTED', payload: { n: 1.5, s: 'x' }, at: 7 }"),
    ))
    .await
    .unwrap();
    assert_eq!(get(&stored, "sequence").as_f64(), Some(1.0));
    assert_eq!(
        get(&stored, "executionId").as_string().as_deref(),
        Some("a")
    );
    let payload = get(&stored, "payload");
    // A plain object, not a Map.
    assert_eq!(
        Object::get_prototype_of(&payload),
        Object::get_prototype_of(&Object::new())
    );
    assert_eq!(get(&payload, "n").as_f64(), Some(1.5));
}

#[wasm_bindgen_test]
async fn json_payloads_round_trip_exactly() {
    let store = MemoryEventStore::new();
    let payload = "{ a: [1, 1.5, -2, 's', true, null, { b: {} }], max: 2 ** 53 - 1, \
                   min: -(2 ** 53 - 1), big: 1e300, tiny: 5e-324, neg0: -0, unicode: 'é\\u{1F600}' }";
    let stored = settle(store.append(
        "j".into(),
        js(&format!("{{ kind: 'X', payload: {payload}, at: 1 }}")),
    ))
    .await
    .unwrap();
    let expected = js_sys::JSON::stringify(&js(payload)).unwrap();
    let got = js_sys::JSON::stringify(&get(&stored, "payload")).unwrap();
    // The append answers the event as it was written, in the writer's key
    // order (built from the very text the store parsed).
    assert_eq!(got, expected);
    // A read answers the store's order: the core's JSON objects are sorted.
    let sorted = js(&format!(
        "(() => {{ const o = JSON.parse({}); return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a < b ? -1 : 1)); }})()",
        js_sys::JSON::stringify(&expected)
            .unwrap()
            .as_string()
            .unwrap()
    ));
    let read: js_sys::Array =
        settle(store.read_range("j".into(), JsValue::UNDEFINED, JsValue::UNDEFINED))
            .await
            .unwrap()
            .into();
    assert_eq!(
        js_sys::JSON::stringify(&get(&read.get(0), "payload")).unwrap(),
        js_sys::JSON::stringify(&sorted).unwrap()
    );
    // An undefined member is dropped, as JSON.stringify drops it.
    let dropped = settle(store.append(
        "j".into(),
        js("{ kind: 'X', payload: { a: undefined, b: 1 }, at: 1 }"),
    ))
    .await
    .unwrap();
    assert_eq!(
        js_sys::JSON::stringify(&get(&dropped, "payload")).unwrap(),
        "{\"b\":1}"
    );
}

#[wasm_bindgen_test]
async fn bad_numbers_are_range_or_type_errors_and_change_nothing() {
    let store = MemoryEventStore::new();
    settle(store.append("a".into(), js("{ kind: 'EXECUTION_SUSPENDED', at: 1 }")))
        .await
        .unwrap();
    let before = log(&store, "a").await;
    for (expect, bad) in [
        (js("{ fence: -1, parkSeq: 1 }"), "RangeError"),
        (js("{ fence: 0.5, parkSeq: 1 }"), "RangeError"),
        (js("{ fence: 2 ** 53, parkSeq: 1 }"), "RangeError"),
        (js("{ fence: NaN, parkSeq: 1 }"), "RangeError"),
        (js("{ fence: '0', parkSeq: 1 }"), "TypeError"),
        (js("{ fence: 0 }"), "TypeError"),
        (js("{ fence: 0, parkSeq: 1n }"), "TypeError"),
    ] {
        let error = rejection(store.acquire_fence_if("a".into(), expect)).await;
        assert_eq!(get(&error, "name").as_string().as_deref(), Some(bad));
        assert!(error.is_instance_of::<js_sys::Error>());
    }
    let error = rejection(store.read_range("a".into(), js("-1"), JsValue::UNDEFINED)).await;
    assert!(error.is_instance_of::<js_sys::RangeError>());
    let error = rejection(store.read_range("a".into(), js("'1'"), JsValue::UNDEFINED)).await;
    assert!(error.is_instance_of::<js_sys::TypeError>());
    let error = rejection(store.append(
        "a".into(),
        js("{ kind: 'EXECUTION_RESUMED', metadata: { fence: -3 }, at: 1 }"),
    ))
    .await;
    assert!(error.is_instance_of::<js_sys::RangeError>());
    assert_eq!(
        get(&error, "code").as_string().as_deref(),
        Some("BAD_FENCE")
    );
    assert_eq!(log(&store, "a").await, before);
    assert_eq!(
        settle(store.current_fence("a".into()))
            .await
            .unwrap()
            .as_f64(),
        Some(0.0)
    );
}

#[wasm_bindgen_test]
async fn malformed_ids_and_events_are_input_errors() {
    let store = MemoryEventStore::new();
    for (id, event, code) in [
        (
            JsValue::from_str(""),
            js("{ kind: 'X', at: 1 }"),
            "INVALID_ID",
        ),
        (
            JsValue::from_str("a\u{0}b"),
            js("{ kind: 'X', at: 1 }"),
            "INVALID_ID",
        ),
        (
            JsValue::from_str("a"),
            js("{ kind: 'X', at: 1, extra: 1 }"),
            "INVALID_EVENT",
        ),
        (JsValue::from_str("a"), js("{ kind: 'X' }"), "INVALID_EVENT"),
        (
            JsValue::from_str("a"),
            js("{ kind: '', at: 1 }"),
            "INVALID_EVENT",
        ),
        (
            JsValue::from_str("a"),
            js("{ kind: 'X\\u0000', at: 1 }"),
            "INVALID_EVENT",
        ),
    ] {
        let error = rejection(store.append(id, event)).await;
        assert_eq!(
            get(&error, "name").as_string().as_deref(),
            Some("InputError")
        );
        assert!(error.is_instance_of::<js_sys::TypeError>());
        assert_eq!(get(&error, "code").as_string().as_deref(), Some(code));
    }
    let error = rejection(store.append(JsValue::from_f64(1.0), js("{ kind: 'X', at: 1 }"))).await;
    assert_eq!(
        get(&error, "code").as_string().as_deref(),
        Some("NOT_A_STRING")
    );
    let error = rejection(store.append_many("a".into(), js("[{ kind: 'X', at: 1 }, 5]"))).await;
    let message = get(&error, "message").as_string().unwrap();
    assert!(message.starts_with("events[1]: "), "{message}");
    assert_eq!(log(&store, "a").await, "[]");
}

#[wasm_bindgen_test]
async fn a_stale_append_is_a_stale_fence_error_with_its_tokens() {
    let store = MemoryEventStore::new();
    settle(store.acquire_fence("a".into())).await.unwrap();
    settle(store.acquire_fence("a".into())).await.unwrap();
    let error = rejection(store.append(
        "a".into(),
        js("{ kind: 'STEP_COMPLETED', metadata: { fence: 1 }, at: 1 }"),
    ))
    .await;
    assert!(error.is_instance_of::<js_sys::Error>());
    assert_eq!(
        get(&error, "name").as_string().as_deref(),
        Some("StaleFenceError")
    );
    assert_eq!(get(&error, "presented").as_f64(), Some(1.0));
    assert_eq!(get(&error, "current").as_f64(), Some(2.0));
    assert_eq!(get(&error, "executionId").as_string().as_deref(), Some("a"));
    assert!(
        get(&error, "stack")
            .as_string()
            .is_some_and(|s| !s.is_empty())
    );
}

#[wasm_bindgen_test]
fn kinds_and_parks_follow_the_core() {
    assert_eq!(kernel_event_kinds().len(), 15);
    assert!(is_answering_kind(js("{ kind: 'EXECUTION_RESUMED' }")).unwrap());
    assert!(!is_answering_kind(js("{ kind: 'EXECUTION_DENIED' }")).unwrap());
    assert!(is_answering_kind(js("{ kind: 'NEW_KIND', metadata: { kernel: true } }")).unwrap());
    assert!(!is_answering_kind(js("{ kind: 'NEW_KIND', metadata: { kernel: 'true' } }")).unwrap());
    let park = locate_park_js(js(
        "[{ executionId: 'a', sequence: 1, kind: 'EXECUTION_SUSPENDED', payload: {}, metadata: {}, at: 1 },
          { executionId: 'a', sequence: 2, kind: 'EXECUTION_DENIED', payload: {}, metadata: {}, at: 2 }]",
    ))
    .unwrap();
    assert_eq!(get(&park, "sequence").as_f64(), Some(1.0));
    let none = locate_park_js(js("[]")).unwrap();
    assert!(none.is_undefined());
    let error = locate_park_js(js("[{ sequence: 1 }]")).unwrap_err();
    assert_eq!(
        get(&error, "code").as_string().as_deref(),
        Some("INVALID_EVENT")
    );
}
