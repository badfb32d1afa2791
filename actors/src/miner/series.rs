//! Multi-block requests (evm_mine, anvil_mine, hardhat_mine, evm_mine_detailed): the queue of
//! series, how each is cut into chunks between which the miner serves its mailbox, and how the
//! blocks of a series after the first are stamped. Generic over the reply, which the actor
//! keeps (a channel) and the model test does not need.

use std::collections::VecDeque;

use hearth_messages::MineError;

use super::block::{BlockKind, Position, Stamped};

/// Most blocks one mining run builds before the miner serves its mailbox again: anvil_mine of
/// a hundred thousand blocks must not keep automine, interval ticks, settings or status out
/// for its whole run. A chunk is ~10 ms of empty blocks.
pub(crate) const MINE_CHUNK_BLOCKS: u64 = 64;

/// How the blocks of a series after the first are stamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spacing {
    /// By the clock, unless the series was given a first timestamp: then each block follows
    /// the previous one a second later (evm_mine with a timestamp, anvil_mine without interval).
    Clock,
    /// Each block `0` seconds after the previous one (anvil_mine with an interval).
    Seconds(u64),
}

impl Spacing {
    /// The timestamp of the block after one stamped `stamped`, given the one it was asked to
    /// have.
    fn after(self, asked: Option<u64>, stamped: u64) -> Option<u64> {
        match self {
            Self::Clock => asked.map(|t| t.max(stamped).saturating_add(1)),
            Self::Seconds(interval) => Some(stamped.saturating_add(interval)),
        }
    }
}

/// A request for several blocks.
#[derive(Debug)]
pub(crate) struct Series<R> {
    /// Blocks still to mine.
    remaining: u64,
    /// The next block's timestamp, when the caller (or the spacing) chose it.
    timestamp: Option<u64>,
    spacing: Spacing,
    stamped: Stamped,
    /// Where the series' next block stands: the first takes the one-block overrides.
    position: Position,
    /// Where the answer (or the first error) goes.
    pub(crate) reply: R,
}

impl<R> Series<R> {
    /// `count` blocks, the first stamped `timestamp` (`None`: the clock), later ones by
    /// `spacing`.
    pub(crate) fn new(
        count: u64,
        timestamp: Option<u64>,
        spacing: Spacing,
        stamped: Stamped,
        reply: R,
    ) -> Self {
        Self { remaining: count, timestamp, spacing, stamped, position: Position::First, reply }
    }

    /// Who chose the series' timestamps.
    pub(crate) fn stamped(&self) -> Stamped {
        self.stamped
    }
}

/// The blocks one run of a series mines, and how each is stamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// How many blocks.
    pub(crate) count: u64,
    /// The next block's asked timestamp.
    timestamp: Option<u64>,
    position: Position,
    spacing: Spacing,
}

impl Chunk {
    /// The kind of the chunk's `i`-th block, given the blocks before it were [`Self::mined`].
    pub(crate) fn block(&self, i: u64) -> BlockKind {
        BlockKind::Series { position: self.position.nth(i), timestamp: self.timestamp }
    }

    /// A block stamped `stamped` was mined: the next one's timestamp follows the spacing.
    pub(crate) fn mined(&mut self, stamped: u64) {
        self.timestamp = self.spacing.after(self.timestamp, stamped);
    }

    /// The timestamp asked for the block after the last one mined.
    pub(crate) fn next_timestamp(&self) -> Option<u64> {
        self.timestamp
    }
}

/// What comes of a series after one of its chunks.
#[derive(Debug)]
pub(crate) enum SeriesStep<R> {
    /// The series is done, `last` its last block: answer it.
    Finished { reply: R, last: u64 },
    /// The chunk failed: the series stops and its caller gets the error.
    Failed { reply: R, error: MineError },
    /// More to mine: the series went back to the front of the queue.
    Continues,
    /// More to mine, but its caller went away: dropped.
    Abandoned,
}

/// The queued series, oldest first, and whether a chunk is being mined.
#[derive(Debug)]
pub(crate) struct SeriesQueue<R> {
    queue: VecDeque<Series<R>>,
    mining: bool,
}

impl<R> Default for SeriesQueue<R> {
    fn default() -> Self {
        Self { queue: VecDeque::new(), mining: false }
    }
}

impl<R> SeriesQueue<R> {
    /// Queues `series` after the others.
    pub(crate) fn push(&mut self, series: Series<R>) {
        self.queue.push_back(series);
    }

    /// The oldest series and its next chunk, taken out until [`Self::chunk_ended`], unless a
    /// chunk is being mined (blocks are built one at a time).
    pub(crate) fn next_chunk(&mut self) -> Option<(Series<R>, Chunk)> {
        if self.mining {
            return None;
        }
        let series = self.queue.pop_front()?;
        self.mining = true;
        let chunk = Chunk {
            count: series.remaining.min(MINE_CHUNK_BLOCKS),
            timestamp: series.timestamp,
            position: series.position,
            spacing: series.spacing,
        };
        Some((series, chunk))
    }

    /// The chunk `chunk` of `series` ended with `result` (the last block's number, or the
    /// head's when it made none); `caller_waiting` says whether anyone still wants the answer.
    pub(crate) fn chunk_ended(
        &mut self,
        mut series: Series<R>,
        chunk: &Chunk,
        result: Result<u64, MineError>,
        caller_waiting: bool,
    ) -> SeriesStep<R> {
        self.mining = false;
        series.remaining -= chunk.count;
        match result {
            Ok(last) if series.remaining == 0 => SeriesStep::Finished { reply: series.reply, last },
            Ok(_) if !caller_waiting => SeriesStep::Abandoned,
            Ok(_) => {
                series.position = Position::Later;
                series.timestamp = chunk.next_timestamp();
                self.queue.push_front(series);
                SeriesStep::Continues
            }
            Err(error) => SeriesStep::Failed { reply: series.reply, error },
        }
    }

    /// A chunk's run panicked: nothing is being mined any more.
    pub(crate) fn chunk_panicked(&mut self) {
        self.mining = false;
    }

    /// Every queued series' reply, the queue emptied (a restart fails them).
    pub(crate) fn drain(&mut self) -> Vec<R> {
        self.mining = false;
        self.queue.drain(..).map(|series| series.reply).collect()
    }
}
