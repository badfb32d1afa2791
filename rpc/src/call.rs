//! eth_call and eth_estimateGas, run on the bounded executor pool.
//!
//! A call the pool's admission refuses (expected queueing delay over
//! `--executor.max-queue-delay`, or the queue full; see `hearth_messages::admission`) fails at
//! once with -32005 (HTTP 503 for a single request). A revert is error
//! code 3 with the revert bytes in `data`; a halt is -32000 with geth's message (e.g. "out of
//! gas"). Gas defaults to, and is capped at, `RpcLimits::gas_cap`.

use std::sync::Arc;

use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use hearth_messages::executor::{
    BlockOverrides, Call, CallOutcome, CallRequest, EstimateGas, EstimateOutcome, HaltReason,
    StateOverrides,
};
use serde_json::Value;

use crate::blocks::{quantity, state_block};
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::{Params, TxObject};
use crate::transport::{Hot, Reply};

/// Reads `[txObject, block?, stateOverrides?, blockOverrides?]`.
fn call_args(ctx: &RpcContext, params: &Params) -> Result<(CallRequest, u64), RpcError> {
    params.at_most(4)?;
    let tx: TxObject = params.required(0)?;
    let block: BlockId = params.optional(1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let state_overrides: Option<StateOverrides> = params.optional(2)?;
    let block_overrides: Option<BlockOverrides> = params.optional(3)?;
    let number = state_block(ctx, block)?;
    let mut request = tx.into_call_request(ctx.limits.gas_cap);
    request.state_overrides = state_overrides.filter(|o| !o.is_empty()).map(Arc::new);
    request.block_overrides = block_overrides;
    Ok((request, number))
}

/// eth_call: the call's output as hex, encoded straight into the response.
pub(crate) async fn call(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    let (request, block) = call_args(ctx, params)?;
    match ctx.executor.call(Call { request, block }).await? {
        CallOutcome::Success { output, .. } => Ok(Reply::Hot(Hot::Data(output))),
        CallOutcome::Revert { output, .. } => Err(RpcError::Reverted { output }),
        CallOutcome::Halt { reason, .. } => Err(RpcError::Halted { reason }),
    }
}

/// eth_estimateGas: the smallest gas limit with which the transaction succeeds.
pub(crate) async fn estimate_gas(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let (request, block) = call_args(ctx, params)?;
    Ok(quantity(estimate(ctx, request, block).await?))
}

/// Runs an estimate and maps a failing outcome to geth's errors. Shared with
/// eth_sendTransaction, which estimates when no gas is given.
pub(crate) async fn estimate(
    ctx: &RpcContext,
    request: CallRequest,
    block: u64,
) -> Result<u64, RpcError> {
    // The highest limit the executor may try: what the caller gave, capped (see TxObject).
    let allowance = request.gas.unwrap_or(ctx.limits.gas_cap);
    match ctx.executor.estimate_gas(EstimateGas { request, block }).await? {
        EstimateOutcome::Gas(gas) => Ok(gas),
        EstimateOutcome::Failed(outcome) => Err(estimate_failure(outcome, allowance)),
    }
}

/// The error for an estimate that fails even at `allowance` gas.
fn estimate_failure(outcome: CallOutcome, allowance: u64) -> RpcError {
    match outcome {
        CallOutcome::Revert { output, .. } => RpcError::Reverted { output },
        // Running out of gas at the highest limit means no limit we may use is enough.
        CallOutcome::Halt { reason: HaltReason::OutOfGas, .. } => {
            RpcError::GasExceedsAllowance { allowance }
        }
        CallOutcome::Halt { reason, .. } => RpcError::Halted { reason },
        CallOutcome::Success { .. } => RpcError::EstimateInconsistent,
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::Bytes;

    use super::*;

    #[test]
    fn estimate_failures_map_to_geth_errors() {
        let oog = CallOutcome::Halt { reason: HaltReason::OutOfGas, gas_used: 100 };
        let err = estimate_failure(oog, 100);
        assert_eq!(
            (err.code(), err.to_string()),
            (-32000, "gas required exceeds allowance (100)".into())
        );

        let invalid = CallOutcome::Halt { reason: HaltReason::InvalidOpcode, gas_used: 1 };
        assert_eq!(estimate_failure(invalid, 100).to_string(), "invalid opcode");
        let unmapped = HaltReason::Unmapped("PrecompileError".into());
        let err = estimate_failure(CallOutcome::Halt { reason: unmapped, gas_used: 1 }, 100);
        assert_eq!((err.code(), err.to_string()), (-32000, "PrecompileError".into()));

        let revert = CallOutcome::Revert { output: Bytes::from_static(&[1, 2]), gas_used: 1 };
        let err = estimate_failure(revert, 100);
        assert_eq!((err.code(), err.data()), (3, Some(Value::String("0x0102".into()))));

        let success = CallOutcome::Success { output: Bytes::new(), gas_used: 1 };
        assert_eq!(estimate_failure(success, 100).code(), -32603);
    }
}
