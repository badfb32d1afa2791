//! Writing one block: the state diff through the tries, and every record into one batch.

use std::time::{Duration, Instant};

use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::B256;

use crate::layout;
use crate::node_cache::{CachedNodes, NodeCache};
use crate::patch::PatchUndo;
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
/// Without a node cache: for one-off writes (genesis, tests). The state owner keeps a
/// [`BlockWriter`] instead.
pub fn write_block(
    db: &ChainDb,
    draft: BlockDraft,
    diff: &StateDiff,
) -> Result<SealedBlock, StorageError> {
    BlockWriter::new(db.clone(), 0).write(draft, diff)
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
    BlockWriter::new(db.clone(), 0).import(draft, diff, extras)
}

/// The state root block `number` would have with `diff` applied on top of block `number - 1`,
/// without writing anything. Pre-Byzantium receipts carry this root after every transaction.
pub fn state_root_after(db: &ChainDb, number: u64, diff: &StateDiff) -> Result<B256, StorageError> {
    // The batch is dropped: only the root is wanted; new nodes stay in the in-memory tries.
    let mut tries = Tries::default();
    let cache = NodeCache::new(0);
    let mut staged = Staged::default();
    apply_diff(db, &cache, &mut tries, &mut staged, number, diff)
}

/// Default budget of the writer's node cache: the state trie's top four levels of a
/// 1M-account state (~4,400 nodes, ~2.5 MB) many times over, plus the level below them
/// (65,536 nodes, ~35 MB) — the nodes every block reads again.
pub const DEFAULT_NODE_CACHE_BYTES: usize = 128 * 1024 * 1024;

/// The block writer: [`write_block`] with a [`NodeCache`] of the nodes it wrote recently, so
/// the paths the next block loads (the top of the tries, at least) come from memory instead of
/// sled reads. Owned by the state owner; one writer per store.
#[derive(Debug)]
pub struct BlockWriter {
    db: ChainDb,
    cache: NodeCache,
    /// The state trie and a storage trie, reused block after block (re-pointed at each
    /// block's parent root) so their buffers and spare branch arrays are reused too.
    tries: Tries,
    timings: WriteTimings,
}

/// Where the last block write spent its time: for benches and, later, metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteTimings {
    /// Reading the changed accounts' previous versions (one sled range scan each).
    pub account_reads: Duration,
    /// Trie updates and commits (node loads, encoding, hashing), state and storage, and
    /// staging the records in the batch.
    pub tries: Duration,
    /// Applying the block's batch to sled and flushing it.
    pub apply_and_flush: Duration,
}

/// The tries a block write works on.
#[derive(Debug, Default)]
pub(crate) struct Tries {
    state: Trie,
    storage: Trie,
}

impl BlockWriter {
    /// A writer for `db` whose node cache holds up to about `cache_bytes` (0: no cache).
    pub fn new(db: ChainDb, cache_bytes: usize) -> Self {
        Self {
            db,
            cache: NodeCache::new(cache_bytes),
            tries: Tries::default(),
            timings: WriteTimings::default(),
        }
    }

    /// The node cache (for inspection).
    pub const fn cache(&self) -> &NodeCache {
        &self.cache
    }

    /// Where the last successful [`BlockWriter::write`] spent its time.
    pub const fn last_timings(&self) -> WriteTimings {
        self.timings
    }

    /// Applies `diff` on top of the parent state, seals the header with the new state root and
    /// writes the whole block as one atomic, durable batch. Returns the sealed block.
    ///
    /// The tries are updated incrementally: only the paths to changed accounts and slots are
    /// read (from the cache, else the store) and rehashed; untouched subtrees stay as hash
    /// references. The nodes written go to the cache only once the batch is durable.
    pub fn write(
        &mut self,
        draft: BlockDraft,
        diff: &StateDiff,
    ) -> Result<SealedBlock, StorageError> {
        let BlockDraft { mut header, body, receipts } = draft;
        let mut staged = Staged { keep: self.cache.is_enabled(), ..Staged::default() };
        header.state_root =
            apply_diff(&self.db, &self.cache, &mut self.tries, &mut staged, header.number, diff)?;
        self.finish(staged, header, body, receipts, BlockExtras::default())
    }

    /// [`import_block_with`] through this writer's cache.
    pub fn import(
        &mut self,
        draft: BlockDraft,
        diff: &StateDiff,
        extras: BlockExtras,
    ) -> Result<SealedBlock, StorageError> {
        let BlockDraft { header, body, receipts } = draft;
        let mut staged = Staged { keep: self.cache.is_enabled(), ..Staged::default() };
        let computed =
            apply_diff(&self.db, &self.cache, &mut self.tries, &mut staged, header.number, diff)?;
        if computed != header.state_root {
            return Err(StorageError::StateRootMismatch {
                number: header.number,
                expected: header.state_root,
                computed,
            });
        }
        self.finish(staged, header, body, receipts, extras)
    }

    /// Commits the block and, once it is durable, caches the nodes it wrote.
    fn finish(
        &mut self,
        staged: Staged,
        header: Header,
        body: StoredBody,
        receipts: Vec<ReceiptEnvelope>,
        extras: BlockExtras,
    ) -> Result<SealedBlock, StorageError> {
        let Staged { batch, emitted, mut timings, .. } = staged;
        let apply_started = Instant::now();
        let block = finish_block(&self.db, batch, header, body, receipts, extras)?;
        timings.apply_and_flush = apply_started.elapsed();
        self.timings = timings;
        for (hash, rlp) in emitted {
            self.cache.insert(hash, rlp);
        }
        Ok(block)
    }
}

/// What a block write has staged so far: the batch, the nodes it wrote (kept for the cache
/// when `keep`) and where the time went.
#[derive(Default)]
pub(crate) struct Staged {
    batch: sled::Batch,
    emitted: Vec<(B256, sled::IVec)>,
    keep: bool,
    timings: WriteTimings,
    /// When set (dev patches), every state record staged also notes the value it replaces,
    /// so a revert can put it back. Blocks need none: their keys end in their own number.
    undo: Option<PatchUndo>,
}

impl Staged {
    /// A staging area that journals what it overwrites (for dev patches).
    pub(crate) fn journaled() -> Self {
        Self { undo: Some(PatchUndo::default()), ..Self::default() }
    }

    /// The batch to commit, and the journal when there is one.
    pub(crate) fn into_parts(self) -> (sled::Batch, PatchUndo) {
        (self.batch, self.undo.unwrap_or_default())
    }

    /// Stages one account or slot record, noting what it replaces when journaling.
    pub(crate) fn record(
        &mut self,
        db: &ChainDb,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StorageError> {
        if let Some(undo) = &mut self.undo {
            undo.entries.push((key.to_vec(), db.raw_get(key)?));
        }
        self.batch.insert(key, value);
        Ok(())
    }

    /// Stages one trie node (sharing its buffer with the cache list when kept).
    fn node(&mut self, hash: B256, rlp: &[u8]) {
        let rlp = sled::IVec::from(rlp);
        if self.keep {
            self.emitted.push((hash, rlp.clone()));
        }
        self.batch.insert(&layout::hash_key(layout::TRIE_NODE, &hash)[..], rlp);
    }
}

/// Runs `diff` through the state and storage tries on top of block `number - 1` (the empty
/// state for block 0), stages the account, slot, code and trie node records, and returns the
/// new state root. Nodes are read through `cache`, else the store.
fn apply_diff(
    db: &ChainDb,
    cache: &NodeCache,
    tries: &mut Tries,
    staged: &mut Staged,
    number: u64,
    diff: &StateDiff,
) -> Result<B256, StorageError> {
    apply_diff_on(db, cache, tries, staged, number.checked_sub(1), number, diff)
}

/// [`apply_diff`] on top of the state of block `base` (`None`: the empty state), writing the
/// account and slot versions as block `number`. A block builds on its parent
/// (`base = number - 1`); a dev patch rewrites the head in place (`base = number = head`).
pub(crate) fn apply_diff_on(
    db: &ChainDb,
    cache: &NodeCache,
    tries: &mut Tries,
    staged: &mut Staged,
    base: Option<u64>,
    number: u64,
    diff: &StateDiff,
) -> Result<B256, StorageError> {
    let nodes = CachedNodes { db, cache };
    let parent_number = base;
    let parent_root = match parent_number {
        // Dev patches may have moved the parent's state past its header's root.
        Some(p) => db.state_root_at(p)?.ok_or(StorageError::Corrupt { what: "parent header" })?,
        None => EMPTY_ROOT,
    };
    let Tries { state: state_trie, storage: storage_trie } = tries;
    state_trie.set_root(parent_root);
    let started = Instant::now();

    for (address, change) in &diff.accounts {
        let read_started = Instant::now();
        let previous = match parent_number {
            Some(p) => db.account(address, p)?,
            None => None,
        };
        staged.timings.account_reads += read_started.elapsed();
        let Some(fields) = change.info else {
            if previous.is_some() {
                staged.record(db, &layout::account_key(address, number), &[])?;
                state_trie.remove(&nodes, account_trie_key(address).as_slice())?;
            }
            continue;
        };
        // Storage continues only when the account existed and was not wiped; otherwise the
        // account starts a new incarnation with an empty storage trie.
        let (incarnation, storage_root) = match &previous {
            Some(prev) if !change.storage_wiped => (prev.incarnation, prev.storage_root),
            _ => (number, EMPTY_ROOT),
        };
        storage_trie.set_root(storage_root);
        for (slot, value) in &change.storage {
            let key = layout::storage_key(address, incarnation, slot, number);
            let trie_key = storage_trie_key(slot);
            if value.is_zero() {
                staged.record(db, &key, &[])?;
                storage_trie.remove(&nodes, trie_key.as_slice())?;
            } else {
                staged.record(db, &key, &value.to_be_bytes::<32>())?;
                storage_trie.insert(&nodes, trie_key.as_slice(), alloy_rlp::encode(value))?;
            }
        }
        let storage_root = storage_trie.commit(&mut |hash, rlp| staged.node(hash, rlp));
        let account = StoredAccount {
            nonce: fields.nonce,
            balance: fields.balance,
            code_hash: fields.code_hash,
            storage_root,
            incarnation,
        };
        staged.record(db, &layout::account_key(address, number), &alloy_rlp::encode(&account))?;
        state_trie.insert(&nodes, account_trie_key(address).as_slice(), account.trie_value())?;
    }
    for (hash, code) in &diff.codes {
        staged.batch.insert(&layout::hash_key(layout::CODE, hash)[..], code.as_ref());
    }
    let root = state_trie.commit(&mut |hash, rlp| staged.node(hash, rlp));
    staged.timings.tries = started.elapsed().saturating_sub(staged.timings.account_reads);
    Ok(root)
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
    let body_key = layout::number_key(layout::BODY, number);
    layout::chunks::insert(&mut batch, &body_key, &alloy_rlp::encode(&body));
    let receipts_key = layout::number_key(layout::RECEIPTS, number);
    layout::chunks::insert(&mut batch, &receipts_key, &alloy_rlp::encode(&receipts));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::EMPTY_CODE_HASH;
    use crate::state::{AccountChange, AccountFields};
    use alloy_primitives::{Address, U256};

    fn draft(number: u64) -> BlockDraft {
        BlockDraft {
            header: Header { number, ..Header::default() },
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            receipts: Vec::new(),
        }
    }

    /// Block `number` of a deterministic history: accounts created, changed, given storage
    /// and deleted, so that every trie path (insert, update, remove, storage) is exercised.
    fn diff(number: u64) -> StateDiff {
        let mut diff = StateDiff::default();
        for i in 0..40u64 {
            let id = (number * 7 + i * 13) % 97;
            let address = Address::left_padding_from(&id.to_be_bytes());
            let change = if (number + i).is_multiple_of(11) {
                AccountChange { info: None, storage_wiped: true, storage: Default::default() }
            } else {
                let storage = (0..(i % 4))
                    .map(|s| (U256::from(s + id % 3), U256::from((number + s) % 3)))
                    .collect();
                AccountChange {
                    info: Some(AccountFields {
                        nonce: number,
                        balance: U256::from(id * 1_000 + number),
                        code_hash: EMPTY_CODE_HASH,
                    }),
                    storage_wiped: false,
                    storage,
                }
            };
            diff.accounts.insert(address, change);
        }
        diff
    }

    #[test]
    fn cached_writer_matches_uncached_writes() {
        let plain = ChainDb::in_memory().expect("store");
        let cached_db = ChainDb::in_memory().expect("store");
        // A tiny budget: generations rotate every few blocks, so lookups hit `hot`, `cold`
        // and the store.
        let mut writer = BlockWriter::new(cached_db.clone(), 64 * 1024);
        for number in 0..40 {
            let diff = diff(number);
            let a = write_block(&plain, draft(number), &diff).expect("plain write");
            let b = writer.write(draft(number), &diff).expect("cached write");
            assert_eq!(a.header.state_root, b.header.state_root, "block {number}");
        }
        assert!(!writer.cache().is_empty());
        // Everything the cache served is in the store too: a fresh writer (empty cache) goes on
        // from the same state.
        let mut fresh = BlockWriter::new(cached_db, 0);
        let a = write_block(&plain, draft(40), &diff(40)).expect("plain write");
        let b = fresh.write(draft(40), &diff(40)).expect("fresh write");
        assert_eq!(a.header.state_root, b.header.state_root);
    }
}
