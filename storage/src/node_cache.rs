//! `NodeCache`: the trie nodes the block writer wrote recently, kept in memory so the next
//! blocks load the upper levels of the tries without reading the store.
//!
//! Every block rewrites the top of the state trie (the root, its 16 children, ...), and the
//! next block loads exactly those nodes again: without a cache each of them is a sled read.
//! The cache holds only nodes whose batch is already durable, so it is always a subset of the
//! store; nodes are addressed by hash and never change, so an entry can never be stale.
//!
//! Eviction is by two generations, a cheap approximation of LRU: inserts go to `hot`; when `hot`
//! holds half the budget it becomes `cold` (the previous `cold` is dropped). A lookup sees
//! both. A node that is read and changed gets re-inserted under its new hash, so what the
//! writer keeps touching stays in `hot`.
//!
//! Owned by the block writer (one owner, no lock); readers (RPC proofs) read the store.

use alloy_primitives::B256;
use alloy_primitives::map::B256Map;

use crate::trie::NodeSource;
use crate::{ChainDb, StorageError};

/// Bookkeeping bytes counted per entry on top of the RLP: the key, the map slot and the shared
/// buffer's header. Approximate: the budget is a bound on memory, not an exact figure.
const ENTRY_OVERHEAD: usize = 80;

/// Recently written trie nodes by hash, within a memory budget.
#[derive(Debug, Default)]
pub struct NodeCache {
    hot: B256Map<sled::IVec>,
    cold: B256Map<sled::IVec>,
    hot_bytes: usize,
    capacity_bytes: usize,
}

impl NodeCache {
    /// A cache holding up to about `capacity_bytes` of nodes; 0 disables it.
    pub fn new(capacity_bytes: usize) -> Self {
        Self { capacity_bytes, ..Self::default() }
    }

    /// Whether the cache keeps anything at all.
    pub const fn is_enabled(&self) -> bool {
        self.capacity_bytes > 0
    }

    /// The RLP of node `hash`, if cached.
    pub fn get(&self, hash: &B256) -> Option<&[u8]> {
        self.hot.get(hash).or_else(|| self.cold.get(hash)).map(|rlp| &rlp[..])
    }

    /// Keeps node `hash`. The caller guarantees it is durable in the store.
    ///
    /// `rlp` is the same reference-counted buffer the store batch holds, so caching a node
    /// costs no copy.
    pub fn insert(&mut self, hash: B256, rlp: sled::IVec) {
        if !self.is_enabled() {
            return;
        }
        let size = rlp.len() + ENTRY_OVERHEAD;
        if self.hot.insert(hash, rlp).is_none() {
            self.hot_bytes += size;
        }
        if self.hot_bytes > self.capacity_bytes / 2 {
            self.cold = std::mem::take(&mut self.hot);
            self.hot_bytes = 0;
        }
    }

    /// Nodes cached (both generations; a node may be counted twice).
    pub fn len(&self) -> usize {
        self.hot.len() + self.cold.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.hot.is_empty() && self.cold.is_empty()
    }
}

/// The store seen through the cache: cached nodes are copied from memory, the rest read from
/// sled.
#[derive(Debug)]
pub(crate) struct CachedNodes<'a> {
    pub(crate) db: &'a ChainDb,
    pub(crate) cache: &'a NodeCache,
    /// Nodes read from the store (cache misses), for [`crate::WriteTimings`].
    pub(crate) store_reads: std::cell::Cell<u64>,
}

impl<'a> CachedNodes<'a> {
    pub(crate) const fn new(db: &'a ChainDb, cache: &'a NodeCache) -> Self {
        Self { db, cache, store_reads: std::cell::Cell::new(0) }
    }
}

impl NodeSource for CachedNodes<'_> {
    fn node_into(&self, hash: &B256, out: &mut Vec<u8>) -> Result<bool, StorageError> {
        match self.cache.get(hash) {
            Some(rlp) => {
                out.clear();
                out.extend_from_slice(rlp);
                Ok(true)
            }
            None => {
                self.store_reads.set(self.store_reads.get() + 1);
                self.db.node_into(hash, out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(i: u8) -> (B256, sled::IVec) {
        (B256::repeat_byte(i), sled::IVec::from(vec![i; 100]))
    }

    #[test]
    fn keeps_the_two_most_recent_generations() {
        // Room for about two entries per generation.
        let mut cache = NodeCache::new(2 * 2 * (100 + ENTRY_OVERHEAD));
        for i in 0..3 {
            let (hash, rlp) = node(i);
            cache.insert(hash, rlp);
        }
        // Entries 0..=2 filled `hot` past half the budget: it became `cold`.
        assert!((0..3).all(|i| cache.get(&node(i).0).is_some()));
        for i in 3..6 {
            let (hash, rlp) = node(i);
            cache.insert(hash, rlp);
        }
        assert!((0..3).all(|i| cache.get(&node(i).0).is_none()), "the oldest generation is gone");
        assert_eq!(cache.get(&node(5).0), Some(&[5u8; 100][..]));
    }

    #[test]
    fn a_disabled_cache_keeps_nothing() {
        let mut cache = NodeCache::new(0);
        let (hash, rlp) = node(1);
        cache.insert(hash, rlp);
        assert!(cache.is_empty());
        assert_eq!(cache.get(&hash), None);
    }
}
