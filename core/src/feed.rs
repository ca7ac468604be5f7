//! The change feed: every event a store commits, in one order a follower
//! can keep a cursor into, and the rules that turn it into the supervisor's
//! work ([`FollowMachine`]).
//!
//! A worker that lists the whole store to learn what changed pays for the
//! store, not for the work. With the feed it pays for what changed since its
//! cursor: the parks it must watch and the ends it must report.
//!
//! # The store's contract
//!
//! A store with a feed keeps three promises, checked on every adapter by the
//! conformance kit's feed cases:
//!
//! 1. **No skip.** An event committed after a follower read up to cursor
//!    `c` appears in a later read after `c`: the feed never hands out a
//!    cursor past an event that is not yet visible. (PostgreSQL's trap: a
//!    sequence number taken by a transaction that commits later than a
//!    bigger one; its adapter bounds each read by the snapshot's horizon.)
//! 2. **Order.** Cursors strictly increase along a read, and the events of
//!    one execution appear in sequence order.
//! 3. **Deletes drop out.** An event whose log retention deleted is not
//!    listed; nothing else about the feed changes, and a cursor is never
//!    reused.
//!
//! The head ([`FeedCursor`] of the last visible event) never goes back, so
//! a follower that reads the head first and the open parks second misses
//! nothing between the two. The open parks are an index the store keeps
//! (an execution whose last answering event is a park); it may list an
//! execution whose park the log later shows is not open (a park after an
//! end), never omit one that is.

mod follow;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::contract::ContractError;
use crate::event::{Envelope, MAX_SAFE_INTEGER};
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;
use crate::kind::{KernelKind, KindClass, classify};
use crate::park::waits_in;
use crate::status::Status;

pub use self::follow::{
    FollowAction, FollowMachine, FollowNotice, FollowOptions, FollowPoll, MAX_FEED_LIMIT,
};

/// A place in a store's feed: everything at or before it has been read.
///
/// Two parts, compared in order: the `epoch` (PostgreSQL's committing
/// transaction id; 0 on stores with one writer) and the `position` within
/// it. Both stay within JavaScript's safe integers so a JS host can hold
/// one as numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeedCursor {
    /// The coarse part: the committing transaction, or 0.
    epoch: u64,
    /// The fine part: the event's place within the epoch.
    position: u64,
}

impl FeedCursor {
    /// Before every event: a follower starting here reads the whole feed.
    pub const START: Self = Self {
        epoch: 0,
        position: 0,
    };

    /// A cursor from its parts, as a store or a JS host holds them.
    pub fn new(epoch: u64, position: u64) -> Result<Self, InputError> {
        for (what, value) in [("feed epoch", epoch), ("feed position", position)] {
            if value > MAX_SAFE_INTEGER {
                return Err(InputError::Limit {
                    what,
                    value,
                    max: MAX_SAFE_INTEGER,
                });
            }
        }
        Ok(Self { epoch, position })
    }

    /// The coarse part.
    #[must_use]
    pub fn epoch(self) -> u64 {
        self.epoch
    }

    /// The fine part.
    #[must_use]
    pub fn position(self) -> u64 {
        self.position
    }
}

impl fmt::Display for FeedCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.epoch, self.position)
    }
}

/// One event of the feed, with the cursor that follows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FeedEntry {
    /// Where the feed is once this event has been read.
    pub cursor: FeedCursor,
    /// The event.
    pub event: Envelope,
}

/// What the supervisor must hear of one event, if anything: a park that
/// waits on a child is watched, an end is reported to its parents. Parks
/// on timers and messages are their own services'; a park whose waits
/// cannot be read is no one's (the supervision would refuse it as input).
#[must_use]
pub fn notice_for(event: &Envelope) -> Option<FollowNotice> {
    if event.is_terminal() {
        return Some(FollowNotice::Ended(event.execution_id.clone()));
    }
    if !event.is_park() {
        return None;
    }
    let waits = waits_in(&event.payload).ok()?;
    waits
        .iter()
        .any(|wait| !wait.children().is_empty())
        .then(|| FollowNotice::Watch(event.execution_id.clone()))
}

/// How one appended batch changes the store's index of open parks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParkChange {
    /// No answering event: the index keeps what it had.
    Unchanged,
    /// The batch's last answering event is a park at this sequence.
    Opens(u64),
    /// The batch's last answering event resumes, ends or otherwise answers.
    Closes,
}

/// The change a batch whose first event lands at `first_seq` makes to the
/// open parks, from each event's kind and metadata: what a store applies
/// inside the append's own atomic step, so the index never disagrees with
/// the logs it was written with.
#[must_use]
pub fn park_change<'a>(
    first_seq: u64,
    events: impl IntoIterator<Item = (&'a str, &'a JsonObject)>,
) -> ParkChange {
    let mut change = ParkChange::Unchanged;
    for ((kind, metadata), sequence) in events.into_iter().zip(first_seq..) {
        if classify(kind, metadata) != KindClass::Answering {
            continue;
        }
        let kernel = KernelKind::from_name(kind);
        change = if kernel == Some(KernelKind::ExecutionSuspended) {
            ParkChange::Opens(sequence)
        } else {
            ParkChange::Closes
        };
        if Status::Pending.after(kernel).is_terminal() {
            // Nothing reopens after an end (the fold ignores later parks).
            return ParkChange::Closes;
        }
    }
    change
}

/// Refuses a feed or open-parks limit outside 1 to [`MAX_FEED_LIMIT`];
/// answers it as a count. Every store checks its limits with this one rule.
pub fn check_feed_limit(limit: u32) -> Result<usize, InputError> {
    if limit == 0 || limit > MAX_FEED_LIMIT {
        return Err(InputError::Limit {
            what: "limit",
            value: u64::from(limit),
            max: u64::from(MAX_FEED_LIMIT),
        });
    }
    Ok(limit as usize)
}

/// Checks one feed page against its read: at most `limit` entries, every
/// cursor after `after` and after the one before it.
pub(crate) fn check_page(
    after: FeedCursor,
    limit: u32,
    entries: &[FeedEntry],
) -> Result<(), ContractError> {
    if entries.len() > limit as usize {
        return Err(ContractError::FeedOutOfContract {
            reason: "more entries than the limit",
        });
    }
    let mut last = after;
    for entry in entries {
        if entry.cursor <= last {
            return Err(ContractError::FeedOutOfContract {
                reason: "a cursor at or before the one it follows",
            });
        }
        last = entry.cursor;
    }
    Ok(())
}

/// Checks one page of open parks: at most `limit` ids, in increasing order,
/// all after `after`.
pub(crate) fn check_open_parks(
    after: Option<&ExecutionId>,
    limit: u32,
    ids: &[ExecutionId],
) -> Result<(), ContractError> {
    if ids.len() > limit as usize {
        return Err(ContractError::FeedOutOfContract {
            reason: "more open parks than the limit",
        });
    }
    let mut last = after;
    for id in ids {
        if last.is_some_and(|last| id <= last) {
            return Err(ContractError::FeedOutOfContract {
                reason: "open parks out of id order, or at or before the cursor",
            });
        }
        last = Some(id);
    }
    Ok(())
}
