//! The parallel lanes of a block write: a block changing many accounts splits the sixteen
//! children of the state trie's root branch into `k` contiguous ranges of root nibbles, one
//! lane per range, each on its own thread with its own tries and staged records (an account's
//! storage trie is committed in the lane of its account), and merges the lanes' children under
//! one root.

use std::ops::Range;
use std::time::Instant;

use alloy_primitives::{Address, B256};

use super::{
    Lane, Stage, Staged, Tries, WriteTimings, account_trie_key, apply_account, stage_codes,
};
use crate::layout;
use crate::node_cache::{CachedNodes, NodeCache};
use crate::state::{AccountChange, StateDiff};
use crate::{ChainDb, StorageError};

/// Changed accounts each lane must have for the block to take another thread: the two-lane
/// writer's crossover (64 accounts for two lanes), below which a lane's share of the block is
/// a few hundred microseconds or less, about the cost of starting a thread and merging its
/// records. The trie bench's `--threads` and `--per-lane` sweep it (BENCHMARKS.md, "Commit
/// lanes over the executor threads"); on the loaded 2-vCPU machine of that run a second lane
/// paid at no size, so the constant was kept, not re-derived.
pub(super) const MIN_ACCOUNTS_PER_LANE: usize = 32;

/// Most lanes a block is split into: one per child of the root branch.
pub(super) const MAX_LANES: usize = 16;

/// The lanes a block of `accounts` changed accounts is written in, on a writer allowed
/// `threads` threads: one per `per_lane` accounts (normally [`MIN_ACCOUNTS_PER_LANE`]), at
/// most one per thread and per root child, at least one.
pub(super) fn lane_count(threads: usize, accounts: usize, per_lane: usize) -> usize {
    threads.min(MAX_LANES).min(accounts / per_lane.max(1)).max(1)
}

/// The root nibbles of lane `lane` of `lanes`: the sixteen split in order, as evenly as can be.
pub(super) const fn nibbles(lane: usize, lanes: usize) -> Range<usize> {
    lane * MAX_LANES / lanes..(lane + 1) * MAX_LANES / lanes
}

/// [`apply_diff_on`](super::apply_diff_on) in `lanes` lanes (2 to 16): each changed account
/// goes to the lane of its state trie key's first nibble; lane 0 runs here, the others on
/// scoped threads, each committing its root children. The other lanes' children then move into
/// lane 0's root, which is committed here.
///
/// `None` when the block must be written on one thread instead (nothing staged): the parent
/// root is not a branch (a tiny state), or deletions left a lane's root or the merged root
/// without the two children a branch root needs (the trie then collapses its root, which only
/// one thread seeing every change can do).
#[expect(clippy::too_many_arguments, reason = "apply_diff_on's arguments, passed through")]
pub(super) fn apply_parallel(
    db: &ChainDb,
    cache: &NodeCache,
    tries: &mut Tries,
    staged: &mut Staged,
    base: Option<u64>,
    number: u64,
    diff: &StateDiff,
    parent_root: B256,
    lanes: usize,
) -> Result<Option<B256>, StorageError> {
    let nodes = CachedNodes::new(db, cache);
    let lanes_of_block = tries.lanes(lanes);
    for lane in lanes_of_block.iter_mut() {
        lane.state.set_root(parent_root);
    }
    if !lanes_of_block[0].state.load_root_branch(&nodes)? {
        return Ok(None);
    }
    let accounts = accounts_by_lane(diff, lanes);
    let outs = run_lanes(db, cache, lanes_of_block, &accounts, staged.keep, base, number)?;
    let merge_started = Instant::now();
    if !merge_roots(&nodes, lanes_of_block)? {
        return Ok(None);
    }
    stage_lanes(staged, outs);
    stage_codes(db, staged, diff)?;
    let root = lanes_of_block[0].state.commit(&mut |hash, rlp| staged.node(hash, rlp));
    staged.timings.tries += merge_started.elapsed();
    staged.timings.node_store_reads += nodes.store_reads.get();
    Ok(Some(root))
}

/// The changed accounts of `diff` by lane of `lanes`, each in the lane of its state trie
/// key's first nibble, with that key.
fn accounts_by_lane(diff: &StateDiff, lanes: usize) -> Vec<Vec<(B256, &Address, &AccountChange)>> {
    let mut lane_of_nibble = [0; MAX_LANES];
    for lane in 0..lanes {
        lane_of_nibble[nibbles(lane, lanes)].fill(lane);
    }
    let mut accounts: Vec<Vec<_>> = vec![Vec::new(); lanes];
    for (address, change) in &diff.accounts {
        let key = account_trie_key(address);
        accounts[lane_of_nibble[usize::from(key[0] >> 4)]].push((key, address, change));
    }
    accounts
}

/// Runs each lane's `accounts` through it, lane 0 here and the others on scoped threads,
/// each committing its root children; the lanes' records in lane order.
fn run_lanes(
    db: &ChainDb,
    cache: &NodeCache,
    lanes: &mut [Lane],
    accounts: &[Vec<(B256, &Address, &AccountChange)>],
    keep: bool,
    base: Option<u64>,
    number: u64,
) -> Result<Vec<LaneOut>, StorageError> {
    let count = lanes.len();
    // The lanes started here keep off this thread's core (`crate::cpu`).
    let caller = crate::cpu::CallerCpu::now();
    let outs: Vec<Result<LaneOut, StorageError>> = std::thread::scope(|scope| {
        let (first, rest) = lanes.split_first_mut().expect("at least one lane");
        let workers: Vec<_> = rest
            .iter_mut()
            .zip(&accounts[1..])
            .enumerate()
            .map(|(i, (lane, accounts))| {
                let slots = nibbles(i + 1, count);
                scope.spawn(move || {
                    caller.avoid();
                    run_lane(db, cache, lane, accounts, slots, keep, base, number)
                })
            })
            .collect();
        caller.let_started_move();
        let mut outs =
            vec![run_lane(db, cache, first, &accounts[0], nibbles(0, count), keep, base, number)];
        outs.extend(
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
        );
        outs
    });
    outs.into_iter().collect()
}

/// Moves the other lanes' root children into lane 0's root. `false` when the block must be
/// written on one thread instead: a lane's root or the merged root is no longer a branch
/// with two children.
fn merge_roots(nodes: &CachedNodes<'_>, lanes: &mut [Lane]) -> Result<bool, StorageError> {
    // A lane whose updates all turned out to be no-ops put its root back to a reference; one
    // whose deletions collapsed its root is no longer a branch.
    for lane in lanes.iter_mut() {
        if !lane.state.load_root_branch(nodes)? {
            return Ok(false);
        }
    }
    let count = lanes.len();
    let (first, rest) = lanes.split_first_mut().expect("at least one lane");
    for (i, lane) in rest.iter_mut().enumerate() {
        if !first.state.adopt_children(&mut lane.state, nibbles(i + 1, count)) {
            return Err(StorageError::Corrupt { what: "state trie root" });
        }
    }
    Ok(first.state.root_children().unwrap_or(0) >= 2)
}

/// Moves the lanes' records into the block's batch, and their timings into its timings.
fn stage_lanes(staged: &mut Staged, outs: Vec<LaneOut>) {
    for lane in outs {
        for (key, value) in lane.writes {
            staged.batch.insert(key, value);
        }
        staged.emitted.extend(lane.emitted);
        staged.timings.account_reads += lane.timings.account_reads;
        staged.timings.tries += lane.timings.tries;
        staged.timings.node_store_reads += lane.timings.node_store_reads;
    }
}

/// What one lane of a parallel block write staged, for the block's batch.
#[derive(Default)]
struct LaneOut {
    /// Account, slot and trie node records.
    writes: Vec<(sled::IVec, sled::IVec)>,
    /// The nodes among `writes`, kept for the node cache when `keep`.
    emitted: Vec<(B256, sled::IVec)>,
    keep: bool,
    timings: WriteTimings,
}

/// Runs `accounts` through `lane` and commits the lane's root children `slots`.
#[expect(clippy::too_many_arguments, reason = "one lane's share of apply_diff_on's arguments")]
fn run_lane(
    db: &ChainDb,
    cache: &NodeCache,
    lane: &mut Lane,
    accounts: &[(B256, &Address, &AccountChange)],
    slots: Range<usize>,
    keep: bool,
    base: Option<u64>,
    number: u64,
) -> Result<LaneOut, StorageError> {
    let started = Instant::now();
    let nodes = CachedNodes::new(db, cache);
    // About five records per account: its version and the nodes on its path.
    let mut out =
        LaneOut { writes: Vec::with_capacity(accounts.len() * 5), keep, ..LaneOut::default() };
    for (key, address, change) in accounts {
        apply_account(db, &nodes, lane, &mut out, base, number, key, address, change)?;
    }
    lane.state.commit_children(slots, &mut |hash, rlp| out.node(hash, rlp));
    out.timings.tries = started.elapsed().saturating_sub(out.timings.account_reads);
    out.timings.node_store_reads = nodes.store_reads.get();
    Ok(out)
}

impl Stage for LaneOut {
    fn record(&mut self, _db: &ChainDb, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.writes.push((key.into(), value.into()));
        Ok(())
    }

    fn node(&mut self, hash: B256, rlp: &[u8]) {
        let rlp = sled::IVec::from(rlp);
        if self.keep {
            self.emitted.push((hash, rlp.clone()));
        }
        self.writes.push((layout::hash_key(layout::TRIE_NODE, &hash)[..].into(), rlp));
    }

    fn timings(&mut self) -> &mut WriteTimings {
        &mut self.timings
    }
}
