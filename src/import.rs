//! Block import: a block received from outside (RLP over the wire, a chain file, a test
//! fixture) is validated against its parent, executed through the same
//! [`ExecutorActor::build_block`] path that mined blocks take (in [`BuildMode::Import`]), every
//! header field Hearth derives is compared with the block's own, and the block is written with
//! its header exactly as received (`import_block`: one atomic batch, the state root re-checked
//! by our trie). A rejected block writes nothing, so the head stays at the last good block.

use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Block, Header, Sealed, TxEnvelope};
use alloy_primitives::B256;
use hearth_actors::ExecutorActor;
use hearth_actors::senders::recover_all;
use hearth_messages::ExecError;
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, PooledTx};
use hearth_storage::{
    BlockDraft, BlockExtras, ChainWriter, SealedBlock, StorageError, StoredBody, import_block_with,
};

pub use hearth_actors::block_check::ForkRules;
use hearth_actors::block_check::{check_derived_fields, validate_header};

/// Why a block was rejected.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The parent is not the chain head.
    #[error(
        "block {number} does not extend the head: parent {parent} unknown or not the head; import blocks in order"
    )]
    NotOnHead {
        /// The block's number.
        number: u64,
        /// Its parent hash.
        parent: B256,
    },
    /// A header field breaks a consensus rule.
    #[error("block {number}: invalid header: {why}")]
    InvalidHeader {
        /// The block's number.
        number: u64,
        /// Which rule.
        why: String,
    },
    /// A field Hearth derives from execution differs from the header's.
    #[error("block {number}: {field} in the header is {header}, execution gives {computed}")]
    Mismatch {
        /// The block's number.
        number: u64,
        /// Which field.
        field: &'static str,
        /// The header's value.
        header: String,
        /// Hearth's value.
        computed: String,
    },
    /// A transaction's signature does not recover.
    #[error("block {number}: transaction {index} has an invalid signature")]
    Signature {
        /// The block's number.
        number: u64,
        /// The transaction's index.
        index: usize,
    },
    /// Execution rejected the block (invalid transaction, failing system call, bad deposit).
    #[error("block {number}: {source}")]
    Execution {
        /// The block's number.
        number: u64,
        /// Why.
        source: ExecError,
    },
    /// Storage failed, or the state root does not match (see the message).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Imports `block` on top of the head of `db` under `rules`; returns the stored block.
pub fn import(
    db: &ChainWriter,
    executor: &mut ExecutorActor,
    block: Block<TxEnvelope>,
    rules: &ForkRules,
) -> Result<SealedBlock, ImportError> {
    import_with_requests(db, executor, block, rules).map(|(block, _)| block)
}

/// [`import`], also answering the block's EIP-7685 requests (type byte first, empty ones left
/// out), which a block does not carry and an Engine API payload does.
pub fn import_with_requests(
    db: &ChainWriter,
    executor: &mut ExecutorActor,
    block: Block<TxEnvelope>,
    rules: &ForkRules,
) -> Result<(SealedBlock, Vec<alloy_primitives::Bytes>), ImportError> {
    let Block { header, body } = block;
    let number = header.number;
    let parent = head_parent(db, &header)?;
    validate_header(&parent, &header, body.ommers.len(), body.withdrawals.is_some(), rules)
        .map_err(|why| ImportError::InvalidHeader { number, why })?;
    let txs = recover_txs(executor, body.transactions, number)?;
    // Kept to be stored with the block, so it can be served and exported as received.
    let extras = BlockExtras {
        ommers: body.ommers.clone(),
        withdrawals: body.withdrawals.clone().map(|w| w.into_inner()).unwrap_or_default(),
    };
    let env = BlockEnvSpec {
        spec: Some(rules.spec),
        chain_id: Some(rules.chain_id),
        blob_params: Some(rules.blob_params),
        withdrawals: body.withdrawals.map(|w| w.into_inner()).unwrap_or_default(),
        ommers: body.ommers,
        ..BlockEnvSpec::of_header(&header)
    };
    let built = executor
        .build_block(BuildBlock { parent: Sealed::new(parent), env, txs, mode: BuildMode::Import })
        .map_err(|source| ImportError::Execution { number, source })?;
    check_derived_fields(&header, &built.draft.header).map_err(|mismatch| {
        ImportError::Mismatch {
            number,
            field: mismatch.field,
            header: mismatch.header,
            computed: mismatch.computed,
        }
    })?;
    let draft = BlockDraft {
        header,
        body: built.draft.body,
        receipts: built.draft.receipts,
        touched: built.draft.touched,
    };
    Ok((import_block_with(db, draft, &built.diff, extras)?, built.requests))
}

/// The head of `db`, which must be `header`'s parent: blocks are imported in order.
fn head_parent(db: &ChainWriter, header: &Header) -> Result<Header, ImportError> {
    let (number, parent) = (header.number, header.parent_hash);
    let head = db.head_number().unwrap_or_default();
    let head_header = db.header(head)?.ok_or(ImportError::NotOnHead { number, parent })?;
    if db.block_hash(head)? != Some(parent) {
        return Err(ImportError::NotOnHead { number, parent });
    }
    Ok(head_header)
}

/// The block's transactions with their senders, recovered on `--exec.threads` threads in
/// order, so that the first bad index is the same as one by one.
fn recover_txs(
    executor: &ExecutorActor,
    transactions: Vec<TxEnvelope>,
    number: u64,
) -> Result<Vec<PooledTx>, ImportError> {
    let senders = recover_all(&transactions, executor.threads(), |tx| tx.recover_signer());
    let mut txs = Vec::with_capacity(transactions.len());
    for (index, (tx, sender)) in transactions.into_iter().zip(senders).enumerate() {
        let sender = sender.map_err(|_| ImportError::Signature { number, index })?;
        let hash = *tx.tx_hash();
        txs.push(PooledTx { tx: Arc::new(tx), sender, hash });
    }
    Ok(txs)
}

/// An empty block body as stored.
pub fn empty_body() -> StoredBody {
    StoredBody { transactions: vec![], senders: vec![] }
}
