//! Blocks: resolving block parameters against the head, reading whole blocks from the store,
//! turning them into RPC objects (block, transaction, receipt), and the block methods:
//! eth_getBlockByNumber / ByHash and eth_getBlockTransactionCountByNumber / ByHash.
//!
//! On a dev chain there are no reorgs and every block is final, so "pending", "safe" and
//! "finalized" all mean the head. A state query for a block after the head is "header not
//! found"; a block lookup for one answers `null`.

use alloy_consensus::transaction::{Recovered, TransactionInfo};
use alloy_consensus::{Transaction as _, TxEnvelope};
use alloy_eips::eip4895::Withdrawals;
use alloy_primitives::{B256, U256};
use alloy_rpc_types_eth::{
    Block, BlockId, BlockNumberOrTag, BlockTransactions, Header, Log, Transaction,
    TransactionReceipt,
};
use hearth_messages::SealedBlock;
use hearth_messages::executor::PooledTx;
use serde::Serialize;
use serde_json::Value;

use crate::chain_config::ChainForks;
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::Params;
use crate::transport::Reply;

// ---- resolving block parameters ------------------------------------------------------------

/// The head block number; it exists once genesis is committed.
pub(crate) fn head(ctx: &RpcContext) -> Result<u64, RpcError> {
    ctx.chain.head_number().ok_or(RpcError::HeaderNotFound)
}

/// Whether `block` names the head by a tag (`latest`, `pending`, `safe`, `finalized`: a dev
/// chain has no other), and so follows the head when it moves.
pub(crate) const fn names_head(block: &BlockId) -> bool {
    matches!(
        block,
        BlockId::Number(
            BlockNumberOrTag::Latest
                | BlockNumberOrTag::Pending
                | BlockNumberOrTag::Safe
                | BlockNumberOrTag::Finalized
        )
    )
}

/// The number a tag stands for, given the head (it may be above the head).
pub(crate) const fn tag_number(tag: BlockNumberOrTag, head: u64) -> u64 {
    match tag {
        BlockNumberOrTag::Number(number) => number,
        BlockNumberOrTag::Earliest => 0,
        BlockNumberOrTag::Latest
        | BlockNumberOrTag::Pending
        | BlockNumberOrTag::Safe
        | BlockNumberOrTag::Finalized => head,
    }
}

/// The block a state query reads at: a number after the head or an unknown hash is
/// "header not found" (-32000), as in geth.
pub(crate) fn state_block(ctx: &RpcContext, block: BlockId) -> Result<u64, RpcError> {
    let head = head(ctx)?;
    let number = match block {
        BlockId::Number(tag) => tag_number(tag, head),
        // Every stored block is canonical on a dev chain, so requireCanonical holds.
        BlockId::Hash(hash) => {
            ctx.chain.block_number(&hash.block_hash)?.ok_or(RpcError::HeaderNotFound)?
        }
    };
    if number > head {
        return Err(RpcError::HeaderNotFound);
    }
    Ok(number)
}

/// Refuses state at block `number` when it is before a fork's fork block, for the methods that
/// need more than its values (a proof needs the upstream's trie nodes, which the fork does not
/// fetch). Below the fork block the store reads the upstream's state as of that block.
pub(crate) fn state_after_fork(ctx: &RpcContext, number: u64) -> Result<(), RpcError> {
    match ctx.chain.fork() {
        Some(fork) if number < fork.block() => {
            Err(RpcError::BeforeFork { number, fork: fork.block() })
        }
        _ => Ok(()),
    }
}

/// The block a lookup names, or `None` when it is after the head (the answer is `null`).
pub(crate) fn lookup_block(
    ctx: &RpcContext,
    tag: BlockNumberOrTag,
) -> Result<Option<u64>, RpcError> {
    let head = head(ctx)?;
    let number = tag_number(tag, head);
    Ok((number <= head).then_some(number))
}

// ---- reading blocks ------------------------------------------------------------------------

/// Block `number` with its hash, body and receipts, or `None` if it is not stored.
pub(crate) fn read_block(ctx: &RpcContext, number: u64) -> Result<Option<SealedBlock>, RpcError> {
    let Some(header) = ctx.chain.header(number)? else {
        return Ok(None);
    };
    // The hash, body and receipts are written before the header (storage's `finish_block`),
    // so a block with a header and without the rest means the store is damaged.
    let missing = |what| RpcError::MissingRecord { number, what };
    let hash = ctx.chain.block_hash(number)?.ok_or_else(|| missing("hash"))?;
    let body = ctx.chain.body(number)?.ok_or_else(|| missing("body"))?;
    let receipts = ctx.chain.receipts(number)?.ok_or_else(|| missing("receipts"))?;
    if body.transactions.len() != body.senders.len() || body.transactions.len() != receipts.len() {
        return Err(missing("matching transactions, senders and receipts"));
    }
    let extras = ctx.chain.extras(number)?;
    Ok(Some(SealedBlock { header, hash, body, receipts, extras }))
}

/// The block with hash `hash`, or `None` if we do not know it.
pub(crate) fn read_block_by_hash(
    ctx: &RpcContext,
    hash: &B256,
) -> Result<Option<SealedBlock>, RpcError> {
    match ctx.chain.block_number(hash)? {
        Some(number) => read_block(ctx, number),
        None => Ok(None),
    }
}

/// Encodes a result as JSON.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<Value, RpcError> {
    Ok(serde_json::to_value(value)?)
}

/// A quantity result, e.g. `"0x1f"`.
pub(crate) fn quantity(n: u64) -> Value {
    Value::String(format!("{n:#x}"))
}

// ---- RPC objects ---------------------------------------------------------------------------

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

/// The blob gas price of a block, from its excess blob gas under the blob schedule of the
/// block's own fork ([`blob_params_at`]).
pub(crate) fn blob_gas_price(header: &alloy_consensus::Header, forks: &ChainForks) -> u128 {
    blob_params_at(header, forks).calc_blob_fee(header.excess_blob_gas.unwrap_or_default())
}

/// The blob schedule block `header` runs under: that of the chain's timestamped fork active
/// at its time (Cancun's fraction before Prague, Prague's after, a BPO fork's own). A store
/// without a fork table (written before genesis documents were kept) falls back on the header:
/// Prague's schedule for blocks with a requests hash, Cancun's before.
pub(crate) fn blob_params_at(
    header: &alloy_consensus::Header,
    forks: &ChainForks,
) -> alloy_eips::eip7840::BlobParams {
    forks.blob_params_at(header.timestamp).unwrap_or_else(|| {
        if header.requests_hash.is_some() {
            alloy_eips::eip7840::BlobParams::prague()
        } else {
            alloy_eips::eip7840::BlobParams::cancun()
        }
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

// ---- methods -------------------------------------------------------------------------------

/// eth_getBlockByNumber: `[block, fullTransactions]`; `null` after the head.
pub(crate) fn get_block_by_number(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(2)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let full: bool = params.required(1)?;
    let block = match lookup_block(ctx, tag)? {
        Some(number) => read_block(ctx, number)?,
        None => None,
    };
    block.map(|b| upstream_block(ctx, &b, full)).transpose().map(Reply::typed)
}

/// `block` as an RPC object; an upstream block of a fork (at or below its fork block) with
/// the total difficulty and size the upstream reported with it, so the answer is the
/// upstream's (anvil reports a size one more than the block's RLP).
fn upstream_block(ctx: &RpcContext, block: &SealedBlock, full: bool) -> Result<Block, RpcError> {
    let mut rpc = rpc_block(block, full);
    if let Some(fork) = ctx.chain.fork()
        && block.number() <= fork.block()
    {
        let (total_difficulty, size) = fork.block_report(block.number())?;
        rpc.header.total_difficulty = total_difficulty;
        if let Some(size) = size {
            rpc.header.size = Some(U256::from(size));
        }
    }
    Ok(rpc)
}

/// eth_getBlockByHash: `[hash, fullTransactions]`; `null` when unknown.
pub(crate) fn get_block_by_hash(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(2)?;
    let hash: B256 = params.required(0)?;
    let full: bool = params.required(1)?;
    let block = read_block_by_hash(ctx, &hash)?;
    block.map(|b| upstream_block(ctx, &b, full)).transpose().map(Reply::typed)
}

/// eth_getBlockTransactionCountByNumber: `[block]`; `null` after the head.
pub(crate) fn tx_count_by_number(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let body = match lookup_block(ctx, tag)? {
        Some(number) => ctx.chain.body(number)?,
        None => None,
    };
    Ok(body.map_or(Value::Null, |b| quantity(b.transactions.len() as u64)))
}

/// eth_getBlockTransactionCountByHash: `[hash]`; `null` when unknown.
pub(crate) fn tx_count_by_hash(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    let body = match ctx.chain.block_number(&hash)? {
        Some(number) => ctx.chain.body(number)?,
        None => None,
    };
    Ok(body.map_or(Value::Null, |b| quantity(b.transactions.len() as u64)))
}

/// eth_getTransactionByBlockNumberAndIndex: `[block, index]`; `null` when out of range.
pub(crate) fn tx_by_number_and_index(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let tag: BlockNumberOrTag = params.required(0)?;
    let index: u64 = params.required(1)?;
    let block = match lookup_block(ctx, tag)? {
        Some(number) => read_block(ctx, number)?,
        None => None,
    };
    to_json(&block.and_then(|b| rpc_transaction(&b, usize::try_from(index).ok()?)))
}

/// eth_getTransactionByBlockHashAndIndex: `[hash, index]`; `null` when out of range.
pub(crate) fn tx_by_hash_and_index(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let hash: B256 = params.required(0)?;
    let index: u64 = params.required(1)?;
    let block = read_block_by_hash(ctx, &hash)?;
    to_json(&block.and_then(|b| rpc_transaction(&b, usize::try_from(index).ok()?)))
}
