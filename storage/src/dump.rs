//! The head state whole, out and in: every account with its code and storage, as a state dump
//! (anvil_dumpState, `--dump-state`) writes it and a load (anvil_loadState, `--load-state`)
//! sets it.
//!
//! Reading walks the versioned account keys once: for each address, the newest version at or
//! before the head, then the newest version of each slot of that account's current storage
//! incarnation. It reads sled alone, so the caller (the state owner, the only writer) settles
//! the deferred block first and no commit runs meanwhile. Loading is one dev patch
//! ([`write_patch`]): every account in one journaled batch, so a load is applied whole
//! or not at all.

use alloy_primitives::{Address, Bytes, U256, keccak256};
use alloy_rlp::Decodable as _;

use crate::layout;
use crate::patch::{PatchUndo, write_patch};
use crate::records::{EMPTY_CODE_HASH, StoredAccount};
use crate::state::{AccountChange, AccountFields, StateDiff};
use crate::{ChainWriter, StorageError};

/// One account with everything a dump holds: what anvil_dumpState writes for it and what
/// anvil_loadState sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeAccount {
    /// The address.
    pub address: Address,
    /// Transaction count.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// Contract code (empty: none).
    pub code: Bytes,
    /// Storage slots and their values. A dump lists the non-zero ones, in slot order; a load
    /// sets the ones listed (a zero value clears a slot) and leaves the account's others.
    pub storage: Vec<(U256, U256)>,
}

/// What a dump's JSON spends on an account besides its code and slots (address, nonce,
/// balance, keys and punctuation), and on each slot: a 66-character key and value each.
const ACCOUNT_JSON_BYTES: usize = 180;
const SLOT_JSON_BYTES: usize = 140;

impl WholeAccount {
    /// About how many bytes this account takes in a dump's JSON (an upper estimate).
    pub fn json_bytes(&self) -> usize {
        ACCOUNT_JSON_BYTES + 2 * self.code.len() + SLOT_JSON_BYTES * self.storage.len()
    }
}

/// Every account of the head state (accounts deleted since are left out), ordered by address,
/// each with its code and non-zero slots; with the head's number. `None` when their JSON would
/// pass `max_json_bytes` (estimated as it goes, so the walk stops there and memory stays
/// bounded). Settles the deferred block first: call it from the store's writer only.
pub fn head_accounts(
    db: &ChainWriter,
    max_json_bytes: usize,
) -> Result<Option<(u64, Vec<WholeAccount>)>, StorageError> {
    let head = db.head_number().ok_or(StorageError::Corrupt { what: "head before a dump" })?;
    db.settle()?;
    let tree = db.tree();
    let mut accounts = Vec::new();
    let mut json_bytes = 0usize;
    let mut from = vec![layout::ACCOUNT];
    while let Some(key) = tree.range(from.as_slice()..).keys().next() {
        let key = key?;
        if key.first() != Some(&layout::ACCOUNT) {
            break;
        }
        let Some((address, _)) = layout::account_key_parts(&key) else {
            // Not a version key (none is written under this prefix): step over it.
            from = key.to_vec();
            from.push(0);
            continue;
        };
        // Past every version of this address, for the next turn.
        from = layout::account_key(&address, u64::MAX).to_vec();
        from.push(0);
        let first = layout::account_key(&address, 0);
        let at_head = layout::account_key(&address, head);
        let Some((_, value)) = tree.range(first..=at_head).next_back().transpose()? else {
            continue;
        };
        if value.is_empty() {
            continue; // deleted
        }
        let stored = StoredAccount::decode(&mut value.as_ref())
            .map_err(|source| StorageError::Decode { what: "account", source })?;
        let code = if stored.code_hash == EMPTY_CODE_HASH {
            Bytes::new()
        } else {
            db.code(&stored.code_hash)?.ok_or(StorageError::Corrupt { what: "dumped code" })?
        };
        let mut account = WholeAccount {
            address,
            nonce: stored.nonce,
            balance: stored.balance,
            code,
            storage: Vec::new(),
        };
        json_bytes = json_bytes.saturating_add(account.json_bytes());
        let budget = max_json_bytes.saturating_sub(json_bytes) / SLOT_JSON_BYTES;
        let Some(storage) = slots_at(&tree, &address, stored.incarnation, head, budget)? else {
            return Ok(None);
        };
        json_bytes = json_bytes.saturating_add(SLOT_JSON_BYTES * storage.len());
        if json_bytes > max_json_bytes {
            return Ok(None);
        }
        account.storage = storage;
        accounts.push(account);
    }
    Ok(Some((head, accounts)))
}

/// The non-zero slots of `address`'s storage `incarnation` as of block `head`, in slot order;
/// `None` when there are more than `most`.
fn slots_at(
    tree: &crate::kv::Kv,
    address: &Address,
    incarnation: u64,
    head: u64,
    most: usize,
) -> Result<Option<Vec<(U256, U256)>>, StorageError> {
    // Every slot key of this incarnation starts with these 29 bytes.
    let prefix = &layout::storage_key(address, incarnation, &U256::ZERO, 0)[..29];
    let mut slots = Vec::new();
    let mut from = prefix.to_vec();
    while let Some(key) = tree.range(from.as_slice()..).keys().next() {
        let key = key?;
        if !key.starts_with(prefix) {
            break;
        }
        if key.len() != 69 {
            from = key.to_vec();
            from.push(0);
            continue;
        }
        let slot = U256::from_be_slice(&key[29..61]);
        from = layout::storage_key(address, incarnation, &slot, u64::MAX).to_vec();
        from.push(0);
        let first = layout::storage_key(address, incarnation, &slot, 0);
        let at_head = layout::storage_key(address, incarnation, &slot, head);
        let Some((_, value)) = tree.range(first..=at_head).next_back().transpose()? else {
            continue;
        };
        let value = U256::try_from_be_slice(&value).unwrap_or_default();
        if value.is_zero() {
            continue;
        }
        if slots.len() == most {
            return Ok(None);
        }
        slots.push((slot, value));
    }
    Ok(Some(slots))
}

/// Sets `accounts` in the head state as one dev patch: each account's nonce, balance and code,
/// and the slots it lists (its other slots stay, as in anvil). Returns the new state root and
/// what was overwritten (for evm_revert). One journaled batch: on an error before it is
/// journaled, none of it; once journaled, all of it (completed at the next open if need be).
pub fn load_accounts(
    db: &ChainWriter,
    accounts: &[WholeAccount],
) -> Result<(alloy_primitives::B256, PatchUndo), StorageError> {
    let mut diff = StateDiff::default();
    for account in accounts {
        let code_hash = if account.code.is_empty() {
            EMPTY_CODE_HASH
        } else {
            let hash = keccak256(&account.code);
            diff.codes.insert(hash, account.code.clone());
            hash
        };
        diff.accounts.insert(
            account.address,
            AccountChange {
                info: Some(AccountFields {
                    nonce: account.nonce,
                    balance: account.balance,
                    code_hash,
                }),
                storage_wiped: false,
                storage: account.storage.iter().copied().collect(),
            },
        );
    }
    write_patch(db, &diff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::write_block;
    use crate::records::StoredBody;

    fn genesis(db: &ChainWriter, diff: &StateDiff) {
        let draft = crate::BlockDraft {
            header: alloy_consensus::Header::default(),
            body: StoredBody { transactions: vec![], senders: vec![] },
            receipts: vec![],
            touched: Vec::new(),
        };
        write_block(db, draft, diff).expect("genesis");
    }

    fn account(byte: u8, nonce: u64, slots: &[(u64, u64)], code: &[u8]) -> WholeAccount {
        WholeAccount {
            address: Address::repeat_byte(byte),
            nonce,
            balance: U256::from(u64::from(byte) * 1000),
            code: Bytes::copy_from_slice(code),
            storage: slots.iter().map(|(k, v)| (U256::from(*k), U256::from(*v))).collect(),
        }
    }

    /// What is loaded reads back whole, through the dump and through the ordinary reads; a
    /// second load sets the slots it lists and keeps the others, and clears a zeroed one.
    #[test]
    fn loaded_accounts_dump_back_equal() {
        let db = ChainWriter::in_memory().expect("store");
        genesis(&db, &StateDiff::default());
        let loaded = vec![
            account(1, 0, &[], &[]),
            account(2, 7, &[(1, 5), (u64::MAX, 9)], &[0x60, 0x00, 0x54]),
            account(3, u64::MAX, &[(0, 1)], &[]),
        ];
        load_accounts(&db, &loaded).expect("load");
        let (head, dumped) = head_accounts(&db, usize::MAX).expect("dump").expect("in budget");
        assert_eq!((head, &dumped), (0, &loaded));
        let state = db.account(&Address::repeat_byte(2), 0).expect("read").expect("exists");
        assert_eq!(
            db.storage(&Address::repeat_byte(2), state.incarnation, &U256::from(1), 0)
                .expect("read"),
            U256::from(5)
        );

        load_accounts(&db, &[account(2, 8, &[(1, 0), (3, 4)], &[])]).expect("second load");
        let (_, dumped) = head_accounts(&db, usize::MAX).expect("dump").expect("in budget");
        assert_eq!(dumped[1], account(2, 8, &[(3, 4), (u64::MAX, 9)], &[]));
    }

    /// A dump reads the head's versions only and skips deleted accounts.
    #[test]
    fn a_dump_sees_the_head_state() {
        let db = ChainWriter::in_memory().expect("store");
        genesis(&db, &StateDiff::default());
        load_accounts(&db, &[account(1, 1, &[(1, 1)], &[]), account(2, 1, &[], &[])])
            .expect("load");
        let mut next = StateDiff::default();
        next.accounts.insert(
            Address::repeat_byte(2),
            AccountChange { info: None, storage_wiped: true, storage: Default::default() },
        );
        next.accounts.insert(
            Address::repeat_byte(1),
            AccountChange {
                info: Some(AccountFields {
                    nonce: 2,
                    balance: U256::from(1000),
                    code_hash: EMPTY_CODE_HASH,
                }),
                storage_wiped: false,
                storage: [(U256::from(1), U256::from(6))].into_iter().collect(),
            },
        );
        let draft = crate::BlockDraft {
            header: alloy_consensus::Header { number: 1, ..Default::default() },
            body: StoredBody { transactions: vec![], senders: vec![] },
            receipts: vec![],
            touched: Vec::new(),
        };
        write_block(&db, draft, &next).expect("block 1");
        let (head, dumped) = head_accounts(&db, usize::MAX).expect("dump").expect("in budget");
        assert_eq!((head, dumped), (1, vec![account(1, 2, &[(1, 6)], &[])]));
    }

    /// A dump whose JSON would pass the bound stops and says so, whether the accounts or one
    /// account's slots pass it.
    #[test]
    fn a_dump_past_its_bound_is_refused() {
        let db = ChainWriter::in_memory().expect("store");
        genesis(&db, &StateDiff::default());
        let many: Vec<(u64, u64)> = (1..=100).map(|i| (i, i)).collect();
        load_accounts(&db, &[account(1, 0, &many, &[]), account(2, 0, &[], &[])]).expect("load");
        let whole = 2 * ACCOUNT_JSON_BYTES + 100 * SLOT_JSON_BYTES;
        assert!(head_accounts(&db, whole).expect("dump").is_some());
        assert!(head_accounts(&db, whole - 1).expect("dump").is_none());
        assert!(
            head_accounts(&db, ACCOUNT_JSON_BYTES + 10 * SLOT_JSON_BYTES).expect("dump").is_none()
        );
    }
}
