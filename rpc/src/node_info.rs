//! What the node says about itself: anvil_nodeInfo, and anvil_metadata (also served as
//! hardhat_metadata: anvil's object holds every field of Hardhat's, so Hardhat's tools read
//! it too). The field names, their order and their encodings (some quantities as hex, some as
//! JSON numbers) are anvil's.

use alloy_primitives::{B256, U256};
use hearth_messages::miner::GetMiningStatus;
use hearth_messages::state::ListSnapshots;
use serde::Serialize;
use serde_json::Value;

use crate::blocks::{head, to_json};
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::Params;

/// Facts about the node fixed at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    /// The hard fork the chain runs, as anvil names it (`Prague`).
    pub hardfork: String,
    /// How the pool orders a block's transactions: `fees` (highest tip first) or `fifo`.
    pub transaction_order: String,
    /// Identifies this run of the node (anvil and Hardhat make a new one per start): tools
    /// compare it to notice a restarted chain.
    pub instance_id: B256,
    /// The node's version, e.g. `0.1.0`.
    pub semver: String,
}

/// The anvil release whose answers Hearth's dialect is compared with (`scripts/anvil-compare.py`).
pub const ANVIL_DIALECT: &str = "1.7.1";

/// What web3_clientVersion answers: `anvil/v1.7.1/hearth/v0.1.0`. Hardhat's network helpers
/// (`loadFixture`, `time`, `mine`), hardhat-predeploy and OpenZeppelin's upgrades plugin take a
/// node for a dev chain only when this answer starts with `HardhatNetwork`, `zksync` or `anvil`;
/// Hearth speaks anvil's dialect (and Hardhat's method names), so it names anvil first and
/// itself after, as Hardhat names EDR after `HardhatNetwork/<version>`.
pub fn client_version() -> String {
    format!("anvil/v{ANVIL_DIALECT}/hearth/v{}", env!("CARGO_PKG_VERSION"))
}

impl NodeFacts {
    /// The facts of a node running `hardfork` (revm's name, which is anvil's: `Prague`),
    /// ordering by fees, with a fresh instance id drawn from the wall clock and the process id
    /// at startup.
    pub fn new(hardfork: &str) -> Self {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let mut seed = started.to_be_bytes().to_vec();
        seed.extend_from_slice(&std::process::id().to_be_bytes());
        Self {
            hardfork: hardfork.to_owned(),
            transaction_order: "fees".to_owned(),
            instance_id: alloy_primitives::keccak256(seed),
            semver: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

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
            gas_price: U256::from(crate::fees::suggested_gas_price(ctx)?),
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
