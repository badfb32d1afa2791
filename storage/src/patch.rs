//! Dev-chain state changes outside blocks: patches of the head state (anvil_setBalance and
//! friends) and reverts to an earlier head (evm_revert).
//!
//! A patch overwrites the head block's own versions of the accounts and slots it sets, so the
//! head state changes in place (as anvil's "latest" does), and records the patched state root
//! under `P` + head so the next block builds its trie on it. It returns what it overwrote, so a
//! revert can undo it. A revert deletes the versions that later blocks wrote (versioned keys
//! make that exact: each block only ever added keys ending in its own number), the blocks'
//! records and indexes, undoes patches in reverse order, and moves the head back; all in one
//! atomic, journaled batch. Trie nodes and code are content-addressed and shared, so they stay.

use alloy_primitives::{Address, B256, U256};

use crate::commit::{Staged, Tries, apply_diff_on};
use crate::layout;
use crate::node_cache::NodeCache;
use crate::state::StateDiff;
use crate::{ChainDb, StorageError};

/// What one patch overwrote: each key with its previous value (`None`: it was absent).
#[derive(Debug, Clone, Default)]
pub struct PatchUndo {
    pub(crate) entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
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
///
/// It is the block write path (`apply_diff_on`) with the head as both the state it starts from
/// and the block whose versions it writes, and with an undo journal.
pub fn write_patch(db: &ChainDb, diff: &StateDiff) -> Result<(B256, PatchUndo), StorageError> {
    let head = db.head_number().ok_or(StorageError::Corrupt { what: "head before a patch" })?;
    let mut sets = diff.clone();
    sets.accounts.retain(|_, change| change.info.is_some());
    let mut staged = Staged::journaled();
    let root = apply_diff_on(
        db,
        &NodeCache::new(0),
        &mut Tries::default(),
        &mut staged,
        Some(head),
        head,
        &sets,
    )?;
    // The next block builds on this root instead of the head header's.
    staged.record(db, &layout::number_key(layout::PATCHED_ROOT, head), root.as_slice())?;
    let (batch, undo) = staged.into_parts();
    db.commit_batch(batch, head)?;
    Ok((root, undo))
}

/// Moves the head back to `target`: undoes `undo` (patches since the snapshot, oldest first)
/// and deletes what `blocks` (every block after `target`) wrote, in one atomic batch.
pub fn revert_blocks(
    db: &ChainDb,
    target: u64,
    blocks: &[BlockKeys],
    undo: &[PatchUndo],
) -> Result<(), StorageError> {
    let mut batch = crate::WriteBatch::default();
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
        for prefix in [layout::BODY, layout::RECEIPTS] {
            // Every chunk of the record (and an unchunked value of an older store).
            for key in db.keys_with_prefix(&layout::number_key(prefix, number))? {
                batch.remove(key);
            }
        }
        for prefix in [layout::HEADER, layout::HASH_BY_NUMBER, layout::PATCHED_ROOT] {
            batch.remove(&layout::number_key(prefix, number)[..]);
        }
    }
    batch.insert(layout::HEAD_KEY, &target.to_be_bytes()[..]);
    db.commit_batch(batch, target)
}
