//! ots_getContractCreator: which transaction created a contract, and who (the account whose
//! CREATE or CREATE2 made it: a factory, or the sender of a deployment).
//!
//! The contract's current incarnation (the store counts one per creation at an address) was
//! created in the first block where the account has code under that incarnation; the address
//! index lists the transactions of that block it appears in, and the first of them whose
//! frames create it is the answer. A contract with no code now (an EOA, one destroyed) gets
//! `null`, as in Erigon, and so does one whose code no transaction brought (genesis, a dev
//! patch).

use alloy_primitives::{Address, B256};
use hearth_messages::storage::Direction;
use hearth_messages::trace::{OtsView, Trace, TraceBudget, TraceJob};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{Params, RpcContext, RpcError, head, read_block};

/// The fields of an ots_traceTransaction entry this search reads.
#[derive(Debug, Deserialize)]
struct Frame {
    #[serde(rename = "type")]
    kind: String,
    from: Address,
    to: Address,
}

/// ots_getContractCreator: `[address]`; `{hash, creator}` or `null`.
pub(crate) async fn contract_creator(ctx: &RpcContext, p: &Params) -> Result<Value, RpcError> {
    p.at_most(1)?;
    let address: Address = p.required(0)?;
    let head = head(ctx)?;
    let Some(now) = ctx.chain.account(&address, head)? else { return Ok(Value::Null) };
    if ctx.chain.state_at(head).code_of(&address)?.is_empty() {
        return Ok(Value::Null);
    }
    let Some(block) = creation_block(ctx, &address, now.incarnation)? else {
        return Ok(Value::Null);
    };
    let mut candidates = Vec::new();
    ctx.chain.appearances(&address, Direction::After, block.saturating_sub(1), |a| {
        if a.block != block {
            return false;
        }
        candidates.push(a.index as usize);
        true
    })?;
    for index in candidates {
        if let Some(creator) = creator_in(ctx, &address, block, index).await? {
            let stored = read_block(ctx, block)?
                .ok_or(RpcError::MissingRecord { number: block, what: "block" })?;
            let hash: B256 = *stored.body.transactions[index].tx_hash();
            return Ok(json!({ "hash": hash, "creator": creator }));
        }
    }
    Ok(Value::Null)
}

/// The first block, among those the address appears in, after which the account has code
/// under `incarnation`.
fn creation_block(
    ctx: &RpcContext,
    address: &Address,
    incarnation: u64,
) -> Result<Option<u64>, RpcError> {
    let mut last = None;
    let mut found = Ok(None);
    ctx.chain.appearances(address, Direction::After, 0, |a| {
        if last == Some(a.block) {
            return true;
        }
        last = Some(a.block);
        found = has_code_as(ctx, address, a.block, incarnation).map(|yes| yes.then_some(a.block));
        matches!(found, Ok(None))
    })?;
    found
}

/// Whether `address` has code under `incarnation` after block `block`.
fn has_code_as(
    ctx: &RpcContext,
    address: &Address,
    block: u64,
    incarnation: u64,
) -> Result<bool, RpcError> {
    let Some(account) = ctx.chain.account(address, block)? else { return Ok(false) };
    Ok(account.incarnation == incarnation
        && !ctx.chain.state_at(block).code_of(address)?.is_empty())
}

/// Who created `address` in transaction `index` of `block`, if one of its frames did.
async fn creator_in(
    ctx: &RpcContext,
    address: &Address,
    block: u64,
    index: usize,
) -> Result<Option<Address>, RpcError> {
    let budget = TraceBudget { max_bytes: ctx.limits.max_response_bytes, timeout: None };
    let job = TraceJob::Otterscan { block, index, view: OtsView::Trace };
    let output = ctx.executor.trace(Trace { job, budget }).await?;
    let frames: Vec<Frame> = serde_json::from_slice(&output.0)?;
    Ok(frames
        .iter()
        .rev()
        .find(|f| f.to == *address && (f.kind == "CREATE" || f.kind == "CREATE2"))
        .map(|f| f.from))
}
