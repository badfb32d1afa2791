//! The chain's fork schedule as the RPC front reports it: eth_config (EIP-7910).
//!
//! The node gives the front its genesis configuration's forks ([`ChainForks`]); eth_config
//! describes the timestamped fork the head is under (`current`), the next scheduled one and the
//! last one, each with its activation time (0 when active from genesis), blob schedule, chain
//! id, EIP-2124 fork id, precompiles (by their EIP-7910 names) and system contracts, as geth
//! does. A chain whose head is before its first timestamped fork (Shanghai) answers `current:
//! null`.

use std::collections::BTreeMap;

use alloy_eips::eip2124::ForkHash;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes};
use serde_json::{Value, json};

use crate::blocks::{head, quantity};
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::Params;

/// A fork activated by timestamp, as EIP-7910 describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeFork {
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
    fn active_at(&self, time: u64) -> Option<usize> {
        self.time_forks.iter().rposition(|f| f.time <= time)
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
    fn describe(
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
            "chainId": quantity(chain_id),
            "forkId": Bytes::copy_from_slice(&fork_id.0),
            "precompiles": fork.precompiles,
            "systemContracts": fork.system_contracts,
        })
    }
}

/// eth_config: `[]`; `{current, next, last}` as EIP-7910 describes them.
pub(crate) fn config(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    // A fork's first local block is its fork block; the upstream's genesis is not here.
    let first = ctx.chain.fork().map_or(0, |fork| fork.block());
    let genesis = ctx
        .chain
        .header(first)?
        .ok_or(RpcError::MissingRecord { number: first, what: "header" })?;
    let genesis_hash = genesis.hash_slow();
    let number = head(ctx)?;
    let head =
        ctx.chain.header(number)?.ok_or(RpcError::MissingRecord { number, what: "header" })?;
    let forks = &ctx.forks;
    let describe =
        |index: usize| forks.describe(index, ctx.chain_id.get(), genesis_hash, genesis.timestamp);
    let current = forks.active_at(head.timestamp);
    let next = match current {
        Some(index) => (index + 1 < forks.time_forks.len()).then_some(index + 1),
        None => (!forks.time_forks.is_empty()).then_some(0),
    };
    let last = next.map(|_| forks.time_forks.len() - 1);
    Ok(json!({
        "current": current.map(describe),
        "next": next.map(describe),
        "last": last.map(describe),
    }))
}
