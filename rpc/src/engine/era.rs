//! Which Engine API method versions serve a payload: by the fork its timestamp falls in. Each
//! `engine_*V<n>` serves the forks of its spec chapter, and any other is -38005 (Unsupported
//! fork) or, for a structure of the wrong version, -32602.

use crate::core::{RpcContext, RpcError};

/// The forks as the Engine API versions its methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Era {
    /// The merge (and, on a chain without timestamped forks, everything before it).
    Paris,
    /// Withdrawals (V2).
    Shanghai,
    /// Blobs and the beacon root (V3).
    Cancun,
    /// Execution requests (V4).
    Prague,
    /// Cell proofs (getPayloadV5); later forks are served as Osaka.
    Osaka,
}

impl Era {
    /// The era of a fork named as genesis configurations name it (`cancun`, `bpo2`).
    fn of_name(name: &str) -> Self {
        match name {
            "shanghai" => Self::Shanghai,
            "cancun" => Self::Cancun,
            "prague" => Self::Prague,
            "frontier" | "homestead" | "tangerine" | "spurious_dragon" | "byzantium"
            | "constantinople" | "petersburg" | "istanbul" | "muir_glacier" | "berlin"
            | "london" | "arrow_glacier" | "gray_glacier" | "merge" | "paris" => Self::Paris,
            // osaka, its blob-parameter forks and what comes after.
            _ => Self::Osaka,
        }
    }

    /// The era of block time `timestamp` on this node's chain.
    pub(crate) fn at(ctx: &RpcContext, timestamp: u64) -> Self {
        if ctx.forks.time_forks.is_empty() {
            // A chain stored without its fork schedule runs one fork from genesis.
            return Self::of_name(&ctx.node.hardfork.to_lowercase());
        }
        ctx.forks.name_at(timestamp).map_or(Self::Paris, Self::of_name)
    }

    /// -38005 unless this era is one of `served` (what `method` serves).
    pub(crate) fn served_by(self, method: &str, served: &[Self]) -> Result<(), RpcError> {
        if served.contains(&self) {
            return Ok(());
        }
        Err(RpcError::UnsupportedFork(format!(
            "{method} does not serve a {self:?} payload; use the version of its fork"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_names_map_to_engine_eras() {
        assert_eq!(Era::of_name("london"), Era::Paris);
        assert_eq!(Era::of_name("shanghai"), Era::Shanghai);
        assert_eq!(Era::of_name("bpo3"), Era::Osaka);
        assert!(Era::Cancun < Era::Prague);
        let refused = Era::Prague.served_by("engine_newPayloadV3", &[Era::Cancun]);
        assert_eq!(refused.map_err(|e| e.code()), Err(-38005));
    }
}
