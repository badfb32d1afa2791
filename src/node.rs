//! Wiring: the only place that sees every crate. Opens storage, writes genesis, starts every
//! actor with a bounded mailbox, and hands the RPC front its clients.
//!
//! Message flow for a transaction (see ARCHITECTURE.md):
//! RPC -> MempoolActor (SubmitTx) -> RPC -> MinerActor (AutoMine) -> MempoolActor (TakePending)
//! -> executor pool (BuildBlock) -> StateActor (CommitBlock) -> subscribers (BlockCommitted)
//! -> MempoolActor (TxsMined) -> reply. New blocks and admitted transactions also reach the
//! SubscriptionActor (BlockCommitted, TxsAdmitted), which queues notifications for each
//! WebSocket connection that subscribed.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::Addr;
use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;
use hearth_actors::miner::{Clock, system_clock};
use hearth_actors::{
    CodeCacheActor, CodeL2, ExecConfig, ExecutorActor, FilterActor, MempoolActor, MempoolConfig,
    MinerActor, MinerConfig, MinerPeers, StateActor, SubscriptionActor,
};
use hearth_messages::executor::ExecutorClient;
use hearth_messages::interest::Interest;
use hearth_messages::state::{BlockCommitted, SubscribeBlocks};
use hearth_rpc::{Controls, Extensions, RpcContext};
use hearth_storage::{ChainDb, StorageError};
use revm::primitives::hardfork::SpecId;
use tracing::info;

use crate::config::{NodeConfig, StorageMode};
use crate::genesis::{DevGenesis, Genesis};

/// The hard fork the dev chain runs (an imported chain runs its own, from its config).
pub const SPEC: SpecId = SpecId::PRAGUE;
/// Base fee of the genesis block (1 gwei, as anvil).
pub const GENESIS_BASE_FEE: u64 = 1_000_000_000;

/// Most polling filters installed at once; each is a few bytes (a cursor and its criteria),
/// and unpolled ones expire after five minutes.
pub const MAX_FILTERS: NonZeroUsize = NonZeroUsize::new(10_000).expect("10,000 is non-zero");

/// Starting the node failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The datadir could not be opened.
    #[error("cannot open the chain in {path} (set with --datadir): {source}")]
    OpenStorage {
        /// The directory.
        path: String,
        /// Why.
        source: StorageError,
    },
    /// The chain configuration stored by an import is unreadable.
    #[error("{0}")]
    ChainConfig(crate::chainfile::ChainFileError),
    /// Genesis could not be written.
    #[error("cannot write genesis: {0}")]
    Genesis(StorageError),
    /// Dev keys could not be derived.
    #[error("cannot derive dev accounts from --mnemonic: {0}")]
    Keys(String),
    /// Two actors could not be connected at startup (a bug: fresh mailboxes have room).
    #[error("internal error while starting: {0}")]
    Wiring(&'static str),
    /// The RPC port could not be bound.
    #[error("cannot bind JSON-RPC on {addr} (set with --http.addr/--http.port): {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A running node: handles to every actor. Must be started inside an actix `System`.
#[derive(Debug)]
pub struct Node {
    /// Shared read handle to the store.
    pub chain: ChainDb,
    /// The state owner.
    pub state: Addr<StateActor>,
    /// The mempool.
    pub mempool: Addr<MempoolActor>,
    /// The miner.
    pub miner: Addr<MinerActor>,
    /// The shared code cache.
    pub code_cache: Addr<CodeCacheActor>,
    /// The bounded executor pool.
    pub executor: ExecutorClient,
    /// Dev account keys (funded at genesis; the RPC front signs with them unless
    /// `--no-unlocked-accounts`).
    pub signers: Arc<Vec<PrivateKeySigner>>,
    /// The polling filters (eth_newFilter, eth_newBlockFilter).
    pub filters: Addr<FilterActor>,
    /// The WebSocket subscriptions (eth_subscribe).
    pub subscriptions: Addr<SubscriptionActor>,
    /// Request counters of the RPC front (shared by every context this node hands out).
    pub rpc_metrics: Arc<hearth_rpc::RpcMetrics>,
    /// The chain's fork schedule, as eth_config reports it.
    pub forks: Arc<hearth_rpc::ChainForks>,
    /// The restartable actors' restart counters (for `/metrics`).
    pub restarts: Vec<(&'static str, hearth_messages::restarts::RestartCounter)>,
    config: NodeConfig,
}

/// The fork schedule of the chain in `chain`: an imported chain's stored configuration, else
/// the configuration of the genesis document block 0 was made from (a dev chain's), else
/// none (a store written before genesis documents were kept).
fn chain_forks(chain: &ChainDb) -> Result<hearth_rpc::ChainForks, NodeError> {
    if let Some(config) = crate::chainfile::stored_config(chain).map_err(NodeError::ChainConfig)? {
        return Ok(config.forks());
    }
    let Some(document) = chain.genesis_document().map_err(NodeError::Genesis)? else {
        return Ok(hearth_rpc::ChainForks::default());
    };
    let corrupt = || NodeError::Genesis(StorageError::Corrupt { what: "stored genesis document" });
    let document: serde_json::Value = serde_json::from_slice(&document).map_err(|_| corrupt())?;
    let config =
        crate::genesis::ChainConfig::from_json(&document["config"]).map_err(|_| corrupt())?;
    Ok(config.forks())
}

impl Node {
    /// Opens storage and starts every actor, with the wall clock stamping blocks.
    pub fn start(config: NodeConfig) -> Result<Self, NodeError> {
        Self::start_with_clock(config, system_clock())
    }

    /// Like [`Node::start`], with block timestamps from `clock` (tests pass a fixed one).
    pub fn start_with_clock(config: NodeConfig, clock: Clock) -> Result<Self, NodeError> {
        let chain = match &config.storage {
            StorageMode::Disk(path) => {
                ChainDb::open_with_cache(path, config.db_cache_bytes).map_err(|source| {
                    NodeError::OpenStorage { path: path.display().to_string(), source }
                })?
            }
            StorageMode::Ephemeral => ChainDb::in_memory_with_cache(config.db_cache_bytes)
                .map_err(|source| NodeError::OpenStorage { path: "memory".into(), source })?,
        };
        Self::start_on(chain, config, clock)
    }

    /// Like [`Node::start_with_clock`], on an already opened store (tests that import a chain
    /// first). A store holding an imported chain runs under its stored chain id and fork rules
    /// (see `hearth import`); any other gets the dev genesis and dev rules.
    pub fn start_on(
        chain: ChainDb,
        mut config: NodeConfig,
        clock: Clock,
    ) -> Result<Self, NodeError> {
        let signers = hearth_actors::dev::dev_signers(&config.mnemonic, config.accounts)
            .map_err(|e| NodeError::Keys(e.to_string()))?;
        let imported = crate::chainfile::stored_config(&chain).map_err(NodeError::ChainConfig)?;
        let (head, spec, blob_params) = match imported {
            Some(chain_config) => {
                let head = chain.head_number().unwrap_or_default();
                let header = chain
                    .header(head)
                    .map_err(NodeError::Genesis)?
                    .ok_or(NodeError::Genesis(StorageError::Corrupt { what: "head header" }))?;
                // The imported chain's id replaces --chain-id: transactions signed for it must
                // be accepted, and eth_chainId must name it.
                config.chain_id = chain_config.chain_id;
                config.gas_limit = header.gas_limit;
                let rules = chain_config.rules_for(&header);
                let spec = rules.spec;
                info!(target: "node", head, chain_id = config.chain_id, ?spec, "imported chain opened");
                (head, spec, Some(rules.blob_params))
            }
            None => {
                if chain.head_number().is_none() {
                    let dev = DevGenesis {
                        chain_id: config.chain_id,
                        spec: SPEC,
                        accounts: signers
                            .iter()
                            .map(|s| (s.address(), config.balance_wei))
                            .collect(),
                        gas_limit: config.gas_limit,
                        base_fee: GENESIS_BASE_FEE,
                        timestamp: clock(),
                    };
                    let genesis = Genesis::from_json(&dev.document())
                        .map_err(|e| NodeError::ChainConfig(e.into()))?;
                    let hash = crate::chainfile::write_genesis(&chain, &genesis)
                        .map_err(NodeError::ChainConfig)?;
                    info!(target: "node", %hash, "dev genesis written");
                }
                (chain.head_number().unwrap_or_default(), SPEC, None)
            }
        };
        info!(target: "node", head, db_cache_bytes = config.db_cache_bytes, "chain opened");
        let forks = Arc::new(chain_forks(&chain)?);

        let mailbox = config.mailbox;
        let code_cache = CodeCacheActor::new(config.code_cache_entries);
        let mut restarts = vec![("code_cache", code_cache.restart_counter())];
        let code_cache = code_cache.start_bounded(mailbox);
        info!(target: "node", entries = config.code_cache_entries.get(), "code cache sized");
        let l2 =
            CodeL2 { get: code_cache.clone().recipient(), insert: code_cache.clone().recipient() };
        let exec_config = ExecConfig {
            chain_id: config.chain_id,
            spec,
            gas_cap: config.rpc.gas_cap,
            evm_timeout: Some(config.evm_timeout),
            blob_params,
        };
        let exec_chain = chain.clone();
        // `make` runs on each executor thread as it starts. The permits bound what is in
        // flight over all lanes, so a mailbox of that size is never full.
        let lanes = hearth_actors::executor::start_pool(
            config.executor_threads.get(),
            config.max_in_flight,
            move || {
                crate::os::lower_this_thread_priority(crate::os::EXECUTOR_NICE);
                ExecutorActor::new(exec_chain.clone(), exec_config, Some(l2.clone()))
            },
        );
        let executor = ExecutorClient::with_lanes(lanes, config.max_in_flight.get())
            .with_admission_wait(config.admission_wait);
        let state = StateActor::new(chain.clone()).start_bounded(mailbox);
        // The filter and subscription actors say when they have clients for an event kind, so
        // that nothing wakes them per block or transaction while nobody listens.
        let filter_actor = FilterActor::new(MAX_FILTERS);
        let filters_pending = filter_actor.pending_interest();
        restarts.push(("filters", filter_actor.restart_counter()));
        let filters = filter_actor.start_bounded(mailbox);
        let subscription_actor = SubscriptionActor::new(config.subscriptions);
        let (subs_blocks, subs_pending) =
            (subscription_actor.block_interest(), subscription_actor.pending_interest());
        restarts.push(("subscriptions", subscription_actor.restart_counter()));
        let subscriptions = subscription_actor.start_bounded(mailbox);
        // The state actor's mailbox was just made and is empty, so this cannot be refused.
        state
            .try_send(SubscribeBlocks(subscriptions.clone().recipient(), subs_blocks))
            .map_err(|_| NodeError::Wiring("the state actor refused the block subscription"))?;
        // The mempool and the miner exchange three messages per block (take, mined, take
        // again): on one thread those are task switches instead of thread wake-ups.
        let pool_and_miner = actix::Arbiter::new();
        let mempool = MempoolActor::new(
            chain.clone(),
            MempoolConfig {
                chain_id: config.chain_id,
                spec,
                block_gas_limit: config.gas_limit,
                max_count: config.txpool_max_count.get(),
                max_bytes: config.txpool_max_bytes,
            },
        )
        .notify_admitted(filters.clone().recipient(), filters_pending)
        .notify_admitted(subscriptions.clone().recipient(), subs_pending);
        restarts.push(("mempool", mempool.restart_counter()));
        let mempool = hearth_actors::start_on(&pool_and_miner.handle(), mempool, mailbox);
        let miner = MinerActor::new(
            chain.clone(),
            MinerPeers {
                take_pending: mempool.clone().recipient(),
                txs_mined: mempool.clone().recipient(),
                executor: executor.clone(),
                commit: state.clone().recipient(),
            },
            MinerConfig {
                automine: config.automine,
                interval: config.interval,
                gas_limit: config.gas_limit,
                coinbase: Address::ZERO,
                clock,
                // Fixed, so random block times repeat from run to run with the same settings.
                seed: config.chain_id,
            },
        );
        restarts.push(("miner", miner.restart_counter()));
        let miner = hearth_actors::start_on(&pool_and_miner.handle(), miner, mailbox);
        info!(
            target: "node",
            threads = config.executor_threads.get(),
            max_in_flight = config.max_in_flight.get(),
            admission_wait = ?config.admission_wait,
            "actors started"
        );
        Ok(Self {
            chain,
            state,
            mempool,
            miner,
            code_cache,
            executor,
            signers: Arc::new(signers),
            rpc_metrics: Arc::default(),
            forks,
            filters,
            subscriptions,
            restarts,
            config,
        })
    }

    /// Subscribes `recipient` to every committed block (extension actors use this).
    pub async fn subscribe_blocks(&self, recipient: actix::Recipient<BlockCommitted>) {
        // The state actor is alive for the node's lifetime; a closed mailbox means shutdown.
        let _ = self.state.send(SubscribeBlocks(recipient, Interest::always())).await;
    }

    /// What the RPC front needs, with `extensions` added to the core method table.
    pub fn rpc_context(&self, extensions: Extensions) -> RpcContext {
        RpcContext {
            chain: self.chain.clone(),
            executor: self.executor.clone(),
            submit_tx: self.mempool.clone().recipient(),
            submit_filled: self.mempool.clone().recipient(),
            get_pooled_tx: self.mempool.clone().recipient(),
            pending_nonce: self.mempool.clone().recipient(),
            auto_mine: self.miner.clone().recipient(),
            mine_blocks: self.miner.clone().recipient(),
            controls: Controls {
                submit_txs: self.mempool.clone().recipient(),
                is_impersonated: self.mempool.clone().recipient(),
                set_impersonated: self.mempool.clone().recipient(),
                set_auto_impersonate: self.mempool.clone().recipient(),
                pool_content: self.mempool.clone().recipient(),
                drop_tx: self.mempool.clone().recipient(),
                set_pool_gas_limit: self.mempool.clone().recipient(),
                revalidate: self.mempool.clone().recipient(),
                mine_spaced: self.miner.clone().recipient(),
                set_interval_mining: self.miner.clone().recipient(),
                set_automine: self.miner.clone().recipient(),
                set_block_param: self.miner.clone().recipient(),
                mining_status: self.miner.clone().recipient(),
                save_clock: self.miner.clone().recipient(),
                restore_clock: self.miner.clone().recipient(),
                patch_state: self.state.clone().recipient(),
                take_snapshot: self.state.clone().recipient(),
                revert_to: self.state.clone().recipient(),
            },
            // Without unlocked accounts the front knows no key: eth_accounts is empty and a
            // dev account is as unknown to eth_sendTransaction as any other.
            signers: if self.config.unlocked_accounts {
                Arc::clone(&self.signers)
            } else {
                Arc::default()
            },
            api: self.config.api,
            web: Arc::new(self.config.web.clone()),
            chain_id: self.config.chain_id,
            forks: Arc::clone(&self.forks),
            limits: self.config.rpc,
            extensions,
            client_version: format!("hearth/v{}", env!("CARGO_PKG_VERSION")),
            metrics: Arc::clone(&self.rpc_metrics),
            filters: hearth_rpc::FilterRecipients {
                install: self.filters.clone().recipient(),
                poll: self.filters.clone().recipient(),
                get: self.filters.clone().recipient(),
                uninstall: self.filters.clone().recipient(),
            },
            subscriptions: hearth_rpc::SubscriptionRecipients {
                connect: self.subscriptions.clone().recipient(),
                disconnect: self.subscriptions.clone().recipient(),
                subscribe: self.subscriptions.clone().recipient(),
                unsubscribe: self.subscriptions.clone().recipient(),
                stats: self.subscriptions.clone().recipient(),
            },
            metric_sources: hearth_rpc::MetricSources {
                pool_size: self.mempool.clone().recipient(),
                pool_counters: self.mempool.clone().recipient(),
                code_cache: self.code_cache.clone().recipient(),
                restarts: self.restarts.clone(),
            },
        }
    }

    /// Binds the JSON-RPC server on the configured address. Returns the server (await it to
    /// run until shutdown) and the bound address.
    pub fn serve_rpc(
        &self,
        extensions: Extensions,
    ) -> Result<(actix_web::dev::Server, SocketAddr), NodeError> {
        let addr = self.config.http_addr;
        let workers = self.config.http_workers.get();
        for warning in self.config.exposure_warnings() {
            tracing::warn!(target: "node", "{warning}");
        }
        hearth_rpc::serve(addr, self.rpc_context(extensions), workers)
            .map_err(|source| NodeError::Bind { addr, source })
    }

    /// The configuration the node runs with.
    pub const fn config(&self) -> &NodeConfig {
        &self.config
    }
}
