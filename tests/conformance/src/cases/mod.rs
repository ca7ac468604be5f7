//! Every case of the kit, grouped by what they check. [`ALL`] is the table
//! [`run_all`](crate::run_all) walks.

pub mod acquire;
pub mod acquire_if;
pub mod append;
pub mod append_if_parked;
pub mod bad_input;
pub mod concurrency;
pub mod delete;
pub mod feed;
pub mod forged_ack;
pub mod guard;
pub mod hostile;
pub mod kinds;
pub mod resume;
pub mod retention;
pub mod supervisor;
pub mod sweep;
pub mod sweep_batch;
pub mod sweep_contract;
pub mod sweep_undecided;

use crate::{Case, Needs};

/// Builds a table entry named after the case function.
macro_rules! case {
    ($needs:ident, $path:path) => {
        Case {
            name: stringify!($path),
            needs: Needs::$needs,
            run: |store| Box::pin($path(store)),
        }
    };
}

/// The whole kit, in the order it runs.
pub const ALL: &[Case] = &[
    case!(Any, append::sequences_start_at_one_and_echo_the_event),
    case!(Any, append::batches_are_contiguous),
    case!(Any, append::an_empty_batch_writes_nothing),
    case!(Any, append::read_range_bounds_are_inclusive),
    case!(Any, append::payloads_round_trip_verbatim),
    case!(Any, append::capability_is_honest),
    case!(Any, append_if_parked::lands_while_the_park_is_open),
    case!(Any, append_if_parked::is_refused_once_the_park_is_answered),
    case!(Fencing, append_if_parked::still_applies_the_guard),
    case!(Any, append_if_parked::eight_unfenced_resumers_one_lands),
    case!(
        Any,
        append_if_parked::a_park_seq_naming_no_park_is_refused_and_writes_nothing
    ),
    case!(Fencing, acquire::acquire_returns_the_next_token),
    case!(Fencing, acquire::acquire_fences_out_the_old_holder),
    case!(
        Conditional,
        acquire_if::a_matching_expectation_acquires_the_next_token
    ),
    case!(
        Conditional,
        acquire_if::a_moved_token_is_stale_and_changes_nothing
    ),
    case!(Conditional, acquire_if::eight_concurrent_callers_one_winner),
    case!(
        Conditional,
        acquire_if::a_dead_acquirer_is_passed_by_retrying_on_the_current_token
    ),
    case!(Conditional, acquire_if::a_landed_resume_makes_a_retry_stale),
    case!(
        Conditional,
        acquire_if::a_park_written_without_a_fence_expects_zero
    ),
    case!(
        Conditional,
        acquire_if::answering_appends_race_the_acquire_never_both
    ),
    case!(
        Conditional,
        acquire_if::a_park_seq_naming_no_park_is_refused_and_changes_nothing
    ),
    case!(
        Conditional,
        kinds::each_answering_kind_after_the_park_is_stale
    ),
    case!(
        Conditional,
        kinds::answering_events_at_or_before_the_park_are_not
    ),
    case!(Conditional, kinds::ignorable_kinds_after_the_park_are_not),
    case!(
        Conditional,
        kinds::application_events_after_the_park_are_not
    ),
    case!(Conditional, kinds::an_unknown_kind_stamped_kernel_is_stale),
    case!(
        Conditional,
        kinds::unknown_kinds_without_the_boolean_stamp_are_not
    ),
    case!(
        Conditional,
        kinds::a_stamp_does_not_reclassify_a_kernel_kind
    ),
    case!(Fencing, guard::a_lower_token_is_refused),
    case!(Fencing, guard::the_current_token_passes),
    case!(
        Fencing,
        guard::an_unfenced_answering_batch_is_refused_once_fenced
    ),
    case!(
        Any,
        guard::an_unfenced_answering_append_passes_before_any_acquire
    ),
    case!(Fencing, guard::an_unfenced_audit_append_passes_when_fenced),
    case!(Fencing, guard::a_refused_batch_writes_none_of_its_events),
    case!(
        Any,
        concurrency::concurrent_appenders_get_contiguous_unique_sequences
    ),
    case!(Any, concurrency::concurrent_batches_are_never_interleaved),
    case!(Any, bad_input::bad_ids_are_refused_and_change_nothing),
    case!(Any, bad_input::the_longest_id_is_stored_verbatim),
    case!(Any, bad_input::bad_fences_are_refused_and_change_nothing),
    case!(Any, bad_input::mixed_fences_in_a_batch_are_refused),
    case!(
        Any,
        bad_input::malformed_events_are_refused_and_change_nothing
    ),
    case!(
        Conditional,
        bad_input::a_park_seq_outside_the_log_is_refused
    ),
    case!(Any, bad_input::out_of_range_numbers_are_refused),
    case!(
        Any,
        hostile::awkward_ids_round_trip_verbatim_and_never_collide
    ),
    case!(
        Any,
        hostile::nul_is_refused_everywhere_and_nothing_is_written
    ),
    case!(Any, hostile::a_16_mb_payload_round_trips_verbatim),
    case!(Fencing, delete::delete_keeps_a_real_token_against_zombies),
    case!(Any, delete::delete_of_an_unfenced_execution_leaves_nothing),
    case!(
        Fencing,
        delete::a_delete_under_a_fenced_resume_writes_nothing
    ),
    case!(
        Fencing,
        delete::a_log_regrown_past_the_park_after_a_delete_is_not_taken_for_the_park
    ),
    case!(
        Fencing,
        resume::a_delete_under_a_fenced_resume_is_refused_and_writes_nothing
    ),
    case!(
        Any,
        resume::a_log_regrown_past_the_park_after_a_delete_is_refused_and_writes_nothing
    ),
    case!(
        Any,
        forged_ack::a_forged_append_acknowledgement_fails_the_resume_and_nothing_lands
    ),
    case!(Any, feed::the_feed_lists_every_event_once_in_order),
    case!(Any, feed::a_follower_racing_appenders_skips_nothing),
    case!(
        Any,
        feed::deleted_logs_drop_out_and_the_head_never_goes_back
    ),
    case!(Any, feed::open_parks_list_the_parked_executions),
    case!(Any, feed::feed_limits_are_checked),
    case!(Any, feed::a_wait_returns_once_something_is_committed),
    case!(Any, retention::listing_pages_through_every_execution_once),
    case!(Any, retention::listing_reports_the_first_terminal_event),
    case!(Any, retention::listing_leaves_out_executions_without_a_log),
    case!(Any, retention::listing_limits_are_checked),
    case!(Any, retention::a_guarded_delete_deletes_when_nothing_moved),
    case!(Any, retention::a_guarded_delete_refuses_a_log_that_changed),
    case!(
        Any,
        retention::a_guarded_delete_refuses_when_a_parent_parked_after_the_check
    ),
    case!(
        Any,
        retention::a_guarded_delete_ignores_a_parents_ignorable_events
    ),
    case!(
        Any,
        retention::a_guarded_delete_refuses_when_a_parents_log_shrank
    ),
    case!(Any, retention::a_guarded_delete_checks_its_guard),
    case!(
        Any,
        sweep::a_child_is_pinned_while_its_parent_is_parked_on_it
    ),
    case!(
        Any,
        sweep::a_child_is_deleted_once_its_parent_is_answered_or_ended
    ),
    case!(Any, sweep::group_members_are_pinned_and_other_keys_are_not),
    case!(
        Any,
        sweep::only_old_ended_executions_are_read_and_a_root_is_deleted
    ),
    case!(
        Any,
        sweep::a_log_without_the_edge_is_pinned_through_a_rebuilt_supervisor
    ),
    case!(Any, sweep::a_parent_that_cannot_be_read_stops_the_sweep),
    case!(Any, sweep::a_dry_run_changes_nothing),
    case!(Any, sweep::the_archive_gets_each_log_before_its_delete),
    case!(Any, sweep::a_parent_parking_in_the_window_keeps_the_child),
    case!(Any, sweep::ten_thousand_executions_are_read_only_as_needed),
    case!(
        Any,
        sweep_batch::read_logs_answers_each_log_in_the_order_asked
    ),
    case!(
        Any,
        sweep_batch::a_batch_of_guarded_deletes_judges_each_entry_by_its_own_guard
    ),
    case!(
        Any,
        sweep_batch::a_batch_that_cannot_be_taken_is_refused_whole
    ),
    case!(
        Any,
        sweep_batch::one_page_holds_pinned_free_and_window_raced_children
    ),
    case!(
        Any,
        supervisor::a_resume_the_store_failed_keeps_the_parent_listed
    ),
    case!(
        Any,
        sweep_undecided::an_unknown_kernel_kind_after_the_park_keeps_the_child
    ),
    case!(
        Any,
        sweep_undecided::an_unreadable_park_keeps_the_child_and_the_sweep_goes_on
    ),
    case!(
        Any,
        sweep_undecided::a_corrupt_recorded_parent_keeps_the_child_and_the_sweep_goes_on
    ),
    case!(
        Any,
        sweep_undecided::a_log_or_parent_the_store_cannot_read_keeps_the_child
    ),
    case!(Any, sweep_undecided::archiving_without_a_sink_is_refused),
    case!(
        Any,
        sweep_contract::a_page_limit_out_of_bounds_is_refused_before_listing
    ),
    case!(
        Any,
        sweep_contract::a_listing_outside_the_interface_stops_the_sweep
    ),
    case!(
        Any,
        sweep_contract::a_log_not_from_sequence_one_stops_the_sweep
    ),
    case!(
        Any,
        sweep_contract::a_delete_answer_outside_the_guard_stops_the_sweep
    ),
];
