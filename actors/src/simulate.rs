//! eth_simulateV1 on one executor thread: a chain of simulated blocks on top of a stored one.
//!
//! Follows execution-apis and geth (whose answers hive's rpc-compat suite records): the blocks
//! are put in order and gaps in their numbers filled with empty blocks; each block's header
//! starts from its parent (fee recipient, gas limit and difficulty carry over from block to
//! block, the time advances 12 s unless set); state overrides (with `movePrecompileToAddress`)
//! apply before the block's calls; the block runs the chain's block-level rules (EIP-4788 and
//! EIP-2935 system calls, withdrawals, EIP-7685 requests, pre-merge rewards) around its calls;
//! and it is sealed with real roots: the state root over the simulated state (our trie, through
//! `state_root_after`), transactions (the calls as unsigned transactions) and receipts. The
//! state carries from one block to the next in one `ExecDb` overlay; nothing is written.
//!
//! A call that cannot be a transaction here (nonce, fees, funds, intrinsic gas, a block without
//! the gas it asks for) fails the whole request with its -38xxx code; a call that runs and
//! reverts or halts is a result with status 0. Without `validation` the base fee is zero unless
//! overridden and nonces are not checked. The RPC gas cap is a budget the calls share. The EVM
//! time cap (`--rpc.evm-timeout`) bounds the whole request.

use std::time::Instant;

use alloy_consensus::transaction::RlpEcdsaEncodableTx;
use alloy_consensus::{
    Header, Receipt, ReceiptEnvelope, Signed, TxEip1559, TxEip4844, TxEip4844Variant, TxEip7702,
    TxEnvelope, TxLegacy,
};
use alloy_eips::eip1559::INITIAL_BASE_FEE;
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS;
use alloy_eips::eip4788::BEACON_ROOTS_ADDRESS;
use alloy_eips::eip4844::DATA_GAS_PER_BLOB;
use alloy_eips::eip6110::DEPOSIT_REQUEST_TYPE;
use alloy_eips::eip7002::{WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE};
use alloy_eips::eip7251::{CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE};
use alloy_eips::eip7685::Requests;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{
    Address, B256, Bloom, Bytes, Log, LogData, Signature, TxKind, U256, address, b256, keccak256,
};
use hearth_messages::ExecError;
use hearth_messages::simulate::{
    MAX_SIMULATE_BLOCKS, SimBlock, SimCall, SimCallError, SimCallResult, SimLog, Simulate,
    SimulateError, SimulatedBlock, TIMESTAMP_INCREMENT, TxRule,
};
use hearth_messages::trace::ForkSchedule;
use hearth_storage::trie::ordered_root;
use hearth_storage::{BlockExtras, ChainDb, SealedBlock, StoredBody, receipts_root};
use revm::context::evm::Evm;
use revm::context::result::{EVMError, ExecutionResult, InvalidTransaction, Output};
use revm::context::{BlockEnv, CfgEnv, Context, TxEnv};
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::either::Either;
use revm::context_interface::local::FrameStack;
use revm::handler::SystemCallCommitEvm;
use revm::handler::instructions::EthInstructions;
use revm::interpreter::Interpreter;
use revm::interpreter::interpreter_action::{
    CallInputs, CallOutcome, CallScheme, CallValue, CreateInputs, CreateOutcome,
};
use revm::primitives::hardfork::SpecId;
use revm::{InspectCommitEvm, Inspector, MainContext};

use crate::exec::{
    CallGuard, CodeL1, ExecConfig, ExecDb, MovablePrecompiles, block_reward, default_blob_params,
    deposit_requests, excess_blob_gas, exec_error, geth_message, halt_message, withdrawals_root,
};

/// ERC-7528: the address ether `Transfer` logs are attributed to.
const TRANSFER_LOG_ADDRESS: Address = address!("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
/// keccak256("Transfer(address,address,uint256)").
const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// One gwei in wei (withdrawal amounts are in gwei).
const GWEI: u64 = 1_000_000_000;

/// The inspector simulated calls run under: the EVM time cap (`CallGuard`), and geth's
/// simulate log tracer: each frame's logs are kept until the frame ends and dropped if it
/// failed, and with `trace_transfers` every ether movement (call value, create endowment,
/// self-destruct balance) is logged as an ERC-7528 `Transfer` where it happens. Log indexes
/// count every log captured in the block, dropped ones included, as geth's do.
#[derive(Debug)]
pub(crate) struct SimInspector {
    guard: CallGuard,
    trace_transfers: bool,
    /// The logs of each open frame; the first is the transaction's.
    frames: Vec<Vec<SimLog>>,
    /// Per open create frame: where its endowment's `Transfer` log sits in its own frame,
    /// to receive the created address when the frame ends.
    creates: Vec<Option<usize>>,
    /// Logs captured so far in the block: the next log's index.
    count: u64,
}

impl SimInspector {
    fn new(guard: CallGuard, trace_transfers: bool) -> Self {
        Self { guard, trace_transfers, frames: Vec::new(), creates: Vec::new(), count: 0 }
    }

    /// Starts a new block: log indexes start again at 0.
    fn start_block(&mut self) {
        self.count = 0;
    }

    /// The logs of the transaction that just ran (none when it failed).
    fn take_logs(&mut self) -> Vec<SimLog> {
        self.creates.clear();
        let logs = if self.frames.is_empty() { Vec::new() } else { self.frames.swap_remove(0) };
        self.frames.clear();
        logs
    }

    fn capture(&mut self, log: Log) {
        if let Some(frame) = self.frames.last_mut() {
            frame.push(SimLog { log, index: self.count });
            self.count += 1;
        }
    }

    fn transfer_log(from: Address, to: Address, value: U256) -> Log {
        let topics = vec![TRANSFER_TOPIC, from.into_word(), to.into_word()];
        let data = Bytes::copy_from_slice(&value.to_be_bytes::<32>());
        Log { address: TRANSFER_LOG_ADDRESS, data: LogData::new_unchecked(topics, data) }
    }

    /// Ends the innermost frame: its logs join its parent's when it succeeded; the
    /// transaction's own frame stays, emptied when the transaction failed.
    fn end_frame(&mut self, succeeded: bool) {
        if self.frames.len() > 1 {
            let logs = self.frames.pop().unwrap_or_default();
            if succeeded && let Some(parent) = self.frames.last_mut() {
                parent.extend(logs);
            }
        } else if !succeeded && let Some(top) = self.frames.first_mut() {
            top.clear();
        }
    }
}

impl<CTX> Inspector<CTX> for SimInspector {
    fn step(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        self.guard.step(interp, context);
    }

    fn log(&mut self, _context: &mut CTX, log: Log) {
        self.capture(log);
    }

    fn call(&mut self, context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        self.guard.call(context, inputs);
        self.frames.push(Vec::new());
        // geth logs value moved by CALL only: DELEGATECALL moves none and CALLCODE moves it
        // from the caller to itself.
        if self.trace_transfers
            && inputs.scheme == CallScheme::Call
            && let CallValue::Transfer(value) = inputs.value
            && !value.is_zero()
        {
            self.capture(Self::transfer_log(inputs.caller, inputs.target_address, value));
        }
        None
    }

    fn call_end(&mut self, context: &mut CTX, inputs: &CallInputs, outcome: &mut CallOutcome) {
        self.guard.call_end(context, inputs, outcome);
        self.end_frame(outcome.result.is_ok());
    }

    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.guard.create(context, inputs);
        self.frames.push(Vec::new());
        let mut pending = None;
        if self.trace_transfers && !inputs.value().is_zero() {
            // The new address is known when the frame ends; the log keeps its place.
            pending = Some(0);
            self.capture(Self::transfer_log(inputs.caller(), Address::ZERO, inputs.value()));
        }
        self.creates.push(pending);
        None
    }

    fn create_end(
        &mut self,
        context: &mut CTX,
        inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        self.guard.create_end(context, inputs, outcome);
        if let Some(Some(position)) = self.creates.pop()
            && let (Some(created), Some(frame)) = (outcome.address, self.frames.last_mut())
            && let Some(entry) = frame.get_mut(position)
        {
            let from = inputs.caller();
            entry.log = Self::transfer_log(from, created, inputs.value());
        }
        self.end_frame(outcome.result.is_ok());
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        if self.trace_transfers && !value.is_zero() {
            self.capture(Self::transfer_log(contract, target, value));
        }
    }
}

/// A block's place in the chain before it runs: number and time ordered and gap-filled.
struct Planned {
    block: SimBlock,
    number: u64,
    time: u64,
}

/// Puts the blocks in order as geth's `sanitizeChain` does: numbers default to the previous
/// block's plus one and must increase (a gap is filled with empty blocks 12 s apart), times
/// default to the previous block's plus 12 s and must increase, and the whole chain may
/// reach at most [`MAX_SIMULATE_BLOCKS`] blocks past the base.
fn plan(base: &Header, blocks: Vec<SimBlock>) -> Result<Vec<Planned>, SimulateError> {
    let mut planned = Vec::with_capacity(blocks.len());
    let (mut previous_number, mut previous_time) = (base.number, base.timestamp);
    for block in blocks {
        let number = block.overrides.number.unwrap_or(previous_number.saturating_add(1));
        if number <= previous_number {
            return Err(SimulateError::BlockNumberOrder { number, previous: previous_number });
        }
        if number - base.number > MAX_SIMULATE_BLOCKS {
            return Err(SimulateError::TooManyBlocks);
        }
        for gap in previous_number + 1..number {
            previous_time = previous_time.saturating_add(TIMESTAMP_INCREMENT);
            planned.push(Planned { block: SimBlock::default(), number: gap, time: previous_time });
        }
        let time = match block.overrides.time {
            Some(time) if time <= previous_time => {
                return Err(SimulateError::TimestampOrder { time, previous: previous_time });
            }
            Some(time) => time,
            None => previous_time.saturating_add(TIMESTAMP_INCREMENT),
        };
        previous_number = number;
        previous_time = time;
        planned.push(Planned { block, number, time });
    }
    Ok(planned)
}

/// The fork rules of a simulated block at `number` and `time` whose difficulty would be
/// `difficulty` before the merge: the chain's schedule for it when the chain's rules change
/// along it (an imported chain), else the executor's.
fn rules_at(
    config: &ExecConfig,
    forks: Option<&dyn ForkSchedule>,
    number: u64,
    time: u64,
    difficulty: U256,
) -> (SpecId, BlobParams) {
    match forks {
        Some(forks) => {
            let header = Header { number, timestamp: time, difficulty, ..Default::default() };
            let rules = forks.rules_for(&header);
            (rules.spec, rules.blob_params)
        }
        None => {
            let params = config.blob_params.unwrap_or_else(|| default_blob_params(config.spec));
            (config.spec, params)
        }
    }
}

/// The revm environment of one simulated call, and what geth would check.
struct CallPlan {
    tx: TxEnv,
    /// The call as it appears in the block: an unsigned transaction.
    envelope: TxEnvelope,
    /// Its consensus encoding (geth's for unsigned legacy transactions: v, r, s all zero).
    encoded: Vec<u8>,
    sender: Address,
    gas: u64,
    /// Fee fields all zero: without validation, geth skips the base fee check then.
    zero_fees: bool,
}

/// Fills `call`'s defaults as geth's `sanitizeCall` and `CallDefaults` do and builds the
/// transaction it stands for (geth's `ToTransaction` with the dynamic-fee type as default).
fn plan_call(
    call: &SimCall,
    nonce: u64,
    gas: u64,
    chain_id: u64,
    london: bool,
) -> Result<CallPlan, SimulateError> {
    if let Some(have) = call.chain_id
        && have != chain_id
    {
        return Err(SimulateError::ChainIdMismatch { have, want: chain_id });
    }
    let sender = call.from.unwrap_or_default();
    let value = call.value.unwrap_or_default();
    let kind = call.to.map_or(TxKind::Create, TxKind::Call);
    let access_list = call.access_list.clone().unwrap_or_default();
    let signature = Signature::new(U256::ZERO, U256::ZERO, false);
    // Before London a call has a gas price (zero by default); from London on it has 1559
    // fee fields (zero by default) unless it names a gas price.
    let gas_price = call.gas_price.or((!london).then_some(0));
    let max_fee = call.max_fee_per_gas.unwrap_or_default();
    let tip = call.max_priority_fee_per_gas.unwrap_or_default();
    let mut tx = TxEnv {
        caller: sender,
        gas_limit: gas,
        kind,
        value,
        data: call.input.clone(),
        nonce,
        chain_id: Some(chain_id),
        access_list: access_list.clone(),
        ..Default::default()
    };
    let (envelope, encoded, zero_fees) = if let Some(price) = gas_price {
        tx.tx_type = if call.access_list.is_some() { 1 } else { 0 };
        tx.gas_price = price;
        let legacy = TxLegacy {
            chain_id: None,
            nonce,
            gas_price: price,
            gas_limit: gas,
            to: kind,
            value,
            input: call.input.clone(),
        };
        let encoded = unsigned_legacy_encoding(&legacy);
        let hash = keccak256(&encoded);
        (TxEnvelope::Legacy(Signed::new_unchecked(legacy, signature, hash)), encoded, price == 0)
    } else if let Some(hashes) = &call.blob_versioned_hashes {
        let TxKind::Call(to) = kind else { return Err(SimulateError::BlobCreate) };
        let blob_fee = call.max_fee_per_blob_gas.unwrap_or_default();
        tx.tx_type = 3;
        tx.gas_price = max_fee;
        tx.gas_priority_fee = Some(tip);
        tx.blob_hashes = hashes.clone();
        tx.max_fee_per_blob_gas = blob_fee;
        let blob = TxEip4844 {
            chain_id,
            nonce,
            gas_limit: gas,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: tip,
            to,
            value,
            access_list,
            blob_versioned_hashes: hashes.clone(),
            max_fee_per_blob_gas: blob_fee,
            input: call.input.clone(),
        };
        let signed = alloy_consensus::SignableTransaction::into_signed(
            TxEip4844Variant::TxEip4844(blob),
            signature,
        );
        let envelope = TxEnvelope::Eip4844(signed);
        let encoded = envelope.encoded_2718();
        (envelope, encoded, max_fee == 0 && tip == 0)
    } else if let Some(authorizations) = &call.authorization_list {
        let TxKind::Call(to) = kind else { return Err(SimulateError::SetCodeCreate) };
        tx.tx_type = 4;
        tx.gas_price = max_fee;
        tx.gas_priority_fee = Some(tip);
        tx.authorization_list = authorizations.iter().cloned().map(Either::Left).collect();
        let set_code = TxEip7702 {
            chain_id,
            nonce,
            gas_limit: gas,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: tip,
            to,
            value,
            access_list,
            authorization_list: authorizations.clone(),
            input: call.input.clone(),
        };
        let envelope = TxEnvelope::Eip7702(alloy_consensus::SignableTransaction::into_signed(
            set_code, signature,
        ));
        let encoded = envelope.encoded_2718();
        (envelope, encoded, max_fee == 0 && tip == 0)
    } else {
        tx.tx_type = 2;
        tx.gas_price = max_fee;
        tx.gas_priority_fee = Some(tip);
        let dynamic = TxEip1559 {
            chain_id,
            nonce,
            gas_limit: gas,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: tip,
            to: kind,
            value,
            access_list,
            input: call.input.clone(),
        };
        let envelope = TxEnvelope::Eip1559(alloy_consensus::SignableTransaction::into_signed(
            dynamic, signature,
        ));
        let encoded = envelope.encoded_2718();
        (envelope, encoded, max_fee == 0 && tip == 0)
    };
    Ok(CallPlan { tx, envelope, encoded, sender, gas, zero_fees })
}

/// An unsigned legacy transaction as geth encodes it: its fields, then v, r and s as zero.
fn unsigned_legacy_encoding(tx: &TxLegacy) -> Vec<u8> {
    let payload_length = tx.rlp_encoded_fields_length() + 3;
    let mut out = Vec::with_capacity(payload_length + 4);
    alloy_rlp::Header { list: true, payload_length }.encode(&mut out);
    tx.rlp_encode_fields(&mut out);
    out.extend_from_slice(&[alloy_rlp::EMPTY_STRING_CODE; 3]);
    out
}

/// geth's nonce checks, which it makes before any other (revm checks fees first): equal to
/// the sender's nonce, and below the highest nonce (EIP-2681).
fn check_nonce(sender: Address, nonce: u64, state: u64, gas: u64) -> Result<(), SimulateError> {
    let (rule, message) = if nonce > state {
        (
            TxRule::NonceTooHigh,
            format!("nonce too high: address {sender}, tx: {nonce} state: {state}"),
        )
    } else if nonce < state {
        (
            TxRule::NonceTooLow,
            format!("nonce too low: address {sender}, tx: {nonce} state: {state}"),
        )
    } else if state == u64::MAX {
        (TxRule::Other, format!("nonce has max value: address {sender}, nonce: {state}"))
    } else {
        return Ok(());
    };
    Err(SimulateError::InvalidCall { rule, message, gas })
}

/// The rule an invalid call broke, for its JSON-RPC code (geth's `txValidationError`).
fn tx_rule(error: &InvalidTransaction) -> TxRule {
    use InvalidTransaction as E;
    match error {
        E::NonceTooLow { .. } => TxRule::NonceTooLow,
        E::NonceTooHigh { .. } => TxRule::NonceTooHigh,
        E::RejectCallerWithCode => TxRule::SenderNotEoa,
        E::PriorityFeeGreaterThanMaxFee => TxRule::TipAboveFeeCap,
        E::GasPriceLessThanBasefee => TxRule::FeeCapTooLow,
        E::LackOfFundForMaxFee { .. } | E::OverflowPaymentInTransaction => {
            TxRule::InsufficientFunds
        }
        E::CallGasCostMoreThanGasLimit { .. } => TxRule::IntrinsicGas,
        E::CreateInitCodeSizeLimit => TxRule::InitCodeTooLarge,
        _ => TxRule::Other,
    }
}

/// The base fee of a block after `parent` by EIP-1559 (the initial base fee after a
/// pre-London parent).
fn next_base_fee(parent: &Header) -> u64 {
    hearth_messages::base_fee::next_base_fee(parent).unwrap_or(INITIAL_BASE_FEE)
}

type SimEvm<'a> = Evm<
    Context<BlockEnv, TxEnv, CfgEnv, ExecDb<'a>>,
    SimInspector,
    EthInstructions<
        revm::interpreter::interpreter::EthInterpreter,
        Context<BlockEnv, TxEnv, CfgEnv, ExecDb<'a>>,
    >,
    MovablePrecompiles,
    revm::handler::EthFrame,
>;

/// Runs a simulation. See the module docs.
pub(crate) fn simulate(
    db: &ChainDb,
    codes: &mut CodeL1,
    config: &ExecConfig,
    forks: Option<&dyn ForkSchedule>,
    msg: Simulate,
) -> Result<Vec<SimulatedBlock>, SimulateError> {
    let base = db.header(msg.base)?.ok_or(ExecError::UnknownBlock)?;
    let planned = plan(&base, msg.blocks)?;
    let deadline = config.evm_timeout.map(|timeout| Instant::now() + timeout);
    let spec = config.spec;
    let exec_db = ExecDb::new(db.state_at(msg.base), codes);
    let mut evm: SimEvm<'_> = Evm {
        ctx: Context::mainnet().with_db(exec_db).with_cfg(CfgEnv::new_with_spec(spec)),
        inspector: SimInspector::new(CallGuard::until(deadline), msg.trace_transfers),
        instruction: EthInstructions::new_mainnet_with_spec(spec),
        precompiles: MovablePrecompiles::new(spec),
        frame_stack: FrameStack::new_prealloc(8),
    };
    let mut run = Run {
        db,
        config,
        validation: msg.validation,
        budget: msg.gas_budget,
        deadline_ms: config.evm_timeout.map(|t| t.as_millis() as u64),
        base: msg.base,
    };
    // The header fields each block starts from: the previous block's (geth's makeHeaders).
    let mut carried = (base.beneficiary, base.gas_limit, base.difficulty);
    let mut parent = base;
    let mut out = Vec::with_capacity(planned.len());
    for Planned { block, number, time } in planned {
        // The time cap bounds the sealing too (state roots over a growing overlay), not only
        // the EVM: past it, no further block starts.
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            let timeout_ms = run.deadline_ms.unwrap_or_default();
            return Err(ExecError::Timeout { timeout_ms }.into());
        }
        let o = &block.overrides;
        // geth's makeHeaders: the difficulty carries over until the merge, then is zero.
        let (spec, blob_params) = rules_at(config, forks, number, time, carried.2);
        let merged = spec.is_enabled_in(SpecId::MERGE);
        carried = (
            o.fee_recipient.unwrap_or(carried.0),
            o.gas_limit.unwrap_or(carried.1),
            o.difficulty.unwrap_or(if merged { U256::ZERO } else { carried.2 }),
        );
        // The block's own rules: its EVM's instructions and state-clearing rule follow them.
        evm.instruction = EthInstructions::new_mainnet_with_spec(spec);
        evm.ctx
            .journaled_state
            .database
            .set_clear_empty(spec.is_enabled_in(SpecId::SPURIOUS_DRAGON));
        let sealed =
            run.block(&mut evm, &parent, block, number, time, carried, spec, &blob_params)?;
        evm.ctx.journaled_state.database.set_block_hash(number, sealed.block.hash);
        parent = sealed.block.header.clone();
        out.push(sealed);
    }
    Ok(out)
}

/// What stays the same over a simulation's blocks.
struct Run<'d> {
    db: &'d ChainDb,
    config: &'d ExecConfig,
    validation: bool,
    /// Gas the calls may still use together.
    budget: u64,
    deadline_ms: Option<u64>,
    base: u64,
}

impl Run<'_> {
    /// Runs one block on top of `parent` and seals it.
    #[expect(clippy::too_many_arguments, reason = "the block's place and its carried fields")]
    fn block(
        &mut self,
        evm: &mut SimEvm<'_>,
        parent: &Header,
        block: SimBlock,
        number: u64,
        time: u64,
        (coinbase, gas_limit, difficulty): (Address, u64, U256),
        spec: SpecId,
        blob_params: &BlobParams,
    ) -> Result<SimulatedBlock, SimulateError> {
        let SimBlock { overrides: o, state_overrides, calls } = block;
        let london = spec.is_enabled_in(SpecId::LONDON);
        let cancun = spec.is_enabled_in(SpecId::CANCUN);
        let prague = spec.is_enabled_in(SpecId::PRAGUE);
        let shanghai = spec.is_enabled_in(SpecId::SHANGHAI);
        let chain_id = self.config.chain_id.get();
        let base_fee = london
            .then(|| o.base_fee.unwrap_or(if self.validation { next_base_fee(parent) } else { 0 }));
        let excess = cancun.then(|| {
            if parent.excess_blob_gas.is_some() { excess_blob_gas(parent, blob_params) } else { 0 }
        });
        let prevrandao = o.prev_randao.unwrap_or_default();
        let beacon_root = cancun.then(|| o.beacon_root.unwrap_or_default());
        let withdrawals =
            if shanghai { o.withdrawals.clone().unwrap_or_default() } else { Vec::new() };
        let parent_hash = parent.hash_slow();

        let mut cfg = CfgEnv::new_with_spec(spec);
        cfg.chain_id = chain_id;
        cfg.limit_contract_code_size = self.config.code_size_limit;
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_gas_limit_cap = Some(u64::MAX);
        cfg.disable_nonce_check = !self.validation;
        if cancun {
            cfg.max_blobs_per_tx = Some(blob_params.max_blobs_per_tx);
            cfg.blob_base_fee_update_fraction =
                Some(u64::try_from(blob_params.update_fraction).unwrap_or(u64::MAX));
        }
        evm.ctx.cfg = cfg;
        evm.ctx.block = BlockEnv {
            number: U256::from(number),
            beneficiary: coinbase,
            timestamp: U256::from(time),
            gas_limit,
            basefee: base_fee.unwrap_or_default(),
            difficulty,
            prevrandao: difficulty.is_zero().then_some(prevrandao),
            blob_excess_gas_and_price: excess.map(|excess| BlobExcessGasAndPrice {
                excess_blob_gas: excess,
                blob_gasprice: o.blob_base_fee.unwrap_or_else(|| blob_params.calc_blob_fee(excess)),
            }),
            ..Default::default()
        };
        evm.precompiles = MovablePrecompiles::new(spec);
        evm.precompiles.apply(&state_overrides).map_err(ExecError::from)?;
        evm.ctx.journaled_state.database.apply_overrides(&state_overrides)?;
        evm.inspector.start_block();

        let exec = |e| exec_error(e);
        if cancun
            && let Some(root) = beacon_root
            && evm.ctx.journaled_state.database.has_code(BEACON_ROOTS_ADDRESS)?
        {
            evm.system_call_commit(BEACON_ROOTS_ADDRESS, Bytes::copy_from_slice(root.as_slice()))
                .map_err(exec)?;
        }
        if prague && evm.ctx.journaled_state.database.has_code(HISTORY_STORAGE_ADDRESS)? {
            evm.system_call_commit(
                HISTORY_STORAGE_ADDRESS,
                Bytes::copy_from_slice(parent_hash.as_slice()),
            )
            .map_err(exec)?;
        }

        let mut body = StoredBody { transactions: Vec::new(), senders: Vec::new() };
        let mut encodings = Vec::with_capacity(calls.len());
        let mut receipts = Vec::with_capacity(calls.len());
        let mut results = Vec::with_capacity(calls.len());
        let mut all_logs = Vec::new();
        let mut gas_used = 0u64;
        let mut blob_gas_used = 0u64;
        let mut logs_bloom = Bloom::ZERO;
        for call in &calls {
            let remaining = gas_limit - gas_used;
            let asked = call.gas.unwrap_or(remaining);
            if remaining < asked {
                return Err(SimulateError::BlockGasLimit { remaining, required: asked });
            }
            let gas = asked.min(self.budget);
            let sender = call.from.unwrap_or_default();
            let state_nonce = revm::Database::basic(&mut evm.ctx.journaled_state.database, sender)?
                .map_or(0, |a| a.nonce);
            let nonce = call.nonce.unwrap_or(state_nonce);
            if self.validation {
                check_nonce(sender, nonce, state_nonce, gas)?;
            }
            let mut plan = plan_call(call, nonce, gas, chain_id, london)?;
            if !self.validation && nonce == u64::MAX {
                // revm refuses the highest nonce even unchecked; geth runs such a call (the
                // nonce is not checked) and wraps the sender's nonce. The transaction keeps
                // its nonce; revm, which does not read it unchecked, gets one below.
                plan.tx.nonce = u64::MAX - 1;
            }
            // Without validation, geth skips the base fee check for calls without fees.
            evm.ctx.cfg.disable_base_fee = !self.validation && plan.zero_fees;
            let result = match evm.inspect_tx_commit(plan.tx.clone()) {
                Ok(result) => result,
                Err(EVMError::Transaction(e)) => {
                    return Err(SimulateError::InvalidCall {
                        rule: tx_rule(&e),
                        message: geth_message(&e),
                        gas: plan.gas,
                    });
                }
                Err(other) => return Err(exec(other).into()),
            };
            let logs = evm.inspector.take_logs();
            if evm.inspector.guard.expired {
                let timeout_ms = self.deadline_ms.unwrap_or_default();
                return Err(ExecError::Timeout { timeout_ms }.into());
            }
            // geth increments a nonce with wrap-around where revm saturates: a call from an
            // account at the highest nonce leaves it at zero there.
            if state_nonce == u64::MAX && plan.tx.kind.is_call() {
                evm.ctx.journaled_state.database.set_nonce(plan.sender, 0)?;
            }
            let used = result.tx_gas_used();
            if used > self.budget {
                return Err(SimulateError::GasBudgetExhausted {
                    need: used,
                    remaining: self.budget,
                });
            }
            self.budget -= used;
            gas_used += used;
            let tx_blob_gas = plan.tx.blob_hashes.len() as u64 * DATA_GAS_PER_BLOB;
            blob_gas_used += tx_blob_gas;
            let max_used_gas = result.gas().total_gas_spent().max(used);
            let (success, receipt_logs, return_data, error) = match result {
                ExecutionResult::Success { logs, output, .. } => {
                    let data = match output {
                        Output::Call(bytes) | Output::Create(bytes, _) => bytes,
                    };
                    (true, logs, data, None)
                }
                // geth returns no data for a failed call; the revert data is in the error.
                ExecutionResult::Revert { logs, output, .. } => {
                    (false, logs, Bytes::new(), Some(SimCallError::Reverted(output)))
                }
                ExecutionResult::Halt { logs, reason, .. } => {
                    (false, logs, Bytes::new(), Some(SimCallError::Halted(halt_message(&reason))))
                }
            };
            if success {
                all_logs.extend(receipt_logs.iter().cloned());
            }
            // Before Byzantium (EIP-658) a receipt carries the state root after its call.
            let status = if spec.is_enabled_in(SpecId::BYZANTIUM) {
                alloy_consensus::Eip658Value::Eip658(success)
            } else {
                let diff = evm.ctx.journaled_state.database.diff_so_far();
                let root = hearth_storage::state_root_after(self.db, self.base + 1, &diff)?;
                alloy_consensus::Eip658Value::PostState(root)
            };
            let receipt = Receipt { status, cumulative_gas_used: gas_used, logs: receipt_logs };
            let receipt =
                ReceiptEnvelope::from_typed(plan.envelope.tx_type(), receipt.with_bloom());
            logs_bloom.accrue_bloom(&alloy_consensus::TxReceipt::bloom(&receipt));
            receipts.push(receipt);
            results.push(SimCallResult { return_data, logs, gas_used: used, max_used_gas, error });
            encodings.push(plan.encoded);
            body.senders.push(plan.sender);
            body.transactions.push(plan.envelope);
        }

        let exec_db = &mut evm.ctx.journaled_state.database;
        if shanghai {
            for withdrawal in &withdrawals {
                let amount = U256::from(withdrawal.amount) * U256::from(GWEI);
                exec_db.credit(withdrawal.address, amount)?;
            }
        }
        let mut requests = Requests::default();
        if prague {
            requests.push_request_with_type(DEPOSIT_REQUEST_TYPE, deposit_requests(&all_logs)?);
            for (address, kind) in [
                (WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_TYPE),
                (CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_TYPE),
            ] {
                if !evm.ctx.journaled_state.database.has_code(address)? {
                    continue;
                }
                let result = evm.system_call_commit(address, Bytes::new()).map_err(exec)?;
                if let ExecutionResult::Success { output: Output::Call(data), .. } = result {
                    requests.push_request_with_type(kind, data);
                }
            }
        }
        let reward = block_reward(spec);
        if !difficulty.is_zero() && !reward.is_zero() {
            evm.ctx.journaled_state.database.credit(coinbase, reward)?;
        }

        let diff = evm.ctx.journaled_state.database.diff_so_far();
        let state_root = hearth_storage::state_root_after(self.db, self.base + 1, &diff)?;
        let header = Header {
            parent_hash,
            ommers_hash: alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH,
            beneficiary: coinbase,
            state_root,
            transactions_root: ordered_root(
                encodings.into_iter().enumerate().map(|(i, tx)| (alloy_rlp::encode(i), tx)),
            ),
            receipts_root: receipts_root(&receipts),
            logs_bloom,
            difficulty,
            number,
            gas_limit,
            gas_used,
            timestamp: time,
            extra_data: Bytes::new(),
            mix_hash: prevrandao,
            nonce: Default::default(),
            base_fee_per_gas: base_fee,
            withdrawals_root: shanghai.then(|| withdrawals_root(&withdrawals)),
            blob_gas_used: cancun.then_some(blob_gas_used),
            excess_blob_gas: excess,
            parent_beacon_block_root: beacon_root,
            requests_hash: prague.then(|| requests.requests_hash()),
            ..Default::default()
        };
        let hash = header.hash_slow();
        let extras = BlockExtras { ommers: Vec::new(), withdrawals };
        let block = SealedBlock { header, hash, body, receipts, extras };
        Ok(SimulatedBlock { block, calls: results })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(number: Option<u64>, time: Option<u64>) -> SimBlock {
        let mut block = SimBlock::default();
        block.overrides.number = number;
        block.overrides.time = time;
        block
    }

    #[test]
    fn blocks_are_ordered_and_gaps_filled_as_geth_does() {
        let base = Header { number: 10, timestamp: 100, ..Default::default() };
        let planned = plan(&base, vec![block(None, None), block(Some(14), None)]).expect("plan");
        let placed: Vec<(u64, u64)> = planned.iter().map(|p| (p.number, p.time)).collect();
        assert_eq!(placed, [(11, 112), (12, 124), (13, 136), (14, 148)]);
        let err = plan(&base, vec![block(Some(12), None), block(Some(12), None)]);
        assert!(matches!(err, Err(SimulateError::BlockNumberOrder { number: 12, previous: 12 })));
        let err = plan(&base, vec![block(None, Some(100))]);
        assert!(matches!(err, Err(SimulateError::TimestampOrder { time: 100, previous: 100 })));
        assert!(plan(&base, vec![block(Some(10 + MAX_SIMULATE_BLOCKS), None)]).is_ok());
        let err = plan(&base, vec![block(Some(11 + MAX_SIMULATE_BLOCKS), None)]);
        assert!(matches!(err, Err(SimulateError::TooManyBlocks)));
    }

    #[test]
    fn an_unsigned_legacy_call_encodes_with_zero_v_r_s() {
        let tx = TxLegacy {
            chain_id: None,
            nonce: 3,
            gas_price: 7,
            gas_limit: 21_000,
            to: TxKind::Call(Address::repeat_byte(1)),
            value: U256::from(5),
            input: Bytes::new(),
        };
        let encoded = unsigned_legacy_encoding(&tx);
        let header = alloy_rlp::Header::decode(&mut encoded.as_slice()).expect("a list");
        assert!(header.list);
        // The last three fields, v, r and s, are empty strings (zero).
        assert_eq!(&encoded[encoded.len() - 3..], &[alloy_rlp::EMPTY_STRING_CODE; 3]);
        assert_eq!(header.payload_length + header.length(), encoded.len());
    }

    #[test]
    fn geths_nonce_checks_come_first() {
        let sender = Address::repeat_byte(9);
        let rule = |nonce, state| match check_nonce(sender, nonce, state, 21_000) {
            Err(SimulateError::InvalidCall { rule, .. }) => Some(rule),
            _ => None,
        };
        assert_eq!(rule(1, 0), Some(TxRule::NonceTooHigh));
        assert_eq!(rule(0, 1), Some(TxRule::NonceTooLow));
        assert_eq!(rule(u64::MAX, u64::MAX), Some(TxRule::Other));
        assert_eq!(rule(4, 4), None);
    }
}
