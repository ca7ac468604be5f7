//! The in-memory event store as a plain data structure.
//!
//! Every operation is one synchronous step over `&mut self`, so whoever owns
//! the value (a mutex in a service, a single-threaded JS host, a simulation
//! that snapshots it between steps) gets atomicity for free. The simulation
//! relies on it being `Clone + Eq + Hash`.

mod entries;
mod feed;

use crate::event::EventFacts;
use crate::event::{Envelope, NewEvent};
use crate::feed::{ParkChange, park_change};
use crate::fence::{
    self, AcquireOutcome, BatchFacts, ConditionalAppend, ParkExpectation, StaleFenceError,
    check_batch, check_is_park, check_park_seq, check_safe, decide_acquire_if, guard_append,
};
use crate::input::{ExecutionId, InputError};
use crate::kind::{KernelKind, KindClass};
use crate::retention::{
    DeleteGuard, DeleteIf, Ended, ExecutionSummary, GuardedDelete, check_delete_batch, check_guard,
    check_page_limit, parent_moved,
};
use crate::status::Status;

/// Why an append was not written. Either way, nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The writer's token is no longer good enough: someone acquired after it.
    #[error(transparent)]
    Stale(#[from] StaleFenceError),
    /// The id or an event is malformed.
    #[error(transparent)]
    Input(#[from] InputError),
}

/// One stored event, with its class worked out once at append time so an
/// acquire scans booleans rather than re-reading metadata.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Record {
    /// The event as written.
    event: NewEvent,
    /// Whether it answers a park.
    answering: bool,
    /// Its position in the store's change feed.
    feed: u64,
}

/// Logs and fence tokens for any number of executions.
///
/// A log is a `Vec` whose index is `sequence - 1`, so a conditional acquire
/// jumps straight to the event after `parkSeq` and scans only the tail: its
/// cost does not depend on how long the log was before the park.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryStore {
    /// Each execution's log and token in one entry (a map for each would
    /// cost the npm package about 9 KB of WebAssembly), found by a hash of
    /// its id, the ids in order beside the entries. An entry exists while
    /// the execution has a log or a token above 0.
    entries: entries::Entries,
    /// The change feed's counter and index.
    feed: feed::FeedIndex,
}

/// One execution's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Entry {
    /// Its events, in sequence order; empty after a delete.
    log: Vec<Record>,
    /// Its token, 0 if nobody ever acquired.
    fence: u64,
    /// The sequence of its open park, as the open-parks index keeps it
    /// ([`park_change`]).
    open_park: Option<u64>,
}

impl MemoryStore {
    /// An empty store, its ids hashed from the seed 0: what a test or a
    /// simulation wants, the same store on every run.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose map of executions hashes ids from `seed`. A
    /// store that holds ids chosen outside the host (a user's order number)
    /// wants a seed drawn from the host's randomness, so that nobody can
    /// pick ids that collide; the core draws none itself. Two stores with
    /// the same content are equal whatever their seeds.
    #[must_use]
    pub fn with_hash_seed(seed: u64) -> Self {
        Self {
            entries: entries::Entries::with_seed(seed),
            ..Self::default()
        }
    }

    /// Appends one event; see [`MemoryStore::append_many`].
    pub fn append(
        &mut self,
        execution_id: &ExecutionId,
        event: NewEvent,
    ) -> Result<Envelope, AppendError> {
        let mut stored = self.append_many(execution_id, vec![event])?;
        Ok(stored.remove(0))
    }

    /// Appends a batch at the next contiguous sequences, all or nothing, after
    /// one guard decision for the whole batch. An empty batch writes nothing.
    pub fn append_many(
        &mut self,
        execution_id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, AppendError> {
        let first = self.append_many_from(execution_id, events)?;
        Ok(self.envelopes_from(execution_id, first))
    }

    /// Appends as [`MemoryStore::append_many`] does, answering only the
    /// sequence of the batch's first event (the head plus one when the
    /// batch is empty): for a host that keeps the events it handed over and
    /// needs no copies back, such as the npm package, which builds the
    /// envelopes it returns from the text it parsed.
    pub fn append_many_from(
        &mut self,
        execution_id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<u64, AppendError> {
        let (batch, facts) = check_batch(&events)?;
        self.write(execution_id, batch, facts, events)
    }

    /// Appends a batch only while the park at `park_seq` is unanswered (no
    /// answering event follows it), under the same guard as
    /// [`MemoryStore::append_many`]. Nothing changes when the park was
    /// answered.
    ///
    /// This is how a resumer that takes no token (a non-fencing store, or a
    /// supervisor's unfenced first try) still resumes a park at most once:
    /// the check and the append are one step, so two such resumers cannot
    /// both land.
    pub fn append_if_parked(
        &mut self,
        execution_id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, AppendError> {
        Ok(
            match self.append_if_parked_from(execution_id, park_seq, events)? {
                Some(first) => {
                    ConditionalAppend::Appended(self.envelopes_from(execution_id, first))
                }
                None => ConditionalAppend::ParkAnswered,
            },
        )
    }

    /// Appends as [`MemoryStore::append_if_parked`] does, answering only the
    /// first sequence written, or `None` when the park was answered (see
    /// [`MemoryStore::append_many_from`]).
    pub fn append_if_parked_from(
        &mut self,
        execution_id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<Option<u64>, AppendError> {
        let (batch, facts) = check_batch(&events)?;
        if self.answered_after(execution_id, park_seq)? {
            return Ok(None);
        }
        self.write(execution_id, batch, facts, events).map(Some)
    }

    /// The envelopes from `first` to the head (what a write just stored).
    fn envelopes_from(&self, execution_id: &ExecutionId, first: u64) -> Vec<Envelope> {
        let log = self.log(execution_id);
        log.iter()
            .zip(1..)
            .skip(to_index(first - 1))
            .map(|(record, sequence)| {
                record
                    .event
                    .clone()
                    .into_envelope(execution_id.clone(), sequence)
            })
            .collect()
    }

    /// Guards and writes an already validated batch; answers the sequence
    /// of its first event.
    fn write(
        &mut self,
        id: &ExecutionId,
        batch: BatchFacts,
        facts: Vec<EventFacts>,
        events: Vec<NewEvent>,
    ) -> Result<u64, AppendError> {
        if events.is_empty() {
            return Ok(self.head(id) + 1);
        }
        // One lookup: the guard reads the token of the entry it then writes.
        let entry = match self.entries.get_mut(id) {
            Some(entry) => {
                guard_append(id, entry.fence, batch)?;
                entry
            }
            None => {
                guard_append(id, 0, batch)?;
                self.entries.insert_new(id, Entry::default())
            }
        };
        let first = to_u64(entry.log.len()) + 1;
        check_safe("sequence", first + to_u64(events.len()) - 1)?;
        match park_change(
            first,
            events.iter().map(|event| (&*event.kind, &event.metadata)),
        ) {
            ParkChange::Unchanged => {}
            ParkChange::Opens(sequence) => entry.open_park = Some(sequence),
            ParkChange::Closes => entry.open_park = None,
        }
        for ((event, facts), sequence) in events.into_iter().zip(facts).zip(first..) {
            entry.log.push(Record {
                event,
                answering: facts.class == KindClass::Answering,
                feed: self.feed.next(id, sequence),
            });
        }
        Ok(first)
    }

    /// Whether an answering event follows `park_seq`, which must name a park
    /// in the log. Looks only at the park and the tail after it.
    fn answered_after(
        &self,
        execution_id: &ExecutionId,
        park_seq: u64,
    ) -> Result<bool, InputError> {
        answered_in(self.log(execution_id), park_seq)
    }

    /// The events with `from_seq <= sequence <= to_seq` (to the head when
    /// `to_seq` is `None`). An unknown execution reads as empty.
    pub fn read_range(
        &self,
        execution_id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, InputError> {
        let mut events = Vec::new();
        self.visit_range(execution_id, from_seq, to_seq, |id, sequence, event| {
            events.push(event.clone().into_envelope(id.clone(), sequence));
        })?;
        Ok(events)
    }

    /// Hands `visit` each event [`MemoryStore::read_range`] would return,
    /// in order, with its execution id and sequence, without copying it:
    /// for a host that writes events straight out of the store (the npm
    /// package writes them as JSON text).
    pub fn visit_range(
        &self,
        execution_id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
        mut visit: impl FnMut(&ExecutionId, u64, &NewEvent),
    ) -> Result<(), InputError> {
        check_safe("fromSeq", from_seq)?;
        if let Some(to) = to_seq {
            check_safe("toSeq", to)?;
        }
        let Some((id, Entry { log, .. })) = self.entries.get_key_value(execution_id) else {
            return Ok(());
        };
        let head = to_u64(log.len());
        let last = to_seq.map_or(head, |to| to.min(head));
        let first = from_seq.max(1);
        if first > last {
            return Ok(());
        }
        for (sequence, record) in (first..=last).zip(&log[to_index(first - 1)..to_index(last)]) {
            visit(id, sequence, &record.event);
        }
        Ok(())
    }

    /// The sequence of the last event, 0 for an empty or unknown execution.
    #[must_use]
    pub fn head(&self, execution_id: &ExecutionId) -> u64 {
        to_u64(self.log(execution_id).len())
    }

    /// The execution's current token, 0 if nobody ever acquired.
    #[must_use]
    pub fn current_fence(&self, execution_id: &ExecutionId) -> u64 {
        self.current_token(execution_id)
    }

    /// Bumps the token unconditionally and returns the new one. Any holder of
    /// an older token is fenced out from here on.
    pub fn acquire_fence(&mut self, execution_id: &ExecutionId) -> u64 {
        let token = fence::next_token(self.current_token(execution_id));
        self.set_token(execution_id, token);
        token
    }

    /// Bumps the token only if it equals `expect.fence` and no answering event
    /// follows `expect.park_seq`; otherwise reports the current token and
    /// changes nothing.
    pub fn acquire_fence_if(
        &mut self,
        execution_id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, InputError> {
        check_safe("fence", expect.fence)?;
        // One lookup when the execution has an entry: the same decision on
        // its log and token. Without one it has no log, which the park
        // check refuses.
        if let Some(entry) = self.entries.get_mut(execution_id) {
            let answered = answered_in(&entry.log, expect.park_seq)?;
            let outcome = decide_acquire_if(entry.fence, expect, answered);
            if let AcquireOutcome::Acquired { fence } = outcome {
                entry.fence = fence;
            }
            return Ok(outcome);
        }
        let answered = answered_in(&[], expect.park_seq)?;
        let outcome = decide_acquire_if(0, expect, answered);
        if let AcquireOutcome::Acquired { fence } = outcome {
            self.set_token(execution_id, fence);
        }
        Ok(outcome)
    }

    /// Deletes the execution's log. A real token (above 0) is kept so a zombie
    /// writer of a re-created id stays fenced out; a 0 token carries nothing
    /// and goes. Returns whether a log existed.
    pub fn delete_execution(&mut self, execution_id: &ExecutionId) -> bool {
        let Some(entry) = self.entries.get_mut(execution_id) else {
            return false;
        };
        let records = entry.log.len();
        if entry.fence == 0 {
            self.entries.remove(execution_id);
        } else {
            entry.log = Vec::new();
            entry.open_park = None;
        }
        self.feed.forget(records);
        self.compact_feed();
        records > 0
    }

    /// Up to `limit` executions with a log whose ids follow `after` (from the
    /// first when `None`), in id order, each with its head and when it
    /// ended: one page of a retention sweep. An empty page is the end.
    pub fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, InputError> {
        let limit = check_page_limit(limit)?;
        Ok(self
            .entries
            .after(after)
            .filter(|(_, entry)| !entry.log.is_empty())
            .map(|(id, entry)| ExecutionSummary {
                execution_id: id.clone(),
                head: to_u64(entry.log.len()),
                ended: entry.log.iter().zip(1..).find_map(|(record, sequence)| {
                    Status::Pending
                        .after(KernelKind::from_name(&record.event.kind))
                        .is_terminal()
                        .then_some(Ended {
                            sequence,
                            at: record.event.at,
                        })
                }),
            })
            .take(limit as usize)
            .collect())
    }

    /// Deletes the execution's log, as [`MemoryStore::delete_execution`]
    /// does, only while `guard` still holds: the log's head is the one read,
    /// and no parent moved past the head its pin check saw. Otherwise says
    /// what changed and deletes nothing.
    pub fn delete_execution_if(
        &mut self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, InputError> {
        check_guard(guard)?;
        let head = to_u64(self.log(execution_id).len());
        if head != guard.head {
            return Ok(GuardedDelete::LogChanged { head });
        }
        for mark in &guard.parents {
            let log = self.log(&mark.parent);
            let after_seen = log
                .get(usize::try_from(mark.seen).unwrap_or(usize::MAX)..)
                .unwrap_or_default()
                .iter()
                .any(|record| record.answering);
            if parent_moved(to_u64(log.len()), mark.seen, after_seen) {
                return Ok(GuardedDelete::ParentMoved {
                    parent: mark.parent.clone(),
                });
            }
        }
        self.delete_execution(execution_id);
        Ok(GuardedDelete::Deleted)
    }

    /// Deletes each entry's log under its own guard, in order, as
    /// [`MemoryStore::delete_execution_if`] does: one outcome per entry.
    /// The batch is checked whole ([`check_delete_batch`]) before anything
    /// is deleted.
    pub fn delete_executions_if(
        &mut self,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, InputError> {
        check_delete_batch(batch)?;
        batch
            .iter()
            .map(|entry| self.delete_execution_if(&entry.execution_id, &entry.guard))
            .collect()
    }

    /// The ids of every execution with a log, in id order.
    pub fn executions(&self) -> impl Iterator<Item = &ExecutionId> {
        self.entries
            .iter()
            .filter(|(_, entry)| !entry.log.is_empty())
            .map(|(id, _)| id)
    }

    /// The execution's log, empty if it has none.
    fn log(&self, execution_id: &ExecutionId) -> &[Record] {
        self.entries
            .get(execution_id)
            .map_or(&[][..], |entry| entry.log.as_slice())
    }

    /// Stores a token, cloning the id only the first time an execution is
    /// fenced (the acquire path stays allocation-free after that).
    fn set_token(&mut self, execution_id: &ExecutionId, token: u64) {
        match self.entries.get_mut(execution_id) {
            Some(entry) => entry.fence = token,
            None => {
                let entry = Entry {
                    fence: token,
                    ..Entry::default()
                };
                self.entries.insert_new(execution_id, entry);
            }
        }
    }

    /// The token of an execution, 0 if nobody ever acquired.
    fn current_token(&self, execution_id: &ExecutionId) -> u64 {
        self.entries
            .get(execution_id)
            .map_or(0, |entry| entry.fence)
    }
}

/// Whether an answering event follows `park_seq` in `log`, where it must
/// name a park. Looks only at the park and the tail after it.
fn answered_in(log: &[Record], park_seq: u64) -> Result<bool, InputError> {
    check_park_seq(park_seq, to_u64(log.len()))?;
    check_is_park(park_seq, &log[to_index(park_seq - 1)].event.kind)?;
    Ok(log[to_index(park_seq)..]
        .iter()
        .any(|record| record.answering))
}

/// Widens a length to a sequence number. Lossless on every supported target.
fn to_u64(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// Narrows a sequence already bounded by a log's length to an index.
fn to_index(sequence: u64) -> usize {
    usize::try_from(sequence).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::KernelKind;

    fn e(id: &str) -> ExecutionId {
        ExecutionId::new(id).expect("valid id")
    }

    fn parked(store: &mut MemoryStore, id: &ExecutionId) -> u64 {
        store
            .append_many(
                id,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
                ],
            )
            .expect("appends")[1]
            .sequence
    }

    /// The hash seed changes where ids land in the map, never what the
    /// store answers: stores with the same writes are equal, hash alike and
    /// list in id order whatever their seeds.
    #[test]
    fn the_hash_seed_changes_nothing_a_caller_sees() {
        use std::hash::{BuildHasher as _, DefaultHasher};
        let ids: Vec<ExecutionId> = (0..200)
            .map(|i| e(&format!("x{}", (i * 7919) % 1000)))
            .collect();
        let fill = |mut store: MemoryStore| {
            for id in &ids {
                parked(&mut store, id);
            }
            store.delete_execution(&ids[3]);
            store
        };
        let stores = [0, 1, u64::MAX].map(|seed| fill(MemoryStore::with_hash_seed(seed)));
        let hash = |store: &MemoryStore| {
            std::hash::BuildHasherDefault::<DefaultHasher>::default().hash_one(store)
        };
        let listed =
            |store: &MemoryStore| store.list_executions(None, 1_000).expect("a valid limit");
        for store in &stores[1..] {
            assert_eq!(*store, stores[0]);
            assert_eq!(hash(store), hash(&stores[0]));
            assert_eq!(listed(store), listed(&stores[0]));
        }
        let mut sorted: Vec<_> = listed(&stores[0])
            .into_iter()
            .map(|s| s.execution_id)
            .collect();
        let in_order = sorted.clone();
        sorted.sort();
        assert_eq!(in_order, sorted);
        assert_eq!(in_order.len(), 199);
    }

    #[test]
    fn sequences_are_contiguous_across_batches() {
        let mut store = MemoryStore::new();
        let first = store
            .append(&e("e"), NewEvent::new("a", 0))
            .expect("appends");
        let batch = store
            .append_many(&e("e"), vec![NewEvent::new("b", 0), NewEvent::new("c", 0)])
            .expect("appends");
        assert_eq!(first.sequence, 1);
        assert_eq!(batch.iter().map(|e| e.sequence).collect::<Vec<_>>(), [2, 3]);
        let read = store.read_range(&e("e"), 2, None).expect("reads");
        assert_eq!(read, batch);
        assert_eq!(
            store.read_range(&e("e"), 0, Some(1)).expect("reads"),
            [first]
        );
        assert!(
            store
                .read_range(&e("e"), 3, Some(2))
                .expect("reads")
                .is_empty()
        );
        assert!(
            store
                .read_range(&e("other"), 1, None)
                .expect("reads")
                .is_empty()
        );
    }

    #[test]
    fn a_refused_batch_changes_nothing() {
        let mut store = MemoryStore::new();
        parked(&mut store, &e("e"));
        assert_eq!(store.acquire_fence(&e("e")), 1);
        let before = store.clone();
        let refused = store.append_many(
            &e("e"),
            vec![
                NewEvent::kernel(KernelKind::ExecutionDenied, 3),
                NewEvent::kernel(KernelKind::ExecutionResumed, 3),
            ],
        );
        assert!(matches!(refused, Err(AppendError::Stale(_))), "{refused:?}");
        assert_eq!(store, before);
    }

    #[test]
    fn acquire_if_ignores_answers_at_or_before_the_park() {
        let mut store = MemoryStore::new();
        let park = parked(&mut store, &e("e"));
        store
            .append(&e("e"), NewEvent::kernel(KernelKind::ExecutionDenied, 3))
            .expect("audit appends pass");
        let expect = ParkExpectation {
            fence: 0,
            park_seq: park,
        };
        assert_eq!(
            store.acquire_fence_if(&e("e"), expect),
            Ok(AcquireOutcome::Acquired { fence: 1 })
        );
        assert_eq!(
            store.acquire_fence_if(&e("e"), expect),
            Ok(AcquireOutcome::Stale { fence: 1 })
        );
    }

    #[test]
    fn append_if_parked_lands_once_per_park() {
        let mut store = MemoryStore::new();
        let park = parked(&mut store, &e("e"));
        let resume = || vec![NewEvent::kernel(KernelKind::ExecutionResumed, 3)];
        let first = store
            .append_if_parked(&e("e"), park, resume())
            .expect("valid");
        assert!(
            matches!(first, ConditionalAppend::Appended(ref events) if events[0].sequence == 3)
        );
        let before = store.clone();
        assert_eq!(
            store.append_if_parked(&e("e"), park, resume()),
            Ok(ConditionalAppend::ParkAnswered)
        );
        assert_eq!(store, before);
        assert_eq!(
            store.append_if_parked(&e("e"), 9, resume()),
            Err(AppendError::Input(InputError::ParkSeqOutOfRange {
                park_seq: 9,
                head: 3
            }))
        );
    }

    #[test]
    fn conditional_operations_need_a_park_at_park_seq() {
        let mut store = MemoryStore::new();
        parked(&mut store, &e("e"));
        let before = store.clone();
        let expect = ParkExpectation {
            fence: 0,
            park_seq: 1,
        };
        let not_a_park = InputError::NotAPark {
            park_seq: 1,
            kind: "EXECUTION_STARTED".to_owned(),
        };
        assert_eq!(
            store.acquire_fence_if(&e("e"), expect),
            Err(not_a_park.clone())
        );
        let resume = vec![NewEvent::kernel(KernelKind::ExecutionResumed, 3)];
        assert_eq!(
            store.append_if_parked(&e("e"), 1, resume),
            Err(AppendError::Input(not_a_park))
        );
        assert_eq!(store, before);
    }

    #[test]
    fn a_conditional_acquire_without_a_log_refuses_and_changes_nothing() {
        let mut store = MemoryStore::new();
        let expect = ParkExpectation {
            fence: 0,
            park_seq: 1,
        };
        let gone = Err(InputError::ParkSeqOutOfRange {
            park_seq: 1,
            head: 0,
        });
        assert_eq!(store.acquire_fence_if(&e("none"), expect), gone);
        assert_eq!(store, MemoryStore::new());
        // A token without a log (a fenced execution, deleted): the same.
        parked(&mut store, &e("deleted"));
        assert_eq!(store.acquire_fence(&e("deleted")), 1);
        assert!(store.delete_execution(&e("deleted")));
        let before = store.clone();
        assert_eq!(store.acquire_fence_if(&e("deleted"), expect), gone);
        assert_eq!(store, before);
        assert_eq!(store.current_fence(&e("deleted")), 1);
    }

    #[test]
    fn equal_stores_print_and_hash_alike_whatever_the_order_of_writes() {
        use std::hash::BuildHasher as _;
        let ids = ["b", "a", "c", "aa"];
        let mut forward = MemoryStore::new();
        let mut backward = MemoryStore::new();
        for id in ids {
            parked(&mut forward, &e(id));
        }
        for id in ids.iter().rev() {
            parked(&mut backward, &e(id));
        }
        // The feed positions differ; the entries and their order do not.
        assert_eq!(
            forward
                .entries
                .iter()
                .map(|(id, _)| id.as_str())
                .collect::<Vec<_>>(),
            ["a", "aa", "b", "c"]
        );
        let entries = |store: &MemoryStore| {
            store
                .entries
                .iter()
                .map(|(id, entry)| (id.clone(), entry.log.len(), entry.fence))
                .collect::<Vec<_>>()
        };
        assert_eq!(entries(&forward), entries(&backward));
        let mut copy = MemoryStore::new();
        for id in ids {
            parked(&mut copy, &e(id));
        }
        let hasher = std::collections::hash_map::RandomState::new();
        assert_eq!(forward, copy);
        assert_eq!(hasher.hash_one(&forward), hasher.hash_one(&copy));
        assert_eq!(format!("{forward:?}"), format!("{copy:?}"));
        let text = format!("{:?}", forward.entries);
        assert!(text.find("\"a\"") < text.find("\"b\""), "{text}");
    }

    #[test]
    fn delete_keeps_real_tokens_only() {
        let mut store = MemoryStore::new();
        parked(&mut store, &e("zero"));
        parked(&mut store, &e("real"));
        let _ = store.acquire_fence(&e("real"));
        assert!(store.delete_execution(&e("zero")));
        assert!(store.delete_execution(&e("real")));
        assert!(!store.delete_execution(&e("real")));
        assert!(!store.entries.contains_key(&e("zero")));
        assert_eq!(store.current_fence(&e("real")), 1);
        assert_eq!(store.executions().count(), 0);
    }
}
