//! `Versions`: the newest version of the accounts and storage slots written recently,
//! published with each snapshot, so that reads of them at the head skip sled's reverse range
//! scan.
//!
//! An account or slot read is "the newest version at or before block N": a reverse range scan,
//! which in sled copies a whole leaf node and often seeks its predecessor. After 50,000 blocks
//! that was ~36 µs of every sequential transfer (the pool's nonce check, the executor's three
//! reads, the block writer's previous versions), nearly all of it for accounts the previous
//! block had just written; slots came later (issue 38): a test suite's contracts read back
//! the slots its last transactions wrote. So every commit records what it writes: the newest
//! version of an account or slot is block `v`'s, and a read at any N ≥ v is answered from
//! memory. Reads at older blocks, and of keys not written since the store was opened, go to the store.
//!
//! The value is immutable: the writer builds the next one from the last (`with`) and publishes
//! it inside the readers' snapshot, so readers take no lock and never write to it. Building is
//! cheap because the value is layered: each commit adds one small map on top (shared with the
//! previous value by `Arc`); every [`LAYERS`] commits the layers are merged into a middle map,
//! and when that holds more than [`MID_ENTRIES`] keys it is merged into the hot generation
//! (copying it); the hot generation turns cold when it passes [`GENERATION_ENTRIES`], and the
//! cold one is dropped. A commit that removes a version (a revert) records the account's
//! version the store holds after it, read back by the writer, or "unknown" (ask the store);
//! a removed slot version is always "unknown".

use std::hash::Hash;
use std::sync::Arc;

use alloy_primitives::map::HashMap;
use alloy_primitives::{Address, U256};
use alloy_rlp::Decodable;

use crate::journal::WriteBatch;
use crate::layout;
use crate::records::StoredAccount;

/// Keys per generation: at most about twice this many are kept (~200 bytes each).
const GENERATION_ENTRIES: usize = 16 * 1024;

/// Commits kept as separate layers before they are merged: a lookup probes at most this many
/// small maps before the merged ones.
const LAYERS: usize = 16;

/// Keys the middle map holds before it is merged into the hot generation: bounds the copy
/// each layer merge makes.
const MID_ENTRIES: usize = 1024;

/// The newest version of an account or slot: written at `block`; `None` when it was deleted
/// (a slot: set to zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Newest<V> {
    pub(crate) block: u64,
    pub(crate) value: Option<V>,
}

/// What is known of one key: its newest version, or `None`: ask the store.
type Known<V> = Option<Newest<V>>;

/// A storage slot's identity: the account, its storage incarnation, the slot.
pub(crate) type SlotId = (Address, u64, U256);

/// The newest versions of recently written accounts.
pub(crate) type AccountVersions = Versions<Address, StoredAccount>;

/// The newest values of recently written storage slots.
pub(crate) type SlotVersions = Versions<SlotId, U256>;

/// One commit's versions, over the commits before it.
#[derive(Debug)]
struct Layer<K, V> {
    changes: HashMap<K, Known<V>>,
    below: Option<Arc<Self>>,
}

/// The newest versions of recently written keys, as of one snapshot. Cheap to clone.
#[derive(Debug)]
pub(crate) struct Versions<K, V> {
    /// The last commits' changes, newest first, at most [`LAYERS`] of them.
    recent: Option<Arc<Layer<K, V>>>,
    depth: usize,
    /// Older layers merged, at most about [`MID_ENTRIES`] keys.
    mid: Arc<HashMap<K, Known<V>>>,
    /// Older still: the hot generation, then the cold one.
    hot: Arc<HashMap<K, Known<V>>>,
    cold: Arc<HashMap<K, Known<V>>>,
}

impl<K, V> Default for Versions<K, V> {
    fn default() -> Self {
        Self {
            recent: None,
            depth: 0,
            mid: Arc::default(),
            hot: Arc::default(),
            cold: Arc::default(),
        }
    }
}

impl<K, V> Clone for Versions<K, V> {
    fn clone(&self) -> Self {
        Self {
            recent: self.recent.clone(),
            depth: self.depth,
            mid: Arc::clone(&self.mid),
            hot: Arc::clone(&self.hot),
            cold: Arc::clone(&self.cold),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Versions<K, V> {
    /// The value as of block `number`, when its newest version is known and not after
    /// `number` (`Some(None)`: deleted); `None` when the store must be asked.
    pub(crate) fn get(&self, key: &K, number: u64) -> Option<Option<V>> {
        let newest = self.lookup(key)?.as_ref()?;
        (newest.block <= number).then(|| newest.value.clone())
    }

    fn lookup(&self, key: &K) -> Option<&Known<V>> {
        let mut layer = self.recent.as_deref();
        while let Some(current) = layer {
            if let Some(known) = current.changes.get(key) {
                return Some(known);
            }
            layer = current.below.as_deref();
        }
        self.mid.get(key).or_else(|| self.hot.get(key)).or_else(|| self.cold.get(key))
    }

    /// These versions with `changes` (one commit's, in order) on top.
    #[must_use]
    pub(crate) fn with(&self, changes: Changes<K, V>) -> Self {
        if changes.0.is_empty() {
            return self.clone();
        }
        let mut next = self.clone();
        let mut layer = HashMap::default();
        for (key, known) in changes.0 {
            layer.insert(key, known);
        }
        next.recent = Some(Arc::new(Layer { changes: layer, below: self.recent.clone() }));
        next.depth += 1;
        if next.depth > LAYERS {
            next.merge_layers();
        }
        next
    }

    /// Merges the layers into the middle map, and that into the hot generation when it has
    /// grown past [`MID_ENTRIES`].
    fn merge_layers(&mut self) {
        let mut layers = Vec::with_capacity(self.depth);
        let mut layer = self.recent.take();
        while let Some(current) = layer {
            layer = current.below.clone();
            layers.push(current);
        }
        self.depth = 0;
        let mut mid = (*self.mid).clone();
        for layer in layers.iter().rev() {
            for (key, known) in &layer.changes {
                mid.insert(key.clone(), known.clone());
            }
        }
        if mid.len() <= MID_ENTRIES {
            self.mid = Arc::new(mid);
            return;
        }
        self.mid = Arc::default();
        if self.hot.len() + mid.len() > GENERATION_ENTRIES {
            // The middle map's entries shadow the old hot generation, which turns cold.
            self.cold = std::mem::replace(&mut self.hot, Arc::new(mid));
        } else {
            let mut hot = (*self.hot).clone();
            hot.extend(mid);
            self.hot = Arc::new(hot);
        }
    }

    /// How many entries are held, over every layer (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        let mut len = self.mid.len() + self.hot.len() + self.cold.len();
        let mut layer = self.recent.as_deref();
        while let Some(current) = layer {
            len += current.changes.len();
            layer = current.below.as_deref();
        }
        len
    }
}

/// The version operations of one commit's batch on one kind of key, in order: each key with
/// the version written (`None`: a version removed, or a value that does not decode).
#[derive(Debug)]
pub(crate) struct Changes<K, V>(Vec<(K, Option<Newest<V>>)>);

/// One commit's account versions.
pub(crate) type AccountChanges = Changes<Address, StoredAccount>;

/// One commit's slot values.
pub(crate) type SlotChanges = Changes<SlotId, U256>;

impl<K, V> Changes<K, V> {
    /// Replaces each `None` (a removed version) with what `newest` says the store holds now
    /// (`None` again: unknown, the store is asked).
    pub(crate) fn resolve_removed<E>(
        &mut self,
        mut newest: impl FnMut(&K) -> Result<Option<Newest<V>>, E>,
    ) -> Result<(), E> {
        for (key, change) in &mut self.0 {
            if change.is_none() {
                *change = newest(key)?;
            }
        }
        Ok(())
    }
}

impl AccountChanges {
    pub(crate) fn of(batch: &WriteBatch) -> Self {
        let changes = batch
            .ops_on(layout::ACCOUNT)
            .filter_map(|(key, value)| {
                let (address, block) = layout::account_key_parts(key)?;
                let newest = match value {
                    Some([]) => Some(Newest { block, value: None }),
                    Some(mut value) => StoredAccount::decode(&mut value)
                        .ok()
                        .map(|account| Newest { block, value: Some(account) }),
                    None => None,
                };
                Some((address, newest))
            })
            .collect();
        Self(changes)
    }
}

impl SlotChanges {
    pub(crate) fn of(batch: &WriteBatch) -> Self {
        let changes = batch
            .ops_on(layout::STORAGE)
            .filter_map(|(key, value)| {
                let (address, incarnation, slot, block) = layout::storage_key_parts(key)?;
                // A value that is not a slot's (never written) leaves the slot unknown.
                let newest = value.and_then(|value| match value {
                    [] => Some(Newest { block, value: None }),
                    _ => U256::try_from_be_slice(value)
                        .map(|value| Newest { block, value: Some(value) }),
                });
                Some(((address, incarnation, slot), newest))
            })
            .collect();
        Self(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(nonce: u64) -> StoredAccount {
        StoredAccount::new(nonce, U256::from(nonce * 10), 0)
    }

    #[test]
    fn answers_reads_at_or_after_the_newest_version_and_forgets_removed_ones() {
        let empty = AccountVersions::default();
        let a = Address::repeat_byte(1);
        assert!(empty.get(&a, 5).is_none(), "never written: ask the store");

        let mut block = WriteBatch::default();
        block.insert(layout::account_key(&a, 3), alloy_rlp::encode(account(1)));
        block.insert(layout::account_key(&a, 4), alloy_rlp::encode(account(2)));
        let written = empty.with(AccountChanges::of(&block));
        assert_eq!(written.get(&a, 4), Some(Some(account(2))));
        assert_eq!(written.get(&a, 9), Some(Some(account(2))));
        assert!(written.get(&a, 3).is_none(), "older blocks: ask the store");
        assert!(empty.get(&a, 5).is_none(), "an earlier value never changes");

        let mut deleted = WriteBatch::default();
        deleted.insert(layout::account_key(&a, 6), []);
        let deleted = written.with(AccountChanges::of(&deleted));
        assert_eq!(deleted.get(&a, 6), Some(None));

        let mut revert = WriteBatch::default();
        revert.remove(layout::account_key(&a, 6));
        let unknown = deleted.with(AccountChanges::of(&revert));
        assert!(unknown.get(&a, 6).is_none(), "a removed version: ask the store");
        let mut changes = AccountChanges::of(&revert);
        changes
            .resolve_removed(|_| Ok::<_, ()>(Some(Newest { block: 4, value: Some(account(2)) })))
            .unwrap();
        let resolved = deleted.with(changes);
        assert_eq!(resolved.get(&a, 6), Some(Some(account(2))), "the version read back");
    }

    #[test]
    fn slot_values_are_kept_per_incarnation_and_forgotten_when_removed() {
        let a = Address::repeat_byte(2);
        let (slot, other) = (U256::from(7), U256::from(8));
        let mut block = WriteBatch::default();
        block.insert(layout::storage_key(&a, 1, &slot, 3), U256::from(42).to_be_bytes::<32>());
        block.insert(layout::storage_key(&a, 1, &other, 3), []);
        let written = SlotVersions::default().with(SlotChanges::of(&block));
        assert_eq!(written.get(&(a, 1, slot), 3), Some(Some(U256::from(42))));
        assert_eq!(written.get(&(a, 1, other), 5), Some(None), "an empty value is zero");
        assert!(written.get(&(a, 1, slot), 2).is_none(), "older blocks: ask the store");
        assert!(written.get(&(a, 2, slot), 3).is_none(), "another incarnation: ask the store");

        let mut revert = WriteBatch::default();
        revert.remove(layout::storage_key(&a, 1, &slot, 3));
        let reverted = written.with(SlotChanges::of(&revert));
        assert!(reverted.get(&(a, 1, slot), 3).is_none(), "a removed version: ask the store");
        assert_eq!(reverted.get(&(a, 1, other), 3), Some(None));
    }

    #[test]
    fn merged_layers_keep_the_newest_version_and_stay_within_two_generations() {
        let mut versions = AccountVersions::default();
        let total = 3 * GENERATION_ENTRIES as u64;
        let shared = Address::repeat_byte(0xee);
        for i in 0..total {
            let mut batch = WriteBatch::default();
            let address = Address::left_padding_from(&i.to_be_bytes());
            batch.insert(layout::account_key(&address, i), alloy_rlp::encode(account(i)));
            // One account written by every block: its newest version must always win.
            batch.insert(layout::account_key(&shared, i), alloy_rlp::encode(account(i)));
            versions = versions.with(AccountChanges::of(&batch));
            assert_eq!(versions.get(&shared, i), Some(Some(account(i))));
        }
        assert!(versions.len() <= 2 * GENERATION_ENTRIES + MID_ENTRIES + 2 * LAYERS + 2);
        let newest = Address::left_padding_from(&(total - 1).to_be_bytes());
        assert_eq!(versions.get(&newest, total), Some(Some(account(total - 1))));
    }
}
