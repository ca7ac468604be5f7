//! What one sweep does, its defaults, and what is refused before anything
//! is listed: one check for every host, so the Rust runtime and the npm
//! package refuse the same options the same way.

use crate::input::InputError;
use crate::retention::summary::check_page_limit;

/// What one sweep does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SweepOptions {
    /// Executions that ended strictly before this instant (ms since the
    /// epoch) are eligible; the caller computes it from its own clock.
    pub ended_before: i64,
    /// Executions per listing page, 1 to
    /// [`MAX_PAGE_LIMIT`](crate::retention::MAX_PAGE_LIMIT).
    pub page_limit: u32,
    /// Hand each log to an archive before deleting it.
    pub archive: bool,
    /// Decide everything, read what deciding needs, change nothing: no
    /// archive, no delete. `deleted` then counts what would be deleted.
    pub dry_run: bool,
}

impl SweepOptions {
    /// The page size when a host's caller names none: large enough that a
    /// sweep of a big store is few queries, small enough that one page's
    /// memory stays small.
    pub const DEFAULT_PAGE_LIMIT: u32 = 1_000;

    /// A sweep of executions that ended before `ended_before`, with the
    /// default page size, no archive, for real.
    #[must_use]
    pub fn new(ended_before: i64) -> Self {
        Self {
            ended_before,
            page_limit: Self::DEFAULT_PAGE_LIMIT,
            archive: false,
            dry_run: false,
        }
    }

    /// Refuses options no sweep may run with, before anything is listed:
    /// a page limit outside 1 to [`MAX_PAGE_LIMIT`](crate::retention::MAX_PAGE_LIMIT)
    /// (the listing's own check, so the error is the one a store gives),
    /// and `archive` when the host has no archive to hand logs to
    /// (`has_archive` false): a sweep asked to archive must never delete
    /// what it did not archive, so dry runs are refused too.
    pub fn check(&self, has_archive: bool) -> Result<(), InputError> {
        check_page_limit(self.page_limit)?;
        if self.archive && !has_archive {
            return Err(InputError::ArchiveWithoutSink);
        }
        Ok(())
    }
}
