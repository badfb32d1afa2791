//! Writing one block: the state diff through the tries, and every record into one batch.

use std::time::{Duration, Instant};

use alloy_consensus::{Header, ReceiptEnvelope, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256};

use crate::layout;
use crate::node_cache::{CachedNodes, NodeCache};
use crate::patch::PatchUndo;
use crate::records::{
    BlockExtras, SealedBlock, StoredAccount, StoredBody, account_trie_key, storage_trie_key,
};
use crate::state::{AccountChange, AccountFields, StateDiff};
use crate::trie::{EMPTY_ROOT, Trie};
use crate::{ChainDb, ChainWriter, StorageError};

mod lanes;

use lanes::{MAX_LANES, MIN_ACCOUNTS_PER_LANE, apply_parallel, lane_count};

/// A block ready to be written: everything but the state root, which the commit computes.
#[derive(Debug, Clone)]
pub struct BlockDraft {
    /// The header; `state_root` is filled in by [`write_block`].
    pub header: Header,
    /// Transactions and senders.
    pub body: StoredBody,
    /// One receipt per transaction.
    pub receipts: Vec<ReceiptEnvelope>,
    /// Per transaction, the accounts its execution touched (calls, payments, changes), for the
    /// address index (`address_index`); empty for a block not executed here, whose index then
    /// holds each transaction's sender and recipient (or created contract) only.
    pub touched: Vec<Vec<Address>>,
}

/// Applies `diff` on top of the parent state, seals the header with the new state root and
/// writes the whole block as one journaled batch (see `ChainWriter::commit_block_timed`). Returns
/// the sealed block.
///
/// Without a node cache: for one-off writes (genesis, tests). The state owner keeps a
/// [`BlockWriter`] instead.
pub fn write_block(
    db: &ChainWriter,
    draft: BlockDraft,
    diff: &StateDiff,
) -> Result<SealedBlock, StorageError> {
    BlockWriter::new(db.clone(), 0).write(draft, diff)
}

/// Writes an imported block with its header exactly as received (so its hash is the sender's),
/// after checking that `diff` on top of the parent gives the header's state root. One atomic,
/// durable batch, as [`write_block`].
pub fn import_block(
    db: &ChainWriter,
    draft: BlockDraft,
    diff: &StateDiff,
) -> Result<SealedBlock, StorageError> {
    import_block_with(db, draft, diff, BlockExtras::default())
}

/// [`import_block`] for a block with ommers or withdrawals, which are stored with it (in the
/// same batch) so that the block can be served and exported exactly as received.
pub fn import_block_with(
    db: &ChainWriter,
    draft: BlockDraft,
    diff: &StateDiff,
    extras: BlockExtras,
) -> Result<SealedBlock, StorageError> {
    BlockWriter::new(db.clone(), 0).import(draft, diff, extras)
}

/// Writes the first block of a forked chain: the upstream's fork block with its header exactly
/// as the upstream has it (so its hash, number, time and fees are the upstream's), and `diff`
/// (the dev accounts' balances) applied on top of an empty local trie. The state root local
/// blocks build on is that local root, recorded as the block's patched root: the upstream's
/// root names a trie this store does not have (ARCHITECTURE.md, "Fork mode").
pub fn import_fork_base(
    db: &ChainWriter,
    draft: BlockDraft,
    diff: &StateDiff,
) -> Result<SealedBlock, StorageError> {
    let number = draft.header.number;
    let cache = NodeCache::new(0);
    let mut tries = Tries::default();
    let mut staged = Staged::default();
    let root = apply_diff_on(db, &cache, &mut tries, &mut staged, None, number, diff)?;
    let Staged { batch, .. } = staged;
    let block = finish_block(
        db,
        batch,
        draft,
        BlockExtras::default(),
        false,
        &mut WriteTimings::default(),
    )?;
    let mut patched = crate::WriteBatch::default();
    patched.insert(&layout::number_key(layout::PATCHED_ROOT, number)[..], root.as_slice());
    db.commit_batch(patched, number)?;
    Ok(block)
}

/// The state root block `number` would have with `diff` applied on top of block `number - 1`,
/// without writing anything. Pre-Byzantium receipts carry this root after every transaction.
pub fn state_root_after(db: &ChainDb, number: u64, diff: &StateDiff) -> Result<B256, StorageError> {
    // The batch is dropped: only the root is wanted; new nodes stay in the in-memory tries.
    let mut tries = Tries::default();
    let cache = NodeCache::new(0);
    let mut staged =
        Staged { threads: default_threads(), per_lane: MIN_ACCOUNTS_PER_LANE, ..Staged::default() };
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
    db: ChainWriter,
    cache: NodeCache,
    /// The state trie and a storage trie, reused block after block (re-pointed at each
    /// block's parent root) so their buffers and spare branch arrays are reused too.
    tries: Tries,
    timings: WriteTimings,
    /// Most threads a block's state is written on (see [`BlockWriter::set_threads`]).
    threads: usize,
    /// Changed accounts per lane below which a block takes fewer lanes (see
    /// [`BlockWriter::set_min_accounts_per_lane`]).
    per_lane: usize,
    /// Leave applying each block to sled to `ChainWriter::settle` (see
    /// [`BlockWriter::set_deferred_apply`]).
    defer: bool,
}

/// Where the last block write spent its time: for benches and, later, metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteTimings {
    /// The state part of the block, wall time: account reads, tries and staging, on one or
    /// more threads (lanes).
    pub state: Duration,
    /// Reading the changed accounts' previous versions (one sled range scan each), summed
    /// over the threads that did it.
    pub account_reads: Duration,
    /// Trie updates and commits (node loads, encoding, hashing), state and storage, and
    /// staging the records, summed over the threads that did it.
    pub tries: Duration,
    /// Applying the block's batch to sled (in memory: sled's pages and its log buffers). With
    /// a deferred apply ([`BlockWriter::set_deferred_apply`]) this is only what the previous
    /// block still owed, usually nothing.
    pub apply: Duration,
    /// Making the block durable: its commit-journal write, plus sled's flush when the
    /// journal was due for a checkpoint (see `journal`).
    pub flush: Duration,
    /// Trie nodes the tries read from the store (not found in the node cache).
    pub node_store_reads: u64,
    /// The lanes (threads) the state part ran in: 1 unless the block was split.
    pub lanes: usize,
    /// Keys the block's batch writes or removes (its sequence key included, not the marker a
    /// store on disk writes first): what applying it costs, key by key.
    pub keys: usize,
}

/// The tries a block write works on: one lane per thread that a block's accounts are split
/// between (the first lane alone when the block is written on one thread), kept from block to
/// block for their buffers.
#[derive(Debug, Default)]
pub(crate) struct Tries {
    lanes: Vec<Lane>,
}

impl Tries {
    /// The first `count` lanes, made when this is the first block that needs them.
    fn lanes(&mut self, count: usize) -> &mut [Lane] {
        if self.lanes.len() < count {
            self.lanes.resize_with(count, Lane::default);
        }
        &mut self.lanes[..count]
    }
}

/// The threads a writer splits a large block between unless told otherwise: the machine's
/// cores (`lane_count` makes at most one lane per root child).
fn default_threads() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// One thread's tries: the state trie (at the parent root; a lane changes only its share of
/// the root's children) and a storage trie.
#[derive(Debug, Default)]
struct Lane {
    state: Trie,
    storage: Trie,
}

impl BlockWriter {
    /// A writer for `db` whose node cache holds up to about `cache_bytes` (0: no cache).
    pub fn new(db: ChainWriter, cache_bytes: usize) -> Self {
        Self {
            db,
            cache: NodeCache::new(cache_bytes),
            tries: Tries::default(),
            timings: WriteTimings::default(),
            threads: default_threads(),
            per_lane: MIN_ACCOUNTS_PER_LANE,
            defer: false,
        }
    }

    /// Whether each block's apply to sled waits for [`ChainWriter::settle`] (or the next block):
    /// the block is durable and readable when `write` returns, and the state owner can answer
    /// before it pays for the apply. Off by default: one-off writers want sled complete.
    pub const fn set_deferred_apply(&mut self, defer: bool) {
        self.defer = defer;
    }

    /// Most threads a block's state is written on: the node passes `--exec.threads`; by
    /// default the machine's cores. A block of many changed accounts is split into up to that
    /// many lanes (at most 16, one per root child; 0 counts as 1). Every count gives the same
    /// root and records; the trie bench alternates counts to measure what the threads save.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.clamp(1, MAX_LANES);
    }

    /// Changed accounts each lane must have (default `MIN_ACCOUNTS_PER_LANE`, 32; 0 counts as
    /// 1): the trie bench lowers it to measure where a lane stops paying for its thread.
    pub fn set_min_accounts_per_lane(&mut self, accounts: usize) {
        self.per_lane = accounts.max(1);
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
    /// writes the whole block as one journaled batch. Returns the sealed block.
    ///
    /// The tries are updated incrementally: only the paths to changed accounts and slots are
    /// read (from the cache, else the store) and rehashed; untouched subtrees stay as hash
    /// references. The nodes written go to the cache only once the batch is durable.
    pub fn write(
        &mut self,
        draft: BlockDraft,
        diff: &StateDiff,
    ) -> Result<SealedBlock, StorageError> {
        let mut draft = draft;
        let mut staged = Staged {
            keep: self.cache.is_enabled(),
            threads: self.threads,
            per_lane: self.per_lane,
            ..Staged::default()
        };
        let number = draft.header.number;
        draft.header.state_root =
            apply_diff(&self.db, &self.cache, &mut self.tries, &mut staged, number, diff)?;
        self.finish(staged, draft, BlockExtras::default())
    }

    /// [`import_block_with`] through this writer's cache.
    pub fn import(
        &mut self,
        draft: BlockDraft,
        diff: &StateDiff,
        extras: BlockExtras,
    ) -> Result<SealedBlock, StorageError> {
        let mut staged = Staged {
            keep: self.cache.is_enabled(),
            threads: self.threads,
            per_lane: self.per_lane,
            ..Staged::default()
        };
        let header = &draft.header;
        let computed =
            apply_diff(&self.db, &self.cache, &mut self.tries, &mut staged, header.number, diff)?;
        if computed != header.state_root {
            return Err(StorageError::StateRootMismatch {
                number: header.number,
                expected: header.state_root,
                computed,
            });
        }
        self.finish(staged, draft, extras)
    }

    /// Commits the block and, once it is durable, caches the nodes it wrote.
    fn finish(
        &mut self,
        staged: Staged,
        draft: BlockDraft,
        extras: BlockExtras,
    ) -> Result<SealedBlock, StorageError> {
        let Staged { batch, emitted, mut timings, .. } = staged;
        let block = finish_block(&self.db, batch, draft, extras, self.defer, &mut timings)?;
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
    batch: crate::WriteBatch,
    emitted: Vec<(B256, sled::IVec)>,
    keep: bool,
    timings: WriteTimings,
    /// Most threads the block's state may be written on (0 or 1: the calling thread only).
    threads: usize,
    /// Changed accounts each lane must have.
    per_lane: usize,
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
    pub(crate) fn into_parts(self) -> (crate::WriteBatch, PatchUndo) {
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
    let parent_root = match base {
        // Dev patches may have moved the parent's state past its header's root.
        Some(p) => db.state_root_at(p)?.ok_or(StorageError::Corrupt { what: "parent header" })?,
        None => EMPTY_ROOT,
    };
    let started = Instant::now();
    // Several lanes when it pays and is simple: no journal to keep in order (patches).
    let lanes = if staged.undo.is_some() {
        1
    } else {
        lane_count(staged.threads, diff.accounts.len(), staged.per_lane)
    };
    if lanes > 1
        && let Some(root) =
            apply_parallel(db, cache, tries, staged, base, number, diff, parent_root, lanes)?
    {
        staged.timings.state = started.elapsed();
        staged.timings.lanes = lanes;
        return Ok(root);
    }
    let nodes = CachedNodes::new(db, cache);
    let lane = &mut tries.lanes(1)[0];
    lane.state.set_root(parent_root);
    for (address, change) in &diff.accounts {
        let key = account_trie_key(address);
        apply_account(db, &nodes, lane, staged, base, number, &key, address, change)?;
    }
    stage_codes(db, staged, diff)?;
    let root = lane.state.commit(&mut |hash, rlp| staged.node(hash, rlp));
    staged.timings.state = started.elapsed();
    staged.timings.lanes = 1;
    staged.timings.tries = staged.timings.state.saturating_sub(staged.timings.account_reads);
    staged.timings.node_store_reads = nodes.store_reads.get();
    Ok(root)
}

/// Where a block write puts the records and nodes of one account: the block's batch
/// ([`Staged`]) or a lane's buffers ([`LaneOut`]).
trait Stage {
    /// Stages one account or slot record.
    fn record(&mut self, db: &ChainDb, key: &[u8], value: &[u8]) -> Result<(), StorageError>;
    /// Stages one trie node.
    fn node(&mut self, hash: B256, rlp: &[u8]);
    /// Where the time goes.
    fn timings(&mut self) -> &mut WriteTimings;
}

impl Stage for Staged {
    fn record(&mut self, db: &ChainDb, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        Self::record(self, db, key, value)
    }

    fn node(&mut self, hash: B256, rlp: &[u8]) {
        Self::node(self, hash, rlp);
    }

    fn timings(&mut self) -> &mut WriteTimings {
        &mut self.timings
    }
}

/// Stages the block's new contract code. Code is stored once per hash and never removed, so
/// the code of a contract the block only ran (every Prague block runs three system contracts)
/// is already there: a read of its key is far cheaper than writing it again.
fn stage_codes(db: &ChainDb, staged: &mut Staged, diff: &StateDiff) -> Result<(), StorageError> {
    for (hash, code) in &diff.codes {
        let key = layout::hash_key(layout::CODE, hash);
        if !db.holds(&key)? {
            staged.batch.insert(&key[..], code.as_ref());
        }
    }
    Ok(())
}

/// Applies one account's change: reads its previous version, runs its slots through its
/// storage trie, stages its new version and puts it in the state trie under `key`
/// (`account_trie_key(address)`).
#[expect(clippy::too_many_arguments, reason = "the block's context and one account")]
fn apply_account(
    db: &ChainDb,
    nodes: &CachedNodes<'_>,
    lane: &mut Lane,
    out: &mut impl Stage,
    base: Option<u64>,
    number: u64,
    key: &B256,
    address: &Address,
    change: &AccountChange,
) -> Result<(), StorageError> {
    let Lane { state: state_trie, storage: storage_trie } = lane;
    let read_started = Instant::now();
    let previous = match base {
        Some(p) => db.account(address, p)?,
        None => None,
    };
    out.timings().account_reads += read_started.elapsed();
    let Some(fields) = change.info else {
        if previous.is_some() {
            out.record(db, &layout::account_key(address, number), &[])?;
            state_trie.remove(nodes, key.as_slice())?;
        }
        return Ok(());
    };
    if unchanged(previous.as_ref(), change, &fields) {
        return Ok(());
    }
    // Storage continues only when the account existed and was not wiped; otherwise the
    // account starts a new incarnation with an empty storage trie.
    let (incarnation, storage_root) = match &previous {
        Some(prev) if !change.storage_wiped => (prev.incarnation, prev.storage_root),
        _ => (number, EMPTY_ROOT),
    };
    storage_trie.set_root(storage_root);
    for (slot, value) in &change.storage {
        let slot_key = layout::storage_key(address, incarnation, slot, number);
        let trie_key = storage_trie_key(slot);
        if value.is_zero() {
            out.record(db, &slot_key, &[])?;
            storage_trie.remove(nodes, trie_key.as_slice())?;
        } else {
            out.record(db, &slot_key, &value.to_be_bytes::<32>())?;
            storage_trie.insert(nodes, trie_key.as_slice(), alloy_rlp::encode(value))?;
        }
    }
    let storage_root = storage_trie.commit(&mut |hash, rlp| out.node(hash, rlp));
    let account = StoredAccount {
        nonce: fields.nonce,
        balance: fields.balance,
        code_hash: fields.code_hash,
        storage_root,
        incarnation,
    };
    let key_at = layout::account_key(address, number);
    crate::buffers::with_rlp(&account, |rlp| out.record(db, &key_at, rlp))?;
    // The previous version is the account's leaf as stored: the trie need not read it.
    let previous_leaf = previous.as_ref().map(StoredAccount::trie_value);
    state_trie.insert_replacing(
        nodes,
        key.as_slice(),
        account.trie_value(),
        previous_leaf.as_deref(),
    )?;
    Ok(())
}

/// Whether `change` leaves the account as its `previous` version: touched but not changed (a
/// system contract a block's system call only read, a call that moved no value). A new version
/// equal to the last would cost a record and trie work and tell a reader nothing; every Prague
/// block touches two such contracts.
fn unchanged(
    previous: Option<&StoredAccount>,
    change: &AccountChange,
    fields: &AccountFields,
) -> bool {
    previous.is_some_and(|prev| {
        !change.storage_wiped
            && change.storage.is_empty()
            && (prev.nonce, prev.balance, prev.code_hash)
                == (fields.nonce, fields.balance, fields.code_hash)
    })
}

/// Adds the header, body, receipts and indexes to `batch` and commits it as block `number`.
/// Returns the block and how long sled took to apply the batch, and making it durable took.
fn finish_block(
    db: &ChainWriter,
    mut batch: crate::WriteBatch,
    draft: BlockDraft,
    extras: BlockExtras,
    defer: bool,
    timings: &mut WriteTimings,
) -> Result<SealedBlock, StorageError> {
    let BlockDraft { header, body, receipts, touched } = draft;
    let number = header.number;
    // The address index, in the block's own batch (`address_index`); a store's first block
    // says the index covers the store from there.
    let pairs = crate::address_index::block_pairs(&body, &touched, header.beneficiary);
    crate::address_index::add_block(&mut batch, number, &pairs);
    if db.head_number().is_none() {
        batch.insert(layout::ADDRESS_INDEX_FROM_KEY, &number.to_be_bytes()[..]);
    }
    // The header's RLP, its hash and the records below go through the thread's encode
    // buffer (`buffers`): the batch copies what it keeps.
    let hash = crate::buffers::with_rlp(&header, |rlp| alloy_primitives::keccak256(rlp));
    // Applied in this order (`ChainWriter::commit_block_timed`): a reader finds a block through
    // its header, its hash or a transaction index, so those come after the records they lead
    // to (`read_block` expects hash, body and receipts once it has the header).
    let body_key = layout::number_key(layout::BODY, number);
    crate::buffers::with_rlp(&body, |rlp| layout::chunks::insert(&mut batch, &body_key, rlp));
    let receipts_key = layout::number_key(layout::RECEIPTS, number);
    crate::buffers::with_rlp(&receipts, |rlp| {
        layout::chunks::insert(&mut batch, &receipts_key, rlp);
    });
    if !extras.is_empty() {
        let extras_key = layout::number_key(layout::EXTRAS, number);
        crate::buffers::with_rlp(&extras, |rlp| batch.insert(&extras_key[..], rlp));
    }
    batch.insert(&layout::number_key(layout::HASH_BY_NUMBER, number)[..], hash.as_slice());
    let header_key = layout::number_key(layout::HEADER, number);
    crate::buffers::with_rlp(&header, |rlp| batch.insert(&header_key[..], rlp));
    batch.insert(&layout::hash_key(layout::NUMBER_BY_HASH, &hash)[..], &number.to_be_bytes()[..]);
    for (index, tx) in body.transactions.iter().enumerate() {
        let mut location = [0u8; 12];
        location[..8].copy_from_slice(&number.to_be_bytes());
        location[8..].copy_from_slice(&(index as u32).to_be_bytes());
        batch.insert(&layout::hash_key(layout::TX_LOOKUP, &tx.trie_hash())[..], &location[..]);
    }
    batch.insert(layout::HEAD_KEY, &number.to_be_bytes()[..]);
    let head = crate::chain::HeadBlock::committed(header.clone(), hash);
    // The journal adds the sequence key.
    timings.keys = batch.len() + 1;
    (timings.apply, timings.flush) = db.commit_block_timed(batch, head, defer)?;
    Ok(SealedBlock { header, hash, body, receipts, extras })
}

/// The transactions root of a block body (our trie, key rlp(index), value the EIP-2718 bytes).
pub fn transactions_root(body: &StoredBody) -> B256 {
    transactions_root_of(body.transactions.iter())
}

/// The transactions root of `transactions`, in order: [`transactions_root`] without a body.
pub fn transactions_root_of<'a>(
    transactions: impl ExactSizeIterator<Item = &'a TxEnvelope> + Send,
) -> B256 {
    crate::trie::ordered_root(transaction_pairs(transactions))
}

/// The receipts root (our trie, key rlp(index), value the EIP-2718 receipt bytes).
pub fn receipts_root(receipts: &[ReceiptEnvelope]) -> B256 {
    crate::trie::ordered_root(receipt_pairs(receipts))
}

/// The transactions and receipts roots of a block (its `transactions` in order, and its
/// receipts), built at once and hashed on `threads` threads, the calling one running `beside`
/// first ([`crate::trie::ordered_roots_beside`]); the same roots as [`transactions_root`] and
/// [`receipts_root`], with `beside`'s result.
pub fn block_roots_beside<'a, R: Send>(
    transactions: impl ExactSizeIterator<Item = &'a TxEnvelope> + Send,
    receipts: &[ReceiptEnvelope],
    threads: usize,
    beside: impl FnOnce() -> R + Send,
) -> (B256, B256, R) {
    crate::trie::ordered_roots_beside(
        transaction_pairs(transactions),
        receipt_pairs(receipts),
        threads,
        beside,
    )
}

/// A trie's (key, value) pair.
type Pair = (Vec<u8>, Vec<u8>);

/// The transactions trie's (key, value) pairs.
fn transaction_pairs<'a>(
    transactions: impl ExactSizeIterator<Item = &'a TxEnvelope> + Send,
) -> impl ExactSizeIterator<Item = Pair> + Send {
    transactions.enumerate().map(|(index, tx)| (alloy_rlp::encode(index), tx.encoded_2718()))
}

/// The receipts trie's (key, value) pairs.
fn receipt_pairs(receipts: &[ReceiptEnvelope]) -> impl ExactSizeIterator<Item = Pair> + '_ {
    receipts.iter().enumerate().map(|(i, r)| (alloy_rlp::encode(i), r.encoded_2718()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::EMPTY_CODE_HASH;
    use std::collections::BTreeMap;

    use crate::state::{AccountChange, AccountFields};
    use alloy_primitives::{Address, U256};

    fn draft(number: u64) -> BlockDraft {
        BlockDraft {
            header: Header { number, ..Header::default() },
            body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
            receipts: Vec::new(),
            touched: Vec::new(),
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

    /// The state root of `accounts` (nonce, balance, slots) computed from nothing with
    /// in-memory tries: independent of the block writer's incremental, parallel path.
    fn root_from_scratch(accounts: &BTreeMap<Address, (u64, U256, BTreeMap<U256, U256>)>) -> B256 {
        let none = crate::trie::MemoryNodes::new();
        let mut state = Trie::new();
        for (address, (nonce, balance, slots)) in accounts {
            let mut storage = Trie::new();
            for (slot, value) in slots {
                let key = storage_trie_key(slot);
                storage.insert(&none, key.as_slice(), alloy_rlp::encode(value)).unwrap();
            }
            let mut account = StoredAccount::new(*nonce, *balance, 0);
            account.storage_root = storage.root_hash();
            state
                .insert(&none, account_trie_key(address).as_slice(), account.trie_value())
                .unwrap();
        }
        state.root_hash()
    }

    #[test]
    fn blocks_of_many_accounts_match_a_root_from_scratch() {
        let db = ChainWriter::in_memory().expect("store");
        let mut writer = BlockWriter::new(db.clone(), 1 << 20);
        let mut model: BTreeMap<Address, (u64, U256, BTreeMap<U256, U256>)> = BTreeMap::new();
        for number in 0..12u64 {
            // 150 accounts per block: over two lanes' MIN_ACCOUNTS_PER_LANE, so on two cores
            // the blocks are split between threads; every fourth block deletes some accounts.
            let mut diff = StateDiff::default();
            for i in 0..150u64 {
                let id = (number * 37 + i * 11) % 400;
                let address = Address::left_padding_from(&id.to_be_bytes());
                if number % 4 == 3 && i % 10 == 0 {
                    model.remove(&address);
                    let change =
                        AccountChange { info: None, storage_wiped: true, storage: BTreeMap::new() };
                    diff.accounts.insert(address, change);
                    continue;
                }
                let storage: BTreeMap<U256, U256> = (0..i % 3)
                    .map(|s| (U256::from(s + id % 5), U256::from((number + s + i) % 4)))
                    .collect();
                let entry = model.entry(address).or_default();
                entry.0 = number;
                entry.1 = U256::from(id * 1_000 + number);
                for (slot, value) in &storage {
                    if value.is_zero() {
                        entry.2.remove(slot);
                    } else {
                        entry.2.insert(*slot, *value);
                    }
                }
                let info =
                    AccountFields { nonce: number, balance: entry.1, code_hash: EMPTY_CODE_HASH };
                diff.accounts.insert(
                    address,
                    AccountChange { info: Some(info), storage_wiped: false, storage },
                );
            }
            let block = writer.write(draft(number), &diff).expect("write");
            assert_eq!(block.header.state_root, root_from_scratch(&model), "block {number}");
            // The versioned records agree with the model too.
            for (address, (nonce, balance, slots)) in &model {
                let account = db.account(address, number).expect("read").expect("present");
                assert_eq!((account.nonce, account.balance), (*nonce, *balance));
                for (slot, value) in slots {
                    let stored = db.storage(address, account.incarnation, slot, number);
                    assert_eq!(stored.expect("read"), *value);
                }
            }
        }
    }

    /// `WriteTimings::keys` counts what a block's apply writes: every key the block adds or
    /// changes in the store, and nothing else.
    #[test]
    fn a_blocks_key_count_is_what_it_writes() {
        let db = ChainWriter::in_memory().expect("store");
        let mut writer = BlockWriter::new(db.clone(), 1 << 20);
        let change = |balance: u64| {
            let info = AccountFields {
                nonce: 1,
                balance: U256::from(balance),
                code_hash: EMPTY_CODE_HASH,
            };
            let storage = BTreeMap::from([(U256::from(balance), U256::from(7))]);
            AccountChange { info: Some(info), storage_wiped: false, storage }
        };
        let contents = || -> BTreeMap<Vec<u8>, Vec<u8>> {
            db.tree().iter().map(|e| e.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
        };
        for number in 0..3u64 {
            let before = contents();
            let mut diff = StateDiff::default();
            for (i, byte) in [0x11u8, 0x22, 0x33].into_iter().enumerate() {
                diff.accounts.insert(Address::repeat_byte(byte), change(number * 10 + i as u64));
            }
            writer.write(draft(number), &diff).expect("write");
            let after = contents();
            let written = after.iter().filter(|(k, v)| before.get(*k) != Some(*v)).count();
            assert_eq!(writer.last_timings().keys, written, "block {number}");
            assert!(written > 10, "block {number}: accounts, slots, nodes and records");
        }
    }

    /// A slot read through a state view skips the store when the account's storage root is
    /// empty: what it reads must still be what was written, across a slot set, a slot zeroed
    /// (the root empty again while versions remain), a deletion and a re-creation (a new
    /// incarnation over the old one's slots).
    #[test]
    fn slots_read_through_a_view_follow_the_storage_root() {
        let db = ChainWriter::in_memory().expect("store");
        let mut writer = BlockWriter::new(db.clone(), 1 << 20);
        let address = Address::repeat_byte(0x42);
        let slot = U256::from(7);
        let info =
            |nonce| AccountFields { nonce, balance: U256::from(1), code_hash: EMPTY_CODE_HASH };
        let live = |nonce, value: u64| AccountChange {
            info: Some(info(nonce)),
            storage_wiped: false,
            storage: BTreeMap::from([(slot, U256::from(value))]),
        };
        let blocks = [
            (live(1, 5), 5u64),
            (live(2, 0), 0),
            (live(3, 9), 9),
            (AccountChange { info: None, storage_wiped: true, storage: BTreeMap::new() }, 0),
            (
                AccountChange {
                    info: Some(info(4)),
                    storage_wiped: true,
                    storage: BTreeMap::new(),
                },
                0,
            ),
            (live(5, 3), 3),
        ];
        for (number, (change, expected)) in (0u64..).zip(blocks) {
            let mut diff = StateDiff::default();
            diff.accounts.insert(address, change);
            writer.write(draft(number), &diff).expect("write");
            let view = db.state_at(number);
            assert_eq!(
                view.storage(&address, &slot).expect("read"),
                U256::from(expected),
                "block {number}"
            );
            let empty =
                view.account(&address).expect("read").is_none_or(|a| a.storage_root == EMPTY_ROOT);
            assert_eq!(empty, expected == 0, "block {number}: the storage root follows the slot");
        }
        // Older blocks read their own values, not the head's.
        assert_eq!(db.state_at(0).storage(&address, &slot).unwrap(), U256::from(5));
        assert_eq!(db.state_at(2).storage(&address, &slot).unwrap(), U256::from(9));
    }

    /// Block `number` with two transactions whose calldata spans several body chunks.
    fn draft_with_txs(number: u64) -> BlockDraft {
        let transactions: Vec<alloy_consensus::TxEnvelope> = (0..2u64)
            .map(|i| {
                let tx = alloy_consensus::TxLegacy {
                    nonce: number * 2 + i,
                    gas_limit: 21_000,
                    input: vec![number as u8; 5_000].into(),
                    ..Default::default()
                };
                let signature =
                    alloy_primitives::Signature::new(U256::from(1), U256::from(2), false);
                alloy_consensus::SignableTransaction::into_signed(tx, signature).into()
            })
            .collect();
        let senders = vec![Address::repeat_byte(9); transactions.len()];
        BlockDraft { body: StoredBody { transactions, senders }, ..draft(number) }
    }

    /// What `db` answers about block `number` equals what `plain` does: headers, indexes,
    /// body, receipts, every account and slot of the test history.
    fn assert_same_block(db: &ChainDb, plain: &ChainDb, number: u64) {
        assert_eq!(db.header(number).unwrap(), plain.header(number).unwrap());
        let hash = db.block_hash(number).unwrap().expect("hash");
        assert_eq!(Some(hash), plain.block_hash(number).unwrap());
        assert_eq!(db.block_number(&hash).unwrap(), Some(number));
        let body = db.body(number).unwrap();
        assert_eq!(body, plain.body(number).unwrap());
        for (index, tx) in body.expect("body").transactions.iter().enumerate() {
            assert_eq!(db.tx_location(&tx.trie_hash()).unwrap(), Some((number, index as u32)));
        }
        assert_eq!(db.receipts(number).unwrap(), plain.receipts(number).unwrap());
        assert_eq!(db.state_root_at(number).unwrap(), plain.state_root_at(number).unwrap());
        for id in 0..97u64 {
            let address = Address::left_padding_from(&id.to_be_bytes());
            let account = db.account(&address, number).unwrap();
            assert_eq!(account, plain.account(&address, number).unwrap(), "{address}");
            if let Some(account) = account {
                for slot in 0..6u64 {
                    let slot = U256::from(slot);
                    assert_eq!(
                        db.storage(&address, account.incarnation, &slot, number).unwrap(),
                        plain.storage(&address, account.incarnation, &slot, number).unwrap(),
                    );
                }
            }
        }
    }

    /// A deferred block reads the same as one applied at once, from the moment `write`
    /// returns: through the overlay before `settle`, from sled after it, with and without the
    /// store's head-block and account caches; and a revert removes it whole.
    #[test]
    fn deferred_blocks_read_the_same_before_and_after_they_are_applied() {
        let plain = ChainWriter::in_memory().expect("store");
        let db = ChainWriter::in_memory().expect("store");
        // No node cache: the next block's trie reads find the deferred nodes in the overlay.
        let mut writer = BlockWriter::new(db.clone(), 0);
        writer.set_deferred_apply(true);
        let header_key = |number| layout::number_key(layout::HEADER, number);
        let same = |plain: &ChainDb, number: u64| {
            assert_same_block(&db, plain, number);
            assert_same_block(&db.uncached(), plain, number);
        };
        for number in 0..12 {
            let a = write_block(&plain, draft_with_txs(number), &diff(number)).expect("plain");
            let b = writer.write(draft_with_txs(number), &diff(number)).expect("deferred write");
            assert_eq!(a.header.state_root, b.header.state_root, "block {number}");
            assert_eq!(db.head_number(), Some(number));
            assert!(db.tree().get(header_key(number)).unwrap().is_none(), "not in sled yet");
            same(&plain, number);
            // Every other block is settled by the next write instead.
            if number % 2 == 0 {
                db.settle().expect("settle");
                assert!(db.tree().get(header_key(number)).unwrap().is_some(), "applied");
                same(&plain, number);
            }
        }

        // A revert right after a deferred block removes it whole.
        for store in [&db, &plain] {
            crate::revert_blocks(store, 10, &[crate::BlockKeys::of(11, &diff(11))], &[]).unwrap();
        }
        assert_eq!(db.head_number(), Some(10));
        assert_eq!(db.header(11).unwrap(), None);
        assert_eq!(db.body(11).unwrap(), None);
        same(&plain, 10);
        // A different block 11: no account keeps a version of the reverted one (the account
        // cache forgot them), as on a store that never saw it.
        let never_reverted = ChainWriter::in_memory().expect("store");
        for number in 0..=10 {
            write_block(&never_reverted, draft_with_txs(number), &diff(number)).expect("write");
        }
        let a = write_block(&never_reverted, draft(11), &diff(30)).expect("write");
        let b = writer.write(draft(11), &diff(30)).expect("deferred write");
        assert_eq!(a.header.state_root, b.header.state_root);
        same(&never_reverted, 11);
    }

    /// Readers on another thread never see a block half there, nor miss a committed key,
    /// while the writer commits deferred blocks and settles them: at every head they read,
    /// the header, body and accounts are those of a store written plainly.
    #[test]
    fn readers_on_other_threads_see_whole_blocks_while_the_writer_defers() {
        const BLOCKS: u64 = 40;
        let plain = ChainWriter::in_memory().expect("store");
        for number in 0..BLOCKS {
            write_block(&plain, draft_with_txs(number), &diff(number)).expect("plain");
        }
        let db = ChainWriter::in_memory().expect("store");
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for cached in [true, false] {
                let reader = if cached { db.reader() } else { db.uncached() };
                let (plain, done) = (&plain, &done);
                scope.spawn(move || {
                    let mut checked = 0;
                    while !done.load(std::sync::atomic::Ordering::Acquire) || checked == 0 {
                        let Some(head) = reader.head_number() else { continue };
                        assert_same_block(&reader, plain, head);
                        checked += 1;
                    }
                });
            }
            let mut writer = BlockWriter::new(db.clone(), 0);
            writer.set_deferred_apply(true);
            for number in 0..BLOCKS {
                writer.write(draft_with_txs(number), &diff(number)).expect("write");
                if number % 3 == 0 {
                    db.settle().expect("settle");
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
    }

    /// Block `number` of a random history over 600 addresses: about `changes` accounts created,
    /// updated (slots set and cleared), wiped or deleted. Block 5 deletes all but `keep` of the
    /// accounts (the root branch collapses), block 6 refills the state from that tiny root.
    fn random_diff(rng: &mut u64, number: u64, changes: usize, keep: usize) -> StateDiff {
        let mut next = || {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            *rng
        };
        let address = |id: u64| Address::left_padding_from(&(id + 1).to_be_bytes());
        let mut diff = StateDiff::default();
        if number == 5 {
            for id in keep as u64..600 {
                let change =
                    AccountChange { info: None, storage_wiped: true, storage: BTreeMap::new() };
                diff.accounts.insert(address(id), change);
            }
            return diff;
        }
        for _ in 0..changes {
            let id = next() % 600;
            let roll = next() % 20;
            let change = if number > 0 && roll == 0 {
                AccountChange { info: None, storage_wiped: true, storage: BTreeMap::new() }
            } else {
                let storage = (0..next() % 4)
                    .map(|_| (U256::from(next() % 8), U256::from(next() % 3)))
                    .collect();
                let info = AccountFields {
                    nonce: number,
                    balance: U256::from(next() % 1_000_000),
                    code_hash: EMPTY_CODE_HASH,
                };
                AccountChange { info: Some(info), storage_wiped: roll == 1, storage }
            };
            diff.accounts.insert(address(id), change);
        }
        diff
    }

    /// Every record of `db`'s block records, in key order.
    fn records(db: &ChainDb) -> Vec<(sled::IVec, sled::IVec)> {
        db.tree().iter().collect::<Result<_, _>>().expect("read the store")
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 12,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// A block written in k lanes (on a sled tree) gives the same state root and the same
        /// records (accounts, slots, trie nodes) as the block written on one thread (in a map), for random histories of many
        /// accounts with storage, wipes and deletions, including a block that deletes nearly
        /// everything (the lanes fall back to one thread) and one built on the tiny state left.
        #[test]
        fn k_lanes_write_the_same_roots_and_records_as_one(
            seed in 1u64..,
            threads in 2usize..=20,
            per_lane in 1usize..16,
            changes in 60usize..400,
            keep in 0usize..4,
        ) {
            // One in a map, the other on sled (`kv`): their records must agree too.
            let one = ChainWriter::in_memory().expect("store");
            let lanes = ChainWriter::temporary_sled().expect("store");
            let mut single = BlockWriter::new(one.clone(), 1 << 20);
            single.set_threads(1);
            let mut split = BlockWriter::new(lanes.clone(), 1 << 20);
            split.set_threads(threads);
            split.set_min_accounts_per_lane(per_lane);
            let mut rng = seed;
            let mut split_blocks = 0;
            for number in 0..8u64 {
                let diff = random_diff(&mut rng, number, changes, keep);
                let a = single.write(draft(number), &diff).expect("one lane");
                let b = split.write(draft(number), &diff).expect("k lanes");
                proptest::prop_assert_eq!(a.header.state_root, b.header.state_root, "block {}", number);
                proptest::prop_assert_eq!(single.last_timings().lanes, 1);
                split_blocks += usize::from(split.last_timings().lanes > 1);
            }
            proptest::prop_assert!(records(&one) == records(&lanes), "the stores' records differ");
            // Blocks 1-4 and 7 change at least ~55 distinct accounts (over three lanes of at most
            // 15) on a state whose root is a branch.
            proptest::prop_assert!(split_blocks >= 4, "only {} blocks were split", split_blocks);
        }
    }

    #[test]
    fn cached_writer_matches_uncached_writes() {
        let plain = ChainWriter::in_memory().expect("store");
        let cached_db = ChainWriter::in_memory().expect("store");
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
