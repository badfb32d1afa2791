//! Messages to the `MinerActor`.

use std::time::Duration;

use actix::Message;
use alloy_primitives::{Address, B256};

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
/// `evm_mine`, `anvil_mine` and `hardhat_mine`. Replies with the last block number.
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

/// Mines `count` blocks `interval` seconds apart (the first one at the next timestamp).
/// Serves `anvil_mine` / `hardhat_mine` with an interval. Replies with the last block number.
#[derive(Debug, Clone, Copy)]
pub struct MineSpaced {
    /// How many blocks.
    pub count: u64,
    /// Seconds between consecutive blocks (at least 1).
    pub interval: u64,
}

impl Message for MineSpaced {
    type Result = Result<u64, MineError>;
}

/// A mining setting that cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum IntervalError {
    /// The lower end of a range is above the upper end.
    #[error("interval range min {min_ms} ms is above max {max_ms} ms")]
    MinAboveMax {
        /// The lower end.
        min_ms: u64,
        /// The upper end.
        max_ms: u64,
    },
    /// `[0, 0]`: a range must allow some time between blocks (use 0 to disable).
    #[error("interval range [0, 0] is empty: use 0 to disable interval mining")]
    ZeroRange,
    /// A negative duration.
    #[error("interval must not be negative, got {0}")]
    Negative(String),
    /// Not a number.
    #[error("interval is not a number: {0}")]
    NotANumber(String),
}

/// When the miner makes blocks on its own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalMining {
    /// Every `0`.
    Fixed(Duration),
    /// After a uniformly drawn duration in `[min, max]`, drawn anew for each block.
    Range {
        /// Shortest wait.
        min: Duration,
        /// Longest wait.
        max: Duration,
    },
}

impl IntervalMining {
    /// A fixed block time; `None` (interval mining off) for zero.
    pub fn fixed(block_time: Duration) -> Option<Self> {
        (!block_time.is_zero()).then_some(Self::Fixed(block_time))
    }

    /// A random range; refuses `min > max` and `[0, 0]`. `min == max` is a fixed time.
    pub fn range(min: Duration, max: Duration) -> Result<Self, IntervalError> {
        if min > max {
            return Err(IntervalError::MinAboveMax {
                min_ms: min.as_millis() as u64,
                max_ms: max.as_millis() as u64,
            });
        }
        if max.is_zero() {
            return Err(IntervalError::ZeroRange);
        }
        Ok(if min == max { Self::Fixed(min) } else { Self::Range { min, max } })
    }
}

/// Turns interval mining on with `Some`, off with `None`. Serves `evm_setIntervalMining`.
#[derive(Debug, Clone, Copy)]
pub struct SetIntervalMining(pub Option<IntervalMining>);

impl Message for SetIntervalMining {
    type Result = ();
}

/// Turns automine on or off. Serves `evm_setAutomine`.
#[derive(Debug, Clone, Copy)]
pub struct SetAutomine(pub bool);

impl Message for SetAutomine {
    type Result = ();
}

/// Remembers the miner's clock (time offset and next-block settings) under snapshot `0`.
/// Sent with `evm_snapshot`, so that `evm_revert` also turns the clock back, as Hardhat does.
#[derive(Debug, Clone, Copy)]
pub struct SaveClock(pub u64);

impl Message for SaveClock {
    type Result = ();
}

/// Turns the clock back to what [`SaveClock`] saved under snapshot `0`, and forgets that and
/// every later save. Sent with a successful `evm_revert`.
#[derive(Debug, Clone, Copy)]
pub struct RestoreClock(pub u64);

impl Message for RestoreClock {
    type Result = ();
}

/// The miner's current settings and counters. Serves `anvil_getAutomine` and tests.
#[derive(Debug, Clone, Copy)]
pub struct GetMiningStatus;

/// What [`GetMiningStatus`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MiningStatus {
    /// Automine on.
    pub automine: bool,
    /// Interval mining, when on.
    pub interval: Option<IntervalMining>,
    /// Timer ticks skipped because a block was still being built when they were due.
    pub ticks_skipped: u64,
}

impl Message for GetMiningStatus {
    type Result = MiningStatus;
}

/// One change to how the next blocks are stamped. Serves `evm_setNextBlockTimestamp`,
/// `evm_increaseTime`, `evm_setBlockGasLimit`, `anvil_setNextBlockBaseFeePerGas`,
/// `anvil_setCoinbase` and `anvil_setPrevRandao`.
#[derive(Debug, Clone, Copy)]
pub enum SetBlockParam {
    /// The next block's timestamp (seconds); later blocks continue from it.
    NextTimestamp(u64),
    /// Moves the miner's clock forward by this many seconds.
    IncreaseTime(u64),
    /// Gas limit of later blocks.
    GasLimit(u64),
    /// Base fee of the next block only.
    NextBaseFee(u64),
    /// Fee recipient of later blocks.
    Coinbase(Address),
    /// PREVRANDAO of the next block only.
    PrevRandao(B256),
}

impl Message for SetBlockParam {
    /// The miner's total time offset in seconds after the change.
    type Result = Result<u64, MineError>;
}
