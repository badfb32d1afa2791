//! anvil_reset / hardhat_reset: replacing the whole chain with a fresh dev chain or a fork.
//!
//! The RPC front sends [`ResetChain`] to the node's resetter, which builds the new chain off to
//! the side (a fresh genesis, or a fork's first block fetched from the upstream) and only then
//! hands it to the miner ([`ResetTo`]), which has the state owner publish it
//! ([`crate::state::ReplaceChain`]) between two blocks. A reset that fails before that point
//! leaves the running chain exactly as it was.

use actix::Message;
use hearth_storage::ChainWriter;

use crate::MineError;

/// Where a reset takes the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetTarget {
    /// A fresh dev chain: genesis with the dev accounts funded, as at startup (`[]`).
    Dev,
    /// A fork (`[{"forking": {"jsonRpcUrl", "blockNumber"}}]`).
    Fork {
        /// The upstream; `None`: the one the node forks now (refused on a dev chain).
        url: Option<String>,
        /// The fork block; `None`: the upstream's head.
        block: Option<u64>,
    },
}

/// Replace the chain with a new one built for `0`. Replies once every component serves it.
#[derive(Debug, Clone)]
pub struct ResetChain(pub ResetTarget);

impl Message for ResetChain {
    type Result = Result<(), ResetError>;
}

/// Points the fork at another endpoint of the same chain (`anvil_setRpcUrl`): later upstream
/// reads go there, and so does a reset that names no URL. On a fork the endpoint must serve the
/// same chain id and the fork block with the same hash, or nothing changes; on a dev chain the
/// URL is only kept, for a reset into a fork that names none.
#[derive(Debug, Clone)]
pub struct SetForkUrl(pub String);

impl Message for SetForkUrl {
    type Result = Result<(), ResetError>;
}

/// Why a reset was refused or failed; the running chain is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    /// A fork target without a URL on a node that forks nothing (anvil's message).
    #[error("Forking not enabled and RPC URL not provided to start forking")]
    NoForkUrl,
    /// The target is malformed (a URL that is not http(s)).
    #[error("{0}")]
    Invalid(String),
    /// The node keeps its chain in a datadir, which a reset would discard.
    #[error(
        "anvil_reset is refused on a node with a --datadir (or --dev): it would discard the chain \
         kept on disk; start a node without --datadir (in memory, as anvil runs) to reset it, or \
         remove the datadir while the node is stopped"
    )]
    Persistent,
    /// The new chain could not be built: the upstream did not answer, or the fork block does
    /// not exist there.
    #[error("{0}")]
    Start(String),
    /// The miner or the state owner could not switch to the new chain.
    #[error(transparent)]
    Switch(#[from] MineError),
    /// The resetter is gone (shutdown).
    #[error("the node is shutting down")]
    Closed,
}

/// Sent by the resetter to the miner: between two blocks, have the state owner publish `chain`
/// in place of the current one, then take the new head's clock and gas limit and forget the
/// one-block settings and snapshot clocks of the old chain. Replies with the new head's header.
#[derive(Debug)]
pub struct ResetTo {
    /// The new chain, its first block written; nobody else holds it.
    pub chain: ChainWriter,
}

impl Message for ResetTo {
    type Result = Result<alloy_consensus::Header, MineError>;
}
