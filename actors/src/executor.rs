//! `ExecutorActor`: one revm executor thread of the pool.
//!
//! Owns: a per-thread L1 of analysed code (in front of the shared `CodeCacheActor`) and a
//! read handle to the store. Handles `Call`, `EstimateGas` and `BuildBlock`. Sends `GetCode` /
//! `InsertCode` to the L2. Runs on a `SyncArbiter` (N OS threads); its queue has no bound of
//! its own, so every sender goes through `ExecutorClient`, which holds the admission bound.
//! Restart: stateless apart from caches; `SyncArbiter` rebuilds a thread's actor if it stops.

use alloy_consensus::{Header, Transaction};
use alloy_eips::Typed2718;
use alloy_primitives::{Address, B256, TxKind, U256};
use hearth_messages::ExecError;
use hearth_messages::executor::{
    BlockOverrides, BuildBlock, BuiltBlock, Call, CallOutcome, CallRequest, EstimateGas,
    EstimateOutcome, PooledTx,
};
use hearth_storage::ChainDb;
use revm::context::result::{EVMError, ExecutionResult, HaltReason, Output};
use revm::context::{BlockEnv, CfgEnv, Context, TxEnv};
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::either::Either;
use revm::primitives::eip4844::BLOB_BASE_FEE_UPDATE_FRACTION_PRAGUE;
use revm::primitives::hardfork::SpecId;
use revm::{ExecuteEvm, InspectEvm, MainBuilder, MainContext};

use crate::code_cache::{CodeL1, CodeL2};
use crate::exec_db::ExecDb;

/// Gas of a plain value transfer.
const TRANSFER_GAS: u64 = 21_000;

/// What every executor thread is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecConfig {
    /// The chain id transactions must carry.
    pub chain_id: u64,
    /// The hard fork rules.
    pub spec: SpecId,
    /// The most gas an eth_call / eth_estimateGas may use.
    pub gas_cap: u64,
    /// The longest an eth_call / eth_estimateGas run may take (`None`: no cap).
    pub evm_timeout: Option<std::time::Duration>,
}

/// EIP-7825: the gas limit cap of a transaction from Osaka on (2^24).
const OSAKA_TX_GAS_LIMIT_CAP: u64 = 1 << 24;

/// One executor thread.
#[derive(Debug)]
pub struct ExecutorActor {
    db: ChainDb,
    config: ExecConfig,
    codes: CodeL1,
    /// Snapshot reads of calls, keyed by state root (see `ReadCache`).
    reads: crate::exec_db::ReadCache,
}

impl ExecutorActor {
    /// An executor reading `db`, sharing analysed code through `l2` when given.
    pub fn new(db: ChainDb, config: ExecConfig, l2: Option<CodeL2>) -> Self {
        Self { db, config, codes: CodeL1::new(l2), reads: Default::default() }
    }

    /// The most gas a call may use: `--rpc.gascap`, and from Osaka no more than a transaction
    /// may carry (EIP-7825), as geth does, since revm rejects a call above that cap.
    fn call_gas_cap(&self) -> u64 {
        if self.config.spec.is_enabled_in(SpecId::OSAKA) {
            self.config.gas_cap.min(OSAKA_TX_GAS_LIMIT_CAP)
        } else {
            self.config.gas_cap
        }
    }

    fn cfg(&self) -> CfgEnv {
        let mut cfg = CfgEnv::new_with_spec(self.config.spec);
        cfg.chain_id = self.config.chain_id;
        cfg
    }

    /// Runs `request` with `gas` against the post-state of `block`, without committing.
    fn run_call(
        &mut self,
        request: &CallRequest,
        block: u64,
        gas: u64,
    ) -> Result<ExecutionResult, ExecError> {
        let header = self.db.header(block)?.ok_or(ExecError::UnknownBlock)?;
        let mut cfg = self.cfg();
        // eth_call semantics, as geth: no fee unless a price is given, no nonce check unless a
        // nonce is given, calls may come from contract addresses, and the gas cap (not the
        // block's gas limit) bounds the call.
        let priced = request.gas_price.is_some() || request.max_fee_per_gas.is_some();
        cfg.disable_base_fee = !priced;
        cfg.disable_nonce_check = request.nonce.is_none();
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_chain_id_check = false;
        let tx = call_tx_env(request, gas, self.config.chain_id);
        let view = self.db.state_at(block);
        let root = self.db.state_root_at(block)?.ok_or(ExecError::UnknownBlock)?;
        self.reads.use_root(root);
        let mut db = ExecDb::new(view, &mut self.codes).with_read_cache(&mut self.reads);
        if let Some(overrides) = &request.state_overrides {
            db.apply_overrides(overrides)?;
        }
        let mut block_env = block_env_of(&header);
        if !priced {
            // geth runs an unpriced call with a zero base fee, so BASEFEE reads 0 there.
            block_env.basefee = 0;
        }
        if let Some(o) = &request.block_overrides {
            apply_block_overrides(&mut block_env, o);
        }
        let Some(timeout) = self.config.evm_timeout else {
            let mut evm =
                Context::mainnet().with_db(db).with_cfg(cfg).with_block(block_env).build_mainnet();
            return evm.transact(tx).map(|r| r.result).map_err(exec_error);
        };
        let mut evm = Context::mainnet()
            .with_db(db)
            .with_cfg(cfg)
            .with_block(block_env)
            .build_mainnet_with_inspector(Deadline::new(timeout));
        let result = evm.inspect_tx(tx).map(|r| r.result).map_err(exec_error);
        if evm.inspector.expired {
            return Err(ExecError::Timeout { timeout_ms: timeout.as_millis() as u64 });
        }
        result
    }

    fn call(&mut self, msg: Call) -> Result<CallOutcome, ExecError> {
        let cap = self.call_gas_cap();
        let gas = msg.request.gas.unwrap_or(cap).min(cap);
        let result = self.run_call(&msg.request, msg.block, gas)?;
        Ok(outcome(result))
    }

    /// Binary search for the smallest gas limit that succeeds, as geth does.
    fn estimate(&mut self, msg: EstimateGas) -> Result<EstimateOutcome, ExecError> {
        let header = self.db.header(msg.block)?.ok_or(ExecError::UnknownBlock)?;
        let request = &msg.request;
        let mut hi = request.gas.unwrap_or(header.gas_limit).min(self.call_gas_cap());
        // A plain transfer to an account without code always costs exactly 21,000.
        if let Some(to) = request.to
            && request.input.is_empty()
            && request.state_overrides.is_none()
            && self.db.state_at(msg.block).code_of(&to)?.is_empty()
            && hi >= TRANSFER_GAS
        {
            let result = self.run_call(request, msg.block, TRANSFER_GAS)?;
            if result.is_success() {
                return Ok(EstimateOutcome::Gas(TRANSFER_GAS));
            }
        }
        let first = self.run_call(request, msg.block, hi)?;
        if !first.is_success() {
            return Ok(EstimateOutcome::Failed(outcome(first)));
        }
        let used = first.tx_gas_used();
        let mut lo = used.saturating_sub(1);
        // Most calls succeed with what they used plus the 63/64 reserve: try that first.
        let optimistic = (used + 2_300) * 64 / 63;
        if optimistic < hi {
            if self.run_call(request, msg.block, optimistic)?.is_success() {
                hi = optimistic;
            } else {
                lo = optimistic;
            }
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if self.run_call(request, msg.block, mid)?.is_success() {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(EstimateOutcome::Gas(hi))
    }

    /// Executes a block on top of its parent: the miner's candidates (`BuildMode::Pack`) or a
    /// given block being imported (`BuildMode::Import`). Public so that block import and the
    /// conformance runners execute through exactly this path without an actor system.
    pub fn build_block(&mut self, msg: BuildBlock) -> Result<BuiltBlock, ExecError> {
        crate::block_exec::execute_block(&self.db, &mut self.codes, &self.config, msg)
    }
}

impl actix::Actor for ExecutorActor {
    type Context = actix::SyncContext<Self>;
}

impl actix::Handler<Call> for ExecutorActor {
    type Result = Result<CallOutcome, ExecError>;

    fn handle(&mut self, msg: Call, _ctx: &mut Self::Context) -> Self::Result {
        self.call(msg)
    }
}

impl actix::Handler<EstimateGas> for ExecutorActor {
    type Result = Result<EstimateOutcome, ExecError>;

    fn handle(&mut self, msg: EstimateGas, _ctx: &mut Self::Context) -> Self::Result {
        self.estimate(msg)
    }
}

impl actix::Handler<BuildBlock> for ExecutorActor {
    type Result = Result<BuiltBlock, ExecError>;

    fn handle(&mut self, msg: BuildBlock, _ctx: &mut Self::Context) -> Self::Result {
        self.build_block(msg)
    }
}

pub(crate) fn exec_error(error: EVMError<hearth_storage::StorageError>) -> ExecError {
    match error {
        EVMError::Database(e) => ExecError::Storage(e),
        EVMError::Transaction(e) => ExecError::Invalid(e.to_string()),
        other => ExecError::Invalid(other.to_string()),
    }
}

fn outcome(result: ExecutionResult) -> CallOutcome {
    let gas_used = result.tx_gas_used();
    match result {
        ExecutionResult::Success { output, .. } => {
            let output = match output {
                Output::Call(bytes) | Output::Create(bytes, _) => bytes,
            };
            CallOutcome::Success { output, gas_used }
        }
        ExecutionResult::Revert { output, .. } => CallOutcome::Revert { output, gas_used },
        ExecutionResult::Halt { reason, .. } => {
            CallOutcome::Halt { reason: halt_message(&reason), gas_used }
        }
    }
}

/// geth's wording for the common halts, so clients that match on messages keep working.
fn halt_message(reason: &HaltReason) -> String {
    match reason {
        HaltReason::OutOfGas(_) => "out of gas".to_owned(),
        HaltReason::OpcodeNotFound | HaltReason::InvalidFEOpcode => "invalid opcode".to_owned(),
        HaltReason::StackUnderflow => "stack underflow".to_owned(),
        HaltReason::StackOverflow => "stack limit reached 1024".to_owned(),
        HaltReason::InvalidJump => "invalid jump destination".to_owned(),
        HaltReason::StateChangeDuringStaticCall => "write protection".to_owned(),
        HaltReason::CallTooDeep => "max call depth exceeded".to_owned(),
        HaltReason::OutOfFunds => "insufficient balance for transfer".to_owned(),
        HaltReason::CreateContractSizeLimit => "max code size exceeded".to_owned(),
        HaltReason::CreateCollision => "contract address collision".to_owned(),
        other => format!("{other:?}"),
    }
}

/// Stops a call that runs past its time cap. revm has no clock of its own, so this inspector
/// looks at the time every `CHECK_EVERY` instructions (an `Instant::now` per instruction would
/// cost more than most instructions); once the cap has passed it halts every frame it sees, so
/// the whole call unwinds at once.
#[derive(Debug)]
struct Deadline {
    at: std::time::Instant,
    steps: u32,
    expired: bool,
}

impl Deadline {
    const CHECK_EVERY: u32 = 4096;

    fn new(timeout: std::time::Duration) -> Self {
        Self { at: std::time::Instant::now() + timeout, steps: 0, expired: false }
    }
}

impl<CTX> revm::Inspector<CTX> for Deadline {
    fn step(&mut self, interp: &mut revm::interpreter::Interpreter, _context: &mut CTX) {
        self.steps = self.steps.wrapping_add(1);
        if !self.expired
            && self.steps.is_multiple_of(Self::CHECK_EVERY)
            && std::time::Instant::now() >= self.at
        {
            self.expired = true;
        }
        if self.expired {
            interp.halt(revm::interpreter::InstructionResult::OutOfGas);
        }
    }
}

/// Applies an eth_call's block overrides to the environment it runs in.
fn apply_block_overrides(env: &mut BlockEnv, o: &BlockOverrides) {
    if let Some(number) = o.number {
        env.number = U256::from(number);
    }
    if let Some(timestamp) = o.timestamp {
        env.timestamp = U256::from(timestamp);
    }
    if let Some(gas_limit) = o.gas_limit {
        env.gas_limit = gas_limit;
    }
    if let Some(base_fee) = o.base_fee {
        env.basefee = base_fee;
    }
    if let Some(coinbase) = o.coinbase {
        env.beneficiary = coinbase;
    }
    if let Some(prevrandao) = o.prevrandao {
        env.prevrandao = Some(prevrandao);
    }
}

/// The block environment a call at block `header` sees: that block's own header.
fn block_env_of(header: &Header) -> BlockEnv {
    BlockEnv {
        number: U256::from(header.number),
        beneficiary: header.beneficiary,
        timestamp: U256::from(header.timestamp),
        gas_limit: header.gas_limit,
        basefee: header.base_fee_per_gas.unwrap_or_default(),
        difficulty: header.difficulty,
        prevrandao: Some(header.mix_hash),
        blob_excess_gas_and_price: Some(BlobExcessGasAndPrice::new(
            header.excess_blob_gas.unwrap_or_default(),
            BLOB_BASE_FEE_UPDATE_FRACTION_PRAGUE,
        )),
        ..Default::default()
    }
}

fn call_tx_env(request: &CallRequest, gas: u64, chain_id: u64) -> TxEnv {
    let (tx_type, gas_price, priority) = match (request.max_fee_per_gas, request.gas_price) {
        (Some(max_fee), _) => (2, max_fee, Some(request.max_priority_fee_per_gas.unwrap_or(0))),
        (None, Some(price)) => (if request.access_list.is_some() { 1 } else { 0 }, price, None),
        (None, None) => (if request.access_list.is_some() { 1 } else { 0 }, 0, None),
    };
    TxEnv {
        tx_type,
        caller: request.from.unwrap_or(Address::ZERO),
        gas_limit: gas,
        gas_price,
        kind: request.to.map_or(TxKind::Create, TxKind::Call),
        value: request.value.unwrap_or_default(),
        data: request.input.clone(),
        nonce: request.nonce.unwrap_or_default(),
        chain_id: Some(chain_id),
        access_list: request.access_list.clone().unwrap_or_default(),
        gas_priority_fee: priority,
        ..Default::default()
    }
}

/// The revm transaction for a signed, pooled transaction.
pub(crate) fn tx_env(pooled: &PooledTx) -> TxEnv {
    let tx = pooled.tx.as_ref();
    TxEnv {
        tx_type: tx.ty(),
        caller: pooled.sender,
        gas_limit: tx.gas_limit(),
        gas_price: tx.max_fee_per_gas(),
        kind: tx.kind(),
        value: tx.value(),
        data: tx.input().clone(),
        nonce: tx.nonce(),
        chain_id: tx.chain_id(),
        access_list: tx.access_list().cloned().unwrap_or_default(),
        gas_priority_fee: tx.max_priority_fee_per_gas(),
        blob_hashes: tx.blob_versioned_hashes().map(<[B256]>::to_vec).unwrap_or_default(),
        max_fee_per_blob_gas: tx.max_fee_per_blob_gas().unwrap_or_default(),
        authorization_list: tx
            .authorization_list()
            .map(|list| list.iter().cloned().map(Either::Left).collect())
            .unwrap_or_default(),
    }
}
