//! The block EVM: the one construction block building, import, a parallel block's helpers and
//! trace replays share (its configuration and environment from the block's `BlockEnvSpec`, its
//! database over the parent's state), the instruction hooks a block runs under, and the
//! system calls that open a block.

use std::cell::Cell;

use alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS;
use alloy_eips::eip4788::BEACON_ROOTS_ADDRESS;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes};
use hearth_messages::ExecError;
use hearth_messages::executor::{BlockEnvSpec, BlockRules};
use hearth_storage::ChainDb;
use revm::MainContext;
use revm::context::evm::Evm;
use revm::context::{CfgEnv, Context, LocalContext};
use revm::context_interface::JournalTr;
use revm::context_interface::local::FrameStack;
use revm::handler::instructions::EthInstructions;
use revm::handler::{EthFrame, EthPrecompiles, MainnetContext, SystemCallCommitEvm};
use revm::interpreter::interpreter::EthInterpreter;
use revm::interpreter::{Instruction, InstructionContext, InstructionExecResult, Interpreter};
use revm::primitives::hardfork::SpecId;

use super::code::CodeL1;
use super::config::ExecConfig;
use super::console_tap::ConsoleTap;
use super::db::ExecDb;
use super::env::block_env;
use super::geth_errors::exec_error;
use super::published::PublishedValues;
use super::rules::{blob_fraction, default_blob_params};

/// A block's EVM: its rules and environment over its parent's state, with inspector `I` (`()`
/// for none), its database reading what a parallel block's other threads publish (`P`; `()`:
/// nothing, a replay).
/// Its precompiles are the fork's behind the console tap, which captures console.log calls
/// when asked ([`ConsoleTap::capture`]).
pub(crate) type BlockEvm<'a, I, P = ()> = Evm<
    MainnetContext<ExecDb<'a, P>>,
    I,
    EthInstructions<EthInterpreter, MainnetContext<ExecDb<'a, P>>>,
    ConsoleTap<EthPrecompiles>,
    EthFrame,
>;

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
pub(crate) fn resolved_blob_params(env: &BlockEnvSpec, defaults: &ExecConfig) -> BlobParams {
    let spec = env.spec.unwrap_or(defaults.spec);
    env.blob_params.or(defaults.blob_params).unwrap_or_else(|| default_blob_params(spec))
}

/// The EVM that executes the block described by `env` on top of block `parent_number`'s state:
/// the one construction block building, import and trace replays share, so a replay runs under
/// exactly the configuration and environment the block was built with.
pub(crate) fn block_evm<'a, I, P: PublishedValues>(
    db: &ChainDb,
    codes: &'a mut CodeL1,
    defaults: &ExecConfig,
    parent_number: u64,
    env: &BlockEnvSpec,
    inspector: I,
) -> (BlockEvm<'a, I, P>, BlockSetup) {
    let fresh = (FrameStack::new_prealloc(8), LocalContext::default());
    block_evm_in(db, codes, defaults, parent_number, env, inspector, fresh)
}

/// [`block_evm`] with its call frames and memory buffer from `scratch` (the executor
/// thread's, see `EvmScratch`) instead of fresh ones.
pub(crate) fn block_evm_in<'a, I, P: PublishedValues>(
    db: &ChainDb,
    codes: &'a mut CodeL1,
    defaults: &ExecConfig,
    parent_number: u64,
    env: &BlockEnvSpec,
    inspector: I,
    (frame_stack, local): (FrameStack<EthFrame>, LocalContext),
) -> (BlockEvm<'a, I, P>, BlockSetup) {
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
    (evm_over(ctx, inspector, frame_stack), BlockSetup { spec, blob_params })
}

/// A block EVM over `ctx` (its spec from `ctx`'s configuration) with `inspector`: what revm's
/// `build_mainnet_with_inspector` makes, with the console tap around the precompiles and the
/// given frames.
pub(crate) fn evm_over<'a, I, P: PublishedValues>(
    ctx: MainnetContext<ExecDb<'a, P>>,
    inspector: I,
    frame_stack: FrameStack<EthFrame>,
) -> BlockEvm<'a, I, P> {
    let spec = ctx.cfg.spec;
    Evm {
        ctx,
        inspector,
        instruction: EthInstructions::new_mainnet_with_spec(spec),
        precompiles: ConsoleTap::new(EthPrecompiles::new(spec)),
        frame_stack,
    }
}

thread_local! {
    /// Whether the transaction running on this thread named the coinbase in an instruction
    /// that could observe its balance (the instructions [`instrument`] replaces set it).
    static COINBASE_SEEN: Cell<bool> = const { Cell::new(false) };
}

/// Forgets whether the coinbase was observed, before a transaction whose observation
/// [`coinbase_seen`] then reports (a parallel block's speculative run; see `parallel.rs`).
#[inline]
pub(crate) fn forget_coinbase_seen() {
    COINBASE_SEEN.with(|seen| seen.set(false));
}

/// Whether an instrumented instruction named the coinbase since [`forget_coinbase_seen`].
#[inline]
pub(crate) fn coinbase_seen() -> bool {
    COINBASE_SEEN.with(Cell::get)
}

/// Notes, for the address index, the account whose code the new frame a call instruction just
/// opened runs (a DELEGATECALL's library too), whether or not the frame then succeeds, as
/// Erigon's index lists a frame's `to`; not a call the instruction itself refused (out of gas),
/// which opens no frame.
fn note_callee<P: PublishedValues>(
    interpreter: &mut Interpreter<EthInterpreter>,
    db: &mut ExecDb<'_, P>,
) {
    use revm::interpreter::interpreter_types::LoopControl as _;
    use revm::interpreter::{FrameInput, InterpreterAction};
    if let Some(InterpreterAction::NewFrame(FrameInput::Call(inputs))) =
        interpreter.bytecode.action()
    {
        db.note_called(inputs.bytecode_address);
    }
}

/// Makes the block EVM's call and create instructions note the call depth they run at in its
/// database before they run: the deepest frame a block used, which bounds how many frames
/// (32 KiB of stack each) its frame pool grew to, so the executor knows what keeping it costs
/// (`EvmScratch::keep`). And makes the instructions that can observe another account's balance
/// or code (BALANCE, EXTCODE*, CALL*, SELFDESTRUCT) note when they name the coinbase, which a
/// parallel block's lazy coinbase needs ([`coinbase_seen`]). Only these opcodes pay, one
/// comparison each: an inspector would put the whole block on revm's slower inspecting loop.
pub(crate) fn instrument<P: PublishedValues>(evm: &mut BlockEvm<'_, (), P>) {
    use revm::bytecode::opcode::{
        BALANCE, CALL, CALLCODE, CREATE, CREATE2, DELEGATECALL, EXTCODECOPY, EXTCODEHASH,
        EXTCODESIZE, SELFDESTRUCT, STATICCALL,
    };
    use revm::interpreter::instructions::contract::{call, create};
    use revm::interpreter::instructions::host;

    type Ctx<'c, 'a, P> = InstructionContext<'c, MainnetContext<ExecDb<'a, P>>, EthInterpreter>;
    /// The frame a call or create from the current frame gets: journal depth `d` runs frame
    /// `d - 1`, so its child is frame `d`.
    fn note<P: PublishedValues>(ctx: &mut Ctx<'_, '_, P>) {
        let depth = ctx.host.journaled_state.depth();
        ctx.host.journaled_state.database.note_call_depth(depth);
    }
    /// Whether the stack item `operand` from the top is the coinbase's address.
    fn watch<P: PublishedValues>(ctx: &Ctx<'_, '_, P>, operand: usize) {
        if let Ok(word) = ctx.interpreter.stack.peek(operand)
            && Address::from_word(B256::from(word)) == ctx.host.block.beneficiary
        {
            COINBASE_SEEN.with(|seen| seen.set(true));
        }
    }
    fn noted_call<P: PublishedValues, const KIND: u8>(
        mut ctx: Ctx<'_, '_, P>,
    ) -> InstructionExecResult {
        note(&mut ctx);
        // CALL*(gas, address, ...): the callee or the code's account.
        watch(&ctx, 1);
        let interpreter = &mut *ctx.interpreter;
        let result = call::<KIND, _, _>(InstructionContext { interpreter, host: &mut *ctx.host });
        note_callee(ctx.interpreter, &mut ctx.host.journaled_state.database);
        result
    }
    fn noted_create<P: PublishedValues, const IS_CREATE2: bool>(
        mut ctx: Ctx<'_, '_, P>,
    ) -> InstructionExecResult {
        note(&mut ctx);
        create::<IS_CREATE2, _, _>(ctx)
    }
    /// BALANCE, EXTCODE* and SELFDESTRUCT: the account is the top of the stack.
    fn watched<P: PublishedValues, const OP: u8>(ctx: Ctx<'_, '_, P>) -> InstructionExecResult {
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
    table[usize::from(CALL)] = Instruction::new(noted_call::<P, CALL>);
    table[usize::from(CALLCODE)] = Instruction::new(noted_call::<P, CALLCODE>);
    table[usize::from(DELEGATECALL)] = Instruction::new(noted_call::<P, DELEGATECALL>);
    table[usize::from(STATICCALL)] = Instruction::new(noted_call::<P, STATICCALL>);
    table[usize::from(CREATE)] = Instruction::new(noted_create::<P, false>);
    table[usize::from(CREATE2)] = Instruction::new(noted_create::<P, true>);
    table[usize::from(BALANCE)] = Instruction::new(watched::<P, BALANCE>);
    table[usize::from(EXTCODESIZE)] = Instruction::new(watched::<P, EXTCODESIZE>);
    table[usize::from(EXTCODECOPY)] = Instruction::new(watched::<P, EXTCODECOPY>);
    table[usize::from(EXTCODEHASH)] = Instruction::new(watched::<P, EXTCODEHASH>);
    table[usize::from(SELFDESTRUCT)] = Instruction::new(watched::<P, SELFDESTRUCT>);
}

/// The system calls that run before a block's transactions: EIP-4788 (the parent beacon
/// block root, from Cancun) and EIP-2935 (the parent's hash, from Prague), each only when
/// its contract has code.
pub(crate) fn pre_block_calls<I, P: PublishedValues>(
    evm: &mut BlockEvm<'_, I, P>,
    env: &BlockEnvSpec,
    parent_hash: B256,
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
        let parent_hash = Bytes::copy_from_slice(parent_hash.as_slice());
        hearth_storage::overwriting(HISTORY_STORAGE_ADDRESS, || {
            evm.system_call_commit(HISTORY_STORAGE_ADDRESS, parent_hash)
        })
        .map_err(exec_error)?;
    }
    Ok(())
}
