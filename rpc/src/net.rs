//! Node and network facts: web3_clientVersion, web3_sha3, net_version, net_listening,
//! net_peerCount.

use alloy_primitives::{Bytes, keccak256};
use serde_json::Value;

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::to_json;

/// web3_clientVersion: the version string the node was started with.
pub(crate) fn client_version(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(Value::String(ctx.client_version.clone()))
}

/// web3_sha3: `[data]`; keccak-256 of the data.
pub(crate) fn sha3(params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let data: Bytes = params.required(0)?;
    to_json(&keccak256(&data))
}

/// net_version: the chain id as a decimal string (the network id of a dev chain).
pub(crate) fn version(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(Value::String(ctx.chain_id.get().to_string()))
}

/// net_listening: the RPC server is listening, which is what a dev node can say.
pub(crate) fn listening(params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(Value::Bool(true))
}

/// net_peerCount: Hearth has no peer-to-peer network (blocks come from its miner or an
/// import), so it is connected to no peers.
pub(crate) fn peer_count(params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(Value::String("0x0".to_owned()))
}
