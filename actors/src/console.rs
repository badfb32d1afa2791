//! console.log: what contracts send to the console address, captured during execution by the
//! precompile tap ([`crate::exec::ConsoleTap`]), bounded, and decoded into the lines the node
//! prints once the execution is final (a mined transaction when its block commits, a call when
//! it returns).
//!
//! Capture is a look at calls the EVM makes anyway: nothing steps opcodes, and a block with no
//! console call pays one address comparison per call frame.

mod format;
mod signatures;

use alloy_primitives::Bytes;
use hearth_messages::console::ConsoleLines;

pub use format::{decode_call, format_call};

/// Most bytes of console calldata one execution keeps; calls past it are counted, not kept. A
/// contract that logs megabytes in a loop costs the node this much per transaction.
pub const MAX_CAPTURED_BYTES: usize = 64 * 1024;

/// Most bytes of console lines one block keeps over all its transactions (past it, lines are
/// counted as dropped): a block of 1,000 transactions each at [`MAX_CAPTURED_BYTES`] stays at
/// this.
pub const MAX_BLOCK_CONSOLE_BYTES: usize = 1024 * 1024;

/// The console calls of one execution, as sent (selector and ABI-encoded arguments).
#[derive(Debug, Clone, Default)]
pub struct Captured {
    payloads: Vec<Bytes>,
    bytes: usize,
    dropped: u64,
}

impl Captured {
    /// Nothing captured.
    pub(crate) const fn new() -> Self {
        Self { payloads: Vec::new(), bytes: 0, dropped: 0 }
    }

    /// Whether a call of `len` bytes still fits the bound; counts it dropped when not.
    pub(crate) fn room_for(&mut self, len: usize) -> bool {
        if self.bytes.saturating_add(len) > MAX_CAPTURED_BYTES {
            self.dropped += 1;
            return false;
        }
        true
    }

    /// Keeps one call's calldata (checked with [`room_for`](Self::room_for) first).
    pub(crate) fn push(&mut self, payload: Bytes) {
        self.bytes += payload.len();
        self.payloads.push(payload);
    }

    /// Whether nothing was sent.
    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty() && self.dropped == 0
    }

    /// The lines, in call order. A call the console does not know (a selector no console.sol
    /// sends, or arguments that do not decode) prints nothing: on chain it is a call to an
    /// empty account like any other, and anvil's habit of reverting it would change the
    /// transaction's outcome.
    pub fn decode(self) -> ConsoleLines {
        let mut lines = Vec::new();
        for payload in &self.payloads {
            match format_call(payload) {
                Some(text) => lines.extend(text.lines().map(str::to_owned)),
                None => tracing::debug!(
                    target: "console",
                    selector = %alloy_primitives::hex::encode_prefixed(&payload[..payload.len().min(4)]),
                    len = payload.len(),
                    "a console call that decodes to no known console.log"
                ),
            }
        }
        ConsoleLines { lines, dropped: self.dropped }
    }
}

/// Console lines of a block's transactions, bounded over the block
/// ([`MAX_BLOCK_CONSOLE_BYTES`]).
#[derive(Debug, Default)]
pub struct BlockConsole {
    /// (position in the block, lines), for the transactions that printed.
    pub(crate) printed: Vec<(usize, ConsoleLines)>,
    bytes: usize,
}

impl BlockConsole {
    /// Adds the lines of the transaction at `position`, keeping what fits the block's bound.
    pub(crate) fn add(&mut self, position: usize, captured: Captured) {
        if captured.is_empty() {
            return;
        }
        let mut lines = captured.decode();
        let room = MAX_BLOCK_CONSOLE_BYTES.saturating_sub(self.bytes);
        let mut kept = 0;
        let mut used = 0;
        for line in &lines.lines {
            if used + line.len() > room {
                break;
            }
            used += line.len();
            kept += 1;
        }
        lines.dropped += (lines.lines.len() - kept) as u64;
        lines.lines.truncate(kept);
        self.bytes += used;
        if !lines.is_empty() {
            self.printed.push((position, lines));
        }
    }

    /// The lines per transaction position.
    pub fn into_printed(self) -> Vec<(usize, ConsoleLines)> {
        self.printed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_calls_up_to_its_bound_and_counts_the_rest() {
        let mut captured = Captured::default();
        let call = Bytes::from(vec![0u8; 1024]);
        let mut kept = 0;
        for _ in 0..100 {
            if captured.room_for(call.len()) {
                captured.push(call.clone());
                kept += 1;
            }
        }
        assert_eq!(kept, MAX_CAPTURED_BYTES / 1024);
        assert_eq!(captured.dropped, 100 - kept as u64);
    }

    #[test]
    fn a_block_keeps_lines_up_to_its_bound() {
        let mut block = BlockConsole::default();
        let line = "x".repeat(1000);
        let payload = format::tests::encode_string_call(&format!("{line}\n{line}"));
        for position in 0..2000 {
            let mut captured = Captured::default();
            assert!(captured.room_for(payload.len()));
            captured.push(payload.clone());
            block.add(position, captured);
        }
        let shown: usize = block.printed.iter().map(|(_, l)| l.lines.len()).sum();
        let dropped: u64 = block.printed.iter().map(|(_, l)| l.dropped).sum();
        assert_eq!(shown, MAX_BLOCK_CONSOLE_BYTES / 1000);
        // Transactions past the bound keep only their count; the one that crossed it both.
        assert_eq!(shown as u64 + dropped, 4000);
    }
}
