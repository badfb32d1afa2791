//! Messages to the `FollowerActor` of a read replica (`--follow URL`), which owns the link to
//! the leader: it imports each leader block through the engine actor, forwards the writes the
//! replica's clients send, and tells a write's caller when the block holding it is imported.
//!
//! What a load balancer and `/metrics` read of it (the lag, when the leader was last heard,
//! the import counters) is in [`FollowGauges`]: atomics the follower alone writes, read
//! without asking the actor, so a health probe never waits behind an import.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::Message;
use alloy_primitives::B256;
use serde_json::Value;

use crate::client::ActorError;

/// A replica's view of its leader, written by the follower only.
#[derive(Debug, Default)]
pub struct FollowGauges {
    leader_head: AtomicU64,
    /// Milliseconds since the Unix epoch of the leader's last answer (0: never heard).
    heard_at_ms: AtomicU64,
    imported_blocks: AtomicU64,
    imported_txs: AtomicU64,
    rewinds: AtomicU64,
    errors: AtomicU64,
    /// One more than the leader block this replica refused or whose state differs here (0:
    /// none): it cannot follow past it.
    diverged_at: AtomicU64,
}

/// A snapshot of [`FollowGauges`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FollowStats {
    /// The leader's head block, as last heard.
    pub leader_head: u64,
    /// When the leader last answered (`None`: never since the start).
    pub heard_at: Option<SystemTime>,
    /// Blocks imported since the start.
    pub imported_blocks: u64,
    /// Transactions in them.
    pub imported_txs: u64,
    /// Times the leader's chain went back and the replica rewound with it.
    pub rewinds: u64,
    /// Rounds that failed (the leader unreachable or an answer that did not check).
    pub errors: u64,
    /// The leader block this replica refused, if the last round stopped on one: it stays at
    /// that block's parent until the leader's chain changes.
    pub diverged_at: Option<u64>,
}

impl FollowGauges {
    /// Records an answer of the leader naming `head` as its head.
    pub fn heard(&self, head: u64) {
        self.leader_head.store(head, Ordering::Relaxed);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let ms = u64::try_from(now.as_millis()).unwrap_or(u64::MAX).max(1);
        self.heard_at_ms.store(ms, Ordering::Relaxed);
    }

    /// Counts one imported block of `txs` transactions.
    pub fn imported(&self, txs: usize) {
        self.imported_blocks.fetch_add(1, Ordering::Relaxed);
        self.imported_txs.fetch_add(txs as u64, Ordering::Relaxed);
    }

    /// Counts one rewind.
    pub fn rewound(&self) {
        self.rewinds.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one failed round.
    pub fn failed(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records that the leader's block `number` does not check here (or, for the genesis, that
    /// its state differs).
    pub fn diverged(&self, number: u64) {
        self.diverged_at.store(number.saturating_add(1), Ordering::Relaxed);
    }

    /// Records that blocks import again.
    pub fn converged(&self) {
        self.diverged_at.store(0, Ordering::Relaxed);
    }

    /// What the gauges hold now.
    pub fn stats(&self) -> FollowStats {
        let heard = self.heard_at_ms.load(Ordering::Relaxed);
        FollowStats {
            leader_head: self.leader_head.load(Ordering::Relaxed),
            heard_at: (heard != 0).then(|| UNIX_EPOCH + Duration::from_millis(heard)),
            imported_blocks: self.imported_blocks.load(Ordering::Relaxed),
            imported_txs: self.imported_txs.load(Ordering::Relaxed),
            rewinds: self.rewinds.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            diverged_at: self.diverged_at.load(Ordering::Relaxed).checked_sub(1),
        }
    }
}

/// A write the replica does not serve itself: the JSON-RPC `method` and its `params`, sent to
/// the leader as they came. Answers the leader's response object (`result` or `error`) whole.
#[derive(Debug, Clone)]
pub struct ForwardWrite {
    /// The method.
    pub method: String,
    /// Its params, as the client sent them.
    pub params: Value,
}

/// What the leader answered a forwarded write.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderAnswer {
    /// The leader's JSON-RPC response object (its `result` or its `error`).
    pub response: Value,
    /// Whether the leader mines each transaction as it comes (automine), read in the same
    /// batch as the write: the block holding it is then on its way.
    pub automine: bool,
}

impl Message for ForwardWrite {
    type Result = Result<LeaderAnswer, FollowError>;
}

/// Answers once the transaction `0` is in a block this replica imported, or when `deadline`
/// (`--follow.max-lag-time`) has passed without it.
#[derive(Debug, Clone, Copy)]
pub struct AwaitImport(pub B256);

impl Message for AwaitImport {
    type Result = Result<(), FollowError>;
}

/// Why the follower could not do what was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FollowError {
    /// The leader did not answer, so the write's fate is unknown to the replica.
    #[error(
        "this node is a read replica and its leader {leader} did not answer ({why}); the write may not have reached it: check the leader, then send it again"
    )]
    LeaderUnreachable {
        /// The leader's URL (without path or credentials).
        leader: String,
        /// What failed.
        why: String,
    },
    /// The write was taken by the leader, but its block did not reach this replica in time.
    #[error(
        "the leader took transaction {tx}, but this replica has not imported its block after {waited:?} (it is behind the leader); read it from the leader or retry the read later"
    )]
    NotImported {
        /// The transaction.
        tx: B256,
        /// How long the replica waited.
        waited: Duration,
    },
    /// Too many writes wait for their blocks already.
    #[error(
        "limit exceeded: {0} writes already wait for their blocks on this replica; retry later"
    )]
    TooManyWaiting(usize),
    /// The follower did not answer.
    #[error(transparent)]
    Actor(#[from] ActorError),
}

crate::actor_client! {
    /// The `FollowerActor`'s client. Every call is an `ask`: a full mailbox is -32005 at once.
    pub struct FollowerClient for "follower" {
        /// A write sent to the leader.
        ask forward: ForwardWrite,
        /// Waits for a forwarded transaction's block.
        ask await_import: AwaitImport,
    }
}
