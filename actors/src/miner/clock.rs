//! The miner's block clock: how far it runs ahead of the wall clock, the one-block overrides,
//! the timestamp interval and the clocks saved with evm_snapshot. Every method takes the wall
//! clock's reading as an argument, so the rules run the same in a test as in a node.

use alloy_primitives::B256;
use hearth_messages::MineError;
use hearth_messages::miner::MAX_TIMESTAMP;

use super::block::{Overrides, Stamped, stamp_after};

/// What evm_snapshot saves of the clock, so that evm_revert turns it back too (as Hardhat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SavedClock {
    id: u64,
    offset: i64,
    next: Overrides,
}

/// The block clock.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockClock {
    /// Seconds added to the wall clock (evm_increaseTime, evm_setNextBlockTimestamp).
    offset: i64,
    next: Overrides,
    /// Seconds between a block and its parent, instead of the clock
    /// (anvil_setBlockTimestampInterval).
    timestamp_interval: Option<u64>,
    /// Clock state saved per live snapshot id, oldest first.
    saved: Vec<SavedClock>,
}

impl BlockClock {
    /// The offset, one-block overrides and timestamp interval, for a run's [`BlockRules`].
    ///
    /// [`BlockRules`]: super::block::BlockRules
    pub(crate) fn parts(&self) -> (i64, Overrides, Option<u64>) {
        (self.offset, self.next, self.timestamp_interval)
    }

    /// The clock's offset, or 0 when it runs behind the wall clock (what evm_increaseTime and
    /// friends answer).
    pub(crate) fn offset_secs(&self) -> u64 {
        self.offset.max(0) as u64
    }

    /// The timestamp the next block would get now, by the same rules as mining: its override,
    /// else the timestamp interval or the clock, always after the head's `parent`.
    pub(crate) fn next_timestamp(&self, parent: u64, now: u64) -> u64 {
        match self.next.timestamp {
            Some(t) => t,
            // Past the latest timestamp the interval cannot stamp a block; say where it points.
            None => stamp_after(
                self.next.time_set.unwrap_or(parent),
                parent,
                self.timestamp_interval,
                now,
                self.offset,
            )
            .unwrap_or(MAX_TIMESTAMP),
        }
    }

    /// A run made blocks, the last stamped `last`: the one-block overrides are used up, and a
    /// timestamp chosen for it moves the clock so that later blocks continue from it (as anvil).
    pub(crate) fn blocks_made(&mut self, last: u64, stamped: Stamped, now: u64) {
        if self.next.timestamp.take().is_some() || stamped == Stamped::ByCaller {
            self.read(last, now);
        }
        self.next.base_fee = None;
        self.next.prevrandao = None;
        self.next.time_set = None;
    }

    /// Moves the offset so that the clock reads `timestamp` when the wall clock reads `now`.
    fn read(&mut self, timestamp: u64, now: u64) {
        let offset = i128::from(timestamp) - i128::from(now);
        self.offset = i64::try_from(offset).unwrap_or(i64::MAX);
    }

    /// anvil_setTime: the clock now reads `timestamp`, and a pending next-block timestamp is
    /// dropped (anvil's time reset). Answers how far `timestamp` is past what the next block
    /// would have been stamped.
    pub(crate) fn set_time(
        &mut self,
        timestamp: u64,
        parent: u64,
        now: u64,
    ) -> Result<u64, MineError> {
        if timestamp > MAX_TIMESTAMP {
            return Err(past_max(timestamp));
        }
        let before = self.next_timestamp(parent, now);
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        // Both are within 0..=i64::MAX, so the difference fits.
        self.offset = timestamp as i64 - now;
        self.next.timestamp = None;
        self.next.time_set = Some(timestamp);
        Ok(timestamp.saturating_sub(before))
    }

    /// evm_setNextBlockTimestamp: the next block gets `timestamp`, which must come after the
    /// head's `parent`.
    pub(crate) fn set_next_timestamp(
        &mut self,
        timestamp: u64,
        parent: u64,
    ) -> Result<(), MineError> {
        if timestamp > MAX_TIMESTAMP {
            return Err(past_max(timestamp));
        }
        if timestamp <= parent {
            return Err(MineError::Timestamp { parent, got: timestamp });
        }
        self.next.timestamp = Some(timestamp);
        Ok(())
    }

    /// evm_increaseTime: the clock moves `seconds` ahead; it must stay within
    /// [`MAX_TIMESTAMP`], or no later block could be stamped.
    pub(crate) fn increase_time(&mut self, seconds: u64, now: u64) -> Result<(), MineError> {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.offset = i64::try_from(seconds)
            .ok()
            .and_then(|s| self.offset.checked_add(s))
            .filter(|offset| now.checked_add(*offset).is_some())
            .ok_or_else(|| {
                MineError::Setting(format!(
                    "time increase {seconds} would take the clock past the latest timestamp \
                     allowed ({MAX_TIMESTAMP})"
                ))
            })?;
        Ok(())
    }

    /// The next block's base fee.
    pub(crate) fn set_next_base_fee(&mut self, fee: u64) {
        self.next.base_fee = Some(fee);
    }

    /// The next block's prevrandao.
    pub(crate) fn set_next_prevrandao(&mut self, value: B256) {
        self.next.prevrandao = Some(value);
    }

    /// anvil_setBlockTimestampInterval: answers whether one was set before.
    pub(crate) fn set_timestamp_interval(&mut self, interval: Option<u64>) -> bool {
        std::mem::replace(&mut self.timestamp_interval, interval).is_some()
    }

    /// The chain was rolled back to a head stamped `head`: later blocks are stamped from it on,
    /// as anvil resets its environment to the common block.
    pub(crate) fn rewound(&mut self, head: u64, now: u64) {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        let timestamp = i64::try_from(head).unwrap_or(i64::MAX);
        self.offset = timestamp.saturating_sub(now);
        self.next = Overrides::default();
    }

    /// anvil_reset: the clock runs from the new chain's head as at a start (no offset, no
    /// one-block settings, no saved clocks: their snapshots are gone). The timestamp interval
    /// stays, as anvil 1.7.1 keeps it.
    pub(crate) fn reset(&mut self) {
        self.offset = 0;
        self.next = Overrides::default();
        self.saved.clear();
    }

    /// evm_snapshot took snapshot `id`: save the clock with it.
    pub(crate) fn save(&mut self, id: u64) {
        self.saved.push(SavedClock { id, offset: self.offset, next: self.next });
    }

    /// evm_revert to `id` succeeded: when the clock was saved with it, turn the clock back and
    /// forget that and every later save.
    pub(crate) fn revert(&mut self, id: u64) {
        if let Some(index) = self.saved.iter().position(|saved| saved.id == id) {
            let saved = self.saved[index];
            self.offset = saved.offset;
            self.next = saved.next;
            self.saved.truncate(index);
        }
    }

    /// What survives a restart: everything but the one-block overrides, which belonged to the
    /// run that panicked.
    pub(crate) fn restarted(&self) -> Self {
        Self { next: Overrides::default(), saved: self.saved.clone(), ..*self }
    }
}

fn past_max(timestamp: u64) -> MineError {
    MineError::Setting(format!("timestamp {timestamp} is past the latest allowed {MAX_TIMESTAMP}"))
}
