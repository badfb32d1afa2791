//! Messages to the `StateActor`, the only writer of storage.

use std::sync::Arc;

use actix::{Message, Recipient};
use hearth_storage::{BlockDraft, SealedBlock, StateDiff};

use crate::StateError;

/// Writes a block on top of the head: applies `diff` to the tries, seals the header with the
/// state root, and commits everything atomically. Replies once the block is durable.
#[derive(Debug)]
pub struct CommitBlock {
    /// The block without its state root.
    pub draft: BlockDraft,
    /// What the block changed.
    pub diff: StateDiff,
}

impl Message for CommitBlock {
    type Result = Result<Arc<SealedBlock>, StateError>;
}

/// A block was committed and is now the head. Sent to every subscriber.
#[derive(Debug, Clone)]
pub struct BlockCommitted {
    /// The block, shared.
    pub block: Arc<SealedBlock>,
}

impl Message for BlockCommitted {
    type Result = ();
}

/// Subscribes a recipient to `BlockCommitted`. Delivery uses `try_send`: a subscriber whose
/// mailbox is full misses that notification (counted and logged), it never blocks commits.
#[derive(Debug)]
pub struct SubscribeBlocks(pub Recipient<BlockCommitted>);

impl Message for SubscribeBlocks {
    type Result = ();
}
