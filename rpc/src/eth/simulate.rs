//! eth_simulateV1: decoding the payload strictly, running it on the executor pool (admitted
//! and time-capped like eth_call) and encoding the simulated blocks.
//!
//! The payload's limits are checked here, before anything runs: at most 256 block state calls
//! (-38026, the whole chain including filled gaps is checked again by the executor), 5,000
//! calls per block and 10,000 in all (-38026, geth's bounds); an empty list is -32602. Every
//! object is decoded with the strict hex rules of `params`, and a member this method does not
//! know is -32602 rather than ignored. The answer (each block with its calls, transactions as
//! hashes or in full) is encoded block by block into a buffer capped at the response limit.

use alloy_eips::eip2930::AccessList;
use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{B256, Bytes, U256};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag, Log};
use hearth_messages::executor::StateOverrides;
use hearth_messages::simulate::{
    MAX_CALLS_PER_BLOCK, MAX_SIMULATE_BLOCKS, MAX_SIMULATE_CALLS, SimBlock, SimBlockOverrides,
    SimCall, SimCallError, SimCallResult, Simulate, SimulatedBlock,
};
use hearth_messages::storage::SimulateQuery;
use serde_json::{Map, Value, json};

use crate::core::RpcContext;
use crate::core::{Authorization, FromParam, Params, json_kind};
use crate::core::{CappedJson, Reply};
use crate::core::{RpcError, revert_message};
use crate::core::{quantity, rpc_block, state_block};

/// geth's code for a call that ran and failed (not a revert).
const VM_ERROR_CODE: i64 = -32015;

/// The decoded first argument of eth_simulateV1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SimPayload {
    blocks: Vec<SimBlock>,
    trace_transfers: bool,
    validation: bool,
    full_transactions: bool,
}

/// Refuses any member of `object` not in `known`, naming it.
fn only_known(object: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), String> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!("{what}: unknown field {unknown:?}")),
        None => Ok(()),
    }
}

fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    value.as_object().ok_or_else(|| format!("{what}: expected an object, got {}", json_kind(value)))
}

/// Member `name` of `object`, decoded; `None` when absent or `null`.
fn field<T: FromParam>(object: &Map<String, Value>, name: &str) -> Result<Option<T>, String> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::from_param(value).map(Some).map_err(|e| format!("field {name}: {e}")),
    }
}

impl FromParam for SimPayload {
    fn from_param(value: &Value) -> Result<Self, String> {
        let payload = object(value, "simulation payload")?;
        only_known(
            payload,
            &["blockStateCalls", "traceTransfers", "validation", "returnFullTransactions"],
            "simulation payload",
        )?;
        let blocks = match payload.get("blockStateCalls") {
            None | Some(Value::Null) => &Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(format!(
                    "field blockStateCalls: expected an array, got {}",
                    json_kind(other)
                ));
            }
        };
        let blocks = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| sim_block(b).map_err(|e| format!("blockStateCalls[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            blocks,
            trace_transfers: field(payload, "traceTransfers")?.unwrap_or(false),
            validation: field(payload, "validation")?.unwrap_or(false),
            full_transactions: field(payload, "returnFullTransactions")?.unwrap_or(false),
        })
    }
}

fn sim_block(value: &Value) -> Result<SimBlock, String> {
    let block = object(value, "block state call")?;
    only_known(block, &["blockOverrides", "stateOverrides", "calls"], "block state call")?;
    let overrides = match block.get("blockOverrides") {
        None | Some(Value::Null) => SimBlockOverrides::default(),
        Some(value) => block_overrides(value)?,
    };
    let state_overrides: StateOverrides = field(block, "stateOverrides")?.unwrap_or_default();
    let calls = match block.get("calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| sim_call(c).map_err(|e| format!("calls[{i}]: {e}")))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!("field calls: expected an array, got {}", json_kind(other)));
        }
    };
    Ok(SimBlock { overrides, state_overrides, calls })
}

fn block_overrides(value: &Value) -> Result<SimBlockOverrides, String> {
    let o = object(value, "blockOverrides")?;
    only_known(
        o,
        &[
            "number",
            "difficulty",
            "time",
            "gasLimit",
            "feeRecipient",
            "prevRandao",
            "baseFeePerGas",
            "blobBaseFee",
            "beaconRoot",
            "withdrawals",
        ],
        "blockOverrides",
    )?;
    let withdrawals = match o.get("withdrawals") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            serde_json::from_value::<Vec<Withdrawal>>(value.clone())
                .map_err(|e| format!("field withdrawals: {e}"))?,
        ),
    };
    Ok(SimBlockOverrides {
        number: field(o, "number")?,
        difficulty: field(o, "difficulty")?,
        time: field(o, "time")?,
        gas_limit: field(o, "gasLimit")?,
        fee_recipient: field(o, "feeRecipient")?,
        prev_randao: field(o, "prevRandao")?,
        base_fee: field(o, "baseFeePerGas")?,
        blob_base_fee: field(o, "blobBaseFee")?,
        beacon_root: field(o, "beaconRoot")?,
        withdrawals,
    })
}

/// The transaction-object members a simulated call may have (execution-apis'
/// `GenericTransaction`); `type` is accepted and, as in geth, the type follows from the fee
/// fields.
const CALL_FIELDS: &[&str] = &[
    "type",
    "from",
    "to",
    "gas",
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "value",
    "nonce",
    "input",
    "data",
    "accessList",
    "chainId",
    "maxFeePerBlobGas",
    "blobVersionedHashes",
    "authorizationList",
];

fn sim_call(value: &Value) -> Result<SimCall, String> {
    let c = object(value, "call")?;
    for unsupported in ["blobs", "commitments", "proofs"] {
        if c.get(unsupported).is_some_and(|v| !v.is_null()) {
            return Err(format!("field {unsupported} is not supported by eth_simulateV1 yet"));
        }
    }
    only_known(c, CALL_FIELDS, "call")?;
    let _type: Option<u64> = field(c, "type")?;
    let input: Option<Bytes> = field(c, "input")?;
    let data: Option<Bytes> = field(c, "data")?;
    let input = match (input, data) {
        (Some(input), Some(data)) if input != data => {
            return Err("both \"data\" and \"input\" are set and not equal. \
                        Please use \"input\" to pass transaction call data"
                .to_owned());
        }
        (input, data) => input.or(data).unwrap_or_default(),
    };
    let call = SimCall {
        from: field(c, "from")?,
        to: field(c, "to")?,
        gas: field(c, "gas")?,
        gas_price: field(c, "gasPrice")?,
        max_fee_per_gas: field(c, "maxFeePerGas")?,
        max_priority_fee_per_gas: field(c, "maxPriorityFeePerGas")?,
        value: field::<U256>(c, "value")?,
        input,
        nonce: field(c, "nonce")?,
        access_list: field::<AccessList>(c, "accessList")?,
        chain_id: field(c, "chainId")?,
        max_fee_per_blob_gas: field(c, "maxFeePerBlobGas")?,
        blob_versioned_hashes: match c.get("blobVersionedHashes") {
            None | Some(Value::Null) => None,
            Some(Value::Array(hashes)) => Some(
                hashes
                    .iter()
                    .map(B256::from_param)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("field blobVersionedHashes: {e}"))?,
            ),
            Some(other) => {
                return Err(format!(
                    "field blobVersionedHashes: expected an array, got {}",
                    json_kind(other)
                ));
            }
        },
        authorization_list: field::<Vec<Authorization>>(c, "authorizationList")?
            .map(|list| list.into_iter().map(|a| a.0).collect()),
        // A simulated block's overrides apply to its calls; a call has none of its own.
        state_overrides: None,
        block_overrides: None,
    };
    check_sim_call(&call)?;
    Ok(call)
}

/// Refuses a call whose fields contradict each other (two fee kinds; a type-4 call with a gas
/// price, blob hashes or no callee).
fn check_sim_call(call: &SimCall) -> Result<(), String> {
    if call.gas_price.is_some()
        && (call.max_fee_per_gas.is_some() || call.max_priority_fee_per_gas.is_some())
    {
        return Err("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified".to_owned());
    }
    if call.authorization_list.is_some() {
        // geth would make such a call a legacy or blob transaction and drop the list.
        if call.gas_price.is_some() || call.blob_versioned_hashes.is_some() {
            return Err("authorizationList makes a type-4 transaction: it cannot have gasPrice \
                        or blobVersionedHashes"
                .to_owned());
        }
        if call.to.is_none() {
            return Err("authorizationList needs a \"to\": a type-4 transaction cannot create \
                        a contract"
                .to_owned());
        }
    }
    Ok(())
}

/// Checks the payload's size before decoding it, so that a request of a million blocks or
/// calls is refused unread: at most [`MAX_SIMULATE_BLOCKS`] block state calls,
/// [`MAX_CALLS_PER_BLOCK`] calls in one and [`MAX_SIMULATE_CALLS`] in all (-38026).
fn check_size(payload: &Value) -> Result<(), RpcError> {
    let Some(Value::Array(blocks)) = payload.get("blockStateCalls") else { return Ok(()) };
    let count = blocks.len() as u64;
    if count > MAX_SIMULATE_BLOCKS {
        return Err(RpcError::TooManySimulated { what: "blocks", count, max: MAX_SIMULATE_BLOCKS });
    }
    let mut total = 0u64;
    for block in blocks {
        let Some(Value::Array(calls)) = block.get("calls") else { continue };
        let count = calls.len() as u64;
        if count > MAX_CALLS_PER_BLOCK as u64 {
            let max = MAX_CALLS_PER_BLOCK as u64;
            return Err(RpcError::TooManySimulated { what: "calls in block", count, max });
        }
        total += count;
        if total > MAX_SIMULATE_CALLS as u64 {
            let max = MAX_SIMULATE_CALLS as u64;
            return Err(RpcError::TooManySimulated { what: "calls", count: total, max });
        }
    }
    Ok(())
}

/// eth_simulateV1: `[payload, block?]`; one object per simulated block: the block as
/// eth_getBlockByNumber shows it plus `calls`, each call's result.
pub(crate) async fn simulate(ctx: &RpcContext, params: &Params) -> Result<Reply, RpcError> {
    params.at_most(2)?;
    let raw: Value = params.required(0)?;
    check_size(&raw)?;
    let payload = SimPayload::from_param(&raw)
        .map_err(|reason| RpcError::InvalidParams(format!("invalid argument 0: {reason}")))?;
    if payload.blocks.is_empty() {
        return Err(RpcError::InvalidParams("empty input".to_owned()));
    }
    let block = params.optional(1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let base = state_block(ctx, block)?;
    // Below a fork's fork block this node has the upstream's state but not its trie, so it
    // could not seal the simulated blocks with real roots: the upstream simulates them (as
    // anvil does), once; the answer is cached, since that state never changes.
    if let Some(fork) = ctx.chain.fork()
        && base < fork.block()
    {
        let query = SimulateQuery { base, payload: raw.to_string() };
        let mut out = CappedJson::new(&ctx.limits);
        out.raw(&fork.simulate(&query)?)?;
        return Ok(out.finish());
    }
    let simulate = Simulate {
        base,
        blocks: payload.blocks,
        trace_transfers: payload.trace_transfers,
        validation: payload.validation,
        gas_budget: ctx.limits.gas_cap,
    };
    let blocks = ctx.executor.simulate(simulate).await.map_err(RpcError::Simulate)?;
    let mut out = CappedJson::new(&ctx.limits);
    out.raw(b"[")?;
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.raw(b",")?;
        }
        out.value(&block_json(block, payload.full_transactions)?)?;
    }
    out.raw(b"]")?;
    Ok(out.finish())
}

/// A simulated block as geth shows it: the block object with `calls` added.
fn block_json(simulated: &SimulatedBlock, full: bool) -> Result<Value, RpcError> {
    let block = &simulated.block;
    let mut json = serde_json::to_value(rpc_block(block, full))?;
    if full && let Some(Value::Array(txs)) = json.get_mut("transactions") {
        for (tx, envelope) in txs.iter_mut().zip(&block.body.transactions) {
            // The calls are unsigned: geth shows a legacy one with v = 0, which alloy's
            // encoding (v = 27 + parity without a chain id) cannot express.
            if envelope.is_legacy()
                && let Some(fields) = tx.as_object_mut()
            {
                fields.insert("v".to_owned(), Value::String("0x0".to_owned()));
            }
        }
    }
    let calls = simulated
        .calls
        .iter()
        .enumerate()
        .map(|(index, call)| call_json(simulated, index, call))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(fields) = json.as_object_mut() {
        fields.insert("calls".to_owned(), Value::Array(calls));
    }
    Ok(json)
}

fn call_json(
    simulated: &SimulatedBlock,
    index: usize,
    call: &SimCallResult,
) -> Result<Value, RpcError> {
    let block = &simulated.block;
    let tx_hash = block.body.transactions.get(index).map(|tx| *tx.tx_hash());
    let logs: Vec<Log> = call
        .logs
        .iter()
        .map(|log| Log {
            inner: log.log.clone(),
            block_hash: Some(block.hash),
            block_number: Some(block.number()),
            block_timestamp: Some(block.header.timestamp),
            transaction_hash: tx_hash,
            transaction_index: Some(index as u64),
            log_index: Some(log.index),
            removed: false,
        })
        .collect();
    let mut json = json!({
        "returnData": call.return_data,
        "logs": logs,
        "gasUsed": quantity(call.gas_used),
        "maxUsedGas": quantity(call.max_used_gas),
        "status": if call.error.is_none() { "0x1" } else { "0x0" },
    });
    let error = match &call.error {
        None => None,
        Some(SimCallError::Reverted(output)) => Some(json!({
            "message": revert_message(output),
            "code": 3,
            "data": output,
        })),
        Some(SimCallError::Halted(reason)) => Some(json!({
            "message": reason,
            "code": VM_ERROR_CODE,
        })),
    };
    if let (Some(error), Some(fields)) = (error, json.as_object_mut()) {
        fields.insert("error".to_owned(), error);
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decode(value: Value) -> Result<SimPayload, String> {
        SimPayload::from_param(&value)
    }

    #[test]
    fn payloads_decode_strictly() {
        let payload = decode(json!({
            "blockStateCalls": [{
                "blockOverrides": {"number": "0x10", "baseFeePerGas": "0x7"},
                "stateOverrides": {"0x00000000000000000000000000000000000000c0": {
                    "balance": "0x1", "movePrecompileToAddress": null
                }},
                "calls": [{"from": "0x00000000000000000000000000000000000000c0", "value": "0x1"}]
            }],
            "validation": true
        }))
        .expect("valid");
        assert!(payload.validation && !payload.trace_transfers && !payload.full_transactions);
        assert_eq!(payload.blocks[0].overrides.number, Some(16));
        assert_eq!(payload.blocks[0].overrides.base_fee, Some(7));
        assert_eq!(payload.blocks[0].calls[0].value, Some(U256::from(1)));

        let unknown = decode(json!({"blockStateCalls": [], "tracetransfers": true})).unwrap_err();
        assert!(unknown.contains("unknown field \"tracetransfers\""), "{unknown}");
        let bad_call =
            decode(json!({"blockStateCalls": [{"calls": [{"gass": "0x1"}]}]})).unwrap_err();
        assert!(bad_call.contains("calls[0]") && bad_call.contains("gass"), "{bad_call}");
        let bad_hex =
            decode(json!({"blockStateCalls": [{"blockOverrides": {"time": "0x01"}}]})).unwrap_err();
        assert!(bad_hex.contains("leading zero"), "{bad_hex}");
        let both = decode(
            json!({"blockStateCalls": [{"calls": [{"gasPrice": "0x1", "maxFeePerGas": "0x1"}]}]}),
        )
        .unwrap_err();
        assert!(both.contains("both gasPrice"), "{both}");
        // A type-4 call cannot create a contract.
        let seven_702 =
            decode(json!({"blockStateCalls": [{"calls": [{"authorizationList": []}]}]}))
                .unwrap_err();
        assert!(seven_702.contains("authorizationList"), "{seven_702}");
    }

    #[test]
    fn oversized_payloads_are_refused_unread() {
        let blocks = vec![json!({"calls": "not even an array"}); 1_000];
        let err = check_size(&json!({"blockStateCalls": blocks})).unwrap_err();
        assert_eq!((err.code(), err.to_string()), (-38026, "too many blocks: 1000 > 256".into()));
        let calls = vec![json!({}); MAX_CALLS_PER_BLOCK + 1];
        let err = check_size(&json!({"blockStateCalls": [{"calls": calls}]})).unwrap_err();
        assert_eq!(err.code(), -38026);
        let third = json!({"calls": vec![json!({}); MAX_SIMULATE_CALLS / 3 + 1]});
        let err = check_size(&json!({"blockStateCalls": [third, third, third]})).unwrap_err();
        assert!(err.to_string().starts_with("too many calls: "), "{err}");
        assert!(check_size(&json!({"blockStateCalls": [{}]})).is_ok());
    }

    #[test]
    fn failed_calls_carry_geth_codes() {
        let block = hearth_messages::SealedBlock {
            header: Default::default(),
            hash: B256::ZERO,
            body: hearth_messages::StoredBody { transactions: vec![], senders: vec![] },
            receipts: vec![],
            extras: Default::default(),
        };
        let simulated = SimulatedBlock { block, calls: vec![] };
        let revert = SimCallResult {
            return_data: Bytes::from_static(&[1]),
            logs: vec![],
            gas_used: 5,
            max_used_gas: 6,
            error: Some(SimCallError::Reverted(Bytes::from_static(&[1]))),
        };
        let json = call_json(&simulated, 0, &revert).expect("encodes");
        assert_eq!(json["status"], "0x0");
        assert_eq!(json["error"]["code"], 3);
        assert_eq!(json["error"]["data"], "0x01");
        assert_eq!(
            (json["gasUsed"].clone(), json["maxUsedGas"].clone()),
            (json!("0x5"), json!("0x6"))
        );
        let halt =
            SimCallResult { error: Some(SimCallError::Halted("out of gas".into())), ..revert };
        assert_eq!(call_json(&simulated, 0, &halt).expect("encodes")["error"]["code"], -32015);
    }
}
