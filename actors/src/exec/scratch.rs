//! What an executor thread reuses from one call to the next, and the inspector every call
//! runs under: [`EvmScratch`] (revm's call frames and memory buffer, kept within
//! [`SCRATCH_RETAINED_BYTES`]) and [`CallGuard`] (the EVM time cap, and the depth that bounds
//! what the scratch keeps).

use revm::context::LocalContext;
use revm::context_interface::LocalContextTr;
use revm::context_interface::local::FrameStack;
use revm::handler::EthFrame;
use revm::interpreter::interpreter_action::{CallInputs, CallOutcome as FrameCallOutcome};
use revm::interpreter::interpreter_action::{CreateInputs, CreateOutcome};

/// Most bytes of EVM stacks and memory an executor thread keeps between calls, so that the
/// next call allocates no stacks or memory buffer: its pooled call frames (a 1024-word stack, 32 KiB, each; revm
/// pools them eight at a time) and the EVM memory buffer. After a call that needed more (a deep
/// call chain, a large memory expansion) the thread drops them and starts the next call with
/// fresh ones, so what a thread holds between calls never exceeds this.
pub const SCRATCH_RETAINED_BYTES: usize = 1 << 20;

/// Bytes one pooled call frame holds: the frame itself and its stack's buffer.
const FRAME_BYTES: usize = size_of::<EthFrame>() + revm::interpreter::STACK_LIMIT * 32;

/// What revm allocates per call (or block) and an executor thread reuses: the call frames and
/// the shared memory buffer (`LocalContext`). They carry no state from one call to the next:
/// revm re-initialises a frame before using it, and the buffer is cleared here. eth_call,
/// block building and block import (`block_exec::execute_block`) all draw on it.
#[derive(Debug)]
pub(crate) struct EvmScratch {
    pub(crate) frames: Option<FrameStack<EthFrame>>,
    pub(crate) local: Option<LocalContext>,
    /// Frames the kept `frames` holds: its high-water mark (revm's pool never shrinks).
    frames_held: usize,
    pub(crate) retain_bytes: usize,
}

impl EvmScratch {
    pub(crate) fn new(retain_bytes: usize) -> Self {
        Self { frames: None, local: None, frames_held: 0, retain_bytes }
    }

    /// How many call frames it keeps for the next call or block (0: none kept).
    #[cfg(test)]
    pub(crate) fn frames_kept(&self) -> usize {
        if self.frames.is_some() { self.frames_held } else { 0 }
    }

    pub(crate) fn take_frames(&mut self) -> FrameStack<EthFrame> {
        self.frames.take().unwrap_or_else(|| FrameStack::new_prealloc(8))
    }

    pub(crate) fn take_local(&mut self) -> LocalContext {
        self.local.take().unwrap_or_default()
    }

    /// Keeps what a call used when it fits the retention bound; `max_depth` is the deepest
    /// frame the call reached (0: the top frame only). The pool holds as many frames as the
    /// deepest call it ever served (revm grows it eight at a time and never shrinks it).
    pub(crate) fn keep(
        &mut self,
        frames: FrameStack<EthFrame>,
        mut local: LocalContext,
        max_depth: usize,
    ) {
        let frames_held = self.frames_held.max((max_depth + 1).next_multiple_of(8));
        let memory = local.shared_memory_buffer().borrow().capacity();
        if frames_held * FRAME_BYTES + memory <= self.retain_bytes {
            local.clear();
            self.frames = Some(frames);
            self.local = Some(local);
            self.frames_held = frames_held;
        } else {
            self.frames_held = 0;
        }
    }
}

/// The inspector every call runs under. It stops a call that runs past its time cap: revm has
/// no clock of its own, so it looks at the time every `CHECK_EVERY` instructions (an
/// `Instant::now` per instruction would cost more than most instructions); once the cap has
/// passed it halts every frame it sees, so the whole call unwinds at once. It also records the
/// deepest frame, which bounds what `EvmScratch` keeps.
#[derive(Debug)]
pub(crate) struct CallGuard {
    at: Option<std::time::Instant>,
    steps: u32,
    /// Whether the cap was reached (every frame since has been halted).
    pub(crate) expired: bool,
    depth: usize,
    pub(crate) max_depth: usize,
}

impl CallGuard {
    const CHECK_EVERY: u32 = 4096;

    pub(crate) fn new(timeout: Option<std::time::Duration>) -> Self {
        Self::until(timeout.map(|t| std::time::Instant::now() + t))
    }

    /// A guard that halts whatever still runs at `deadline` (`None`: never), so that several
    /// transactions can share one time cap (eth_simulateV1).
    pub(crate) const fn until(deadline: Option<std::time::Instant>) -> Self {
        Self { at: deadline, steps: 0, expired: false, depth: 0, max_depth: 0 }
    }

    fn enter(&mut self) {
        // `call` / `create` run for the top frame too, so depth 1 is the top frame.
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth.saturating_sub(1));
    }
}

impl<CTX> revm::Inspector<CTX> for CallGuard {
    fn step(&mut self, interp: &mut revm::interpreter::Interpreter, _context: &mut CTX) {
        let Some(at) = self.at else { return };
        self.steps = self.steps.wrapping_add(1);
        if !self.expired
            && self.steps.is_multiple_of(Self::CHECK_EVERY)
            && std::time::Instant::now() >= at
        {
            self.expired = true;
        }
        if self.expired {
            interp.halt(revm::interpreter::InstructionResult::OutOfGas);
        }
    }

    fn call(&mut self, _context: &mut CTX, _inputs: &mut CallInputs) -> Option<FrameCallOutcome> {
        self.enter();
        None
    }

    fn call_end(&mut self, _context: &mut CTX, _inputs: &CallInputs, _out: &mut FrameCallOutcome) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn create(&mut self, _context: &mut CTX, _inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.enter();
        None
    }

    fn create_end(&mut self, _context: &mut CTX, _inputs: &CreateInputs, _out: &mut CreateOutcome) {
        self.depth = self.depth.saturating_sub(1);
    }
}
