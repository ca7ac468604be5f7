//! The policy's schedule, the draw, the re-drive wake time and the bounded
//! backoff map.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::num::NonZeroUsize;

use serde_json::json;

use super::*;
use crate::event::MAX_SAFE_INTEGER;
use crate::wake_backoff::{DEFAULT_BACKOFF_BOUND, WakeBackoff};

/// The seed of the property loops: `SIM_SEED` if set, else a fixed one, so
/// a plain `cargo test` is deterministic. Printed, so a run can be replayed.
#[allow(clippy::print_stdout, reason = "the seed is printed to replay a run")]
fn seed() -> u64 {
    let seed = std::env::var("SIM_SEED").map_or(0x5EED_0118, |text| {
        text.trim().parse().expect("SIM_SEED must be a u64")
    });
    println!("SIM_SEED={seed}");
    seed
}

/// splitmix64: a small, well-mixed generator for seeded draws.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in [0, 1): 53 random bits.
    fn draw(&mut self) -> Draw {
        #[allow(clippy::cast_precision_loss, reason = "53 bits are exact in an f64")]
        let value = (self.next_u64() >> 11) as f64 / (1_u64 << 53) as f64;
        Draw::new(value).expect("in [0, 1)")
    }
}

/// The largest f64 below 1.
fn below_one() -> Draw {
    Draw::new(f64::from_bits(1.0_f64.to_bits() - 1)).expect("below 1")
}

/// `min(cap, base * 2^attempt)` in exact arithmetic, saturated to u64.
fn model_ceiling(policy: &RedrivePolicy, attempt: u32) -> u64 {
    if policy.base_ms == 0 {
        return 0;
    }
    let grown = if attempt >= 128 {
        u128::MAX
    } else {
        u128::from(policy.base_ms).saturating_mul(1_u128 << attempt)
    };
    u64::try_from(grown.min(u128::from(policy.cap_ms))).expect("capped by a u64")
}

#[test]
fn the_defaults_are_the_reference_designs() {
    let policy = RedrivePolicy::default();
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.max_attempts),
        (200, 30_000, 8)
    );
    let ceilings: Vec<u64> = (0..=8).map(|n| policy.ceiling_ms(n)).collect();
    assert_eq!(
        ceilings,
        [200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000]
    );
    assert_eq!(policy.ceiling_ms(u32::MAX), 30_000);
}

#[test]
fn the_delay_stays_below_its_ceiling_for_every_attempt_and_draw() {
    let seed = seed();
    let mut rng = Rng(seed);
    let policies = [
        RedrivePolicy::default(),
        RedrivePolicy {
            base_ms: 1,
            cap_ms: u64::MAX,
            max_attempts: 8,
        },
        RedrivePolicy {
            base_ms: u64::MAX,
            cap_ms: u64::MAX,
            max_attempts: 8,
        },
        // Ceilings above 2^53 that an f64 cannot hold exactly.
        RedrivePolicy {
            base_ms: 3,
            cap_ms: (1 << 60) + 1,
            max_attempts: 8,
        },
        // 2^53 + 3 is held as 2^53 + 4: a ceiling an f64 rounds up.
        RedrivePolicy {
            base_ms: u64::MAX,
            cap_ms: (1 << 53) + 3,
            max_attempts: 8,
        },
        RedrivePolicy {
            base_ms: 200,
            cap_ms: 0,
            max_attempts: 8,
        },
        RedrivePolicy {
            base_ms: 0,
            cap_ms: 30_000,
            max_attempts: 8,
        },
        RedrivePolicy {
            base_ms: 1,
            cap_ms: 1,
            max_attempts: 8,
        },
    ];
    let attempts = (0..=64).chain([65, 100, 1_000, u32::MAX - 1, u32::MAX]);
    for attempt in attempts {
        for policy in &policies {
            let ceiling = policy.ceiling_ms(attempt);
            assert_eq!(
                ceiling,
                model_ceiling(policy, attempt),
                "{policy:?} attempt {attempt}"
            );
            let fixed = [Draw::ZERO, Draw::new(0.5).expect("valid"), below_one()];
            let seeded = (0..64).map(|_| rng.draw());
            for draw in fixed.into_iter().chain(seeded) {
                let delay = policy.delay_ms(attempt, draw);
                if ceiling == 0 {
                    assert_eq!(delay, 0, "SIM_SEED={seed} {policy:?} attempt {attempt}");
                } else {
                    assert!(
                        delay < ceiling,
                        "SIM_SEED={seed} {policy:?} attempt {attempt} draw {draw:?}: {delay} >= {ceiling}"
                    );
                }
            }
            assert_eq!(policy.delay_ms(attempt, Draw::ZERO), 0);
        }
    }
}

#[test]
fn the_delay_is_the_floor_of_the_scaled_draw() {
    let policy = RedrivePolicy::default();
    let half = Draw::new(0.5).expect("valid");
    assert_eq!(policy.delay_ms(0, half), 100);
    assert_eq!(policy.delay_ms(3, half), 800);
    assert_eq!(policy.delay_ms(20, half), 15_000);
    assert_eq!(
        policy.delay_ms(0, Draw::new(0.999).expect("valid")),
        199,
        "floor(199.8)"
    );
    assert_eq!(policy.delay_ms(u32::MAX, below_one()), 29_999);
    // A ceiling an f64 rounds up still gives a delay below it.
    let inexact = RedrivePolicy {
        base_ms: (1 << 53) + 3,
        cap_ms: u64::MAX,
        max_attempts: 8,
    };
    assert_eq!(inexact.delay_ms(0, below_one()), (1 << 53) + 2);
}

#[test]
fn a_draw_must_be_in_zero_to_one() {
    assert_eq!(Draw::new(f64::NAN), Err(InputError::DrawNaN));
    assert_eq!(
        Draw::new(-0.25),
        Err(InputError::DrawNegative { value: -0.25 })
    );
    assert_eq!(
        Draw::new(f64::NEG_INFINITY),
        Err(InputError::DrawNegative {
            value: f64::NEG_INFINITY
        })
    );
    assert_eq!(
        Draw::new(1.0),
        Err(InputError::DrawNotBelowOne { value: 1.0 })
    );
    assert_eq!(
        Draw::new(f64::INFINITY),
        Err(InputError::DrawNotBelowOne {
            value: f64::INFINITY
        })
    );
    assert_eq!(Draw::new(0.0), Ok(Draw::ZERO));
    assert!(below_one().get() < 1.0);
    let negative_zero = Draw::new(-0.0).expect("-0 is 0");
    assert_eq!(negative_zero, Draw::ZERO);
    assert!(negative_zero.get().is_sign_positive());
    let hasher = BuildHasherDefault::<DefaultHasher>::default();
    assert_eq!(hasher.hash_one(negative_zero), hasher.hash_one(Draw::ZERO));
    // The message does not print the draw: no float formatting is linked.
    assert_eq!(
        InputError::DrawNegative { value: -0.25 }.to_string(),
        "a random draw must be in [0, 1), got a negative number"
    );
}

#[test]
fn the_next_row_follows_the_fired_one() {
    // A zero draw at wake_at == now would give the fired row's own key:
    // the next row is one ms later.
    assert_eq!(redrive_wake_at(5_000, 0, 5_000), Some(5_001));
    // A fired row due long ago: the delay decides.
    assert_eq!(redrive_wake_at(9_000, 700, 5_000), Some(9_700));
    // A delay shorter than the lateness of `now`: still after the fired row.
    assert_eq!(redrive_wake_at(5_000, 0, 4_000), Some(5_000));
}

#[test]
fn the_next_wake_saturates_and_never_repeats_the_fired_key() {
    assert_eq!(MAX_TIMER_MS, i64::try_from(MAX_SAFE_INTEGER).expect("fits"));
    assert_eq!(redrive_wake_at(0, u64::MAX, 0), Some(MAX_TIMER_MS));
    assert_eq!(
        redrive_wake_at(MAX_TIMER_MS - 1, u64::MAX, MAX_TIMER_MS - 1),
        Some(MAX_TIMER_MS)
    );
    // Nothing storable follows the latest time.
    assert_eq!(redrive_wake_at(MAX_TIMER_MS, 0, MAX_TIMER_MS), None);
    assert_eq!(redrive_wake_at(i64::MAX, u64::MAX, i64::MAX), None);
    assert_eq!(redrive_wake_at(i64::MIN, 0, i64::MIN), None);
}

#[test]
fn the_policy_reads_and_writes_camel_case_with_defaults() {
    let policy: RedrivePolicy =
        serde_json::from_value(json!({ "capMs": 10_000 })).expect("partial policy");
    assert_eq!(
        policy,
        RedrivePolicy {
            cap_ms: 10_000,
            ..RedrivePolicy::default()
        }
    );
    assert_eq!(
        serde_json::to_value(RedrivePolicy::default()).expect("serialises"),
        json!({ "baseMs": 200, "capMs": 30_000, "maxAttempts": 8 })
    );
    assert!(serde_json::from_value::<RedrivePolicy>(json!({ "jitter": true })).is_err());
}

fn exec(n: usize) -> ExecutionId {
    ExecutionId::new(format!("e{n:05}")).expect("valid")
}

fn entry(next_try_at: i64) -> BackoffEntry {
    BackoffEntry {
        wake_at: 0,
        attempt: 0,
        next_try_at,
    }
}

#[test]
fn the_default_bound_is_1024() {
    let map = WakeBackoff::default();
    assert_eq!(map.bound(), DEFAULT_BACKOFF_BOUND);
    assert_eq!(DEFAULT_BACKOFF_BOUND, 1_024);
    assert!(map.is_empty());
}

#[test]
fn the_map_never_exceeds_its_bound_and_evicts_the_earliest_next_try() {
    let seed = seed();
    let mut rng = Rng(seed ^ 0xBAC0);
    for bound in [1_usize, 2, 7, 64, DEFAULT_BACKOFF_BOUND] {
        let mut map = WakeBackoff::with_bound(NonZeroUsize::new(bound).expect("non-zero"));
        // The model: every entry the map should hold.
        let mut model: BTreeMap<ExecutionId, i64> = BTreeMap::new();
        for n in 0..bound * 10 {
            // A fresh execution most of the time; sometimes one seen before,
            // which replaces its entry without evicting.
            let id = if n > 0 && rng.next_u64().is_multiple_of(4) {
                exec(usize::try_from(rng.next_u64() % n as u64).expect("fits"))
            } else {
                exec(n)
            };
            let at = i64::try_from(rng.next_u64() % 1_000).expect("fits");
            let expected_victim = if !model.contains_key(&id) && model.len() == bound {
                model
                    .iter()
                    .map(|(other, at)| (*at, other.clone()))
                    .min()
                    .map(|(_, other)| other)
            } else {
                None
            };
            let evicted = map.record(id.clone(), entry(at));
            assert_eq!(
                evicted.as_ref().map(|(victim, _)| victim.clone()),
                expected_victim,
                "SIM_SEED={seed} bound {bound} insert {n}"
            );
            if let Some((victim, old)) = evicted {
                assert_eq!(model.remove(&victim), Some(old.next_try_at));
            }
            model.insert(id.clone(), at);
            assert!(map.len() <= bound, "SIM_SEED={seed} bound {bound}");
            assert_eq!(map.len(), model.len());
            assert_eq!(map.get(&id), Some(entry(at)));
        }
        assert_eq!(map.len(), bound, "filled to its bound");
        let held: BTreeMap<ExecutionId, i64> = map
            .iter()
            .map(|(id, entry)| (id.clone(), entry.next_try_at))
            .collect();
        assert_eq!(held, model, "SIM_SEED={seed} bound {bound}");
    }
}

#[test]
fn ties_evict_the_smallest_id_and_the_new_entry_is_kept() {
    let mut map = WakeBackoff::with_bound(NonZeroUsize::new(2).expect("non-zero"));
    assert_eq!(map.record(exec(2), entry(10)), None);
    assert_eq!(map.record(exec(1), entry(10)), None);
    // The newcomer is earlier than both, and is still the one kept.
    assert_eq!(map.record(exec(3), entry(5)), Some((exec(1), entry(10))));
    assert_eq!(map.record(exec(4), entry(50)), Some((exec(3), entry(5))));
    assert_eq!(map.get(&exec(2)), Some(entry(10)));
    assert_eq!(map.get(&exec(4)), Some(entry(50)));
}

#[test]
fn replacing_and_removing_keep_the_eviction_order_in_step() {
    let mut map = WakeBackoff::with_bound(NonZeroUsize::new(2).expect("non-zero"));
    assert_eq!(map.record(exec(1), entry(1)), None);
    assert_eq!(map.record(exec(2), entry(2)), None);
    // exec(1) moves after exec(2): exec(2) is now the earliest.
    assert_eq!(map.record(exec(1), entry(9)), None);
    assert_eq!(map.record(exec(3), entry(5)), Some((exec(2), entry(2))));
    assert_eq!(map.remove(&exec(3)), Some(entry(5)));
    assert_eq!(map.remove(&exec(3)), None);
    assert_eq!(map.record(exec(4), entry(0)), None, "room after a remove");
    assert_eq!(map.record(exec(5), entry(0)), Some((exec(4), entry(0))));
    assert_eq!(map.len(), 2);
}
