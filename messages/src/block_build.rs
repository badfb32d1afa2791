//! Block building: the request to execute transactions into a block on a parent (mining,
//! imports, testing_buildBlockV1), its environment and mode, and the block it yields.
//!
//! A leaf that the executor's client, `payload` (which wraps [`BuildBlock`]), the mempool and
//! the miner (for [`PooledTx`] and [`InvalidTx`]) import; it imports only the error type.

use std::sync::Arc;

use actix::Message;
use alloy_consensus::{Header, Sealed, TxEnvelope};
use alloy_eips::eip4895::Withdrawal;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_storage::{BlockDraft, StateDiff};
use revm::primitives::hardfork::SpecId;

use crate::ExecError;

/// A transaction ready for a block: decoded, with its sender and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledTx {
    /// The signed transaction.
    pub tx: Arc<TxEnvelope>,
    /// Its recovered sender.
    pub sender: Address,
    /// Its hash.
    pub hash: B256,
}

/// The environment of the block being built or imported: everything the block's execution
/// depends on besides its parent state and its transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEnvSpec {
    /// Block number (the parent's + 1 for a chain block).
    pub number: u64,
    /// Timestamp (seconds).
    pub timestamp: u64,
    /// Fee recipient.
    pub coinbase: Address,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Base fee per gas (ignored before London).
    pub base_fee: u64,
    /// PREVRANDAO (the header's mix hash; used from the Merge on).
    pub prevrandao: B256,
    /// Difficulty (zero from the Merge on).
    pub difficulty: U256,
    /// Hard fork rules of this block; `None` uses the executor's configured spec.
    pub spec: Option<SpecId>,
    /// Chain id transactions must carry; `None` uses the executor's configured chain id.
    pub chain_id: Option<u64>,
    /// Excess blob gas of this block (Cancun on); `None` computes it from the parent (zero
    /// after a pre-Cancun parent).
    pub excess_blob_gas: Option<u64>,
    /// Blob schedule (target, max, base fee update fraction); `None` uses the fork's default.
    pub blob_params: Option<BlobParams>,
    /// EIP-4788 parent beacon block root (Cancun on); `None` is zero.
    pub parent_beacon_block_root: Option<B256>,
    /// EIP-4895 withdrawals, credited after the transactions (Shanghai on).
    pub withdrawals: Vec<Withdrawal>,
    /// Ommer headers, for the pre-merge ommer rewards.
    pub ommers: Vec<Header>,
    /// Extra data to put in the header.
    pub extra_data: Bytes,
    /// Whether the block-level rules run around the transactions.
    pub rules: BlockRules,
}

impl BlockEnvSpec {
    /// Re-executing a block someone else sealed (an import, a fork's replayed block): its
    /// header's number, timestamp, coinbase, gas limit, base fee, prevrandao, difficulty,
    /// excess blob gas, beacon root and extra data, all rules applied; the executor's spec,
    /// chain id and blob parameters, and no withdrawals or ommers, unless the caller sets them.
    pub fn of_header(header: &Header) -> Self {
        Self {
            number: header.number,
            timestamp: header.timestamp,
            coinbase: header.beneficiary,
            gas_limit: header.gas_limit,
            base_fee: header.base_fee_per_gas.unwrap_or_default(),
            prevrandao: header.mix_hash,
            difficulty: header.difficulty,
            spec: None,
            chain_id: None,
            excess_blob_gas: header.excess_blob_gas,
            blob_params: None,
            parent_beacon_block_root: header.parent_beacon_block_root,
            withdrawals: vec![],
            ommers: vec![],
            extra_data: header.extra_data.clone(),
            rules: BlockRules::Full,
        }
    }

    /// A dev-chain block: the executor's spec and chain id, no withdrawals, no ommers.
    pub fn dev(
        number: u64,
        timestamp: u64,
        coinbase: Address,
        gas_limit: u64,
        base_fee: u64,
        prevrandao: B256,
    ) -> Self {
        Self {
            number,
            timestamp,
            coinbase,
            gas_limit,
            base_fee,
            prevrandao,
            difficulty: U256::ZERO,
            spec: None,
            chain_id: None,
            excess_blob_gas: None,
            blob_params: None,
            parent_beacon_block_root: None,
            withdrawals: Vec::new(),
            ommers: Vec::new(),
            extra_data: Bytes::new(),
            rules: BlockRules::Full,
        }
    }
}

/// geth's `CalcGasLimit`: from `parent` toward `desired`, by at most parent / 1024 - 1.
pub fn next_gas_limit(parent: u64, desired: u64) -> u64 {
    /// The smallest gas limit the consensus rules allow.
    const MIN_GAS_LIMIT: u64 = 5_000;
    let delta = (parent / 1024).saturating_sub(1);
    let desired = desired.max(MIN_GAS_LIMIT);
    if parent < desired {
        parent.saturating_add(delta).min(desired)
    } else if parent > desired {
        parent.saturating_sub(delta).max(desired)
    } else {
        parent
    }
}

/// Which block-level rules apply around the transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRules {
    /// Everything a chain block does: system calls (EIP-4788, EIP-2935, EIP-7002, EIP-7251,
    /// when their contracts exist), withdrawals, requests, pre-merge rewards.
    Full,
    /// Only the transactions (state tests: no rewards, system calls or withdrawals).
    TransactionsOnly,
}

/// How the executor treats transactions that cannot go into the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildMode {
    /// Mining: skip what does not fit or is invalid, and report the invalid ones.
    Pack,
    /// Importing a given block: every transaction must be valid and fit, else the block is
    /// rejected with [`ExecError::Invalid`].
    Import,
}

/// Executes `txs` in order on top of `parent` and assembles the block. With
/// [`BuildMode::Pack`], transactions that do not fit the gas limit are left for later and ones
/// that fail validation are reported invalid; with [`BuildMode::Import`] either rejects the block.
#[derive(Debug, Clone)]
pub struct BuildBlock {
    /// The parent header with its hash (the new header's `parent_hash`, and EIP-2935's
    /// system call), so that the hash is computed once, where the parent is read: the miner
    /// takes it from the store (`ChainDb::sealed_header`), which holds every block's hash.
    pub parent: Sealed<Header>,
    /// The new block's environment.
    pub env: BlockEnvSpec,
    /// Candidates in the order to try them.
    pub txs: Vec<PooledTx>,
    /// Mining or importing.
    pub mode: BuildMode,
}

/// A block executed but not yet committed.
#[derive(Debug, Clone)]
pub struct BuiltBlock {
    /// Header (without state root), body and receipts.
    pub draft: BlockDraft,
    /// What the block changes.
    pub diff: StateDiff,
    /// Transactions that failed validation and must leave the pool, with why.
    pub invalid: Vec<InvalidTx>,
    /// The EIP-7685 requests the block made (Prague on), each its type byte and data; the
    /// header carries their hash.
    pub requests: Vec<Bytes>,
    /// What each included transaction returned (revert data for a reverted one, `None` for a
    /// halted one), in block order: evm_mine_detailed shows it.
    pub outputs: Vec<Option<Bytes>>,
    /// What included transactions printed with console.log: (position in the block, lines),
    /// for those that printed, when the executor captures console output.
    pub console: Vec<(usize, crate::console::ConsoleLines)>,
    /// Why included transactions halted: (position in the block, reason), for those that did.
    pub halts: Vec<(usize, revm::context::result::HaltReason)>,
    /// Whether it was built on the asking thread by the inline runner (set by
    /// `ExecutorClient::build_block`) rather than on the executor pool: the miner's `block
    /// timings` debug line says which.
    pub built_here: bool,
}

/// A transaction block building refused (revm's validation failed against the block's state),
/// which therefore leaves the pool without a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTx {
    /// Its hash.
    pub hash: B256,
    /// Why it was refused, in revm's words.
    pub reason: String,
}

impl Message for BuildBlock {
    type Result = Result<BuiltBlock, ExecError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gas_limit_moves_by_the_consensus_step() {
        // geth's default ceiling from the hive chain's 200M: one step down.
        assert_eq!(next_gas_limit(200_000_000, 60_000_000), 0xbe8c711);
        assert_eq!(next_gas_limit(30_000_000, 30_000_000), 30_000_000);
        assert_eq!(next_gas_limit(30_000_000, 30_010_000), 30_010_000);
        assert_eq!(next_gas_limit(30_000_000, 40_000_000), 30_000_000 + 30_000_000 / 1024 - 1);
        assert_eq!(next_gas_limit(6_000, 0), 5_996);
        assert_eq!(next_gas_limit(5_003, 0), 5_000);
    }
}
