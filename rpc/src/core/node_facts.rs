//! Facts about the node fixed at startup ([`NodeFacts`]) and what web3_clientVersion answers.

use alloy_primitives::B256;

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
