//! Tracing on the executor thread: a transaction replayed inside its block, a whole block, or a
//! call, under revm-inspectors' tracers (geth's through `DebugInspector`, parity's through
//! `TracingInspector`), the answer encoded as JSON right here, within the response cap.
//!
//! A replay of block N starts from block N-1's state with block N's environment and fork
//! rules, through `exec::block_evm`, the construction block building and import use, and
//! runs the pre-block system calls (EIP-4788, EIP-2935) first; the transactions before the
//! traced one run without an inspector. Every traced execution runs under a [`TraceGuard`]:
//! the request's deadline (a geth tracer's `timeout`, else the EVM time cap) and, for opcode
//! traces, a lower bound of the answer's size, so a trace that could never fit the response
//! cap stops early instead of recording millions of steps. Struct logs (geth's default tracer)
//! are encoded step by step from the recorded call arena: no vector of `StructLog`s and no JSON
//! tree of the whole trace is ever built.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Instant;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::{Address, B256, U256};
use alloy_rpc_types_eth::TransactionInfo;
use alloy_rpc_types_trace::filter::TraceFilter;
use alloy_rpc_types_trace::geth::{
    DefaultFrame, GethDebugTracingOptions, GethDefaultTracingOptions, StructLog,
};
use alloy_rpc_types_trace::parity::{
    Action, LocalizedTransactionTrace, RewardAction, RewardType, TraceResults,
    TraceResultsWithTransactionHash, TransactionTrace,
};
use hearth_messages::ExecError;
use hearth_messages::executor::{BlockEnvSpec, CallRequest, PooledTx};
use hearth_messages::trace::{Trace, TraceBudget, TraceJob, TraceOutput, TraceTypes};
use revm::bytecode::opcode;
use revm::context::result::{ExecutionResult, HaltReason, ResultAndState};
use revm::context::{BlockEnv, Context, TxEnv};
use revm::handler::MainnetContext;
use revm::interpreter::{InstructionResult, Interpreter};
use revm::primitives::hardfork::SpecId;
use revm::{ExecuteCommitEvm, InspectEvm, Inspector, MainContext};
use revm_inspectors::tracing::types::{CallTraceNode, CallTraceStep};
use revm_inspectors::tracing::{
    CallTraceArena, DebugInspector, DebugInspectorError, TracingInspector, TracingInspectorConfig,
    TransactionContext,
};
use serde::Serialize;

use crate::exec::{
    BlockEvm, ExecDb, block_evm, block_reward, evm_over, exec_error, pre_block_calls, tx_env,
};
use crate::executor::ExecutorActor;
use revm::context_interface::local::FrameStack;

mod otterscan;

/// The fewest bytes one struct log encodes to: `{"pc":0,"op":"LT","gas":0,"gasCost":0,
/// "depth":1,"refund":0}` and its separating comma. With the stack, memory and storage left
/// out and every number at its shortest, a real step is never smaller.
const MIN_STRUCT_LOG_BYTES: usize = 60;

/// The fewest bytes one parity `vmTrace` operation encodes to (`{"pc":0,"cost":0,"ex":null,
/// "sub":null}` and a comma).
const MIN_VM_OP_BYTES: usize = 40;

/// How many instructions run between two looks at the clock (an `Instant::now` per
/// instruction would cost more than most instructions).
const CHECK_EVERY: u32 = 4096;

impl ExecutorActor {
    /// Runs a trace request. Public so that benches and tests can drive an executor without an
    /// actor system.
    pub fn trace(&mut self, msg: Trace) -> Result<TraceOutput, ExecError> {
        let Trace { job, budget } = msg;
        let bounds = Bounds::new(budget, self.config.evm_timeout);
        let mut out = JsonOut::new(budget.max_bytes);
        match job {
            TraceJob::GethTransaction { block, index, options } => {
                self.geth_transaction(&mut out, block, index, &options, budget, bounds)?;
            }
            TraceJob::GethBlock { block, options } => {
                let replay = self.stored_block(block)?;
                self.geth_block(&mut out, &replay, &options, budget, bounds)?;
            }
            TraceJob::GethRawBlock { block, parent, options } => {
                let replay = self.raw_block(*block, parent)?;
                self.geth_block(&mut out, &replay, &options, budget, bounds)?;
            }
            TraceJob::GethCall { request, block, options } => {
                self.geth_call(&mut out, *request, block, &options, budget, bounds)?;
            }
            TraceJob::ParityTransaction { block, index, address } => {
                self.parity_transaction(&mut out, block, index, address.as_deref(), bounds)?;
            }
            TraceJob::ParityBlock { block } => {
                let replay = self.stored_block(block)?;
                let mut list = out.array();
                self.parity_block(&replay, bounds, |trace| list.push(&mut out, trace))?;
                list.close(&mut out)?;
            }
            TraceJob::ParityReplayTransaction { block, index, types } => {
                self.parity_replay_transaction(&mut out, block, index, &types, bounds)?;
            }
            TraceJob::ParityReplayBlock { block, types } => {
                self.parity_replay_block(&mut out, block, &types, bounds)?;
            }
            TraceJob::ParityCalls { calls, block, many } => {
                self.parity_calls(&mut out, &calls, block, many, bounds)?;
            }
            TraceJob::ParityFilter { from, to, filter } => {
                self.parity_filter(&mut out, from, to, &filter, bounds)?;
            }
            TraceJob::Decoded { block, index } => {
                let replay = self.stored_block(block)?;
                check_index(&replay, index)?;
                let mut tree = None;
                self.named_traces(&replay, index..=index, bounds, |_, arena, console| {
                    let mut json = crate::report::decode::arena_json(&arena);
                    json["console"] = serde_json::json!(console.decode().lines);
                    tree = Some(json);
                })?;
                out.value(&tree)?;
            }
            TraceJob::Otterscan { block, index, view } => {
                self.otterscan(&mut out, (block, index), view, bounds)?;
            }
            TraceJob::PrintBlock { block } => {
                let replay = self.stored_block(block)?;
                self.named_traces(&replay, replay.all(), bounds, |index, arena, _| {
                    let text = crate::report::decode::arena_text(&arena, false);
                    let hash = replay.txs[index].hash;
                    tracing::info!(target: "trace", tx = %hash, "call tree of {hash}\n{}", text.trim_end());
                })?;
                out.raw(b"null")?;
            }
        }
        Ok(TraceOutput(out.buf))
    }

    /// debug_traceTransaction: transaction `index` of block `block`, replayed in its block.
    fn geth_transaction(
        &mut self,
        out: &mut JsonOut,
        block: u64,
        index: usize,
        options: &GethDebugTracingOptions,
        budget: TraceBudget,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let replay = self.stored_block(block)?;
        check_index(&replay, index)?;
        let spec = replay.spec(self);
        let tracer = GethTracer::new(options, budget, bounds)?;
        self.replay(
            &replay,
            index..=index,
            || tracer.make(),
            |step| write_geth(out, step, Some(replay.context(index)), spec),
        )
    }

    /// debug_traceCall: `request` on the state after block `block`.
    fn geth_call(
        &mut self,
        out: &mut JsonOut,
        request: CallRequest,
        block: u64,
        options: &GethDebugTracingOptions,
        budget: TraceBudget,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let tracer = GethTracer::new(options, budget, bounds)?;
        let calls = [(request, ())];
        self.trace_calls(
            block,
            Some("debug_traceCall"),
            &calls,
            |_| tracer.make(),
            |step, spec| write_geth(out, step, None, spec),
        )
    }

    /// trace_transaction, and trace_get (`address`: the position of the one trace wanted).
    fn parity_transaction(
        &mut self,
        out: &mut JsonOut,
        block: u64,
        index: usize,
        address: Option<&[usize]>,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let replay = self.stored_block(block)?;
        check_index(&replay, index)?;
        let make = || parity_tracer(TracingInspectorConfig::default_parity(), bounds);
        let mut traces = Vec::new();
        self.replay(&replay, index..=index, make, |step| {
            traces = localized(step, replay.info(index));
            Ok(())
        })?;
        match address {
            // trace_get: one index picks the trace at that position, as reth answers (more
            // than one index is null there, as in OpenEthereum).
            Some(address) => {
                let pick = match address {
                    [position] => traces.get(*position),
                    _ => None,
                };
                out.value(&pick)
            }
            None => out.value(&traces),
        }
    }

    /// trace_replayTransaction: transaction `index` of block `block` with the `types` asked.
    fn parity_replay_transaction(
        &mut self,
        out: &mut JsonOut,
        block: u64,
        index: usize,
        types: &TraceTypes,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let replay = self.stored_block(block)?;
        check_index(&replay, index)?;
        let make = || parity_tracer(TracingInspectorConfig::from_parity_config(types), bounds);
        self.replay(&replay, index..=index, make, |step| out.value(&trace_results(step, types)?))
    }

    /// trace_replayBlockTransactions: every transaction of block `block` with the `types`
    /// asked.
    fn parity_replay_block(
        &mut self,
        out: &mut JsonOut,
        block: u64,
        types: &TraceTypes,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let replay = self.stored_block(block)?;
        let make = || parity_tracer(TracingInspectorConfig::from_parity_config(types), bounds);
        let mut list = out.array();
        self.replay(&replay, replay.all(), make, |step| {
            let hash = replay.txs[step.index].hash;
            let full_trace = trace_results(step, types)?;
            list.push(out, &TraceResultsWithTransactionHash { full_trace, transaction_hash: hash })
        })?;
        list.close(out)
    }

    /// trace_call (one call) and trace_callMany (`many`: an array of answers).
    fn parity_calls(
        &mut self,
        out: &mut JsonOut,
        calls: &[(CallRequest, TraceTypes)],
        block: u64,
        many: bool,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let mut list = many.then(|| out.array());
        let method = if many { "trace_callMany" } else { "trace_call" };
        self.trace_calls(
            block,
            Some(method),
            calls,
            |types| parity_tracer(TracingInspectorConfig::from_parity_config(types), bounds),
            |step, _| {
                let types = &calls[step.index].1;
                let results = trace_results(step, types)?;
                match &mut list {
                    Some(list) => list.push(out, &results),
                    None => out.value(&results),
                }
            },
        )?;
        match list {
            Some(list) => list.close(out),
            None => Ok(()),
        }
    }

    /// debug_traceBlock*: `[{"txHash", "result"}]` for every transaction of `replay`.
    fn geth_block(
        &mut self,
        out: &mut JsonOut,
        replay: &ReplayBlock,
        options: &GethDebugTracingOptions,
        budget: TraceBudget,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let spec = replay.spec(self);
        let tracer = GethTracer::new(options, budget, bounds)?;
        let mut list = out.array();
        self.replay(
            replay,
            replay.all(),
            || tracer.make(),
            |step| {
                list.item(out)?;
                out.raw(b"{\"txHash\":")?;
                out.value(&replay.txs[step.index].hash)?;
                out.raw(b",\"result\":")?;
                let context = replay.context(step.index);
                write_geth(out, step, Some(context), spec)?;
                out.raw(b"}")
            },
        )?;
        list.close(out)
    }

    /// The flat parity traces of every transaction of `replay`, then its rewards, each handed
    /// to `each` in order.
    fn parity_block(
        &mut self,
        replay: &ReplayBlock,
        bounds: Bounds,
        mut each: impl FnMut(&LocalizedTransactionTrace) -> Result<(), ExecError>,
    ) -> Result<(), ExecError> {
        let make = || parity_tracer(TracingInspectorConfig::default_parity(), bounds);
        self.replay(replay, replay.all(), make, |step| {
            let info = replay.info(step.index);
            localized(step, info).iter().try_for_each(&mut each)
        })?;
        for reward in self.reward_traces(replay)? {
            each(&reward)?;
        }
        Ok(())
    }

    /// trace_filter: the matching traces of blocks `from..=to`, after `filter.after` and at
    /// most `filter.count` of them.
    fn parity_filter(
        &mut self,
        out: &mut JsonOut,
        from: u64,
        to: u64,
        filter: &TraceFilter,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let matcher = filter.matcher();
        let mut skip = filter.after.unwrap_or(0);
        let mut left = filter.count.unwrap_or(u64::MAX);
        let mut list = out.array();
        for number in from.max(1)..=to {
            if left == 0 {
                break;
            }
            bounds.check()?;
            let replay = self.stored_block(number)?;
            if replay.txs.is_empty() && block_reward(replay.spec(self)).is_zero() {
                continue;
            }
            self.parity_block(&replay, bounds, |trace| {
                if left == 0 || !matcher.matches(&trace.trace) {
                    return Ok(());
                }
                if skip > 0 {
                    skip -= 1;
                    return Ok(());
                }
                left -= 1;
                list.push(out, trace)
            })?;
        }
        list.close(out)
    }

    /// The call trees of `replay`'s transactions in `range`, with their logs, named from the
    /// node's artifacts, each handed to `each` with its position.
    fn named_traces(
        &mut self,
        replay: &ReplayBlock,
        range: RangeInclusive<usize>,
        bounds: Bounds,
        mut each: impl FnMut(usize, CallTraceArena, crate::console::Captured),
    ) -> Result<(), ExecError> {
        let config = TracingInspectorConfig::default_parity().set_record_logs(true);
        let artifacts = Arc::clone(&self.config.show.artifacts);
        // Code is looked up in the block's post-state: a contract the transaction created is
        // there (or named from the create's own output).
        let after = self.db.state_at(replay.header.number);
        self.replay(
            replay,
            range,
            || parity_tracer(config, bounds),
            |step| {
                let mut arena = std::mem::take(step.inspector).into_traces();
                crate::report::decode::decode_arena(&mut arena, &artifacts, |address| {
                    after.code_of(&address).ok().filter(|code| !code.is_empty())
                });
                each(step.index, arena, step.console);
                Ok(())
            },
        )
    }

    /// `--print-traces` for a call: runs `request` again (as eth_call did, at block `block`)
    /// under the tracer and prints its named call tree. The call's answer is already made; a
    /// trace that fails is said, not answered.
    pub(crate) fn print_call_trace(&mut self, request: &CallRequest, block: u64) {
        let budget = TraceBudget { max_bytes: usize::MAX, timeout: None };
        let bounds = Bounds::new(budget, self.config.evm_timeout);
        let config = TracingInspectorConfig::default_parity().set_record_logs(true);
        let artifacts = Arc::clone(&self.config.show.artifacts);
        let before = self.db.state_at(block);
        let calls = [(request.clone(), ())];
        let traced = self.trace_calls(
            block,
            None,
            &calls,
            |_| parity_tracer(config, bounds),
            |step, _| {
                let mut arena = std::mem::take(step.inspector).into_traces();
                crate::report::decode::decode_arena(&mut arena, &artifacts, |address| {
                    before.code_of(&address).ok().filter(|code| !code.is_empty())
                });
                let text = crate::report::decode::arena_text(&arena, false);
                tracing::info!(target: "trace", call = "eth_call", "call tree of an eth_call\n{}", text.trim_end());
                Ok(())
            },
        );
        if let Err(error) = traced {
            tracing::warn!(target: "trace", %error, "the eth_call's call tree was not printed");
        }
    }

    /// Block `number` as stored, ready to replay on its parent's state.
    fn stored_block(&self, number: u64) -> Result<ReplayBlock, ExecError> {
        let header = self.db.header(number)?.ok_or(ExecError::UnknownBlock)?;
        let parent_number = number
            .checked_sub(1)
            .ok_or_else(|| ExecError::Invalid("genesis is not traceable".to_owned()))?;
        let parent = self.db.header(parent_number)?.ok_or(ExecError::UnknownBlock)?;
        let hash = self.db.block_hash(number)?.ok_or(ExecError::UnknownBlock)?;
        let body = self.db.body(number)?.ok_or(ExecError::UnknownBlock)?;
        let txs = body
            .transactions
            .into_iter()
            .zip(body.senders)
            .map(|(tx, sender)| {
                let hash = *tx.tx_hash();
                PooledTx { tx: Arc::new(tx), sender, hash }
            })
            .collect();
        Ok(ReplayBlock { env: self.env_of(&header), header, parent, hash, txs })
    }

    /// A block given whole (debug_traceBlock), its senders recovered, on top of stored block
    /// `parent`.
    fn raw_block(&self, block: Block<TxEnvelope>, parent: u64) -> Result<ReplayBlock, ExecError> {
        let parent = self.db.header(parent)?.ok_or(ExecError::UnknownBlock)?;
        let Block { header, body } = block;
        let mut txs = Vec::with_capacity(body.transactions.len());
        for (index, tx) in body.transactions.into_iter().enumerate() {
            let sender = tx.recover_signer().map_err(|_| {
                ExecError::Invalid(format!("transaction {index}: invalid signature"))
            })?;
            let hash = *tx.tx_hash();
            txs.push(PooledTx { tx: Arc::new(tx), sender, hash });
        }
        let hash = header.hash_slow();
        Ok(ReplayBlock { env: self.env_of(&header), header, parent, hash, txs })
    }

    /// The environment block `header` was built in: its own fields, and its fork's rules when
    /// the chain has a schedule (the executor's configured rules otherwise, as the miner used).
    fn env_of(&self, header: &Header) -> BlockEnvSpec {
        let rules = self.forks.as_ref().map(|forks| forks.rules_for(header));
        // Withdrawals and rewards come after the transactions: a replay never reaches them,
        // so `of_header`'s none are right.
        BlockEnvSpec {
            spec: rules.map(|r| r.spec),
            blob_params: rules.map(|r| r.blob_params),
            ..BlockEnvSpec::of_header(header)
        }
    }

    /// Replays `replay`'s transactions up to the end of `traced` on its parent's state,
    /// running those in `traced` under a fresh inspector from `make` each and handing each one's
    /// outcome to `each` before its changes are committed (so `each` sees the state before it).
    fn replay<T>(
        &mut self,
        replay: &ReplayBlock,
        traced: RangeInclusive<usize>,
        mut make: impl FnMut() -> Result<Guarded<T>, ExecError>,
        mut each: impl FnMut(TracedTx<'_, '_, T>) -> Result<(), ExecError>,
    ) -> Result<(), ExecError>
    where
        T: for<'a> Inspector<MainnetContext<ExecDb<'a>>>,
    {
        if replay.txs.is_empty() || traced.is_empty() {
            return Ok(());
        }
        self.prefetch_upstream(replay, *traced.end())?;
        let (mut evm, setup) = block_evm(
            &self.db,
            &mut self.codes,
            &self.config,
            replay.parent.number,
            &replay.env,
            make()?,
        );
        // A replay runs what the node accepted: a block it packed may hold an impersonated
        // contract's transaction (see `execute_block`), which EIP-3607 would refuse.
        evm.ctx.cfg.disable_eip3607 = true;
        // The replayed block names its parent: no need to hash the parent's header again.
        pre_block_calls(&mut evm, &replay.env, replay.header.parent_hash, setup.spec)?;
        // What the traced transactions send to console.log, for the views that show it (the
        // tap records calls to the console address only; execution is the same).
        evm.precompiles.capture(true);
        let first = *traced.start();
        for (index, pooled) in replay.txs.iter().enumerate().take(traced.end() + 1) {
            let tx = tx_env(pooled);
            if index < first {
                evm.transact_commit(tx).map_err(exec_error)?;
                continue;
            }
            if index > first {
                evm.inspector = make()?;
            }
            // What the transactions before it printed is not its own.
            drop(evm.precompiles.take());
            let result = run_traced(&mut evm, tx.clone())?;
            let console = evm.precompiles.take();
            each(TracedTx {
                index,
                inspector: &mut evm.inspector.0,
                db: &evm.ctx.journaled_state.database,
                block: &evm.ctx.block,
                tx: &tx,
                result: &result,
                console,
            })?;
            evm.commit(result.state);
        }
        Ok(())
    }

    /// For a replay of an upstream block (its parent below a fork's fork block, the state then
    /// read from the upstream as of the parent): fetches the fee recipient and the senders and
    /// recipients of the transactions up to `last` in one upstream batch, which the replay
    /// would otherwise ask for one round trip at a time.
    fn prefetch_upstream(&self, replay: &ReplayBlock, last: usize) -> Result<(), ExecError> {
        let Some(fork) = self.db.fork().filter(|fork| replay.parent.number < fork.block()) else {
            return Ok(());
        };
        use alloy_consensus::Transaction as _;
        let mut addresses = vec![replay.env.coinbase];
        for pooled in replay.txs.iter().take(last + 1) {
            addresses.push(pooled.sender);
            addresses.extend(pooled.tx.to());
        }
        Ok(fork.prefetch_at(replay.parent.number, &addresses)?)
    }

    /// Runs `calls` in order on the state after block `block`, as eth_call runs them (the
    /// first call's state and block overrides apply to all), each under an inspector from
    /// `make` and handed to `each`; each call sees the state the ones before it left.
    fn trace_calls<X, T>(
        &mut self,
        block: u64,
        console: Option<&'static str>,
        calls: &[(CallRequest, X)],
        mut make: impl FnMut(&X) -> Result<Guarded<T>, ExecError>,
        mut each: impl FnMut(TracedTx<'_, '_, T>, SpecId) -> Result<(), ExecError>,
    ) -> Result<(), ExecError>
    where
        T: for<'a> Inspector<MainnetContext<ExecDb<'a>>>,
    {
        let Some((first, first_extra)) = calls.first() else { return Ok(()) };
        let header = self.db.header(block)?.ok_or(ExecError::UnknownBlock)?;
        let spec = self.rules_at(&header).spec;
        let cap = self.call_gas_cap(spec);
        let gas = |request: &CallRequest| request.gas.unwrap_or(cap).min(cap);
        let envs: Vec<_> = calls
            .iter()
            .map(|(request, _)| {
                let (mut cfg, block_env, tx) = self.call_env(request, &header, gas(request));
                cfg.spec = spec;
                (cfg, block_env, tx)
            })
            .collect();
        let mut db = ExecDb::new(self.db.state_at(block), &mut self.codes);
        if let Some(overrides) = &first.state_overrides {
            db.apply_overrides(overrides)?;
        }
        let (cfg, block_env, _) = envs[0].clone();
        let ctx = Context::mainnet().with_db(db).with_cfg(cfg).with_block(block_env);
        let mut evm = evm_over(ctx, make(first_extra)?, FrameStack::new_prealloc(8));
        // Calls print their console output as eth_call does, under the method's name.
        evm.precompiles.capture(console.is_some() && self.config.show.console_log);
        for (index, ((_, extra), (cfg, block_env, tx))) in calls.iter().zip(envs).enumerate() {
            if index > 0 {
                evm.inspector = make(extra)?;
                evm.ctx.cfg = cfg;
                evm.ctx.block = block_env;
            }
            let result = run_traced(&mut evm, tx.clone());
            if let Some(method) = console {
                crate::report::call_printed(&self.config.show, method, evm.precompiles.take());
            }
            let result = result?;
            each(
                TracedTx {
                    index,
                    inspector: &mut evm.inspector.0,
                    db: &evm.ctx.journaled_state.database,
                    block: &evm.ctx.block,
                    tx: &tx,
                    result: &result,
                    console: crate::console::Captured::default(),
                },
                spec,
            )?;
            evm.commit(result.state);
        }
        Ok(())
    }

    /// Before the Merge, trace_block ends with the block's rewards: the miner's (with its share
    /// per ommer) and each ommer's, as parity-style nodes report them.
    fn reward_traces(
        &self,
        replay: &ReplayBlock,
    ) -> Result<Vec<LocalizedTransactionTrace>, ExecError> {
        let reward = block_reward(replay.spec(self));
        if reward.is_zero() {
            return Ok(Vec::new());
        }
        let number = replay.header.number;
        let ommers = self.db.extras(number)?.ommers;
        let trace = |author, reward_type, value| LocalizedTransactionTrace {
            trace: TransactionTrace {
                action: Action::Reward(RewardAction { author, reward_type, value }),
                error: None,
                result: None,
                subtraces: 0,
                trace_address: Vec::new(),
            },
            block_hash: Some(replay.hash),
            block_number: Some(number),
            transaction_hash: None,
            transaction_position: None,
        };
        let per_ommer = reward / U256::from(32);
        let mut traces = vec![trace(
            replay.header.beneficiary,
            RewardType::Block,
            reward + per_ommer * U256::from(ommers.len()),
        )];
        for ommer in &ommers {
            let depth = number.saturating_sub(ommer.number);
            let share = reward * U256::from(8u64.saturating_sub(depth)) / U256::from(8);
            traces.push(trace(ommer.beneficiary, RewardType::Uncle, share));
        }
        Ok(traces)
    }
}

/// Runs one transaction under the guarded inspector, turning what the guard saw into errors.
fn run_traced<T>(evm: &mut BlockEvm<'_, Guarded<T>>, tx: TxEnv) -> Result<ResultAndState, ExecError>
where
    T: for<'a> Inspector<MainnetContext<ExecDb<'a>>>,
{
    let result = evm.inspect_tx(tx).map_err(exec_error);
    evm.inspector.1.outcome()?;
    result
}

/// A block to replay: its header and environment, its parent, its transactions.
#[derive(Debug)]
struct ReplayBlock {
    header: Header,
    hash: B256,
    parent: Header,
    env: BlockEnvSpec,
    txs: Vec<PooledTx>,
}

impl ReplayBlock {
    /// Every transaction.
    fn all(&self) -> RangeInclusive<usize> {
        // An empty block replays nothing (`replay` checks).
        0..=self.txs.len().saturating_sub(1)
    }

    fn spec(&self, executor: &ExecutorActor) -> SpecId {
        self.env.spec.unwrap_or(executor.config.spec)
    }

    /// What geth's tracers know of transaction `index`.
    fn context(&self, index: usize) -> TransactionContext {
        TransactionContext::default()
            .with_block_hash(self.hash)
            .with_tx_index(index)
            .with_tx_hash(self.txs[index].hash)
    }

    /// What parity's traces say of transaction `index`.
    fn info(&self, index: usize) -> TransactionInfo {
        TransactionInfo {
            hash: Some(self.txs[index].hash),
            index: Some(index as u64),
            block_hash: Some(self.hash),
            block_number: Some(self.header.number),
            base_fee: self.header.base_fee_per_gas,
            ..Default::default()
        }
    }
}

fn check_index(replay: &ReplayBlock, index: usize) -> Result<(), ExecError> {
    if index < replay.txs.len() {
        Ok(())
    } else {
        Err(ExecError::Invalid(format!(
            "transaction index {index} out of range: block {} has {} transactions",
            replay.header.number,
            replay.txs.len()
        )))
    }
}

/// One traced transaction (or call) as a job sees it: after it ran, before its changes are
/// committed.
struct TracedTx<'e, 'db, T> {
    /// Its position in the block (or among the calls).
    index: usize,
    /// The tracer that watched it.
    inspector: &'e mut T,
    /// The state before it.
    db: &'e ExecDb<'db>,
    /// The block environment it ran in.
    block: &'e BlockEnv,
    /// The transaction.
    tx: &'e TxEnv,
    /// What it did.
    result: &'e ResultAndState,
    /// What it sent to console.log (empty for calls, which print as eth_call does instead).
    console: crate::console::Captured,
}

// ---- geth ------------------------------------------------------------------------------------

/// Makes geth tracers for one request: the tracer its options name, under the request's guard.
struct GethTracer<'o> {
    options: &'o GethDebugTracingOptions,
    bounds: Bounds,
    /// For the struct logger: what bounds the size of its answer.
    size: Option<SizeBound>,
}

impl<'o> GethTracer<'o> {
    fn new(
        options: &'o GethDebugTracingOptions,
        budget: TraceBudget,
        bounds: Bounds,
    ) -> Result<Self, ExecError> {
        let tracer = Self { options, bounds, size: None };
        // Build one now, so that a bad configuration fails before anything is replayed.
        let size = match tracer.inspector()? {
            DebugInspector::Default(_, config) => Some(SizeBound::struct_logs(&config, budget)),
            _ => None,
        };
        Ok(Self { size, ..tracer })
    }

    fn inspector(&self) -> Result<DebugInspector, ExecError> {
        DebugInspector::new(self.options.clone()).map_err(tracer_error)
    }

    fn make(&self) -> Result<Guarded<DebugInspector>, ExecError> {
        Ok((self.inspector()?, TraceGuard::new(self.bounds, self.size)))
    }
}

/// Why revm-inspectors would not build a tracer, in words that say what to change.
fn tracer_error(error: DebugInspectorError) -> ExecError {
    match error {
        DebugInspectorError::InvalidTracerConfig => {
            ExecError::Tracer("invalid tracerConfig for this tracer".to_owned())
        }
        DebugInspectorError::UnsupportedTracer => {
            ExecError::Tracer("unsupported tracer".to_owned())
        }
        DebugInspectorError::JsTracerNotEnabled => ExecError::Tracer(
            "JavaScript tracers are not supported; use a built-in tracer".to_owned(),
        ),
        DebugInspectorError::MuxInspector(e) => ExecError::Tracer(format!("muxTracer: {e}")),
        DebugInspectorError::Database(never) => match never {},
    }
}

/// Writes one transaction's geth trace: struct logs streamed, any other tracer's frame as
/// revm-inspectors builds it.
fn write_geth(
    out: &mut JsonOut,
    step: TracedTx<'_, '_, DebugInspector>,
    context: Option<TransactionContext>,
    spec: SpecId,
) -> Result<(), ExecError> {
    let TracedTx { inspector, db, block, tx, result, .. } = step;
    if let DebugInspector::Default(tracing, config) = inspector {
        return write_struct_logs(out, tracing.traces().nodes(), config, &result.result, spec);
    }
    let mut db = db;
    let trace = inspector.get_result(context, tx, block, result, &mut db).map_err(|e| match e {
        DebugInspectorError::Database(e) => ExecError::Storage(e),
        other => ExecError::Tracer(other.to_string()),
    })?;
    out.value(&trace)
}

/// Writes geth's default frame (`gas`, `failed`, `returnValue`, `structLogs`) for the steps
/// recorded in `nodes`, one struct log at a time. The logs are those revm-inspectors'
/// `GethTraceBuilder::geth_traces` would collect (same order, same values, same storage
/// snapshots; a test holds the two equal) in geth's JSON (see [`struct_log`]), but each is
/// encoded and dropped before the next.
fn write_struct_logs(
    out: &mut JsonOut,
    nodes: &[CallTraceNode],
    config: &GethDefaultTracingOptions,
    result: &ExecutionResult<HaltReason>,
    spec: SpecId,
) -> Result<(), ExecError> {
    let mut frame = DefaultFrame {
        failed: !nodes.first().is_some_and(|root| root.trace.success),
        gas: result.tx_gas_used(),
        return_value: result.output().cloned().unwrap_or_default(),
        ..Default::default()
    };
    if spec.is_enabled_in(SpecId::AMSTERDAM) {
        let gas = result.gas();
        frame.execution_gas_used = Some(gas.block_regular_gas_used());
        frame.state_gas_used = Some(gas.block_state_gas_used());
        frame.gas_refund = Some(gas.final_refunded());
    }
    let head = serde_json::to_vec(&frame).map_err(|e| ExecError::Encode(e.to_string()))?;
    // The frame with no logs ends with `"structLogs":[]}`: the logs go between the brackets.
    let open = head.strip_suffix(b"]}").ok_or_else(|| {
        ExecError::Encode("the default frame does not end with structLogs".into())
    })?;
    out.raw(open)?;
    if !nodes.is_empty() {
        write_steps(out, nodes, config)?;
    }
    out.raw(b"]}")
}

/// The struct logs of `nodes` in execution order, comma-separated: each call's steps, with a
/// child call's steps right after the step that made it.
fn write_steps(
    out: &mut JsonOut,
    nodes: &[CallTraceNode],
    config: &GethDefaultTracingOptions,
) -> Result<(), ExecError> {
    let limit = config.limit.filter(|limit| *limit != 0);
    let storage_enabled = config.is_storage_enabled();
    let mut storage: HashMap<Address, BTreeMap<B256, B256>> = HashMap::new();
    let mut written = 0u64;
    // (node, its next step, its next child): the calls entered and not finished.
    let mut open: Vec<(usize, usize, usize)> = vec![(0, 0, 0)];
    while let Some(top) = open.last_mut() {
        if limit.is_some_and(|limit| written >= limit) {
            break;
        }
        let node = &nodes[top.0];
        let Some(step) = node.trace.steps.get(top.1) else {
            open.pop();
            continue;
        };
        top.1 += 1;
        // A call opcode can fail before its child is recorded (out of gas): children are
        // matched to call steps in order, and run out first then.
        let child = if is_call_like(step) {
            let child = node.children.get(top.2).copied();
            top.2 += 1;
            child
        } else {
            None
        };
        let mut log = struct_log(step, config, node.trace.depth as u64 + 1);
        let op = step.op.get();
        if storage_enabled
            && (step.storage_change.is_some() || matches!(op, opcode::SLOAD | opcode::SSTORE))
        {
            let slots = storage.entry(node.execution_address()).or_default();
            if let Some(change) = &step.storage_change {
                slots.insert(change.key.into(), change.value.into());
            }
            if matches!(op, opcode::SLOAD | opcode::SSTORE) {
                log.storage = Some(slots.clone());
            }
        }
        // geth leaves out empty return data.
        if config.is_return_data_enabled() && !step.returndata.is_empty() {
            log.return_data = Some(step.returndata.clone());
        }
        if written > 0 {
            out.raw(b",")?;
        }
        out.value(&log)?;
        written += 1;
        if let Some(child) = child {
            open.push((child, 0, 0));
        }
    }
    Ok(())
}

fn is_call_like(step: &CallTraceStep) -> bool {
    matches!(
        step.op.get(),
        opcode::CALL
            | opcode::DELEGATECALL
            | opcode::STATICCALL
            | opcode::CREATE
            | opcode::CALLCODE
            | opcode::CREATE2
    )
}

/// One step as geth's struct log: revm-inspectors' conversion (storage and return data are
/// the caller's), with geth's JSON rules on top: `refund` only when not zero, `memory` only
/// when there is some, and an error in geth's words (revm-inspectors prints the status's
/// debug form, `Some(OutOfGas)`).
fn struct_log(step: &CallTraceStep, config: &GethDefaultTracingOptions, depth: u64) -> StructLog {
    StructLog {
        depth,
        error: step.status.filter(|status| status.is_halt()).map(|status| geth_error(status, step)),
        gas: step.gas_remaining,
        gas_cost: step.gas_cost,
        state_gas_cost: step.state_gas_cost,
        state_gas_reservoir: step.state_gas_reservoir,
        op: if step.op.is_valid() { step.op.as_str().into() } else { "Unknown".into() },
        pc: step.pc as u64,
        refund_counter: (step.gas_refund_counter != 0).then_some(step.gas_refund_counter),
        stack: config
            .is_stack_enabled()
            .then(|| step.stack.as_ref().map(|stack| stack.to_vec()))
            .flatten(),
        memory: config
            .is_memory_enabled()
            .then(|| step.memory.as_ref().filter(|m| !m.is_empty()).map(|m| m.memory_chunks()))
            .flatten(),
        ..Default::default()
    }
}

/// geth's error text for a step that halted (core/vm/errors.go).
fn geth_error(status: InstructionResult, step: &CallTraceStep) -> String {
    use InstructionResult as R;
    match status {
        R::OutOfGas
        | R::MemoryOOG
        | R::MemoryLimitOOG
        | R::PrecompileOOG
        | R::InvalidOperandOOG
        | R::ReentrancySentryOOG => "out of gas".to_owned(),
        R::OpcodeNotFound | R::InvalidFEOpcode | R::NotActivated => {
            if step.op.is_valid() {
                format!("invalid opcode: {}", step.op.as_str())
            } else {
                format!("invalid opcode: opcode {:#x} not defined", step.op.get())
            }
        }
        R::InvalidJump => "invalid jump destination".to_owned(),
        R::CallNotAllowedInsideStatic | R::StateChangeDuringStaticCall => {
            "write protection".to_owned()
        }
        R::StackUnderflow => match &step.stack {
            Some(stack) => {
                format!("stack underflow ({} <=> {})", stack.len(), step.op.inputs())
            }
            None => "stack underflow".to_owned(),
        },
        R::StackOverflow => "stack limit reached 1024".to_owned(),
        R::OutOfOffset => "return data out of bounds".to_owned(),
        R::CreateCollision => "contract address collision".to_owned(),
        R::OverflowPayment => "gas uint64 overflow".to_owned(),
        R::NonceOverflow => "nonce uint64 overflow".to_owned(),
        R::CreateContractSizeLimit => "max code size exceeded".to_owned(),
        R::CreateContractStartingWithEF => "invalid code: must not begin with 0xef".to_owned(),
        R::CreateInitCodeSizeLimit => "max initcode size exceeded".to_owned(),
        other => format!("{other:?}"),
    }
}

// ---- parity ----------------------------------------------------------------------------------

fn parity_tracer(
    config: TracingInspectorConfig,
    bounds: Bounds,
) -> Result<Guarded<TracingInspector>, ExecError> {
    // vmTrace records every step; its answer is at least `MIN_VM_OP_BYTES` a step.
    let size = config.record_steps.then_some(SizeBound {
        per_step: MIN_VM_OP_BYTES,
        stack: false,
        memory: false,
        limit: u64::MAX,
        max: bounds.max_bytes,
    });
    Ok((TracingInspector::new(config), TraceGuard::new(bounds, size)))
}

/// The flat traces of one transaction (trace_transaction, trace_block, trace_filter).
fn localized(
    step: TracedTx<'_, '_, TracingInspector>,
    info: TransactionInfo,
) -> Vec<LocalizedTransactionTrace> {
    std::mem::take(step.inspector).into_parity_builder().into_localized_transaction_traces(info)
}

/// The `trace` / `stateDiff` / `vmTrace` results of one transaction or call.
fn trace_results(
    step: TracedTx<'_, '_, TracingInspector>,
    types: &TraceTypes,
) -> Result<TraceResults, ExecError> {
    std::mem::take(step.inspector)
        .into_parity_builder()
        .into_trace_results_with_state(step.result, types, step.db)
        .map_err(ExecError::Storage)
}

// ---- bounds ----------------------------------------------------------------------------------

/// A tracer and the guard it runs under.
type Guarded<T> = (T, TraceGuard);

/// The bounds of one trace request (its deadline and the response cap), shared by every
/// transaction it traces.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    /// When the request's time is up (`None`: no cap).
    at: Option<Instant>,
    /// The error for that: a tracer's `timeout`, or the EVM time cap.
    timeout_ms: u64,
    /// Whether the limit is a tracer's `timeout` (rather than `--rpc.evm-timeout`).
    tracer_timeout: bool,
    /// The response cap.
    max_bytes: usize,
}

impl Bounds {
    fn new(budget: TraceBudget, evm_timeout: Option<std::time::Duration>) -> Self {
        let timeout = budget.timeout.or(evm_timeout);
        Self {
            at: timeout.map(|t| Instant::now() + t),
            timeout_ms: timeout.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            tracer_timeout: budget.timeout.is_some(),
            max_bytes: budget.max_bytes,
        }
    }

    fn expired_error(&self) -> ExecError {
        if self.tracer_timeout {
            ExecError::TraceTimeout { timeout_ms: self.timeout_ms }
        } else {
            ExecError::Timeout { timeout_ms: self.timeout_ms }
        }
    }

    /// Fails once the time is up (checked between blocks of a range).
    fn check(&self) -> Result<(), ExecError> {
        match self.at {
            Some(at) if Instant::now() >= at => Err(self.expired_error()),
            _ => Ok(()),
        }
    }
}

/// A lower bound of an opcode trace's encoded size, kept as it records.
#[derive(Debug, Clone, Copy)]
struct SizeBound {
    /// The fewest bytes a step encodes to without its stack and memory.
    per_step: usize,
    /// Whether each step carries the stack.
    stack: bool,
    /// Whether each step carries the memory.
    memory: bool,
    /// Steps after this many are not in the answer (a struct-log `limit`).
    limit: u64,
    /// The response cap.
    max: usize,
}

impl SizeBound {
    fn struct_logs(config: &GethDefaultTracingOptions, budget: TraceBudget) -> Self {
        Self {
            per_step: MIN_STRUCT_LOG_BYTES,
            stack: config.is_stack_enabled(),
            memory: config.is_memory_enabled(),
            limit: config.limit.filter(|l| *l != 0).unwrap_or(u64::MAX),
            max: budget.max_bytes,
        }
    }
}

/// Runs beside a tracer and stops the execution it watches once the request's time is up,
/// or once the steps recorded so far make an answer of at least the response cap: revm has
/// no clock of its own, and a tracer records every step it is shown. Halting makes every frame
/// fail at once; the request then fails with the reason (`outcome`).
#[derive(Debug)]
struct TraceGuard {
    bounds: Bounds,
    steps: u32,
    expired: bool,
    size: Option<SizeBound>,
    /// Steps counted against `size` and the bytes they make at least.
    counted: u64,
    bytes: usize,
    too_large: bool,
}

impl TraceGuard {
    fn new(bounds: Bounds, size: Option<SizeBound>) -> Self {
        Self { bounds, steps: 0, expired: false, size, counted: 0, bytes: 0, too_large: false }
    }

    /// The error the execution was stopped with, if it was.
    fn outcome(&self) -> Result<(), ExecError> {
        if self.expired {
            return Err(self.bounds.expired_error());
        }
        if self.too_large {
            return Err(ExecError::TraceTooLarge { max_bytes: self.bounds.max_bytes });
        }
        Ok(())
    }
}

impl<CTX> Inspector<CTX> for TraceGuard {
    fn step(&mut self, interp: &mut Interpreter, _context: &mut CTX) {
        if let Some(at) = self.bounds.at {
            self.steps = self.steps.wrapping_add(1);
            if !self.expired && self.steps.is_multiple_of(CHECK_EVERY) && Instant::now() >= at {
                self.expired = true;
            }
        }
        if let Some(size) = &self.size
            && !self.too_large
            && self.counted < size.limit
        {
            self.counted += 1;
            let mut bytes = size.per_step;
            if size.stack {
                // `,"stack":[]` and at least `"0x0",` per word.
                bytes += 11 + 6 * interp.stack.len();
            }
            if size.memory {
                // `,"memory":[]` and a quoted 64-digit chunk and a comma per word.
                bytes += 12 + 69 * interp.memory.len().div_ceil(32);
            }
            self.bytes = self.bytes.saturating_add(bytes);
            self.too_large = self.bytes >= size.max;
        }
        if self.expired || self.too_large {
            interp.halt(InstructionResult::OutOfGas);
        }
    }
}

// ---- output ----------------------------------------------------------------------------------

/// A JSON answer written into one buffer, refused as soon as it reaches the response cap.
#[derive(Debug)]
struct JsonOut {
    buf: Vec<u8>,
    max: usize,
}

impl JsonOut {
    fn new(max: usize) -> Self {
        Self { buf: Vec::new(), max }
    }

    fn raw(&mut self, text: &[u8]) -> Result<(), ExecError> {
        self.buf.extend_from_slice(text);
        self.check()
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ExecError> {
        serde_json::to_writer(&mut self.buf, value)
            .map_err(|e| ExecError::Encode(e.to_string()))?;
        self.check()
    }

    fn check(&self) -> Result<(), ExecError> {
        if self.buf.len() >= self.max {
            return Err(ExecError::TraceTooLarge { max_bytes: self.max });
        }
        Ok(())
    }

    /// Starts a JSON array.
    fn array(&mut self) -> JsonArray {
        JsonArray { items: 0 }
    }
}

/// A JSON array being written into a [`JsonOut`].
#[derive(Debug)]
struct JsonArray {
    items: usize,
}

impl JsonArray {
    /// Opens the next item (writes `[` or `,`); the caller writes the item.
    fn item(&mut self, out: &mut JsonOut) -> Result<(), ExecError> {
        self.items += 1;
        out.raw(if self.items == 1 { b"[" } else { b"," })
    }

    fn push<T: Serialize + ?Sized>(
        &mut self,
        out: &mut JsonOut,
        value: &T,
    ) -> Result<(), ExecError> {
        self.item(out)?;
        out.value(value)
    }

    fn close(self, out: &mut JsonOut) -> Result<(), ExecError> {
        out.raw(if self.items == 0 { b"[]" } else { b"]" })
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Bytes, TxKind, address, hex};
    use revm::MainBuilder;
    use revm::database::{CacheDB, EmptyDB};
    use std::time::Duration;

    use revm::state::{AccountInfo, Bytecode};
    use serde_json::Value;

    use super::*;

    const CALLEE: Address = address!("00000000000000000000000000000000000000c1");
    const NESTER: Address = address!("00000000000000000000000000000000000000a1");

    /// Runs the nester (an SLOAD, a CALL that stores and logs, a STATICCALL that halts on its
    /// SSTORE, memory and return data all along) under a struct logger with `config`.
    fn traced(config: &GethDefaultTracingOptions) -> (TracingInspector, ExecutionResult) {
        let callee = "600035 80600055 80600052 8060206000a1 600101 600052 60206000f3";
        let nester = "60005450 602a600052 60206000602060006000600035 5af150 \
                      602060206020600060003561 2710fa50 60206000f3";
        let mut db = CacheDB::new(EmptyDB::default());
        for (address, code) in [(CALLEE, callee), (NESTER, nester)] {
            let code = Bytecode::new_raw(hex::decode(code.replace(' ', "")).expect("hex").into());
            db.insert_account_info(address, AccountInfo::default().with_code(code));
        }
        let mut calldata = [0u8; 32];
        calldata[12..].copy_from_slice(CALLEE.as_slice());
        let tx = TxEnv {
            caller: Address::repeat_byte(0xee),
            kind: TxKind::Call(NESTER),
            data: Bytes::from(calldata.to_vec()),
            gas_limit: 1_000_000,
            ..Default::default()
        };
        let inspector = TracingInspector::new(TracingInspectorConfig::from_geth_config(config));
        let mut evm = Context::mainnet().with_db(db).build_mainnet_with_inspector(inspector);
        let result = evm.inspect_tx(tx).expect("runs").result;
        (evm.inspector, result)
    }

    /// revm-inspectors' struct logs in geth's JSON: the rules `struct_log` adds.
    fn as_geth(mut log: Value) -> Value {
        let object = log.as_object_mut().expect("a struct log");
        for (key, empty) in [("refund", Value::from(0)), ("returnData", "0x".into())] {
            if object.get(key) == Some(&empty) {
                object.remove(key);
            }
        }
        if object.get("memory").is_some_and(|m| m.as_array().is_some_and(Vec::is_empty)) {
            object.remove("memory");
        }
        log
    }

    #[test]
    fn streamed_struct_logs_equal_the_builders() {
        let configs = [
            GethDefaultTracingOptions::default(),
            GethDefaultTracingOptions::default().enable_memory().enable_return_data(),
            GethDefaultTracingOptions::default().disable_stack().disable_storage(),
            GethDefaultTracingOptions::default().with_limit(7),
        ];
        for config in configs {
            let (inspector, result) = traced(&config);
            let mut out = JsonOut::new(usize::MAX);
            write_struct_logs(
                &mut out,
                inspector.traces().nodes(),
                &config,
                &result,
                SpecId::PRAGUE,
            )
            .expect("fits");
            let ours: Value = serde_json::from_slice(&out.buf).expect("JSON");
            let frame = inspector.geth_builder().geth_traces(
                result.tx_gas_used(),
                result.output().cloned().unwrap_or_default(),
                config,
            );
            let mut theirs = serde_json::to_value(&frame).expect("encodes");
            let logs = theirs["structLogs"].take();
            let logs: Vec<Value> =
                logs.as_array().expect("logs").iter().cloned().map(as_geth).collect();
            let mut ours_logs = ours["structLogs"].as_array().expect("logs").clone();
            assert_eq!(ours_logs.len(), logs.len(), "{config:?}");
            // Errors are in geth's words here, the status's debug form there: same steps.
            for (mine, theirs) in ours_logs.iter_mut().zip(&logs) {
                assert_eq!(mine.get("error").is_some(), theirs.get("error").is_some());
                if let (Some(mine), Some(theirs)) = (mine.get_mut("error"), theirs.get("error")) {
                    assert_eq!(
                        (mine.as_str(), theirs.as_str()),
                        (Some("write protection"), Some("Some(StateChangeDuringStaticCall)"))
                    );
                    *mine = theirs.clone();
                }
            }
            assert_eq!(ours_logs, logs, "{config:?}");
            theirs["structLogs"] = Value::Null;
            let mut ours = ours;
            ours["structLogs"] = Value::Null;
            assert_eq!(ours, theirs, "the frame's other fields");
            if config.limit.is_none() {
                assert!(
                    logs.iter().any(|l| l["depth"] == 2)
                        && logs.iter().any(|l| l.get("error").is_some())
                );
            }
        }
    }

    /// Runs an endless loop (JUMPDEST, PUSH1 0, JUMP) with a million gas under a struct
    /// logger and `guard`; returns the guard's verdict and the steps the logger recorded.
    fn guarded_loop(guard: TraceGuard) -> (Result<(), ExecError>, usize) {
        let looping = Address::repeat_byte(0x10);
        let mut db = CacheDB::new(EmptyDB::default());
        let code = Bytecode::new_raw(Bytes::from_static(&[0x5b, 0x60, 0x00, 0x56]));
        db.insert_account_info(looping, AccountInfo::default().with_code(code));
        let config = GethDefaultTracingOptions::default();
        let tracer = TracingInspector::new(TracingInspectorConfig::from_geth_config(&config));
        let mut evm = Context::mainnet().with_db(db).build_mainnet_with_inspector((tracer, guard));
        let tx = TxEnv { kind: TxKind::Call(looping), gas_limit: 1_000_000, ..Default::default() };
        evm.inspect_tx(tx).expect("runs");
        let steps = evm.inspector.0.traces().nodes().iter().map(|n| n.trace.steps.len()).sum();
        (evm.inspector.1.outcome(), steps)
    }

    #[test]
    fn the_guard_stops_a_trace_that_cannot_fit_or_runs_too_long() {
        // Unguarded, the loop runs until its gas is gone: 81,583 rounds of 3 steps (12 gas) in
        // the 979,000 gas after the intrinsic cost, then a last round whose JUMP runs out.
        let budget = TraceBudget { max_bytes: usize::MAX, timeout: None };
        let (outcome, steps) = guarded_loop(TraceGuard::new(Bounds::new(budget, None), None));
        assert!(outcome.is_ok());
        assert_eq!(steps, 81_583 * 3 + 3);

        // 10 kB of struct logs is ~120 steps of this loop: stopped there, not at the end.
        let budget = TraceBudget { max_bytes: 10_000, timeout: None };
        let size = SizeBound::struct_logs(&GethDefaultTracingOptions::default(), budget);
        let (outcome, steps) = guarded_loop(TraceGuard::new(Bounds::new(budget, None), Some(size)));
        assert!(matches!(outcome, Err(ExecError::TraceTooLarge { max_bytes: 10_000 })));
        assert!((100..200).contains(&steps), "{steps} steps recorded");

        // A timeout already past stops the loop at the first look at the clock.
        let budget = TraceBudget { max_bytes: usize::MAX, timeout: Some(Duration::ZERO) };
        let (outcome, steps) = guarded_loop(TraceGuard::new(Bounds::new(budget, None), None));
        assert!(matches!(outcome, Err(ExecError::TraceTimeout { timeout_ms: 0 })));
        assert_eq!(steps, CHECK_EVERY as usize);
    }

    #[test]
    fn answers_stop_at_the_cap() {
        let mut out = JsonOut::new(10);
        let mut list = out.array();
        list.push(&mut out, "abc").expect("fits");
        let err = list.push(&mut out, "defgh").expect_err("over");
        assert!(matches!(err, ExecError::TraceTooLarge { max_bytes: 10 }));
        let mut out = JsonOut::new(100);
        out.array().close(&mut out).expect("fits");
        assert_eq!(out.buf, b"[]");
    }
}
