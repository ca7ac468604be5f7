//! The re-drive schedule for JavaScript: `RedrivePolicy` (the full-jitter
//! schedule) and `redriveWakeAt`. The arithmetic is the core's; this
//! module reads the numbers in.

use js_sys::{Object, Reflect};
use loomfence_core::redrive::{Draw, RedrivePolicy, redrive_wake_at};
use wasm_bindgen::prelude::*;

use crate::js_errors::{self, number, show};
use crate::timer_values::{
    self as timer, INVALID_TIME, SAFE_U64, integer, property, refuse, small, whole,
};

/// The code of a policy the core cannot hold.
const INVALID_POLICY: &str = "INVALID_POLICY";

/// The retry schedule of contended wakes: `floor(random * min(capMs,
/// baseMs * 2^attempt))` ms for try `attempt`, `maxAttempts` retries.
#[wasm_bindgen(js_name = RedrivePolicy)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RedrivePolicyJs {
    /// The core's policy.
    inner: RedrivePolicy,
}

/// A random draw in `[0, 1)`, else `INVALID_DRAW`.
pub(crate) fn draw(value: &JsValue) -> Result<Draw, JsValue> {
    let Some(random) = value.as_f64() else {
        return Err(refuse(
            "random must be a number in [0, 1) (Math.random())",
            "INVALID_DRAW",
        ));
    };
    Draw::new(random).map_err(|_| {
        refuse(
            &format!("random must be a number in [0, 1), got {}", show(random)),
            "INVALID_DRAW",
        )
    })
}

/// A policy from `{ baseMs?, capMs?, maxAttempts? }` (each defaulted), or
/// from a `RedrivePolicy`, whose getters read the same. `undefined` is the
/// default policy. A plain object with another field is refused, so a
/// misspelt field is not silently defaulted; any other object must have
/// all three (as a `RedrivePolicy` does).
pub(crate) fn policy(value: &JsValue) -> Result<RedrivePolicy, JsValue> {
    let mut policy = RedrivePolicy::default();
    if value.is_undefined() {
        return Ok(policy);
    }
    let wrong = || {
        refuse(
            "policy must be a RedrivePolicy or a plain object { baseMs?, capMs?, maxAttempts? }",
            INVALID_POLICY,
        )
    };
    if !value.is_object() || crate::values::is_array(value) {
        return Err(wrong());
    }
    let fields = ["baseMs", "capMs", "maxAttempts"];
    // Read with its throw caught: a Proxy's `getPrototypeOf` trap may throw.
    let prototype = Reflect::get_prototype_of(value)
        .map_err(|thrown| js_errors::timer_unreadable("policy", thrown))?;
    let plain = prototype.is_null()
        || Reflect::get_prototype_of(&Object::new()).is_ok_and(|object| object == prototype);
    if plain {
        timer::object("policy", INVALID_POLICY, value, &fields)?;
    }
    let base = property(value, "baseMs")?;
    let cap = property(value, "capMs")?;
    let max = property(value, "maxAttempts")?;
    if !plain && [&base, &cap, &max].iter().any(|v| v.is_undefined()) {
        return Err(wrong());
    }
    if !base.is_undefined() {
        policy.base_ms = whole("policy.baseMs", INVALID_POLICY, &base, SAFE_U64)?;
    }
    if !cap.is_undefined() {
        policy.cap_ms = whole("policy.capMs", INVALID_POLICY, &cap, SAFE_U64)?;
    }
    if !max.is_undefined() {
        policy.max_attempts = small("policy.maxAttempts", INVALID_POLICY, &max)?;
    }
    Ok(policy)
}

/// An attempt argument.
fn attempt(value: &JsValue) -> Result<u32, JsValue> {
    small("attempt", "INVALID_ATTEMPT", value)
}

impl RedrivePolicyJs {
    /// The core's policy.
    pub(crate) fn policy(&self) -> RedrivePolicy {
        self.inner
    }
}

#[wasm_bindgen(js_class = RedrivePolicy)]
impl RedrivePolicyJs {
    /// The policy `init` describes, each field defaulting to the reference
    /// design's (200 ms, 30 000 ms, 8 retries).
    #[wasm_bindgen(constructor)]
    pub fn new(init: JsValue) -> Result<RedrivePolicyJs, JsValue> {
        Ok(Self {
            inner: policy(&init)?,
        })
    }

    /// The first try's ceiling, in ms.
    #[wasm_bindgen(getter, js_name = baseMs)]
    #[must_use]
    pub fn base_ms(&self) -> f64 {
        number(self.inner.base_ms)
    }

    /// The largest ceiling, in ms.
    #[wasm_bindgen(getter, js_name = capMs)]
    #[must_use]
    pub fn cap_ms(&self) -> f64 {
        number(self.inner.cap_ms)
    }

    /// How many retries a chain makes before it gives up.
    #[wasm_bindgen(getter, js_name = maxAttempts)]
    #[must_use]
    pub fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }

    /// `min(capMs, baseMs * 2^attempt)`.
    #[wasm_bindgen(js_name = ceilingMs)]
    pub fn ceiling_ms(&self, attempt_: JsValue) -> Result<f64, JsValue> {
        Ok(number(self.inner.ceiling_ms(attempt(&attempt_)?)))
    }

    /// Try `attempt`'s full-jitter delay for the draw `random` in `[0, 1)`:
    /// in `[0, ceilingMs(attempt))`, or 0 when that ceiling is 0.
    #[wasm_bindgen(js_name = delayMs)]
    pub fn delay_ms(&self, attempt_: JsValue, random: JsValue) -> Result<f64, JsValue> {
        let attempt = attempt(&attempt_)?;
        Ok(number(self.inner.delay_ms(attempt, draw(&random)?)))
    }
}

/// When a re-drive row's next try is due: `max(now + delayMs, firedWakeAt
/// + 1)`, or `undefined` when no storable time (`0..=2^53-1`) follows.
#[wasm_bindgen(js_name = redriveWakeAt)]
pub fn redrive_wake_at_js(
    now: JsValue,
    delay_ms: JsValue,
    fired_wake_at: JsValue,
) -> Result<JsValue, JsValue> {
    let now = integer("now", INVALID_TIME, &now)?;
    let delay = whole("delayMs", "INVALID_DELAY", &delay_ms, SAFE_U64)?;
    let fired = integer("firedWakeAt", INVALID_TIME, &fired_wake_at)?;
    Ok(
        redrive_wake_at(now, delay, fired).map_or(JsValue::UNDEFINED, |at| {
            #[allow(clippy::cast_precision_loss)]
            JsValue::from_f64(at as f64)
        }),
    )
}
