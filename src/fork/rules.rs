//! The rules a fork runs: the upstream chain's at the fork block, not the dev default.
//!
//! A fork of mainnet at a block of 2023 must run Shanghai (no blobs, no transient storage), and
//! one at today's head Osaka with the blob schedule of the last blob-parameter fork; running
//! the node's `--hardfork` default instead would give calls and local blocks opcodes,
//! precompiles and gas rules the upstream never had. So the rules come from, in order:
//! 1. `--hardfork`, when given: the user's word;
//! 2. the upstream's chain id, when it names a public network whose schedule alloy keeps
//!    (mainnet, Sepolia, Holesky, Hoodi): the fork active at the fork block's timestamp;
//! 3. otherwise the fork block's header: the fields each upgrade added (requests hash: Prague,
//!    blob gas: Cancun, withdrawals: Shanghai, zero difficulty: Paris, base fee: London).
//!    A header cannot tell Osaka from Prague (Osaka added no field), nor forks before London
//!    apart; the log says so and `--hardfork` settles it.

use alloy_chains::Chain;
use alloy_consensus::Header;
use alloy_eips::eip7840::BlobParams;
use alloy_hardforks::EthereumHardfork;
use revm::primitives::hardfork::SpecId;

/// The rules a fork runs, and where they came from (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkRules {
    /// The EVM and block rules.
    pub spec: SpecId,
    /// The blob schedule, when it is not the one `spec` implies (a blob-parameter-only fork).
    pub blob_params: Option<BlobParams>,
    /// How they were chosen.
    pub source: RulesSource,
}

/// How a fork's rules were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RulesSource {
    /// `--hardfork`.
    Flag,
    /// The named network's schedule, at the fork block's time.
    Schedule(EthereumHardfork),
    /// The fork block header's fields.
    Header,
}

impl std::fmt::Display for RulesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Flag => f.write_str("--hardfork"),
            Self::Schedule(fork) => write!(f, "the network's schedule ({fork})"),
            Self::Header => f.write_str("the fork block's header"),
        }
    }
}

/// The rules of a fork of chain `chain_id` at block `header`; `given` is `--hardfork`'s, when
/// the flag was given.
pub fn of(chain_id: u64, header: &Header, given: Option<SpecId>) -> ForkRules {
    if let Some(spec) = given {
        return ForkRules { spec, blob_params: None, source: RulesSource::Flag };
    }
    if let Some(fork) =
        EthereumHardfork::from_chain_and_timestamp(Chain::from_id(chain_id), header.timestamp)
    {
        let (spec, blob_params) = spec_of(fork);
        return ForkRules { spec, blob_params, source: RulesSource::Schedule(fork) };
    }
    ForkRules { spec: spec_from_header(header), blob_params: None, source: RulesSource::Header }
}

/// revm's rules for a named upgrade, and its blob schedule when that is all it changed.
/// Upgrades after Osaka run as Osaka (the newest rules this node has), with a warning.
fn spec_of(fork: EthereumHardfork) -> (SpecId, Option<BlobParams>) {
    use EthereumHardfork as F;
    let spec = match fork {
        // revm folds the upgrades that changed no rules into the one before (difficulty bomb
        // delays) or after (Constantinople, replaced by Petersburg on the same block).
        F::Frontier => SpecId::FRONTIER,
        F::Homestead | F::Dao => SpecId::HOMESTEAD,
        F::Tangerine => SpecId::TANGERINE,
        F::SpuriousDragon => SpecId::SPURIOUS_DRAGON,
        F::Byzantium => SpecId::BYZANTIUM,
        F::Constantinople | F::Petersburg => SpecId::PETERSBURG,
        F::Istanbul | F::MuirGlacier => SpecId::ISTANBUL,
        F::Berlin => SpecId::BERLIN,
        F::London | F::ArrowGlacier | F::GrayGlacier => SpecId::LONDON,
        F::Paris => SpecId::MERGE,
        F::Shanghai => SpecId::SHANGHAI,
        F::Cancun => SpecId::CANCUN,
        F::Prague => SpecId::PRAGUE,
        F::Osaka => SpecId::OSAKA,
        F::Bpo1 => return (SpecId::OSAKA, Some(BlobParams::bpo1())),
        F::Bpo2 => return (SpecId::OSAKA, Some(BlobParams::bpo2())),
        later => {
            tracing::warn!(
                target: "node::fork",
                upgrade = %later,
                "the fork block is past the newest rules this node runs: running Osaka with the \
                 BPO2 blob schedule (give --hardfork to choose)"
            );
            return (SpecId::OSAKA, Some(BlobParams::bpo2()));
        }
    };
    (spec, None)
}

/// The newest upgrade whose header fields `header` carries.
fn spec_from_header(header: &Header) -> SpecId {
    if header.requests_hash.is_some() {
        SpecId::PRAGUE
    } else if header.blob_gas_used.is_some() || header.excess_blob_gas.is_some() {
        SpecId::CANCUN
    } else if header.withdrawals_root.is_some() {
        SpecId::SHANGHAI
    } else if header.base_fee_per_gas.is_some() && header.difficulty.is_zero() {
        SpecId::MERGE
    } else if header.base_fee_per_gas.is_some() {
        SpecId::LONDON
    } else {
        tracing::warn!(
            target: "node::fork",
            "the fork block has no base fee: it is from before London, and its header does \
             not say which fork; running Berlin (give --hardfork to choose)"
        );
        SpecId::BERLIN
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{B256, U256};

    use super::*;

    /// Mainnet's upgrade times (from the execution specs' mainnet upgrade list).
    const MAINNET_SHANGHAI_TIME: u64 = 1_681_338_455;
    const MAINNET_CANCUN_TIME: u64 = 1_710_338_135;
    const MAINNET_PRAGUE_TIME: u64 = 1_746_612_311;

    fn at(timestamp: u64) -> Header {
        Header { timestamp, ..Header::default() }
    }

    #[test]
    fn a_named_network_runs_the_upgrade_active_at_the_fork_block() {
        let spec = |t| of(1, &at(t), None).spec;
        assert_eq!(spec(MAINNET_SHANGHAI_TIME - 1), SpecId::MERGE);
        assert_eq!(spec(MAINNET_SHANGHAI_TIME), SpecId::SHANGHAI);
        assert_eq!(spec(MAINNET_CANCUN_TIME - 1), SpecId::SHANGHAI);
        assert_eq!(spec(MAINNET_CANCUN_TIME), SpecId::CANCUN);
        assert_eq!(spec(MAINNET_PRAGUE_TIME), SpecId::PRAGUE);
        // Today's mainnet head: Osaka's rules with a blob-parameter fork's schedule.
        let today = of(1, &at(1_796_169_600), None);
        assert_eq!(today.spec, SpecId::OSAKA);
        assert!(today.blob_params.is_some());
        assert_eq!(of(11_155_111, &at(MAINNET_CANCUN_TIME), None).spec, SpecId::CANCUN);
    }

    #[test]
    fn the_flag_wins_and_an_unknown_chain_reads_the_header() {
        let given = of(1, &at(MAINNET_SHANGHAI_TIME), Some(SpecId::PRAGUE));
        assert_eq!((given.spec, given.source), (SpecId::PRAGUE, RulesSource::Flag));
        let mut header = at(5);
        assert_eq!(of(31_337, &header, None).spec, SpecId::BERLIN);
        header.base_fee_per_gas = Some(7);
        header.difficulty = U256::from(1);
        assert_eq!(of(31_337, &header, None).spec, SpecId::LONDON);
        header.difficulty = U256::ZERO;
        assert_eq!(of(31_337, &header, None).spec, SpecId::MERGE);
        header.withdrawals_root = Some(B256::ZERO);
        assert_eq!(of(31_337, &header, None).spec, SpecId::SHANGHAI);
        header.blob_gas_used = Some(0);
        assert_eq!(of(31_337, &header, None).spec, SpecId::CANCUN);
        header.requests_hash = Some(B256::ZERO);
        let rules = of(31_337, &header, None);
        assert_eq!((rules.spec, rules.source), (SpecId::PRAGUE, RulesSource::Header));
    }
}
