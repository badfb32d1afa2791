//! Dev-chain state changes outside blocks: patches of the head state (anvil_setBalance and
//! friends) and reverts to an earlier head (evm_revert).
//!
//! A patch overwrites the head block's own versions of the accounts and slots it sets, so the
//! head state changes in place (as anvil's "latest" does), and records the patched state root
//! under `P` + head so the next block builds its trie on it. It returns what it overwrote, so a
//! revert can undo it. A revert deletes the versions that later blocks wrote (versioned keys
//! make that exact: each block only ever added keys ending in its own number), the blocks'
//! records and indexes, undoes patches in reverse order, and moves the head back; all in one
//! atomic, flushed batch. Trie nodes and code are content-addressed and shared, so they stay.

use alloy_primitives::{Address, B256, U256};

use crate::layout;
use crate::records::{StoredAccount, account_trie_key, storage_trie_key};
use crate::state::StateDiff;
use crate::trie::{EMPTY_ROOT, Trie};
use crate::{ChainDb, StorageError};

/// What one patch overwrote: each key with its previous value (`None`: it was absent).
#[derive(Debug, Clone, Default)]
pub struct PatchUndo {
    entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// The state keys one block wrote: each changed account with the slots it wrote.
#[derive(Debug, Clone, Default)]
pub struct BlockKeys {
    /// The block.
    pub number: u64,
    /// Changed accounts and their written slots.
    pub accounts: Vec<(Address, Vec<U256>)>,
}

impl BlockKeys {
    /// The keys `diff` writes as block `number`.
    pub fn of(number: u64, diff: &StateDiff) -> Self {
        let accounts = diff
            .accounts
            .iter()
            .map(|(address, change)| (*address, change.storage.keys().copied().collect()))
            .collect();
        Self { number, accounts }
    }
}

/// Applies `diff` (accounts with their full new fields, and slots) to the head state in place.
/// Returns the new state root and what was overwritten. Accounts with `info: None` are left
/// alone: a patch sets, it never deletes.
pub fn write_patch(db: &ChainDb, diff: &StateDiff) -> Result<(B256, PatchUndo), StorageError> {
    let head = db.head_number().ok_or(StorageError::Corrupt { what: "head before a patch" })?;
    let root = db.state_root_at(head)?.ok_or(StorageError::Corrupt { what: "head header" })?;
    let mut batch = sled::Batch::default();
    let mut undo = PatchUndo::default();
    let mut put = |batch: &mut sled::Batch, key: Vec<u8>, value: Vec<u8>| {
        let old = db.raw_get(&key)?;
        undo.entries.push((key.clone(), old));
        batch.insert(key, value);
        Ok::<_, StorageError>(())
    };
    let mut state_trie = Trie::at_root(root);
    for (address, change) in &diff.accounts {
        let Some(fields) = change.info else { continue };
        let previous = db.account(address, head)?;
        let (incarnation, storage_root) = match &previous {
            Some(prev) => (prev.incarnation, prev.storage_root),
            None => (head, EMPTY_ROOT),
        };
        let mut storage_trie = Trie::at_root(storage_root);
        for (slot, value) in &change.storage {
            let key = layout::storage_key(address, incarnation, slot, head).to_vec();
            let trie_key = storage_trie_key(slot);
            if value.is_zero() {
                put(&mut batch, key, Vec::new())?;
                storage_trie.remove(db, trie_key.as_slice())?;
            } else {
                put(&mut batch, key, value.to_be_bytes::<32>().to_vec())?;
                storage_trie.insert(db, trie_key.as_slice(), alloy_rlp::encode(value))?;
            }
        }
        let storage_root = storage_trie.commit(&mut |hash, rlp| {
            batch.insert(&layout::hash_key(layout::TRIE_NODE, &hash)[..], rlp);
        });
        let account = StoredAccount {
            nonce: fields.nonce,
            balance: fields.balance,
            code_hash: fields.code_hash,
            storage_root,
            incarnation,
        };
        put(&mut batch, layout::account_key(address, head).to_vec(), alloy_rlp::encode(&account))?;
        state_trie.insert(db, account_trie_key(address).as_slice(), account.trie_value())?;
    }
    for (hash, code) in &diff.codes {
        batch.insert(&layout::hash_key(layout::CODE, hash)[..], code.as_ref());
    }
    let new_root = state_trie.commit(&mut |hash, rlp| {
        batch.insert(&layout::hash_key(layout::TRIE_NODE, &hash)[..], rlp);
    });
    put(
        &mut batch,
        layout::number_key(layout::PATCHED_ROOT, head).to_vec(),
        new_root.as_slice().to_vec(),
    )?;
    db.commit_batch(batch, head)?;
    Ok((new_root, undo))
}

/// Moves the head back to `target`: undoes `undo` (patches since the snapshot, oldest first)
/// and deletes what `blocks` (every block after `target`) wrote, in one atomic batch.
pub fn revert_blocks(
    db: &ChainDb,
    target: u64,
    blocks: &[BlockKeys],
    undo: &[PatchUndo],
) -> Result<(), StorageError> {
    let mut batch = sled::Batch::default();
    // Patches first, newest first; block deletions below win for keys of removed blocks
    // (the last operation on a key in a batch is the one applied).
    for patch in undo.iter().rev() {
        for (key, old) in patch.entries.iter().rev() {
            match old {
                Some(value) => batch.insert(key.as_slice(), value.as_slice()),
                None => batch.remove(key.as_slice()),
            }
        }
    }
    for keys in blocks.iter().filter(|k| k.number > target) {
        let number = keys.number;
        for (address, slots) in &keys.accounts {
            // Storage versions sit under the incarnation the account had at that block.
            if let Some(account) = db.account(address, number)? {
                for slot in slots {
                    batch.remove(
                        &layout::storage_key(address, account.incarnation, slot, number)[..],
                    );
                }
            }
            batch.remove(&layout::account_key(address, number)[..]);
        }
        if let Some(body) = db.body(number)? {
            for tx in &body.transactions {
                batch.remove(&layout::hash_key(layout::TX_LOOKUP, tx.tx_hash())[..]);
            }
        }
        if let Some(hash) = db.block_hash(number)? {
            batch.remove(&layout::hash_key(layout::NUMBER_BY_HASH, &hash)[..]);
        }
        for prefix in [
            layout::HEADER,
            layout::HASH_BY_NUMBER,
            layout::BODY,
            layout::RECEIPTS,
            layout::PATCHED_ROOT,
        ] {
            batch.remove(&layout::number_key(prefix, number)[..]);
        }
    }
    batch.insert(layout::HEAD_KEY, &target.to_be_bytes()[..]);
    db.commit_batch(batch, target)
}
