//! Otterscan's namespace: the `ots_` methods and `erigon_getHeaderByNumber`, answered as
//! Erigon answers them (the node Otterscan is written against; `scripts/ots-compare.sh` lists
//! where anvil answers otherwise and README "Otterscan" says which side Hearth takes).
//!
//! Address searches read the store's address index (`hearth_storage::Direction`), never a
//! scan of the blocks; the per-transaction views replay the transaction on the executor pool
//! (`TraceJob::Otterscan`).

mod blocks;
mod creator;
mod search;

use alloy_primitives::{Address, B256};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use hearth_messages::trace::{OtsView, TraceBudget, TraceJob};
use serde_json::Value;

use crate::core::{Params, Reply, RpcContext, RpcError, state_block, to_json};
use crate::debug::trace::{locate, run};

pub(crate) use blocks::{
    block_details, block_details_by_hash, block_transactions, header_by_number,
};
pub(crate) use creator::contract_creator;
pub(crate) use search::{search_after, search_before};

/// The API level Otterscan asks for (Erigon's and anvil's); Otterscan refuses a node below it.
const API_LEVEL: u64 = 8;

/// ots_getApiLevel: `[]`.
pub(crate) fn api_level(p: &Params) -> Result<Value, RpcError> {
    p.at_most(0)?;
    Ok(Value::from(API_LEVEL))
}

/// ots_hasCode: `[address, block?]`; whether the account has code in that block's state
/// (an EIP-7702 delegated account has: its designator).
pub(crate) fn has_code(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(2)?;
    let address: Address = p.required(0)?;
    let block: BlockId = p.optional(1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let number = state_block(ctx, block)?;
    let code = ctx.chain.state_at(number).code_of(&address)?;
    Ok(Value::Bool(!code.is_empty()))
}

/// ots_getTransactionBySenderAndNonce: `[sender, nonce]`; the hash of the mined transaction,
/// or `null` (pooled transactions are not looked at, as in Erigon).
pub(crate) fn tx_by_sender_and_nonce(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(2)?;
    let sender: Address = p.required(0)?;
    let nonce: crate::core::HexOrDecimal = p.required(1)?;
    let found = crate::eth::tx::mined_by_sender_and_nonce(ctx, sender, nonce.0)?;
    to_json(&found.map(|(block, index)| *block.body.transactions[index].tx_hash()))
}

/// ots_traceTransaction, ots_getInternalOperations, ots_getTransactionError: `[hash]`;
/// "transaction not found" for a hash the chain does not hold.
pub(crate) async fn transaction_view(
    ctx: &RpcContext,
    p: &Params,
    view: OtsView,
) -> Result<Reply, RpcError> {
    p.at_most(1)?;
    let hash: B256 = p.required(0)?;
    let (block, index) = locate(ctx, &hash)?;
    // The tracers' default time cap: a replay of a heavy block holds an executor thread.
    let budget = TraceBudget {
        max_bytes: ctx.limits.max_response_bytes,
        timeout: Some(crate::debug::trace::DEFAULT_TRACER_TIMEOUT),
    };
    run(ctx, TraceJob::Otterscan { block, index, view }, budget).await
}
