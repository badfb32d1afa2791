//! Conversions to the JSON-RPC shapes: quantities, and a stored block, transaction or receipt as
//! its RPC object.

use alloy_consensus::transaction::{Recovered, TransactionInfo};
use alloy_consensus::{Transaction as _, TxEnvelope};
use alloy_eips::eip4895::Withdrawals;
use alloy_primitives::U256;
use alloy_rpc_types_eth::{Block, BlockTransactions, Header, Log, Transaction, TransactionReceipt};
use hearth_messages::SealedBlock;
use hearth_messages::executor::PooledTx;
use serde::Serialize;
use serde_json::Value;

use super::error::RpcError;
use super::forks::{ChainForks, blob_gas_price};

/// Encodes a result as JSON.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<Value, RpcError> {
    Ok(serde_json::to_value(value)?)
}

/// A quantity result, e.g. `"0x1f"`.
pub(crate) fn quantity(n: u64) -> Value {
    Value::String(format!("{n:#x}"))
}

/// Transaction `index` of `block` as an RPC object, or `None` when out of range.
pub(crate) fn rpc_transaction(block: &SealedBlock, index: usize) -> Option<Transaction> {
    let tx = block.body.transactions.get(index)?;
    let sender = *block.body.senders.get(index)?;
    let info = TransactionInfo {
        hash: Some(*tx.tx_hash()),
        index: Some(index as u64),
        block_hash: Some(block.hash),
        block_number: Some(block.number()),
        base_fee: block.header.base_fee_per_gas,
        block_timestamp: Some(block.header.timestamp),
    };
    Some(Transaction::from_transaction(Recovered::new_unchecked(tx.clone(), sender), info))
}

/// A pooled transaction as an RPC object: block hash, number and index are `null`.
pub(crate) fn pending_transaction(pooled: &PooledTx) -> Transaction {
    let tx: TxEnvelope = (*pooled.tx).clone();
    let info = TransactionInfo { hash: Some(pooled.hash), ..TransactionInfo::default() };
    Transaction::from_transaction(Recovered::new_unchecked(tx, pooled.sender), info)
}

/// Receipt `index` of `block` as an RPC object, or `None` when out of range. `forks` gives the
/// blob schedule the block's blob gas price follows.
pub(crate) fn rpc_receipt(
    block: &SealedBlock,
    index: usize,
    forks: &ChainForks,
) -> Option<TransactionReceipt> {
    let tx = block.body.transactions.get(index)?;
    let sender = *block.body.senders.get(index)?;
    let receipt = block.receipts.get(index)?;
    let earlier = &block.receipts[..index];
    // Receipts store cumulative gas; this transaction's share is the step from the previous one.
    let cumulative_before = earlier.last().map_or(0, |r| r.cumulative_gas_used());
    let gas_used = receipt.cumulative_gas_used().saturating_sub(cumulative_before);
    // logIndex counts logs across the whole block.
    let mut log_index = earlier.iter().map(|r| r.logs().len() as u64).sum::<u64>();
    let tx_hash = *tx.tx_hash();
    let inner = receipt.clone().map_logs(|log| {
        let rpc_log = Log {
            inner: log,
            block_hash: Some(block.hash),
            block_number: Some(block.number()),
            block_timestamp: Some(block.header.timestamp),
            transaction_hash: Some(tx_hash),
            transaction_index: Some(index as u64),
            log_index: Some(log_index),
            removed: false,
        };
        log_index += 1;
        rpc_log
    });
    let contract_address = tx.kind().is_create().then(|| sender.create(tx.nonce()));
    Some(TransactionReceipt {
        inner,
        transaction_hash: tx_hash,
        transaction_index: Some(index as u64),
        block_hash: Some(block.hash),
        block_number: Some(block.number()),
        gas_used,
        // min(maxFee, baseFee + tip) for EIP-1559 transactions, gasPrice for legacy ones.
        effective_gas_price: tx.effective_gas_price(block.header.base_fee_per_gas),
        blob_gas_used: tx.blob_gas_used(),
        blob_gas_price: tx.blob_gas_used().map(|_| blob_gas_price(&block.header, forks)),
        from: sender,
        to: tx.to(),
        contract_address,
    })
}

/// `block` as an RPC object, with full transactions or only their hashes.
pub(crate) fn rpc_block(block: &SealedBlock, full: bool) -> Block {
    let transactions = if full {
        BlockTransactions::Full(
            (0..block.body.transactions.len()).filter_map(|i| rpc_transaction(block, i)).collect(),
        )
    } else {
        BlockTransactions::Hashes(block.body.transactions.iter().map(|tx| *tx.tx_hash()).collect())
    };
    let header = Header {
        hash: block.hash,
        inner: block.header.clone(),
        // geth stopped reporting total difficulty after the merge (hive's rpc-compat fixtures
        // expect no field), and Hearth does not track it.
        total_difficulty: None,
        size: Some(U256::from(block.size())),
    };
    // Shanghai blocks carry a withdrawals list (empty on a dev chain); earlier ones none.
    let withdrawals =
        block.header.withdrawals_root.map(|_| Withdrawals::new(block.extras.withdrawals.clone()));
    let uncles = block.extras.ommers.iter().map(alloy_consensus::Header::hash_slow).collect();
    Block { header, uncles, transactions, withdrawals }
}
