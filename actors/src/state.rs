//! `StateActor`: the only writer of storage.
//!
//! Owns: the write side of `ChainDb` (trie nodes, versioned accounts and storage, blocks,
//! receipts, the head pointer), the cache of recently written trie nodes (`BlockWriter`) and
//! the list of block subscribers. Handles `CommitBlock` and
//! `SubscribeBlocks`; sends `BlockCommitted` to subscribers with `try_send` (a full subscriber
//! misses one notification and it is counted; a commit never waits on a subscriber).
//! Mailbox: bounded by the node config. Restart: never; on a storage error it logs at `error`
//! and stops the `System` with a non-zero code, because a half-known state must not be served.

use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, Addr, Context, Handler, Recipient};
use alloy_consensus::Header;
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::StateError;
use hearth_messages::state::{BlockCommitted, CommitBlock, SubscribeBlocks};
use hearth_storage::trie::EMPTY_ROOT;
use hearth_storage::{
    AccountChange, AccountFields, BlockDraft, BlockWriter, ChainDb, DEFAULT_NODE_CACHE_BYTES,
    EMPTY_CODE_HASH, SealedBlock, StateDiff, StorageError, StoredBody, write_block,
};
use tracing::{error, info, warn};

/// The state owner.
#[derive(Debug)]
pub struct StateActor {
    db: ChainDb,
    /// Writes blocks, keeping the trie nodes of recent blocks in memory for the next ones.
    writer: BlockWriter,
    subscribers: Vec<Recipient<BlockCommitted>>,
    /// Notifications dropped because a subscriber's mailbox was full.
    missed_notifications: u64,
}

impl StateActor {
    /// The owner of `db`'s write side.
    pub fn new(db: ChainDb) -> Self {
        let writer = BlockWriter::new(db.clone(), DEFAULT_NODE_CACHE_BYTES);
        Self { db, writer, subscribers: Vec::new(), missed_notifications: 0 }
    }

    /// Starts the actor on its own arbiter with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> Addr<Self> {
        let arbiter = actix::Arbiter::new();
        Self::start_in_arbiter(&arbiter.handle(), move |ctx| {
            ctx.set_mailbox_capacity(mailbox.get());
            self
        })
    }

    /// Writes the block, then tells every subscriber.
    fn commit(&mut self, msg: CommitBlock) -> Result<Arc<SealedBlock>, StateError> {
        let head = self.db.head_number();
        let expected = head.map_or(0, |h| h + 1);
        if msg.draft.header.number != expected {
            return Err(StateError::NotNext {
                head: head.unwrap_or_default(),
                got: msg.draft.header.number,
            });
        }
        let block = Arc::new(self.writer.write(msg.draft, &msg.diff)?);
        info!(target: "actors::state", number = block.number(), hash = %block.hash, txs = block.body.transactions.len(), "block committed");
        let note = BlockCommitted { block: Arc::clone(&block) };
        self.subscribers.retain(|s| s.connected());
        for subscriber in &self.subscribers {
            if subscriber.try_send(note.clone()).is_err() {
                self.missed_notifications += 1;
                warn!(target: "actors::state", missed = self.missed_notifications, "block subscriber mailbox full; notification dropped");
            }
        }
        Ok(block)
    }
}

impl Actor for StateActor {
    type Context = Context<Self>;
}

impl Handler<CommitBlock> for StateActor {
    type Result = Result<Arc<SealedBlock>, StateError>;

    fn handle(&mut self, msg: CommitBlock, _ctx: &mut Self::Context) -> Self::Result {
        let result = self.commit(msg);
        if let Err(StateError::Storage(e)) = &result {
            error!(target: "actors::state", error = %e, "storage failed while committing; stopping the node");
            actix::System::current().stop_with_code(1);
        }
        result
    }
}

impl Handler<SubscribeBlocks> for StateActor {
    type Result = ();

    fn handle(&mut self, msg: SubscribeBlocks, _ctx: &mut Self::Context) -> Self::Result {
        self.subscribers.push(msg.0);
    }
}

/// What the genesis block holds.
#[derive(Debug, Clone)]
pub struct GenesisSpec {
    /// Funded accounts.
    pub alloc: Vec<(Address, U256)>,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Base fee of the genesis block.
    pub base_fee: u64,
    /// Timestamp (seconds).
    pub timestamp: u64,
}

/// Writes the genesis block when the store is empty; returns the head either way.
/// Runs before any actor starts, so it needs no owner.
pub fn init_genesis(db: &ChainDb, spec: &GenesisSpec) -> Result<u64, StorageError> {
    if let Some(head) = db.head_number() {
        return Ok(head);
    }
    let mut diff = StateDiff::default();
    for (address, balance) in &spec.alloc {
        diff.accounts.insert(
            *address,
            AccountChange {
                info: Some(AccountFields {
                    nonce: 0,
                    balance: *balance,
                    code_hash: EMPTY_CODE_HASH,
                }),
                storage_wiped: false,
                storage: Default::default(),
            },
        );
    }
    let header = Header {
        ommers_hash: alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH,
        transactions_root: EMPTY_ROOT,
        receipts_root: EMPTY_ROOT,
        gas_limit: spec.gas_limit,
        timestamp: spec.timestamp,
        extra_data: Bytes::new(),
        base_fee_per_gas: Some(spec.base_fee),
        withdrawals_root: Some(EMPTY_ROOT),
        blob_gas_used: Some(0),
        excess_blob_gas: Some(0),
        parent_beacon_block_root: Some(B256::ZERO),
        requests_hash: Some(EMPTY_REQUESTS_HASH),
        ..Default::default()
    };
    let draft = BlockDraft {
        header,
        body: StoredBody { transactions: vec![], senders: vec![] },
        receipts: vec![],
    };
    let block = write_block(db, draft, &diff)?;
    info!(target: "actors::state", hash = %block.hash, state_root = %block.header.state_root, "genesis written");
    Ok(0)
}
