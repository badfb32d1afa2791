//! The log of dev patches a read replica replays (`hearth_getPatches`): each patch made while
//! block N was the head (anvil_setBalance, anvil_setCode, anvil_loadState, ...) is recorded
//! under `L` + N + its sequence, with the accounts it set and the state root it left.
//!
//! A patch changes state outside any block, so a replica that re-executes the leader's blocks
//! cannot compute the next block's state root without it. The record is written in the
//! patch's own batch through the undo journal (`Staged::record`), so `evm_revert` removes the
//! records of the patches it undoes, and a rollback or revert that drops block N drops its
//! records with the block's other records (`patch::remove_block_records`).

use alloy_primitives::{Address, B256, U256};
use alloy_rlp::{RlpDecodable, RlpEncodable};

use crate::layout;
use crate::state::StateDiff;
use crate::{ChainDb, StorageError};

/// One patch: the accounts it set and the state root it left.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct PatchRecord {
    /// The head state's root after the patch.
    pub root: B256,
    /// The accounts set, whole fields and the slots set.
    pub accounts: Vec<PatchedAccount>,
}

/// An account a patch set.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct PatchedAccount {
    /// The address.
    pub address: Address,
    /// Its nonce after the patch.
    pub nonce: u64,
    /// Its balance after the patch.
    pub balance: U256,
    /// Its code's hash after the patch (the code is in the store by hash).
    pub code_hash: B256,
    /// The slots the patch set, with their values (zero clears).
    pub storage: Vec<PatchedSlot>,
}

/// One slot a patch set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct PatchedSlot {
    /// The slot.
    pub slot: U256,
    /// Its value.
    pub value: U256,
}

impl PatchRecord {
    /// The record of the patch `sets` (accounts with their fields) that left `root`.
    pub(crate) fn of(sets: &StateDiff, root: B256) -> Self {
        let accounts = sets
            .accounts
            .iter()
            .filter_map(|(address, change)| {
                let fields = change.info?;
                Some(PatchedAccount {
                    address: *address,
                    nonce: fields.nonce,
                    balance: fields.balance,
                    code_hash: fields.code_hash,
                    storage: change
                        .storage
                        .iter()
                        .map(|(slot, value)| PatchedSlot { slot: *slot, value: *value })
                        .collect(),
                })
            })
            .collect();
        Self { root, accounts }
    }
}

/// The key of the `seq`-th patch made while block `number` was the head.
pub(crate) fn key(number: u64, seq: u32) -> [u8; 13] {
    let mut key = [0u8; 13];
    key[..9].copy_from_slice(&layout::number_key(layout::PATCH_LOG, number));
    key[9..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// How many patches block `number` has recorded (the next one's sequence).
pub(crate) fn count(db: &ChainDb, number: u64) -> Result<u32, StorageError> {
    let keys = db.keys_with_prefix(&layout::number_key(layout::PATCH_LOG, number))?;
    u32::try_from(keys.len()).map_err(|_| StorageError::Corrupt { what: "patch log length" })
}

impl ChainDb {
    /// The patches made while block `number` was the head, in order.
    pub fn patches_at(&self, number: u64) -> Result<Vec<PatchRecord>, StorageError> {
        self.patch_records(number)?
            .iter()
            .map(|bytes| {
                alloy_rlp::Decodable::decode(&mut bytes.as_slice())
                    .map_err(|_| StorageError::Corrupt { what: "patch log record" })
            })
            .collect()
    }

    /// The roots the patches made while block `number` was the head left, in order, read
    /// without decoding their accounts (a replica asks for them every round).
    pub fn patch_roots_at(&self, number: u64) -> Result<Vec<B256>, StorageError> {
        let corrupt = |_| StorageError::Corrupt { what: "patch log record" };
        self.patch_records(number)?
            .iter()
            .map(|bytes| {
                let mut rest = bytes.as_slice();
                alloy_rlp::Header::decode(&mut rest).map_err(corrupt)?;
                alloy_rlp::Decodable::decode(&mut rest).map_err(corrupt)
            })
            .collect()
    }

    fn patch_records(&self, number: u64) -> Result<Vec<Vec<u8>>, StorageError> {
        let mut records = Vec::new();
        for key in self.keys_with_prefix(&layout::number_key(layout::PATCH_LOG, number))? {
            records.extend(self.raw_get(&key)?);
        }
        Ok(records)
    }
}
