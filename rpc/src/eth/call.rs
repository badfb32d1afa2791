//! eth_call and eth_estimateGas, run on the bounded executor pool.
//!
//! A call the pool's admission refuses (expected queueing delay over
//! `--executor.max-queue-delay`, or the queue full; see `hearth_messages::admission`) fails at
//! once with -32005 (HTTP 503 for a single request). A revert is error
//! code 3 with the revert bytes in `data`; a halt is -32000 with geth's message (e.g. "out of
//! gas"). Gas defaults to, and is capped at, `RpcLimits::gas_cap`.

use std::future::Future;
use std::sync::Arc;

use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use hearth_messages::ExecError;
use hearth_messages::executor::{
    BlockOverrides, Call, CallOutcome, CallRequest, EstimateGas, EstimateOutcome, HaltReason,
    StateOverrides,
};
use hearth_messages::miner::{GetMiningStatus, MiningStatus};
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{Hot, Reply};
use crate::core::{Params, TxObject};
use crate::core::{head, names_head, quantity, state_block};

/// How many times a call at the head runs again after its block was gone ("header not found"
/// from the executor: the head went back under it).
const HEAD_RETRIES: usize = 3;

/// The block a call runs at: its number, and whether the request named the head by a tag
/// (`latest`, `pending`, `safe`, `finalized`), so that it follows the head if that moves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At {
    number: u64,
    follows_head: bool,
}

impl At {
    /// The head, as the node fills a transaction at it.
    pub(crate) fn head(ctx: &RpcContext) -> Result<Self, RpcError> {
        Ok(Self { number: head(ctx)?, follows_head: true })
    }

    /// The block's number.
    pub(crate) const fn number(self) -> u64 {
        self.number
    }
}

/// Runs `run` with the request and block `make` gives. A block the head went back past while
/// the call was on its way (evm_revert, anvil_rollback) is gone and the executor answers
/// "unknown block"; a call made at the head by a tag is then made again (`make` resolves the
/// tag at the new head; at most [`HEAD_RETRIES`] times), as anvil answers it at whatever its
/// head is. A call at a number or hash keeps its error. The request is made again rather than
/// kept for a retry: copying it on every call would cost the hot path for a rare case.
///
/// The head's number alone does not say whether it moved: with other clients sending, the
/// head can go back and be mined up to the same number again before the call is remade (a
/// CI run of `scripts/patch-race.py` met exactly that). So every "unknown block" at the head
/// is retried, within the bound; a head block that stays missing costs those few runs.
async fn at_head<R, T, F: Future<Output = Result<T, RpcError>>>(
    make: impl Fn() -> Result<(R, At), RpcError>,
    run: impl Fn(R, u64) -> F,
) -> Result<T, RpcError> {
    let (mut request, at) = make()?;
    let mut number = at.number;
    let mut retries = 0;
    loop {
        match run(request, number).await {
            Err(RpcError::Exec(ExecError::UnknownBlock))
                if at.follows_head && retries < HEAD_RETRIES =>
            {
                let (again, now) = make()?;
                (request, number) = (again, now.number);
                retries += 1;
            }
            other => return other,
        }
    }
}

/// The block argument of a call (`params[index]`): the one given, or `None` when absent.
fn block_param(params: &Params, index: usize) -> Result<Option<BlockId>, RpcError> {
    params.optional(index)
}

/// Whether a request at `block` runs in the next block's environment: at `pending`, and with
/// no block when `absent_is_pending`. Checked against anvil 1.7.1 itself: eth_call with no
/// block runs at the head, eth_estimateGas with no block at `pending` (hardhat-ethers
/// estimates every transaction at `pending`, and a contract that checks `block.timestamp` must
/// see the block the transaction will be mined in, not the head's).
fn runs_pending(block: Option<BlockId>, absent_is_pending: bool) -> bool {
    match block {
        None => absent_is_pending,
        Some(block) => block == BlockId::Number(BlockNumberOrTag::Pending),
    }
}

/// The next block's environment as the miner stands now (its number, timestamp after
/// `evm_setNextBlockTimestamp` / `evm_increaseTime`, gas limit and coinbase); the state is the
/// head's. The number is the head's at the time `make` runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NextBlock(MiningStatus);

impl NextBlock {
    /// Asks the miner.
    pub(crate) async fn of(ctx: &RpcContext) -> Result<Self, RpcError> {
        Ok(Self(ctx.miner.mining_status(GetMiningStatus).await?))
    }

    /// `given` (the request's own block overrides win) over the next block's environment
    /// after the head `head`.
    pub(crate) fn overrides(self, head: u64, given: Option<BlockOverrides>) -> BlockOverrides {
        let given = given.unwrap_or_default();
        BlockOverrides {
            number: given.number.or(Some(head.saturating_add(1))),
            timestamp: given.timestamp.or(Some(self.0.next_timestamp)),
            gas_limit: given.gas_limit.or(Some(self.0.gas_limit)),
            coinbase: given.coinbase.or(Some(self.0.coinbase)),
            ..given
        }
    }
}

/// Reads `[txObject, block?, stateOverrides?, blockOverrides?]`; `next` is the next block's
/// environment when the call runs at `pending` ([`runs_pending`]).
fn call_args(
    ctx: &RpcContext,
    params: &Params,
    next: Option<NextBlock>,
) -> Result<(CallRequest, At), RpcError> {
    params.at_most(4)?;
    let tx: TxObject = params.required(0)?;
    let block = block_param(params, 1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let state_overrides: Option<StateOverrides> = params.optional(2)?;
    let block_overrides: Option<BlockOverrides> = params.optional(3)?;
    let at = At { number: state_block(ctx, block)?, follows_head: names_head(&block) };
    let mut request = tx.into_call_request(ctx.limits.gas_cap);
    request.state_overrides = state_overrides.filter(|o| !o.is_empty()).map(Arc::new);
    request.block_overrides = match next {
        Some(next) => Some(next.overrides(at.number, block_overrides)),
        None => block_overrides,
    };
    Ok((request, at))
}

/// The next block's environment, when the call's block argument asks for it. Bad params are
/// answered first (-32602, from `call_args`), without asking the miner.
async fn next_block_for(
    ctx: &RpcContext,
    params: &Params,
    absent_is_pending: bool,
) -> Result<Option<NextBlock>, RpcError> {
    if !runs_pending(block_param(params, 1)?, absent_is_pending) {
        return Ok(None);
    }
    call_args(ctx, params, None)?;
    Ok(Some(NextBlock::of(ctx).await?))
}

/// eth_call: the call's output as hex, encoded straight into the response.
pub(crate) async fn call(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    let run = |request, block| async move { Ok(ctx.executor.call(Call { request, block }).await?) };
    let next = next_block_for(ctx, params, false).await?;
    match at_head(|| call_args(ctx, params, next), run).await? {
        CallOutcome::Success { output, .. } => Ok(Reply::Hot(Hot::Data(output))),
        CallOutcome::Revert { output, .. } => Err(RpcError::Reverted { output }),
        CallOutcome::Halt { reason, .. } => Err(RpcError::Halted { reason }),
    }
}

/// eth_estimateGas: the smallest gas limit with which the transaction succeeds.
pub(crate) async fn estimate_gas(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let next = next_block_for(ctx, params, true).await?;
    Ok(quantity(estimate(ctx, || call_args(ctx, params, next)).await?))
}

/// Runs an estimate and maps a failing outcome to geth's errors; `make` gives the request and
/// its block ([`at_head`]). Shared with eth_sendTransaction, which estimates when no gas is
/// given.
pub(crate) async fn estimate(
    ctx: &RpcContext,
    make: impl Fn() -> Result<(CallRequest, At), RpcError>,
) -> Result<u64, RpcError> {
    let run = |request: CallRequest, block| async move {
        // The highest limit the executor may try: what the caller gave, capped (see TxObject).
        let allowance = request.gas.unwrap_or(ctx.limits.gas_cap);
        match ctx.executor.estimate_gas(EstimateGas { request, block }).await? {
            EstimateOutcome::Gas(gas) => Ok(gas),
            EstimateOutcome::Failed(outcome) => Err(estimate_failure(outcome, allowance)),
        }
    };
    at_head(make, run).await
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
    use std::cell::Cell;

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

    /// The tags that name the head follow it; a number, `earliest` or a hash does not.
    #[test]
    fn only_tags_of_the_head_follow_it() {
        use alloy_rpc_types_eth::RpcBlockHash;
        for tag in [
            BlockNumberOrTag::Latest,
            BlockNumberOrTag::Pending,
            BlockNumberOrTag::Safe,
            BlockNumberOrTag::Finalized,
        ] {
            assert!(names_head(&BlockId::Number(tag)), "{tag:?}");
        }
        for fixed in [
            BlockId::Number(BlockNumberOrTag::Earliest),
            BlockId::Number(BlockNumberOrTag::Number(7)),
            BlockId::Hash(RpcBlockHash::from_hash(alloy_primitives::B256::ZERO, None)),
        ] {
            assert!(!names_head(&fixed), "{fixed:?}");
        }
    }

    /// A call at the head whose block went away (the head went back under it) is made again
    /// at the new head, also when the head is back at the same number (another block); one at
    /// a number keeps "unknown block"; the retries are bounded.
    #[actix::test]
    async fn a_call_at_the_head_follows_it_back() {
        let gone_above = |last: u64| {
            move |(), block: u64| async move {
                if block > last { Err(RpcError::Exec(ExecError::UnknownBlock)) } else { Ok(block) }
            }
        };
        // The head was 9 when the call was made, 5 when it is made again.
        let heads = |follows_head| {
            let made = Cell::new(0);
            move || {
                made.set(made.get() + 1);
                let number = if made.get() == 1 { 9 } else { 5 };
                Ok(((), At { number, follows_head }))
            }
        };
        assert_eq!(at_head(heads(true), gone_above(5)).await.unwrap(), 5);
        let kept = at_head(heads(false), gone_above(5)).await;
        assert!(matches!(kept, Err(RpcError::Exec(ExecError::UnknownBlock))), "{kept:?}");
        // The head went back under 9 and was mined up to 9 again before the call was remade:
        // the first run's block 9 is gone, the new block 9 is there.
        let runs = Cell::new(0);
        let same_number = at_head(
            || Ok(((), At { number: 9, follows_head: true })),
            |(), block: u64| {
                runs.set(runs.get() + 1);
                let first = runs.get() == 1;
                async move {
                    if first { Err(RpcError::Exec(ExecError::UnknownBlock)) } else { Ok(block) }
                }
            },
        );
        assert_eq!(same_number.await.unwrap(), 9);
        assert_eq!(runs.get(), 2);
        // A head that keeps going back: one first run and HEAD_RETRIES more, then the error.
        let (runs, falling) = (Cell::new(0), Cell::new(10));
        let fell = at_head(
            || {
                falling.set(falling.get() - 1);
                Ok(((), At { number: falling.get(), follows_head: true }))
            },
            |(), _| {
                runs.set(runs.get() + 1);
                async { Err::<u64, _>(RpcError::Exec(ExecError::UnknownBlock)) }
            },
        )
        .await;
        assert!(matches!(fell, Err(RpcError::Exec(ExecError::UnknownBlock))), "{fell:?}");
        assert_eq!(runs.get(), HEAD_RETRIES + 1);
    }
}
