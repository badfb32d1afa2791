//! The EVM time cap of calls (eth_call, eth_estimateGas, eth_createAccessList, eth_callMany,
//! eth_simulateV1, with the simulated blocks' system calls). revm has no clock of its own, so
//! the instructions that can keep a run going count, and every [`TimeCap::CHECK_EVERY`] counts
//! they read the clock: a jump (every loop takes one), a new frame (CALL*, CREATE*), and those
//! whose work grows with an operand or reaches the store (KECCAK256, the copies and LOG*, which
//! count one more per 32 KiB they touch; SLOAD, SSTORE, BLOCKHASH and the other-account reads).
//! Between two of them a frame runs only cheap instructions, at most its code's length. Once
//! the cap has passed, each counted instruction halts its frame, so the whole call unwinds.
//!
//! Instructions, not an inspector, so that the call runs on revm's plain loop rather than its
//! inspecting one (BENCHMARKS.md, "Session 21"). The cap lives in the call's database
//! ([`ExecDb::time_cap`]), which every instruction reaches through its host, so no state hides
//! in a thread-local.

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
    /// Counts left before the next clock read.
    left: u32,
    expired: bool,
}

impl TimeCap {
    /// Counts per clock read. A loop takes at least one jump per turn, so a tight loop of
    /// ~30 ns turns reads the clock (~25 ns) every ~8 µs. Sized work counts one per 32 KiB, so
    /// at most 8 MiB is hashed or copied between two reads (a few milliseconds).
    const CHECK_EVERY: u32 = 256;

    /// A cap `timeout` from now (`None`: never).
    pub(crate) fn new(timeout: Option<Duration>) -> Self {
        Self::until(timeout.map(|t| Instant::now() + t))
    }

    /// A cap at `deadline` (`None`: never), so that several runs can share one cap
    /// (eth_createAccessList's search, eth_callMany's bundles, eth_simulateV1's blocks).
    pub(crate) const fn until(deadline: Option<Instant>) -> Self {
        Self { at: deadline, left: Self::CHECK_EVERY, expired: false }
    }

    /// Whether the cap was reached (every counted instruction since has halted its frame).
    pub(crate) const fn expired(&self) -> bool {
        self.expired
    }

    /// Counts `counts` (an instruction: one, plus one per 32 KiB of sized work); whether the
    /// run must stop.
    #[inline]
    fn passed(&mut self, counts: u32) -> bool {
        if self.expired {
            return true;
        }
        let Some(at) = self.at else { return false };
        match self.left.checked_sub(counts) {
            Some(left) if left > 0 => self.left = left,
            _ => {
                self.left = Self::CHECK_EVERY;
                self.expired = Instant::now() >= at;
            }
        }
        self.expired
    }
}

type Ctx<'c, 'a> = InstructionContext<'c, MainnetContext<ExecDb<'a>>, EthInterpreter>;

/// revm's instructions under `spec`, those that count towards the time cap of the database they
/// run over capped (see the module docs); calls and creates also note in it the deepest frame
/// they open, which bounds what the executor's scratch keeps. Every call EVM takes its table
/// from here, so none can run uncapped. The table is the same for every fork (revm checks a
/// fork's opcodes inside each instruction), so wrapping enables nothing early.
pub(crate) fn capped_instructions<'a>(
    spec: SpecId,
) -> EthInstructions<EthInterpreter, MainnetContext<ExecDb<'a>>> {
    use revm::bytecode::opcode::*;
    let mut instructions = EthInstructions::new_mainnet_with_spec(spec);
    let table = instructions.instruction_table_mut();
    let mut cap = |op: u8, f: for<'c, 'd> fn(Ctx<'c, 'd>) -> InstructionExecResult| {
        table[usize::from(op)] = Instruction::new(f);
    };
    cap(JUMP, capped::<JUMP>);
    cap(JUMPI, capped::<JUMPI>);
    cap(KECCAK256, capped::<KECCAK256>);
    cap(CALLDATACOPY, capped::<CALLDATACOPY>);
    cap(CODECOPY, capped::<CODECOPY>);
    cap(EXTCODECOPY, capped::<EXTCODECOPY>);
    cap(RETURNDATACOPY, capped::<RETURNDATACOPY>);
    cap(MCOPY, capped::<MCOPY>);
    cap(LOG0, capped::<LOG0>);
    cap(LOG1, capped::<LOG1>);
    cap(LOG2, capped::<LOG2>);
    cap(LOG3, capped::<LOG3>);
    cap(LOG4, capped::<LOG4>);
    cap(SLOAD, capped::<SLOAD>);
    cap(SSTORE, capped::<SSTORE>);
    cap(BLOCKHASH, capped::<BLOCKHASH>);
    cap(BALANCE, capped::<BALANCE>);
    cap(EXTCODESIZE, capped::<EXTCODESIZE>);
    cap(EXTCODEHASH, capped::<EXTCODEHASH>);
    cap(SELFDESTRUCT, capped::<SELFDESTRUCT>);
    cap(CALL, capped_frame::<CALL>);
    cap(CALLCODE, capped_frame::<CALLCODE>);
    cap(DELEGATECALL, capped_frame::<DELEGATECALL>);
    cap(STATICCALL, capped_frame::<STATICCALL>);
    cap(CREATE, capped_frame::<CREATE>);
    cap(CREATE2, capped_frame::<CREATE2>);
    instructions
}

/// What `op` counts: one, plus one per 32 KiB of its size operand (the stack item at `depth`
/// from the top) for the instructions whose work grows with it.
fn counts(op: u8, ctx: &Ctx<'_, '_>) -> u32 {
    use revm::bytecode::opcode::*;
    let depth = match op {
        KECCAK256 | LOG0..=LOG4 => 1,
        CALLDATACOPY | CODECOPY | RETURNDATACOPY | MCOPY => 2,
        EXTCODECOPY => 3,
        _ => return 1,
    };
    // An unreadable or huge size fails the instruction itself (stack underflow, out of gas);
    // the count saturates (a size of 2^256 - 1 is a request's to give).
    let size = ctx.interpreter.stack.peek(depth).map_or(0, |size| size.saturating_to::<u64>());
    u32::try_from(size >> 15).unwrap_or(u32::MAX).saturating_add(1)
}

/// Counts the instruction, halting its frame once the cap has passed; then runs revm's own.
fn capped<const OP: u8>(ctx: Ctx<'_, '_>) -> InstructionExecResult {
    use revm::bytecode::opcode::*;
    use revm::interpreter::instructions::{control, host, memory, system};
    let counts = counts(OP, &ctx);
    if ctx.host.journaled_state.database.time_cap().passed(counts) {
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
        SSTORE => host::sstore(ctx),
        BLOCKHASH => host::blockhash(ctx),
        BALANCE => host::balance(ctx),
        EXTCODESIZE => host::extcodesize(ctx),
        EXTCODEHASH => host::extcodehash(ctx),
        SELFDESTRUCT => host::selfdestruct(ctx),
        // Not an opcode `capped_instructions` gives this wrapper: an invalid opcode, never a
        // panic in a run.
        _ => control::unknown(ctx),
    }
}

/// A call or create: counted like the others, and the depth of the frame it opens noted as a
/// block's instruments note it (`block_evm::instrument`; not shared, which would close an
/// import cycle between `db`, `time_cap` and `block_evm` for two lines): journal depth `d`
/// runs frame `d - 1`, so the new frame is frame `d`.
fn capped_frame<const OP: u8>(ctx: Ctx<'_, '_>) -> InstructionExecResult {
    use revm::bytecode::opcode::{CALL, CALLCODE, CREATE, CREATE2, DELEGATECALL, STATICCALL};
    use revm::interpreter::instructions::contract::{call, create};
    let depth = ctx.host.journaled_state.depth();
    let db = &mut ctx.host.journaled_state.database;
    if db.time_cap().passed(1) {
        return Err(InstructionResult::OutOfGas);
    }
    db.note_call_depth(depth);
    match OP {
        CREATE => create::<false, _, _>(ctx),
        CREATE2 => create::<true, _, _>(ctx),
        CALL | CALLCODE | DELEGATECALL | STATICCALL => call::<OP, _, _>(ctx),
        // As in `capped`: never given another opcode.
        _ => revm::interpreter::instructions::control::unknown(ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_without_a_deadline_never_passes() {
        let mut cap = TimeCap::new(None);
        assert!((0..10 * TimeCap::CHECK_EVERY).all(|_| !cap.passed(1)));
        assert!(!cap.passed(u32::MAX));
        assert!(!cap.expired());
    }

    #[test]
    fn a_past_deadline_is_seen_within_one_check_and_then_stays() {
        let mut cap = TimeCap::until(Some(Instant::now()));
        let counted = (1..=TimeCap::CHECK_EVERY).find(|_| cap.passed(1));
        assert_eq!(counted, Some(TimeCap::CHECK_EVERY));
        assert!(cap.expired() && cap.passed(1));
    }

    #[test]
    fn sized_work_reads_the_clock_sooner() {
        let mut cap = TimeCap::until(Some(Instant::now()));
        assert!(!cap.passed(1));
        // One hash of 8 MiB counts as a whole check's worth.
        assert!(cap.passed(1 + (8 << 20 >> 15)));
        let mut far = TimeCap::new(Some(Duration::from_secs(3600)));
        assert!((0..1_000).all(|_| !far.passed(u32::MAX)), "a read before the deadline passes");
    }
}
