//! The time cap of a call that runs on revm's plain loop (eth_call, eth_estimateGas): the jump
//! and call instructions consult a clock (`scratch::CallClock`) kept in the call's database.
//!
//! An inspector would do the same from its `step` hook, but it puts every instruction of the
//! call on revm's inspecting loop; an EVM-heavy call ran measurably slower there. Only the
//! instructions that can make a call long pay here: a frame without JUMP or JUMPI runs at most
//! its code once, so every unbounded amount of work passes through a jump, a call or a create.
//! Once the cap has passed those instructions halt (out of gas), so the whole call unwinds
//! after at most one frame's straight-line code.

use revm::context_interface::JournalTr;
use revm::handler::MainnetContext;
use revm::handler::instructions::EthInstructions;
use revm::interpreter::interpreter::EthInterpreter;
use revm::interpreter::{
    Instruction, InstructionContext, InstructionExecResult, InstructionResult,
};

use super::db::ExecDb;
use super::published::PublishedValues;

/// The instructions of a call's EVM over an [`ExecDb`].
type CallCtx<'a, P> = MainnetContext<ExecDb<'a, P>>;

/// Makes JUMP, JUMPI and the call and create instructions of `instructions` consult the
/// database's clock (`scratch::CallClock`) first, and the call and create instructions note the frame depth
/// they open (which bounds what the executor's scratch keeps, `EvmScratch::keep`).
pub(crate) fn clocked<'a, P: PublishedValues>(
    instructions: &mut EthInstructions<EthInterpreter, CallCtx<'a, P>>,
) {
    use revm::bytecode::opcode::{
        CALL, CALLCODE, CREATE, CREATE2, DELEGATECALL, JUMP, JUMPI, STATICCALL,
    };
    use revm::interpreter::instructions::contract::{call, create};
    use revm::interpreter::instructions::control::{jump, jumpi};

    type Ctx<'c, 'a, P> = InstructionContext<'c, CallCtx<'a, P>, EthInterpreter>;
    fn expired<P: PublishedValues>(ctx: &mut Ctx<'_, '_, P>) -> bool {
        ctx.host.journaled_state.database.clock.tick()
    }
    fn clocked_jump<P: PublishedValues, const OP: u8>(
        mut ctx: Ctx<'_, '_, P>,
    ) -> InstructionExecResult {
        if expired(&mut ctx) {
            return Err(InstructionResult::OutOfGas);
        }
        if OP == JUMP { jump(ctx) } else { jumpi(ctx) }
    }
    /// The frame a call or create from the current frame opens: journal depth `d` runs frame
    /// `d - 1`, so its child is frame `d`.
    fn opens_frame<P: PublishedValues>(ctx: &mut Ctx<'_, '_, P>) -> Result<(), InstructionResult> {
        if expired(ctx) {
            return Err(InstructionResult::OutOfGas);
        }
        let depth = ctx.host.journaled_state.depth();
        ctx.host.journaled_state.database.note_call_depth(depth);
        Ok(())
    }
    fn clocked_call<P: PublishedValues, const KIND: u8>(
        mut ctx: Ctx<'_, '_, P>,
    ) -> InstructionExecResult {
        opens_frame(&mut ctx)?;
        call::<KIND, _, _>(ctx)
    }
    fn clocked_create<P: PublishedValues, const IS_CREATE2: bool>(
        mut ctx: Ctx<'_, '_, P>,
    ) -> InstructionExecResult {
        opens_frame(&mut ctx)?;
        create::<IS_CREATE2, _, _>(ctx)
    }
    let table = instructions.instruction_table_mut();
    table[usize::from(JUMP)] = Instruction::new(clocked_jump::<P, JUMP>);
    table[usize::from(JUMPI)] = Instruction::new(clocked_jump::<P, JUMPI>);
    table[usize::from(CALL)] = Instruction::new(clocked_call::<P, CALL>);
    table[usize::from(CALLCODE)] = Instruction::new(clocked_call::<P, CALLCODE>);
    table[usize::from(DELEGATECALL)] = Instruction::new(clocked_call::<P, DELEGATECALL>);
    table[usize::from(STATICCALL)] = Instruction::new(clocked_call::<P, STATICCALL>);
    table[usize::from(CREATE)] = Instruction::new(clocked_create::<P, false>);
    table[usize::from(CREATE2)] = Instruction::new(clocked_create::<P, true>);
}
