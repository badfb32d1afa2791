//! Starting a read replica (`--follow URL`): what the node needs of its leader before its
//! actors start. A new replica takes the leader's genesis timestamp (a dev genesis is stamped
//! with the time it was made, so two nodes started apart would otherwise hold two chains), and
//! every replica checks that its genesis is the leader's before it serves anything.

use std::time::Duration;

use alloy_consensus::Header;
use hearth_actors::follow::leader::{Leader, LeaderError};

use crate::config::NodeConfig;
use crate::node::{Node, NodeError};

/// Starts the node of `config`: for a read replica, on its leader's genesis (taken for a new
/// chain, checked for an existing one). A replica whose datadir holds a chain starts while its
/// leader is down, serving its last head; its rounds check the chain once the leader answers.
pub async fn start(mut config: NodeConfig) -> Result<Node, NodeError> {
    let Some(follow) = config.follow.clone() else { return Node::start(config) };
    let genesis = match leader_genesis(&follow.leader).await {
        Ok(genesis) => genesis,
        Err(error) if holds_chain(&config) => {
            tracing::warn!(target: "follow", "{error}; serving the chain in the datadir until the leader answers");
            return Node::start(config);
        }
        Err(error) => return Err(error),
    };
    adopt_genesis_time(&mut config, &genesis);
    let node = Node::start(config)?;
    check_genesis(&node, &genesis)?;
    Ok(node)
}

/// Whether the node's datadir holds a chain already (anything in it).
fn holds_chain(config: &NodeConfig) -> bool {
    match &config.storage {
        crate::config::StorageMode::Disk(path) => {
            std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_some())
        }
        crate::config::StorageMode::Ephemeral => false,
    }
}

/// The leader's genesis header.
pub async fn leader_genesis(leader: &str) -> Result<Header, NodeError> {
    let client = Leader::new(leader, Duration::from_secs(10), 2);
    let genesis = client.blocks(0, 1).await?.into_iter().next().ok_or_else(|| LeaderError {
        url: client.url().to_owned(),
        why: "it has no genesis block".into(),
    })?;
    Ok(genesis.header)
}

/// Stamps a new chain's genesis as the leader's, unless `--timestamp` says otherwise.
pub fn adopt_genesis_time(config: &mut NodeConfig, genesis: &Header) {
    config.genesis.timestamp.get_or_insert(genesis.timestamp);
}

/// Fails unless `node`'s genesis block is the leader's `genesis`.
pub fn check_genesis(node: &Node, genesis: &Header) -> Result<(), NodeError> {
    let theirs = genesis.hash_slow();
    let ours = node.chain.block_hash(0).ok().flatten().unwrap_or_default();
    if ours == theirs {
        return Ok(());
    }
    let leader = node.config().follow.as_ref().map(|f| f.leader.clone()).unwrap_or_default();
    Err(NodeError::OtherChain { leader, theirs, ours })
}
