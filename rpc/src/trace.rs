//! Parity-style tracing (the `trace_` namespace), run on the executor pool like eth_call:
//! trace_transaction, trace_get, trace_block, trace_replayTransaction,
//! trace_replayBlockTransactions, trace_call, trace_callMany and trace_filter.
//!
//! Answers follow reth, today's reference for this namespace: an unknown transaction or block
//! is `null` for the lookups (trace_transaction, trace_get, trace_block,
//! trace_replayBlockTransactions) and -32000 "transaction not found" for
//! trace_replayTransaction; trace types are `trace`, `stateDiff` and `vmTrace`. trace_filter
//! spans at most [`MAX_BLOCK_RANGE`](crate::eth::logs::MAX_BLOCK_RANGE) blocks, as eth_getLogs (-32005 above), and pages with
//! `after` and `count`. Traces run under the EVM time cap (-32002) and the response cap
//! (-32005).

use std::sync::Arc;

use alloy_primitives::{Address, B256};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use alloy_rpc_types_trace::filter::{TraceFilter, TraceFilterMode};
use alloy_rpc_types_trace::parity::TraceType;
use hearth_messages::executor::{BlockOverrides, CallRequest, StateOverrides};
use hearth_messages::trace::{TraceBudget, TraceJob, TraceTypes};
use serde_json::Value;

use crate::core::Reply;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{FromParam, Params, TxObject};
use crate::core::{head, state_block, tag_number};
use crate::debug::trace::run;
use crate::eth::logs::range_within;

/// The most calls one trace_callMany runs.
pub(crate) const MAX_CALLS: usize = 1_000;

/// The budget of a parity trace: the response cap, and the EVM time cap of the executor.
fn budget(ctx: &RpcContext) -> TraceBudget {
    TraceBudget { max_bytes: ctx.limits.max_response_bytes, timeout: None }
}

/// `null`, for a lookup of something the chain does not have.
fn null() -> Reply {
    Reply::Value(Value::Null)
}

/// A list of trace types: `["trace", "stateDiff", "vmTrace"]`, any subset.
#[derive(Debug, Clone, Default)]
struct Types(TraceTypes);

impl FromParam for Types {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items = value
            .as_array()
            .ok_or_else(|| format!("expected an array of trace types, got {value}"))?;
        items
            .iter()
            .map(|item| match item.as_str() {
                Some("trace") => Ok(TraceType::Trace),
                Some("stateDiff") => Ok(TraceType::StateDiff),
                Some("vmTrace") => Ok(TraceType::VmTrace),
                _ => Err(format!(
                    "unknown trace type {item}; use \"trace\", \"stateDiff\" or \"vmTrace\""
                )),
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// trace_transaction: `[hash]`, every trace of the transaction, or `null`.
pub(crate) async fn trace_transaction(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(1)?;
    let hash: B256 = p.required(0)?;
    let Some((block, index)) = location(ctx, &hash)? else { return Ok(null()) };
    run(ctx, TraceJob::ParityTransaction { block, index, address: None }, budget(ctx)).await
}

/// trace_get: `[hash, [index]]`, the transaction's trace at that position, or `null`.
pub(crate) async fn trace_get(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let hash: B256 = p.required(0)?;
    let Indices(indices) = p.required(1)?;
    let Some((block, index)) = location(ctx, &hash)? else { return Ok(null()) };
    let job = TraceJob::ParityTransaction { block, index, address: Some(indices) };
    run(ctx, job, budget(ctx)).await
}

/// trace_get's indices: quantities (a trace's position in the transaction's list).
#[derive(Debug)]
struct Indices(Vec<usize>);

impl FromParam for Indices {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items =
            value.as_array().ok_or_else(|| format!("expected an array of indices, got {value}"))?;
        items
            .iter()
            .map(|item| {
                let index = u64::from_param(item)?;
                usize::try_from(index).map_err(|_| format!("index {index} is too large"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

fn location(ctx: &RpcContext, hash: &B256) -> Result<Option<(u64, usize)>, RpcError> {
    let location = ctx.chain.tx_location(hash)?;
    Ok(location.map(|(block, index)| (block, index as usize)))
}

/// A stored block by number or tag, `None` when the chain does not have it.
fn stored_block(ctx: &RpcContext, tag: BlockNumberOrTag) -> Result<Option<u64>, RpcError> {
    let number = tag_number(ctx, tag, head(ctx)?)?;
    let stored = ctx.chain.header(number)?.map(|_| number);
    Ok(stored)
}

/// trace_block: `[block]`, the traces of every transaction of the block (and, before the
/// Merge, its rewards), or `null`.
pub(crate) async fn trace_block(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(1)?;
    let tag: BlockNumberOrTag = p.required(0)?;
    match stored_block(ctx, tag)? {
        None => Ok(null()),
        // Genesis ran nothing.
        Some(0) => Ok(Reply::Encoded(b"[]".to_vec())),
        Some(block) => run(ctx, TraceJob::ParityBlock { block }, budget(ctx)).await,
    }
}

/// trace_replayTransaction: `[hash, types]`.
pub(crate) async fn replay_transaction(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let hash: B256 = p.required(0)?;
    let Types(types) = p.required(1)?;
    let (block, index) = location(ctx, &hash)?.ok_or(RpcError::TxNotFound)?;
    run(ctx, TraceJob::ParityReplayTransaction { block, index, types }, budget(ctx)).await
}

/// trace_replayBlockTransactions: `[block, types]`, or `null`.
pub(crate) async fn replay_block(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let tag: BlockNumberOrTag = p.required(0)?;
    let Types(types) = p.required(1)?;
    match stored_block(ctx, tag)? {
        None => Ok(null()),
        Some(0) => Ok(Reply::Encoded(b"[]".to_vec())),
        Some(block) => run(ctx, TraceJob::ParityReplayBlock { block, types }, budget(ctx)).await,
    }
}

/// trace_call: `[callObject, types, block?, stateOverrides?, blockOverrides?]`.
pub(crate) async fn trace_call(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(5)?;
    let tx: TxObject = p.required(0)?;
    let Types(types) = p.required(1)?;
    let block: BlockId = p.optional(2)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let state_overrides: Option<StateOverrides> = p.optional(3)?;
    let block_overrides: Option<BlockOverrides> = p.optional(4)?;
    let block = state_block(ctx, block)?;
    let mut request = tx.into_call_request(ctx.limits.gas_cap);
    request.state_overrides = state_overrides.filter(|o| !o.is_empty()).map(Arc::new);
    request.block_overrides = block_overrides;
    let job = TraceJob::ParityCalls { calls: vec![(request, types)], block, many: false };
    run(ctx, job, budget(ctx)).await
}

/// trace_callMany's first argument: `[[callObject, types], ...]`.
#[derive(Debug)]
struct Calls(Vec<(CallRequest, TraceTypes)>);

impl FromParam for Calls {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items = value
            .as_array()
            .ok_or_else(|| format!("expected an array of [call, types] pairs, got {value}"))?;
        if items.len() > MAX_CALLS {
            return Err(format!("{} calls; at most {MAX_CALLS} per request", items.len()));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item.as_array().map(Vec::as_slice) {
                Some([call, types]) => {
                    let call = TxObject::from_param(call).map_err(|e| format!("call {i}: {e}"))?;
                    let Types(types) =
                        Types::from_param(types).map_err(|e| format!("call {i}: {e}"))?;
                    // Gas is capped where the executor runs it (the pair has no gas cap here).
                    Ok((call.into_call_request(u64::MAX), types))
                }
                _ => Err(format!("call {i}: expected a [call, types] pair")),
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// trace_callMany: `[[[callObject, types], ...], block?]`; each call sees what the ones before
/// it changed.
pub(crate) async fn trace_call_many(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let Calls(mut calls) = p.required(0)?;
    let block: BlockId = p.optional(1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let block = state_block(ctx, block)?;
    for (request, _) in &mut calls {
        request.gas = request.gas.map(|gas| gas.min(ctx.limits.gas_cap));
    }
    run(ctx, TraceJob::ParityCalls { calls, block, many: true }, budget(ctx)).await
}

/// trace_filter's argument, its block range still as tags.
#[derive(Debug)]
struct FilterArg {
    from: Option<BlockNumberOrTag>,
    to: Option<BlockNumberOrTag>,
    filter: TraceFilter,
}

impl FromParam for FilterArg {
    fn from_param(value: &Value) -> Result<Self, String> {
        let object =
            value.as_object().ok_or_else(|| format!("expected a filter object, got {value}"))?;
        let tag = |name: &str| match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                BlockNumberOrTag::from_param(v).map(Some).map_err(|e| format!("{name}: {e}"))
            }
        };
        let addresses = |name: &str| match object.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(Address::from_param)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{name}: {e}")),
            Some(other) => Err(format!("{name}: expected an array of addresses, got {other}")),
        };
        // `after` and `count` are numbers in OpenEthereum's API; quantities are taken too.
        let number = |name: &str| match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                n.as_u64().map(Some).ok_or_else(|| format!("{name}: expected a count, got {n}"))
            }
            Some(v) => u64::from_param(v).map(Some).map_err(|e| format!("{name}: {e}")),
        };
        let mode = match object.get("mode").and_then(Value::as_str) {
            None => TraceFilterMode::default(),
            Some("union") => TraceFilterMode::Union,
            Some("intersection") => TraceFilterMode::Intersection,
            Some(other) => {
                return Err(format!("mode: {other:?}; use \"union\" or \"intersection\""));
            }
        };
        Ok(Self {
            from: tag("fromBlock")?,
            to: tag("toBlock")?,
            filter: TraceFilter {
                from_block: None,
                to_block: None,
                from_address: addresses("fromAddress")?,
                to_address: addresses("toAddress")?,
                mode,
                after: number("after")?,
                count: number("count")?,
            },
        })
    }
}

/// trace_filter: `[filter]`, the matching traces of a block range (fromBlock 0 and toBlock
/// latest by default, cut at the head).
pub(crate) async fn trace_filter(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(1)?;
    let FilterArg { from, to, mut filter } = p.required(0)?;
    let head = head(ctx)?;
    let from = from.map_or(Ok(0), |tag| tag_number(ctx, tag, head))?;
    let to = to.map_or(Ok(head), |tag| tag_number(ctx, tag, head))?;
    // The same checks and cut as eth_getLogs.
    let Some((from, to)) = range_within(from, to, head)? else {
        return Ok(Reply::Encoded(b"[]".to_vec()));
    };
    if filter.count == Some(0) {
        return Ok(Reply::Encoded(b"[]".to_vec()));
    }
    filter.from_block = Some(from);
    filter.to_block = Some(to);
    run(ctx, TraceJob::ParityFilter { from, to, filter: Box::new(filter) }, budget(ctx)).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn trace_types_and_filters_are_checked() {
        let Types(types) = Types::from_param(&json!(["trace", "vmTrace"])).expect("valid");
        assert!(types.contains(&TraceType::Trace) && types.contains(&TraceType::VmTrace));
        assert!(Types::from_param(&json!(["traces"])).is_err());
        assert!(Types::from_param(&json!("trace")).is_err());

        let arg = FilterArg::from_param(&json!({
            "fromBlock": "0x1", "toBlock": "latest",
            "toAddress": ["0x00000000000000000000000000000000000000aa"],
            "after": 2, "count": "0x3", "mode": "union"
        }))
        .expect("valid");
        assert_eq!(arg.from, Some(BlockNumberOrTag::Number(1)));
        assert_eq!(arg.to, Some(BlockNumberOrTag::Latest));
        assert_eq!((arg.filter.after, arg.filter.count), (Some(2), Some(3)));
        assert_eq!(arg.filter.mode, TraceFilterMode::Union);
        assert!(FilterArg::from_param(&json!({"fromBlock": "1"})).is_err());
        assert!(FilterArg::from_param(&json!({"mode": "all"})).is_err());
        assert!(FilterArg::from_param(&json!({"count": -1})).is_err());
        assert!(FilterArg::from_param(&json!({"toAddress": "0x00"})).is_err());

        let too_many = Value::Array(vec![json!([{}, ["trace"]]); MAX_CALLS + 1]);
        assert!(Calls::from_param(&too_many).expect_err("refused").contains("at most"));
        assert!(Calls::from_param(&json!([[{}, ["trace"]]])).is_ok());
        assert!(Calls::from_param(&json!([[{}]])).is_err());
    }
}
