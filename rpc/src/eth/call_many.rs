//! eth_callMany (anvil's and reth's): `[bundles, stateContext?, stateOverrides?]`, bundles of
//! calls run one after the other on one block's state (see the executor's `call_many`).
//!
//! A bundle is `{transactions: [txObject...], blockOverride?}`; the state context
//! `{blockNumber?, transactionIndex?}` names the block (`latest` when absent; `pending` runs in
//! the next block's fields). Running after part of a block's transactions (`transactionIndex`
//! other than -1) is refused as anvil refuses it. The answer is one list per bundle of
//! `{"value": output}` or `{"error": message}` per call (a revert or a halt is a call's
//! answer; a call that is no valid transaction fails the whole request, as in anvil).

use std::sync::Arc;

use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use hearth_messages::executor::{
    BlockOverrides, CallBundle, CallMany, CallOutcome, MAX_CALL_BUNDLES, MAX_CALL_MANY_CALLS,
    StateOverrides,
};
use serde_json::{Map, Value, json};

use crate::core::{FromParam, Params, RpcContext, RpcError, TxObject, revert_message};
use crate::core::{head, state_block, to_json};
use crate::eth::call::NextBlock;

/// The state context: the block, and the index of the transaction to run after (-1: all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StateContext {
    block: Option<BlockId>,
}

impl FromParam for StateContext {
    fn from_param(value: &Value) -> Result<Self, String> {
        let Some(fields) = value.as_object() else {
            return Err("state context: expected an object".to_owned());
        };
        let block = match fields.get("blockNumber") {
            None | Some(Value::Null) => None,
            Some(block) => {
                Some(BlockId::from_param(block).map_err(|e| format!("blockNumber: {e}"))?)
            }
        };
        match fields.get("transactionIndex") {
            None | Some(Value::Null) => {}
            Some(index) if index.as_i64() == Some(-1) => {}
            Some(_) => {
                return Err("transactionIndex is not supported for eth_callMany yet".to_owned());
            }
        }
        Ok(Self { block })
    }
}

/// A bundle as sent: its calls and block overrides, checked.
fn bundle(value: &Value, gas_cap: u64) -> Result<CallBundle, String> {
    let Some(fields) = value.as_object() else {
        return Err("expected a bundle object".to_owned());
    };
    let calls = match fields.get("transactions") {
        Some(Value::Array(calls)) => calls,
        None | Some(Value::Null) => return Err("missing field `transactions`".to_owned()),
        Some(_) => return Err("transactions: expected an array".to_owned()),
    };
    let calls = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            TxObject::from_param(call)
                .map(|tx| tx.into_call_request(gas_cap))
                .map_err(|e| format!("transaction {i}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let block_overrides = match fields.get("blockOverride") {
        None | Some(Value::Null) => None,
        Some(o) => Some(BlockOverrides::from_param(o).map_err(|e| format!("blockOverride: {e}"))?),
    };
    Ok(CallBundle { block_overrides, calls })
}

/// The bundles argument, bounded before any of it is converted.
fn bundles(value: &Value, gas_cap: u64) -> Result<Vec<CallBundle>, RpcError> {
    let bad = |e: String| RpcError::InvalidParams(format!("invalid argument 0: {e}"));
    let items = value.as_array().ok_or_else(|| bad("expected an array of bundles".to_owned()))?;
    if items.is_empty() {
        return Err(RpcError::InvalidParams("bundles are empty.".to_owned()));
    }
    if items.len() > MAX_CALL_BUNDLES {
        return Err(bad(format!("{} bundles, at most {MAX_CALL_BUNDLES}", items.len())));
    }
    let calls: usize = items
        .iter()
        .map(|b| b.get("transactions").and_then(Value::as_array).map_or(0, Vec::len))
        .sum();
    if calls > MAX_CALL_MANY_CALLS {
        return Err(bad(format!("{calls} calls, at most {MAX_CALL_MANY_CALLS}")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| bundle(item, gas_cap).map_err(|e| bad(format!("bundle {i}: {e}"))))
        .collect()
}

/// A call's answer: its output, or what went wrong in the words eth_call's error has.
fn answer(outcome: CallOutcome) -> Value {
    let mut fields = Map::new();
    match outcome {
        CallOutcome::Success { output, .. } => fields.insert("value".to_owned(), json!(output)),
        CallOutcome::Revert { output, .. } => {
            fields.insert("error".to_owned(), json!(revert_message(&output)))
        }
        CallOutcome::Halt { reason, .. } => {
            fields.insert("error".to_owned(), json!(reason.to_string()))
        }
    };
    Value::Object(fields)
}

/// eth_callMany: see the module docs.
pub(crate) async fn call_many(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let raw: Value = params.required(0)?;
    let bundles = bundles(&raw, ctx.limits.gas_cap)?;
    let context: Option<StateContext> = params.optional(1)?;
    let state_overrides: Option<StateOverrides> = params.optional(2)?;
    let block = context.and_then(|c| c.block).unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let (block, env) = if block == BlockId::Number(BlockNumberOrTag::Pending) {
        let head = head(ctx)?;
        (head, Some(NextBlock::of(ctx).await?.overrides(head, None)))
    } else {
        (state_block(ctx, block)?, None)
    };
    let request = CallMany {
        block,
        env,
        state_overrides: state_overrides.filter(|o| !o.is_empty()).map(Arc::new),
        bundles,
        gas_budget: ctx.limits.gas_cap,
        max_output_bytes: ctx.limits.max_response_bytes,
    };
    let outcomes = ctx.executor.call_many(request).await?;
    let answers: Vec<Vec<Value>> =
        outcomes.into_iter().map(|bundle| bundle.into_iter().map(answer).collect()).collect();
    to_json(&answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_contexts_take_minus_one_and_refuse_other_indexes() {
        let at = |v: Value| StateContext::from_param(&v);
        assert_eq!(at(json!({})), Ok(StateContext { block: None }));
        let latest = Some(BlockId::Number(BlockNumberOrTag::Latest));
        assert_eq!(
            at(json!({"blockNumber": "latest", "transactionIndex": -1})).map(|c| c.block),
            Ok(latest)
        );
        assert!(at(json!({"transactionIndex": 0})).is_err_and(|e| e.contains("not supported")));
        assert!(at(json!({"blockNumber": "soon"})).is_err());
        assert!(at(json!("latest")).is_err());
    }

    #[test]
    fn bundles_are_checked_and_bounded() {
        let gas_cap = 50_000_000;
        let one = json!([{"transactions": [{"to": "0x0000000000000000000000000000000000000001"}]}]);
        let parsed = bundles(&one, gas_cap).expect("one bundle");
        assert_eq!((parsed.len(), parsed[0].calls.len()), (1, 1));
        assert_eq!(parsed[0].calls[0].gas, Some(gas_cap), "gas defaults to the cap");
        let empty = bundles(&json!([]), gas_cap).unwrap_err();
        assert_eq!(empty.to_string(), "bundles are empty.");
        assert!(bundles(&json!([{}]), gas_cap).is_err(), "transactions are required");
        let bad_call = json!([{"transactions": [{"to": "0x01"}]}]);
        assert!(bundles(&bad_call, gas_cap).is_err_and(|e| e.to_string().contains("bundle 0")));
        let too_many = Value::Array(vec![json!({"transactions": []}); MAX_CALL_BUNDLES + 1]);
        assert!(bundles(&too_many, gas_cap).is_err());
        let calls = vec![json!({}); MAX_CALL_MANY_CALLS + 1];
        assert!(bundles(&json!([{"transactions": calls}]), gas_cap).is_err());
    }
}
