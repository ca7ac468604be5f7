//! The memory store's change feed: a counter stamped on every record, and
//! an index from position to record so a read after a cursor starts where
//! it left off instead of walking every log.

use crate::event::NewEvent;
use crate::feed::{FeedCursor, FeedEntry, check_feed_limit};
use crate::input::{ExecutionId, InputError};

use super::{MemoryStore, to_index};

/// Where each position of the feed was written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct FeedIndex {
    /// The last position handed out: never reused, so a cursor stays good
    /// across deletes.
    last: u64,
    /// Every position still possibly alive, in increasing order.
    spots: Vec<Spot>,
    /// How many spots name a deleted record; compacted at half.
    dead: usize,
}

/// One position of the feed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Spot {
    /// The position.
    position: u64,
    /// The execution written.
    execution_id: ExecutionId,
    /// Its sequence.
    sequence: u64,
}

impl FeedIndex {
    /// Hands out the position of the record `execution_id` gets at
    /// `sequence`.
    pub(super) fn next(&mut self, execution_id: &ExecutionId, sequence: u64) -> u64 {
        self.last += 1;
        self.spots.push(Spot {
            position: self.last,
            execution_id: execution_id.clone(),
            sequence,
        });
        self.last
    }

    /// Counts `records` spots as dead.
    pub(super) fn forget(&mut self, records: usize) {
        self.dead += records;
    }
}

impl MemoryStore {
    /// Up to `limit` (1 to [`MAX_FEED_LIMIT`](crate::feed::MAX_FEED_LIMIT)) events committed after
    /// `after`, in feed order: the store's change feed (see
    /// [`feed`](crate::feed) for its contract). Every cursor's epoch is 0.
    pub fn feed(&self, after: FeedCursor, limit: u32) -> Result<Vec<FeedEntry>, InputError> {
        let mut entries = Vec::new();
        self.visit_feed(after, limit, |cursor, id, sequence, event| {
            entries.push(FeedEntry {
                cursor,
                event: event.clone().into_envelope(id.clone(), sequence),
            });
        })?;
        Ok(entries)
    }

    /// Hands `visit` each entry [`MemoryStore::feed`] would return, without
    /// copying it (see [`MemoryStore::visit_range`]).
    pub fn visit_feed(
        &self,
        after: FeedCursor,
        limit: u32,
        mut visit: impl FnMut(FeedCursor, &ExecutionId, u64, &NewEvent),
    ) -> Result<(), InputError> {
        let limit = check_feed_limit(limit)?;
        if after.epoch() > 0 {
            // Past every position this store hands out.
            return Ok(());
        }
        let spots = &self.feed.spots;
        let start = spots.partition_point(|spot| spot.position <= after.position());
        let mut listed = 0;
        for spot in &spots[start..] {
            if listed == limit {
                break;
            }
            let Some(record) = self.record(&spot.execution_id, spot.sequence) else {
                continue;
            };
            if record.feed != spot.position {
                continue;
            }
            let cursor = FeedCursor::new(0, spot.position)?;
            visit(cursor, &spot.execution_id, spot.sequence, &record.event);
            listed += 1;
        }
        Ok(())
    }

    /// The cursor of the last event written (deleted or not), or
    /// [`FeedCursor::START`]: it never goes back.
    pub fn feed_head(&self) -> Result<FeedCursor, InputError> {
        FeedCursor::new(0, self.feed.last)
    }

    /// Up to `limit` (1 to [`MAX_FEED_LIMIT`](crate::feed::MAX_FEED_LIMIT)) executions after `after`
    /// (from the first when `None`), in id order, whose last answering
    /// event is a park: the rebuild's list of what to watch.
    pub fn open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, InputError> {
        let limit = check_feed_limit(limit)?;
        Ok(self
            .entries
            .after(after)
            .filter(|(_, entry)| entry.open_park.is_some())
            .map(|(id, _)| id.clone())
            .take(limit)
            .collect())
    }

    /// Drops the dead spots once they are half the index, so deletes cost
    /// amortised constant time and reads skip few.
    pub(super) fn compact_feed(&mut self) {
        if self.feed.dead * 2 <= self.feed.spots.len() {
            return;
        }
        let mut spots = std::mem::take(&mut self.feed.spots);
        spots.retain(|spot| {
            self.record(&spot.execution_id, spot.sequence)
                .is_some_and(|record| record.feed == spot.position)
        });
        self.feed.spots = spots;
        self.feed.dead = 0;
    }

    /// The record at `sequence`, if the log has one.
    fn record(&self, execution_id: &ExecutionId, sequence: u64) -> Option<&super::Record> {
        self.log(execution_id)
            .get(to_index(sequence).checked_sub(1)?)
    }
}
