//! The forked base under a local chain: where reads go that the local store has no record of.
//!
//! A node started with `--fork-url` keeps its own blocks from the fork block on, over the
//! upstream's state at that block. The store asks a [`ForkSource`] for an account, slot, code
//! or block hash only when it has never written one itself, so every local write (a block, a
//! dev patch) shadows the upstream's value, and a local deletion (a tombstone) shadows it too.

use alloy_consensus::{Header, ReceiptEnvelope};
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_rlp::RlpEncodable;

use crate::{BlockExtras, StorageError, StoredBody};

/// An `eth_getLogs` query of upstream blocks `from..=to` (at or below the fork block): the
/// addresses (any of them; empty: all) and, per topic position, the topics it may hold (empty:
/// any). Its RLP is the key its answer is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, RlpEncodable)]
pub struct LogQuery {
    /// First block.
    pub from: u64,
    /// Last block (inclusive).
    pub to: u64,
    /// Emitting contracts.
    pub addresses: Vec<Address>,
    /// Topics by position.
    pub topics: Vec<Vec<B256>>,
}

/// An `eth_simulateV1` on top of upstream block `base` (below the fork block): the payload as
/// the caller sent it, in JSON. Its RLP is the key its answer is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, RlpEncodable)]
pub struct SimulateQuery {
    /// The block the simulated blocks follow.
    pub base: u64,
    /// The `eth_simulateV1` payload (its first parameter), as JSON text.
    pub payload: String,
}

/// An `eth_getProof` of upstream block `number` (at or below the fork block): an account and
/// some of its slots, in the order asked. Its RLP is the key its answer is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, RlpEncodable)]
pub struct ProofQuery {
    /// The block whose state is proven.
    pub number: u64,
    /// The account.
    pub address: Address,
    /// Its storage slots.
    pub slots: Vec<U256>,
}

thread_local! {
    /// The contract whose ring-buffer slots the running system call overwrites, if any.
    static OVERWRITING: std::cell::Cell<Option<Address>> = const { std::cell::Cell::new(None) };
}

/// Runs `write`, a system call that overwrites slots of `contract` without reading them (the
/// EIP-4788 beacon-roots and EIP-2935 block-hash ring buffers), with that contract's slots of
/// the fork block that the store has no record of read as zero instead of fetched. The EVM
/// loads a slot's old value before it stores a new one, but a system call's gas is charged to
/// no one and what it stores does not depend on it, so nothing a block shows does either;
/// fetched, the slot (a new one each block, by timestamp or number) would cost a round trip
/// to the upstream in every block a fork mines.
pub fn overwriting<T>(contract: Address, write: impl FnOnce() -> T) -> T {
    struct Restore(Option<Address>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERWRITING.with(|cell| cell.set(self.0));
        }
    }
    let _restore = Restore(OVERWRITING.with(|cell| cell.replace(Some(contract))));
    write()
}

/// Whether a fork slot of `contract` is being overwritten unread ([`overwriting`]): a
/// [`ForkSource`] answers zero for it without asking its upstream.
pub fn is_overwriting(contract: &Address) -> bool {
    OVERWRITING.with(|cell| cell.get().as_ref() == Some(contract))
}

/// An account as the upstream has it at the fork block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkedAccount {
    /// Transaction count.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// keccak256 of the code; the code itself is then served by [`ForkSource::code`].
    pub code_hash: B256,
}

/// The upstream state at the fork block, as the store reads it. Implementations may block the
/// calling thread while they fetch (executor threads and the state owner call it, never the
/// thread that serves the fetches), and must give up with [`StorageError::Fork`] within their
/// timeout rather than hang.
pub trait ForkSource: Send + Sync + std::fmt::Debug {
    /// The fork block: local blocks start after it, and accounts read from the upstream carry
    /// it as their storage incarnation (so their slots are looked up upstream too).
    fn block(&self) -> u64;

    /// The upstream account at the fork block (`None`: empty, as EIP-161 treats it).
    fn account(&self, address: &Address) -> Result<Option<ForkedAccount>, StorageError>;

    /// An upstream storage slot at the fork block.
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StorageError>;

    /// The upstream account as of block `number`, below the fork block (the state traces and
    /// state queries of older blocks read): a historical state of its own, cached apart from
    /// the fork block's.
    fn account_at(
        &self,
        number: u64,
        address: &Address,
    ) -> Result<Option<ForkedAccount>, StorageError>;

    /// An upstream storage slot as of block `number`, below the fork block.
    fn storage_at(&self, number: u64, address: &Address, slot: &U256)
    -> Result<U256, StorageError>;

    /// Fetches the accounts `addresses` as of block `number` (below the fork block) that are
    /// not cached yet, together (one upstream batch instead of a round trip each), before a
    /// replay that will read them one by one.
    fn prefetch_at(&self, number: u64, addresses: &[Address]) -> Result<(), StorageError>;

    /// Code by hash, for a hash an account read from this source named (at the fork block or
    /// below it).
    fn code(&self, code_hash: &B256) -> Result<Option<Bytes>, StorageError>;

    /// The hash of upstream block `number` (at or below the fork block).
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StorageError>;

    /// The header of upstream block `number` (below the fork block).
    fn header(&self, number: u64) -> Result<Option<Header>, StorageError>;

    /// The transactions (with senders), ommers and withdrawals of upstream block `number`
    /// (at or below the fork block).
    fn body(&self, number: u64) -> Result<Option<(StoredBody, BlockExtras)>, StorageError>;

    /// The total difficulty and size the upstream reported with block `number` (at or below
    /// the fork block), where it did and the block was read: what its block answers carry.
    fn block_report(&self, number: u64) -> Result<(Option<U256>, Option<u64>), StorageError>;

    /// The receipts of upstream block `number` (below the fork block).
    fn receipts(&self, number: u64) -> Result<Option<Vec<ReceiptEnvelope>>, StorageError>;

    /// The number of the upstream block with hash `hash`, when it is below the fork block.
    fn block_number(&self, hash: &B256) -> Result<Option<u64>, StorageError>;

    /// Where upstream transaction `hash` was included (block number and index), when that
    /// block is below the fork block.
    fn tx_location(&self, hash: &B256) -> Result<Option<(u64, u32)>, StorageError>;

    /// The logs matching `query` as the upstream answered them: a JSON array of log objects.
    fn logs(&self, query: &LogQuery) -> Result<Vec<u8>, StorageError>;

    /// The upstream's EIP-1186 proof for `query` as it answered it: a JSON object in geth's
    /// `eth_getProof` shape, against the upstream block's state root.
    fn proof(&self, query: &ProofQuery) -> Result<Vec<u8>, StorageError>;

    /// The upstream's `eth_simulateV1` answer for `query` as it answered it (a JSON array):
    /// simulated blocks over state this node does not have the trie of.
    fn simulate(&self, query: &SimulateQuery) -> Result<Vec<u8>, StorageError>;
}
