//! The memory store's executions: a hash map for the lookups every call
//! makes, and the ids in order beside it for the listings that page by id
//! (retention's `list_executions`, the follower's `open_parks`).
//!
//! One sorted map did both, and every append, read and acquire paid a
//! B-tree search of string compares for it (some 17 per park and resume
//! at 10,000 executions). The order is now touched only when an execution
//! appears or goes.
//!
//! The map hashes with [`IdHasher`]: SipHash started from a seed the host
//! hands in ([`MemoryStore::with_hash_seed`](super::MemoryStore::with_hash_seed)),
//! never std's `RandomState`, which draws its keys from the operating
//! system: the core reads no random source of its own, and the same seed
//! gives the same store everywhere.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher};
use std::ops::Bound;

use crate::input::ExecutionId;

use super::Entry;

/// Builds the map's hashers: std's SipHash (`DefaultHasher`, fixed keys)
/// fed the seed before each id. Ids a caller chooses cannot be made to
/// collide without the seed, and the same seed hashes alike on every
/// platform. Equality and hashing of the store ignore it (a map compares
/// its entries, not its hasher).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct IdHasher {
    /// The host's seed.
    seed: u64,
}

impl IdHasher {
    /// Hashers that start from `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Self { seed }
    }
}

impl BuildHasher for IdHasher {
    type Hasher = DefaultHasher;

    fn build_hasher(&self) -> DefaultHasher {
        let mut hasher = DefaultHasher::new();
        hasher.write_u64(self.seed);
        hasher
    }
}

/// Each execution's entry, found by hashing its id, and the ids in order.
/// Both always hold the same ids.
#[derive(Clone, Default, PartialEq, Eq)]
pub(super) struct Entries {
    /// The entries.
    by_id: HashMap<ExecutionId, Entry, IdHasher>,
    /// The same ids, in order.
    order: BTreeSet<ExecutionId>,
}

/// The entries in id order, as the one sorted map printed them: the same
/// store prints the same text whatever order the hash map holds them in.
impl fmt::Debug for Entries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Hashes the entries in id order, so two equal stores hash alike whatever
/// order the map holds them in.
impl Hash for Entries {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.by_id.len());
        for (id, entry) in self.iter() {
            id.hash(state);
            entry.hash(state);
        }
    }
}

impl Entries {
    /// No entries; ids hashed from `seed`.
    pub(super) fn with_seed(seed: u64) -> Self {
        Self {
            by_id: HashMap::with_hasher(IdHasher::new(seed)),
            order: BTreeSet::new(),
        }
    }

    /// The entry of `id`.
    pub(super) fn get(&self, id: &ExecutionId) -> Option<&Entry> {
        self.by_id.get(id)
    }

    /// The entry of `id`, with the id as the map holds it.
    pub(super) fn get_key_value(&self, id: &ExecutionId) -> Option<(&ExecutionId, &Entry)> {
        self.by_id.get_key_value(id)
    }

    /// The entry of `id`, to change.
    pub(super) fn get_mut(&mut self, id: &ExecutionId) -> Option<&mut Entry> {
        self.by_id.get_mut(id)
    }

    /// Adds `entry` for `id`, which has none; answers it, to change.
    pub(super) fn insert_new(&mut self, id: &ExecutionId, entry: Entry) -> &mut Entry {
        self.order.insert(id.clone());
        self.by_id.entry(id.clone()).or_insert(entry)
    }

    /// Removes the entry of `id`.
    pub(super) fn remove(&mut self, id: &ExecutionId) {
        if self.by_id.remove(id).is_some() {
            self.order.remove(id);
        }
    }

    /// Every entry, in id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&ExecutionId, &Entry)> {
        self.after(None)
    }

    /// The entries whose ids follow `after` (from the first when `None`),
    /// in id order.
    pub(super) fn after(
        &self,
        after: Option<&ExecutionId>,
    ) -> impl Iterator<Item = (&ExecutionId, &Entry)> {
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.order
            .range::<ExecutionId, _>((start, Bound::Unbounded))
            .map(|id| (id, &self.by_id[id]))
    }

    /// Whether `id` has an entry.
    #[cfg(test)]
    pub(super) fn contains_key(&self, id: &ExecutionId) -> bool {
        self.by_id.contains_key(id)
    }
}
