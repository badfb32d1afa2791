//! The EVM time cap of calls (eth_call, eth_estimateGas, eth_createAccessList, eth_callMany,
//! eth_simulateV1). revm has no clock of its own, so the instructions that can keep a run going
//! count, and every [`TimeCap::CHECK_EVERY`] of them read the clock: a jump (every loop takes
//! one), a new frame (CALL*, CREATE*), and the instructions whose work grows with their
//! operands or reaches the store (KECCAK256, the copies, LOG*, SLOAD and the other-account
//! reads). Between two of them a frame runs only straight-line cheap instructions, at most its
//! code's length. Once the cap has passed, each of those instructions halts its frame, so the
//! whole call unwinds at once.
//!
//! Instructions, not an inspector: an inspector puts every instruction of the call on revm's
//! slower inspecting loop, about 3% of a hash loop (BENCHMARKS.md, session 21). The cap lives
//! in the call's database ([`ExecDb::time_cap`]), which every instruction reaches through its
//! host, so no state hides in a thread-local.

use std::time::{Duration, Instant};

use revm::context::JournalTr;
use revm::handler::MainnetContext;
use revm::handler::instructions::EthInstructions;
use revm::interpreter::interpreter::EthInterpreter;
use revm::interpreter::{
    Instruction, InstructionContext, InstructionExecResult, InstructionResult,
};
use revm::primitives::hardfork::SpecId;

use super::ExecDb;

/// When a call must stop, and whether it has been stopped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TimeCap {
    at: Option<Instant>,
    ticks: u32,
    expired: bool,
}

impl TimeCap {
    /// Counted instructions per clock read. A loop takes at least one jump per turn, so a
    /// tight loop of ~30 ns turns reads the clock (~25 ns) every ~8 µs; the heaviest counted
    /// instruction a gas cap allows (a hash of megabytes) makes that a few milliseconds at most.
    const CHECK_EVERY: u32 = 256;

    /// A cap `timeout` from now (`None`: never).
    pub(crate) fn new(timeout: Option<Duration>) -> Self {
        Self::until(timeout.map(|t| Instant::now() + t))
    }

    /// A cap at `deadline` (`None`: never), so that several runs can share one cap
    /// (eth_createAccessList's search, eth_callMany's bundles, eth_simulateV1's blocks).
    pub(crate) const fn until(deadline: Option<Instant>) -> Self {
        Self { at: deadline, ticks: 0, expired: false }
    }

    /// Whether the cap was reached (every counted instruction since has halted its frame).
    pub(crate) const fn expired(&self) -> bool {
        self.expired
    }

    /// Counts one instruction; whether the run must stop.
    #[inline]
    fn passed(&mut self) -> bool {
        if self.expired {
            return true;
        }
        let Some(at) = self.at else { return false };
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(Self::CHECK_EVERY) && Instant::now() >= at {
            self.expired = true;
        }
        self.expired
    }
}

type Ctx<'c, 'a> = InstructionContext<'c, MainnetContext<ExecDb<'a>>, EthInterpreter>;

/// revm's instructions under `spec`, those that count towards the time cap of the database they
/// run over capped (see the module docs); calls and creates also note in it the deepest frame
/// they open, which bounds what the executor's scratch keeps. Every call EVM takes its table
/// from here, so none can run uncapped.
pub(crate) fn capped_instructions<'a>(
    spec: SpecId,
) -> EthInstructions<EthInterpreter, MainnetContext<ExecDb<'a>>> {
    use revm::bytecode::opcode::*;
    let mut instructions = EthInstructions::new_mainnet_with_spec(spec);
    let table = instructions.instruction_table_mut();
    for op in [
        JUMP,
        JUMPI,
        KECCAK256,
        CALLDATACOPY,
        CODECOPY,
        EXTCODECOPY,
        RETURNDATACOPY,
        MCOPY,
        LOG0,
        LOG1,
        LOG2,
        LOG3,
        LOG4,
        SLOAD,
        BALANCE,
        EXTCODESIZE,
        EXTCODEHASH,
    ] {
        table[usize::from(op)] = Instruction::new(capped_op(op));
    }
    table[usize::from(CALL)] = Instruction::new(capped_frame::<CALL>);
    table[usize::from(CALLCODE)] = Instruction::new(capped_frame::<CALLCODE>);
    table[usize::from(DELEGATECALL)] = Instruction::new(capped_frame::<DELEGATECALL>);
    table[usize::from(STATICCALL)] = Instruction::new(capped_frame::<STATICCALL>);
    table[usize::from(CREATE)] = Instruction::new(capped_frame::<CREATE>);
    table[usize::from(CREATE2)] = Instruction::new(capped_frame::<CREATE2>);
    instructions
}

/// The capped form of `op`, one of the counted instructions that open no frame.
fn capped_op(op: u8) -> for<'c, 'a> fn(Ctx<'c, 'a>) -> InstructionExecResult {
    use revm::bytecode::opcode::*;
    match op {
        JUMP => capped::<JUMP>,
        JUMPI => capped::<JUMPI>,
        KECCAK256 => capped::<KECCAK256>,
        CALLDATACOPY => capped::<CALLDATACOPY>,
        CODECOPY => capped::<CODECOPY>,
        EXTCODECOPY => capped::<EXTCODECOPY>,
        RETURNDATACOPY => capped::<RETURNDATACOPY>,
        MCOPY => capped::<MCOPY>,
        LOG0 => capped::<LOG0>,
        LOG1 => capped::<LOG1>,
        LOG2 => capped::<LOG2>,
        LOG3 => capped::<LOG3>,
        LOG4 => capped::<LOG4>,
        SLOAD => capped::<SLOAD>,
        BALANCE => capped::<BALANCE>,
        EXTCODESIZE => capped::<EXTCODESIZE>,
        _ => capped::<EXTCODEHASH>,
    }
}

/// Counts the instruction, halting its frame once the cap has passed; then runs revm's own.
fn capped<const OP: u8>(ctx: Ctx<'_, '_>) -> InstructionExecResult {
    use revm::bytecode::opcode::*;
    use revm::interpreter::instructions::{control, host, memory, system};
    if ctx.host.journaled_state.database.time_cap().passed() {
        return Err(InstructionResult::OutOfGas);
    }
    match OP {
        JUMP => control::jump(ctx),
        JUMPI => control::jumpi(ctx),
        KECCAK256 => system::keccak256(ctx),
        CALLDATACOPY => system::calldatacopy(ctx),
        CODECOPY => system::codecopy(ctx),
        EXTCODECOPY => host::extcodecopy(ctx),
        RETURNDATACOPY => system::returndatacopy(ctx),
        MCOPY => memory::mcopy(ctx),
        LOG0 => host::log::<0, _>(ctx),
        LOG1 => host::log::<1, _>(ctx),
        LOG2 => host::log::<2, _>(ctx),
        LOG3 => host::log::<3, _>(ctx),
        LOG4 => host::log::<4, _>(ctx),
        SLOAD => host::sload(ctx),
        BALANCE => host::balance(ctx),
        EXTCODESIZE => host::extcodesize(ctx),
        _ => host::extcodehash(ctx),
    }
}

/// A call or create: counted like the others, and its frame's depth noted (journal depth `d`
/// runs frame `d - 1`, so the new frame is frame `d`).
fn capped_frame<const OP: u8>(ctx: Ctx<'_, '_>) -> InstructionExecResult {
    use revm::bytecode::opcode::{CREATE, CREATE2};
    use revm::interpreter::instructions::contract::{call, create};
    let depth = ctx.host.journaled_state.depth();
    let db = &mut ctx.host.journaled_state.database;
    if db.time_cap().passed() {
        return Err(InstructionResult::OutOfGas);
    }
    db.note_call_depth(depth);
    match OP {
        CREATE => create::<false, _, _>(ctx),
        CREATE2 => create::<true, _, _>(ctx),
        _ => call::<OP, _, _>(ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_without_a_deadline_never_passes() {
        let mut cap = TimeCap::new(None);
        assert!((0..10 * TimeCap::CHECK_EVERY).all(|_| !cap.passed()));
        assert!(!cap.expired());
    }

    #[test]
    fn a_past_deadline_is_seen_within_one_check_and_then_stays() {
        let mut cap = TimeCap::until(Some(Instant::now()));
        let counted = (1..=TimeCap::CHECK_EVERY).find(|_| cap.passed());
        assert_eq!(counted, Some(TimeCap::CHECK_EVERY));
        assert!(cap.expired() && cap.passed());
    }
}
