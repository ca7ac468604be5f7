//! How an inbox behaves: its options and their defaults.

use std::fmt;
use std::sync::Arc;

use loomfence_core::{inbox::DEFAULT_INTENT_DELAY_MS, redrive::RedrivePolicy};

use crate::clock::{Clock, Random, system_now, system_random};
use crate::features::Features;
use crate::resumed_hook::{OnResumed, no_body};

/// How the inbox behaves.
#[derive(Clone)]
pub struct InboxOptions {
    /// The time messages are stamped with, deliveries too, and intent rows
    /// are scheduled from.
    pub now: Clock,
    /// How long after a send its intent row comes due, in ms: long enough
    /// that the sender's own delivery is normally done, so the row only
    /// finds work when the sender died or was contended. A shorter delay
    /// delivers sooner after a crash, at the price of a re-read per
    /// message.
    pub intent_delay_ms: i64,
    /// Opt-in behaviour. With [`Features::redrive`] on, a contended
    /// delivery of a notify or a park writes a re-drive row due after the
    /// policy's short delay.
    pub features: Features,
    /// The schedule of that row's delay: the timer services' policy.
    pub policy: RedrivePolicy,
    /// A draw in `[0, 1)` for that row's jitter.
    pub random: Random,
    /// Receives each resume the inbox's re-driver lands (fired by a timer
    /// service, with no caller to answer it to): the host starts the body
    /// from it. A notify and a park answer their resumes to the caller
    /// instead, and never pass them here, so a body is started once.
    pub on_resumed: OnResumed,
}

impl Default for InboxOptions {
    fn default() -> Self {
        Self {
            now: Arc::new(system_now),
            intent_delay_ms: DEFAULT_INTENT_DELAY_MS,
            features: Features::none(),
            policy: RedrivePolicy::default(),
            random: system_random(),
            on_resumed: no_body(),
        }
    }
}

impl fmt::Debug for InboxOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboxOptions")
            .field("intent_delay_ms", &self.intent_delay_ms)
            .field("features", &self.features)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}
