//! Block import: a block received from outside (RLP over the wire, a chain file, a test
//! fixture) is validated against its parent, executed through the same
//! [`ExecutorActor::build_block`] path that mined blocks take (in [`BuildMode::Import`]), every
//! header field Hearth derives is compared with the block's own, and the block is written with
//! its header exactly as received (`import_block`: one atomic batch, the state root re-checked
//! by our trie). A rejected block writes nothing, so the head stays at the last good block.

use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_eips::eip1559::INITIAL_BASE_FEE;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{B256, U256};
use hearth_actors::ExecutorActor;
use hearth_actors::senders::recover_all;
use hearth_messages::ExecError;
use hearth_messages::executor::{BlockEnvSpec, BuildBlock, BuildMode, PooledTx};
use hearth_storage::{
    BlockDraft, BlockExtras, ChainWriter, SealedBlock, StorageError, StoredBody, import_block_with,
};
use revm::primitives::hardfork::SpecId;

/// The chain rules a block is imported under: its fork and blob schedule, and the chain id.
#[derive(Debug, Clone, Copy)]
pub struct ForkRules {
    /// EVM rules.
    pub spec: SpecId,
    /// Blob schedule in force.
    pub blob_params: BlobParams,
    /// Chain id.
    pub chain_id: u64,
}

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
    let Block { header, body } = block;
    let number = header.number;
    let parent = head_parent(db, &header)?;
    validate_header(&parent, &header, body.ommers.len(), body.withdrawals.is_some(), rules)?;
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
        .build_block(BuildBlock { parent, env, txs, mode: BuildMode::Import })
        .map_err(|source| ImportError::Execution { number, source })?;
    check_derived_fields(&header, &built.draft.header)?;
    let draft = BlockDraft { header, body: built.draft.body, receipts: built.draft.receipts };
    Ok(import_block_with(db, draft, &built.diff, extras)?)
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

/// Compares each header field that execution derives with the block's own (`computed` is the
/// header execution built).
fn check_derived_fields(header: &Header, computed: &Header) -> Result<(), ImportError> {
    let number = header.number;
    let compare = |field: &'static str, header: String, computed: String| {
        if header == computed {
            Ok(())
        } else {
            Err(ImportError::Mismatch { number, field, header, computed })
        }
    };
    compare("gas used", header.gas_used.to_string(), computed.gas_used.to_string())?;
    compare(
        "transactions root",
        header.transactions_root.to_string(),
        computed.transactions_root.to_string(),
    )?;
    compare("receipts root", header.receipts_root.to_string(), computed.receipts_root.to_string())?;
    compare("logs bloom", header.logs_bloom.to_string(), computed.logs_bloom.to_string())?;
    compare("ommers hash", header.ommers_hash.to_string(), computed.ommers_hash.to_string())?;
    compare(
        "withdrawals root",
        format!("{:?}", header.withdrawals_root),
        format!("{:?}", computed.withdrawals_root),
    )?;
    compare(
        "blob gas used",
        format!("{:?}", header.blob_gas_used),
        format!("{:?}", computed.blob_gas_used),
    )?;
    compare(
        "requests hash",
        format!("{:?}", header.requests_hash),
        format!("{:?}", computed.requests_hash),
    )
}

/// The consensus rules on a header that need only its parent (no execution).
pub fn validate_header(
    parent: &Header,
    header: &Header,
    ommers: usize,
    has_withdrawals: bool,
    rules: &ForkRules,
) -> Result<(), ImportError> {
    let checks = check_sequence(parent, header)
        .and_then(|()| check_gas_limit(parent, header, rules.spec))
        .and_then(|()| check_fork_fields(header, has_withdrawals, rules.spec))
        .and_then(|()| check_fees_and_ommers(parent, header, ommers, rules));
    checks.map_err(|why| ImportError::InvalidHeader { number: header.number, why })
}

/// The header follows its parent: the next number, a later timestamp, short extra data, and
/// no more gas used than its limit.
fn check_sequence(parent: &Header, header: &Header) -> Result<(), String> {
    let number = header.number;
    if number != parent.number + 1 {
        return Err(format!("number {number} does not follow the parent's {}", parent.number));
    }
    if header.timestamp <= parent.timestamp {
        return Err(format!(
            "timestamp {} is not after the parent's {}",
            header.timestamp, parent.timestamp
        ));
    }
    if header.extra_data.len() > 32 {
        return Err(format!("extra data is {} bytes, at most 32", header.extra_data.len()));
    }
    if header.gas_used > header.gas_limit {
        return Err(format!("gas used {} above gas limit {}", header.gas_used, header.gas_limit));
    }
    Ok(())
}

/// The gas limit moves less than 1/1024 of the parent's, and stays at least 5000.
fn check_gas_limit(parent: &Header, header: &Header, spec: SpecId) -> Result<(), String> {
    // EIP-1559: the first London block doubles the parent's limit into the elastic target.
    let london = spec.is_enabled_in(SpecId::LONDON);
    let parent_limit = if london && parent.base_fee_per_gas.is_none() {
        parent.gas_limit * 2
    } else {
        parent.gas_limit
    };
    if header.gas_limit.abs_diff(parent_limit) >= parent_limit / 1024 || header.gas_limit < 5000 {
        return Err(format!(
            "gas limit {} is out of bounds for the parent's {parent_limit}",
            header.gas_limit
        ));
    }
    Ok(())
}

/// Each field a fork added is present exactly when the fork is active.
fn check_fork_fields(header: &Header, has_withdrawals: bool, spec: SpecId) -> Result<(), String> {
    let presence = |field: &str, present: bool, active: bool| {
        if present == active {
            Ok(())
        } else {
            Err(format!(
                "{field} is {} but the fork {} it",
                if present { "present" } else { "absent" },
                if active { "requires" } else { "forbids" }
            ))
        }
    };
    presence("base fee", header.base_fee_per_gas.is_some(), spec.is_enabled_in(SpecId::LONDON))?;
    let shanghai = spec.is_enabled_in(SpecId::SHANGHAI);
    presence("withdrawals root", header.withdrawals_root.is_some(), shanghai)?;
    presence("withdrawals list", has_withdrawals, shanghai)?;
    let cancun = spec.is_enabled_in(SpecId::CANCUN);
    presence("blob gas used", header.blob_gas_used.is_some(), cancun)?;
    presence("excess blob gas", header.excess_blob_gas.is_some(), cancun)?;
    presence("parent beacon block root", header.parent_beacon_block_root.is_some(), cancun)?;
    presence("requests hash", header.requests_hash.is_some(), spec.is_enabled_in(SpecId::PRAGUE))
}

/// The fields that follow from the parent: the base fee, the excess blob gas; the blob gas
/// under the block maximum; before the merge at most 2 ommers, after it no difficulty, nonce
/// or ommers.
fn check_fees_and_ommers(
    parent: &Header,
    header: &Header,
    ommers: usize,
    rules: &ForkRules,
) -> Result<(), String> {
    let spec = rules.spec;
    if let Some(base_fee) = header.base_fee_per_gas {
        let expected = hearth_messages::base_fee::next_base_fee(parent).unwrap_or(INITIAL_BASE_FEE);
        if base_fee != expected {
            return Err(format!("base fee {base_fee}, expected {expected}"));
        }
    }
    if spec.is_enabled_in(SpecId::MERGE) {
        if header.difficulty != U256::ZERO || !header.nonce.is_zero() || ommers != 0 {
            return Err("a post-merge block has difficulty, nonce or ommers".to_owned());
        }
    } else if ommers > 2 {
        return Err(format!("{ommers} ommers, at most 2"));
    }
    if let Some(excess) = header.excess_blob_gas {
        let expected = next_excess_blob_gas(parent, &rules.blob_params, spec);
        if excess != expected {
            return Err(format!("excess blob gas {excess}, expected {expected}"));
        }
    }
    if let Some(used) = header.blob_gas_used
        && used > rules.blob_params.max_blob_gas_per_block()
    {
        return Err(format!("blob gas used {used} above the block maximum"));
    }
    Ok(())
}

/// EIP-4844 (and EIP-7918 from Osaka): the excess blob gas a child of `parent` must carry.
/// A parent from before Cancun counts as zero excess and zero use.
fn next_excess_blob_gas(parent: &Header, params: &BlobParams, spec: SpecId) -> u64 {
    let excess = parent.excess_blob_gas.unwrap_or_default();
    let used = parent.blob_gas_used.unwrap_or_default();
    if spec.is_enabled_in(SpecId::OSAKA) {
        params.next_block_excess_blob_gas_osaka(
            excess,
            used,
            parent.base_fee_per_gas.unwrap_or_default(),
        )
    } else {
        (excess + used).saturating_sub(params.target_blob_gas_per_block())
    }
}

/// An empty block body as stored.
pub fn empty_body() -> StoredBody {
    StoredBody { transactions: vec![], senders: vec![] }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(spec: SpecId) -> ForkRules {
        ForkRules { spec, blob_params: hearth_actors::exec::default_blob_params(spec), chain_id: 1 }
    }

    fn parent() -> Header {
        Header {
            number: 7,
            timestamp: 100,
            gas_limit: 30_000_000,
            gas_used: 15_000_000,
            base_fee_per_gas: Some(1_000_000_000),
            withdrawals_root: Some(B256::ZERO),
            ..Default::default()
        }
    }

    fn child() -> Header {
        Header { number: 8, timestamp: 112, ..parent() }
    }

    #[test]
    fn a_well_formed_shanghai_child_passes() {
        validate_header(&parent(), &child(), 0, true, &rules(SpecId::SHANGHAI)).expect("valid");
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases: Vec<(Header, &str)> = vec![
            (Header { base_fee_per_gas: Some(1), ..child() }, "base fee"),
            (Header { timestamp: 100, ..child() }, "timestamp"),
            (Header { number: 9, ..child() }, "number"),
            (Header { gas_limit: 40_000_000, ..child() }, "gas limit"),
            (Header { withdrawals_root: None, ..child() }, "withdrawals root"),
            (Header { difficulty: U256::from(1), ..child() }, "post-merge"),
        ];
        for (header, word) in cases {
            let err = validate_header(&parent(), &header, 0, true, &rules(SpecId::SHANGHAI))
                .expect_err("must be rejected");
            assert!(err.to_string().contains(word), "{err} should mention {word}");
        }
    }
}
