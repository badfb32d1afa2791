//! `MinerCore`: the miner's state and rules without actix, tokio or a wall clock. It decides
//! what to mine, when and with which timestamp; the actor (`super::MinerActor`) reads the
//! clocks, calls one method per message and carries out what comes back. Time comes in as
//! arguments: `now` is the wall clock in seconds (what blocks are stamped from), `at` the
//! time since the miner started (what the interval timer runs on).

use std::time::Duration;

use alloy_primitives::Address;
use hearth_messages::MineError;
use hearth_messages::miner::{IntervalMining, MiningStatus, SetBlockParam};

use super::block::{BlockRules, Stamped};
use super::clock::BlockClock;
use super::schedule::{Schedule, Tick};
use super::series::{Chunk, Series, SeriesQueue, SeriesStep};

/// The smallest block gas limit: one transfer.
pub(crate) const MIN_GAS_LIMIT: u64 = 21_000;

/// The settings a miner starts from, and keeps through a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Mine as soon as a transaction is admitted.
    pub(crate) automine: bool,
    /// Gas limit of every block.
    pub(crate) gas_limit: u64,
    /// Fee recipient.
    pub(crate) coinbase: Address,
}

/// The miner's core. `R` is where a series' answer goes (a channel in the actor).
#[derive(Debug)]
pub(crate) struct MinerCore<R> {
    settings: Settings,
    clock: BlockClock,
    schedule: Schedule,
    series: SeriesQueue<R>,
}

impl<R> MinerCore<R> {
    /// A miner with `settings`, its timer at `interval` (drawing random block times from
    /// `seed`), the clock at the wall clock's time.
    pub(crate) fn new(settings: Settings, interval: Option<IntervalMining>, seed: u64) -> Self {
        Self {
            settings,
            clock: BlockClock::default(),
            schedule: Schedule::new(interval, seed),
            series: SeriesQueue::default(),
        }
    }

    /// The core a restart leaves: rebuilt from what outlives a run (the settings, the clock's
    /// offset, timestamp interval and saved clocks, the timer and its generator), without the
    /// one-block overrides and queued series of the run that panicked; their replies come back
    /// for the caller to fail. The caller re-arms the timer.
    pub(crate) fn restart(&mut self) -> Vec<R> {
        let replies = self.series.drain();
        self.clock = self.clock.restarted();
        replies
    }

    /// The rules a run of blocks follows, copied out for its future.
    pub(crate) fn rules(&self) -> BlockRules {
        let (offset, next, timestamp_interval) = self.clock.parts();
        BlockRules {
            gas_limit: self.settings.gas_limit,
            coinbase: self.settings.coinbase,
            offset,
            next,
            timestamp_interval,
        }
    }

    /// AutoMine: the rules of the run when automine is on; `None` makes no block.
    pub(crate) fn automine(&self) -> Option<BlockRules> {
        self.settings.automine.then(|| self.rules())
    }

    /// A run made blocks, the last stamped `last`, with the wall clock at `now`.
    pub(crate) fn blocks_made(&mut self, last: u64, stamped: Stamped, now: u64) {
        self.clock.blocks_made(last, stamped, now);
    }

    /// The timer is (re)armed at `at`: when its tick is due (`None`: off).
    pub(crate) fn arm(&mut self, at: Duration) -> Option<Duration> {
        self.schedule.arm(at)
    }

    /// The timer's tick fired at `at`.
    pub(crate) fn tick(&mut self, at: Duration) -> Tick {
        self.schedule.tick(at)
    }

    /// A block build ran from `started` to `ended` (for telling ticks that came due during it).
    pub(crate) fn build_ran(&mut self, started: Duration, ended: Duration) {
        self.schedule.build_ran(started, ended);
    }

    /// SetIntervalMining at `at`: when the first tick is due (`None`: off).
    pub(crate) fn set_interval(
        &mut self,
        interval: Option<IntervalMining>,
        at: Duration,
    ) -> Option<Duration> {
        self.schedule.set_interval(interval, at)
    }

    /// SetAutomine.
    pub(crate) fn set_automine(&mut self, on: bool) {
        self.settings.automine = on;
    }

    /// SetBlockParam, the head stamped `parent`: answers the clock's offset afterwards.
    pub(crate) fn set_block_param(
        &mut self,
        param: SetBlockParam,
        parent: u64,
        now: u64,
    ) -> Result<u64, MineError> {
        match param {
            SetBlockParam::NextTimestamp(t) => self.clock.set_next_timestamp(t, parent)?,
            SetBlockParam::IncreaseTime(seconds) => self.clock.increase_time(seconds, now)?,
            SetBlockParam::GasLimit(gas) => {
                if gas < MIN_GAS_LIMIT {
                    return Err(MineError::Setting(format!(
                        "gas limit {gas} is below {MIN_GAS_LIMIT}"
                    )));
                }
                self.settings.gas_limit = gas;
            }
            SetBlockParam::NextBaseFee(fee) => self.clock.set_next_base_fee(fee),
            SetBlockParam::Coinbase(address) => self.settings.coinbase = address,
            SetBlockParam::PrevRandao(value) => self.clock.set_next_prevrandao(value),
        }
        Ok(self.clock.offset_secs())
    }

    /// SetTime (see [`BlockClock::set_time`]).
    pub(crate) fn set_time(
        &mut self,
        timestamp: u64,
        parent: u64,
        now: u64,
    ) -> Result<u64, MineError> {
        self.clock.set_time(timestamp, parent, now)
    }

    /// The clock's offset (seconds, 0 when behind the wall clock).
    pub(crate) fn offset_secs(&self) -> u64 {
        self.clock.offset_secs()
    }

    /// SetTimestampInterval: answers whether one was set before.
    pub(crate) fn set_timestamp_interval(&mut self, interval: Option<u64>) -> bool {
        self.clock.set_timestamp_interval(interval)
    }

    /// GetMiningStatus, the head stamped `parent`.
    pub(crate) fn status(&self, parent: u64, now: u64) -> MiningStatus {
        MiningStatus {
            automine: self.settings.automine,
            interval: self.schedule.interval(),
            ticks_skipped: self.schedule.ticks_skipped(),
            coinbase: self.settings.coinbase,
            gas_limit: self.settings.gas_limit,
            next_timestamp: self.clock.next_timestamp(parent, now),
        }
    }

    /// The state owner took snapshot `id`: the clock is saved with it.
    pub(crate) fn snapshot_taken(&mut self, id: u64) {
        self.clock.save(id);
    }

    /// The state owner answered a revert to `id` with `reverted`.
    pub(crate) fn reverted(&mut self, id: u64, reverted: bool) {
        if reverted {
            self.clock.revert(id);
        }
    }

    /// The chain was rolled back to a head stamped `head` with gas limit `head_gas_limit`:
    /// later blocks follow it, as anvil resets its environment to the common block.
    pub(crate) fn rewound(&mut self, head: u64, head_gas_limit: u64, now: u64) {
        self.clock.rewound(head, now);
        self.settings.gas_limit = head_gas_limit.max(MIN_GAS_LIMIT);
    }

    /// anvil_reset put a new chain in place, its head's gas limit `head_gas_limit`: the clock
    /// runs from it as at a start; mode, coinbase and timestamp interval stay (anvil 1.7.1).
    pub(crate) fn reset(&mut self, head_gas_limit: u64) {
        self.clock.reset();
        self.settings.gas_limit = head_gas_limit.max(MIN_GAS_LIMIT);
    }

    /// Queues a series of blocks.
    pub(crate) fn push_series(&mut self, series: Series<R>) {
        self.series.push(series);
    }

    /// The next chunk to mine, unless one is being mined or none is queued.
    pub(crate) fn next_chunk(&mut self) -> Option<(Series<R>, Chunk)> {
        self.series.next_chunk()
    }

    /// A chunk ended (see [`SeriesQueue::chunk_ended`]); `last` is its last block's timestamp,
    /// when it made one, with the wall clock at `now`.
    pub(crate) fn chunk_ended(
        &mut self,
        series: Series<R>,
        chunk: &Chunk,
        result: Result<u64, MineError>,
        last: Option<u64>,
        now: u64,
        caller_waiting: bool,
    ) -> SeriesStep<R> {
        if let Some(last) = last {
            self.blocks_made(last, series.stamped(), now);
        }
        self.series.chunk_ended(series, chunk, result, caller_waiting)
    }

    /// A chunk's run panicked (the restart that follows fails the series).
    pub(crate) fn chunk_panicked(&mut self) {
        self.series.chunk_panicked();
    }
}
