//! testing_buildBlockV1 (execution-apis' testing namespace): a block built on the head from
//! payload attributes, as an engine API execution payload, without touching the chain.
//!
//! The block follows what Hearth's miner would build: the next base fee (EIP-1559), the gas
//! limit moved toward the miner's gas limit by at most the consensus step (parent / 1024 - 1),
//! the excess blob gas of the parent's. Transactions: `[]` builds an empty block; an array
//! includes exactly those, in order, and fails (-32000, nothing changes) when one cannot go
//! in; `null` takes the pool's pending transactions, leaving out those that cannot. The block
//! is executed and sealed (state root and hash) on the executor pool and never committed.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256, Bytes};
use hearth_messages::executor::{
    BlockEnvSpec, BlockRules, BuildBlock, BuildMode, PooledTx, next_gas_limit,
};
use hearth_messages::mempool::{GetPoolContent, decode_tx};
use hearth_messages::miner::GetMiningStatus;
use hearth_messages::payload::{BuildPayload, BuiltPayload};
use serde_json::{Value, json};

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::head;
use crate::core::{FromParam, Params, json_kind};

/// The engine API's payload attributes (V3): what the consensus layer decides about a block.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PayloadAttributes {
    timestamp: u64,
    prev_randao: B256,
    fee_recipient: Address,
    withdrawals: Option<Vec<Withdrawal>>,
    parent_beacon_block_root: Option<B256>,
}

impl FromParam for PayloadAttributes {
    fn from_param(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("expected payload attributes, got {}", json_kind(value)))?;
        let known = [
            "timestamp",
            "prevRandao",
            "suggestedFeeRecipient",
            "withdrawals",
            "parentBeaconBlockRoot",
        ];
        if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("payload attributes: unknown field {unknown:?}"));
        }
        let required = |name: &str| {
            object.get(name).filter(|v| !v.is_null()).ok_or_else(|| format!("missing {name}"))
        };
        let timestamp =
            u64::from_param(required("timestamp")?).map_err(|e| format!("field timestamp: {e}"))?;
        let prev_randao = B256::from_param(required("prevRandao")?)
            .map_err(|e| format!("field prevRandao: {e}"))?;
        let fee_recipient = Address::from_param(required("suggestedFeeRecipient")?)
            .map_err(|e| format!("field suggestedFeeRecipient: {e}"))?;
        let withdrawals = match object.get("withdrawals") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                serde_json::from_value::<Vec<Withdrawal>>(value.clone())
                    .map_err(|e| format!("field withdrawals: {e}"))?,
            ),
        };
        let parent_beacon_block_root = match object.get("parentBeaconBlockRoot") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                B256::from_param(value).map_err(|e| format!("field parentBeaconBlockRoot: {e}"))?,
            ),
        };
        Ok(Self { timestamp, prev_randao, fee_recipient, withdrawals, parent_beacon_block_root })
    }
}

/// The raw transactions to include: `null` (the pool's) or an array of EIP-2718 encodings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RawTransactions(Vec<Bytes>);

impl FromParam for RawTransactions {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items = value.as_array().ok_or_else(|| {
            format!("expected an array of transactions, got {}", json_kind(value))
        })?;
        items.iter().map(Bytes::from_param).collect::<Result<_, _>>().map(Self)
    }
}

/// testing_buildBlockV1: `[parentHash, payloadAttributes, transactions | null, extraData?]`.
pub(crate) async fn build_block(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(4)?;
    let parent_hash: B256 = params.required(0)?;
    let attributes: PayloadAttributes = params.required(1)?;
    let given: Option<RawTransactions> = params.optional(2)?;
    let extra_data: Bytes = params.optional(3)?.unwrap_or_default();
    let parent = parent_at_head(ctx, parent_hash, attributes.timestamp)?;
    let number = parent.number;
    let (txs, mode) = match given {
        Some(RawTransactions(raw)) => {
            let txs = raw.iter().map(recover).collect::<Result<Vec<_>, _>>()?;
            (txs, BuildMode::Import)
        }
        None => {
            let content = ctx.mempool.pool_content(GetPoolContent).await?;
            (content.pending, BuildMode::Pack)
        }
    };
    let status = ctx.miner.mining_status(GetMiningStatus).await?;
    let base_fee = hearth_messages::base_fee::next_base_fee(&parent).unwrap_or(0);
    let env = BlockEnvSpec {
        withdrawals: attributes.withdrawals.clone().unwrap_or_default(),
        parent_beacon_block_root: attributes.parent_beacon_block_root,
        extra_data: extra_data.clone(),
        rules: BlockRules::Full,
        ..BlockEnvSpec::dev(
            number + 1,
            attributes.timestamp,
            attributes.fee_recipient,
            next_gas_limit(parent.gas_limit, status.gas_limit),
            base_fee,
            attributes.prev_randao,
        )
    };
    let build = BuildBlock { parent: alloy_consensus::Sealed::new(parent), env, txs, mode };
    let built = ctx.executor.build_payload(BuildPayload::build(build)).await?;
    Ok(payload_json(&built))
}

/// The head's header, when it is `parent_hash` and older than `timestamp`: a payload builds
/// only on the head, and after it.
fn parent_at_head(
    ctx: &RpcContext,
    parent_hash: B256,
    timestamp: u64,
) -> Result<alloy_consensus::Header, RpcError> {
    let number = head(ctx)?;
    let head_hash = ctx.chain.block_hash(number)?;
    if head_hash != Some(parent_hash) {
        return Err(RpcError::NotHead { parent: parent_hash });
    }
    let parent =
        ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })?;
    if timestamp <= parent.timestamp {
        return Err(RpcError::BuildTimestamp { parent: parent.timestamp, given: timestamp });
    }
    Ok(parent)
}

/// The answer of testing_buildBlockV1: the execution payload, its value, an empty blobs
/// bundle, and the execution requests after Prague.
fn payload_json(built: &BuiltPayload) -> Value {
    let mut answer = json!({
        "executionPayload": crate::engine::payload::payload_json(built),
        "blockValue": built.fees,
        // Given transactions come without sidecars: engine_getPayload assembles the bundle
        // of pooled blob transactions.
        "blobsBundle": {"commitments": [], "proofs": [], "blobs": []},
        "shouldOverrideBuilder": false,
    });
    if built.block.header.requests_hash.is_some()
        && let Some(fields) = answer.as_object_mut()
    {
        fields.insert("executionRequests".into(), json!(built.requests));
    }
    answer
}

/// A given raw transaction, decoded and with its sender.
pub(crate) fn recover(raw: &Bytes) -> Result<PooledTx, RpcError> {
    // A block holds a blob transaction without its sidecar.
    let tx = decode_tx(raw).map_err(|e| RpcError::TxDecode(e.to_string()))?;
    let tx = hearth_messages::mempool::without_sidecar(&tx);
    let sender = tx
        .recover_signer()
        .map_err(|_| RpcError::Tx(hearth_messages::TxError::InvalidSignature))?;
    let hash = *tx.tx_hash();
    Ok(PooledTx { tx: std::sync::Arc::new(tx), sender, hash })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_attributes_are_strict() {
        let ok = json!({
            "timestamp": "0x10",
            "prevRandao": B256::ZERO,
            "suggestedFeeRecipient": Address::ZERO,
            "withdrawals": [],
            "parentBeaconBlockRoot": B256::ZERO,
        });
        let attributes = PayloadAttributes::from_param(&ok).expect("valid");
        assert_eq!(attributes.timestamp, 16);
        let mut unknown = ok.clone();
        unknown["gasLimit"] = json!("0x1");
        assert!(PayloadAttributes::from_param(&unknown).unwrap_err().contains("gasLimit"));
        let mut missing = ok;
        missing.as_object_mut().map(|o| o.remove("timestamp"));
        assert!(PayloadAttributes::from_param(&missing).unwrap_err().contains("timestamp"));
    }
}
