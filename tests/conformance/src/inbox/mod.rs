//! The inbox conformance kit: one suite of cases every [`InboxStore`]
//! adapter passes unchanged, held to the rules of the core's
//! [`InboxTable`](loomfence_core::inbox::InboxTable).
//!
//! Same shape as the timer kit: plain `pub async fn` cases over a store,
//! [`run_all`] runs each against a fresh store from a factory, in its own
//! task, and panics at the end with every case that failed. An inbox store
//! is a timer store too (a send writes its intent row in the same step),
//! so the cases read the intent rows back through the store's
//! [`TimerStore`](loomfence_store::TimerStore) side.
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() {
//! use std::sync::Arc;
//! use loomfence_store::{InboxStore, MemoryTimerStore};
//!
//! let report = loomfence_conformance::inbox::run_all("memory", || async {
//!     Arc::new(MemoryTimerStore::new()) as Arc<dyn InboxStore>
//! })
//! .await;
//! assert_eq!(report.passed, loomfence_conformance::inbox::ALL.len());
//! # }
//! ```
//!
//! Migrations of a file without an inbox table, and rows a store did not
//! write, are the SQL adapters' own tests: a table shape is not something
//! a trait can be handed.

pub mod bad_input;
pub mod concurrency;
pub mod consume;
pub mod intent;
pub mod model;
pub mod pending;
pub mod purge;
pub mod send;
pub mod support;

use std::future::Future;
use std::sync::Arc;

use loomfence_store::forwarding::Forward;
use loomfence_store::{Forwarding, InboxStore};

use crate::Report;

/// An inbox store shared by a case and the tasks it spawns.
pub type Inbox = Arc<dyn InboxStore>;

/// `store` behind a [`Forwarding`] decorator with hooks that change
/// nothing, the inbox twin of [`forwarded`](crate::forwarded). Every
/// adapter runs the inbox kit through it too, so the decorator the tests
/// wrap inbox stores in is held to the same cases as the stores.
#[must_use]
pub fn forwarded(store: Inbox) -> Inbox {
    Arc::new(Forwarding::new(store, Forward))
}

/// One case of the kit.
pub type InboxCase = crate::KitCase<Inbox>;

/// Builds a table entry named after the case function.
macro_rules! case {
    ($path:path) => {
        InboxCase {
            name: stringify!($path),
            run: |store| Box::pin($path(store)),
        }
    };
}

/// The whole inbox kit, in the order it runs.
pub const ALL: &[InboxCase] = &[
    case!(send::a_send_round_trips_through_pending_and_messages),
    case!(send::awkward_names_and_payloads_round_trip),
    case!(send::sending_the_same_key_twice_stores_it_once),
    case!(send::the_same_id_on_another_channel_or_execution_is_another_message),
    case!(intent::the_intent_row_is_written_with_the_send),
    case!(intent::an_intent_on_a_plain_row_of_its_key_flags_it),
    case!(intent::an_intent_on_a_redrive_row_carries_its_own_attempt),
    case!(intent::a_duplicate_send_leaves_a_claimed_intent_row_held),
    case!(pending::pending_lists_only_the_executions_unconsumed_messages_on_its_channels),
    case!(pending::pending_comes_in_arrival_order_and_stops_at_the_limit),
    case!(consume::mark_consumed_answers_true_once_then_false),
    case!(consume::a_consumed_key_sent_again_is_still_a_duplicate),
    case!(purge::purge_deletes_only_that_executions_messages),
    case!(purge::a_key_sent_after_a_purge_is_stored_anew),
    case!(bad_input::bad_messages_are_refused_and_change_nothing),
    case!(bad_input::bad_intent_rows_are_refused_and_change_nothing),
    case!(bad_input::bad_listings_and_marks_are_refused_and_change_nothing),
    case!(concurrency::sixteen_senders_of_one_key_store_it_once),
    case!(concurrency::sixteen_senders_on_one_channel_all_arrive_in_order),
    case!(model::agrees_with_the_reference_table_call_for_call),
];

/// Runs every case of the inbox kit against stores from `make_store`, one
/// fresh store per case, and panics if any case failed.
///
/// `label` names the adapter in the printed lines; `LOOMFENCE_CASE` filters
/// cases by substring, as for the event kit.
pub async fn run_all<F, Fut>(label: &str, make_store: F) -> Report
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Inbox>,
{
    crate::run_kit("inbox-conformance", label, ALL, make_store).await
}
