//! `StateView`: the state as of one block, for revm; and `StateDiff`: what a block changed.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256};
use revm::bytecode::Bytecode;
use revm::database_interface::{DBErrorMarker, DatabaseRef};
use revm::state::AccountInfo;

use crate::records::{EMPTY_CODE_HASH, StoredAccount};
use crate::{ChainDb, StorageError};

impl DBErrorMarker for StorageError {}

/// The state as of block `number`, read through a store handle pinned to one published
/// snapshot (`ChainDb::state_at`): it stays valid while later blocks commit, because versions
/// at or below `number` never change and the snapshot it reads besides sled is immutable.
#[derive(Debug, Clone)]
pub struct StateView {
    db: ChainDb,
    number: u64,
}

impl StateView {
    pub(crate) const fn new(db: ChainDb, number: u64) -> Self {
        Self { db, number }
    }

    /// The block this view reads at.
    pub const fn number(&self) -> u64 {
        self.number
    }

    /// The stored account, if it exists.
    pub fn account(&self, address: &Address) -> Result<Option<StoredAccount>, StorageError> {
        self.db.account(address, self.number)
    }

    /// A storage slot (zero when absent or when the account does not exist).
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StorageError> {
        match self.account(address)? {
            // An empty storage trie holds no slot: no version to look up (a range scan each).
            // Every Prague block's request system calls read such contracts' slots. Not for
            // storage a fork's upstream holds: the local trie only has what was written here.
            Some(account)
                if account.storage_root == crate::trie::EMPTY_ROOT
                    && !self.db.storage_is_inherited(account.incarnation, self.number) =>
            {
                Ok(U256::ZERO)
            }
            Some(account) => self.db.storage(address, account.incarnation, slot, self.number),
            None => Ok(U256::ZERO),
        }
    }

    /// The code of an account (empty when it has none).
    pub fn code_of(&self, address: &Address) -> Result<Bytes, StorageError> {
        match self.account(address)? {
            Some(account) if account.code_hash != EMPTY_CODE_HASH => {
                Ok(self.db.code(&account.code_hash)?.unwrap_or_default())
            }
            _ => Ok(Bytes::new()),
        }
    }

    /// Whether the store has its own record of `address` at this block (see
    /// [`ChainDb::has_local_account`]).
    pub fn is_local(&self, address: &Address) -> Result<bool, StorageError> {
        self.db.has_local_account(address, self.number)
    }

    /// The first of `slots` of `address` whose value is a fork upstream's that this store
    /// never wrote (see [`ChainDb::slot_is_upstream`]): the local trie cannot prove it.
    pub fn upstream_slot(
        &self,
        address: &Address,
        slots: &[U256],
    ) -> Result<Option<U256>, StorageError> {
        let Some(account) = self.account(address)? else { return Ok(None) };
        for slot in slots {
            if self.db.slot_is_upstream(address, account.incarnation, slot, self.number)? {
                return Ok(Some(*slot));
            }
        }
        Ok(None)
    }

    /// The underlying store.
    pub const fn db(&self) -> &ChainDb {
        &self.db
    }
}

impl DatabaseRef for StateView {
    type Error = StorageError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        Ok(self.account(&address)?.map(|a| AccountInfo {
            balance: a.balance,
            nonce: a.nonce,
            code_hash: a.code_hash,
            code: None,
            ..Default::default()
        }))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if code_hash == EMPTY_CODE_HASH {
            return Ok(Bytecode::default());
        }
        let code = self.db.code(&code_hash)?.ok_or(StorageError::Corrupt { what: "code" })?;
        Ok(Bytecode::new_raw(code))
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        self.storage(&address, &index)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        // BLOCKHASH only reaches the 256 most recent blocks; revm checks the window.
        Ok(self.db.block_hash(number)?.unwrap_or_default())
    }
}

/// The new state of one account after a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountChange {
    /// `None`: the account was deleted (self-destructed, or touched while empty).
    pub info: Option<AccountFields>,
    /// The account's storage was wiped (created or re-created) before `storage` applies.
    pub storage_wiped: bool,
    /// Slots written, with their new values (zero deletes the slot).
    pub storage: BTreeMap<U256, U256>,
}

/// The account fields a transaction can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountFields {
    /// Transaction count.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// keccak256 of the code.
    pub code_hash: B256,
}

/// Everything a block changed in the state, in address order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateDiff {
    /// Changed accounts.
    pub accounts: BTreeMap<Address, AccountChange>,
    /// New contract code by hash.
    pub codes: BTreeMap<B256, Bytes>,
}

/// An EIP-1186 proof of an account and some of its slots at one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountProof {
    /// The account, if it exists.
    pub account: Option<StoredAccount>,
    /// State trie nodes from the root to the account's leaf (or where it would be).
    pub account_proof: Vec<Bytes>,
    /// Each requested slot: its value and the storage trie nodes down to it.
    pub storage: Vec<SlotProof>,
}

/// One storage slot and its proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotProof {
    /// The slot.
    pub slot: U256,
    /// Its value (zero when absent).
    pub value: U256,
    /// Storage trie nodes from the account's storage root down to the slot.
    pub proof: Vec<Bytes>,
}

impl StateView {
    /// Proves `address` and `slots` against this block's state root (the patched root after a
    /// dev patch at this block).
    pub fn proof(&self, address: &Address, slots: &[U256]) -> Result<AccountProof, StorageError> {
        // The root the state really has: a dev patch may have moved it past the header's.
        let state_root = self
            .db
            .state_root_at(self.number)?
            .ok_or(StorageError::Corrupt { what: "header of a view" })?;
        let to_bytes = |nodes: Vec<Vec<u8>>| nodes.into_iter().map(Bytes::from).collect::<Vec<_>>();
        let account_proof = crate::trie::Trie::at_root(state_root)
            .proof(&self.db, crate::records::account_trie_key(address).as_slice())?;
        let account = self.account(address)?;
        let storage_trie = crate::trie::Trie::at_root(
            account.as_ref().map_or(crate::trie::EMPTY_ROOT, |a| a.storage_root),
        );
        let mut storage = Vec::with_capacity(slots.len());
        for slot in slots {
            let proof =
                storage_trie.proof(&self.db, crate::records::storage_trie_key(slot).as_slice())?;
            storage.push(SlotProof {
                slot: *slot,
                value: self.storage(address, slot)?,
                proof: to_bytes(proof),
            });
        }
        Ok(AccountProof { account, account_proof: to_bytes(account_proof), storage })
    }
}
