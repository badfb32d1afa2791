//! What the engine actor remembers between calls, each bounded by count (oldest dropped
//! first): blocks off the canonical chain (side blocks, checked or not yet), the payloads it
//! built, and the blocks it found invalid.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use alloy_primitives::B256;
use hearth_messages::engine::{PayloadId, ReceivedPayload};
use hearth_messages::payload::BuiltPayload;

/// Most side blocks kept. A consensus client sends a few competing blocks per slot and a
/// sequencer one; 64 covers a reorg of that depth. A block's memory is its transactions,
/// receipts and state diff, so this bounds memory by 64 blocks.
pub(crate) const MAX_SIDE_BLOCKS: usize = 64;
/// Most built payloads kept: a consensus client fetches a payload within its slot.
pub(crate) const MAX_PAYLOADS: usize = 16;
/// Most invalid block hashes remembered (32 bytes and an ancestor each).
pub(crate) const MAX_INVALID: usize = 1024;

/// A block received or built that is not (yet) on the canonical chain.
#[derive(Debug, Clone)]
pub(crate) enum Side {
    /// Executed on its parent and checked: committing it needs no second run while the
    /// parent's state is the one it was checked on.
    Checked(Arc<BuiltPayload>),
    /// Kept as received: its parent was not on the canonical chain when it came.
    Unchecked(Arc<ReceivedPayload>),
}

impl Side {
    pub(crate) fn hash(&self) -> B256 {
        match self {
            Self::Checked(built) => built.block.hash,
            Self::Unchecked(received) => received.hash,
        }
    }

    pub(crate) fn parent_hash(&self) -> B256 {
        match self {
            Self::Checked(built) => built.block.header.parent_hash,
            Self::Unchecked(received) => received.header.parent_hash,
        }
    }
}

/// A map bounded by count, dropping the oldest entry first.
#[derive(Debug)]
struct Bounded<K, V> {
    entries: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

impl<K: std::hash::Hash + Eq + Copy, V> Bounded<K, V> {
    fn new(cap: usize) -> Self {
        Self { entries: HashMap::new(), order: VecDeque::new(), cap }
    }

    fn insert(&mut self, key: K, value: V) {
        if self.entries.insert(key, value).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.cap {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
    }

    fn remove(&mut self, key: &K) {
        if self.entries.remove(key).is_some() {
            self.order.retain(|k| k != key);
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.entries.get(key)
    }
}

/// Everything the engine actor keeps.
#[derive(Debug)]
pub(crate) struct Kept {
    side: Bounded<B256, Side>,
    payloads: Bounded<PayloadId, Arc<BuiltPayload>>,
    /// Invalid block hash -> its newest valid ancestor, when known.
    invalid: Bounded<B256, Option<B256>>,
}

impl Default for Kept {
    fn default() -> Self {
        Self {
            side: Bounded::new(MAX_SIDE_BLOCKS),
            payloads: Bounded::new(MAX_PAYLOADS),
            invalid: Bounded::new(MAX_INVALID),
        }
    }
}

/// What one call learned, applied to [`Kept`] on the actor once the call's work is done.
#[derive(Debug)]
pub(crate) enum Learned {
    /// A block to keep off the canonical chain.
    Side(Side),
    /// A block now on the canonical chain: no longer a side block.
    Committed(B256),
    /// A block found invalid, with its newest valid ancestor.
    Invalid(B256, Option<B256>),
    /// A payload built under an id.
    Payload(PayloadId, Arc<BuiltPayload>),
}

impl Kept {
    pub(crate) fn side(&self, hash: &B256) -> Option<&Side> {
        self.side.get(hash)
    }

    pub(crate) fn invalid(&self, hash: &B256) -> Option<Option<B256>> {
        self.invalid.get(hash).copied()
    }

    pub(crate) fn payload(&self, id: &PayloadId) -> Option<Arc<BuiltPayload>> {
        self.payloads.get(id).cloned()
    }

    pub(crate) fn learn(&mut self, learned: Vec<Learned>) {
        for item in learned {
            match item {
                Learned::Side(side) => self.side.insert(side.hash(), side),
                Learned::Committed(hash) => self.side.remove(&hash),
                Learned::Invalid(hash, ancestor) => {
                    self.side.remove(&hash);
                    self.invalid.insert(hash, ancestor);
                }
                Learned::Payload(id, built) => {
                    self.side.insert(built.block.hash, Side::Checked(Arc::clone(&built)));
                    self.payloads.insert(id, built);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entry_goes_first() {
        let mut map = Bounded::new(2);
        map.insert(1, "a");
        map.insert(2, "b");
        map.insert(1, "a again");
        map.insert(3, "c");
        assert_eq!(map.get(&1), None);
        assert_eq!(map.get(&2), Some(&"b"));
        assert_eq!(map.get(&3), Some(&"c"));
        map.remove(&2);
        assert_eq!(map.order.len(), 1);
    }
}
