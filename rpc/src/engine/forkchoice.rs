//! engine_forkchoiceUpdatedV1..V3: `[forkchoiceState, payloadAttributes | null]`.
//!
//! The attributes' structure is checked against the method's version here (-32602 for a
//! wrong one, -38005 for a fork the version does not serve) before anything changes; the
//! engine actor then moves the head, records safe and finalized and builds the payload.

use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256, Bytes};
use hearth_messages::engine::{ForkchoiceState, ForkchoiceUpdate, PayloadRequest};
use hearth_messages::executor::PooledTx;
use serde_json::{Value, json};

use super::era::Era;
use super::port::{engine, status_json};
use crate::core::{FromParam, Params, RpcContext, RpcError, json_kind};

impl FromParam for ForkchoiceState {
    fn from_param(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("expected a forkchoice state, got {}", json_kind(value)))?;
        let known = ["headBlockHash", "safeBlockHash", "finalizedBlockHash"];
        if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("forkchoice state: unknown field {unknown:?}"));
        }
        let hash = |name: &str| {
            let value = object.get(name).ok_or_else(|| format!("missing {name}"))?;
            B256::from_param(value).map_err(|e| format!("field {name}: {e}"))
        };
        Ok(Self {
            head: hash("headBlockHash")?,
            safe: hash("safeBlockHash")?,
            finalized: hash("finalizedBlockHash")?,
        })
    }
}

/// The payload attributes as sent, before the version's rules are applied.
#[derive(Debug)]
struct Attributes {
    object: serde_json::Map<String, Value>,
}

impl Attributes {
    fn get<T: FromParam>(&self, name: &str) -> Result<Option<T>, RpcError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::from_param(value).map(Some).map_err(|e| {
                RpcError::InvalidParams(format!("invalid argument 1: field {name}: {e}"))
            }),
        }
    }

    fn required<T: FromParam>(&self, name: &str) -> Result<T, RpcError> {
        self.get(name)?
            .ok_or_else(|| RpcError::InvalidParams(format!("invalid argument 1: missing {name}")))
    }
}

/// The attributes of `version` as a payload request, checked against the version and the
/// fork of their timestamp.
fn payload_request(
    ctx: &RpcContext,
    attributes: &Attributes,
    version: u8,
) -> Result<PayloadRequest, RpcError> {
    let mut known = vec!["timestamp", "prevRandao", "suggestedFeeRecipient"];
    if version >= 2 {
        known.push("withdrawals");
    }
    if version >= 3 {
        // ev-reth's extension, which ev-node's execution client sends.
        known.extend(["parentBeaconBlockRoot", "transactions", "gasLimit"]);
    }
    if let Some(unknown) = attributes.object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 1: engine_forkchoiceUpdatedV{version} takes no attribute {unknown:?}"
        )));
    }
    let timestamp: u64 = attributes.required("timestamp")?;
    let withdrawals: Option<Vec<Withdrawal>> = match attributes.object.get("withdrawals") {
        None | Some(Value::Null) => None,
        Some(value) => Some(serde_json::from_value(value.clone()).map_err(|e| {
            RpcError::InvalidParams(format!("invalid argument 1: field withdrawals: {e}"))
        })?),
    };
    let parent_beacon_block_root: Option<B256> = attributes.get("parentBeaconBlockRoot")?;
    let era = Era::at(ctx, timestamp);
    let method = format!("engine_forkchoiceUpdatedV{version}");
    match version {
        // geth's rule: V1 builds only before Shanghai (its attributes carry no withdrawals).
        1 => era.served_by(&method, &[Era::Paris])?,
        2 => {
            era.served_by(&method, &[Era::Paris, Era::Shanghai])?;
            if withdrawals.is_some() != (era >= Era::Shanghai) {
                return Err(RpcError::InvalidParams(
                    "invalid argument 1: withdrawals are given exactly from Shanghai on".into(),
                ));
            }
        }
        _ => {
            if withdrawals.is_none() || parent_beacon_block_root.is_none() {
                return Err(RpcError::InvalidParams(
                    "invalid argument 1: V3 attributes have withdrawals and parentBeaconBlockRoot"
                        .into(),
                ));
            }
            era.served_by(&method, &[Era::Cancun, Era::Prague, Era::Osaka])?;
        }
    }
    let transactions = attributes
        .get::<Vec<Bytes>>("transactions")?
        .map(|raw| raw.iter().map(recover).collect::<Result<Vec<_>, _>>())
        .transpose()?;
    Ok(PayloadRequest {
        timestamp,
        prev_randao: attributes.required("prevRandao")?,
        fee_recipient: attributes.required::<Address>("suggestedFeeRecipient")?,
        withdrawals,
        parent_beacon_block_root,
        transactions,
        gas_limit: attributes.get::<u64>("gasLimit")?.map(checked_gas_limit).transpose()?,
    })
}

/// Lowest and highest gas limit an attribute may ask for: the consensus minimum, and geth's
/// ceiling (a block gas limit must fit an `i64`).
const GAS_LIMITS: std::ops::RangeInclusive<u64> = 5_000..=0x7fff_ffff_ffff_ffff;

/// ev-reth's `gasLimit` attribute, within [`GAS_LIMITS`] (-38003 outside: no block can have it).
fn checked_gas_limit(gas_limit: u64) -> Result<u64, RpcError> {
    if GAS_LIMITS.contains(&gas_limit) {
        return Ok(gas_limit);
    }
    Err(RpcError::Engine(hearth_messages::engine::EngineError::InvalidAttributes(format!(
        "gasLimit {gas_limit} is outside {}..={}",
        GAS_LIMITS.start(),
        GAS_LIMITS.end()
    ))))
}

/// A raw transaction of the attributes, decoded, with its sender (-32602 when it is not one).
fn recover(raw: &Bytes) -> Result<PooledTx, RpcError> {
    crate::testing::recover(raw).map_err(|e| {
        RpcError::InvalidParams(format!("invalid argument 1: field transactions: {e}"))
    })
}

/// engine_forkchoiceUpdatedV`version`.
pub(crate) async fn forkchoice_updated(
    ctx: &RpcContext,
    params: &Params,
    version: u8,
) -> Result<Value, RpcError> {
    let engine = engine(ctx)?;
    params.at_most(2)?;
    let state: ForkchoiceState = params.required(0)?;
    let attributes = match params.optional::<Value>(1)? {
        None | Some(Value::Null) => None,
        Some(Value::Object(object)) => Some(payload_request(ctx, &Attributes { object }, version)?),
        Some(other) => {
            return Err(RpcError::InvalidParams(format!(
                "invalid argument 1: expected payload attributes, got {}",
                json_kind(&other)
            )));
        }
    };
    let answer = engine.forkchoice_updated(ForkchoiceUpdate { state, attributes }).await??;
    let payload_id = answer.payload_id.map(alloy_primitives::B64::from);
    Ok(json!({"payloadStatus": status_json(&answer.status), "payloadId": payload_id}))
}
