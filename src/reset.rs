//! `Resetter`: serves anvil_reset / hardhat_reset by building the new chain off to the side and
//! then switching every component to it.
//!
//! - **Owns:** what a new chain is built from: the node's configuration as started (the dev
//!   genesis flags, the `--fork-*` settings), the dev accounts, the clock, and the fork cache
//!   of the fork the node runs now (so a reset to the same upstream and block fetches nothing
//!   again), and the fork counters `/metrics` reads (so it counts every fork the node runs,
//!   one it started with or one a reset switched to).
//! - **Takes:** `ResetChain` from the RPC front (through `ask`: a full mailbox is -32005).
//! - **Sends:** `ResetTo` to the miner (which has the state owner publish the chain between two
//!   blocks), then `DropAll`, `SetPoolGasLimit` and `SetChainId` to the mempool and
//!   `ClearFilters` to the filters.
//! - **Mailbox:** 16. One reset at a time: a handler builds synchronously (a fork start blocks
//!   for the upstream's answers, at most `--fork-timeout` each) and then switches atomically.
//! - **Runs on:** an arbiter of its own, so the blocking build holds no thread anyone else needs
//!   (the fork backend it waits for runs on its own arbiter too).
//!
//! Nothing of the running chain changes until the new one is complete: a reset that fails
//! (unreachable upstream, a block the upstream lacks) leaves the node as it was.

use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, ActorFutureExt, Addr, AtomicResponse, Context, Handler, WrapFuture};
use alloy_primitives::Address;
use hearth_actors::fork::{ForkBackendActor, ForkCache, SwitchUpstream};
use hearth_actors::miner::Clock;
use hearth_actors::{FilterActor, MempoolActor, MinerActor};
use hearth_messages::executor::ExecutorClient;
use hearth_messages::filters::ClearFilters;
use hearth_messages::fork::ForkCounters;
use hearth_messages::mempool::{DropAll, SetChainId, SetPoolGasLimit};
use hearth_messages::reset::{ResetChain, ResetError, ResetTarget, ResetTo, SetForkUrl};
use hearth_messages::{ChainId, MineError};
use hearth_storage::ChainWriter;
use tracing::info;

use crate::config::{ForkBlock, ForkSettings, NodeConfig, StorageMode};
use crate::fork::{ForkStart, open_fork};

/// Resets queued at most; a reset takes from milliseconds to `--fork-timeout`.
const MAILBOX: usize = 16;

/// The fork the node runs now.
#[derive(Debug, Clone)]
struct CurrentFork {
    settings: ForkSettings,
    cache: ForkCache,
    /// Its backend, which anvil_setRpcUrl switches to another endpoint.
    backend: Addr<ForkBackendActor>,
}

/// The resetter.
pub struct Resetter {
    /// The configuration the node started with (before a fork start replaced its chain id
    /// and gas limit): a dev reset builds the same genesis a start would.
    config: NodeConfig,
    dev_accounts: Vec<Address>,
    clock: Clock,
    /// `None` while the node runs a dev chain.
    fork: Option<CurrentFork>,
    /// The URL anvil_setRpcUrl gave on a dev chain: a reset into a fork that names none uses it.
    kept_url: Option<String>,
    /// The fork counters `/metrics` reads: every fork this node runs counts in them.
    counters: Arc<ForkCounters>,
    miner: Addr<MinerActor>,
    mempool: Addr<MempoolActor>,
    filters: Addr<FilterActor>,
    chain_id: ChainId,
    /// Told whether the chain it runs is a fork (its calls then collect their fork misses).
    executor: ExecutorClient,
}

impl std::fmt::Debug for Resetter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resetter").field("fork", &self.fork).finish_non_exhaustive()
    }
}

/// The actors a reset switches over.
#[derive(Debug, Clone)]
pub struct ResetPeers {
    /// Switches the chain between blocks.
    pub miner: Addr<MinerActor>,
    /// Emptied, and told the new gas limit and chain id.
    pub mempool: Addr<MempoolActor>,
    /// Emptied.
    pub filters: Addr<FilterActor>,
    /// The chain id every component reads.
    pub chain_id: ChainId,
    /// The fork counters `/metrics` reads.
    pub fork_counters: Arc<ForkCounters>,
    /// The executor pool's client, told whether the new chain is a fork.
    pub executor: ExecutorClient,
}

impl Resetter {
    /// A resetter for a node started with `config` (as given, before the start changed it),
    /// whose fork, if any, is `fork` with its cache and counters.
    pub fn new(
        config: NodeConfig,
        dev_accounts: Vec<Address>,
        clock: Clock,
        fork: Option<(ForkSettings, &crate::fork::ForkHandle)>,
        peers: ResetPeers,
    ) -> Self {
        let fork = fork.map(|(settings, handle)| CurrentFork {
            settings,
            cache: handle.cache.clone(),
            backend: handle.backend.clone(),
        });
        Self {
            config,
            dev_accounts,
            clock,
            fork,
            kept_url: None,
            counters: peers.fork_counters,
            miner: peers.miner,
            mempool: peers.mempool,
            filters: peers.filters,
            chain_id: peers.chain_id,
            executor: peers.executor,
        }
    }

    /// Starts it on an arbiter of its own.
    pub fn start_own(self) -> Addr<Self> {
        hearth_actors::start_on(
            &actix::Arbiter::new().handle(),
            self,
            NonZeroUsize::new(MAILBOX).expect("16 is non-zero"),
        )
    }

    /// The new chain, complete, and the fork it runs (if any) with the chain id it takes.
    fn build(
        &self,
        target: ResetTarget,
    ) -> Result<(ChainWriter, Option<(CurrentFork, u64)>), ResetError> {
        let start = |e: String| ResetError::Start(e);
        match target {
            ResetTarget::Dev => {
                let chain = ChainWriter::in_memory()
                    .map_err(|e| start(format!("cannot create the new chain: {e}")))?;
                // anvil keeps the chain id it runs (anvil_setChainId's, or a fork's).
                let chain_id = self.chain_id.get();
                crate::node::write_dev_genesis(
                    &chain,
                    &self.config,
                    &self.dev_accounts,
                    chain_id,
                    (self.clock)(),
                )
                .map_err(|e| start(e.to_string()))?;
                Ok((chain, None))
            }
            ResetTarget::Fork { url, block } => {
                let mut settings = match (&self.fork, url) {
                    // The node's own --fork-* flags (timeout, retries, headers, cache) stay; a
                    // reset names only the upstream and the block. --fork-chain-id named the
                    // chain id of the node's first upstream, not of another.
                    (Some(current), Some(url)) if url != current.settings.upstream.url => {
                        let base = ForkSettings { chain_id: None, ..current.settings.clone() };
                        crate::config::fork_settings_for(&url, &base)
                            .map_err(ResetError::Invalid)?
                    }
                    (Some(current), _) => current.settings.clone(),
                    (None, url) => {
                        let url = url.or_else(|| self.kept_url.clone());
                        let url = url.ok_or(ResetError::NoForkUrl)?;
                        crate::config::fork_settings_for(&url, &self.config.reset_fork)
                            .map_err(ResetError::Invalid)?
                    }
                };
                settings.block = block.map_or(ForkBlock::Head, ForkBlock::Number);
                let start_from = ForkStart {
                    dev_accounts: &self.dev_accounts,
                    balance: self.config.balance_wei,
                    cache: self.fork.as_ref().map(|f| f.cache.clone()),
                    counters: Some(Arc::clone(&self.counters)),
                };
                let (chain, handle) =
                    open_fork(&settings, start_from).map_err(|e| start(e.to_string()))?;
                let chain_id = handle.chain_id;
                let current =
                    CurrentFork { settings, cache: handle.cache, backend: handle.backend };
                Ok((chain, Some((current, chain_id))))
            }
        }
    }
}

impl Actor for Resetter {
    type Context = Context<Self>;
}

impl Handler<ResetChain> for Resetter {
    type Result = AtomicResponse<Self, Result<(), ResetError>>;

    fn handle(&mut self, msg: ResetChain, _ctx: &mut Self::Context) -> Self::Result {
        let refused = |e| AtomicResponse::new(Box::pin(actix::fut::ready(Err(e))));
        if matches!(self.config.storage, StorageMode::Disk(_)) {
            return refused(ResetError::Persistent);
        }
        let target = msg.0;
        // Off to the side: nothing the node serves changes until this is complete.
        let (chain, fork) = match self.build(target) {
            Ok(built) => built,
            Err(e) => {
                info!(target: "node::reset", error = %e, "reset refused; the chain is unchanged");
                return refused(e);
            }
        };
        let (miner, mempool, filters) =
            (self.miner.clone(), self.mempool.clone(), self.filters.clone());
        let chain_id = fork.as_ref().map(|(_, id)| *id);
        let switch = async move {
            let header = miner.send(ResetTo { chain }).await.map_err(MineError::from)??;
            // The chain has switched: what the other actors hold about the old one goes.
            let dropped =
                mempool.send(DropAll { chain_replaced: true }).await.map_err(MineError::from)?;
            mempool.send(SetPoolGasLimit(header.gas_limit)).await.map_err(MineError::from)?;
            if let Some(id) = chain_id {
                mempool.send(SetChainId(id)).await.map_err(MineError::from)?;
            }
            let filters = filters.send(ClearFilters).await.map_err(MineError::from)?;
            info!(target: "node::reset", head = header.number, dropped, filters, "chain reset");
            Ok::<_, ResetError>(())
        };
        AtomicResponse::new(Box::pin(switch.into_actor(self).map(move |result, act, _| {
            if result.is_ok() {
                act.fork = fork.map(|(current, _)| current);
                act.executor.set_fork_reads(act.fork.is_some());
            }
            result
        })))
    }
}

impl Handler<SetForkUrl> for Resetter {
    type Result = AtomicResponse<Self, Result<(), ResetError>>;

    fn handle(&mut self, msg: SetForkUrl, _ctx: &mut Self::Context) -> Self::Result {
        let done = |result| AtomicResponse::new(Box::pin(actix::fut::ready(result)));
        let SetForkUrl(url) = msg;
        let Some(current) = &self.fork else {
            // A dev chain: kept for a later reset into a fork (anvil keeps it too).
            let checked = crate::config::fork_settings_for(&url, &self.config.reset_fork);
            return done(checked.map_err(ResetError::Invalid).map(|_| self.kept_url = Some(url)));
        };
        let settings = match crate::config::fork_settings_for(&url, &current.settings) {
            Ok(settings) => settings,
            Err(e) => return done(Err(ResetError::Invalid(e))),
        };
        let switch = current.backend.send(SwitchUpstream { config: settings.upstream.clone() });
        AtomicResponse::new(Box::pin(switch.into_actor(self).map(move |sent, act, _| {
            let switched = sent.map_err(|_| ResetError::Closed)?;
            switched.map_err(|e| ResetError::Start(e.to_string()))?;
            info!(target: "node::fork", url = %settings.upstream.display_url(), "fork upstream switched");
            if let Some(current) = &mut act.fork {
                current.settings.upstream = settings.upstream;
            }
            Ok(())
        })))
    }
}

hearth_messages::answer_asks!(Resetter: ResetChain, SetForkUrl);
