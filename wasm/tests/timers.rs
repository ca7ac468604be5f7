//! The timer bindings under Node: how timer values and errors cross the
//! boundary. The store rules and the decision table are the JS suites'
//! business (`tests/conformance-js/timer-kit.js`, `timers.test.js`); these
//! tests pin what only this crate decides.
#![cfg(target_arch = "wasm32")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use js_sys::{Array, Object, Promise, Reflect};
use loomfence_wasm::{FireMachineJs, MemoryTimerStore, RedrivePolicyJs, WakeBackoffJs};
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

#[wasm_bindgen_test]
async fn rows_and_claims_leave_as_plain_objects_with_number_times() {
    let store = MemoryTimerStore::new();
    settle(store.schedule(js("{ executionId: 'a', wakeAt: 2 ** 53 - 1 }")))
        .await
        .unwrap();
    settle(store.schedule(js(
        "{ executionId: 'b', wakeAt: 0, redrive: { attempt: 3 } }",
    )))
    .await
    .unwrap();
    let rows = settle(store.due(js("2 ** 53 - 1"), js("10"), JsValue::UNDEFINED))
        .await
        .unwrap();
    assert!(Array::is_array(&rows));
    assert_eq!(
        json(&rows),
        r#"[{"executionId":"b","wakeAt":0,"redrive":{"attempt":3}},{"executionId":"a","wakeAt":9007199254740991}]"#
    );
    let first = Array::from(&rows).get(1);
    assert_eq!(
        Object::get_prototype_of(&first),
        Object::get_prototype_of(&Object::new())
    );
    assert!(
        !Reflect::has(&first, &"redrive".into()).unwrap(),
        "a plain wake has no redrive key"
    );
    let claims = settle(store.claim_due(
        js("{ holder: 'n', now: 5, durationMs: 10 }"),
        js("1"),
        js("{ redrive: true }"),
    ))
    .await
    .unwrap();
    assert_eq!(
        json(&claims),
        r#"[{"row":{"executionId":"b","wakeAt":0,"redrive":{"attempt":3}},"holder":"n","number":1,"expiresAt":15}]"#
    );
    let claim = Array::from(&claims).get(0);
    assert_eq!(
        settle(store.complete(claim.clone()))
            .await
            .unwrap()
            .as_string()
            .as_deref(),
        Some("done")
    );
    assert_eq!(
        settle(store.release(claim))
            .await
            .unwrap()
            .as_string()
            .as_deref(),
        Some("notHeld")
    );
}

#[wasm_bindgen_test]
async fn numbers_that_are_not_safe_integers_are_timer_input_errors() {
    let store = MemoryTimerStore::new();
    for (row, code) in [
        ("{ executionId: 'a', wakeAt: 2 ** 53 }", "INVALID_TIME"),
        ("{ executionId: 'a', wakeAt: 1.5 }", "INVALID_TIME"),
        ("{ executionId: 'a', wakeAt: 1n }", "INVALID_TIME"),
        ("{ executionId: 'a', wakeAt: -1 }", "INVALID_TIME"),
        (
            "{ executionId: 'a', wakeAt: 1, redrive: { attempt: 2 ** 32 } }",
            "INVALID_ATTEMPT",
        ),
        ("{ executionId: 'a', wakeAt: 1, when: 2 }", "INVALID_ROW"),
    ] {
        let error = settle(store.schedule(js(row))).await.unwrap_err();
        assert_eq!(
            refusal(&error),
            ("TimerInputError".into(), code.into()),
            "{row}"
        );
    }
    let rows = settle(store.due(js("2 ** 53 - 1"), js("10"), JsValue::UNDEFINED))
        .await
        .unwrap();
    assert_eq!(json(&rows), "[]");
}

#[wasm_bindgen_test]
fn a_policy_reads_its_fields_and_refuses_a_bad_draw() {
    let policy = RedrivePolicyJs::new(js("{ baseMs: 100, capMs: 1000 }")).unwrap();
    assert_eq!(
        (policy.base_ms(), policy.cap_ms(), policy.max_attempts()),
        (100.0, 1000.0, 8)
    );
    assert_eq!(policy.delay_ms(js("3"), js("0.5")).unwrap(), 400.0);
    let error = policy.delay_ms(js("0"), js("1")).unwrap_err();
    assert_eq!(
        refusal(&error),
        ("TimerInputError".into(), "INVALID_DRAW".into())
    );
    let backoff = WakeBackoffJs::new(JsValue::UNDEFINED).unwrap();
    assert_eq!((backoff.len(), backoff.bound()), (0, 1024));
}

#[wasm_bindgen_test]
fn a_fire_polls_plain_objects_and_refuses_an_answer_out_of_turn() {
    let mut fire = FireMachineJs::new(
        js("{ executionId: 'f', wakeAt: 10 }"),
        js("{ now: 10, random: 0 }"),
    )
    .unwrap();
    assert_eq!(json(&fire.poll().unwrap()), r#"{"act":"readLog"}"#);
    let error = fire.handle_completed().unwrap_err();
    assert_eq!(
        refusal(&error),
        ("TimerInputError".into(), "UNEXPECTED_ANSWER".into())
    );
    fire.handle_read(js("[]")).unwrap();
    assert_eq!(
        json(&fire.poll().unwrap()),
        r#"{"act":"complete","row":{"executionId":"f","wakeAt":10}}"#
    );
    fire.handle_completed().unwrap();
    assert_eq!(
        json(&fire.poll().unwrap()),
        r#"{"done":{"outcome":"obsolete","retired":true}}"#
    );
}
