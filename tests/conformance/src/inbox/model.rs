//! The store against the core's [`InboxTable`] (and, for the intent rows,
//! its [`TimerTable`]), call for call: a thousand seeded random sends,
//! resends, marks, purges and listings, every answer compared.
//!
//! Arrival numbers are the store's to hand out (a sequence, a rowid), so
//! the comparison maps each of the model's numbers to the store's as the
//! messages are stored, and holds the store to the same order: every
//! stored message gets a number above all the store handed out before,
//! and every listing, mapped, is the model's.

use std::collections::BTreeMap;

use loomfence_core::ExecutionId;
use loomfence_core::inbox::{
    DEFAULT_INTENT_DELAY_MS, InboxEntry, InboxTable, Message, MessageKey, Sent, StoredMessage,
};
use loomfence_core::timer::TimerTable;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;

use super::Inbox;
use super::support::{T0, timer_rows};
use crate::support::id;

/// Calls per run.
const STEPS: usize = 1_000;

/// The run's seed: `SIM_SEED` if set, else a fixed one; printed so a
/// failure can be replayed.
fn seed() -> u64 {
    let seed = std::env::var("SIM_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x1_4B0C);
    println!("SIM_SEED={seed}");
    seed
}

/// The call generator: a seeded `StdRng` and the few draws the calls need.
struct Rng(StdRng);

impl Rng {
    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }

    /// An index into a list of `len`.
    fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    /// One of `items`.
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.index(items.len())]
    }
}

/// The executions, channels and ids the calls draw from: few, so keys
/// repeat (duplicates) and listings meet marked and purged messages.
const EXECUTIONS: [&str; 3] = ["a", "b", "é"];
/// See [`EXECUTIONS`].
const CHANNELS: [&str; 3] = ["x", "y", "z z"];
/// See [`EXECUTIONS`].
const IDS: [&str; 4] = ["1", "2", "3", "4"];

/// The model's arrival numbers, mapped to the store's.
#[derive(Default)]
struct Arrivals {
    /// Model number to store number.
    map: BTreeMap<u64, u64>,
    /// The highest number the store handed out.
    last: u64,
}

impl Arrivals {
    /// Records a message stored by both: the store's number must be above
    /// every one it handed out before.
    fn stored(&mut self, step: usize, model: u64, store: u64) {
        assert!(
            store > self.last,
            "step {step}: arrival {store} is not above {}",
            self.last
        );
        self.last = store;
        self.map.insert(model, store);
    }

    /// The store's number for the model's `arrival`.
    fn of(&self, step: usize, arrival: u64) -> u64 {
        *self
            .map
            .get(&arrival)
            .unwrap_or_else(|| panic!("step {step}: the model's arrival {arrival} is unmapped"))
    }

    /// A model listing in the store's numbers.
    fn listing(&self, step: usize, listing: Vec<StoredMessage>) -> Vec<StoredMessage> {
        listing
            .into_iter()
            .map(|stored| StoredMessage {
                arrival: self.of(step, stored.arrival),
                ..stored
            })
            .collect()
    }

    /// A model inspection in the store's numbers.
    fn entries(&self, step: usize, entries: Vec<InboxEntry>) -> Vec<InboxEntry> {
        entries
            .into_iter()
            .map(|entry| InboxEntry {
                message: StoredMessage {
                    arrival: self.of(step, entry.message.arrival),
                    ..entry.message
                },
                ..entry
            })
            .collect()
    }
}

/// A random key from the small space.
fn key(rng: &mut Rng) -> MessageKey {
    MessageKey::new(
        id(rng.pick(&EXECUTIONS)),
        rng.pick(&CHANNELS),
        rng.pick(&IDS),
    )
    .expect("a valid key")
}

/// Runs `STEPS` seeded random calls on `store` and on an
/// [`InboxTable`], comparing every answer, then every execution's
/// messages and every intent row.
pub async fn agrees_with_the_reference_table_call_for_call(store: Inbox) {
    let mut inbox = InboxTable::new();
    let mut timers = TimerTable::new();
    let mut arrivals = Arrivals::default();
    let mut rng = Rng(StdRng::seed_from_u64(seed()));
    for step in 0..STEPS {
        match rng.below(10) {
            0..=3 => {
                let message = Message {
                    key: key(&mut rng),
                    payload: json!({"step": step, "tag": rng.pick(&IDS)}),
                    sent_at: T0 + i64::try_from(rng.below(5)).unwrap_or(0) * 1_000,
                };
                let intent = message
                    .intent(DEFAULT_INTENT_DELAY_MS)
                    .expect("an intent in range");
                let expected = inbox.send(&message).expect("a valid message");
                let got = store.send(&message, &intent).await.expect("sends");
                match (expected, got) {
                    (Sent::Stored { arrival: model }, Sent::Stored { arrival }) => {
                        arrivals.stored(step, model, arrival);
                        timers.schedule(&intent).expect("a valid row");
                    }
                    (Sent::Duplicate { arrival: model }, Sent::Duplicate { arrival }) => {
                        assert_eq!(arrival, arrivals.of(step, model), "step {step}");
                    }
                    (expected, got) => {
                        panic!(
                            "step {step}: send {:?}: {got:?}, not {expected:?}",
                            message.key
                        )
                    }
                }
            }
            4 | 5 => {
                let execution = id(rng.pick(&EXECUTIONS));
                let mut names = Vec::new();
                for _ in 0..=rng.below(3) {
                    names.push(rng.pick(&["x", "y", "z z", "w"]).to_owned());
                }
                let limit = 1 + rng.index(4);
                let expected = inbox
                    .pending(&execution, &names, limit)
                    .expect("a valid listing");
                let got = store
                    .pending(&execution, &names, limit)
                    .await
                    .expect("lists");
                assert_eq!(
                    got,
                    arrivals.listing(step, expected),
                    "step {step}: pending({execution:?}, {names:?}, {limit})"
                );
            }
            6 | 7 => {
                let key = key(&mut rng);
                let expected = inbox.mark_consumed(&key).expect("a valid key");
                let got = store.mark_consumed(&key).await.expect("marks");
                assert_eq!(got, expected, "step {step}: mark_consumed({key:?})");
            }
            8 => {
                let execution = id(rng.pick(&EXECUTIONS));
                compare_messages(&store, &inbox, &arrivals, step, &execution).await;
            }
            _ => {
                // Purges are rarer than the rest, so the inbox fills.
                if rng.below(3) == 0 {
                    let execution = id(rng.pick(&EXECUTIONS));
                    let expected = inbox.purge(&execution) as u64;
                    let got = store.purge(&execution).await.expect("purges");
                    assert_eq!(got, expected, "step {step}: purge({execution:?})");
                }
            }
        }
    }
    for execution in EXECUTIONS {
        compare_messages(&store, &inbox, &arrivals, STEPS, &id(execution)).await;
    }
    assert_eq!(timer_rows(&store).await, timers.rows(), "the intent rows");
    assert!(
        arrivals.map.len() > EXECUTIONS.len() * CHANNELS.len() * IDS.len(),
        "some keys were stored again after a purge: {} stored",
        arrivals.map.len()
    );
}

/// Compares one execution's messages.
async fn compare_messages(
    store: &Inbox,
    inbox: &InboxTable,
    arrivals: &Arrivals,
    step: usize,
    execution: &ExecutionId,
) {
    let expected = arrivals.entries(step, inbox.messages(execution));
    let got = store.messages(execution).await.expect("inspects");
    assert_eq!(got, expected, "step {step}: messages({execution:?})");
}
