//! Every storage slot of one account at a block: what `debug_storageRangeAt` pages through, and
//! what a fork of this node fetches in one request instead of slot by slot.
//!
//! Slots are versioned under `S` + address + incarnation + slot + block (`layout`), so the
//! account's slots are the distinct slot keys under its incarnation's prefix; the scan seeks
//! past each slot's versions (one seek per slot, not per version) and stops at a bound, so an
//! account with millions of slots costs a bounded amount before it is refused.

use alloy_primitives::{Address, U256};

use crate::chain::ChainDb;
use crate::{StorageError, layout};

/// Why the slots of an account could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum SlotsError {
    /// More distinct slots than the caller's bound.
    #[error("the account has more than {0} storage slots")]
    TooMany(usize),
    /// The account's storage at that block is a fork's upstream's, which this node never held.
    #[error("the account's storage is the fork upstream's, which is not held here")]
    Forked,
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The non-zero slots of `address` as of block `number` with their values, in slot order; at
/// most `max_slots` distinct slots are looked at before [`SlotsError::TooMany`].
pub fn storage_slots(
    chain: &ChainDb,
    address: &Address,
    number: u64,
    max_slots: usize,
) -> Result<Vec<(U256, U256)>, SlotsError> {
    let Some(account) = chain.account(address, number)? else { return Ok(Vec::new()) };
    let incarnation = account.incarnation;
    if chain.fork().is_some_and(|fork| fork.block() == incarnation) {
        return Err(SlotsError::Forked);
    }
    let prefix = &layout::storage_key(address, incarnation, &U256::ZERO, 0)[..29];
    let mut slots = std::collections::BTreeSet::new();
    let slot_of = |key: &[u8]| (key.len() == 69).then(|| U256::from_be_slice(&key[29..61]));
    // The block committed but not yet in sled (at most one block's keys).
    for key in chain.deferred_keys(prefix)? {
        slots.extend(slot_of(&key));
    }
    let db = chain.tree();
    let mut from = prefix.to_vec();
    while let Some(key) = db.range(from.as_slice()..).keys().next() {
        let key = key.map_err(StorageError::from)?;
        if !key.starts_with(prefix) {
            break;
        }
        let Some(slot) = slot_of(&key) else {
            // Not a version key (none is written under this prefix): step over it.
            from = key.to_vec();
            from.push(0);
            continue;
        };
        slots.insert(slot);
        if slots.len() > max_slots {
            return Err(SlotsError::TooMany(max_slots));
        }
        // Past every version of this slot.
        from = layout::storage_key(address, incarnation, &slot, u64::MAX).to_vec();
        from.push(0);
    }
    // Slots an in-place commit removed since this snapshot (an evm_revert running meanwhile):
    // the snapshot still has them. Looked at after the scan (`rewrites`).
    if let Some(preimages) = chain.rewritten() {
        for (key, before) in preimages.with_prefix(prefix) {
            if before.is_some() {
                slots.extend(slot_of(key));
            }
        }
    }
    if slots.len() > max_slots {
        return Err(SlotsError::TooMany(max_slots));
    }
    let mut found = Vec::with_capacity(slots.len());
    for slot in slots {
        let value = chain.storage(address, incarnation, &slot, number)?;
        if !value.is_zero() {
            found.push((slot, value));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use alloy_consensus::Header;

    use super::*;
    use crate::records::EMPTY_CODE_HASH;
    use crate::state::{AccountChange, AccountFields, StateDiff};
    use crate::{BlockDraft, BlockWriter, ChainWriter, StoredBody};

    fn draft(number: u64) -> BlockDraft {
        BlockDraft {
            header: Header { number, ..Header::default() },
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            receipts: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// Block `number` writes `slots` of account `a` (a zero value clears the slot).
    fn write(writer: &mut BlockWriter, number: u64, a: Address, slots: &[(u64, u64)]) {
        let storage: BTreeMap<U256, U256> =
            slots.iter().map(|(s, v)| (U256::from(*s), U256::from(*v))).collect();
        let info = AccountFields { nonce: 1, balance: U256::ZERO, code_hash: EMPTY_CODE_HASH };
        let mut diff = StateDiff::default();
        diff.accounts.insert(a, AccountChange { info: Some(info), storage_wiped: false, storage });
        writer.write(draft(number), &diff).expect("write");
    }

    #[test]
    fn lists_each_slot_once_as_of_the_block_and_refuses_past_the_bound() {
        let store = ChainWriter::in_memory().expect("store");
        let db = store.reader();
        let mut writer = BlockWriter::new(store, 1 << 20);
        let a = Address::repeat_byte(0xaa);
        write(&mut writer, 0, a, &[(1, 10), (2, 20), (3, 30)]);
        write(&mut writer, 1, a, &[(2, 21), (3, 0), (4, 40)]);
        write(&mut writer, 2, Address::repeat_byte(0xbb), &[(1, 1)]);
        let at = |number| {
            storage_slots(&db, &a, number, 10)
                .expect("slots")
                .into_iter()
                .map(|(s, v)| (s.to::<u64>(), v.to::<u64>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(at(0), [(1, 10), (2, 20), (3, 30)]);
        // Versions of one slot count once; a cleared slot is gone.
        assert_eq!(at(1), [(1, 10), (2, 21), (4, 40)]);
        assert_eq!(at(2), at(1), "another account's writes are not this one's");
        assert!(storage_slots(&db, &Address::ZERO, 2, 10).expect("none").is_empty());
        assert!(matches!(storage_slots(&db, &a, 2, 3), Err(SlotsError::TooMany(3))));
    }
}
