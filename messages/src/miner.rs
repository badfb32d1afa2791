//! Messages to the `MinerActor`.

use actix::Message;

use crate::MineError;

/// In automine mode, mines blocks until no executable transaction is left, then replies with
/// the last block mined (or `None` when there was nothing to mine or automine is off).
/// The RPC front sends it after each admitted transaction, so the receipt exists when
/// `eth_sendTransaction` returns.
#[derive(Debug, Clone, Copy)]
pub struct AutoMine;

impl Message for AutoMine {
    type Result = Result<Option<u64>, MineError>;
}

/// Mines `count` blocks now, whatever the mode, with pending transactions if any. Serves
/// `evm_mine`. Replies with the last block number.
#[derive(Debug, Clone, Copy)]
pub struct MineBlocks {
    /// How many blocks.
    pub count: u64,
    /// Timestamp of the first block (seconds), when the caller sets it.
    pub timestamp: Option<u64>,
}

impl Message for MineBlocks {
    type Result = Result<u64, MineError>;
}
