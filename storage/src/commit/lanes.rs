//! The parallel lanes of a block write: a block changing many accounts runs the two halves
//! of the state trie (root nibbles 0-7 and 8-f) on two threads, each lane staging its own
//! records, and merges the halves under one root.

use std::time::Instant;

use alloy_primitives::{Address, B256};

use super::{
    Lane, Stage, Staged, Tries, WriteTimings, account_trie_key, apply_account, stage_codes,
};
use crate::layout;
use crate::node_cache::{CachedNodes, NodeCache};
use crate::state::{AccountChange, StateDiff};
use crate::{ChainDb, StorageError};
/// Blocks changing at least this many accounts are split between two threads (when the
/// machine has two cores). Smaller blocks stay on one: their state part is a few hundred
/// microseconds, not worth a thread start and a merge.
pub(super) const PARALLEL_MIN_ACCOUNTS: usize = 64;

/// Whether this machine can run the two halves of a block at the same time.
pub(super) fn two_cores() -> bool {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from)) >= 2
}

/// [`apply_diff_on`] on two threads: the accounts whose state trie key starts with nibble
/// 0-7 on this one, 8-f on a second, each in its own lane (tries, records, nodes) under its
/// half of the root branch. Then the second lane's half of the root moves into the first's
/// and the root is committed here. `None` when the parent root is not a branch (a tiny
/// state): the caller then writes the block on one thread.
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
) -> Result<Option<B256>, StorageError> {
    let [low, high] = &mut tries.lanes;
    let nodes = CachedNodes::new(db, cache);
    low.state.set_root(parent_root);
    high.state.set_root(parent_root);
    if !low.state.load_root_branch(&nodes)? {
        return Ok(None);
    }
    let (low_accounts, high_accounts): (Vec<_>, Vec<_>) = diff
        .accounts
        .iter()
        .map(|(address, change)| (account_trie_key(address), address, change))
        .partition(|(key, _, _)| key[0] < 0x80);
    let keep = staged.keep;
    let (mine, theirs) = std::thread::scope(|scope| {
        let (high, high_accounts) = (&mut *high, &high_accounts);
        let worker = scope
            .spawn(move || run_lane(db, cache, high, high_accounts, 8..16, keep, base, number));
        let mine = run_lane(db, cache, low, &low_accounts, 0..8, keep, base, number);
        let theirs = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (mine, theirs)
    });
    let merge_started = Instant::now();
    for lane in [mine?, theirs?] {
        for (key, value) in lane.writes {
            staged.batch.insert(key, value);
        }
        staged.emitted.extend(lane.emitted);
        staged.timings.account_reads += lane.timings.account_reads;
        staged.timings.tries += lane.timings.tries;
        staged.timings.node_store_reads += lane.timings.node_store_reads;
    }
    // A lane whose updates all turned out to be no-ops put its root back to a reference.
    let merged = low.state.load_root_branch(&nodes)?
        && high.state.load_root_branch(&nodes)?
        && low.state.adopt_children(&mut high.state, 8..16);
    if !merged {
        return Err(StorageError::Corrupt { what: "state trie root" });
    }
    stage_codes(staged, diff);
    let root = low.state.commit(&mut |hash, rlp| staged.node(hash, rlp));
    staged.timings.tries += merge_started.elapsed();
    staged.timings.node_store_reads += nodes.store_reads.get();
    Ok(Some(root))
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
    slots: std::ops::Range<usize>,
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
