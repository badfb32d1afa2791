//! `Published`: the values a parallel block's committer has committed so far, for its helpers
//! to read (the block's multi-version memory, keeping the newest version of each key).
//!
//! The committer is its only writer: after committing transaction `i` it publishes the
//! accounts, slots and code `i` wrote, as its own database now holds them, with `i` (the
//! version, which orders a slot's write against a wipe of its account's storage). Helpers read
//! it before the block's start state, so a run sees what the block committed up to the moment
//! of each read, without keeping a copy of the block's state or replaying the commits.
//!
//! A helper's view may mix versions (one key read before a commit, another after). That is
//! safe because the committer validates every value a run read of a key the block wrote by
//! comparing it with its own state (`Committer::validate`): a run is committed only when every
//! such value is what sequential execution would have read there. Which keys the block wrote
//! the committer knows from its own changes, so validation does not read this memory: the
//! helpers' reads and the committer's writes are the only traffic on it.
//!
//! The maps are split in shards, each behind its own mutex, held for one lookup or insert: the
//! committer and a helper meet on a shard only when they touch keys that hash alike. The
//! block owns this memory for its lifetime; nothing on the request path sees it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crossbeam_utils::CachePadded;

use alloy_primitives::map::{AddressMap, B256Map, HashMap};
use alloy_primitives::{Address, B256, U256};
use revm::bytecode::Bytecode;
use revm::state::AccountInfo;

/// Shards of each map. A power of two; 16 keeps two or three threads from meeting often.
const SHARDS: usize = 16;

/// An account as committed: `None` when the block deleted it.
type Committed = Option<AccountInfo>;

/// (address, slot) -> (the transaction that wrote it last, its value).
type SlotShard = HashMap<(Address, U256), (usize, U256)>;

#[derive(Debug, Default)]
struct AccountShard {
    /// The account as the last transaction that touched it left it, and that transaction.
    accounts: AddressMap<(usize, Committed)>,
    /// The last transaction that wiped the account's storage (created, self-destructed or
    /// deleted it, or left it empty): slots published before it read as zero.
    storage_reset: AddressMap<usize>,
}

/// The newest committed version of each key the block wrote.
#[derive(Debug)]
pub(crate) struct Published {
    // Each shard on its own cache line: the committer writes one while a helper reads its
    // neighbour, and on a shared line each would take the line from the other's core.
    accounts: Vec<CachePadded<Mutex<AccountShard>>>,
    slots: Vec<CachePadded<Mutex<SlotShard>>>,
    codes: Mutex<B256Map<Bytecode>>,
    /// Whether some account's storage was reset yet: until then a slot read skips the
    /// accounts' shard (most blocks reset none, and the lookup takes that shard's line from
    /// the committer's core). A read that misses a reset published at that moment sees a mix
    /// of versions like any other, which validation catches.
    any_reset: CachePadded<AtomicBool>,
}

/// What a published read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SlotRead {
    /// The slot's committed value.
    Value(U256),
    /// The block wrote neither the slot nor the account's storage: read the start state.
    NotWritten,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is one insert or lookup: a panic cannot leave a half-made value.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn shard_of(address: &Address) -> usize {
    // Addresses are hashes (or nearly): their last byte spreads well enough.
    usize::from(address[19]) % SHARDS
}

fn slot_shard(address: &Address, slot: &U256) -> usize {
    (usize::from(address[19]) ^ slot.as_limbs()[0] as usize) % SHARDS
}

impl Default for Published {
    fn default() -> Self {
        Self {
            accounts: (0..SHARDS).map(|_| CachePadded::default()).collect(),
            slots: (0..SHARDS).map(|_| CachePadded::default()).collect(),
            codes: Mutex::default(),
            any_reset: CachePadded::default(),
        }
    }
}

impl Published {
    /// The account as the block committed it: `Some(None)` deleted, `None` not written.
    pub(crate) fn account(&self, address: &Address) -> Option<Committed> {
        locked(&self.accounts[shard_of(address)]).accounts.get(address).map(|(_, a)| a.clone())
    }

    /// A slot as the block committed it.
    pub(crate) fn slot(&self, address: &Address, slot: &U256) -> SlotRead {
        let written =
            locked(&self.slots[slot_shard(address, slot)]).get(&(*address, *slot)).copied();
        // A deleted account's storage was reset too (`put_account`).
        let reset = if self.any_reset.load(Ordering::Acquire) {
            locked(&self.accounts[shard_of(address)]).storage_reset.get(address).copied()
        } else {
            None
        };
        match (written, reset) {
            (Some((writer, value)), Some(reset)) if writer >= reset => SlotRead::Value(value),
            (Some((_, value)), None) => SlotRead::Value(value),
            (_, Some(_)) => SlotRead::Value(U256::ZERO),
            (None, None) => SlotRead::NotWritten,
        }
    }

    /// Code the block deployed.
    pub(crate) fn code(&self, hash: &B256) -> Option<Bytecode> {
        locked(&self.codes).get(hash).cloned()
    }

    /// Publishes that transaction `writer` left `address` as `account`, having reset its
    /// storage when `storage_reset`.
    pub(crate) fn put_account(
        &self,
        writer: usize,
        address: Address,
        account: Committed,
        storage_reset: bool,
    ) {
        let mut shard = locked(&self.accounts[shard_of(&address)]);
        if storage_reset || account.is_none() {
            self.any_reset.store(true, Ordering::Release);
            shard.storage_reset.insert(address, writer);
        }
        shard.accounts.insert(address, (writer, account));
    }

    /// Publishes that transaction `writer` left `slot` of `address` holding `value`.
    pub(crate) fn put_slot(&self, writer: usize, address: Address, slot: U256, value: U256) {
        locked(&self.slots[slot_shard(&address, &slot)]).insert((address, slot), (writer, value));
    }

    /// Publishes code the block deployed.
    pub(crate) fn put_code(&self, hash: B256, code: Bytecode) {
        locked(&self.codes).entry(hash).or_insert(code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_hides_slots_written_before_it_and_not_after() {
        let published = Published::default();
        let a = Address::with_last_byte(7);
        assert_eq!(published.slot(&a, &U256::from(1)), SlotRead::NotWritten);
        published.put_slot(2, a, U256::from(1), U256::from(10));
        assert_eq!(published.slot(&a, &U256::from(1)), SlotRead::Value(U256::from(10)));
        published.put_account(5, a, Some(AccountInfo::default()), true);
        assert_eq!(published.slot(&a, &U256::from(1)), SlotRead::Value(U256::ZERO));
        assert_eq!(published.slot(&a, &U256::from(2)), SlotRead::Value(U256::ZERO));
        published.put_slot(6, a, U256::from(1), U256::from(11));
        assert_eq!(published.slot(&a, &U256::from(1)), SlotRead::Value(U256::from(11)));
        published.put_account(8, a, None, false);
        assert_eq!(published.account(&a), Some(None));
        assert_eq!(published.slot(&a, &U256::from(1)), SlotRead::Value(U256::ZERO));
        assert_eq!(published.account(&Address::with_last_byte(8)), None);
    }
}
