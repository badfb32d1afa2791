//! `AccountVersions`: the newest version of the accounts written recently, published with each
//! snapshot, so that reads of them at the head skip sled's reverse range scan.
//!
//! An account read is "the newest version at or before block N": a reverse range scan, which
//! in sled copies a whole leaf node and often seeks its predecessor. After 50,000 blocks that
//! was ~36 µs of every sequential transfer (the pool's nonce check, the executor's three
//! reads, the block writer's previous versions), nearly all of it for accounts the previous
//! block had just written. So every commit records what it writes: the newest version of an
//! account is block `v`'s, and a read at any N ≥ v is answered from memory. Reads at older
//! blocks, and of accounts not written since the store was opened, go to the store.
//!
//! The value is immutable: the writer builds the next one from the last (`with`) and publishes
//! it inside the readers' snapshot, so readers take no lock and never write to it. Building is
//! cheap because the value is layered: each commit adds one small map on top (shared with the
//! previous value by `Arc`); every [`LAYERS`] commits the layers are merged into a middle map,
//! and when that holds more than [`MID_ENTRIES`] accounts it is merged into the hot generation
//! (copying it); the hot generation turns cold when it passes [`GENERATION_ENTRIES`], and the
//! cold one is dropped. A commit that removes a version (a revert) records the account's
//! version the store holds after it, read back by the writer, or "unknown" (ask the store).

use std::sync::Arc;

use alloy_primitives::Address;
use alloy_primitives::map::AddressMap;
use alloy_rlp::Decodable;

use crate::journal::WriteBatch;
use crate::layout;
use crate::records::StoredAccount;

/// Accounts per generation: at most about twice this many are kept (~200 bytes each).
const GENERATION_ENTRIES: usize = 16 * 1024;

/// Commits kept as separate layers before they are merged: a lookup probes at most this many
/// small maps before the merged ones.
const LAYERS: usize = 16;

/// Accounts the middle map holds before it is merged into the hot generation: bounds the copy
/// each layer merge makes.
const MID_ENTRIES: usize = 1024;

/// The newest version of an account: written at `block`; `None` when it was deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Newest {
    pub(crate) block: u64,
    pub(crate) account: Option<StoredAccount>,
}

/// What is known of one account: its newest version, or `None`: ask the store.
type Known = Option<Newest>;

/// One commit's account versions, over the commits before it.
#[derive(Debug)]
struct Layer {
    changes: AddressMap<Known>,
    below: Option<Arc<Self>>,
}

/// The newest versions of recently written accounts, as of one snapshot. Cheap to clone.
#[derive(Debug, Default, Clone)]
pub(crate) struct AccountVersions {
    /// The last commits' changes, newest first, at most [`LAYERS`] of them.
    recent: Option<Arc<Layer>>,
    depth: usize,
    /// Older layers merged, at most about [`MID_ENTRIES`] accounts.
    mid: Arc<AddressMap<Known>>,
    /// Older still: the hot generation, then the cold one.
    hot: Arc<AddressMap<Known>>,
    cold: Arc<AddressMap<Known>>,
}

impl AccountVersions {
    /// The account as of block `number`, when its newest version is known and not after
    /// `number` (`Some(None)`: it does not exist); `None` when the store must be asked.
    pub(crate) fn get(&self, address: &Address, number: u64) -> Option<Option<StoredAccount>> {
        let newest = self.lookup(address)?.as_ref()?;
        (newest.block <= number).then(|| newest.account.clone())
    }

    fn lookup(&self, address: &Address) -> Option<&Known> {
        let mut layer = self.recent.as_deref();
        while let Some(current) = layer {
            if let Some(known) = current.changes.get(address) {
                return Some(known);
            }
            layer = current.below.as_deref();
        }
        self.mid.get(address).or_else(|| self.hot.get(address)).or_else(|| self.cold.get(address))
    }

    /// These versions with `changes` (one commit's, in order) on top.
    #[must_use]
    pub(crate) fn with(&self, changes: AccountChanges) -> Self {
        if changes.0.is_empty() {
            return self.clone();
        }
        let mut next = self.clone();
        let mut layer = AddressMap::default();
        for (address, known) in changes.0 {
            layer.insert(address, known);
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
            for (address, known) in &layer.changes {
                mid.insert(*address, known.clone());
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

    /// How many account entries are held, over every layer (tests).
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

/// The account-version operations of one commit's batch, in order: each account with the
/// version written (`None`: a version removed, or a value that does not decode).
#[derive(Debug, Default)]
pub(crate) struct AccountChanges(Vec<(Address, Option<Newest>)>);

impl AccountChanges {
    /// Replaces each `None` (a removed version) with what `newest` says the store holds now
    /// (`None` again: unknown, the store is asked).
    pub(crate) fn resolve_removed<E>(
        &mut self,
        mut newest: impl FnMut(&Address) -> Result<Option<Newest>, E>,
    ) -> Result<(), E> {
        for (address, change) in &mut self.0 {
            if change.is_none() {
                *change = newest(address)?;
            }
        }
        Ok(())
    }

    pub(crate) fn of(batch: &WriteBatch) -> Self {
        let changes = batch
            .account_ops()
            .filter_map(|(key, value)| {
                let (address, block) = layout::account_key_parts(key)?;
                let newest = match value {
                    Some([]) => Some(Newest { block, account: None }),
                    Some(mut value) => StoredAccount::decode(&mut value)
                        .ok()
                        .map(|account| Newest { block, account: Some(account) }),
                    None => None,
                };
                Some((address, newest))
            })
            .collect();
        Self(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

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
            .resolve_removed(|_| Ok::<_, ()>(Some(Newest { block: 4, account: Some(account(2)) })))
            .unwrap();
        let resolved = deleted.with(changes);
        assert_eq!(resolved.get(&a, 6), Some(Some(account(2))), "the version read back");
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
