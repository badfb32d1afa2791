//! engine_getPayloadBodiesByHashV1 and engine_getPayloadBodiesByRangeV1: the transactions and
//! withdrawals of canonical blocks, which a consensus client uses to fill in blocks it stored
//! without bodies. Read from the store on the RPC worker, like any block read.

use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{B256, Bytes};
use serde_json::{Value, json};

use super::port::engine;
use crate::core::{Params, RpcContext, RpcError, head};

/// Most bodies one call answers (geth's and reth's limit).
const MAX_BODIES: u64 = 1024;

fn too_large(asked: u64) -> RpcError {
    RpcError::EngineTooLarge(format!("{asked} payload bodies, at most {MAX_BODIES}"))
}

/// The body of canonical block `number`, or `null` when there is none.
fn body(ctx: &RpcContext, number: u64) -> Result<Value, RpcError> {
    let Some(block) = crate::core::read_block(ctx, number)? else { return Ok(Value::Null) };
    let transactions: Vec<Bytes> =
        block.body.transactions.iter().map(|tx| Bytes::from(tx.encoded_2718())).collect();
    // A block from before Shanghai has no withdrawals list: `null`, as the spec says.
    let withdrawals = block.header.withdrawals_root.map(|_| &block.extras.withdrawals);
    Ok(json!({"transactions": transactions, "withdrawals": withdrawals}))
}

/// engine_getPayloadBodiesByHashV1: `[blockHashes]`; one body (or `null`) per hash.
pub(crate) fn by_hash(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    engine(ctx)?;
    params.at_most(1)?;
    let hashes: Vec<B256> = params.required(0)?;
    if hashes.len() as u64 > MAX_BODIES {
        return Err(too_large(hashes.len() as u64));
    }
    let mut bodies = Vec::with_capacity(hashes.len());
    for hash in &hashes {
        let number = ctx.chain.block_number(hash)?;
        let canonical = match number {
            Some(n) => ctx.chain.block_hash(n)? == Some(*hash),
            None => false,
        };
        bodies.push(match number {
            Some(n) if canonical => body(ctx, n)?,
            _ => Value::Null,
        });
    }
    Ok(Value::Array(bodies))
}

/// engine_getPayloadBodiesByRangeV1: `[start, count]`; the bodies from `start` on, ending at
/// the head.
pub(crate) fn by_range(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    engine(ctx)?;
    params.at_most(2)?;
    let start: u64 = params.required(0)?;
    let count: u64 = params.required(1)?;
    if start == 0 || count == 0 {
        return Err(RpcError::InvalidParams(
            "invalid params: start and count are at least 1".into(),
        ));
    }
    if count > MAX_BODIES {
        return Err(too_large(count));
    }
    let head = head(ctx)?;
    let last = start.saturating_add(count - 1).min(head);
    let bodies = (start..=last).map(|n| body(ctx, n)).collect::<Result<Vec<_>, _>>()?;
    Ok(Value::Array(bodies))
}
