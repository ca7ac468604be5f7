//! The timer conformance kit: one suite of cases every [`TimerStore`]
//! adapter passes unchanged, held to the rules of the core's
//! [`TimerTable`](loomfence_core::timer::TimerTable).
//!
//! Same shape as the event kit: plain `pub async fn` cases over a store,
//! [`run_all`] runs each against a fresh store from a factory, in its own
//! task, and panics at the end with every case that failed. Timer stores
//! have no capability levels, so every case applies to every store.
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() {
//! use std::sync::Arc;
//! use loomfence_store::{MemoryTimerStore, TimerStore};
//!
//! let report = loomfence_conformance::timers::run_all("memory", || async {
//!     Arc::new(MemoryTimerStore::new()) as Arc<dyn TimerStore>
//! })
//! .await;
//! assert_eq!(report.passed, loomfence_conformance::timers::ALL.len());
//! # }
//! ```
//!
//! Migrations of an old-shape `timers` table are the SQL adapters' own
//! tests: a table shape is not something a trait can be handed.

pub mod bad_input;
pub mod due;
pub mod exhaust;
pub mod fork;
pub mod lapsed;
pub mod lease;
pub mod listing;
pub mod model;
pub mod reschedule;
pub mod schedule;
pub mod support;
pub mod unreadable;

use std::future::Future;
use std::sync::Arc;

use loomfence_store::forwarding::Forward;
use loomfence_store::{Forwarding, TimerStore};

use crate::Report;

/// A timer store shared by a case and the tasks it spawns.
pub type Timers = Arc<dyn TimerStore>;

/// `store` behind a [`Forwarding`] decorator with hooks that change
/// nothing, the timer twin of [`forwarded`](crate::forwarded). Every
/// adapter runs the timer kit through it too, so the decorator the tests
/// wrap timer stores in is held to the same cases as the stores.
#[must_use]
pub fn forwarded(store: Timers) -> Timers {
    Arc::new(Forwarding::new(store, Forward))
}

/// One case of the kit.
pub type TimerCase = crate::KitCase<Timers>;

/// Builds a table entry named after the case function.
macro_rules! case {
    ($path:path) => {
        TimerCase {
            name: stringify!($path),
            run: |store| Box::pin($path(store)),
        }
    };
}

/// The whole timer kit, in the order it runs.
pub const ALL: &[TimerCase] = &[
    case!(schedule::rows_round_trip_with_their_flag),
    case!(schedule::times_at_both_ends_of_the_range_round_trip),
    case!(schedule::awkward_ids_round_trip),
    case!(schedule::a_redrive_schedule_flags_a_plain_row),
    case!(schedule::a_plain_schedule_never_clears_the_flag),
    case!(schedule::a_later_redrive_schedule_carries_its_attempt),
    case!(schedule::scheduling_twice_keeps_one_row),
    case!(due::only_rows_at_or_before_now_are_due),
    case!(due::due_rows_come_earliest_first_then_by_id_in_byte_order),
    case!(due::the_limit_takes_the_earliest),
    case!(due::the_redrive_filter_applies_before_the_limit),
    case!(due::claimed_rows_are_still_listed),
    case!(lease::a_claim_takes_due_free_rows_earliest_first),
    case!(lease::a_claim_honours_the_redrive_filter_before_the_limit),
    case!(lease::a_held_row_is_not_claimed_again),
    case!(lease::eight_concurrent_claimers_one_winner),
    case!(lease::concurrent_claimers_split_many_rows_without_overlap),
    case!(lease::an_expired_lease_comes_back_with_a_higher_number),
    case!(lease::complete_retires_only_for_the_claimer),
    case!(lease::complete_twice_retires_once),
    case!(lease::a_claimer_whose_lease_ended_unclaimed_still_completes),
    case!(lease::release_hands_the_row_back_at_once),
    case!(lease::release_by_a_non_claimer_changes_nothing),
    case!(lease::a_schedule_on_a_claimed_row_voids_the_claim),
    case!(reschedule::a_reschedule_under_the_claim_retires_the_row_and_schedules_the_next),
    case!(reschedule::a_reschedule_after_the_lease_was_lost_writes_nothing),
    case!(reschedule::a_next_row_on_the_claimed_key_is_refused),
    case!(reschedule::a_next_row_that_exists_merges_like_a_schedule),
    case!(reschedule::a_fire_that_outlives_its_lease_does_not_fork_the_chain),
    case!(lapsed::a_claim_whose_lease_ended_is_released_not_fired),
    case!(exhaust::an_exhaustion_under_the_claim_retires_the_row_and_keeps_the_record),
    case!(exhaust::a_stale_claim_records_no_exhaustion),
    case!(exhaust::a_second_exhaustion_of_a_key_replaces_the_record),
    case!(exhaust::exhausted_records_come_in_key_order_filtered_and_paged),
    case!(exhaust::clear_exhausted_answers_whether_there_was_a_record),
    case!(listing::a_listing_shows_each_row_with_its_claim),
    case!(listing::a_listing_orders_by_time_then_id_in_byte_order),
    case!(listing::every_filter_applies_before_the_limit),
    case!(listing::a_listing_pages_with_after),
    case!(bad_input::bad_rows_are_refused_and_change_nothing),
    case!(bad_input::bad_listings_are_refused),
    case!(bad_input::bad_leases_are_refused_and_claim_nothing),
    case!(bad_input::bad_claims_are_refused_and_change_nothing),
    case!(bad_input::bad_exhaustions_and_operator_queries_are_refused_and_change_nothing),
    case!(model::agrees_with_the_reference_table_call_for_call),
];

/// Runs every case of the timer kit against stores from `make_store`, one
/// fresh store per case, and panics if any case failed.
///
/// `label` names the adapter in the printed lines; `LOOMFENCE_CASE` filters
/// cases by substring, as for the event kit.
pub async fn run_all<F, Fut>(label: &str, make_store: F) -> Report
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Timers>,
{
    crate::run_kit("timer-conformance", label, ALL, make_store).await
}
