//! `StateActor`: the only writer of storage.
//!
//! - **Owns:** the store's `ChainWriter` (trie nodes, versioned accounts and storage, blocks,
//!   receipts, the head, and the snapshot readers load: it publishes a new one after every
//!   commit, settle, patch and revert), the cache of recently written trie nodes (`BlockWriter`), the
//!   list of block subscribers, and the evm_snapshot journal (per block the state keys it
//!   wrote, per patch what it overwrote, kept only while a snapshot is live).
//! - **Takes:** `CommitBlock` and `Rollback` (from the miner); `PatchState`, `TakeSnapshot`,
//!   `RevertTo` and `LoadState` (passed on by the miner between blocks, `HeadWrites`);
//!   `ListSnapshots` and `DumpState` (from `StateClient`); `ReplaceChain` (anvil_reset, from
//!   the miner); `SubscribeBlocks` (at startup); and
//!   `Settle`, which it sends itself to apply a committed block to the store once the commit
//!   is answered (`BlockWriter::set_deferred_apply`): at once on a thread of its own, 1 ms
//!   later when it shares the miner's thread (a chain in memory, `sharing_a_thread`), where
//!   the miner also sends it as soon as it has answered the block.
//! - **Thread:** its own for a store on disk (a flush must not hold up admission); the mempool
//!   and miner's for a chain in memory (a commit is then a task switch, not a wake-up).
//! - **Sends:** `BlockCommitted` to subscribers with `try_send` (a full subscriber misses one
//!   notification and it is counted; a commit never waits on a subscriber).
//! - **Mailbox:** `--actors.mailbox` (default 1024).
//! - **Restart:** never; on a storage error or a panic it answers the request with an error,
//!   logs at `error` and stops the `System` with a non-zero code, because a half-known state
//!   must not be served (the journal replays at next start).

use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, Addr, AsyncContext, Context, Handler, Recipient, SpawnHandle};
use alloy_consensus::Header;
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::StateError;
use hearth_messages::interest::Interest;
use hearth_messages::state::{
    AccountPatch, BlockCommitted, BlocksRemoved, CommitBlock, DumpState, HeadState, ListSnapshots,
    LoadState, MAX_REMOVED_BLOCKS, PatchState, ReplaceChain, RevertTo, Rollback, SetForkchoice,
    Settle, SubscribeBlocks, SubscribeRemovals, TakeSnapshot,
};
use hearth_storage::trie::EMPTY_ROOT;
use hearth_storage::{
    AccountChange, AccountFields, BlockDraft, BlockKeys, BlockWriter, ChainWriter,
    DEFAULT_NODE_CACHE_BYTES, EMPTY_CODE_HASH, PatchUndo, SealedBlock, StateDiff, StorageError,
    StoredBody, head_accounts, load_accounts, revert_blocks, rollback, write_block, write_patch,
};
use tracing::{error, info, warn};

/// A point evm_revert can go back to.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    id: u64,
    head: u64,
    /// How many entries of `undo` existed when it was taken.
    undo_len: usize,
}

/// The state owner.
#[derive(Debug)]
pub struct StateActor {
    db: ChainWriter,
    /// Writes blocks, keeping the trie nodes of recent blocks in memory for the next ones.
    writer: BlockWriter,
    subscribers: Vec<(Recipient<BlockCommitted>, Interest)>,
    /// Who hears of rewinds (`BlocksRemoved`).
    removal_subscribers: Vec<(Recipient<BlocksRemoved>, Interest)>,
    /// Notifications dropped because a subscriber's mailbox was full.
    missed_notifications: u64,
    /// Live snapshots, oldest first. Journals below are kept only while one exists, so a chain
    /// nobody snapshots pays nothing.
    snapshots: Vec<Snapshot>,
    next_snapshot_id: u64,
    /// The state keys of each block committed since the oldest live snapshot.
    block_keys: Vec<BlockKeys>,
    /// What each patch since the oldest live snapshot overwrote, in order, with the head it
    /// patched (a rollback below that head drops the entry with the versions it undoes).
    undo: Vec<(u64, PatchUndo)>,
    /// Threads a block's state root is spread over (`--exec.threads`; see
    /// `BlockWriter::set_threads`).
    commit_threads: Option<usize>,
    /// How long after answering a commit the block is applied to the store (`Settle`): at
    /// once on a thread of its own, later when sharing one (see [`StateActor::sharing_a_thread`]).
    settle_after: Option<std::time::Duration>,
    /// The delayed `Settle` of the last commit, cancelled when a `Settle` comes first (the
    /// miner's): one timer wake-up of the shared thread less per block.
    settle_timer: Option<SpawnHandle>,
}

/// How long a state owner that shares its thread waits before applying a committed block to
/// the store when no `Settle` comes first. Applied at once, a 2,000-transaction block's apply
/// (~9 ms) ran before the miner, on the same thread, could answer the block. A commit that
/// comes sooner applies the previous block first, as always; one sender's blocks came every
/// ~0.5 ms, so each apply ran on the next sender's path until the miner sent `Settle`.
const SHARED_SETTLE_DELAY: std::time::Duration = std::time::Duration::from_millis(1);

impl StateActor {
    /// The owner of `db`, the store's writer.
    pub fn new(db: ChainWriter) -> Self {
        let mut writer = BlockWriter::new(db.clone(), DEFAULT_NODE_CACHE_BYTES);
        // A block is applied to the store after its commit is answered (`Settle`): the miner
        // and the RPC front move on before this thread spends the apply.
        writer.set_deferred_apply(true);
        Self {
            db,
            writer,
            subscribers: Vec::new(),
            removal_subscribers: Vec::new(),
            missed_notifications: 0,
            snapshots: Vec::new(),
            next_snapshot_id: 1,
            block_keys: Vec::new(),
            undo: Vec::new(),
            commit_threads: None,
            settle_after: None,
            settle_timer: None,
        }
    }

    /// For a state owner started on a thread it shares with the miner (a chain in memory): a
    /// committed block is applied to the store once the miner has answered the run that made
    /// it (the miner sends `Settle`), else 1 ms after its commit was answered (blocks the
    /// engine API or a replica commits through the miner, and a Settle the miner could not
    /// send); never in the same turn of the thread, which would delay the answer.
    #[must_use]
    pub fn sharing_a_thread(mut self) -> Self {
        self.settle_after = Some(SHARED_SETTLE_DELAY);
        self
    }

    /// Spreads each large block's state root over up to `threads` threads (the node passes
    /// `--exec.threads`); by default the machine's cores.
    #[must_use]
    pub fn with_commit_threads(mut self, threads: usize) -> Self {
        self.writer.set_threads(threads);
        self.commit_threads = Some(threads);
        self
    }

    /// Applies one dev change to the head state.
    fn patch(&mut self, msg: PatchState) -> Result<B256, StateError> {
        let head = self.db.head_number().unwrap_or_default();
        let current = self.db.account(&msg.address, head)?;
        let mut fields = current.as_ref().map_or(
            AccountFields { nonce: 0, balance: U256::ZERO, code_hash: EMPTY_CODE_HASH },
            |a| AccountFields { nonce: a.nonce, balance: a.balance, code_hash: a.code_hash },
        );
        let mut change =
            AccountChange { info: None, storage_wiped: false, storage: Default::default() };
        let mut diff = StateDiff::default();
        match msg.change {
            AccountPatch::Balance(balance) => fields.balance = balance,
            AccountPatch::AddBalance(amount) => {
                fields.balance = fields.balance.saturating_add(amount);
            }
            AccountPatch::Nonce(nonce) => fields.nonce = nonce,
            AccountPatch::Code(code) => {
                fields.code_hash = if code.is_empty() {
                    EMPTY_CODE_HASH
                } else {
                    alloy_primitives::keccak256(&code)
                };
                if !code.is_empty() {
                    diff.codes.insert(fields.code_hash, code);
                }
            }
            AccountPatch::Storage { slot, value } => {
                change.storage.insert(slot, value);
            }
        }
        change.info = Some(fields);
        diff.accounts.insert(msg.address, change);
        let (root, undo) = write_patch(&self.db, &diff)?;
        if !self.snapshots.is_empty() {
            self.undo.push((head, undo));
        }
        info!(target: "actors::state", address = %msg.address, %root, "head state patched");
        Ok(root)
    }

    /// Sets the accounts of a state load in the head state, as one patch (atomic).
    fn load(&mut self, msg: LoadState) -> Result<B256, StateError> {
        let head = self.db.head_number().unwrap_or_default();
        let (root, undo) = load_accounts(&self.db, &msg.accounts)?;
        if !self.snapshots.is_empty() {
            self.undo.push((head, undo));
        }
        info!(target: "actors::state", accounts = msg.accounts.len(), %root, "state loaded into the head state");
        Ok(root)
    }

    /// The head state whole, with the head's header.
    fn dump(&self, msg: DumpState) -> Result<HeadState, StateError> {
        let max_json_bytes = msg.max_json_bytes;
        let (head, accounts) = head_accounts(&self.db, max_json_bytes)?
            .ok_or(StateError::DumpTooLarge { max_json_bytes })?;
        let header = self
            .db
            .header(head)?
            .ok_or(StateError::Storage(StorageError::Corrupt { what: "head header" }))?;
        info!(target: "actors::state", head, accounts = accounts.len(), "head state dumped");
        Ok(HeadState { header, accounts })
    }

    fn take_snapshot(&mut self) -> u64 {
        let id = self.next_snapshot_id;
        self.next_snapshot_id += 1;
        let head = self.db.head_number().unwrap_or_default();
        self.snapshots.push(Snapshot { id, head, undo_len: self.undo.len() });
        id
    }

    /// Goes back to snapshot `id`; `false` when it is unknown (or already used).
    fn revert(&mut self, id: u64) -> Result<bool, StateError> {
        let Some(index) = self.snapshots.iter().position(|s| s.id == id) else {
            return Ok(false);
        };
        let snapshot = self.snapshots[index];
        let removed = self.blocks_after(snapshot.head)?;
        let undo: Vec<PatchUndo> =
            self.undo[snapshot.undo_len..].iter().map(|(_, undo)| undo.clone()).collect();
        revert_blocks(&self.db, snapshot.head, &self.block_keys, &undo)?;
        // The snapshot and every later one are used up, as in Hardhat and anvil.
        self.snapshots.truncate(index);
        self.undo.truncate(snapshot.undo_len);
        self.block_keys.retain(|k| k.number <= snapshot.head);
        if self.snapshots.is_empty() {
            self.undo.clear();
            self.block_keys.clear();
        }
        self.cut_marks(snapshot.head)?;
        info!(target: "actors::state", id, head = snapshot.head, "reverted to snapshot");
        self.tell_removed(removed, snapshot.head);
        Ok(true)
    }

    /// Drops the newest `depth` blocks (`storage::rollback`) and forgets what no longer
    /// exists: snapshots taken on a dropped block, the journals of dropped blocks and of
    /// patches made while one of them was the head. Replies with the new head's header.
    fn rollback(&mut self, depth: u64) -> Result<Header, StateError> {
        let head = self.db.head_number().unwrap_or_default();
        let target = head.checked_sub(depth).ok_or(StateError::RollbackTooDeep { head, depth })?;
        let undone = self.blocks_after(target)?;
        let removed = rollback(&self.db, target)?;
        // Snapshots and patches come in head order between reverts and rollbacks, so what
        // is past `target` is a suffix of each list; the snapshots left point before it.
        self.snapshots.retain(|s| s.head <= target);
        self.undo.retain(|(patched, _)| *patched <= target);
        self.block_keys.retain(|k| k.number <= target);
        if self.snapshots.is_empty() {
            self.undo.clear();
            self.block_keys.clear();
        }
        let header = self
            .db
            .header(target)?
            .ok_or(StateError::Storage(StorageError::Corrupt { what: "rollback target header" }))?;
        self.cut_marks(target)?;
        info!(target: "actors::state", head = target, blocks = removed.blocks, txs = removed.transactions, "rolled back");
        self.tell_removed(undone, target);
        Ok(header)
    }

    /// Drops the safe and finalized marks above `head` (the chain went back below them).
    fn cut_marks(&self, head: u64) -> Result<(), StateError> {
        let marks = self.db.reader().forkchoice_marks()?;
        if marks.at_most(head) != marks {
            self.db.set_forkchoice_marks(marks.at_most(head))?;
        }
        Ok(())
    }

    /// The blocks after `target` up to the head, newest first (at most `MAX_REMOVED_BLOCKS`),
    /// read before a rewind deletes them, when some subscriber wants to hear of it.
    fn blocks_after(&mut self, target: u64) -> Result<Vec<SealedBlock>, StateError> {
        self.removal_subscribers.retain(|(s, _)| s.connected());
        if !self.removal_subscribers.iter().any(|(_, interest)| interest.wanted()) {
            return Ok(Vec::new());
        }
        let head = self.db.head_number().unwrap_or_default();
        let oldest = (target + 1).max(head.saturating_sub(MAX_REMOVED_BLOCKS - 1));
        if oldest > target + 1 {
            warn!(target: "actors::state", blocks = head - target, told = head - oldest + 1, "a rewind of more blocks than subscribers are told of: the oldest undone logs are not reported removed");
        }
        let mut blocks = Vec::new();
        for number in (oldest..=head).rev() {
            blocks.extend(self.db.sealed_block(number)?);
        }
        Ok(blocks)
    }

    /// Tells the removal subscribers that `blocks` were undone, leaving `head`.
    fn tell_removed(&mut self, blocks: Vec<SealedBlock>, head: u64) {
        if blocks.is_empty() {
            return;
        }
        let note = BlocksRemoved { blocks: Arc::new(blocks), head };
        for (subscriber, _) in self.removal_subscribers.iter().filter(|(_, i)| i.wanted()) {
            if subscriber.try_send(note.clone()).is_err() {
                self.missed_notifications += 1;
                warn!(target: "actors::state", missed = self.missed_notifications, "removal subscriber mailbox full; notification dropped");
            }
        }
    }

    /// Starts the actor on its own arbiter with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> Addr<Self> {
        crate::bounded::start_on_own_thread(self, mailbox)
    }

    /// Writes the block, then tells every subscriber.
    fn commit(&mut self, msg: CommitBlock) -> Result<Arc<SealedBlock>, StateError> {
        let head = self.db.head_number();
        let expected = head.map_or(0, |h| h + 1);
        if msg.draft.header.number != expected {
            return Err(StateError::NotNext {
                head: head.unwrap_or_default(),
                got: msg.draft.header.number,
            });
        }
        // The block's diff carries whole accounts: written over a head state that changed
        // after its build began (a patch, a revert to the same head, a load), it would undo
        // that change. The miner passes those writes on between blocks; this is the owner's
        // check that nothing else did.
        if let Some(head) = head {
            let head_root = self.db.state_root_at(head)?.unwrap_or(EMPTY_ROOT);
            if head_root != msg.parent_root {
                return Err(StateError::HeadChanged {
                    number: expected,
                    built_on: msg.parent_root,
                    head_root,
                });
            }
        }
        // A received block names its parent: it must be the head itself, not only a block with
        // the head's number and state root (an empty sibling has the same root).
        if msg.received.is_some()
            && let Some(head) = head
            && self.db.block_hash(head)? != Some(msg.draft.header.parent_hash)
        {
            return Err(StateError::NotNext { head, got: msg.draft.header.number });
        }
        let keys = (!self.snapshots.is_empty()).then(|| BlockKeys::of(expected, &msg.diff));
        let block = Arc::new(match msg.received {
            Some(extras) => self.writer.import(msg.draft, &msg.diff, extras)?,
            None => self.writer.write(msg.draft, &msg.diff)?,
        });
        self.block_keys.extend(keys);
        info!(target: "actors::state", number = block.number(), hash = %block.hash, txs = block.body.transactions.len(), "block committed");
        let t = self.writer.last_timings();
        tracing::debug!(target: "actors::state", state_us = t.state.as_micros() as u64, apply_us = t.apply.as_micros() as u64, durable_us = t.flush.as_micros() as u64, lanes = t.lanes, keys = t.keys, "block write timings");
        let note = BlockCommitted { block: Arc::clone(&block) };
        self.subscribers.retain(|(s, _)| s.connected());
        for (subscriber, _) in self.subscribers.iter().filter(|(_, i)| i.wanted()) {
            if subscriber.try_send(note.clone()).is_err() {
                self.missed_notifications += 1;
                warn!(target: "actors::state", missed = self.missed_notifications, "block subscriber mailbox full; notification dropped");
            }
        }
        Ok(block)
    }
}

impl Actor for StateActor {
    type Context = Context<Self>;
}

impl Handler<CommitBlock> for StateActor {
    type Result = Result<Arc<SealedBlock>, StateError>;

    fn handle(&mut self, msg: CommitBlock, ctx: &mut Self::Context) -> Self::Result {
        let result = guarded(|| self.commit(msg));
        stop_on_storage_error(&result, "committing");
        if result.is_ok() {
            match self.settle_after {
                None => ctx.notify(Settle),
                Some(delay) => {
                    if let Some(earlier) =
                        self.settle_timer.replace(ctx.notify_later(Settle, delay))
                    {
                        ctx.cancel_future(earlier);
                    }
                }
            }
        }
        result
    }
}

// `Settle` (messages): sent to itself after a commit is answered, and by a miner sharing the
// thread once it has answered the block: apply the block to the store now
// (`ChainWriter::settle`). Until then readers see it through the snapshot's overlay; the next
// commit settles it first if no `Settle` came before it.

impl Handler<Settle> for StateActor {
    type Result = ();

    fn handle(&mut self, _msg: Settle, ctx: &mut Self::Context) -> Self::Result {
        // This Settle or an earlier one applies the block: its timer has nothing left to do.
        if let Some(timer) = self.settle_timer.take() {
            ctx.cancel_future(timer);
        }
        let result = guarded(|| self.db.settle().map_err(StateError::from));
        // Nothing owed (the miner's Settle came first, or the next commit applied it): no line.
        if let Ok(took) = &result
            && !took.is_zero()
        {
            tracing::debug!(target: "actors::state", apply_us = took.as_micros() as u64, "block applied to sled");
        }
        stop_on_storage_error(&result, "applying a block");
    }
}

/// Stops the node on a storage failure or a panic: a half-known state must not be served.
/// Unlike the other actors, the writer is not restarted after a panic: it may have stopped
/// half-way through a block's writes, and only a restart of the process (which replays the
/// journal) rebuilds the store's view from what is durable.
fn stop_on_storage_error<T>(result: &Result<T, StateError>, what: &str) {
    match result {
        // A fork's upstream did not answer a read: the write had not begun (reads come before
        // the one batch), so the request fails and the store is as it was.
        Err(StateError::Storage(hearth_storage::StorageError::Fork(e))) => {
            tracing::warn!(target: "actors::state", error = %e, "fork read failed while {what}");
            return;
        }
        Err(StateError::Storage(e)) => {
            error!(target: "actors::state", error = %e, "storage failed while {what}; stopping the node");
        }
        Err(StateError::Panicked(panic)) => {
            error!(target: "actors::state", %panic, "the state owner panicked while {what}; stopping the node");
        }
        _ => return,
    }
    actix::System::current().stop_with_code(1);
}

/// Runs a write, turning a panic in it into [`StateError::Panicked`] (which stops the node)
/// instead of unwinding out of the actor and leaving every later write without an owner.
fn guarded<T>(write: impl FnOnce() -> Result<T, StateError>) -> Result<T, StateError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(write))
        .unwrap_or_else(|panic| Err(StateError::Panicked(crate::supervise::panic_message(&*panic))))
}

impl Handler<PatchState> for StateActor {
    type Result = Result<B256, StateError>;

    fn handle(&mut self, msg: PatchState, _ctx: &mut Self::Context) -> Self::Result {
        let result = guarded(|| self.patch(msg));
        stop_on_storage_error(&result, "patching");
        result
    }
}

impl Handler<LoadState> for StateActor {
    type Result = Result<B256, StateError>;

    fn handle(&mut self, msg: LoadState, _ctx: &mut Self::Context) -> Self::Result {
        let result = guarded(|| self.load(msg));
        stop_on_storage_error(&result, "loading a state");
        result
    }
}

impl Handler<DumpState> for StateActor {
    type Result = Result<HeadState, StateError>;

    fn handle(&mut self, msg: DumpState, _ctx: &mut Self::Context) -> Self::Result {
        // The dump settles the deferred block: a write, so it is guarded like one.
        let result = guarded(|| self.dump(msg));
        stop_on_storage_error(&result, "dumping the state");
        result
    }
}

impl Handler<TakeSnapshot> for StateActor {
    type Result = Result<u64, StateError>;

    fn handle(&mut self, _msg: TakeSnapshot, _ctx: &mut Self::Context) -> Self::Result {
        Ok(self.take_snapshot())
    }
}

impl Handler<RevertTo> for StateActor {
    type Result = Result<bool, StateError>;

    fn handle(&mut self, msg: RevertTo, _ctx: &mut Self::Context) -> Self::Result {
        let result = guarded(|| self.revert(msg.0));
        stop_on_storage_error(&result, "reverting");
        result
    }
}

impl Handler<Rollback> for StateActor {
    type Result = Result<Header, StateError>;

    fn handle(&mut self, msg: Rollback, _ctx: &mut Self::Context) -> Self::Result {
        let result = guarded(|| self.rollback(msg.depth));
        stop_on_storage_error(&result, "rolling back");
        result
    }
}

impl Handler<SetForkchoice> for StateActor {
    type Result = Result<(), StateError>;

    fn handle(&mut self, msg: SetForkchoice, _ctx: &mut Self::Context) -> Self::Result {
        Ok(self.db.set_forkchoice_marks(msg.0)?)
    }
}

impl Handler<ReplaceChain> for StateActor {
    type Result = Result<Header, StateError>;

    /// One publication switches every reader to the new chain; what this actor kept about the
    /// old one (snapshots and their journals, cached trie nodes) goes with it.
    fn handle(&mut self, msg: ReplaceChain, _ctx: &mut Self::Context) -> Self::Result {
        let result = guarded(|| {
            self.db.replace_chain(msg.0)?;
            let mut writer = BlockWriter::new(self.db.clone(), DEFAULT_NODE_CACHE_BYTES);
            writer.set_deferred_apply(true);
            if let Some(threads) = self.commit_threads {
                writer.set_threads(threads);
            }
            self.writer = writer;
            self.snapshots.clear();
            self.next_snapshot_id = 1;
            self.block_keys.clear();
            self.undo.clear();
            let head = self.db.head_number().unwrap_or_default();
            let header =
                self.db.header(head)?.ok_or(StorageError::Corrupt { what: "head header" })?;
            info!(target: "actors::state", head, hash = %header.hash_slow(), "chain replaced (reset)");
            Ok(header)
        });
        stop_on_storage_error(&result, "replacing the chain");
        result
    }
}

impl Handler<ListSnapshots> for StateActor {
    type Result = actix::MessageResult<ListSnapshots>;

    fn handle(&mut self, _msg: ListSnapshots, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(self.snapshots.iter().map(|s| (s.id, s.head)).collect())
    }
}

impl Handler<SubscribeRemovals> for StateActor {
    type Result = ();

    fn handle(&mut self, msg: SubscribeRemovals, _ctx: &mut Self::Context) -> Self::Result {
        self.removal_subscribers.push((msg.0, msg.1));
    }
}

impl Handler<SubscribeBlocks> for StateActor {
    type Result = ();

    fn handle(&mut self, msg: SubscribeBlocks, _ctx: &mut Self::Context) -> Self::Result {
        self.subscribers.push((msg.0, msg.1));
    }
}

/// What the genesis block holds.
#[derive(Debug, Clone)]
pub struct GenesisSpec {
    /// Funded accounts.
    pub alloc: Vec<(Address, U256)>,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Base fee of the genesis block.
    pub base_fee: u64,
    /// Timestamp (seconds).
    pub timestamp: u64,
}

/// Writes the genesis block when the store is empty; returns the head either way.
/// Runs before any actor starts, so it needs no owner.
pub fn init_genesis(db: &ChainWriter, spec: &GenesisSpec) -> Result<u64, StorageError> {
    if let Some(head) = db.head_number() {
        return Ok(head);
    }
    let mut diff = StateDiff::default();
    for (address, balance) in &spec.alloc {
        diff.accounts.insert(
            *address,
            AccountChange {
                info: Some(AccountFields {
                    nonce: 0,
                    balance: *balance,
                    code_hash: EMPTY_CODE_HASH,
                }),
                storage_wiped: false,
                storage: Default::default(),
            },
        );
    }
    let header = Header {
        ommers_hash: alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH,
        transactions_root: EMPTY_ROOT,
        receipts_root: EMPTY_ROOT,
        gas_limit: spec.gas_limit,
        timestamp: spec.timestamp,
        extra_data: Bytes::new(),
        base_fee_per_gas: Some(spec.base_fee),
        withdrawals_root: Some(EMPTY_ROOT),
        blob_gas_used: Some(0),
        excess_blob_gas: Some(0),
        parent_beacon_block_root: Some(B256::ZERO),
        requests_hash: Some(EMPTY_REQUESTS_HASH),
        ..Default::default()
    };
    let draft = BlockDraft {
        header,
        body: StoredBody { transactions: vec![], senders: vec![] },
        receipts: vec![],
        touched: Vec::new(),
    };
    let block = write_block(db, draft, &diff)?;
    info!(target: "actors::state", hash = %block.hash, state_root = %block.header.state_root, "genesis written");
    Ok(0)
}
