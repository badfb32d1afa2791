//! One round of following a leader, the same for a read replica (`--follow`, the target is
//! this node's engine actor) and for `hearth drive` (the target is another node's Engine API):
//! ask the leader for its head; if the target's head is not on the leader's chain any more,
//! walk back to the newest block both have and make it the target's head; else fetch the
//! missing blocks, at most [`MAX_BATCH`] at a time, and import them one by one.
//!
//! Memory does not grow with how far behind the target is: a round holds one batch.

use alloy_consensus::Header;
use alloy_primitives::B256;

use super::leader::{Leader, LeaderBlock, LeaderError};

/// Most blocks fetched in one request, and so held at once.
pub const MAX_BATCH: u64 = 32;

/// How far back a rewind looks per request to the leader.
const REWIND_STRIDE: u64 = 64;

/// Where the leader's blocks go: the node that follows.
#[allow(async_fn_in_trait, reason = "used with concrete types on one thread, never as dyn")]
pub trait FollowTarget {
    /// Why the target failed.
    type Error: From<LeaderError>;

    /// The target's head: its number and hash.
    async fn head(&self) -> Result<(u64, B256), Self::Error>;

    /// The hash of the target's block `number` (`None`: it has none).
    async fn hash_at(&self, number: u64) -> Result<Option<B256>, Self::Error>;

    /// Executes `block` on its parent (the target's head), checks it and makes it the head.
    async fn import(&self, block: LeaderBlock) -> Result<(), Self::Error>;

    /// Makes the target's canonical block `header` (hashing to `hash`) its head again.
    async fn rewind_to(&self, header: &Header, hash: B256) -> Result<(), Self::Error>;
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

/// Runs one round of following `leader` with `target`. `Err` when nothing was learned (the
/// target's head unreadable, the leader silent); a later failure is the round's `stopped`.
pub async fn round<T: FollowTarget>(
    leader: &Leader,
    target: &T,
) -> Result<Round<T::Error>, T::Error> {
    let (head, head_hash) = target.head().await?;
    let (leader_head, leader_hash) = leader.head_and_hash(head).await?;
    let mut round =
        Round { leader_head, head, imported: Vec::new(), rewound_to: None, stopped: None };
    if leader_hash != Some(head_hash) {
        // The leader has no block at our height (it went back), or another one there.
        match rewind(leader, target, head).await {
            Ok(common) => (round.head, round.rewound_to) = (common, Some(common)),
            Err(error) => round.stopped = Some(error),
        }
    } else if leader_head > head
        && let Err(error) = import_next(leader, target, &mut round, head_hash).await
    {
        round.stopped = Some(error);
    }
    Ok(round)
}

/// Fetches the blocks after `round.head` (at most [`MAX_BATCH`]) and imports them in order,
/// recording each in `round`.
async fn import_next<T: FollowTarget>(
    leader: &Leader,
    target: &T,
    round: &mut Round<T::Error>,
    mut head_hash: B256,
) -> Result<(), T::Error> {
    let count = (round.leader_head - round.head).min(MAX_BATCH);
    for block in leader.blocks(round.head + 1, count).await? {
        if block.header.parent_hash != head_hash {
            // The leader moved to another chain between the two requests: the next round
            // finds the common block.
            break;
        }
        let hash = block.header.hash_slow();
        let number = block.header.number;
        let txs = block.body.transactions.iter().map(|tx| *tx.tx_hash()).collect();
        target.import(block).await?;
        round.imported.push(Imported { number, hash, txs });
        (round.head, head_hash) = (number, hash);
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
            return Err(LeaderError {
                url: leader.url().to_owned(),
                why: "no block in common, not even the genesis: the leader runs another chain \
                      (start the follower with the leader's genesis flags)"
                    .into(),
            }
            .into());
        }
        top = bottom - 1;
    }
}
