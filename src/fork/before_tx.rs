//! `--fork-transaction-hash H`: a fork whose state is the upstream's just before `H`.
//!
//! The fork block is the parent of `H`'s block, and the block's transactions before `H` are
//! replayed on top of it, in their upstream order, as the first local block: it takes the
//! upstream block's number, time, fee recipient, base fee, randomness and beacon root, and runs
//! what any local block runs (the system calls before and after its transactions). So the
//! earlier transactions are served by number, hash and receipt like mined ones, and the next
//! local block is the one `H` would go into. anvil 1.7.1 forks at the same parent but replays
//! nothing (checked with the binary: the earlier transactions' effects are absent there).

use std::sync::Arc;

use alloy_primitives::B256;
use hearth_actors::ExecutorActor;
use hearth_actors::fork::ForkClient;
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, PooledTx};
use hearth_messages::fork::{ForkError, ForkKey, ForkValue, ForkedBlock};
use hearth_storage::{ChainWriter, StorageError};
use tracing::info;

/// What is replayed over the fork block: the upstream block of `H` and `H`'s index in it.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The upstream block holding `H`.
    pub block: ForkedBlock,
    /// `H`'s index: the transactions before it are replayed.
    pub index: u32,
}

/// Why the earlier transactions could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A transaction was refused or failed to run on the forked state.
    #[error(
        "--fork-transaction-hash: replaying block {number}'s earlier transactions failed: {reason}"
    )]
    Execution {
        /// The block replayed.
        number: u64,
        /// Why, in the executor's words.
        reason: String,
    },
    /// The replayed block could not be written.
    #[error("--fork-transaction-hash: cannot write the replayed block: {0}")]
    Storage(#[from] StorageError),
}

/// Where `hash` is upstream, and the fork block that follows from it (its block's parent).
pub fn locate(client: &ForkClient, hash: B256) -> Result<(u64, Replay), ForkError> {
    let (number, index) = match client.fetch(ForkKey::TxLocation(hash))? {
        ForkValue::Location(Some(location)) => location,
        ForkValue::Location(None) => {
            return Err(ForkError::Upstream(format!(
                "--fork-transaction-hash: the upstream has no mined transaction {hash}"
            )));
        }
        other => return Err(ForkError::Upstream(format!("unexpected answer {other:?}"))),
    };
    let block = match client.fetch(ForkKey::Block(number))? {
        ForkValue::Block(Some(block)) => *block,
        ForkValue::Block(None) => {
            return Err(ForkError::Upstream(format!(
                "block {number} is not in the upstream chain"
            )));
        }
        other => return Err(ForkError::Upstream(format!("unexpected answer {other:?}"))),
    };
    if block.body.transactions.get(index as usize).map(|tx| *tx.tx_hash()) != Some(hash) {
        return Err(ForkError::Upstream(format!(
            "the upstream places {hash} at index {index} of block {number}, which holds another"
        )));
    }
    // A mined transaction is never in block 0.
    Ok((number.saturating_sub(1), Replay { block, index }))
}

/// Runs `replay`'s earlier transactions as the first local block on `chain` (whose head is the
/// fork block) with `executor`, and writes it.
pub fn replay(
    chain: &ChainWriter,
    executor: &mut ExecutorActor,
    replay: &Replay,
) -> Result<(), ReplayError> {
    let upstream = &replay.block;
    let number = upstream.header.number;
    let failed = |reason: String| ReplayError::Execution { number, reason };
    let head = chain.head_number().unwrap_or_default();
    let parent =
        chain.header(head)?.ok_or_else(|| failed("the fork block is not stored".to_owned()))?;
    let count = replay.index as usize;
    let txs = upstream.body.transactions[..count]
        .iter()
        .zip(&upstream.body.senders)
        .map(|(tx, sender)| PooledTx {
            tx: Arc::new(tx.clone()),
            sender: *sender,
            hash: *tx.tx_hash(),
        })
        .collect();
    // Withdrawals are paid after every transaction of the block, so after `H` too: none here.
    let env = BlockEnvSpec::of_header(&upstream.header);
    let built = executor
        .build_block(BuildBlock {
            parent: alloy_consensus::Sealed::new(parent),
            env,
            txs,
            mode: BuildMode::Import,
        })
        .map_err(|e| failed(e.to_string()))?;
    let sealed = hearth_storage::write_block(chain, built.draft, &built.diff)?;
    info!(
        target: "node::fork",
        number,
        replayed = count,
        hash = %sealed.hash,
        "replayed the transactions before --fork-transaction-hash"
    );
    Ok(())
}

/// Replays `plan` with an executor of its own under `chain_id` and the rules of `H`'s block
/// (`rules::of`, `given` being `--hardfork`'s; the node's executors are not started yet).
/// Nothing to replay when `H` is its block's first transaction: the fork block is then the
/// state just before it.
pub fn replay_at_start(
    chain: &ChainWriter,
    plan: &Replay,
    chain_id: u64,
    given: Option<revm::primitives::hardfork::SpecId>,
    code_size_limit: Option<usize>,
) -> Result<(), ReplayError> {
    if plan.index == 0 {
        return Ok(());
    }
    let rules = super::rules::of(chain_id, &plan.block.header, given);
    let config = hearth_actors::ExecConfig {
        chain_id: hearth_messages::ChainId::new(chain_id),
        spec: rules.spec,
        gas_cap: u64::MAX,
        evm_timeout: None,
        blob_params: rules.blob_params,
        code_size_limit,
        parallel: hearth_actors::ParallelConfig::default(),
        show: hearth_actors::Show::default(),
    };
    let mut executor = ExecutorActor::new(chain.reader(), config, None);
    replay(chain, &mut executor, plan)
}
