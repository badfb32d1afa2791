//! What the node says about itself: anvil_nodeInfo, and anvil_metadata (also served as
//! hardhat_metadata: anvil's object holds every field of Hardhat's, so Hardhat's tools read
//! it too). The field names, their order and their encodings (some quantities as hex, some as
//! JSON numbers) are anvil's.

use alloy_primitives::{B256, U256};
use hearth_messages::miner::GetMiningStatus;
use hearth_messages::state::ListSnapshots;
use serde::Serialize;
use serde_json::Value;

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{head, to_json};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeInfo {
    current_block_number: U256,
    current_block_timestamp: u64,
    current_block_hash: B256,
    hard_fork: String,
    transaction_order: String,
    environment: Environment,
    fork_config: ForkConfig,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Environment {
    base_fee: U256,
    chain_id: u64,
    gas_limit: U256,
    gas_price: U256,
}

/// A dev chain here is never a fork: every field is `null`, as anvil without `--fork-url`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ForkConfig {
    fork_url: Option<String>,
    fork_block_number: Option<u64>,
    fork_retry_backoff: Option<u64>,
}

/// anvil_nodeInfo: `[]`; the head block, the fork, the pool's order and the environment of
/// the next block (its base fee, the chain id, the gas limit, the suggested gas price).
pub(crate) async fn node_info(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let number = head(ctx)?;
    let header =
        ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })?;
    let hash =
        ctx.chain.block_hash(number)?.ok_or(RpcError::MissingRecord { number, what: "hash" })?;
    let status = ctx.miner.mining_status(GetMiningStatus).await?;
    let next_base_fee = hearth_messages::base_fee::next_base_fee(&header).unwrap_or(0);
    to_json(&NodeInfo {
        current_block_number: U256::from(number),
        current_block_timestamp: header.timestamp,
        current_block_hash: hash,
        hard_fork: ctx.node.hardfork.clone(),
        transaction_order: ctx.node.transaction_order.clone(),
        environment: Environment {
            base_fee: U256::from(next_base_fee),
            chain_id: ctx.chain_id.get(),
            gas_limit: U256::from(status.gas_limit),
            // What eth_gasPrice answers (`--gas-price` when given).
            gas_price: U256::from(crate::eth::fees::suggested_gas_price(ctx)?),
        },
        fork_config: ForkConfig {
            fork_url: None,
            fork_block_number: None,
            fork_retry_backoff: None,
        },
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    client_version: String,
    client_semver: String,
    /// Hearth is built without its git revision.
    client_commit_sha: Option<String>,
    chain_id: u64,
    instance_id: B256,
    latest_block_number: u64,
    latest_block_hash: B256,
    forked_network: Option<()>,
    /// Each live snapshot id (hex) with the block number and hash it was taken at.
    snapshots: serde_json::Map<String, Value>,
}

/// anvil_metadata / hardhat_metadata: `[]`; the client, the chain id, this run's instance id,
/// the head and the live snapshots.
pub(crate) async fn metadata(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let number = head(ctx)?;
    let hash =
        ctx.chain.block_hash(number)?.ok_or(RpcError::MissingRecord { number, what: "hash" })?;
    let live = ctx.state.list_snapshots(ListSnapshots).await?;
    let mut snapshots = serde_json::Map::new();
    for (id, at) in live {
        // A snapshot's block exists while the snapshot lives (a rollback past it ends it).
        let at_hash = ctx.chain.block_hash(at)?.unwrap_or_default();
        snapshots.insert(format!("{id:#x}"), serde_json::json!([at, at_hash]));
    }
    to_json(&Metadata {
        client_version: ctx.client_version.clone(),
        client_semver: ctx.node.semver.clone(),
        client_commit_sha: None,
        chain_id: ctx.chain_id.get(),
        instance_id: ctx.node.instance_id,
        latest_block_number: number,
        latest_block_hash: hash,
        forked_network: None,
        snapshots,
    })
}
