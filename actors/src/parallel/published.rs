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
//! Accounts and slots are `SeqMap`s: the committer writes them and helpers read them without
//! taking a lock, so a read moves a cache line only when the committer changed it. Code and
//! storage wipes, rare, sit behind mutexes. The block owns this memory for its lifetime;
//! nothing on the request path sees it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crossbeam_utils::CachePadded;

use alloy_primitives::map::{AddressMap, B256Map};
use alloy_primitives::{Address, B256, U256};
use revm::bytecode::Bytecode;
use revm::state::AccountInfo;

use super::seqmap::SeqMap;
use crate::exec::{Publish, PublishedValues, SlotRead};

/// An account as committed: `None` when the block deleted it.
type Committed = Option<AccountInfo>;

/// Address -> [present (0 or 1), nonce, balance (4 words), code hash (4 words)].
type Accounts = SeqMap<3, 10>;
/// (address, slot) -> [the transaction that wrote it last, value (4 words)].
type Slots = SeqMap<7, 5>;

/// The newest committed version of each key the block wrote.
#[derive(Debug, Default)]
pub(crate) struct Published {
    accounts: Accounts,
    slots: Slots,
    /// Per account, the last transaction that wiped its storage (created, self-destructed or
    /// deleted it, or left it empty): slots published before it read as zero.
    storage_reset: Mutex<AddressMap<usize>>,
    codes: Mutex<B256Map<Bytecode>>,
    /// Whether some account's storage was reset yet: until then a slot read skips the
    /// resets' map (most blocks reset none). A read that misses a reset published at that
    /// moment sees a mix of versions like any other, which validation catches.
    any_reset: CachePadded<AtomicBool>,
    /// A write found no room (`SeqMap::put`): helpers may read stale values from here on.
    full: AtomicBool,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is one insert or lookup: a panic cannot leave a half-made value.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn address_key(address: &Address) -> [u64; 3] {
    let b = address.as_slice();
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
    let tail = u32::from_le_bytes(b[16..20].try_into().unwrap_or_default());
    [word(0), word(8), u64::from(tail)]
}

fn slot_key(address: &Address, slot: &U256) -> [u64; 7] {
    let [a, b, c] = address_key(address);
    let [d, e, f, g] = *slot.as_limbs();
    [a, b, c, d, e, f, g]
}

fn b256_words(hash: &B256) -> [u64; 4] {
    U256::from_le_bytes(hash.0).into_limbs()
}

fn words_b256(words: [u64; 4]) -> B256 {
    B256::new(U256::from_limbs(words).to_le_bytes())
}

fn writer_word(writer: usize) -> u64 {
    u64::try_from(writer).unwrap_or(u64::MAX)
}

impl Published {
    /// Whether a write found no room: from then on helpers may read values older than the
    /// block's, and the committer should run the rest of the block alone.
    pub(crate) fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }
}

/// A helper's database reads what the committer committed before the block's start state.
impl PublishedValues for Published {
    /// The account as the block committed it: `Some(None)` deleted, `None` not written.
    fn account(&self, address: &Address) -> Option<Committed> {
        let words = self.accounts.get(&address_key(address))?;
        if words[0] == 0 {
            return Some(None);
        }
        Some(Some(AccountInfo {
            nonce: words[1],
            balance: U256::from_limbs([words[2], words[3], words[4], words[5]]),
            code_hash: words_b256([words[6], words[7], words[8], words[9]]),
            account_id: None,
            code: None,
        }))
    }

    /// A slot as the block committed it.
    fn slot(&self, address: &Address, slot: &U256) -> SlotRead {
        let written = self
            .slots
            .get(&slot_key(address, slot))
            .map(|[writer, a, b, c, d]| (writer, U256::from_limbs([a, b, c, d])));
        // A deleted account's storage was reset too (`put_account`).
        let reset = if self.any_reset.load(Ordering::Acquire) {
            locked(&self.storage_reset).get(address).map(|r| writer_word(*r))
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
    fn code(&self, hash: &B256) -> Option<Bytecode> {
        locked(&self.codes).get(hash).cloned()
    }
}

/// The committer publishes each commit here.
impl Publish for Published {
    /// Publishes that transaction `writer` left `address` as `account`, having reset its
    /// storage when `storage_reset`. The committer's alone: one writer.
    fn put_account(
        &self,
        writer: usize,
        address: Address,
        account: Committed,
        storage_reset: bool,
    ) {
        if storage_reset || account.is_none() {
            locked(&self.storage_reset).insert(address, writer);
            self.any_reset.store(true, Ordering::Release);
        }
        let mut value = [0u64; 10];
        if let Some(info) = &account {
            value[0] = 1;
            value[1] = info.nonce;
            value[2..6].copy_from_slice(info.balance.as_limbs());
            value[6..10].copy_from_slice(&b256_words(&info.code_hash));
        }
        if !self.accounts.put(&address_key(&address), &value) {
            self.full.store(true, Ordering::Relaxed);
        }
    }

    /// Publishes that transaction `writer` left `slot` of `address` holding `value`. The
    /// committer's alone: one writer.
    fn put_slot(&self, writer: usize, address: Address, slot: U256, value: U256) {
        let [a, b, c, d] = *value.as_limbs();
        if !self.slots.put(&slot_key(&address, &slot), &[writer_word(writer), a, b, c, d]) {
            self.full.store(true, Ordering::Relaxed);
        }
    }

    /// Publishes code the block deployed.
    fn put_code(&self, hash: B256, code: Bytecode) {
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
