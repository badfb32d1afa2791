//! One round of following a leader, the same for a read replica (`--follow`, the target is
//! this node's engine actor) and for `hearth drive` (the target is another node's Engine API):
//! ask the leader for its head; if the target's head is not on the leader's chain any more,
//! walk back to the newest block both have and make it the target's head; else fetch the
//! missing blocks, at most [`MAX_BATCH`] at a time, and import them one by one.
//!
//! Memory does not grow with how far behind the target is: a round holds one batch.

use alloy_consensus::Header;
use alloy_primitives::B256;

use super::leader::{Leader, LeaderBlock, LeaderError, LeaderPatch};

/// Most blocks fetched in one request, and so held at once.
pub const MAX_BATCH: u64 = 32;

/// How far one round may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// Most blocks fetched in one request (1..=[`MAX_BATCH`]): a follower halves it after a
    /// failed round, so that blocks too large for one answer together still come one by one.
    pub batch: u64,
    /// The last block to import (`hearth drive --until`).
    pub until: u64,
}

impl Default for Reach {
    fn default() -> Self {
        Self { batch: MAX_BATCH, until: u64::MAX }
    }
}

/// The target's chain cannot follow the leader's from where it is: no block in common, or
/// genesis state the leader has since changed back. Following again needs a new datadir.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{why}; this node cannot follow the leader from its datadir: start it on a new one")]
pub struct Diverged {
    /// The block whose state differs from the leader's.
    pub block: u64,
    /// How.
    pub why: String,
}

/// How far back a rewind looks per request to the leader.
const REWIND_STRIDE: u64 = 64;

/// Where the leader's blocks go: the node that follows.
#[allow(async_fn_in_trait, reason = "used with concrete types on one thread, never as dyn")]
pub trait FollowTarget {
    /// Why the target failed.
    type Error: From<LeaderError> + From<Diverged>;

    /// The target's head: its number and hash.
    async fn head(&self) -> Result<(u64, B256), Self::Error>;

    /// The hash of the target's block `number` (`None`: it has none).
    async fn hash_at(&self, number: u64) -> Result<Option<B256>, Self::Error>;

    /// Executes `block` on its parent (the target's head), checks it and makes it the head.
    async fn import(&self, block: LeaderBlock) -> Result<(), Self::Error>;

    /// Makes the target's canonical block `header` (hashing to `hash`) its head again.
    async fn rewind_to(&self, header: &Header, hash: B256) -> Result<(), Self::Error>;

    /// The root of the target's state at its head `number`, dev patches included (`None`:
    /// the target does not replay patches, and they are not compared).
    async fn patched_root(&self, number: u64) -> Result<Option<B256>, Self::Error> {
        let _ = number;
        Ok(None)
    }

    /// Sets `patch`'s accounts in the target's head state, as the leader's dev patch did,
    /// and checks that it leaves the leader's root.
    async fn apply_patch(&self, patch: LeaderPatch) -> Result<(), Self::Error> {
        let _ = patch;
        Err(LeaderError { url: String::new(), why: "this target does not replay patches".into() }
            .into())
    }
}

/// A block a round imported.
#[derive(Debug, Clone)]
pub struct Imported {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
    /// Its transactions' hashes.
    pub txs: Vec<B256>,
}

/// What one round did.
#[derive(Debug, Clone)]
pub struct Round<E> {
    /// The leader's head, as it answered.
    pub leader_head: u64,
    /// The target's head after the round.
    pub head: u64,
    /// The blocks imported, in order.
    pub imported: Vec<Imported>,
    /// The block the target went back to, when the leader's chain no longer held its head.
    pub rewound_to: Option<u64>,
    /// Why the round stopped before the leader's head, after the leader answered (a block the
    /// target refused, the target failing); the blocks above were imported all the same.
    pub stopped: Option<E>,
}

impl<E> Round<E> {
    /// Whether the target had nothing to do: it holds the leader's head.
    pub fn caught_up(&self) -> bool {
        self.imported.is_empty()
            && self.rewound_to.is_none()
            && self.stopped.is_none()
            && self.head >= self.leader_head
    }
}

/// Runs one round of following `leader` with `target`, as far as `reach` says. `Err` when
/// nothing was learned (the target's head unreadable, the leader silent); a later failure is
/// the round's `stopped`.
pub async fn round<T: FollowTarget>(
    leader: &Leader,
    target: &T,
    reach: Reach,
) -> Result<Round<T::Error>, T::Error> {
    let (head, head_hash) = target.head().await?;
    let view = leader.view(head).await?;
    let mut round = Round {
        leader_head: view.head,
        head,
        imported: Vec::new(),
        rewound_to: None,
        stopped: None,
    };
    let result = if view.hash != Some(head_hash) {
        // The leader has no block at our height (it went back), or another one there.
        rewind(leader, target, head).await.map(|common| {
            (round.head, round.rewound_to) = (common, Some(common));
        })
    } else {
        let roots = view.patch_roots.as_deref().zip(view.state_root);
        match replay_patches(leader, target, roots, head).await {
            Ok(Some(parent)) => {
                (round.head, round.rewound_to) = (parent, Some(parent));
                Ok(())
            }
            Ok(None) if view.head > head && reach.until > head => {
                let logs_patches = view.patch_roots.is_some();
                import_next(leader, target, &mut round, (head_hash, logs_patches), reach).await
            }
            other => other.map(drop),
        }
    };
    round.stopped = result.err();
    Ok(round)
}

/// Brings the target's head state to the leader's: replays the dev patches the leader made
/// while block `number` was its head and the target lacks, each checked against the root the
/// leader listed for it before it is applied. When the target holds patches the leader has
/// since undone (an `evm_revert` back to before them), it goes back to the parent instead, to
/// take the block again without them: answers that parent.
/// `roots` are the leader's patch roots at `number` and the block's header root (`None`: the
/// leader does not log patches).
async fn replay_patches<T: FollowTarget>(
    leader: &Leader,
    target: &T,
    roots: Option<(&[B256], B256)>,
    number: u64,
) -> Result<Option<u64>, T::Error> {
    let Some((roots, header_root)) = roots else { return Ok(None) };
    let Some(ours) = target.patched_root(number).await? else { return Ok(None) };
    if ours == roots.last().copied().unwrap_or(header_root) {
        return Ok(None);
    }
    // How many of the leader's patches the target holds: none, or up to the one that left
    // its root.
    let held = if ours == header_root {
        Some(0)
    } else {
        roots.iter().position(|root| *root == ours).map(|i| i + 1)
    };
    let Some(held) = held else {
        let Some(parent) = number.checked_sub(1) else {
            let why = "the genesis state here holds dev patches the leader has undone".into();
            return Err(Diverged { block: 0, why }.into());
        };
        let block = leader.blocks(parent, 1).await?;
        let header = &block.first().ok_or_else(|| LeaderError {
            url: leader.url().to_owned(),
            why: format!("no block {parent}"),
        })?;
        target.rewind_to(&header.header, header.header.hash_slow()).await?;
        return Ok(Some(parent));
    };
    for (index, root) in roots.iter().enumerate().skip(held) {
        // The list may have changed since it was read (a revert, other patches): a patch
        // whose root is not the one listed waits for the next round's list.
        match leader.patch(number, index).await? {
            Some(patch) if patch.root == *root => target.apply_patch(patch).await?,
            _ => break,
        }
    }
    Ok(None)
}

/// Fetches the blocks after `round.head` (at most `reach.batch`, none past `reach.until`) and
/// imports them in order, each followed by the dev patches the leader made on it before the
/// next, recording each in `round`. `from` is the head's hash and whether the leader logs
/// patches.
async fn import_next<T: FollowTarget>(
    leader: &Leader,
    target: &T,
    round: &mut Round<T::Error>,
    from: (B256, bool),
    reach: Reach,
) -> Result<(), T::Error> {
    let (mut head_hash, logs_patches) = from;
    let last = round.leader_head.min(reach.until);
    let count = (last - round.head).min(reach.batch.clamp(1, MAX_BATCH));
    for (block, roots) in leader.blocks_and_patches(round.head + 1, count).await? {
        if block.header.parent_hash != head_hash {
            // The leader moved to another chain between the two requests: the next round
            // finds the common block.
            break;
        }
        let hash = block.header.hash_slow();
        let (number, header_root) = (block.header.number, block.header.state_root);
        let txs = block.body.transactions.iter().map(|tx| *tx.tx_hash()).collect();
        target.import(block).await?;
        round.imported.push(Imported { number, hash, txs });
        (round.head, head_hash) = (number, hash);
        let Some(roots) = roots else {
            // The answer about this block's patches failed: the next round looks at them
            // before going on (a leader that logs none has none to look at).
            if logs_patches {
                break;
            }
            continue;
        };
        if !roots.is_empty() {
            // A fresh block holds none of them: each is replayed (never a rewind).
            replay_patches(leader, target, Some((&roots, header_root)), number).await?;
        }
    }
    Ok(())
}

/// Walks back from `from` to the newest block the leader and the target share and makes it
/// the target's head; answers its number.
async fn rewind<T: FollowTarget>(leader: &Leader, target: &T, from: u64) -> Result<u64, T::Error> {
    let mut top = from;
    loop {
        let bottom = top.saturating_sub(REWIND_STRIDE - 1);
        let numbers: Vec<u64> = (bottom..=top).rev().collect();
        let theirs = leader.hashes(&numbers).await?;
        for (&number, their_hash) in numbers.iter().zip(theirs) {
            let ours = target.hash_at(number).await?;
            if ours.is_some() && ours == their_hash {
                let hash = ours.unwrap_or_default();
                let block = leader.blocks(number, 1).await?;
                let header = block.first().map(|b| &b.header).ok_or_else(|| LeaderError {
                    url: leader.url().to_owned(),
                    why: format!("no block {number}"),
                })?;
                target.rewind_to(header, hash).await?;
                return Ok(number);
            }
        }
        if bottom == 0 {
            let why = "no block in common with the leader, not even the genesis: it runs \
                       another chain (a reset, or other genesis flags)"
                .into();
            return Err(Diverged { block: 0, why }.into());
        }
        top = bottom - 1;
    }
}
