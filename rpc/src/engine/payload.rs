//! engine_newPayloadV1..V4 and engine_getPayloadV1..V5: a block given to the node to check,
//! and a block the node built, as execution payloads.
//!
//! Here the call's shape is checked (the version's structure and fork, the block hash, the
//! blob versioned hashes, the signatures); the engine actor does what needs the chain.

use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Block, Transaction, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{B256, Bytes};
use alloy_rpc_types_engine::{
    CancunPayloadFields, ExecutionPayload, ExecutionPayloadSidecar, ExecutionPayloadV1,
    ExecutionPayloadV2, ExecutionPayloadV3, PraguePayloadFields,
};
use hearth_messages::engine::{NewPayload, PayloadVerdict, ReceivedPayload};
use hearth_messages::executor::PooledTx;
use hearth_messages::payload::BuiltPayload;
use hearth_messages::storage::BlockExtras;
use serde_json::{Map, Value, json};

use super::era::Era;
use super::port::{engine, status_json};
use crate::core::{FromParam, Params, RpcContext, RpcError, json_kind, quantity};

/// An INVALID verdict for a payload whose own content is wrong (before any execution).
fn invalid(error: impl Into<String>) -> Value {
    status_json(&PayloadVerdict::Invalid { latest_valid_hash: None, error: error.into() })
}

/// Whether the payload object has member `name` (not null).
fn has(payload: &Value, name: &str) -> bool {
    payload.get(name).is_some_and(|v| !v.is_null())
}

/// The payload as the version's structure, or -32602 naming what does not fit it.
fn decode_payload(payload: &Value, version: u8, era: Era) -> Result<ExecutionPayload, RpcError> {
    if !payload.is_object() {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 0: expected an execution payload, got {}",
            json_kind(payload)
        )));
    }
    let blob_fields = has(payload, "blobGasUsed") || has(payload, "excessBlobGas");
    let withdrawals = has(payload, "withdrawals");
    let wrong = |why: &str| Err(RpcError::InvalidParams(format!("invalid argument 0: {why}")));
    let parsed =
        match version {
            1 | 2 if blob_fields => {
                return wrong("blobGasUsed and excessBlobGas need engine_newPayloadV3");
            }
            1 if withdrawals => return wrong("withdrawals need engine_newPayloadV2"),
            2 if era >= Era::Shanghai && !withdrawals => {
                return wrong("a Shanghai payload has withdrawals");
            }
            2 if era < Era::Shanghai && withdrawals => return wrong("withdrawals before Shanghai"),
            1 | 2 if !withdrawals => serde_json::from_value::<ExecutionPayloadV1>(payload.clone())
                .map(ExecutionPayload::V1),
            1 | 2 => serde_json::from_value::<ExecutionPayloadV2>(payload.clone())
                .map(ExecutionPayload::V2),
            _ if !(blob_fields && withdrawals) => {
                return wrong("a V3 payload has withdrawals, blobGasUsed and excessBlobGas");
            }
            _ => serde_json::from_value::<ExecutionPayloadV3>(payload.clone())
                .map(ExecutionPayload::V3),
        };
    parsed.map_err(|e| RpcError::InvalidParams(format!("invalid argument 0: {e}")))
}

/// EIP-7685 requests as engine_newPayloadV4 takes them: each a type byte and data, in
/// ascending type order, none empty.
fn decode_requests(params: &Params) -> Result<Requests, RpcError> {
    let items: Vec<Bytes> = params.required(3)?;
    let mut last_type = None;
    for item in &items {
        if item.len() < 2 {
            return Err(RpcError::InvalidParams(
                "invalid argument 3: an execution request has a type byte and data".into(),
            ));
        }
        if last_type.is_some_and(|last| item[0] <= last) {
            return Err(RpcError::InvalidParams(
                "invalid argument 3: execution requests are in ascending type order, one per type"
                    .into(),
            ));
        }
        last_type = Some(item[0]);
    }
    Ok(Requests::new(items))
}

/// engine_newPayloadV`version`.
pub(crate) async fn new_payload(
    ctx: &RpcContext,
    params: &Params,
    version: u8,
) -> Result<Value, RpcError> {
    let engine = engine(ctx)?;
    let arity = match version {
        1 | 2 => 1,
        3 => 3,
        _ => 4,
    };
    params.at_most(arity)?;
    let raw: Value = params.required(0)?;
    // The params' own quantity rule; a bad timestamp is refused by the structure check below.
    let timestamp = raw.get("timestamp").and_then(|t| u64::from_param(t).ok());
    let era = Era::at(ctx, timestamp.unwrap_or_default());
    let payload = decode_payload(&raw, version, era)?;
    let method = format!("engine_newPayloadV{version}");
    let sidecar = match version {
        1 => ExecutionPayloadSidecar::none(),
        2 => {
            era.served_by(&method, &[Era::Paris, Era::Shanghai])?;
            ExecutionPayloadSidecar::none()
        }
        _ => {
            let versioned_hashes: Vec<B256> = params.required(1)?;
            let parent_beacon_block_root: B256 = params.required(2)?;
            let cancun = CancunPayloadFields { parent_beacon_block_root, versioned_hashes };
            if version == 3 {
                era.served_by(&method, &[Era::Cancun])?;
                ExecutionPayloadSidecar::v3(cancun)
            } else {
                era.served_by(&method, &[Era::Prague, Era::Osaka])?;
                ExecutionPayloadSidecar::v4(
                    cancun,
                    PraguePayloadFields::new(decode_requests(params)?),
                )
            }
        }
    };
    let received = match received(payload, &sidecar) {
        Ok(received) => received,
        Err(verdict) => return Ok(verdict),
    };
    let verdict = engine.new_payload(NewPayload(received)).await??;
    Ok(status_json(&verdict))
}

/// The block a payload holds, checked as far as it can be without the chain; `Err` is the
/// INVALID answer.
fn received(
    payload: ExecutionPayload,
    sidecar: &ExecutionPayloadSidecar,
) -> Result<ReceivedPayload, Value> {
    let claimed = payload.block_hash();
    let has_withdrawals = payload.withdrawals().is_some();
    let block: Block<TxEnvelope> =
        payload.try_into_block_with_sidecar(sidecar).map_err(|e| invalid(e.to_string()))?;
    let hash = block.header.hash_slow();
    if hash != claimed {
        return Err(invalid(format!("blockHash is {claimed}, the block hashes to {hash}")));
    }
    if let Some(expected) = sidecar.versioned_hashes() {
        let carried: Vec<B256> = block
            .body
            .transactions
            .iter()
            .flat_map(|tx| tx.blob_versioned_hashes().unwrap_or_default().iter().copied())
            .collect();
        if &carried != expected {
            return Err(invalid(
                "the blob versioned hashes differ from expectedBlobVersionedHashes".to_owned(),
            ));
        }
    }
    let mut txs = Vec::with_capacity(block.body.transactions.len());
    for (index, tx) in block.body.transactions.into_iter().enumerate() {
        let Ok(sender) = tx.recover_signer() else {
            // Whether the parent is valid is not known here: null, as the spec allows.
            return Err(invalid(format!("transaction {index} has an invalid signature")));
        };
        let hash = *tx.tx_hash();
        txs.push(PooledTx { tx: Arc::new(tx), sender, hash });
    }
    let withdrawals = block.body.withdrawals.map(|w| w.into_inner()).unwrap_or_default();
    Ok(ReceivedPayload {
        header: block.header,
        hash,
        txs,
        extras: BlockExtras { ommers: Vec::new(), withdrawals },
        has_withdrawals,
    })
}

/// engine_getPayloadV`version`: `[payloadId]`.
pub(crate) async fn get_payload(
    ctx: &RpcContext,
    params: &Params,
    version: u8,
) -> Result<Value, RpcError> {
    let engine = engine(ctx)?;
    params.at_most(1)?;
    let id: alloy_primitives::B64 = params.required(0)?;
    let built = engine.get_payload(hearth_messages::engine::GetPayload(id.0)).await??;
    let era = Era::at(ctx, built.block.header.timestamp);
    let method = format!("engine_getPayloadV{version}");
    let served: &[Era] = match version {
        1 => &[Era::Paris],
        2 => &[Era::Paris, Era::Shanghai],
        3 => &[Era::Cancun],
        4 => &[Era::Prague],
        _ => &[Era::Osaka],
    };
    era.served_by(&method, served)?;
    let payload = payload_json(&built);
    if version == 1 {
        return Ok(payload);
    }
    let mut answer = Map::new();
    answer.insert("executionPayload".into(), payload);
    answer.insert("blockValue".into(), json!(built.fees));
    if version >= 3 {
        let bundle = super::blobs::bundle(ctx, &built, version >= 5).await?;
        answer.insert("blobsBundle".into(), bundle);
        answer.insert("shouldOverrideBuilder".into(), json!(false));
    }
    if version >= 4 {
        answer.insert("executionRequests".into(), json!(built.requests));
    }
    Ok(Value::Object(answer))
}

/// A built block as an execution payload (the fields of its fork's version).
pub(crate) fn payload_json(built: &BuiltPayload) -> Value {
    let block = &built.block;
    let header = &block.header;
    let transactions: Vec<Bytes> =
        block.body.transactions.iter().map(|tx| Bytes::from(tx.encoded_2718())).collect();
    let mut payload = Map::new();
    payload.insert("parentHash".into(), json!(header.parent_hash));
    payload.insert("feeRecipient".into(), json!(header.beneficiary));
    payload.insert("stateRoot".into(), json!(header.state_root));
    payload.insert("receiptsRoot".into(), json!(header.receipts_root));
    payload.insert("logsBloom".into(), json!(header.logs_bloom));
    payload.insert("prevRandao".into(), json!(header.mix_hash));
    payload.insert("blockNumber".into(), quantity(header.number));
    payload.insert("gasLimit".into(), quantity(header.gas_limit));
    payload.insert("gasUsed".into(), quantity(header.gas_used));
    payload.insert("timestamp".into(), quantity(header.timestamp));
    payload.insert("extraData".into(), json!(header.extra_data));
    payload.insert("baseFeePerGas".into(), quantity(header.base_fee_per_gas.unwrap_or_default()));
    payload.insert("blockHash".into(), json!(block.hash));
    payload.insert("transactions".into(), json!(transactions));
    if header.withdrawals_root.is_some() {
        payload.insert("withdrawals".into(), json!(block.extras.withdrawals));
    }
    if let (Some(used), Some(excess)) = (header.blob_gas_used, header.excess_blob_gas) {
        payload.insert("blobGasUsed".into(), quantity(used));
        payload.insert("excessBlobGas".into(), quantity(excess));
    }
    Value::Object(payload)
}
