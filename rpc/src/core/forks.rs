//! The chain's fork schedule as the RPC front knows it ([`ChainForks`]): what eth_config
//! describes, and the blob parameters receipts and blocks are priced with.

use std::collections::BTreeMap;

use alloy_eips::eip2124::ForkHash;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes};
use serde_json::{Value, json};

/// A fork activated by timestamp, as EIP-7910 describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeFork {
    /// Its name as genesis configurations spell it without `Time` (`cancun`, `bpo1`).
    pub name: String,
    /// Activation timestamp.
    pub time: u64,
    /// The blob schedule in force under it, if any.
    pub blob_schedule: Option<BlobParams>,
    /// Its precompiles, by EIP-7910 name.
    pub precompiles: BTreeMap<String, Address>,
    /// Its system contracts, by EIP-7910 name.
    pub system_contracts: BTreeMap<String, Address>,
}

/// The chain's forks, from its genesis configuration: what eth_config reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChainForks {
    /// Activation blocks of every block-numbered fork the configuration lists (EIP-2124
    /// counts them all), in any order.
    pub block_forks: Vec<u64>,
    /// The timestamped forks, in activation order.
    pub time_forks: Vec<TimeFork>,
}

impl ChainForks {
    /// The index of the last timestamped fork active at `time`.
    pub(crate) fn active_at(&self, time: u64) -> Option<usize> {
        self.time_forks.iter().rposition(|f| f.time <= time)
    }

    /// The name of the last timestamped fork active at `time` (`None`: none is).
    pub(crate) fn name_at(&self, time: u64) -> Option<&str> {
        self.active_at(time).map(|index| self.time_forks[index].name.as_str())
    }

    /// The blob schedule in force at `time`, when the fork active then has one.
    pub fn blob_params_at(&self, time: u64) -> Option<BlobParams> {
        self.active_at(time).and_then(|index| self.time_forks[index].blob_schedule)
    }

    /// EIP-2124: CRC32 of the genesis hash, then of every fork block after genesis and every
    /// fork time after the genesis time up to `time`, each once, in order.
    fn fork_id(&self, genesis_hash: B256, genesis_time: u64, time: u64) -> ForkHash {
        let mut blocks: Vec<u64> = self.block_forks.iter().copied().filter(|b| *b > 0).collect();
        blocks.sort_unstable();
        blocks.dedup();
        let mut times: Vec<u64> = self
            .time_forks
            .iter()
            .map(|f| f.time)
            .filter(|t| *t > genesis_time && *t <= time)
            .collect();
        times.sort_unstable();
        times.dedup();
        blocks.into_iter().chain(times).fold(ForkHash::from(genesis_hash), |hash, n| hash + n)
    }

    /// EIP-7910's description of fork `index`.
    pub(crate) fn describe(
        &self,
        index: usize,
        chain_id: u64,
        genesis_hash: B256,
        genesis_time: u64,
    ) -> Value {
        let fork = &self.time_forks[index];
        let blob_schedule = fork.blob_schedule.map(|b| {
            json!({
                "target": b.target_blob_count,
                "max": b.max_blob_count,
                "baseFeeUpdateFraction": u64::try_from(b.update_fraction).unwrap_or(u64::MAX),
            })
        });
        let fork_id = self.fork_id(genesis_hash, genesis_time, fork.time);
        json!({
            "activationTime": if fork.time <= genesis_time { 0 } else { fork.time },
            "blobSchedule": blob_schedule,
            "chainId": format!("{chain_id:#x}"),
            "forkId": Bytes::copy_from_slice(&fork_id.0),
            "precompiles": fork.precompiles,
            "systemContracts": fork.system_contracts,
        })
    }
}

/// The blob gas price of a block, from its excess blob gas under the blob schedule of the
/// block's own fork ([`blob_params_at`]).
pub(crate) fn blob_gas_price(header: &alloy_consensus::Header, forks: &ChainForks) -> u128 {
    blob_params_at(header, forks).calc_blob_fee(header.excess_blob_gas.unwrap_or_default())
}

/// The blob schedule block `header` runs under: that of the chain's timestamped fork active
/// at its time (Cancun's fraction before Prague, Prague's after, a BPO fork's own). A store
/// without a fork table (written before genesis documents were kept) falls back on the header:
/// Prague's schedule for blocks with a requests hash, Cancun's before.
pub(crate) fn blob_params_at(
    header: &alloy_consensus::Header,
    forks: &ChainForks,
) -> alloy_eips::eip7840::BlobParams {
    forks.blob_params_at(header.timestamp).unwrap_or_else(|| {
        if header.requests_hash.is_some() {
            alloy_eips::eip7840::BlobParams::prague()
        } else {
            alloy_eips::eip7840::BlobParams::cancun()
        }
    })
}
