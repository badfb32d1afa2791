//! Messages to the `MinerActor`.

use std::time::Duration;

use actix::Message;
use alloy_primitives::{Address, B256};

use crate::MineError;
use crate::state::{LoadState, PatchState, RevertTo, TakeSnapshot};

/// In automine mode, mines blocks until no executable transaction is left, then replies with
/// the last block mined (or `None` when there was nothing to mine or automine is off).
/// The mempool asks it after each admission of a `ThenMine`, and answers the sender after the
/// miner has, so the receipt exists when `eth_sendTransaction` returns.
#[derive(Debug, Clone, Copy)]
pub struct AutoMine;

impl Message for AutoMine {
    type Result = Result<Option<u64>, MineError>;
}

/// The latest block timestamp the dev methods may ask for (seconds): `i64::MAX`, so that the
/// miner's clock offset (a block's timestamp minus the wall clock) always fits an `i64`, and
/// the chain can still go on for 2^63 blocks after it.
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64;

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
    /// Longer than [`IntervalMining::MAX`].
    #[error("interval of {ms} ms is too long: at most {max_ms} ms (one year)", max_ms = IntervalMining::MAX.as_millis())]
    TooLong {
        /// The interval asked for, in milliseconds (saturated).
        ms: u64,
    },
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
    /// The longest block time: one year. A timer further out than that is a mistake (or an
    /// attack: a block time near `u64::MAX` seconds overflows every clock it is added to), and
    /// tokio's timer wheel only reaches about two years.
    pub const MAX: Duration = Duration::from_secs(365 * 24 * 60 * 60);

    /// A fixed block time; `None` (interval mining off) for zero; refuses more than [`Self::MAX`].
    pub fn fixed(block_time: Duration) -> Result<Option<Self>, IntervalError> {
        Self::within_max(block_time)?;
        Ok((!block_time.is_zero()).then_some(Self::Fixed(block_time)))
    }

    fn within_max(duration: Duration) -> Result<(), IntervalError> {
        if duration > Self::MAX {
            let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            return Err(IntervalError::TooLong { ms });
        }
        Ok(())
    }

    /// A random range; refuses `min > max`, `[0, 0]` and a `max` over [`Self::MAX`].
    /// `min == max` is a fixed time.
    pub fn range(min: Duration, max: Duration) -> Result<Self, IntervalError> {
        Self::within_max(max)?;
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

/// Stops the miner for shutdown. Sent after the executor pool was closed
/// (`ExecutorClient::close`), which already keeps every later block from starting (automine,
/// the interval timer, queued multi-block requests and later mine requests fail with
/// `ExecError::ShuttingDown`); this cancels the timer and is answered once the block in
/// progress, if any, is committed (the miner serves one message at a time).
#[derive(Debug, Clone, Copy)]
pub struct StopMining;

impl Message for StopMining {
    type Result = ();
}

/// Turns automine on or off. Serves `evm_setAutomine`.
#[derive(Debug, Clone, Copy)]
pub struct SetAutomine(pub bool);

impl Message for SetAutomine {
    type Result = ();
}

/// A write of the head state outside a block, which the miner hands to the state owner between
/// two blocks: a dev patch ([`PatchState`]), `evm_snapshot` ([`TakeSnapshot`]), `evm_revert`
/// ([`RevertTo`]) or `anvil_loadState` ([`LoadState`]).
///
/// Why through the miner: a block is built on the head state as it was when its build began,
/// and its diff carries whole accounts. A patch written while a block is being built would be
/// overwritten when that block commits (the lost `anvil_setBalance` the crash soak caught), so
/// these writes wait for the block in progress, as anvil's wait for its block's lock. The
/// miner also keeps its clock with them: a snapshot saves the clock (time offset and
/// next-block settings) and a successful revert turns it back, as Hardhat does.
#[derive(Debug, Clone)]
pub struct BetweenBlocks<M>(pub M);

impl<T: 'static, M> Message for BetweenBlocks<M>
where
    M: Message<Result = Result<T, crate::StateError>>,
{
    type Result = Result<T, MineError>;
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
    /// The fee recipient of the blocks it mines (eth_coinbase).
    pub coinbase: Address,
    /// Gas limit of the next blocks.
    pub gas_limit: u64,
    /// The next block's timestamp as things stand (its override, the timestamp interval, or
    /// the clock; always after the head's).
    pub next_timestamp: u64,
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

/// Mines like [`MineBlocks`] and replies with every block mined, each with the return data of
/// its transactions. Serves `evm_mine_detailed` / `anvil_mine_detailed`.
#[derive(Debug, Clone, Copy)]
pub struct MineDetailed {
    /// How many blocks.
    pub count: u64,
    /// Timestamp of the first block (seconds), when the caller sets it.
    pub timestamp: Option<u64>,
}

/// One block [`MineDetailed`] made.
#[derive(Debug, Clone)]
pub struct MinedBlock {
    /// The committed block.
    pub block: std::sync::Arc<hearth_storage::SealedBlock>,
    /// What each of its transactions returned (revert data for a reverted one, `None` for a
    /// halted one), in order.
    pub outputs: Vec<Option<alloy_primitives::Bytes>>,
}

impl Message for MineDetailed {
    type Result = Result<Vec<MinedBlock>, MineError>;
}

/// Resets the miner's clock so that the next block is stamped `0` (or its parent's timestamp
/// plus one, if later), and later ones continue from there; a pending next-block timestamp is
/// dropped. Serves `anvil_setTime` / `evm_setTime`, and `anvil_rollback` (back to the new
/// head's timestamp, as anvil does). Replies with how many seconds `0` is past the timestamp
/// the next block would have had (zero when it is not).
#[derive(Debug, Clone, Copy)]
pub struct SetTime(pub u64);

impl Message for SetTime {
    type Result = Result<u64, MineError>;
}

/// Stamps each next block `0` seconds after its parent (`Some`), instead of by the clock
/// (`None`). Serves `anvil_setBlockTimestampInterval` and
/// `anvil_removeBlockTimestampInterval`. Replies whether an interval was set before.
#[derive(Debug, Clone, Copy)]
pub struct SetTimestampInterval(pub Option<u64>);

impl Message for SetTimestampInterval {
    type Result = bool;
}

/// Drops the newest `depth` blocks (through the state owner's `Rollback`), turns the clock
/// back to the new head's timestamp and the gas limit to its gas limit (anvil resets its
/// environment the same way), then mines one block per entry of `blocks`, each holding
/// exactly those transactions (invalid ones left out; the pool's wait). Serves
/// `anvil_rollback` (no blocks) and `anvil_reorg` (`depth` blocks). One atomic run: no other
/// block is built in between. Replies with the head after it.
#[derive(Debug, Clone)]
pub struct Rewind {
    /// How many blocks to drop.
    pub depth: u64,
    /// The transactions of each new block, in order.
    pub blocks: Vec<Vec<crate::block_build::PooledTx>>,
}

impl Message for Rewind {
    type Result = Result<u64, MineError>;
}

crate::actor_client! {
    /// The `MinerActor`'s client: mining on demand and the dev-chain clock and mode controls.
    pub struct MinerClient for "miner" {
        /// Mines what is pending when automine is on (after a transaction is admitted).
        ask auto_mine: AutoMine,
        /// Mines blocks on demand (evm_mine).
        send mine_blocks: MineBlocks,
        /// Mines blocks spaced by an interval.
        send mine_spaced: MineSpaced,
        /// evm_mine_detailed (and the new blocks of anvil_reorg).
        send mine_detailed: MineDetailed,
        /// Turns interval mining on or off.
        send set_interval_mining: SetIntervalMining,
        /// Turns automine on or off.
        send set_automine: SetAutomine,
        /// Next-block settings (timestamp, base fee, coinbase, ...).
        send set_block_param: SetBlockParam,
        /// Mining mode and counters.
        send mining_status: GetMiningStatus,
        /// A dev patch of the head state (anvil_setBalance, anvil_setCode, ...).
        send patch_state: BetweenBlocks<PatchState>,
        /// evm_snapshot, with the miner's clock.
        send take_snapshot: BetweenBlocks<TakeSnapshot>,
        /// evm_revert, with the miner's clock.
        send revert_to: BetweenBlocks<RevertTo>,
        /// anvil_loadState.
        send load_state: BetweenBlocks<LoadState>,
        /// anvil_rollback and anvil_reorg (and an engine forkchoice update to an ancestor).
        send rewind: Rewind,
        /// A block the Engine API built or checked, committed between the miner's blocks.
        send commit_block: BetweenBlocks<crate::state::CommitBlock>,
        /// anvil_setTime, and the clock reset of anvil_rollback.
        send set_time: SetTime,
        /// anvil_setBlockTimestampInterval / anvil_removeBlockTimestampInterval.
        send set_timestamp_interval: SetTimestampInterval,
    }
}
