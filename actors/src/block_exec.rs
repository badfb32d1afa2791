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

use alloy_consensus::{
    Eip658Value, Header, Receipt, ReceiptEnvelope, ReceiptWithBloom, Transaction, TxEnvelope,
    TxReceipt,
};
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS;
use alloy_eips::eip4788::BEACON_ROOTS_ADDRESS;
use alloy_eips::eip6110::{DEPOSIT_REQUEST_TYPE, MAINNET_DEPOSIT_CONTRACT_ADDRESS};
use alloy_eips::eip7002::{WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE};
use alloy_eips::eip7251::{CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE};
use alloy_eips::eip7685::{EMPTY_REQUESTS_HASH, Requests};
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bloom, Bytes, Log, U256, keccak256};
use hearth_messages::ExecError;
use hearth_messages::executor::{
    BlockEnvSpec, BlockRules, BuildBlock, BuildMode, BuiltBlock, InvalidTx,
};
use hearth_storage::trie::{EMPTY_ROOT, ordered_root};
use hearth_storage::{BlockDraft, ChainDb, StoredBody, block_roots_beside, state_root_after};
use revm::context::evm::Evm;
use revm::context::result::{EVMError, ExecutionResult, InvalidTransaction, Output};
use revm::context::{BlockEnv, CfgEnv, Context, LocalContext};
use revm::context_interface::JournalTr;
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::local::FrameStack;
use revm::handler::instructions::EthInstructions;
use revm::handler::{EthFrame, EthPrecompiles, SystemCallCommitEvm};
use revm::handler::{MainnetContext, MainnetEvm};
use revm::interpreter::interpreter::EthInterpreter;
use revm::interpreter::{Instruction, InstructionContext, InstructionExecResult};
use revm::primitives::hardfork::SpecId;
use revm::{ExecuteCommitEvm, MainContext};

use crate::code_cache::CodeL1;
use crate::exec_db::ExecDb;
use crate::executor::{EvmScratch, ExecConfig, exec_error, tx_env};

/// One ether in wei.
const ETHER: u128 = 1_000_000_000_000_000_000;

/// The blob schedule a fork uses when the caller gives none.
pub fn default_blob_params(spec: SpecId) -> BlobParams {
    if spec.is_enabled_in(SpecId::OSAKA) {
        BlobParams::osaka()
    } else if spec.is_enabled_in(SpecId::PRAGUE) {
        BlobParams::prague()
    } else {
        BlobParams::cancun()
    }
}

/// The pre-merge block reward of a fork (none from the Merge on).
pub fn block_reward(spec: SpecId) -> U256 {
    let ether = if spec.is_enabled_in(SpecId::MERGE) {
        0
    } else if spec.is_enabled_in(SpecId::PETERSBURG) {
        2
    } else if spec.is_enabled_in(SpecId::BYZANTIUM) {
        3
    } else {
        5
    };
    U256::from(ether * ETHER)
}

/// A block's EVM: its rules and environment over its parent's state, with inspector `I` (`()`
/// for none).
pub(crate) type BlockEvm<'a, I> = MainnetEvm<MainnetContext<ExecDb<'a>>, I>;

/// What a block's environment resolves to with the executor's defaults filled in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockSetup {
    /// The block's hard fork.
    pub(crate) spec: SpecId,
    /// Its blob schedule.
    pub(crate) blob_params: BlobParams,
}

/// The blob schedule of the block `env` describes: its own, else the executor's (an imported
/// chain's head's), else its fork's default.
fn resolved_blob_params(env: &BlockEnvSpec, defaults: &ExecConfig) -> BlobParams {
    let spec = env.spec.unwrap_or(defaults.spec);
    env.blob_params.or(defaults.blob_params).unwrap_or_else(|| default_blob_params(spec))
}

/// The EVM that executes the block described by `env` on top of block `parent_number`'s state:
/// the one construction block building, import and trace replays share, so a replay runs under
/// exactly the configuration and environment the block was built with.
pub(crate) fn block_evm<'a, I>(
    db: &ChainDb,
    codes: &'a mut CodeL1,
    defaults: &ExecConfig,
    parent_number: u64,
    env: &BlockEnvSpec,
    inspector: I,
) -> (BlockEvm<'a, I>, BlockSetup) {
    let fresh = (FrameStack::new_prealloc(8), LocalContext::default());
    block_evm_in(db, codes, defaults, parent_number, env, inspector, fresh)
}

/// [`block_evm`] with its call frames and memory buffer from `scratch` (the executor
/// thread's, see `EvmScratch`) instead of fresh ones.
fn block_evm_in<'a, I>(
    db: &ChainDb,
    codes: &'a mut CodeL1,
    defaults: &ExecConfig,
    parent_number: u64,
    env: &BlockEnvSpec,
    inspector: I,
    (frame_stack, local): (FrameStack<EthFrame>, LocalContext),
) -> (BlockEvm<'a, I>, BlockSetup) {
    let spec = env.spec.unwrap_or(defaults.spec);
    let chain_id = env.chain_id.unwrap_or_else(|| defaults.chain_id.get());
    let blob_params = resolved_blob_params(env, defaults);
    let mut cfg = CfgEnv::new_with_spec(spec);
    cfg.chain_id = chain_id;
    cfg.limit_contract_code_size = defaults.code_size_limit;
    if spec.is_enabled_in(SpecId::CANCUN) {
        cfg.max_blobs_per_tx = Some(blob_params.max_blobs_per_tx);
        cfg.blob_base_fee_update_fraction = Some(blob_fraction(&blob_params));
    }
    let view = db.state_at(parent_number);
    let exec_db =
        ExecDb::new(view, codes).with_clear_empty(spec.is_enabled_in(SpecId::SPURIOUS_DRAGON));
    let mut ctx = Context::mainnet().with_db(exec_db).with_cfg(cfg).with_block(block_env(
        env,
        spec,
        &blob_params,
    ));
    ctx.local = local;
    // What `build_mainnet_with_inspector` makes, with the given frames.
    let evm = Evm {
        ctx,
        inspector,
        instruction: EthInstructions::new_mainnet_with_spec(spec),
        precompiles: EthPrecompiles::new(spec),
        frame_stack,
    };
    (evm, BlockSetup { spec, blob_params })
}

/// Makes the block EVM's call and create instructions note the call depth they run at in its
/// database before they run: the deepest frame a block used, which bounds how many frames
/// (32 KiB of stack each) its frame pool grew to, so the executor knows what keeping it costs
/// (`EvmScratch::keep`). And makes the instructions that can observe another account's balance
/// or code (BALANCE, EXTCODE*, CALL*, SELFDESTRUCT) note when they name the coinbase, which a
/// parallel block's lazy coinbase needs (`parallel::saw_coinbase`). Only these opcodes pay, one
/// comparison each: an inspector would put the whole block on revm's slower inspecting loop.
pub(crate) fn instrument(evm: &mut BlockEvm<'_, ()>) {
    use revm::bytecode::opcode::{
        BALANCE, CALL, CALLCODE, CREATE, CREATE2, DELEGATECALL, EXTCODECOPY, EXTCODEHASH,
        EXTCODESIZE, SELFDESTRUCT, STATICCALL,
    };
    use revm::interpreter::instructions::contract::{call, create};
    use revm::interpreter::instructions::host;

    type Ctx<'c, 'a> = InstructionContext<'c, MainnetContext<ExecDb<'a>>, EthInterpreter>;
    /// The frame a call or create from the current frame gets: journal depth `d` runs frame
    /// `d - 1`, so its child is frame `d`.
    fn note(ctx: &mut Ctx<'_, '_>) {
        let depth = ctx.host.journaled_state.depth();
        ctx.host.journaled_state.database.note_call_depth(depth);
    }
    /// Whether the stack item `operand` from the top is the coinbase's address.
    fn watch(ctx: &Ctx<'_, '_>, operand: usize) {
        if let Ok(word) = ctx.interpreter.stack.peek(operand)
            && Address::from_word(B256::from(word)) == ctx.host.block.beneficiary
        {
            crate::parallel::saw_coinbase();
        }
    }
    fn noted_call<const KIND: u8>(mut ctx: Ctx<'_, '_>) -> InstructionExecResult {
        note(&mut ctx);
        // CALL*(gas, address, ...): the callee or the code's account.
        watch(&ctx, 1);
        call::<KIND, _, _>(ctx)
    }
    fn noted_create<const IS_CREATE2: bool>(mut ctx: Ctx<'_, '_>) -> InstructionExecResult {
        note(&mut ctx);
        create::<IS_CREATE2, _, _>(ctx)
    }
    /// BALANCE, EXTCODE* and SELFDESTRUCT: the account is the top of the stack.
    fn watched<const OP: u8>(ctx: Ctx<'_, '_>) -> InstructionExecResult {
        watch(&ctx, 0);
        match OP {
            BALANCE => host::balance(ctx),
            EXTCODESIZE => host::extcodesize(ctx),
            EXTCODECOPY => host::extcodecopy(ctx),
            EXTCODEHASH => host::extcodehash(ctx),
            _ => host::selfdestruct(ctx),
        }
    }
    let table = evm.instruction.instruction_table_mut();
    table[usize::from(CALL)] = Instruction::new(noted_call::<CALL>);
    table[usize::from(CALLCODE)] = Instruction::new(noted_call::<CALLCODE>);
    table[usize::from(DELEGATECALL)] = Instruction::new(noted_call::<DELEGATECALL>);
    table[usize::from(STATICCALL)] = Instruction::new(noted_call::<STATICCALL>);
    table[usize::from(CREATE)] = Instruction::new(noted_create::<false>);
    table[usize::from(CREATE2)] = Instruction::new(noted_create::<true>);
    table[usize::from(BALANCE)] = Instruction::new(watched::<BALANCE>);
    table[usize::from(EXTCODESIZE)] = Instruction::new(watched::<EXTCODESIZE>);
    table[usize::from(EXTCODECOPY)] = Instruction::new(watched::<EXTCODECOPY>);
    table[usize::from(EXTCODEHASH)] = Instruction::new(watched::<EXTCODEHASH>);
    table[usize::from(SELFDESTRUCT)] = Instruction::new(watched::<SELFDESTRUCT>);
}

/// Stops a parallel block's helpers when dropped (the block's loop ended, or failed).
struct StopHelpers<'b, 'a>(Option<&'b crate::parallel::Board<'a>>);

impl Drop for StopHelpers<'_, '_> {
    fn drop(&mut self) {
        if let Some(board) = self.0 {
            board.stop();
        }
    }
}

/// The system calls that run before a block's transactions: EIP-4788 (the parent beacon
/// block root, from Cancun) and EIP-2935 (the parent's hash, from Prague), each only when
/// its contract has code.
pub(crate) fn pre_block_calls<I>(
    evm: &mut BlockEvm<'_, I>,
    env: &BlockEnvSpec,
    parent: &Header,
    spec: SpecId,
) -> Result<(), ExecError> {
    if env.rules != BlockRules::Full {
        return Ok(());
    }
    if spec.is_enabled_in(SpecId::CANCUN)
        && evm.ctx.journaled_state.database.has_code(BEACON_ROOTS_ADDRESS)?
    {
        let root =
            Bytes::copy_from_slice(env.parent_beacon_block_root.unwrap_or_default().as_slice());
        // A failing beacon-root call does not invalidate the block (EIP-4788). The call
        // stores into its ring without reading it: a fork need not fetch the old slots.
        hearth_storage::overwriting(BEACON_ROOTS_ADDRESS, || {
            evm.system_call_commit(BEACON_ROOTS_ADDRESS, root)
        })
        .map_err(exec_error)?;
    }
    if spec.is_enabled_in(SpecId::PRAGUE)
        && evm.ctx.journaled_state.database.has_code(HISTORY_STORAGE_ADDRESS)?
    {
        let parent_hash = Bytes::copy_from_slice(parent.hash_slow().as_slice());
        hearth_storage::overwriting(HISTORY_STORAGE_ADDRESS, || {
            evm.system_call_commit(HISTORY_STORAGE_ADDRESS, parent_hash)
        })
        .map_err(exec_error)?;
    }
    Ok(())
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
    let started = std::time::Instant::now();
    let BuildBlock { parent, mut env, txs, mode } = msg;
    // A block that fails reports no parallel statistics rather than the previous block's.
    crate::parallel::set_last_stats(crate::parallel::ParallelStats::default());
    if env.excess_blob_gas.is_none() && parent.excess_blob_gas.is_some() {
        let params = resolved_blob_params(&env, defaults);
        env.excess_blob_gas = Some(excess_blob_gas(&parent, &params));
    }
    // A parallel block's board outlives the block's EVM, whose database may read from it
    // (the accounts its helpers read ahead).
    let plan = crate::parallel::plan(&defaults.parallel, &txs);
    let helpers = plan.as_ref().map(|(helpers, _)| *helpers);
    // At most as many transactions as the gas limit fits (a packed pool may offer many more).
    let room = txs.len().min(usize::try_from(env.gas_limit / 21_000).unwrap_or(usize::MAX));
    let board = plan.map(|plan| crate::parallel::Board::new(&txs, &defaults.parallel, plan, room));
    let parts = (scratch.take_frames(), scratch.take_local());
    let (mut evm, BlockSetup { spec, blob_params }) =
        block_evm_in(db, codes, defaults, parent.number, &env, (), parts);
    instrument(&mut evm);
    // EIP-3607 (no transaction from an account with code) is a validity rule of blocks the
    // node receives; in blocks it packs from its own pool, an impersonated contract may send,
    // as anvil and Hardhat allow (a raw transaction cannot come from code: no key signs it).
    evm.ctx.cfg.disable_eip3607 = mode == BuildMode::Pack;
    let full = env.rules == BlockRules::Full;
    let cancun = spec.is_enabled_in(SpecId::CANCUN);
    let prague = spec.is_enabled_in(SpecId::PRAGUE);
    pre_block_calls(&mut evm, &env, &parent, spec)?;
    // A parallel block's helpers claim, run and hand back transactions while the loop below
    // commits them in order (`parallel.rs`); they are scoped threads that end with the loop.
    let start = helpers.map(|_| evm.ctx.journaled_state.database.changes().clone());
    // Sized for the whole block at once (`room`): grown one push at a time, a big block's
    // vectors were copied at every doubling, on the loop a parallel block's other threads wait
    // for.
    // After the helpers' copy of the changes, which need no room for the block's.
    evm.ctx.journaled_state.database.reserve_changes(room);
    let input = start.as_ref().map(|start| crate::parallel::SpecInput {
        db,
        defaults,
        parent_number: parent.number,
        env: &env,
        mode,
        start,
    });

    let byzantium = spec.is_enabled_in(SpecId::BYZANTIUM);
    let max_blob_gas = blob_params.max_blob_gas_per_block();
    let mut senders = Vec::with_capacity(room);
    // The indexes of the transactions the block includes: their copies for the body are made
    // after the loop, beside the roots' hashing, not on the loop a parallel block waits for.
    let mut included: Vec<usize> = Vec::with_capacity(room);
    let mut receipts = Vec::with_capacity(room);
    let mut invalid = Vec::new();
    let mut outputs = Vec::with_capacity(room);
    let mut gas_used = 0u64;
    let mut blob_gas_used = 0u64;
    let mut logs_bloom = Bloom::ZERO;
    // The deposit contract's logs (EIP-6110 requests), the only ones read after the loop.
    let mut deposit_logs: Vec<Log> = Vec::new();
    let loop_started = std::time::Instant::now();
    let stats = std::thread::scope(|scope| -> Result<_, ExecError> {
        // However this scope ends (a spawn that fails included), the helpers stop claiming:
        // made before the first spawn, so that a helper never waits for a committer that
        // is gone while the scope waits for it.
        let _stop = StopHelpers(board.as_ref());
        let mut committer = None;
        if let (Some(board), Some(input)) = (board.as_ref(), input.as_ref()) {
            for helper in 0..board.helpers() {
                scope.spawn(move || crate::parallel::run_helper(input, board, helper));
            }
            board.helpers_started();
            committer = Some(crate::parallel::Committer::new(board, env.coinbase));
        }
        for (index, candidate) in txs.iter().enumerate() {
            let reject =
                |reason: String| ExecError::Invalid(format!("transaction {index}: {reason}"));
            let tx_blob_gas = candidate.tx.blob_gas_used().unwrap_or_default();
            let over_gas = gas_used.saturating_add(candidate.tx.gas_limit()) > env.gas_limit;
            let over_blobs = blob_gas_used.saturating_add(tx_blob_gas) > max_blob_gas;
            if over_gas || over_blobs {
                match mode {
                    // What does not fit stays pending for the next block.
                    BuildMode::Pack => continue,
                    BuildMode::Import if over_gas => {
                        return Err(reject(format!(
                            "gas limit {} exceeds the block's remaining gas {}",
                            candidate.tx.gas_limit(),
                            env.gas_limit - gas_used
                        )));
                    }
                    BuildMode::Import => {
                        return Err(reject(format!(
                            "blob gas {tx_blob_gas} exceeds the block's remaining blob gas {}",
                            max_blob_gas - blob_gas_used
                        )));
                    }
                }
            }
            // In a parallel block the committer validates the transaction's speculative run (or
            // runs it again); either way the outcome is what sequential execution gives here.
            if let Some(ahead) = board.as_ref().and_then(|board| board.read_ahead()) {
                evm.ctx.journaled_state.database.read_ahead(ahead, index);
            }
            let executed = match committer.as_mut() {
                Some(committer) => committer.run(&mut evm, index, candidate),
                None => evm.transact_commit(tx_env(candidate)).map(|result| (result, None)),
            };
            let (result, bloom) = match executed {
                Ok(executed) => executed,
                Err(EVMError::Transaction(e)) if mode == BuildMode::Import => {
                    return Err(reject(e.to_string()));
                }
                // A later nonce of a sender whose earlier transaction failed: keep it pooled.
                Err(EVMError::Transaction(InvalidTransaction::NonceTooHigh { .. })) => continue,
                Err(EVMError::Transaction(e)) => {
                    invalid.push(InvalidTx { hash: candidate.hash, reason: e.to_string() });
                    continue;
                }
                Err(other) => return Err(exec_error(other)),
            };
            gas_used += result.tx_gas_used();
            blob_gas_used += tx_blob_gas;
            // Before Byzantium (EIP-658) a receipt carries the state root after its transaction.
            let status = if byzantium {
                Eip658Value::Eip658(result.is_success())
            } else {
                let diff = evm.ctx.journaled_state.database.diff_so_far();
                Eip658Value::PostState(state_root_after(db, env.number, &diff)?)
            };
            // A halt returns nothing; a revert its revert data.
            let (output, logs) = output_and_logs(result);
            outputs.push(output);
            deposit_logs.extend(
                logs.iter().filter(|log| log.address == MAINNET_DEPOSIT_CONTRACT_ADDRESS).cloned(),
            );
            let receipt = Receipt { status, cumulative_gas_used: gas_used, logs };
            // A helper made the bloom of a speculative run's logs (keccak of every address and
            // topic): the committer's loop is the block's sequential part.
            let receipt = match bloom {
                Some(bloom) => ReceiptWithBloom::new(receipt, bloom),
                None => receipt.with_bloom(),
            };
            let receipt = ReceiptEnvelope::from_typed(candidate.tx.tx_type(), receipt);
            logs_bloom.accrue_bloom(&receipt.bloom());
            receipts.push(receipt);
            senders.push(candidate.sender);
            included.push(index);
        }
        Ok(committer.map(|c| c.stats()))
    })?;

    let shanghai = spec.is_enabled_in(SpecId::SHANGHAI);
    if full && shanghai {
        for withdrawal in &env.withdrawals {
            evm.ctx.journaled_state.database.credit(withdrawal.address, withdrawal.amount_wei())?;
        }
    }
    let mut requests = Requests::default();
    if full && prague {
        requests.push_request_with_type(DEPOSIT_REQUEST_TYPE, deposit_requests(&deposit_logs)?);
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
    }
    let reward = block_reward(spec);
    if full && !reward.is_zero() {
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
    let loop_time = loop_started.elapsed();
    if let Some(stats) = &stats {
        tracing::debug!(
            target: "actors::block_exec",
            txs = txs.len(),
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
    crate::parallel::set_last_stats(crate::parallel::ParallelStats {
        setup_time: loop_started - started,
        loop_time,
        ..stats.unwrap_or_default()
    });
    let Evm { ctx, frame_stack, .. } = evm;
    let deepest = ctx.journaled_state.database.max_call_depth();
    scratch.keep(frame_stack, ctx.local, deepest);
    let changes = ctx.journaled_state.database.into_changes();

    // For a block of cheap transactions these two roots cost more than the execution (a
    // receipt's bloom alone is three keccak blocks): a parallel configuration hashes them on
    // its threads too, while this thread turns the block's changes into its diff and copies
    // the included transactions into its body.
    let root_threads = crate::parallel::spread_threads(&defaults.parallel);
    let ommers_hash = if env.ommers.is_empty() {
        alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH
    } else {
        keccak256(alloy_rlp::encode(&env.ommers))
    };
    let beside = || {
        let transactions: Vec<TxEnvelope> =
            included.iter().map(|&index| txs[index].tx.as_ref().clone()).collect();
        (changes.into_diff(), transactions)
    };
    // A block that read ahead may have its transactions root already (a helper computed it
    // during the loop), which holds when the block includes every transaction.
    let known = board.as_ref().and_then(|board| board.read_ahead()?.transactions_root());
    let (transactions_root, receipts_root, (diff, transactions)) =
        match known.filter(|_| included.len() == txs.len()) {
            Some(root) => {
                let none = std::iter::empty::<&TxEnvelope>();
                let (_, receipts_root, other) =
                    block_roots_beside(none, &receipts, root_threads, beside);
                (root, receipts_root, other)
            }
            None => block_roots_beside(
                included.iter().map(|&index| txs[index].tx.as_ref()),
                &receipts,
                root_threads,
                beside,
            ),
        };
    // Every block's split, parallel or not, for `scripts/mine-e2e.py`: the set-up before the
    // loop (a parallel block's board and helpers), the loop, and the roots, diff and body.
    tracing::debug!(
        target: "actors::block_exec",
        txs = txs.len(),
        included = included.len(),
        setup_us = (loop_started - started).as_micros() as u64,
        loop_us = loop_time.as_micros() as u64,
        after_us = (loop_started + loop_time).elapsed().as_micros() as u64,
        "block executed"
    );
    let body = StoredBody { transactions, senders };
    let header = Header {
        parent_hash: parent.hash_slow(),
        ommers_hash,
        beneficiary: env.coinbase,
        state_root: B256::ZERO,
        transactions_root,
        receipts_root,
        logs_bloom,
        difficulty: env.difficulty,
        number: env.number,
        gas_limit: env.gas_limit,
        gas_used,
        timestamp: env.timestamp,
        extra_data: env.extra_data.clone(),
        mix_hash: env.prevrandao,
        nonce: Default::default(),
        base_fee_per_gas: spec.is_enabled_in(SpecId::LONDON).then_some(env.base_fee),
        withdrawals_root: shanghai.then(|| withdrawals_root(&env)),
        blob_gas_used: cancun.then_some(blob_gas_used),
        excess_blob_gas: cancun.then(|| env.excess_blob_gas.unwrap_or_default()),
        parent_beacon_block_root: cancun.then(|| env.parent_beacon_block_root.unwrap_or_default()),
        requests_hash: prague
            .then(|| if full { requests.requests_hash() } else { EMPTY_REQUESTS_HASH }),
        ..Default::default()
    };
    Ok(BuiltBlock {
        draft: BlockDraft { header, body, receipts },
        diff,
        invalid,
        requests: requests.take().into_iter().filter(|r| r.len() > 1).collect(),
        outputs,
    })
}

/// The excess blob gas of a block after `parent`, under `params` (the block's): EIP-4844, with
/// EIP-7918's reserve price from Osaka on (alloy's formula; before Osaka `blob_base_cost` is
/// zero and it is EIP-4844's).
pub(crate) fn excess_blob_gas(parent: &Header, params: &BlobParams) -> u64 {
    params.next_block_excess_blob_gas_osaka(
        parent.excess_blob_gas.unwrap_or_default(),
        parent.blob_gas_used.unwrap_or_default(),
        parent.base_fee_per_gas.unwrap_or_default(),
    )
}

/// The blob base fee update fraction as revm takes it.
fn blob_fraction(params: &BlobParams) -> u64 {
    u64::try_from(params.update_fraction).unwrap_or(u64::MAX)
}

/// revm's block environment for `env` under `spec`.
fn block_env(env: &BlockEnvSpec, spec: SpecId, params: &BlobParams) -> BlockEnv {
    let merged = spec.is_enabled_in(SpecId::MERGE);
    BlockEnv {
        number: U256::from(env.number),
        beneficiary: env.coinbase,
        timestamp: U256::from(env.timestamp),
        gas_limit: env.gas_limit,
        basefee: if spec.is_enabled_in(SpecId::LONDON) { env.base_fee } else { 0 },
        difficulty: env.difficulty,
        prevrandao: merged.then_some(env.prevrandao),
        blob_excess_gas_and_price: spec.is_enabled_in(SpecId::CANCUN).then(|| {
            BlobExcessGasAndPrice::new(
                env.excess_blob_gas.unwrap_or_default(),
                blob_fraction(params),
            )
        }),
        ..Default::default()
    }
}

/// The withdrawals root: our trie over (rlp(index), rlp(withdrawal)).
fn withdrawals_root(env: &BlockEnvSpec) -> B256 {
    if env.withdrawals.is_empty() {
        return EMPTY_ROOT;
    }
    ordered_root(
        env.withdrawals
            .iter()
            .enumerate()
            .map(|(i, w)| (alloy_rlp::encode(i), alloy_rlp::encode(w))),
    )
}

/// EIP-6110: the deposit requests in the block's logs, each the concatenation of the five
/// fields of a `DepositEvent` of the deposit contract. A malformed event makes the block
/// invalid, as the consensus specs say.
pub(crate) fn deposit_requests(logs: &[Log]) -> Result<Bytes, ExecError> {
    let event = keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)");
    // (offset word position, expected offset, expected length) of pubkey, withdrawal
    // credentials, amount, signature and index in the ABI encoding.
    const FIELDS: [(usize, usize); 5] = [(160, 48), (256, 32), (320, 8), (384, 96), (512, 8)];
    let mut out = Vec::new();
    for log in logs {
        if log.address != MAINNET_DEPOSIT_CONTRACT_ADDRESS
            || log.data.topics().first() != Some(&event)
        {
            continue;
        }
        let data = log.data.data.as_ref();
        if data.len() != 576 {
            return Err(ExecError::Invalid(format!(
                "deposit event data is {} bytes, expected 576",
                data.len()
            )));
        }
        let word = |at: usize| U256::from_be_slice(&data[at..at + 32]);
        for (i, (offset, length)) in FIELDS.iter().enumerate() {
            if word(i * 32) != U256::from(*offset) || word(*offset) != U256::from(*length) {
                return Err(ExecError::Invalid(format!(
                    "deposit event field {i} has a bad ABI offset or length"
                )));
            }
            out.extend_from_slice(&data[offset + 32..offset + 32 + length]);
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use alloy_consensus::{SignableTransaction, TxEip1559};
    use alloy_primitives::{Address, LogData, Signature, TxKind, address, hex};
    use hearth_messages::executor::{BlockEnvSpec, PooledTx};
    use hearth_storage::{AccountChange, AccountFields, StateDiff, write_block};

    use super::*;
    use crate::executor::ExecutorActor;

    const SENDER: Address = address!("00000000000000000000000000000000000a11ce");
    /// Calls itself with all its gas until the call depth limit (1,024 frames, about 53 gas
    /// each): `CALL(gas, address, 0, 0, 0, 0, 0)`.
    const RECURSE: Address = address!("000000000000000000000000000000000000dee9");

    fn executor_on_genesis() -> (ExecutorActor, Header) {
        let db = hearth_storage::ChainWriter::in_memory().expect("store");
        let code = Bytes::from(hex::decode("60006000600060006000305af100").expect("hex"));
        let code_hash = keccak256(&code);
        let mut diff = StateDiff::default();
        diff.codes.insert(code_hash, code);
        for (address, balance, code_hash) in [
            (SENDER, U256::from(10u128.pow(20)), hearth_storage::EMPTY_CODE_HASH),
            (RECURSE, U256::ZERO, code_hash),
        ] {
            let info = AccountFields { nonce: 0, balance, code_hash };
            let change = AccountChange {
                info: Some(info),
                storage_wiped: false,
                storage: Default::default(),
            };
            diff.accounts.insert(address, change);
        }
        let header = Header {
            gas_limit: 30_000_000,
            base_fee_per_gas: Some(1_000_000_000),
            ..Default::default()
        };
        let body = StoredBody { transactions: vec![], senders: vec![] };
        let draft = BlockDraft { header: header.clone(), body, receipts: vec![] };
        write_block(&db, draft, &diff).expect("genesis");
        let config = ExecConfig {
            chain_id: hearth_messages::ChainId::new(1),
            spec: SpecId::PRAGUE,
            gas_cap: 50_000_000,
            evm_timeout: None,
            blob_params: None,
            code_size_limit: None,
            parallel: crate::parallel::ParallelConfig::default(),
        };
        (ExecutorActor::new(db.reader(), config, None), header)
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
        let msg =
            BuildBlock { parent: parent.clone(), env, txs: vec![pooled], mode: BuildMode::Pack };
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

    #[test]
    fn block_reward_follows_the_fork() {
        assert_eq!(block_reward(SpecId::FRONTIER), U256::from(5 * ETHER));
        assert_eq!(block_reward(SpecId::BYZANTIUM), U256::from(3 * ETHER));
        assert_eq!(block_reward(SpecId::PETERSBURG), U256::from(2 * ETHER));
        assert_eq!(block_reward(SpecId::LONDON), U256::from(2 * ETHER));
        assert_eq!(block_reward(SpecId::MERGE), U256::ZERO);
    }

    fn deposit_log(data: Vec<u8>) -> Log {
        let event = keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)");
        Log {
            address: MAINNET_DEPOSIT_CONTRACT_ADDRESS,
            data: LogData::new_unchecked(vec![event], data.into()),
        }
    }

    /// A well-formed DepositEvent payload whose field bytes are 1, 2, 3, 4, 5.
    fn valid_payload() -> Vec<u8> {
        let mut data = vec![0u8; 576];
        for (i, (offset, length)) in
            [(160, 48), (256, 32), (320, 8), (384, 96), (512, 8)].into_iter().enumerate()
        {
            data[i * 32 + 31] = u8::try_from(offset % 256).expect("fits");
            data[i * 32 + 30] = u8::try_from(offset / 256).expect("fits");
            data[offset + 31] = u8::try_from(length).expect("fits");
            data[offset + 32..offset + 32 + length].fill(u8::try_from(i + 1).expect("fits"));
        }
        data
    }

    #[test]
    fn deposit_requests_concatenate_the_fields() {
        let request = deposit_requests(&[deposit_log(valid_payload())]).expect("valid");
        assert_eq!(request.len(), 48 + 32 + 8 + 96 + 8);
        assert_eq!(request[0], 1);
        assert_eq!(request[48], 2);
        assert_eq!(request[request.len() - 1], 5);
    }

    #[test]
    fn malformed_deposit_events_invalidate_the_block() {
        let mut bad_offset = valid_payload();
        bad_offset[31] = 0;
        assert!(deposit_requests(&[deposit_log(bad_offset)]).is_err());
        assert!(deposit_requests(&[deposit_log(vec![0u8; 575])]).is_err());
    }
}
