//! Otterscan's block methods: ots_getBlockDetails(ByHash), ots_getBlockTransactions and
//! erigon_getHeaderByNumber, each eth_getBlockByNumber's block reshaped as Erigon reshapes it.

use alloy_consensus::Transaction as _;
use alloy_primitives::{B256, U256};
use alloy_rpc_types_eth::BlockNumberOrTag;
use hearth_messages::SealedBlock;
use serde_json::{Map, Value, json};

use crate::core::{
    HexOrDecimal, Params, RpcContext, RpcError, lookup_block, read_block, read_block_by_hash,
    rpc_block, rpc_receipt, to_json,
};

/// Most transactions one ots_getBlockTransactions page holds (Erigon reads the size as a u8).
const MAX_BLOCK_PAGE: u64 = 255;

/// The block a number or tag names, or "block #N not found" past the head.
fn block_at(ctx: &RpcContext, tag: BlockNumberOrTag) -> Result<SealedBlock, RpcError> {
    let missing = || RpcError::BlockNotFound(format!("{tag}"));
    let number = lookup_block(ctx, tag)?.ok_or_else(missing)?;
    read_block(ctx, number)?.ok_or_else(missing)
}

/// `block` as eth_getBlockByNumber shows it (`full`: whole transactions), as a JSON object.
fn block_object(block: &SealedBlock, full: bool) -> Result<Map<String, Value>, RpcError> {
    match to_json(&rpc_block(block, full))? {
        Value::Object(object) => Ok(object),
        _ => Err(RpcError::Encode(serde::ser::Error::custom("a block encodes as an object"))),
    }
}

/// ots_getBlockDetails: `[block]`.
pub(crate) fn block_details(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(1)?;
    let block = block_at(ctx, p.required(0)?)?;
    details(&block)
}

/// ots_getBlockDetailsByHash: `[hash]`.
pub(crate) fn block_details_by_hash(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(1)?;
    let hash: B256 = p.required(0)?;
    let block =
        read_block_by_hash(ctx, &hash)?.ok_or_else(|| RpcError::BlockNotFound(hash.to_string()))?;
    details(&block)
}

/// The block without its transactions but with their count, its bloom `null`; the issuance
/// (none on a chain past the merge, and none on a dev chain: Hearth pays no block reward); and
/// what its transactions paid in fees (gas used times the effective price, burnt part
/// included).
fn details(block: &SealedBlock) -> Result<Value, RpcError> {
    let mut object = block_object(block, false)?;
    object.remove("transactions");
    object.insert("transactionCount".into(), Value::from(block.body.transactions.len()));
    object.insert("logsBloom".into(), Value::Null);
    // Each transaction's gas from the cumulative counts, in one pass (`rpc_receipt` would sum
    // the logs of every earlier receipt for each one).
    let mut fees = U256::ZERO;
    let mut before = 0;
    for (tx, receipt) in block.body.transactions.iter().zip(&block.receipts) {
        let cumulative = receipt.cumulative_gas_used();
        let price = tx.effective_gas_price(block.header.base_fee_per_gas);
        fees += U256::from(cumulative.saturating_sub(before)) * U256::from(price);
        before = cumulative;
    }
    Ok(json!({
        "block": object,
        "issuance": { "blockReward": "0x0", "uncleReward": "0x0", "issuance": "0x0" },
        "totalFees": fees,
    }))
}

/// ots_getBlockTransactions: `[block, page, pageSize]`. Pages count from the block's end, as
/// Erigon's do: page 0 holds the last `pageSize` transactions (Otterscan shows the newest
/// first), each with its input cut to the 4-byte selector, and their receipts without logs.
pub(crate) fn block_transactions(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(3)?;
    let block = block_at(ctx, p.required(0)?)?;
    let page = p.required::<HexOrDecimal>(1)?.0;
    let size = p.required::<HexOrDecimal>(2)?.0;
    if size > MAX_BLOCK_PAGE {
        return Err(RpcError::InvalidParams(format!(
            "page size {size} is over the most one page holds, {MAX_BLOCK_PAGE}"
        )));
    }
    let count = block.body.transactions.len() as u64;
    let end = count.saturating_sub(page.saturating_mul(size));
    let start = end.saturating_sub(size);
    // Hashes only: the page's transactions replace them below.
    let mut object = block_object(&block, false)?;
    let mut transactions = Vec::new();
    let mut receipts = Vec::new();
    for index in start as usize..end as usize {
        let mut tx = to_json(&crate::core::rpc_transaction(&block, index))?;
        if let Some(Value::String(input)) = tx.get_mut("input") {
            input.truncate(10);
        }
        transactions.push(tx);
        let mut receipt = to_json(&rpc_receipt(&block, index, &ctx.forks))?;
        if let Value::Object(fields) = &mut receipt {
            fields.insert("logs".into(), Value::Null);
            fields.insert("logsBloom".into(), Value::Null);
        }
        receipts.push(receipt);
    }
    object.insert("transactions".into(), Value::Array(transactions));
    object.insert("transactionCount".into(), Value::from(count));
    object.insert("logsBloom".into(), Value::Null);
    Ok(json!({ "fullblock": object, "receipts": receipts }))
}

/// erigon_getHeaderByNumber: `[block]`; the header alone (with its hash), as Erigon answers:
/// no transactions, ommers, withdrawals or size.
pub(crate) fn header_by_number(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(1)?;
    let block = block_at(ctx, p.required(0)?)?;
    let mut object = block_object(&block, false)?;
    for field in ["transactions", "uncles", "withdrawals", "size", "totalDifficulty"] {
        object.remove(field);
    }
    Ok(Value::Object(object))
}
