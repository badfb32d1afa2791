//! Block execution: the one code path that turns a parent state, a block environment and a
//! list of transactions into a block draft and a state diff.
//!
//! The miner packs pending transactions through it ([`BuildMode::Pack`]); block import and the
//! conformance runners replay a given block through it ([`BuildMode::Import`]), so a mined
//! block and an imported block are executed by the same rules. Per block it applies the hard
//! fork named by the environment: pre-block system calls (EIP-4788 beacon roots, EIP-2935
//! block hashes), the transactions (with pre-Byzantium intermediate state roots in receipts),
//! withdrawals (EIP-4895), requests (EIP-6110 deposits, EIP-7002 and EIP-7251 system calls,
//! EIP-7685 hash) and the pre-merge block and ommer rewards.

use std::time::{Duration, Instant};

use alloy_consensus::{
    Eip658Value, Header, Receipt, ReceiptEnvelope, ReceiptWithBloom, Sealed, Transaction,
    TxEnvelope, TxReceipt,
};
use alloy_eips::eip6110::{DEPOSIT_REQUEST_TYPE, MAINNET_DEPOSIT_CONTRACT_ADDRESS};
use alloy_eips::eip7002::{WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE};
use alloy_eips::eip7251::{CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE};
use alloy_eips::eip7685::{EMPTY_REQUESTS_HASH, Requests};
use alloy_primitives::{Address, B256, Bloom, Bytes, Log, U256, keccak256};
use hearth_messages::ExecError;
use hearth_messages::executor::{
    BlockEnvSpec, BlockRules, BuildBlock, BuildMode, BuiltBlock, InvalidTx, PooledTx,
};
use hearth_storage::{
    BlockDraft, ChainDb, StateDiff, StorageError, StoredBody, block_roots_beside, state_root_after,
};
use revm::ExecuteCommitEvm;
use revm::context::evm::Evm;
use revm::context::result::{EVMError, ExecutionResult, HaltReason, InvalidTransaction, Output};
use revm::handler::SystemCallCommitEvm;
use revm::primitives::hardfork::SpecId;

use crate::console::BlockConsole;
use crate::exec::{
    BlockChanges, BlockEvm, BlockSetup, CodeL1, EvmScratch, ExecConfig, block_evm_in, block_reward,
    deposit_requests, excess_blob_gas, exec_error, instrument, pre_block_calls,
    resolved_blob_params, tx_env, withdrawals_root,
};
use crate::parallel::{Board, Committer, ParallelStats, ReadAhead, SpecInput};

/// Stops a parallel block's helpers when dropped (the block's loop ended, or failed).
struct StopHelpers<'b, 'a>(Option<&'b Board<'a>>);

impl Drop for StopHelpers<'_, '_> {
    fn drop(&mut self) {
        if let Some(board) = self.0 {
            board.stop();
        }
    }
}

/// A result's output and logs, moved out: a speculative run's output buffer was made on a
/// helper's thread, and a copy would share it (a reference count on the helper's cache line).
fn output_and_logs(result: ExecutionResult) -> (Option<Bytes>, Vec<Log>) {
    match result {
        ExecutionResult::Success { output, logs, .. } => (Some(output.into_data()), logs),
        ExecutionResult::Revert { output, logs, .. } => (Some(output), logs),
        ExecutionResult::Halt { logs, .. } => (None, logs),
    }
}

/// What the block's transaction loop accumulates: what it includes (receipts, outputs, senders),
/// what it refuses, and the block's gas and bloom so far. Its vectors are sized for the whole
/// block at once (`room`): grown one push at a time, a big block's vectors were copied at every
/// doubling, on the loop a parallel block's other threads wait for.
#[derive(Debug)]
struct Included {
    /// The indexes of the transactions the block includes: their copies for the body are made
    /// after the loop, beside the roots' hashing, not on the loop a parallel block waits for.
    indexes: Vec<usize>,
    senders: Vec<Address>,
    receipts: Vec<ReceiptEnvelope>,
    invalid: Vec<InvalidTx>,
    outputs: Vec<Option<Bytes>>,
    gas_used: u64,
    blob_gas_used: u64,
    logs_bloom: Bloom,
    /// The deposit contract's logs (EIP-6110 requests), the only ones read after the loop.
    deposit_logs: Vec<Log>,
    /// What the included transactions printed with console.log, when the block captures it.
    console: BlockConsole,
    /// Why included transactions halted, by position (what the node prints of them).
    halts: Vec<(usize, HaltReason)>,
    /// The accounts each included transaction touched, for the address index.
    touched: Vec<Vec<Address>>,
}

impl Included {
    fn with_room(room: usize) -> Self {
        Self {
            indexes: Vec::with_capacity(room),
            senders: Vec::with_capacity(room),
            receipts: Vec::with_capacity(room),
            invalid: Vec::new(),
            outputs: Vec::with_capacity(room),
            gas_used: 0,
            blob_gas_used: 0,
            logs_bloom: Bloom::ZERO,
            deposit_logs: Vec::new(),
            console: BlockConsole::default(),
            halts: Vec::new(),
            touched: Vec::with_capacity(room),
        }
    }
}

/// What stays the same over a block's transaction loop.
struct BlockLoop<'x> {
    db: &'x ChainDb,
    env: &'x BlockEnvSpec,
    mode: BuildMode,
    byzantium: bool,
    max_blob_gas: u64,
}

/// The block's EVM: its database reads the accounts a parallel block's helpers read ahead.
type CommitterEvm<'a> = BlockEvm<'a, (), ReadAhead>;

/// Executes one block with the executor thread's EVM scratch (its call frames and memory
/// buffer, kept for the next block or call when within the scratch's retention). See the
/// module docs for what runs, in which order.
pub(crate) fn execute_block(
    db: &ChainDb,
    codes: &mut CodeL1,
    scratch: &mut EvmScratch,
    defaults: &ExecConfig,
    msg: BuildBlock,
) -> Result<BuiltBlock, ExecError> {
    let started = Instant::now();
    let BuildBlock { parent, mut env, txs, mode } = msg;
    // A block that fails reports no parallel statistics rather than the previous block's.
    crate::parallel::set_last_stats(ParallelStats::default());
    if env.excess_blob_gas.is_none() && parent.excess_blob_gas.is_some() {
        env.excess_blob_gas = Some(excess_blob_gas(&parent, &resolved_blob_params(&env, defaults)));
    }
    // A parallel block's board outlives the block's EVM, whose database may read from it
    // (the accounts its helpers read ahead).
    let plan = crate::parallel::plan(&defaults.parallel, &txs);
    let helpers = plan.as_ref().map(|(helpers, _)| *helpers);
    // At most as many transactions as the gas limit fits (a packed pool may offer many more).
    let room = txs.len().min(usize::try_from(env.gas_limit / 21_000).unwrap_or(usize::MAX));
    let board = plan.map(|plan| Board::new(&txs, &defaults.parallel, plan, room));
    let parts = (scratch.take_frames(), scratch.take_local());
    let (mut evm, setup) =
        block_evm_in::<(), ReadAhead>(db, codes, defaults, parent.number, &env, (), parts);
    open_block(&mut evm, (&env, parent.hash(), setup.spec), mode, defaults)?;
    // A parallel block's helpers claim, run and hand back transactions while the loop below
    // commits them in order (`parallel.rs`); they are scoped threads that end with the loop.
    let start = helpers.map(|_| evm.ctx.journaled_state.database.changes().clone());
    // After the helpers' copy of the changes, which need no room for the block's.
    evm.ctx.journaled_state.database.reserve_changes(room);
    let input = start.as_ref().map(|start| SpecInput {
        db,
        defaults,
        parent_number: parent.number,
        env: &env,
        mode,
        start,
    });
    let block_loop = BlockLoop::new(db, &env, mode, setup);
    let mut included = Included::with_room(room);
    let loop_started = Instant::now();
    let stats = block_loop.run(&mut evm, board.as_ref(), input.as_ref(), &txs, &mut included)?;
    let requests = after_transactions(&mut evm, &env, mode, setup.spec, &included.deposit_logs)?;
    let loop_time = loop_started.elapsed();
    record_stats(stats, txs.len(), loop_started - started, loop_time);
    let Evm { ctx, frame_stack, .. } = evm;
    let deepest = ctx.journaled_state.database.max_call_depth();
    scratch.keep(frame_stack, ctx.local, deepest);
    let changes = ctx.journaled_state.database.into_changes();
    let known = board.as_ref().and_then(|board| board.read_ahead()?.transactions_root());
    let (roots, diff, transactions) = roots_beside(&txs, &included, known, defaults, changes);
    log_split(txs.len(), included.indexes.len(), loop_started - started, loop_started, loop_time);
    let header = sealed_header(&parent, &env, setup.spec, roots, &included, &requests);
    let Included { senders, receipts, invalid, outputs, console, halts, touched, .. } = included;
    Ok(BuiltBlock {
        draft: BlockDraft { header, body: StoredBody { transactions, senders }, receipts, touched },
        diff,
        invalid,
        requests: requests.take().into_iter().filter(|r| r.len() > 1).collect(),
        outputs,
        console: console.into_printed(),
        halts,
        built_here: false,
    })
}

/// Readies the block's EVM for its transactions: the instrumented instructions, EIP-3607 as
/// the mode asks, the pre-block system calls, then console capture.
fn open_block(
    evm: &mut CommitterEvm<'_>,
    (env, parent_hash, spec): (&BlockEnvSpec, B256, SpecId),
    mode: BuildMode,
    defaults: &ExecConfig,
) -> Result<(), ExecError> {
    instrument(evm);
    // EIP-3607 (no transaction from an account with code) is a validity rule of blocks the
    // node receives; in blocks it packs from its own pool, an impersonated contract may send,
    // as anvil and Hardhat allow (a raw transaction cannot come from code: no key signs it).
    evm.ctx.cfg.disable_eip3607 = mode == BuildMode::Pack;
    pre_block_calls(evm, env, parent_hash, spec)?;
    // After the system calls: what a block prints is its transactions' output.
    evm.precompiles.capture(defaults.show.console_in(mode));
    Ok(())
}

impl<'x> BlockLoop<'x> {
    fn new(db: &'x ChainDb, env: &'x BlockEnvSpec, mode: BuildMode, setup: BlockSetup) -> Self {
        Self {
            db,
            env,
            mode,
            byzantium: setup.spec.is_enabled_in(SpecId::BYZANTIUM),
            max_blob_gas: setup.blob_params.max_blob_gas_per_block(),
        }
    }

    /// Runs the block's transactions in order into `out`, a parallel block's (`board`) with
    /// its helpers beside; the parallel statistics when it was one.
    fn run<'a>(
        &self,
        evm: &mut CommitterEvm<'a>,
        board: Option<&'a Board<'_>>,
        input: Option<&SpecInput<'_>>,
        txs: &[PooledTx],
        out: &mut Included,
    ) -> Result<Option<ParallelStats>, ExecError> {
        std::thread::scope(|scope| {
            // However this scope ends (a spawn that fails included), the helpers stop
            // claiming: made before the first spawn, so that a helper never waits for a
            // committer that is gone while the scope waits for it.
            let _stop = StopHelpers(board);
            let mut committer = None;
            if let (Some(board), Some(input)) = (board, input) {
                for helper in 0..board.helpers() {
                    scope.spawn(move || crate::parallel::run_helper(input, board, helper));
                }
                board.helpers_started();
                committer = Some(Committer::new(board, self.env.coinbase));
            }
            for (index, candidate) in txs.iter().enumerate() {
                let Some(tx_blob_gas) = self.fits(out, index, candidate)? else { continue };
                // In a parallel block the committer validates the transaction's speculative
                // run (or runs it again); either way the outcome is what sequential execution
                // gives here.
                if let Some(ahead) = board.and_then(|board| board.read_ahead()) {
                    evm.ctx.journaled_state.database.read_ahead(ahead, index);
                }
                // What the system calls or a left-out transaction touched is not this one's.
                evm.ctx.journaled_state.database.take_touched().clear();
                let executed = match committer.as_mut() {
                    Some(committer) => committer.run(evm, index, candidate),
                    None => evm.transact_commit(tx_env(candidate)).map(|result| (result, None)),
                };
                // Whoever ran it (this EVM or a helper) left its console calls in the tap.
                let console = evm.precompiles.take();
                if let Some((result, bloom)) = self.accepted(executed, out, index, candidate)? {
                    out.blob_gas_used += tx_blob_gas;
                    out.console.add(out.indexes.len(), console);
                    self.include(evm, out, index, candidate, result, bloom)?;
                }
            }
            Ok(committer.map(|c| c.stats()))
        })
    }

    /// `candidate`'s blob gas if it fits what is left of the block's gas and blob gas. What does
    /// not fit stays pending for the next block being packed; it makes a block being imported
    /// invalid.
    fn fits(
        &self,
        out: &Included,
        index: usize,
        candidate: &PooledTx,
    ) -> Result<Option<u64>, ExecError> {
        let tx_blob_gas = candidate.tx.blob_gas_used().unwrap_or_default();
        let over_gas = out.gas_used.saturating_add(candidate.tx.gas_limit()) > self.env.gas_limit;
        let over_blobs = out.blob_gas_used.saturating_add(tx_blob_gas) > self.max_blob_gas;
        if !(over_gas || over_blobs) {
            return Ok(Some(tx_blob_gas));
        }
        match self.mode {
            BuildMode::Pack => Ok(None),
            BuildMode::Import if over_gas => Err(rejected(
                index,
                format!(
                    "gas limit {} exceeds the block's remaining gas {}",
                    candidate.tx.gas_limit(),
                    self.env.gas_limit - out.gas_used
                ),
            )),
            BuildMode::Import => Err(rejected(
                index,
                format!(
                    "blob gas {tx_blob_gas} exceeds the block's remaining blob gas {}",
                    self.max_blob_gas - out.blob_gas_used
                ),
            )),
        }
    }

    /// The result of a transaction the block takes; `None` for one it leaves out (a packed
    /// block's invalid transaction, noted in `out`), an error for one that makes it invalid.
    fn accepted(
        &self,
        executed: Result<(ExecutionResult, Option<Bloom>), EVMError<StorageError>>,
        out: &mut Included,
        index: usize,
        candidate: &PooledTx,
    ) -> Result<Option<(ExecutionResult, Option<Bloom>)>, ExecError> {
        match executed {
            Ok(executed) => Ok(Some(executed)),
            Err(EVMError::Transaction(e)) if self.mode == BuildMode::Import => {
                Err(rejected(index, e.to_string()))
            }
            // A later nonce of a sender whose earlier transaction failed: keep it pooled.
            Err(EVMError::Transaction(InvalidTransaction::NonceTooHigh { .. })) => Ok(None),
            Err(EVMError::Transaction(e)) => {
                out.invalid.push(InvalidTx { hash: candidate.hash, reason: e.to_string() });
                Ok(None)
            }
            Err(other) => Err(exec_error(other)),
        }
    }

    /// Adds the executed `candidate` to the block (its blob gas counted already): its receipt
    /// (with the bloom a helper made of a speculative run's logs, when it did), output, sender
    /// and gas.
    fn include(
        &self,
        evm: &mut CommitterEvm<'_>,
        out: &mut Included,
        index: usize,
        candidate: &PooledTx,
        result: ExecutionResult,
        bloom: Option<Bloom>,
    ) -> Result<(), ExecError> {
        out.gas_used += result.tx_gas_used();
        // Before Byzantium (EIP-658) a receipt carries the state root after its transaction.
        let status = if self.byzantium {
            Eip658Value::Eip658(result.is_success())
        } else {
            let diff = evm.ctx.journaled_state.database.diff_so_far();
            Eip658Value::PostState(state_root_after(self.db, self.env.number, &diff)?)
        };
        if let ExecutionResult::Halt { reason, .. } = &result {
            out.halts.push((out.indexes.len(), reason.clone()));
        }
        // A halt returns nothing; a revert its revert data.
        let (output, logs) = output_and_logs(result);
        out.outputs.push(output);
        out.deposit_logs.extend(
            logs.iter().filter(|log| log.address == MAINNET_DEPOSIT_CONTRACT_ADDRESS).cloned(),
        );
        // A helper made the bloom of a speculative run's logs (keccak of every address and
        // topic): the committer's loop is the block's sequential part.
        let bloom = bloom.unwrap_or_else(|| crate::log_bloom::logs_bloom(&logs));
        let receipt = Receipt { status, cumulative_gas_used: out.gas_used, logs };
        let receipt = ReceiptWithBloom::new(receipt, bloom);
        let receipt = ReceiptEnvelope::from_typed(candidate.tx.tx_type(), receipt);
        out.logs_bloom.accrue_bloom(&receipt.bloom());
        out.receipts.push(receipt);
        out.senders.push(candidate.sender);
        out.indexes.push(index);
        out.touched.push(evm.ctx.journaled_state.database.take_touched());
        Ok(())
    }
}

/// Transaction `index` makes the block invalid, for `reason`.
fn rejected(index: usize, reason: String) -> ExecError {
    ExecError::Invalid(format!("transaction {index}: {reason}"))
}

/// What a block with the full rules (`BlockRules::Full`) does after its transactions:
/// withdrawals (Shanghai on), requests (Prague on: the deposits in `deposit_logs` and the
/// EIP-7002 and EIP-7251 system calls), and the pre-merge rewards. The block's requests.
fn after_transactions(
    evm: &mut CommitterEvm<'_>,
    env: &BlockEnvSpec,
    mode: BuildMode,
    spec: SpecId,
    deposit_logs: &[Log],
) -> Result<Requests, ExecError> {
    let mut requests = Requests::default();
    if env.rules != BlockRules::Full {
        return Ok(requests);
    }
    if spec.is_enabled_in(SpecId::SHANGHAI) {
        for withdrawal in &env.withdrawals {
            evm.ctx.journaled_state.database.credit(withdrawal.address, withdrawal.amount_wei())?;
        }
    }
    if spec.is_enabled_in(SpecId::PRAGUE) {
        requests.push_request_with_type(DEPOSIT_REQUEST_TYPE, deposit_requests(deposit_logs)?);
        system_requests(evm, mode, &mut requests)?;
    }
    let reward = block_reward(spec);
    if !reward.is_zero() {
        let db_mut = &mut evm.ctx.journaled_state.database;
        let per_ommer = reward / U256::from(32);
        let miner = reward + per_ommer * U256::from(env.ommers.len());
        db_mut.credit(env.coinbase, miner)?;
        for ommer in &env.ommers {
            // An ommer k blocks back earns (8 - k) / 8 of the reward.
            let depth = env.number.saturating_sub(ommer.number);
            let share = reward * U256::from(8u64.saturating_sub(depth)) / U256::from(8);
            db_mut.credit(ommer.beneficiary, share)?;
        }
    }
    Ok(requests)
}

/// The EIP-7002 (withdrawal) and EIP-7251 (consolidation) requests: each contract's system
/// call, added to `requests`.
fn system_requests(
    evm: &mut CommitterEvm<'_>,
    mode: BuildMode,
    requests: &mut Requests,
) -> Result<(), ExecError> {
    for (address, kind) in [
        (WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE),
        (CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE),
    ] {
        if !evm.ctx.journaled_state.database.has_code(address)? {
            // A chain that imports Prague blocks must have the request contracts
            // (EIP-7002/7251 say such a block is invalid); a dev chain without them
            // simply produces no requests.
            if mode == BuildMode::Import {
                return Err(ExecError::Invalid(format!(
                    "request contract {address} has no code; the block is invalid"
                )));
            }
            continue;
        }
        let result = evm.system_call_commit(address, Bytes::new()).map_err(exec_error)?;
        // EIP-7002 / EIP-7251: a failing request contract makes the block invalid.
        let ExecutionResult::Success { output: Output::Call(data), .. } = result else {
            return Err(ExecError::Invalid(format!(
                "system call to request contract {address} failed: {result:?}"
            )));
        };
        requests.push_request_with_type(kind, data);
    }
    Ok(())
}

/// Logs a parallel block's statistics and keeps the block's for `last_block_stats`.
fn record_stats(
    stats: Option<ParallelStats>,
    txs: usize,
    setup_time: Duration,
    loop_time: Duration,
) {
    if let Some(stats) = &stats {
        tracing::debug!(
            target: "actors::block_exec",
            txs,
            threads = stats.threads,
            read_ahead = stats.read_ahead,
            validated = stats.speculated - stats.reexecuted,
            reexecuted = stats.reexecuted,
            direct = stats.direct,
            abandoned = stats.abandoned,
            waited_us = stats.waited.as_micros() as u64,
            helper_start_us = stats.helper_start.map(|d| d.as_micros() as u64),
            loop_us = loop_time.as_micros() as u64,
            "parallel block"
        );
    }
    crate::parallel::set_last_stats(ParallelStats {
        setup_time,
        loop_time,
        ..stats.unwrap_or_default()
    });
}

/// Logs every block's split, parallel or not, for `scripts/mine-e2e.py`: the set-up before the
/// loop (a parallel block's board and helpers), the loop, and after it the roots, diff and body.
fn log_split(
    txs: usize,
    included: usize,
    setup_time: Duration,
    loop_started: Instant,
    loop_time: Duration,
) {
    tracing::debug!(
        target: "actors::block_exec",
        txs,
        included,
        setup_us = setup_time.as_micros() as u64,
        loop_us = loop_time.as_micros() as u64,
        after_us = (loop_started + loop_time).elapsed().as_micros() as u64,
        "block executed"
    );
}

/// A block's transactions and receipts roots.
#[derive(Debug, Clone, Copy)]
struct Roots {
    transactions: B256,
    receipts: B256,
}

/// The block's roots, hashed while this thread makes its diff of `changes` and copies the included
/// transactions into its body. For a block of cheap transactions these two roots cost more
/// than the execution (a receipt's bloom alone is three keccak blocks): a parallel
/// configuration hashes them on its threads too. A block that read ahead may have its
/// transactions root already (`known`: a helper computed it during the loop), which holds when
/// the block includes every transaction.
fn roots_beside(
    txs: &[PooledTx],
    included: &Included,
    known: Option<B256>,
    defaults: &ExecConfig,
    changes: BlockChanges,
) -> (Roots, StateDiff, Vec<TxEnvelope>) {
    let root_threads = crate::parallel::spread_threads(&defaults.parallel);
    let beside = || {
        let transactions: Vec<TxEnvelope> =
            included.indexes.iter().map(|&index| txs[index].tx.as_ref().clone()).collect();
        (changes.into_diff(), transactions)
    };
    let (transactions, receipts, (diff, body)) =
        match known.filter(|_| included.indexes.len() == txs.len()) {
            Some(root) => {
                let none = std::iter::empty::<&TxEnvelope>();
                let (_, receipts_root, other) =
                    block_roots_beside(none, &included.receipts, root_threads, beside);
                (root, receipts_root, other)
            }
            None => block_roots_beside(
                included.indexes.iter().map(|&index| txs[index].tx.as_ref()),
                &included.receipts,
                root_threads,
                beside,
            ),
        };
    (Roots { transactions, receipts }, diff, body)
}

/// The block's header, its state root left to the caller (zero here).
fn sealed_header(
    parent: &Sealed<Header>,
    env: &BlockEnvSpec,
    spec: SpecId,
    roots: Roots,
    included: &Included,
    requests: &Requests,
) -> Header {
    let cancun = spec.is_enabled_in(SpecId::CANCUN);
    let full = env.rules == BlockRules::Full;
    let ommers_hash = if env.ommers.is_empty() {
        alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH
    } else {
        keccak256(alloy_rlp::encode(&env.ommers))
    };
    Header {
        parent_hash: parent.hash(),
        ommers_hash,
        beneficiary: env.coinbase,
        state_root: B256::ZERO,
        transactions_root: roots.transactions,
        receipts_root: roots.receipts,
        logs_bloom: included.logs_bloom,
        difficulty: env.difficulty,
        number: env.number,
        gas_limit: env.gas_limit,
        gas_used: included.gas_used,
        timestamp: env.timestamp,
        extra_data: env.extra_data.clone(),
        mix_hash: env.prevrandao,
        nonce: Default::default(),
        base_fee_per_gas: spec.is_enabled_in(SpecId::LONDON).then_some(env.base_fee),
        withdrawals_root: spec
            .is_enabled_in(SpecId::SHANGHAI)
            .then(|| withdrawals_root(&env.withdrawals)),
        blob_gas_used: cancun.then_some(included.blob_gas_used),
        excess_blob_gas: cancun.then(|| env.excess_blob_gas.unwrap_or_default()),
        parent_beacon_block_root: cancun.then(|| env.parent_beacon_block_root.unwrap_or_default()),
        requests_hash: spec
            .is_enabled_in(SpecId::PRAGUE)
            .then(|| if full { requests.requests_hash() } else { EMPTY_REQUESTS_HASH }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use alloy_consensus::{SignableTransaction, TxEip1559};
    use alloy_primitives::{Address, Signature, TxKind, address, hex};
    use hearth_messages::executor::{BlockEnvSpec, PooledTx};
    use hearth_storage::{AccountChange, AccountFields, StateDiff, write_block};

    use super::*;
    use crate::exec::{ParallelConfig, ParallelMode};
    use crate::executor::ExecutorActor;
    use hearth_messages::console::ConsoleLines;

    const SENDER: Address = address!("00000000000000000000000000000000000a11ce");
    /// Calls itself with all its gas until the call depth limit (1,024 frames, about 53 gas
    /// each): `CALL(gas, address, 0, 0, 0, 0, 0)`.
    const RECURSE: Address = address!("000000000000000000000000000000000000dee9");

    fn executor_on_genesis() -> (ExecutorActor, Header) {
        let recurse = Bytes::from(hex::decode("60006000600060006000305af100").expect("hex"));
        let accounts =
            [(SENDER, U256::from(10u128.pow(20)), None), (RECURSE, U256::ZERO, Some(recurse))];
        executor_on(&accounts, ParallelConfig::default(), crate::exec::Show::default())
    }

    /// An executor over a chain whose genesis holds `accounts` (address, balance, code), with
    /// blocks run as `parallel` says and `show` for what it prints.
    fn executor_on(
        accounts: &[(Address, U256, Option<Bytes>)],
        parallel: ParallelConfig,
        show: crate::exec::Show,
    ) -> (ExecutorActor, Header) {
        let (db, header) = chain_on(accounts);
        (ExecutorActor::new(db.reader(), exec_config(parallel, show), None), header)
    }

    /// A chain whose genesis holds `accounts` (address, balance, code), and its genesis header.
    fn chain_on(
        accounts: &[(Address, U256, Option<Bytes>)],
    ) -> (hearth_storage::ChainWriter, Header) {
        let db = hearth_storage::ChainWriter::in_memory().expect("store");
        let mut diff = StateDiff::default();
        for (address, balance, code) in accounts {
            let code_hash = match code {
                Some(code) => {
                    let hash = keccak256(code);
                    diff.codes.insert(hash, code.clone());
                    hash
                }
                None => hearth_storage::EMPTY_CODE_HASH,
            };
            let info = AccountFields { nonce: 0, balance: *balance, code_hash };
            let change = AccountChange {
                info: Some(info),
                storage_wiped: false,
                storage: Default::default(),
            };
            diff.accounts.insert(*address, change);
        }
        let header = Header {
            gas_limit: 30_000_000,
            base_fee_per_gas: Some(1_000_000_000),
            ..Default::default()
        };
        let body = StoredBody { transactions: vec![], senders: vec![] };
        let draft =
            BlockDraft { header: header.clone(), body, receipts: vec![], touched: Vec::new() };
        write_block(&db, draft, &diff).expect("genesis");
        (db, header)
    }

    fn exec_config(parallel: ParallelConfig, show: crate::exec::Show) -> ExecConfig {
        ExecConfig {
            chain_id: hearth_messages::ChainId::new(1),
            spec: SpecId::PRAGUE,
            gas_cap: 50_000_000,
            evm_timeout: None,
            blob_params: None,
            code_size_limit: None,
            parallel,
            show,
        }
    }

    /// The address index of an older store is built from replays: a replay of a stored block
    /// finds the accounts each transaction touched and the callees of its frames exactly as
    /// building the block did, for a recursion of 1,024 frames and for a CALL the instruction
    /// refuses (out of gas expanding memory: no frame opens, so its address is not listed).
    #[test]
    fn a_replay_finds_what_each_transaction_touched_when_the_block_was_built() {
        let recurse = Bytes::from(hex::decode("60006000600060006000305af100").expect("hex"));
        replayed_as_built(RECURSE, recurse, Some(RECURSE));
        // CALL(gas, 0x42.., 0, argsOffset 2^255, argsSize 1, 0, 0).
        let refused = [
            "600060006001",
            "7f8000000000000000000000000000000000000000000000000000000000000000",
            "6000734242424242424242424242424242424242424242",
            "5af100",
        ];
        let refused = hex::decode(refused.concat()).expect("hex");
        replayed_as_built(RECURSE, Bytes::from(refused), None);
    }

    /// Builds a block of one transaction to `to` (holding `code`), stores it, replays it, and
    /// checks both lists agree (and hold `listed` when given, never 0x42..42).
    fn replayed_as_built(to: Address, code: Bytes, listed: Option<Address>) {
        let (db, genesis) =
            chain_on(&[(SENDER, U256::from(10u128.pow(20)), None), (to, U256::ZERO, Some(code))]);
        let config = exec_config(ParallelConfig::default(), crate::exec::Show::default());
        let mut executor = ExecutorActor::new(db.reader(), config, None);
        let built = build(&mut executor, &genesis, to, 1_000_000);
        let mut built_touched = built.draft.touched.clone();
        assert!(built_touched[0].contains(&SENDER));
        assert!(listed.is_none_or(|a| built_touched[0].contains(&a)), "{built_touched:?}");
        assert!(!built_touched[0].contains(&Address::repeat_byte(0x42)), "{built_touched:?}");
        write_block(&db, built.draft, &built.diff).expect("block 1");
        let mut replayed = executor.touched_accounts(1).expect("replay");
        for list in built_touched.iter_mut().chain(replayed.iter_mut()) {
            list.sort();
            list.dedup();
        }
        assert_eq!(replayed, built_touched);
    }

    /// Builds block 1 (not committed) with one transaction of `gas` from SENDER to `to`.
    fn build(executor: &mut ExecutorActor, parent: &Header, to: Address, gas: u64) -> BuiltBlock {
        let tx = TxEip1559 {
            chain_id: 1,
            nonce: 0,
            gas_limit: gas,
            max_fee_per_gas: 2_000_000_000,
            max_priority_fee_per_gas: 0,
            to: TxKind::Call(to),
            value: U256::from(1),
            access_list: Default::default(),
            input: Bytes::new(),
        };
        // Block building trusts the pool's sender: the signature is never checked here.
        let signed = tx.into_signed(Signature::test_signature());
        let hash = *signed.hash();
        let pooled = PooledTx { tx: Arc::new(signed.into()), sender: SENDER, hash };
        let env = BlockEnvSpec::dev(1, 12, Address::ZERO, 30_000_000, 1_000_000_000, B256::ZERO);
        let msg = BuildBlock {
            parent: Sealed::new(parent.clone()),
            env,
            txs: vec![pooled],
            mode: BuildMode::Pack,
        };
        let built = executor.build_block(msg).expect("block builds");
        assert_eq!(built.draft.body.transactions.len(), 1, "the transaction is in the block");
        built
    }

    #[test]
    fn blocks_reuse_the_scratch_and_a_deep_call_chain_is_not_kept() {
        let (mut executor, genesis) = executor_on_genesis();
        assert_eq!(executor.scratch.frames_kept(), 0, "nothing before the first block");
        let transfer = Address::with_last_byte(0xbb);
        build(&mut executor, &genesis, transfer, 21_000);
        assert_eq!(executor.scratch.frames_kept(), 8, "a block's frames are kept for the next");
        // 1,024 frames of 32 KiB: far over the 1 MiB the thread may keep.
        let deep = build(&mut executor, &genesis, RECURSE, 10_000_000);
        assert!(deep.draft.header.gas_used > 50_000, "the recursion ran: {:?}", deep.draft.header);
        assert_eq!(executor.scratch.frames_kept(), 0, "a deep block's frames are dropped");
        // The next block starts afresh and is kept again; the scratch changes no result.
        let again = build(&mut executor, &genesis, transfer, 21_000);
        assert_eq!(executor.scratch.frames_kept(), 8);
        let (mut fresh, _) = executor_on_genesis();
        let reference = build(&mut fresh, &genesis, transfer, 21_000);
        assert_eq!(again.draft.header, reference.draft.header);
        assert_eq!(again.draft.receipts, reference.draft.receipts);
    }

    /// Forwards its calldata to the console address: `STATICCALL(gas, console, 0, size, 0, 0)`
    /// after copying the calldata to memory.
    const RELAY: Address = address!("00000000000000000000000000000000000c0de5");

    /// A chain with `senders` funded and [`RELAY`] deployed; an executor that captures console
    /// output and runs blocks in `parallel`.
    fn console_chain(senders: &[Address], parallel: ParallelConfig) -> (ExecutorActor, Header) {
        let relay = Bytes::from(
            hex::decode("365f5f375f5f365f73000000000000000000636f6e736f6c652e6c6f675afa00")
                .expect("hex"),
        );
        let mut accounts: Vec<_> =
            senders.iter().map(|s| (*s, U256::from(10u128.pow(20)), None)).collect();
        accounts.push((RELAY, U256::ZERO, Some(relay)));
        let show = crate::exec::Show { console_log: true, ..Default::default() };
        executor_on(&accounts, parallel, show)
    }

    /// `log(string,uint256)("tx %d", n)` as console.sol sends it.
    fn console_call(n: u64) -> Bytes {
        use alloy_dyn_abi::DynSolValue as V;
        let mut data = keccak256("log(string,uint256)")[..4].to_vec();
        let args = V::Tuple(vec![V::String("tx %d".into()), V::Uint(U256::from(n), 256)]);
        data.extend(args.abi_encode_params());
        data.into()
    }

    #[test]
    fn console_output_is_the_same_whichever_thread_ran_the_transaction() {
        // 24 senders, two transactions each (nonce chains), each logging its number.
        let senders: Vec<Address> = (1..=24u64).map(|i| Address::with_last_byte(i as u8)).collect();
        let mut txs = Vec::new();
        for nonce in 0..2 {
            for sender in &senders {
                let n = txs.len() as u64;
                let tx = TxEip1559 {
                    chain_id: 1,
                    nonce,
                    gas_limit: 100_000,
                    max_fee_per_gas: 2_000_000_000,
                    max_priority_fee_per_gas: 0,
                    to: TxKind::Call(RELAY),
                    value: U256::ZERO,
                    access_list: Default::default(),
                    input: console_call(n),
                };
                let signed = tx.into_signed(Signature::test_signature());
                let hash = *signed.hash();
                txs.push(PooledTx { tx: Arc::new(signed.into()), sender: *sender, hash });
            }
        }
        let run = |parallel: ParallelConfig| {
            let (mut executor, genesis) = console_chain(&senders, parallel);
            let env =
                BlockEnvSpec::dev(1, 12, Address::ZERO, 30_000_000, 1_000_000_000, B256::ZERO);
            let msg = BuildBlock {
                parent: Sealed::new(genesis),
                env,
                txs: txs.clone(),
                mode: BuildMode::Pack,
            };
            executor.build_block(msg).expect("block builds").console
        };
        let sequential = run(ParallelConfig::default());
        let expected: Vec<(usize, ConsoleLines)> = (0..txs.len())
            .map(|i| (i, ConsoleLines { lines: vec![format!("tx {i}")], dropped: 0 }))
            .collect();
        assert_eq!(sequential, expected);
        // Helpers that run every transaction against the block's start: most runs conflict
        // and run again on the committer; the rest are taken from the helpers.
        let mut stale = ParallelConfig::new(ParallelMode::Always, 2).unwrap();
        stale.stale_helpers = true;
        assert_eq!(run(stale), expected);
        assert_eq!(run(ParallelConfig::new(ParallelMode::Always, 2).unwrap()), expected);
        // Nothing is captured when console output is off.
        let (mut executor, genesis) = console_chain(&senders, ParallelConfig::default());
        executor.config.show.console_log = false;
        let env = BlockEnvSpec::dev(1, 12, Address::ZERO, 30_000_000, 1_000_000_000, B256::ZERO);
        let msg = BuildBlock { parent: Sealed::new(genesis), env, txs, mode: BuildMode::Pack };
        assert!(executor.build_block(msg).expect("block builds").console.is_empty());
    }
}
