//! What kind of block is being mined and why, and the rules that stamp it: the named types
//! that replaced the miner's chains of booleans (`only_if_pending`, `first`, `explicit_time`).

use alloy_primitives::{Address, B256};
use hearth_messages::MineError;
use hearth_messages::miner::MAX_TIMESTAMP;

/// Settings that apply to the next block only, or change how blocks are stamped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Overrides {
    pub(crate) timestamp: Option<u64>,
    pub(crate) base_fee: Option<u64>,
    pub(crate) prevrandao: Option<B256>,
    /// The time the clock was last set to (anvil_setTime): with a timestamp interval, the
    /// next block comes that interval after it rather than after its parent, as in anvil.
    pub(crate) time_set: Option<u64>,
}

/// Where a block stands in the run that makes it. One-block overrides (next timestamp, base
/// fee, prevrandao, the time the clock was set to) belong to the first block of a run only:
/// they are used up when the run ends, and the later blocks must not take them again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    /// The run's first block.
    First,
    /// Any block after it.
    Later,
}

impl Position {
    /// The position of the `i`-th block of a run whose first block stands at `self` (a
    /// series' second chunk starts `Later`).
    pub(crate) fn nth(self, i: u64) -> Self {
        if i == 0 { self } else { Self::Later }
    }
}

/// Why a block is mined, which decides whether it may be empty, whether it takes the
/// one-block overrides and whether its timestamp was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// A tick of the interval timer: made even when empty, with the overrides.
    Tick,
    /// Automine: made only when something executable is pending (no empty blocks).
    Auto(Position),
    /// A block of an `evm_mine` / `anvil_mine` series: always made, stamped `timestamp` when
    /// the caller (or the series' spacing) chose it.
    Series { position: Position, timestamp: Option<u64> },
    /// One of anvil_reorg's given blocks: always made, from exactly the given transactions.
    Reorg(Position),
}

impl BlockKind {
    /// Whether no block is made when nothing executable is there.
    pub(crate) fn skips_empty(self) -> bool {
        matches!(self, Self::Auto(_))
    }

    fn position(self) -> Position {
        match self {
            Self::Tick => Position::First,
            Self::Auto(position) | Self::Series { position, .. } | Self::Reorg(position) => {
                position
            }
        }
    }

    fn asked_timestamp(self) -> Option<u64> {
        match self {
            Self::Series { timestamp, .. } => timestamp,
            Self::Tick | Self::Auto(_) | Self::Reorg(_) => None,
        }
    }
}

/// Who chose the timestamps of a run's blocks: when the caller did, the clock follows the
/// last block afterwards (as anvil), so later blocks continue from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamped {
    /// The clock (or the timestamp interval) stamped them.
    ByClock,
    /// The caller gave the first timestamp (evm_mine with a timestamp).
    ByCaller,
}

/// The miner's rules for the blocks of one run, copied out of the core: a run is a future
/// that runs apart from the actor, and the core may not change under it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockRules {
    /// Gas limit of every block.
    pub(crate) gas_limit: u64,
    /// Fee recipient.
    pub(crate) coinbase: Address,
    /// Seconds the miner's clock is ahead of the wall clock.
    pub(crate) offset: i64,
    /// The one-block overrides, for the run's first block.
    pub(crate) next: Overrides,
    /// Seconds between a block and its parent instead of the clock.
    pub(crate) timestamp_interval: Option<u64>,
}

impl BlockRules {
    /// The overrides that apply to a block of `kind`.
    pub(crate) fn overrides(&self, kind: BlockKind) -> Overrides {
        match kind.position() {
            Position::First => self.next,
            Position::Later => Overrides::default(),
        }
    }

    /// The base fee override of a block of `kind` (`None`: the parent's EIP-1559 successor).
    pub(crate) fn base_fee(&self, kind: BlockKind) -> Option<u64> {
        self.overrides(kind).base_fee
    }

    /// The prevrandao override of a block of `kind` (`None`: derived from the parent).
    pub(crate) fn prevrandao(&self, kind: BlockKind) -> Option<B256> {
        self.overrides(kind).prevrandao
    }

    /// The timestamp of a block of `kind` on a parent stamped `parent`, the wall clock
    /// reading `now`: the one asked for or set for the next block, else the timestamp
    /// interval or the clock; always after the parent.
    pub(crate) fn stamp(&self, kind: BlockKind, parent: u64, now: u64) -> Result<u64, MineError> {
        let next = self.overrides(kind);
        let timestamp = match kind.asked_timestamp().or(next.timestamp) {
            Some(t) if t <= parent => return Err(MineError::Timestamp { parent, got: t }),
            Some(t) => t,
            None => stamp_after(
                next.time_set.unwrap_or(parent),
                parent,
                self.timestamp_interval,
                now,
                self.offset,
            )?,
        };
        if timestamp <= parent {
            // Only a parent stamped u64::MAX gets here (an imported chain's): no later second
            // exists, so refuse rather than wrap around.
            return Err(MineError::Timestamp { parent, got: timestamp });
        }
        Ok(timestamp)
    }
}

/// The timestamp of a block after one stamped `parent` when nobody chose it: `last` (the
/// parent's timestamp, or the time the clock was set to since) plus the timestamp `interval`
/// when one is set, else the wall clock `now` with the miner's `offset`; always after `parent`.
pub(crate) fn stamp_after(
    last: u64,
    parent: u64,
    interval: Option<u64>,
    now: u64,
    offset: i64,
) -> Result<u64, MineError> {
    let stamped = match interval {
        Some(interval) => {
            last.checked_add(interval).filter(|t| *t <= MAX_TIMESTAMP).ok_or_else(|| {
                MineError::Setting(format!(
                    "the timestamp interval of {interval} s takes the block after {last} past \
                     the latest timestamp allowed ({MAX_TIMESTAMP})"
                ))
            })?
        }
        None => {
            let now = i64::try_from(now).unwrap_or(i64::MAX);
            now.saturating_add(offset).max(0) as u64
        }
    };
    Ok(stamped.max(parent.saturating_add(1)))
}
