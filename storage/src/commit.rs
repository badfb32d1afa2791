//! Writing one block: the state diff through the tries, and every record into one batch.

use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::B256;

use crate::layout;
use crate::records::{
    BlockExtras, SealedBlock, StoredAccount, StoredBody, account_trie_key, storage_trie_key,
};
use crate::state::StateDiff;
use crate::trie::{EMPTY_ROOT, Trie};
use crate::{ChainDb, StorageError};

/// A block ready to be written: everything but the state root, which the commit computes.
#[derive(Debug, Clone)]
pub struct BlockDraft {
    /// The header; `state_root` is filled in by [`write_block`].
    pub header: Header,
    /// Transactions and senders.
    pub body: StoredBody,
    /// One receipt per transaction.
    pub receipts: Vec<ReceiptEnvelope>,
}

/// Applies `diff` on top of the parent state, seals the header with the new state root and
/// writes the whole block as one atomic, durable batch. Returns the sealed block.
///
/// The tries are updated incrementally: only the paths to changed accounts and slots are read
/// from the node store and rehashed; untouched subtrees stay as hash references.
pub fn write_block(
    db: &ChainDb,
    draft: BlockDraft,
    diff: &StateDiff,
) -> Result<SealedBlock, StorageError> {
    let mut batch = sled::Batch::default();
    let BlockDraft { mut header, body, receipts } = draft;
    header.state_root = apply_diff(db, header.number, diff, &mut batch)?;
    finish_block(db, batch, header, body, receipts, BlockExtras::default())
}

/// Writes an imported block with its header exactly as received (so its hash is the sender's),
/// after checking that `diff` on top of the parent gives the header's state root. One atomic,
/// durable batch, as [`write_block`].
pub fn import_block(
    db: &ChainDb,
    draft: BlockDraft,
    diff: &StateDiff,
) -> Result<SealedBlock, StorageError> {
    import_block_with(db, draft, diff, BlockExtras::default())
}

/// [`import_block`] for a block with ommers or withdrawals, which are stored with it (in the
/// same batch) so that the block can be served and exported exactly as received.
pub fn import_block_with(
    db: &ChainDb,
    draft: BlockDraft,
    diff: &StateDiff,
    extras: BlockExtras,
) -> Result<SealedBlock, StorageError> {
    let mut batch = sled::Batch::default();
    let BlockDraft { header, body, receipts } = draft;
    let computed = apply_diff(db, header.number, diff, &mut batch)?;
    if computed != header.state_root {
        return Err(StorageError::StateRootMismatch {
            number: header.number,
            expected: header.state_root,
            computed,
        });
    }
    finish_block(db, batch, header, body, receipts, extras)
}

/// The state root block `number` would have with `diff` applied on top of block `number - 1`,
/// without writing anything. Pre-Byzantium receipts carry this root after every transaction.
pub fn state_root_after(db: &ChainDb, number: u64, diff: &StateDiff) -> Result<B256, StorageError> {
    // The batch is dropped: only the root is wanted; new nodes stay in the in-memory tries.
    apply_diff(db, number, diff, &mut sled::Batch::default())
}

/// Runs `diff` through the state and storage tries on top of block `number - 1` (the empty
/// state for block 0), puts the account, slot, code and trie node records into `batch`, and
/// returns the new state root.
fn apply_diff(
    db: &ChainDb,
    number: u64,
    diff: &StateDiff,
    batch: &mut sled::Batch,
) -> Result<B256, StorageError> {
    let parent_number = number.checked_sub(1);
    let parent_root = match parent_number {
        // Dev patches may have moved the parent's state past its header's root.
        Some(p) => db.state_root_at(p)?.ok_or(StorageError::Corrupt { what: "parent header" })?,
        None => EMPTY_ROOT,
    };
    let mut state_trie = Trie::at_root(parent_root);

    for (address, change) in &diff.accounts {
        let previous = match parent_number {
            Some(p) => db.account(address, p)?,
            None => None,
        };
        let Some(fields) = change.info else {
            if previous.is_some() {
                batch.insert(&layout::account_key(address, number)[..], &[][..]);
                state_trie.remove(db, account_trie_key(address).as_slice())?;
            }
            continue;
        };
        // Storage continues only when the account existed and was not wiped; otherwise the
        // account starts a new incarnation with an empty storage trie.
        let (incarnation, storage_root) = match &previous {
            Some(prev) if !change.storage_wiped => (prev.incarnation, prev.storage_root),
            _ => (number, EMPTY_ROOT),
        };
        let mut storage_trie = Trie::at_root(storage_root);
        for (slot, value) in &change.storage {
            let key = layout::storage_key(address, incarnation, slot, number);
            let trie_key = storage_trie_key(slot);
            if value.is_zero() {
                batch.insert(&key[..], &[][..]);
                storage_trie.remove(db, trie_key.as_slice())?;
            } else {
                batch.insert(&key[..], &value.to_be_bytes::<32>()[..]);
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
        batch.insert(&layout::account_key(address, number)[..], alloy_rlp::encode(&account));
        state_trie.insert(db, account_trie_key(address).as_slice(), account.trie_value())?;
    }
    for (hash, code) in &diff.codes {
        batch.insert(&layout::hash_key(layout::CODE, hash)[..], code.as_ref());
    }
    Ok(state_trie.commit(&mut |hash, rlp| {
        batch.insert(&layout::hash_key(layout::TRIE_NODE, &hash)[..], rlp);
    }))
}

/// Adds the header, body, receipts and indexes to `batch` and commits it as block `number`.
fn finish_block(
    db: &ChainDb,
    mut batch: sled::Batch,
    header: Header,
    body: StoredBody,
    receipts: Vec<ReceiptEnvelope>,
    extras: BlockExtras,
) -> Result<SealedBlock, StorageError> {
    let number = header.number;
    let hash = header.hash_slow();
    batch.insert(&layout::number_key(layout::HEADER, number)[..], alloy_rlp::encode(&header));
    batch.insert(&layout::number_key(layout::HASH_BY_NUMBER, number)[..], hash.as_slice());
    batch.insert(&layout::hash_key(layout::NUMBER_BY_HASH, &hash)[..], &number.to_be_bytes()[..]);
    batch.insert(&layout::number_key(layout::BODY, number)[..], alloy_rlp::encode(&body));
    batch.insert(&layout::number_key(layout::RECEIPTS, number)[..], alloy_rlp::encode(&receipts));
    for (index, tx) in body.transactions.iter().enumerate() {
        let mut location = [0u8; 12];
        location[..8].copy_from_slice(&number.to_be_bytes());
        location[8..].copy_from_slice(&(index as u32).to_be_bytes());
        batch.insert(&layout::hash_key(layout::TX_LOOKUP, &tx.trie_hash())[..], &location[..]);
    }
    if !extras.is_empty() {
        batch.insert(&layout::number_key(layout::EXTRAS, number)[..], alloy_rlp::encode(&extras));
    }
    batch.insert(layout::HEAD_KEY, &number.to_be_bytes()[..]);
    db.commit_batch(batch, number)?;
    Ok(SealedBlock { header, hash, body, receipts, extras })
}

/// The transactions root of a block body (our trie, key rlp(index), value the EIP-2718 bytes).
pub fn transactions_root(body: &StoredBody) -> B256 {
    crate::trie::ordered_root(
        body.transactions
            .iter()
            .enumerate()
            .map(|(i, tx)| (alloy_rlp::encode(i), tx.encoded_2718())),
    )
}

/// The receipts root (our trie, key rlp(index), value the EIP-2718 receipt bytes).
pub fn receipts_root(receipts: &[ReceiptEnvelope]) -> B256 {
    crate::trie::ordered_root(
        receipts.iter().enumerate().map(|(i, r)| (alloy_rlp::encode(i), r.encoded_2718())),
    )
}
