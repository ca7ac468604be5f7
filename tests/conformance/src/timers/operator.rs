//! The operator's listing of a timer store, as `loomfence timers`,
//! `inspect` and `recover` read it: rows with their claims, exhausted
//! records filtered and paged, clearing a record, and bad queries. Every
//! Rust timer store passes these after [`ALL`](super::ALL); the npm
//! package's store has no filtered listing, so the JavaScript kit does not
//! port this table.

use super::{TimerCase, bad_input, exhaust, listing};

/// The operator's cases, in the order they run.
pub const OPERATOR: &[TimerCase] = &[
    case!(exhaust::exhausted_records_come_in_key_order_filtered_and_paged),
    case!(exhaust::clear_exhausted_answers_whether_there_was_a_record),
    case!(listing::a_listing_shows_each_row_with_its_claim),
    case!(listing::a_listing_orders_by_time_then_id_in_byte_order),
    case!(listing::every_filter_applies_before_the_limit),
    case!(listing::a_listing_pages_with_after),
    case!(bad_input::bad_exhaustions_and_operator_queries_are_refused_and_change_nothing),
];
