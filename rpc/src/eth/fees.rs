//! Fee suggestions and the fee market: eth_gasPrice, eth_maxPriorityFeePerGas, eth_feeHistory,
//! eth_baseFee (the next block's base fee) and eth_blobBaseFee (the head's blob base fee).
//!
//! A dev chain has no fee market to observe, so like anvil we suggest a fixed 1 gwei tip and
//! price gas at the latest base fee plus that tip. eth_feeHistory follows geth's algorithm.

use alloy_consensus::{Header, Transaction as _};
use alloy_rpc_types_eth::{BlockNumberOrTag, FeeHistory};
use hearth_messages::SealedBlock;
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{HexOrDecimal, Params, Percentiles};
use crate::core::{
    blob_gas_price, blob_params_at, head, quantity, read_block, tag_number, to_json,
};

/// The priority fee we suggest: 1 gwei.
pub const SUGGESTED_TIP: u128 = 1_000_000_000;

/// geth's bound on eth_feeHistory's blockCount; larger counts are cut to it.
const MAX_FEE_HISTORY_BLOCKS: u64 = 1024;

/// The base fee of the head block (zero before London or without one).
pub(crate) fn latest_base_fee(ctx: &RpcContext) -> Result<u64, RpcError> {
    let number = head(ctx)?;
    let header =
        ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })?;
    Ok(header.base_fee_per_gas.unwrap_or(0))
}

/// The gas price we suggest: `--gas-price` when set, else the latest base fee plus the
/// suggested tip.
pub(crate) fn suggested_gas_price(ctx: &RpcContext) -> Result<u128, RpcError> {
    match ctx.gas_price {
        Some(price) => Ok(price),
        None => Ok(u128::from(latest_base_fee(ctx)?) + SUGGESTED_TIP),
    }
}

/// eth_gasPrice: see [`suggested_gas_price`].
pub(crate) fn gas_price(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    to_json(&alloy_primitives::U256::from(suggested_gas_price(ctx)?))
}

/// eth_maxPriorityFeePerGas: the suggested tip.
pub(crate) fn max_priority_fee(params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(quantity(SUGGESTED_TIP as u64))
}

/// The head block's header.
fn head_header(ctx: &RpcContext) -> Result<Header, RpcError> {
    let number = head(ctx)?;
    ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })
}

/// eth_baseFee: `[]`; the base fee of the block after the head by the EIP-1559 rule, `null`
/// before London (geth's answer).
pub(crate) fn base_fee(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let header = head_header(ctx)?;
    if header.base_fee_per_gas.is_none() {
        return Ok(Value::Null);
    }
    Ok(quantity(next_base_fee(&header)))
}

/// eth_blobBaseFee: `[]`; the blob base fee at the head (from its excess blob gas, under the
/// head's fork's blob schedule), zero before Cancun, as geth answers.
pub(crate) fn blob_base_fee(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let header = head_header(ctx)?;
    to_json(&alloy_primitives::U256::from(block_blob_fee(&header, &ctx.forks)))
}

/// The blob base fee of the block `header` heads, zero before Cancun (no excess blob gas).
pub(crate) fn block_blob_fee(header: &Header, forks: &crate::core::ChainForks) -> u128 {
    if header.excess_blob_gas.is_some() { blob_gas_price(header, forks) } else { 0 }
}

/// The share of its blob gas limit block `header` used, by its fork's blob schedule; zero
/// before Cancun.
fn blob_gas_used_ratio(header: &Header, forks: &crate::core::ChainForks) -> f64 {
    let max = blob_params_at(header, forks).max_blob_gas_per_block();
    match header.blob_gas_used {
        Some(used) if max > 0 => used as f64 / max as f64,
        _ => 0.0,
    }
}

/// The blob base fee of the block after `header`: its excess blob gas follows from `header`'s
/// (EIP-4844, with EIP-7918's reserve price from Osaka) under `header`'s blob schedule, as
/// geth computes the next entry; zero before Cancun.
fn next_blob_fee(header: &Header, forks: &crate::core::ChainForks) -> u128 {
    if header.excess_blob_gas.is_none() {
        return 0;
    }
    let params = blob_params_at(header, forks);
    let excess = params.next_block_excess_blob_gas_osaka(
        header.excess_blob_gas.unwrap_or_default(),
        header.blob_gas_used.unwrap_or_default(),
        header.base_fee_per_gas.unwrap_or_default(),
    );
    params.calc_blob_fee(excess)
}

/// eth_feeHistory: `[blockCount, newestBlock, rewardPercentiles?]`.
///
/// `baseFeePerGas` has one entry per block plus the next block's base fee; `reward` (only when
/// percentiles are given) has, per block, the effective tip at each percentile of gas used.
pub(crate) fn fee_history(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let HexOrDecimal(requested) = params.required(0)?;
    let newest_tag: BlockNumberOrTag = params.required(1)?;
    let Percentiles(percentiles) = params.optional(2)?.unwrap_or_default();

    let head = head(ctx)?;
    let newest = tag_number(ctx, newest_tag, head)?;
    if newest > head {
        return Err(RpcError::BeyondHead { requested: newest, head });
    }
    // As geth: cut the count to the bound and to the blocks that exist.
    let count = requested.min(MAX_FEE_HISTORY_BLOCKS).min(newest + 1);
    if count == 0 {
        return to_json(&FeeHistory::default());
    }
    let oldest = newest + 1 - count;

    let mut history = FeeHistory { oldest_block: oldest, ..FeeHistory::default() };
    let mut rewards = Vec::new();
    let mut newest_header = None;
    for number in oldest..=newest {
        let missing = RpcError::MissingRecord { number, what: "header" };
        // Rewards need the transactions and receipts; otherwise the header is enough.
        let header = if percentiles.is_empty() {
            ctx.chain.header(number)?.ok_or(missing)?
        } else {
            let block = read_block(ctx, number)?.ok_or(missing)?;
            rewards.push(block_rewards(&block, &percentiles));
            block.header
        };
        history.base_fee_per_gas.push(u128::from(header.base_fee_per_gas.unwrap_or(0)));
        history.gas_used_ratio.push(gas_used_ratio(&header));
        history.base_fee_per_blob_gas.push(block_blob_fee(&header, &ctx.forks));
        history.blob_gas_used_ratio.push(blob_gas_used_ratio(&header, &ctx.forks));
        newest_header = Some(header);
    }
    if let Some(header) = newest_header {
        history.base_fee_per_gas.push(u128::from(next_base_fee(&header)));
        history.base_fee_per_blob_gas.push(next_blob_fee(&header, &ctx.forks));
    }
    if !percentiles.is_empty() {
        history.reward = Some(rewards);
    }
    to_json(&history)
}

fn gas_used_ratio(header: &Header) -> f64 {
    if header.gas_limit == 0 { 0.0 } else { header.gas_used as f64 / header.gas_limit as f64 }
}

/// The base fee of the block after `header` (0 after a pre-London block).
fn next_base_fee(header: &Header) -> u64 {
    hearth_messages::base_fee::next_base_fee(header).unwrap_or(0)
}

/// geth's reward percentiles for one block: sort its transactions by effective tip, then for
/// each percentile take the tip of the transaction at which the cumulative gas used reaches
/// that share of the block's gas used. An empty block rewards zero.
fn block_rewards(block: &SealedBlock, percentiles: &[f64]) -> Vec<u128> {
    let base_fee = block.header.base_fee_per_gas.unwrap_or(0);
    let mut previous_cumulative = 0;
    let mut txs: Vec<(u128, u64)> = block
        .body
        .transactions
        .iter()
        .zip(&block.receipts)
        .map(|(tx, receipt)| {
            let gas_used = receipt.cumulative_gas_used().saturating_sub(previous_cumulative);
            previous_cumulative = receipt.cumulative_gas_used();
            (tx.effective_tip_per_gas(base_fee).unwrap_or(0), gas_used)
        })
        .collect();
    if txs.is_empty() {
        return vec![0; percentiles.len()];
    }
    // Stable, so equal tips keep block order as in geth.
    txs.sort_by_key(|(tip, _)| *tip);

    let mut rewards = Vec::with_capacity(percentiles.len());
    let mut index = 0;
    let mut cumulative = txs[0].1;
    for percentile in percentiles {
        let threshold = (block.header.gas_used as f64 * percentile / 100.0) as u64;
        while cumulative < threshold && index + 1 < txs.len() {
            index += 1;
            cumulative += txs[index].1;
        }
        rewards.push(txs[index].0);
    }
    rewards
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{
        Receipt, ReceiptEnvelope, ReceiptWithBloom, Signed, TxEip1559, TxEnvelope,
    };
    use alloy_primitives::{Address, B256, Signature};
    use hearth_messages::StoredBody;

    use super::*;

    fn tx(tip: u128) -> TxEnvelope {
        let tx = TxEip1559 {
            max_fee_per_gas: 100 + tip,
            max_priority_fee_per_gas: tip,
            ..Default::default()
        };
        Signed::new_unchecked(tx, Signature::test_signature(), B256::ZERO).into()
    }

    fn receipt(cumulative: u64) -> ReceiptEnvelope {
        let receipt =
            Receipt { status: true.into(), cumulative_gas_used: cumulative, logs: vec![] };
        ReceiptEnvelope::Eip1559(ReceiptWithBloom::new(receipt, Default::default()))
    }

    /// A block with base fee 100 and transactions `(tip, gas_used)` in that order.
    fn block(txs: &[(u128, u64)]) -> SealedBlock {
        let mut cumulative = 0;
        let mut receipts = Vec::new();
        for (_, gas) in txs {
            cumulative += gas;
            receipts.push(receipt(cumulative));
        }
        SealedBlock {
            header: Header {
                base_fee_per_gas: Some(100),
                gas_used: cumulative,
                ..Default::default()
            },
            hash: B256::ZERO,
            body: StoredBody {
                transactions: txs.iter().map(|(tip, _)| tx(*tip)).collect(),
                senders: vec![Address::ZERO; txs.len()],
            },
            receipts,
            extras: Default::default(),
        }
    }

    #[test]
    fn rewards_follow_gas_weighted_percentiles() {
        // Sorted by tip: 1 (gas 10), 5 (gas 30), 9 (gas 60); total 100.
        let block = block(&[(9, 60), (1, 10), (5, 30)]);
        assert_eq!(
            block_rewards(&block, &[0.0, 10.0, 11.0, 40.0, 41.0, 100.0]),
            vec![1, 1, 5, 5, 9, 9]
        );
    }

    #[test]
    fn empty_block_rewards_zero() {
        assert_eq!(block_rewards(&block(&[]), &[10.0, 90.0]), vec![0, 0]);
    }

    #[test]
    fn blob_fees_follow_each_blocks_fork() {
        use alloy_eips::eip7840::BlobParams;

        use crate::core::{ChainForks, TimeFork};
        let fork = |time, blob_schedule| TimeFork {
            name: String::new(),
            time,
            blob_schedule,
            precompiles: Default::default(),
            system_contracts: Default::default(),
        };
        let forks = ChainForks {
            block_forks: vec![],
            time_forks: vec![
                fork(0, Some(BlobParams::cancun())),
                fork(100, Some(BlobParams::prague())),
            ],
        };
        let excess = 10_000_000;
        let at = |timestamp| Header {
            timestamp,
            excess_blob_gas: Some(excess),
            blob_gas_used: Some(3 * 131_072),
            ..Default::default()
        };
        // The same excess prices differently under Cancun's and Prague's update fractions.
        let (cancun, prague) = (block_blob_fee(&at(50), &forks), block_blob_fee(&at(150), &forks));
        assert_eq!(cancun, BlobParams::cancun().calc_blob_fee(excess));
        assert_eq!(prague, BlobParams::prague().calc_blob_fee(excess));
        assert!(cancun > prague, "{cancun} {prague}");
        // Half of Cancun's 6 blobs, a third of Prague's 9.
        assert_eq!(blob_gas_used_ratio(&at(50), &forks), 0.5);
        assert!((blob_gas_used_ratio(&at(150), &forks) - 1.0 / 3.0).abs() < 1e-12);
        // Before Cancun: no blob fee, nor for the next block.
        let old = Header::default();
        assert_eq!((block_blob_fee(&old, &forks), next_blob_fee(&old, &forks)), (0, 0));
        assert_eq!(blob_gas_used_ratio(&old, &forks), 0.0);
    }
}
