//! Taking the chain back: anvil_rollback (`[depth?]`) and anvil_reorg (`[depth, txBlockPairs]`
//! or `{ "depth": .., "tx_block_pairs": .. }`, as anvil reads it).
//!
//! Both go to the miner as one `Rewind`, so no block is being built on a head that goes away:
//! the state owner drops the newest `depth` blocks from the chain and the store (durably; a
//! restart serves the shorter chain), the miner's clock and gas limit go back to the new
//! head's (anvil's reset), and for a reorg the miner then mines `depth` new blocks, block `i`
//! holding exactly the transactions paired with `i` (the pool's wait). Transactions of dropped
//! blocks are not put back in the pool, as in anvil. JSON transactions are filled and signed
//! before anything changes, with nonces counted from the state of the block the chain goes
//! back to; raw ones must be signed already.

use std::collections::HashMap;
use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_primitives::{Address, Bytes};
use hearth_messages::executor::PooledTx;
use hearth_messages::mempool::{Revalidate, SetPoolGasLimit, decode_tx, without_sidecar};
use hearth_messages::miner::Rewind;
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::head;
use crate::core::{FromParam, HexOrDecimal, Params, TxObject};
use crate::eth::tx::{fill, sealer_for};

/// One transaction of a reorg's new blocks, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ReorgTx {
    /// Signed and encoded (EIP-2718).
    Raw(Bytes),
    /// To be filled and signed like eth_sendTransaction's (from the first dev account when
    /// `from` is absent).
    Object(Box<TxObject>),
}

/// `[tx, block]`: a transaction and the new block (0 = the first) it goes into.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReorgPair {
    tx: ReorgTx,
    block: u64,
}

impl FromParam for ReorgPair {
    fn from_param(value: &Value) -> Result<Self, String> {
        let Some([tx, block]) =
            value.as_array().and_then(|v| <&[Value; 2]>::try_from(v.as_slice()).ok())
        else {
            return Err("expected a [transaction, blockIndex] pair".to_owned());
        };
        let tx = match tx {
            Value::String(_) => ReorgTx::Raw(Bytes::from_param(tx)?),
            Value::Object(_) => ReorgTx::Object(Box::new(TxObject::from_param(tx)?)),
            _ => return Err("a transaction is raw hex data or a transaction object".to_owned()),
        };
        let HexOrDecimal(block) = HexOrDecimal::from_param(block)?;
        Ok(Self { tx, block })
    }
}

/// Checks a depth against the chain: at most the head (genesis stays), as anvil says.
fn check_depth(ctx: &RpcContext, depth: u64, what: &str) -> Result<u64, RpcError> {
    let height = head(ctx)?;
    if depth > height {
        return Err(RpcError::InvalidParams(format!(
            "{what} depth must not exceed current chain height: current height {height}, depth \
             {depth}"
        )));
    }
    Ok(height)
}

/// Drops every block after `number` (geth's debug_setHead); a number at or past the head
/// changes nothing, as in geth.
pub(crate) async fn rewind_to(ctx: &RpcContext, number: u64) -> Result<(), RpcError> {
    let height = head(ctx)?;
    if number < height {
        rewind(ctx, height - number, Vec::new()).await?;
    }
    Ok(())
}

/// anvil_rollback: `[depth?]` (1 when absent); drops the newest `depth` blocks. `null`.
pub(crate) async fn rollback(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let depth = params.optional::<HexOrDecimal>(0)?.map_or(1, |d| d.0);
    check_depth(ctx, depth, "Rollback")?;
    rewind(ctx, depth, Vec::new()).await?;
    Ok(Value::Null)
}

/// anvil_reorg: `[depth, [[tx, blockIndex], ...]]`; replaces the newest `depth` blocks with
/// `depth` new ones holding the given transactions. `null`.
pub(crate) async fn reorg(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    let (depth, pairs) = reorg_args(params)?;
    let max = ctx.limits.max_mine_blocks;
    if depth > max {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 0: depth {depth} is over the limit of {max} blocks per call \
             (--dev.max-mine-blocks)"
        )));
    }
    let max_txs = ctx.limits.max_batch_items;
    if pairs.len() > max_txs {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 1: {} transactions, at most {max_txs} (the batch limit)",
            pairs.len()
        )));
    }
    if let Some(pair) = pairs.iter().find(|p| p.block >= depth) {
        return Err(RpcError::InvalidParams(format!(
            "Block number for reorg tx will exceed the reorged chain height. Block number {} \
             must be below the depth {depth}",
            pair.block
        )));
    }
    let height = check_depth(ctx, depth, "Reorg")?;
    let blocks = prepare(ctx, height - depth, depth, pairs).await?;
    rewind(ctx, depth, blocks).await?;
    Ok(Value::Null)
}

/// The depth and pairs, positional or by name (anvil deserializes its options struct from
/// either).
fn reorg_args(params: &Params) -> Result<(u64, Vec<ReorgPair>), RpcError> {
    let (depth, pairs) = match params {
        Params::ByName(map) => (map.get("depth"), map.get("tx_block_pairs")),
        Params::Positional(_) => {
            params.at_most(2)?;
            let depth: HexOrDecimal = params.required(0)?;
            let pairs: Option<Vec<ReorgPair>> = params.optional(1)?;
            return Ok((depth.0, pairs.unwrap_or_default()));
        }
    };
    let depth = depth
        .ok_or_else(|| RpcError::InvalidParams("missing field `depth`".into()))
        .and_then(|v| {
            HexOrDecimal::from_param(v)
                .map_err(|e| RpcError::InvalidParams(format!("field depth: {e}")))
        })?;
    let pairs = match pairs {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => Vec::<ReorgPair>::from_param(v)
            .map_err(|e| RpcError::InvalidParams(format!("field tx_block_pairs: {e}")))?,
    };
    Ok((depth.0, pairs))
}

/// Decodes or fills and signs every transaction, grouped by new block (`depth` of them).
/// Filled ones take consecutive nonces per sender from its nonce at block `base`, in block
/// order, unless they carry one.
async fn prepare(
    ctx: &RpcContext,
    base: u64,
    depth: u64,
    mut pairs: Vec<ReorgPair>,
) -> Result<Vec<Vec<PooledTx>>, RpcError> {
    // Checked against the limits already: depth is at most --dev.max-mine-blocks.
    let mut blocks: Vec<Vec<PooledTx>> = (0..depth).map(|_| Vec::new()).collect();
    pairs.sort_by_key(|p| p.block);
    let mut nonces: HashMap<Address, u64> = HashMap::new();
    for (i, ReorgPair { tx, block }) in pairs.into_iter().enumerate() {
        let bad = |e: String| RpcError::InvalidParams(format!("invalid transaction {i}: {e}"));
        let pooled = match tx {
            ReorgTx::Raw(raw) => {
                // A block holds a blob transaction without its sidecar.
                let tx = without_sidecar(&decode_tx(&raw).map_err(|e| bad(e.to_string()))?);
                let sender = tx.recover_signer().map_err(|e| bad(e.to_string()))?;
                let hash = *tx.tx_hash();
                PooledTx { tx: Arc::new(tx), sender, hash }
            }
            ReorgTx::Object(request) => {
                let from =
                    match request.from {
                        Some(from) => from,
                        None => ctx.signers.first().map(|s| s.address()).ok_or_else(|| {
                            RpcError::InvalidParams("No Signer available".to_owned())
                        })?,
                    };
                let sealer = sealer_for(ctx, from).await?;
                let next = match nonces.get(&from) {
                    Some(next) => *next,
                    None => ctx.chain.account(&from, base)?.map_or(0, |a| a.nonce),
                };
                let nonce = request.nonce.unwrap_or(next);
                nonces.insert(from, next.saturating_add(1));
                let filled = fill(ctx, from, TxObject { from: Some(from), ..*request }).await?;
                let tx = sealer.seal(from, filled, nonce)?;
                let hash = *tx.tx_hash();
                PooledTx { tx: Arc::new(tx), sender: from, hash }
            }
        };
        if let Some(txs) = usize::try_from(block).ok().and_then(|b| blocks.get_mut(b)) {
            txs.push(pooled);
        }
    }
    Ok(blocks)
}

/// Sends the miner a `Rewind`, then tells the pool: its gas limit is the new head's, and
/// what the state no longer backs goes.
async fn rewind(ctx: &RpcContext, depth: u64, blocks: Vec<Vec<PooledTx>>) -> Result<u64, RpcError> {
    let head = ctx.miner.rewind(Rewind { depth, blocks }).await??;
    let gas_limit = ctx
        .chain
        .header(head)?
        .ok_or(RpcError::MissingRecord { number: head, what: "header" })?
        .gas_limit;
    ctx.mempool.set_pool_gas_limit(SetPoolGasLimit(gas_limit)).await?;
    ctx.mempool.revalidate(Revalidate).await?;
    tracing::info!(target: "rpc::rewind", depth, head, "chain rewound");
    Ok(head)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pairs_are_raw_hex_or_objects_with_a_block() {
        let raw = ReorgPair::from_param(&json!(["0x02f8", 1])).expect("raw");
        assert_eq!(raw, ReorgPair { tx: ReorgTx::Raw(Bytes::from_static(&[2, 0xf8])), block: 1 });
        let object = ReorgPair::from_param(&json!([{"to": Address::ZERO, "value": "0x1"}, "0x0"]))
            .expect("object");
        assert_eq!(object.block, 0);
        assert!(matches!(object.tx, ReorgTx::Object(_)));
        assert!(ReorgPair::from_param(&json!(["0x02"])).is_err(), "no block");
        assert!(ReorgPair::from_param(&json!([1, 0])).is_err(), "not a transaction");
        assert!(ReorgPair::from_param(&json!(["0x0", -1])).is_err(), "negative block");
        assert!(ReorgPair::from_param(&json!(["zz", 0])).is_err(), "not hex");
    }

    #[test]
    fn arguments_come_by_position_or_by_name() {
        let positional = Params::new(Some(json!([2, [["0x01", 1]]])));
        let (depth, pairs) = reorg_args(&positional).expect("positional");
        assert_eq!((depth, pairs.len()), (2, 1));
        let named = Params::new(Some(json!({"depth": 3, "tx_block_pairs": []})));
        assert_eq!(reorg_args(&named).expect("named"), (3, vec![]));
        let no_pairs = Params::new(Some(json!([1])));
        assert_eq!(reorg_args(&no_pairs).expect("depth only"), (1, vec![]));
        assert!(reorg_args(&Params::new(Some(json!({"tx_block_pairs": []})))).is_err());
        assert!(reorg_args(&Params::new(Some(json!([])))).is_err());
        assert!(reorg_args(&Params::new(Some(json!([1, [], 3])))).is_err());
        assert!(reorg_args(&Params::new(Some(json!(["x", []])))).is_err());
    }
}
