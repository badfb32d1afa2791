//! Messages to the `StateActor`, the only writer of storage.

use std::sync::Arc;

use actix::{Message, Recipient};
use hearth_storage::{BlockDraft, SealedBlock, StateDiff};

use crate::StateError;

/// Writes a block on top of the head: applies `diff` to the tries, seals the header with the
/// state root (or, for a `received` block, checks its own), and commits everything atomically.
/// Replies once the block is durable.
#[derive(Debug, Clone)]
pub struct CommitBlock {
    /// The block without its state root.
    pub draft: BlockDraft,
    /// What the block changed.
    pub diff: StateDiff,
    /// The root of the head state the block was built on (the head header's, or the one dev
    /// patches left). The state owner refuses the block when the head state has changed
    /// since: its diff carries whole accounts and would undo that change.
    pub parent_root: alloy_primitives::B256,
    /// A block received from outside (engine_newPayload): its header is complete and stored
    /// as it is (the root is checked, not set), with these ommers and withdrawals beside it.
    pub received: Option<hearth_storage::BlockExtras>,
}

impl Message for CommitBlock {
    type Result = Result<Arc<SealedBlock>, StateError>;
}

/// Apply the last committed block to the store now, if it is still owed (a no-op otherwise).
/// The state owner sends it to itself after answering a commit; a miner on the same thread
/// sends it once it has answered the block's senders, so that a chain in memory applies each
/// block while the thread waits for the next request instead of at the start of the next
/// commit (`StateActor::sharing_a_thread`).
#[derive(Debug, Clone, Copy)]
pub struct Settle;

impl Message for Settle {
    type Result = ();
}

/// A block was committed and is now the head. Sent to every subscriber.
#[derive(Debug, Clone)]
pub struct BlockCommitted {
    /// The block, shared.
    pub block: Arc<SealedBlock>,
}

impl Message for BlockCommitted {
    type Result = ();
}

/// Blocks undone by a rewind (evm_revert, anvil_rollback and anvil_reorg's, debug_setHead),
/// newest first, each with its receipts, and the head after it. Sent to `SubscribeRemovals`
/// subscribers before any block that replaces them, so that log subscribers and filters can
/// report the undone logs with `removed: true`, as geth does on a reorg.
#[derive(Debug, Clone)]
pub struct BlocksRemoved {
    /// The undone blocks, newest first (at most `MAX_REMOVED_BLOCKS` of them).
    pub blocks: Arc<Vec<SealedBlock>>,
    /// The head after the rewind.
    pub head: u64,
}

impl Message for BlocksRemoved {
    type Result = ();
}

/// Most undone blocks one `BlocksRemoved` carries (the newest): a rewind of more is rare
/// (anvil_rollback of thousands of blocks) and their logs would be more than any subscriber
/// reads; the state owner says when it cut.
pub const MAX_REMOVED_BLOCKS: u64 = 1024;

/// Subscribes a recipient to `BlocksRemoved`, sent while its `Interest` is on (with
/// `try_send`, as `SubscribeBlocks`).
#[derive(Debug)]
pub struct SubscribeRemovals(pub Recipient<BlocksRemoved>, pub crate::interest::Interest);

impl Message for SubscribeRemovals {
    type Result = ();
}

/// Subscribes a recipient to `BlockCommitted`, sent while its `Interest` is on. Delivery uses
/// `try_send`: a subscriber whose mailbox is full misses that notification (counted and
/// logged), it never blocks commits.
#[derive(Debug)]
pub struct SubscribeBlocks(pub Recipient<BlockCommitted>, pub crate::interest::Interest);

impl Message for SubscribeBlocks {
    type Result = ();
}

/// Writes dev-method state changes (balance, nonce, code, storage) into the head state: visible
/// at `latest` at once, persisted, and the base of the next block. Serves `anvil_setBalance`,
/// `anvil_addBalance`, `anvil_setNonce`, `anvil_setCode`, `anvil_setStorageAt` (also for
/// `anvil_dealERC20` and `anvil_setERC20Allowance`) and their `hardhat_` names.
/// The state owner reads the current account and changes only the given fields, so
/// concurrent patches of one account cannot lose each other's changes.
#[derive(Debug, Clone)]
pub struct PatchState {
    /// The account to change.
    pub address: alloy_primitives::Address,
    /// What to set.
    pub change: AccountPatch,
}

/// One dev change to an account.
#[derive(Debug, Clone)]
pub enum AccountPatch {
    /// Sets the balance (wei).
    Balance(alloy_primitives::U256),
    /// Adds to the balance (wei), saturating at 2^256 - 1. Serves `anvil_addBalance`: the
    /// state owner reads and writes in one step, so concurrent additions add up.
    AddBalance(alloy_primitives::U256),
    /// Sets the nonce.
    Nonce(u64),
    /// Sets the code (empty removes it).
    Code(alloy_primitives::Bytes),
    /// Sets one storage slot.
    Storage {
        /// The slot.
        slot: alloy_primitives::U256,
        /// Its new value (zero clears it).
        value: alloy_primitives::U256,
    },
}

impl Message for PatchState {
    /// The new state root of the head state.
    type Result = Result<alloy_primitives::B256, StateError>;
}

/// Remembers the current head state so that [`RevertTo`] can come back to it. Serves
/// `evm_snapshot`. Replies with the snapshot id.
#[derive(Debug, Clone, Copy)]
pub struct TakeSnapshot;

impl Message for TakeSnapshot {
    type Result = Result<u64, StateError>;
}

/// Goes back to snapshot `0`: blocks after it and patches since it are undone. The snapshot
/// and every later one are used up. Serves `evm_revert`. Replies whether the id was known.
#[derive(Debug, Clone, Copy)]
pub struct RevertTo(pub u64);

impl Message for RevertTo {
    type Result = Result<bool, StateError>;
}

/// Drops the newest `depth` blocks from the chain and the store, durably: the block `depth`
/// below the head becomes the head, with exactly the state it had as the head (patches made
/// since on the dropped blocks go with them). Snapshots taken on a dropped block are used up.
/// Serves `anvil_rollback` and the first half of `anvil_reorg`. Replies with the new head's
/// header; depth 0 changes nothing.
#[derive(Debug, Clone, Copy)]
pub struct Rollback {
    /// How many blocks to drop; at most the head's number (genesis stays).
    pub depth: u64,
}

impl Message for Rollback {
    type Result = Result<alloy_consensus::Header, StateError>;
}

/// Records the safe and finalized blocks of an engine_forkchoiceUpdated (the block tags
/// `safe` and `finalized` then answer them). A rollback below a mark drops it.
#[derive(Debug, Clone, Copy)]
pub struct SetForkchoice(pub hearth_storage::ForkchoiceMarks);

impl Message for SetForkchoice {
    type Result = Result<(), StateError>;
}

/// Publishes `0` in place of the whole chain (anvil_reset): its records, fork source, head and
/// journal; every snapshot ends and the trie node cache starts empty. Sent by the miner
/// between blocks. Replies with the new head's header.
#[derive(Debug)]
pub struct ReplaceChain(pub hearth_storage::ChainWriter);

impl Message for ReplaceChain {
    type Result = Result<alloy_consensus::Header, StateError>;
}

/// The live snapshots, oldest first: each id with the head block it was taken at. Serves the
/// `snapshots` of `anvil_metadata`.
#[derive(Debug, Clone, Copy)]
pub struct ListSnapshots;

impl Message for ListSnapshots {
    type Result = Vec<(u64, u64)>;
}

/// Reads the whole head state: every account with its nonce, balance, code and non-zero
/// slots. Serves anvil_dumpState and `--dump-state`. The state owner answers it between
/// commits, so the accounts are exactly the state of the header it answers with.
#[derive(Debug, Clone, Copy)]
pub struct DumpState {
    /// Refuse (`StateError::DumpTooLarge`) once the dump's JSON would pass this many bytes.
    pub max_json_bytes: usize,
}

/// The head state, whole.
#[derive(Debug, Clone)]
pub struct HeadState {
    /// The head block's header.
    pub header: alloy_consensus::Header,
    /// Its accounts, ordered by address.
    pub accounts: Vec<hearth_storage::WholeAccount>,
}

impl Message for DumpState {
    type Result = Result<HeadState, StateError>;
}

/// Sets accounts in the head state, all in one dev patch (atomic: all or none): each one's
/// nonce, balance and code, and the slots it lists. Serves anvil_loadState (`--load-state`
/// loads before the actors start, with the same storage call). Replies with the new state
/// root.
#[derive(Debug, Clone)]
pub struct LoadState {
    /// The accounts, already checked (the decoder range-checks every value).
    pub accounts: Vec<hearth_storage::WholeAccount>,
}

impl Message for LoadState {
    type Result = Result<alloy_primitives::B256, StateError>;
}

crate::actor_client! {
    /// The `StateActor`'s client for the dev methods that read the head state whole. Writes of
    /// the head state outside a block go through the miner
    /// ([`BetweenBlocks`](crate::miner::BetweenBlocks)).
    pub struct StateClient for "state" {
        /// The live snapshots (anvil_metadata).
        send list_snapshots: ListSnapshots,
        /// Reads the whole head state (anvil_dumpState).
        send dump_state: DumpState,
    }
}
