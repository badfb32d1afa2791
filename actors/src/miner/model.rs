//! Model test of the miner's core, in sled's style: proptest draws a list of operations (time
//! passes, transactions arrive, evm_mine, timestamp settings, interval and automine switches,
//! snapshots and reverts, rollbacks, resets, restarts), applies each to the core (driven as the
//! actor drives it, with a simulated chain, pool and state owner) and to a deliberately simple
//! model written from the rules as anvil and Hardhat state them, and compares after every op:
//! the answers, every block mined (number, timestamp, transactions, base fee override, gas
//! limit) and the status (`next_timestamp` above all). A failure shrinks to a short list.

use std::time::Duration;

use hearth_messages::MineError;
use hearth_messages::miner::{IntervalMining, MAX_TIMESTAMP, MiningStatus, SetBlockParam};
use proptest::prelude::*;

use super::block::{BlockKind, BlockRules, Position, Stamped};
use super::core::{MIN_GAS_LIMIT, MinerCore, Settings};
use super::schedule::Tick;
use super::series::{MINE_CHUNK_BLOCKS, Series, SeriesStep, Spacing};

/// The wall clock's reading when the test starts, and the genesis timestamp.
const GENESIS: u64 = 1_000_000;
const GAS_LIMIT: u64 = 30_000_000;

/// One thing that happens to a miner.
#[derive(Debug, Clone)]
enum Op {
    /// Time passes (milliseconds): interval ticks fire.
    Wait(u64),
    /// A transaction is admitted; the RPC front then asks for automine.
    Tx,
    /// evm_mine / anvil_mine: `count` blocks, the first stamped `timestamp` if given.
    Mine {
        count: u64,
        timestamp: Option<u64>,
    },
    /// anvil_mine with an interval: blocks `interval` seconds apart.
    MineSpaced {
        count: u64,
        interval: u64,
    },
    SetNextTimestamp(u64),
    IncreaseTime(u64),
    SetTime(u64),
    SetNextBaseFee(u64),
    SetGasLimit(u64),
    SetTimestampInterval(Option<u64>),
    SetAutomine(bool),
    /// Interval mining with a fixed block time in milliseconds, or off.
    SetInterval(Option<u64>),
    Snapshot,
    /// evm_revert to the `n`-th live snapshot from the oldest (modulo their number), or to an
    /// id never handed out when there is none.
    Revert(usize),
    /// anvil_rollback by `depth` blocks.
    Rollback(u64),
    /// anvil_reset to a chain whose head is stamped `timestamp` with `gas_limit`.
    Reset {
        timestamp: u64,
        gas_limit: u64,
    },
    /// The actor restarts after a panic: the core is rebuilt from what outlives a run.
    Restart,
}

/// A block as both sides record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    timestamp: u64,
    txs: u64,
    base_fee: Option<u64>,
    gas_limit: u64,
}

impl Block {
    fn genesis(timestamp: u64, gas_limit: u64) -> Self {
        Self { timestamp, txs: 0, base_fee: None, gas_limit }
    }
}

/// The errors the rules give, as the model tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Not after the parent.
    Timestamp { parent: u64, got: u64 },
    /// A setting out of range.
    Setting,
    /// The state owner refused (a rollback deeper than the chain).
    StateOwner,
}

impl From<MineError> for Refusal {
    fn from(error: MineError) -> Self {
        match error {
            MineError::Timestamp { parent, got } => Self::Timestamp { parent, got },
            MineError::Setting(_) => Self::Setting,
            other => panic!("the core gave an error the model does not know: {other}"),
        }
    }
}

/// What an op answers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    None,
    Number(Result<Option<u64>, Refusal>),
    Value(Result<u64, Refusal>),
    Bool(bool),
}

/// What the state owner does with snapshots, the same on both sides: ids count up; a revert
/// to a live one truncates the chain and forgets it and every later one.
#[derive(Debug, Clone, Default)]
struct Snapshots {
    live: Vec<(u64, usize)>,
    next_id: u64,
}

impl Snapshots {
    fn take(&mut self, chain_len: usize) -> u64 {
        self.next_id += 1;
        self.live.push((self.next_id, chain_len));
        self.next_id
    }

    fn pick(&self, n: usize) -> u64 {
        if self.live.is_empty() { u64::MAX } else { self.live[n % self.live.len()].0 }
    }

    /// The chain length to go back to, when `id` is live.
    fn revert(&mut self, id: u64) -> Option<usize> {
        let index = self.live.iter().position(|(live, _)| *live == id)?;
        let len = self.live[index].1;
        self.live.truncate(index);
        Some(len)
    }

    fn rolled_back(&mut self, chain_len: usize) {
        self.live.retain(|(_, len)| *len <= chain_len);
    }
}

/// The core, driven as `MinerActor` drives it, on a simulated chain, pool and state owner.
#[derive(Debug)]
struct Driven {
    core: MinerCore<()>,
    at: Duration,
    timer: Option<Duration>,
    chain: Vec<Block>,
    pending: u64,
    snapshots: Snapshots,
}

impl Driven {
    fn new() -> Self {
        let settings =
            Settings { automine: true, gas_limit: GAS_LIMIT, coinbase: Default::default() };
        let mut core = MinerCore::new(settings, None, 7);
        let timer = core.arm(Duration::ZERO);
        Self {
            core,
            at: Duration::ZERO,
            timer,
            chain: vec![Block::genesis(GENESIS, GAS_LIMIT)],
            pending: 0,
            snapshots: Snapshots::default(),
        }
    }

    fn wall(&self) -> u64 {
        GENESIS + self.at.as_secs()
    }

    fn parent(&self) -> u64 {
        self.chain.last().expect("a chain has a genesis").timestamp
    }

    fn head(&self) -> u64 {
        self.chain.len() as u64 - 1
    }

    /// `MineJob::mine` without the peers: the pool gives everything pending.
    fn mine(&mut self, rules: &BlockRules, kind: BlockKind) -> Result<Option<u64>, MineError> {
        if self.pending == 0 && kind.skips_empty() {
            return Ok(None);
        }
        let timestamp = rules.stamp(kind, self.parent(), self.wall())?;
        let block = Block {
            timestamp,
            txs: std::mem::take(&mut self.pending),
            base_fee: rules.base_fee(kind),
            gas_limit: rules.gas_limit,
        };
        self.chain.push(block);
        Ok(Some(timestamp))
    }

    fn wait(&mut self, ms: u64) {
        let until = self.at + Duration::from_millis(ms);
        while let Some(due) = self.timer.filter(|due| *due <= until) {
            self.at = due;
            self.timer = None;
            match self.core.tick(self.at) {
                Tick::Off => {}
                Tick::Skipped { next, .. } => self.timer = Some(next),
                Tick::Mine { next } => {
                    self.timer = Some(next);
                    let rules = self.core.rules();
                    // A failed tick block is logged and left; the next tick tries again.
                    if let Ok(Some(last)) = self.mine(&rules, BlockKind::Tick) {
                        self.core.blocks_made(last, Stamped::ByClock, self.wall());
                    }
                    self.core.build_ran(self.at, self.at);
                }
            }
        }
        self.at = until;
    }

    /// `MineJob::mine_pending`: the pool is emptied by one block.
    fn automine(&mut self) -> Result<Option<u64>, MineError> {
        let Some(rules) = self.core.automine() else { return Ok(None) };
        let made = self.mine(&rules, BlockKind::Auto(Position::First))?;
        if let Some(last) = made {
            self.core.blocks_made(last, Stamped::ByClock, self.wall());
        }
        Ok(made.map(|_| self.head()))
    }

    /// A series, chunk by chunk, as `mine_next_chunk` and `MineJob::mine_chunk` run it.
    fn series(
        &mut self,
        count: u64,
        timestamp: Option<u64>,
        spacing: Spacing,
        stamped: Stamped,
    ) -> Result<u64, MineError> {
        self.core.push_series(Series::new(count, timestamp, spacing, stamped, ()));
        while let Some((series, mut chunk)) = self.core.next_chunk() {
            let rules = self.core.rules();
            let mut last = None;
            let mut result = Ok(());
            for i in 0..chunk.count {
                match self.mine(&rules, chunk.block(i)) {
                    Ok(Some(stamped)) => {
                        chunk.mined(stamped);
                        last = Some(stamped);
                    }
                    Ok(None) => {}
                    Err(error) => {
                        result = Err(error);
                        break;
                    }
                }
            }
            let result = result.map(|()| self.head());
            match self.core.chunk_ended(series, &chunk, result, last, self.wall(), true) {
                SeriesStep::Finished { last, .. } => return Ok(last),
                SeriesStep::Failed { error, .. } => return Err(error),
                SeriesStep::Continues => {}
                SeriesStep::Abandoned => unreachable!("the caller waits"),
            }
        }
        unreachable!("a series ends finished or failed")
    }

    fn param(&mut self, param: SetBlockParam) -> Reply {
        let (parent, now) = (self.parent(), self.wall());
        Reply::Value(self.core.set_block_param(param, parent, now).map_err(Refusal::from))
    }

    fn apply(&mut self, op: &Op) -> Reply {
        match *op {
            Op::Wait(ms) => {
                self.wait(ms);
                Reply::None
            }
            Op::Tx => {
                self.pending += 1;
                Reply::Number(self.automine().map_err(Refusal::from))
            }
            Op::Mine { count, timestamp } => {
                let stamped =
                    if timestamp.is_some() { Stamped::ByCaller } else { Stamped::ByClock };
                let mined = self.series(count, timestamp, Spacing::Clock, stamped);
                Reply::Number(mined.map(Some).map_err(Refusal::from))
            }
            Op::MineSpaced { count, interval } => {
                let spacing = Spacing::Seconds(interval.max(1));
                let mined = self.series(count, None, spacing, Stamped::ByCaller);
                Reply::Number(mined.map(Some).map_err(Refusal::from))
            }
            Op::SetNextTimestamp(t) => self.param(SetBlockParam::NextTimestamp(t)),
            Op::IncreaseTime(seconds) => self.param(SetBlockParam::IncreaseTime(seconds)),
            Op::SetNextBaseFee(fee) => self.param(SetBlockParam::NextBaseFee(fee)),
            Op::SetGasLimit(gas) => self.param(SetBlockParam::GasLimit(gas)),
            Op::SetTime(t) => {
                let (parent, now) = (self.parent(), self.wall());
                Reply::Value(self.core.set_time(t, parent, now).map_err(Refusal::from))
            }
            Op::SetTimestampInterval(interval) => {
                Reply::Bool(self.core.set_timestamp_interval(interval))
            }
            Op::SetAutomine(on) => {
                self.core.set_automine(on);
                Reply::None
            }
            Op::SetInterval(ms) => {
                let interval = ms.map(|ms| IntervalMining::Fixed(Duration::from_millis(ms)));
                self.timer = self.core.set_interval(interval, self.at);
                Reply::None
            }
            Op::Snapshot | Op::Revert(_) | Op::Rollback(_) | Op::Reset { .. } | Op::Restart => {
                self.history(op)
            }
        }
    }

    /// Snapshots, reverts, rollbacks, resets and restarts, with the state owner simulated.
    fn history(&mut self, op: &Op) -> Reply {
        match *op {
            Op::Snapshot => {
                let id = self.snapshots.take(self.chain.len());
                self.core.snapshot_taken(id);
                Reply::Value(Ok(id))
            }
            Op::Revert(n) => {
                let id = self.snapshots.pick(n);
                let len = self.snapshots.revert(id);
                if let Some(len) = len {
                    self.chain.truncate(len);
                }
                self.core.reverted(id, len.is_some());
                Reply::Bool(len.is_some())
            }
            Op::Rollback(depth) => {
                if depth > self.head() {
                    return Reply::Number(Err(Refusal::StateOwner));
                }
                self.chain.truncate(self.chain.len() - depth as usize);
                self.snapshots.rolled_back(self.chain.len());
                let head = *self.chain.last().expect("a chain has a genesis");
                self.core.rewound(head.timestamp, head.gas_limit, self.wall());
                Reply::Number(Ok(Some(self.head())))
            }
            Op::Reset { timestamp, gas_limit } => {
                self.chain = vec![Block::genesis(timestamp, gas_limit)];
                self.snapshots =
                    Snapshots { next_id: self.snapshots.next_id, ..Default::default() };
                self.core.reset(gas_limit);
                Reply::None
            }
            Op::Restart => {
                self.core.restart();
                self.timer = self.core.arm(self.at);
                Reply::None
            }
            ref other => unreachable!("{other:?} is not a history op"),
        }
    }

    fn status(&self) -> MiningStatus {
        self.core.status(self.parent(), self.wall())
    }
}

/// What evm_snapshot saves in the model: id, clock, next timestamp, next base fee, time set.
type Saved = (u64, (i128, u64), Option<u64>, Option<u64>, Option<u64>);

/// The model: one flat struct, each rule written out once, in the words of the docs.
#[derive(Debug, Clone)]
struct Model {
    at_ms: u64,
    chain: Vec<Block>,
    pending: u64,
    automine: bool,
    gas_limit: u64,
    /// Block time (ms) and when the next tick is due (ms).
    ticks: Option<(u64, u64)>,
    /// The miner's clock was set to read `.0` when the wall clock read `.1`; it runs with it.
    clock: (i128, u64),
    next_timestamp: Option<u64>,
    next_base_fee: Option<u64>,
    /// anvil_setTime's time, until the next block.
    time_set: Option<u64>,
    timestamp_interval: Option<u64>,
    /// evm_snapshot's saves, oldest first.
    saved: Vec<Saved>,
    snapshots: Snapshots,
}

impl Model {
    fn new() -> Self {
        Self {
            at_ms: 0,
            chain: vec![Block::genesis(GENESIS, GAS_LIMIT)],
            pending: 0,
            automine: true,
            gas_limit: GAS_LIMIT,
            ticks: None,
            clock: (i128::from(GENESIS), GENESIS),
            next_timestamp: None,
            next_base_fee: None,
            time_set: None,
            timestamp_interval: None,
            saved: Vec::new(),
            snapshots: Snapshots::default(),
        }
    }

    fn wall(&self) -> u64 {
        GENESIS + self.at_ms / 1000
    }

    fn parent(&self) -> u64 {
        self.chain.last().expect("a chain has a genesis").timestamp
    }

    fn head(&self) -> u64 {
        self.chain.len() as u64 - 1
    }

    /// What the miner's clock reads now: never below 0 nor past the latest timestamp.
    fn reading(&self) -> u64 {
        let (set_to, set_at) = self.clock;
        (set_to + i128::from(self.wall()) - i128::from(set_at)).clamp(0, i128::from(MAX_TIMESTAMP))
            as u64
    }

    /// How far the clock is ahead of the wall clock (0 when behind).
    fn ahead(&self) -> u64 {
        let (set_to, set_at) = self.clock;
        (set_to - i128::from(set_at)).clamp(0, i128::from(MAX_TIMESTAMP)) as u64
    }

    fn clock_reads(&mut self, timestamp: u64) {
        self.clock = (i128::from(timestamp), self.wall());
    }

    /// The timestamp of the next block: asked for, else set for the next block (first block
    /// of a run only), else the timestamp interval after the parent (or the time set), else
    /// the clock; always after the parent.
    fn stamp(&self, first: bool, asked: Option<u64>) -> Result<u64, Refusal> {
        let parent = self.parent();
        let (next, time_set) =
            if first { (self.next_timestamp, self.time_set) } else { (None, None) };
        let timestamp = match (asked.or(next), self.timestamp_interval) {
            (Some(t), _) => t,
            (None, Some(interval)) => {
                let t = time_set.unwrap_or(parent).checked_add(interval);
                t.filter(|t| *t <= MAX_TIMESTAMP)
                    .ok_or(Refusal::Setting)?
                    .max(parent.saturating_add(1))
            }
            (None, None) => self.reading().max(parent.saturating_add(1)),
        };
        if timestamp <= parent {
            return Err(Refusal::Timestamp { parent, got: timestamp });
        }
        Ok(timestamp)
    }

    fn next_timestamp_now(&self) -> u64 {
        match self.stamp(true, None) {
            Ok(t) => t,
            Err(Refusal::Timestamp { got, .. }) => got,
            Err(_) => MAX_TIMESTAMP,
        }
    }

    /// Mines one block of a run; `None` when automine finds nothing to mine.
    fn block(
        &mut self,
        first: bool,
        asked: Option<u64>,
        skip_empty: bool,
    ) -> Result<Option<u64>, Refusal> {
        if skip_empty && self.pending == 0 {
            return Ok(None);
        }
        let timestamp = self.stamp(first, asked)?;
        let base_fee = if first { self.next_base_fee } else { None };
        let txs = std::mem::take(&mut self.pending);
        self.chain.push(Block { timestamp, txs, base_fee, gas_limit: self.gas_limit });
        Ok(Some(timestamp))
    }

    /// A run that made blocks ended: one-block settings are used up; a timestamp set for the
    /// next block or given by the caller becomes the clock's reading.
    fn run_ended(&mut self, last: Option<u64>, by_caller: bool) {
        let Some(last) = last else { return };
        if self.next_timestamp.take().is_some() || by_caller {
            self.clock_reads(last);
        }
        self.next_base_fee = None;
        self.time_set = None;
    }

    /// `count` blocks; after the first, each asked timestamp follows `after`.
    fn run(
        &mut self,
        count: u64,
        mut asked: Option<u64>,
        by_caller: bool,
        after: impl Fn(Option<u64>, u64) -> Option<u64>,
    ) -> Result<Option<u64>, Refusal> {
        let mut last = None;
        let mut result = Ok(());
        for i in 0..count {
            match self.block(i == 0, asked, false) {
                Ok(Some(t)) => {
                    asked = after(asked, t);
                    last = Some(t);
                }
                Ok(None) => {}
                Err(refusal) => {
                    result = Err(refusal);
                    break;
                }
            }
            // A series is mined in chunks with the mailbox served between them, and each chunk
            // ends a run: a timestamp set for the next block moves the clock to the first
            // chunk's last block, not the series' (the core's rule, found by this test).
            if (i + 1) % MINE_CHUNK_BLOCKS == 0 {
                self.run_ended(last.take(), by_caller);
            }
        }
        self.run_ended(last, by_caller);
        result.map(|()| Some(self.head()))
    }

    fn offset_reply(&self) -> Reply {
        Reply::Value(Ok(self.ahead()))
    }

    fn drop_one_block_settings(&mut self) {
        self.next_timestamp = None;
        self.next_base_fee = None;
        self.time_set = None;
    }

    fn apply(&mut self, op: &Op) -> Reply {
        match op {
            Op::Wait(_) | Op::Tx | Op::Mine { .. } | Op::MineSpaced { .. } => self.mining(op),
            Op::Snapshot | Op::Revert(_) | Op::Rollback(_) | Op::Reset { .. } | Op::Restart => {
                self.history(op)
            }
            _ => self.setting(op),
        }
    }

    /// Time passing and the requests that make blocks.
    fn mining(&mut self, op: &Op) -> Reply {
        match *op {
            Op::Wait(ms) => {
                let until = self.at_ms + ms;
                while let Some((block_time, due)) = self.ticks.filter(|(_, due)| *due <= until) {
                    self.at_ms = due;
                    self.ticks = Some((block_time, due + block_time));
                    if let Ok(last) = self.block(true, None, false) {
                        self.run_ended(last, false);
                    }
                }
                self.at_ms = until;
                Reply::None
            }
            Op::Tx => {
                self.pending += 1;
                if !self.automine {
                    return Reply::Number(Ok(None));
                }
                let mined = self.block(true, None, true);
                if let Ok(last) = mined {
                    self.run_ended(last, false);
                }
                Reply::Number(mined.map(|made| made.map(|_| self.head())))
            }
            Op::Mine { count, timestamp } => {
                let after = |asked: Option<u64>, t: u64| asked.map(|a| a.max(t).saturating_add(1));
                Reply::Number(self.run(count, timestamp, timestamp.is_some(), after))
            }
            Op::MineSpaced { count, interval } => {
                let interval = interval.max(1);
                let after = move |_: Option<u64>, t: u64| Some(t.saturating_add(interval));
                Reply::Number(self.run(count, None, true, after))
            }
            ref other => unreachable!("{other:?} is not a mining op"),
        }
    }

    /// The settings: timestamps, gas limit, base fee, modes.
    fn setting(&mut self, op: &Op) -> Reply {
        match *op {
            Op::SetNextTimestamp(t) => {
                if t > MAX_TIMESTAMP {
                    return Reply::Value(Err(Refusal::Setting));
                }
                if t <= self.parent() {
                    return Reply::Value(Err(Refusal::Timestamp { parent: self.parent(), got: t }));
                }
                self.next_timestamp = Some(t);
                self.offset_reply()
            }
            Op::IncreaseTime(seconds) => {
                // The clock may not be moved past the latest timestamp.
                let (set_to, set_at) = self.clock;
                let reads = set_to + i128::from(self.wall()) - i128::from(set_at);
                if reads + i128::from(seconds) > i128::from(MAX_TIMESTAMP) {
                    return Reply::Value(Err(Refusal::Setting));
                }
                self.clock.0 += i128::from(seconds);
                self.offset_reply()
            }
            Op::SetTime(t) => {
                if t > MAX_TIMESTAMP {
                    return Reply::Value(Err(Refusal::Setting));
                }
                let before = self.next_timestamp_now();
                self.clock_reads(t);
                self.next_timestamp = None;
                self.time_set = Some(t);
                Reply::Value(Ok(t.saturating_sub(before)))
            }
            Op::SetNextBaseFee(fee) => {
                self.next_base_fee = Some(fee);
                self.offset_reply()
            }
            Op::SetGasLimit(gas) => {
                if gas < MIN_GAS_LIMIT {
                    return Reply::Value(Err(Refusal::Setting));
                }
                self.gas_limit = gas;
                self.offset_reply()
            }
            Op::SetTimestampInterval(interval) => {
                Reply::Bool(std::mem::replace(&mut self.timestamp_interval, interval).is_some())
            }
            Op::SetAutomine(on) => {
                self.automine = on;
                Reply::None
            }
            Op::SetInterval(ms) => {
                self.ticks = ms.map(|ms| (ms, self.at_ms + ms));
                Reply::None
            }
            ref other => unreachable!("{other:?} is not a setting"),
        }
    }

    /// Snapshots, reverts, rollbacks, resets and restarts.
    fn history(&mut self, op: &Op) -> Reply {
        match *op {
            Op::Snapshot => {
                let id = self.snapshots.take(self.chain.len());
                self.saved.push((
                    id,
                    self.clock,
                    self.next_timestamp,
                    self.next_base_fee,
                    self.time_set,
                ));
                Reply::Value(Ok(id))
            }
            Op::Revert(n) => {
                let id = self.snapshots.pick(n);
                let Some(len) = self.snapshots.revert(id) else { return Reply::Bool(false) };
                self.chain.truncate(len);
                if let Some(index) = self.saved.iter().position(|saved| saved.0 == id) {
                    let (_, clock, next, fee, time_set) = self.saved[index];
                    (self.clock, self.next_timestamp, self.next_base_fee, self.time_set) =
                        (clock, next, fee, time_set);
                    self.saved.truncate(index);
                }
                Reply::Bool(true)
            }
            Op::Rollback(depth) => {
                if depth > self.head() {
                    return Reply::Number(Err(Refusal::StateOwner));
                }
                self.chain.truncate(self.chain.len() - depth as usize);
                self.snapshots.rolled_back(self.chain.len());
                let head = *self.chain.last().expect("a chain has a genesis");
                // A head stamped past the latest timestamp (an evm_mine that asked for one)
                // sets the clock to the latest.
                self.clock_reads(head.timestamp.min(MAX_TIMESTAMP));
                self.drop_one_block_settings();
                self.gas_limit = head.gas_limit.max(MIN_GAS_LIMIT);
                Reply::Number(Ok(Some(self.head())))
            }
            Op::Reset { timestamp, gas_limit } => {
                self.chain = vec![Block::genesis(timestamp, gas_limit)];
                self.snapshots =
                    Snapshots { next_id: self.snapshots.next_id, ..Default::default() };
                self.clock_reads(self.wall());
                self.drop_one_block_settings();
                self.saved.clear();
                self.gas_limit = gas_limit.max(MIN_GAS_LIMIT);
                Reply::None
            }
            Op::Restart => {
                self.drop_one_block_settings();
                self.ticks =
                    self.ticks.map(|(block_time, _)| (block_time, self.at_ms + block_time));
                Reply::None
            }
            ref other => unreachable!("{other:?} is not a history op"),
        }
    }

    fn status(&self) -> MiningStatus {
        MiningStatus {
            automine: self.automine,
            interval: self.ticks.map(|(ms, _)| IntervalMining::Fixed(Duration::from_millis(ms))),
            ticks_skipped: 0,
            coinbase: Default::default(),
            gas_limit: self.gas_limit,
            next_timestamp: self.next_timestamp_now(),
        }
    }
}

/// A timestamp near the chain's (where the rules meet), or near the latest allowed.
fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => GENESIS - 5..GENESIS + 300,
        1 => MAX_TIMESTAMP - 3..=MAX_TIMESTAMP + 1,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop_oneof![4 => 0..3_000u64, 1 => 3_000..20_000u64].prop_map(Op::Wait),
        5 => Just(Op::Tx),
        5 => (0..4u64, proptest::option::weighted(0.4, timestamp()))
            .prop_map(|(count, timestamp)| Op::Mine { count, timestamp }),
        1 => (65..70u64, proptest::option::weighted(0.4, timestamp()))
            .prop_map(|(count, timestamp)| Op::Mine { count, timestamp }),
        2 => (0..4u64, 0..5u64).prop_map(|(count, interval)| Op::MineSpaced { count, interval }),
        3 => timestamp().prop_map(Op::SetNextTimestamp),
        3 => prop_oneof![8 => 0..200u64, 1 => Just(i64::MAX as u64 - GENESIS), 1 => Just(u64::MAX)]
            .prop_map(Op::IncreaseTime),
        2 => timestamp().prop_map(Op::SetTime),
        2 => (0..100u64).prop_map(Op::SetNextBaseFee),
        1 => (20_000..40_000u64).prop_map(Op::SetGasLimit),
        2 => proptest::option::of(prop_oneof![0..20u64, Just(MAX_TIMESTAMP)]).prop_map(Op::SetTimestampInterval),
        2 => any::<bool>().prop_map(Op::SetAutomine),
        2 => proptest::option::of(200..5_000u64).prop_map(Op::SetInterval),
        2 => Just(Op::Snapshot),
        2 => (0..4usize).prop_map(Op::Revert),
        1 => (0..4u64).prop_map(Op::Rollback),
        1 => (timestamp(), 0..40_000u64).prop_map(|(timestamp, gas_limit)| Op::Reset { timestamp, gas_limit }),
        1 => Just(Op::Restart),
    ]
}

/// Applies `ops` to both and compares after each; the message names the op that diverged.
fn check(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut driven = Driven::new();
    let mut model = Model::new();
    for (i, op) in ops.iter().enumerate() {
        let got = driven.apply(op);
        let want = model.apply(op);
        prop_assert_eq!(&got, &want, "answer to op {} ({:?})", i, op);
        prop_assert_eq!(&driven.chain, &model.chain, "chain after op {} ({:?})", i, op);
        prop_assert_eq!(driven.pending, model.pending, "pool after op {} ({:?})", i, op);
        prop_assert_eq!(driven.status(), model.status(), "status after op {} ({:?})", i, op);
    }
    Ok(())
}

proptest! {
    // Bounded so the whole run stays well under two seconds in a debug build.
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_core_mines_what_the_model_says(ops in proptest::collection::vec(op(), 1..40)) {
        check(&ops)?;
    }
}

/// What the test shrank to when `BlockClock::blocks_made` was broken on purpose to forget a
/// caller's timestamp (the clock must read the last block's timestamp after evm_mine with
/// one, so the offset answered next is 1, not 0).
#[test]
fn a_timestamp_given_to_evm_mine_moves_the_clock() {
    let ops =
        [Op::Mine { count: 1, timestamp: Some(GENESIS + 1) }, Op::SetNextTimestamp(GENESIS + 2)];
    check(&ops).unwrap();
}

/// Shrunk by the test: with a next timestamp set, a 65-block evm_mine moves the clock to the
/// 64th block (the first chunk's last), not the 65th, so the offset answered after is 64. The
/// model first had the whole series as one run; the core's rule is per chunk.
#[test]
fn a_next_timestamp_moves_the_clock_to_the_first_chunk_s_last_block() {
    let ops = [
        Op::SetNextTimestamp(GENESIS + 1),
        Op::Mine { count: 65, timestamp: None },
        Op::SetNextBaseFee(0),
    ];
    check(&ops).unwrap();
}

/// Shrunk by the test: a rollback to a head stamped past the latest timestamp allowed sets
/// the clock to the latest, not to the head's.
#[test]
fn a_rollback_to_a_head_past_the_latest_timestamp_sets_the_clock_to_the_latest() {
    let ops = [
        Op::Reset { timestamp: MAX_TIMESTAMP - 3, gas_limit: 0 },
        Op::Mine { count: 65, timestamp: None },
        Op::Rollback(0),
        Op::SetNextBaseFee(0),
    ];
    check(&ops).unwrap();
}
