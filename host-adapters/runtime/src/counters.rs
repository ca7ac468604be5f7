//! The counters the runtime keeps, through the [`metrics`] facade.
//!
//! A library cannot know how its host exports numbers, so the runtime only
//! counts, through the facade, and the host installs whatever recorder it
//! wants (the `loomfence worker` command installs a Prometheus endpoint
//! behind `--metrics`). With no recorder installed every count is a no-op.
//!
//! These are the numbers an operator of a fleet watches: how many resumes
//! land, how many lose (the expected race, an answer, not a failure), how
//! often the fence was contended and re-drive had to step in, and the one
//! that must stay at zero with the conditional acquire: bodies fenced out
//! after their resume landed.
//!
//! The resume counters are kept by [`run`](crate::step::run), which
//! [`resume`](crate::resume), the supervisor and the timer service all go
//! through; a host that steps a machine itself with
//! [`perform`](crate::step::perform) counts its own.

use loomfence_core::ResumeError;

use crate::error::RuntimeError;

/// Resumes that landed through [`run`](crate::step::run): a host's `resume`, the
/// supervisor's, a timer wake's, a re-drive's.
pub const RESUMES: &str = "loomfence_resumes_total";
/// Resumes refused because the park was answered (or deleted) first: the
/// loser's normal answer.
pub const REFUSED: &str = "loomfence_resumes_refused_total";
/// Unfenced resumes that met a fenced execution (the supervisor then
/// switches to the conditional resume).
pub const STALE: &str = "loomfence_resumes_stale_total";
/// Resumes that gave up contended: every acquire found the fence moved
/// while the park stayed open.
pub const CONTENDED: &str = "loomfence_resumes_contended_total";
/// Re-drive rows written: a supervisor's first row of a contended resume,
/// and every row a timer service rescheduled.
pub const REDRIVE_ROWS: &str = "loomfence_redrive_rows_total";
/// Re-drives that landed (a re-drive row's re-driver resumed the parent).
pub const REDRIVES: &str = "loomfence_redrives_total";
/// Retry chains that gave up; each park is left for an operator.
pub const EXHAUSTED: &str = "loomfence_redrive_exhausted_total";
/// Timer wakes that resumed their execution.
pub const TIMER_WAKES: &str = "loomfence_timer_wakes_total";
/// Due timer rows the timer store could not read (not claimed, never
/// fired until repaired): each counted once per node that met it.
pub const UNREADABLE_ROWS: &str = "loomfence_timer_rows_unreadable_total";
/// Bodies whose own append was refused as stale: a rival acquired the
/// fence after their resume landed. Zero with the conditional acquire.
pub const FENCED_OUT: &str = "loomfence_bodies_fenced_out_total";

/// Notices a follower handed its supervisor (parks to watch, ends to
/// report): the work the feed brought.
pub const NOTICES: &str = "loomfence_follower_notices_total";
/// Reads of the change feed by a follower.
pub const FEED_READS: &str = "loomfence_follower_feed_reads_total";
/// Store errors a follower paused on before trying the step again.
pub const FOLLOWER_STORE_ERRORS: &str = "loomfence_follower_store_errors_total";

/// Messages stored by a send.
pub const MESSAGES_STORED: &str = "loomfence_messages_stored_total";
/// Sends of a message already stored (a sender's retry): nothing written.
pub const MESSAGES_DUPLICATE: &str = "loomfence_messages_duplicate_total";
/// Messages delivered: their `MESSAGE_CONSUMED` and resume landed.
pub const MESSAGES_DELIVERED: &str = "loomfence_messages_delivered_total";

/// Gives every counter its help text in the installed recorder (the
/// `# HELP` lines of a Prometheus endpoint) and registers it at zero, so
/// the endpoint lists every counter before anything happened. A host calls
/// it once, after installing its recorder; counting works without it.
pub fn describe() {
    for (name, help) in [
        (RESUMES, "Resumes that landed, on any path."),
        (
            REFUSED,
            "Resumes refused because the park was answered first: the loser's answer.",
        ),
        (STALE, "Unfenced resumes that met a fenced execution."),
        (
            CONTENDED,
            "Resumes that gave up contended: the fence kept moving while the park stayed open.",
        ),
        (
            REDRIVE_ROWS,
            "Re-drive rows written (a supervisor's first row, or one a timer service rescheduled).",
        ),
        (REDRIVES, "Re-drives that landed."),
        (
            EXHAUSTED,
            "Retry chains that gave up; each park is left for an operator.",
        ),
        (TIMER_WAKES, "Timer wakes that resumed their execution."),
        (
            UNREADABLE_ROWS,
            "Due timer rows the store could not read, once per node; each waits for an operator.",
        ),
        (
            FENCED_OUT,
            "Bodies fenced out after their resume landed; zero with the conditional acquire.",
        ),
        (NOTICES, "Notices a follower handed its supervisor."),
        (FEED_READS, "Reads of the change feed by a follower."),
        (
            FOLLOWER_STORE_ERRORS,
            "Store errors a follower paused on before trying again.",
        ),
        (MESSAGES_STORED, "Messages stored by a send."),
        (
            MESSAGES_DUPLICATE,
            "Sends of a message already stored (a retry): nothing written.",
        ),
        (
            MESSAGES_DELIVERED,
            "Messages delivered: consumed and resumed in one batch.",
        ),
    ] {
        metrics::describe_counter!(name, help);
        // Registered at zero, so an exporter shows every counter from the
        // start: a dashboard or an alert on one that has not moved yet
        // sees 0, not a missing series.
        metrics::counter!(name).increment(0);
    }
}

/// Adds one to `name`.
pub(crate) fn one(name: &'static str) {
    metrics::counter!(name).increment(1);
}

/// Counts how a resume ended: landed, refused, stale or contended. Store
/// failures and broken contracts are errors, reported where they happen,
/// not counted here.
pub(crate) fn resume_ended<T>(result: &Result<T, RuntimeError>) {
    match result {
        Ok(_) => one(RESUMES),
        Err(RuntimeError::Resume(ResumeError::Refused(_))) => one(REFUSED),
        Err(RuntimeError::Resume(ResumeError::StaleFence(_))) => one(STALE),
        Err(RuntimeError::Resume(ResumeError::Contended(_))) => one(CONTENDED),
        Err(_) => {}
    }
}
