//! The inbox bindings under Node: how messages, keys, send answers and the
//! delivery machine's actions cross the boundary. The inbox's rules and the
//! deliveries are the JS suites' business (`tests/conformance-js/inbox-kit.js`,
//! `inbox.test.js`); these tests pin what only this crate decides.
#![cfg(target_arch = "wasm32")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use js_sys::{Promise, Reflect};
use loomfence_wasm::{DeliverMachineJs, MemoryTimerStore, RedrivePolicyJs};
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

/// `value` as JSON text, to compare.
fn json(value: &JsValue) -> String {
    js_sys::JSON::stringify(value).unwrap().into()
}

/// The name and code of a thrown error.
fn refusal(error: &JsValue) -> (String, String) {
    assert!(error.is_instance_of::<js_sys::Error>(), "a real Error");
    (
        get(error, "name").as_string().unwrap(),
        get(error, "code").as_string().unwrap(),
    )
}

const MESSAGE: &str =
    "{ executionId: 'e', channel: 'c', messageId: 'm', payload: { ok: true }, sentAt: 10 }";

#[wasm_bindgen_test]
async fn a_send_answers_plain_objects_and_lists_what_it_stored() {
    let store = MemoryTimerStore::new();
    let intent = "{ executionId: 'e', wakeAt: 20, redrive: { attempt: 0 } }";
    let first = settle(store.send(js(MESSAGE), js(intent))).await.unwrap();
    assert_eq!(json(&first), r#"{"duplicate":false,"arrival":1}"#);
    let again = settle(store.send(js(MESSAGE), js(intent))).await.unwrap();
    assert_eq!(json(&again), r#"{"duplicate":true,"arrival":1}"#);
    let listed = settle(store.pending(js("'e'"), js("['c']"), js("5")))
        .await
        .unwrap();
    assert_eq!(
        json(&listed),
        r#"[{"executionId":"e","channel":"c","messageId":"m","payload":{"ok":true},"sentAt":10,"arrival":1}]"#
    );
    let refused = settle(store.send(js("{ executionId: 'e' }"), js(intent)))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        ("TimerInputError".into(), "INVALID_MESSAGE".into())
    );
}

#[wasm_bindgen_test]
fn a_delivery_polls_plain_objects_and_refuses_an_answer_out_of_turn() {
    let policy = RedrivePolicyJs::new(JsValue::UNDEFINED).unwrap();
    let mut machine = DeliverMachineJs::notify(js(MESSAGE), js("1000"), &policy, false).unwrap();
    assert_eq!(json(&machine.poll().unwrap()), r#"{"act":"readLog"}"#);
    let error = machine.handle_marked().unwrap_err();
    assert_eq!(
        refusal(&error),
        ("TimerInputError".into(), "UNEXPECTED_ANSWER".into())
    );
    let error = machine.handle_log(js("[{ nonsense: 1 }]")).unwrap_err();
    assert_eq!(
        refusal(&error),
        ("TimerInputError".into(), "UNEXPECTED_ANSWER".into())
    );
    assert_eq!(
        json(&machine.poll().unwrap()),
        r#"{"act":"readLog"}"#,
        "unchanged"
    );
    machine.handle_log(js("[]")).unwrap();
    assert_eq!(
        json(&machine.poll().unwrap()),
        r#"{"done":{"outcome":"refused","answer":"noop","reason":"unknown"}}"#
    );
    assert!(machine.sent().is_null(), "nothing was sent");
}
