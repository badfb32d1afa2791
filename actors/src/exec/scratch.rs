//! What an executor thread reuses from one call to the next: [`EvmScratch`] (revm's call
//! frames and memory buffer, kept within [`SCRATCH_RETAINED_BYTES`]).

use revm::context::LocalContext;
use revm::context_interface::LocalContextTr;
use revm::context_interface::local::FrameStack;
use revm::handler::EthFrame;

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
