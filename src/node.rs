//! Wiring: the only place that sees every crate. Opens storage, writes genesis, starts every
//! actor with a bounded mailbox, and hands the RPC front its clients.
//!
//! Message flow for a transaction (see ARCHITECTURE.md):
//! RPC -> MempoolActor (ThenMine: admit, then) -> MinerActor (AutoMine) -> MempoolActor
//! (TakePending) -> BuildBlock (a small block on the miner's thread, else the executor pool)
//! -> StateActor (CommitBlock) -> subscribers (BlockCommitted) -> MempoolActor (TxsMined)
//! -> MempoolActor's answer -> reply. The mempool, the miner and, for a chain in memory that
//! is not a fork, the state owner share one thread. New blocks and admitted transactions also reach the
//! SubscriptionActor (BlockCommitted, TxsAdmitted), which queues notifications for each
//! WebSocket connection that subscribed.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Addr, Recipient};
use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;
use hearth_actors::engine::{EngineActor, EngineConfig, EnginePeers};
use hearth_actors::miner::{Clock, HeadWrites, system_clock};
use hearth_actors::{
    CodeCacheActor, CodeL2, ExecConfig, ExecutorActor, FilterActor, MempoolActor, MempoolConfig,
    MinerActor, MinerConfig, MinerPeers, StateActor, SubscriptionActor,
};
use hearth_messages::ChainId;
use hearth_messages::code_cache::CodeCacheClient;
use hearth_messages::console::ConsoleSink;
use hearth_messages::engine::EngineClient;
use hearth_messages::executor::ExecutorClient;
use hearth_messages::filters::FilterClient;
use hearth_messages::interest::Interest;
use hearth_messages::mempool::MempoolClient;
use hearth_messages::miner::MinerClient;
use hearth_messages::state::{
    BlockCommitted, Settle, StateClient, SubscribeBlocks, SubscribeRemovals,
};
use hearth_messages::subscriptions::SubscriptionClient;
use hearth_rpc::{Extensions, LogSwitch, NodeFacts, RpcContext};
use hearth_storage::{ChainDb, ChainWriter, StorageError};
use revm::primitives::hardfork::SpecId;
use tracing::info;

use crate::config::{NodeConfig, StorageMode};
use crate::genesis::{ChainConfig, DevGenesis, Genesis};

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
    /// A read replica's leader could not be reached or read (`--follow`).
    #[error("--follow: {0}; start the leader first, or check the URL")]
    Leader(#[from] hearth_actors::follow::leader::LeaderError),
    /// A read replica's chain is not its leader's.
    #[error(
        "--follow {leader}: the leader's genesis block is {theirs}, this node's is {ours}: start the replica with the leader's chain flags (--chain-id, --init, --accounts, --balance, --mnemonic, --hardfork, --timestamp) and a new --datadir"
    )]
    OtherChain {
        /// The leader's URL.
        leader: String,
        /// The leader's genesis hash.
        theirs: alloy_primitives::B256,
        /// This node's.
        ours: alloy_primitives::B256,
    },
    /// The chain to fork could not be reached or read (`--fork-url`).
    #[error(transparent)]
    Fork(#[from] crate::fork::ForkStartError),
    /// A store written before the address index existed could not be indexed.
    #[error(transparent)]
    AddressIndex(#[from] crate::address_index::IndexError),
    /// `--fork-transaction-hash`'s earlier transactions could not be replayed.
    #[error(transparent)]
    ForkReplay(#[from] crate::fork::before_tx::ReplayError),
    /// `--authrpc.jwtsecret` could not be read or created.
    #[error("--authrpc.jwtsecret {}: {reason}", path.display())]
    JwtSecret {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, and what to do.
        reason: String,
    },
    /// `--ipc`'s socket could not be made.
    #[error("cannot serve JSON-RPC on --ipc {}: {source}", path.display())]
    Ipc {
        /// The socket's path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--artifacts` could not be read.
    #[error(transparent)]
    Artifacts(#[from] hearth_actors::report::artifacts::ArtifactsError),
    /// Dev keys could not be derived.
    #[error("cannot derive dev accounts from --mnemonic: {0}")]
    Keys(String),
    /// Two actors could not be connected at startup (a bug: fresh mailboxes have room).
    #[error("internal error while starting: {0}")]
    Wiring(&'static str),
    /// A flag asks for other rules or another chain id than the existing chain runs.
    #[error(
        "{flag} {given} does not match the chain in {path}, which runs {runs}: leave {flag} out \
         to run that chain, or start a new one elsewhere (another --datadir, or none for one in \
         memory)"
    )]
    Mismatch {
        /// The flag.
        flag: &'static str,
        /// Its value.
        given: String,
        /// What the chain runs.
        runs: String,
        /// Where the chain is.
        path: String,
    },
    /// The chain could not be read.
    #[error("cannot read the chain: {0}")]
    Read(StorageError),
    /// The `--load-state` dump could not be written into the new chain.
    #[error("cannot load the state dump into the chain: {0}")]
    LoadState(StorageError),
    /// The head state could not be dumped to `--dump-state` at shutdown.
    #[error("cannot write the state dump {} (--dump-state): {reason}", path.display())]
    DumpState {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// `--config-out` could not be written.
    #[error("cannot write --config-out {}: {source}", path.display())]
    ConfigOut {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
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
    /// The store's writer, which the state actor owns; kept here only for the final
    /// checkpoint at shutdown ([`Node::checkpoint`]), after the RPC front has stopped.
    writer: ChainWriter,
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
    pub fork_table: Arc<hearth_rpc::ChainForks>,
    /// The restartable actors' restart counters (for `/metrics`).
    pub restarts: Vec<(&'static str, hearth_messages::restarts::RestartCounter)>,
    /// The chain id every component reads (the pool writes it: anvil_setChainId).
    pub chain_id: ChainId,
    /// Whether informational logging is on (anvil_setLoggingEnabled flips it; `main`'s log
    /// subscriber reads it).
    pub logging: LogSwitch,
    /// What anvil_nodeInfo and anvil_metadata report about this run.
    pub facts: NodeFacts,
    /// Whether this start wrote the genesis (a new chain) rather than opening an existing one.
    pub new_chain: bool,
    /// The fork backend, when the node forks a live chain (`--fork-url`).
    pub fork: Option<Arc<crate::fork::ForkHandle>>,
    /// The fork backend's counters on `/metrics`: the running fork's, or (on a dev chain) the
    /// ones an anvil_reset into a fork will count in.
    pub fork_counters: Arc<hearth_messages::fork::ForkCounters>,
    /// Serves anvil_reset (`None` for a node started on a given store: [`Node::start_on`]).
    pub reset: Option<Addr<crate::reset::Resetter>>,
    /// A read replica's link to its leader (`--follow`): its follower and its gauges.
    pub replica: Option<hearth_rpc::Replica>,
    /// What the node prints of committed blocks (the miner's, and the Engine API's).
    show: hearth_actors::Show,
    config: NodeConfig,
}

/// The fork schedule of the chain in `chain`: an imported chain's stored configuration, else
/// the configuration of the genesis document block 0 was made from (a dev chain's), else
/// none (a store written before genesis documents were kept).
fn chain_forks(chain: &ChainDb) -> Result<hearth_rpc::ChainForks, NodeError> {
    if let Some(config) = crate::chainfile::stored_config(chain).map_err(NodeError::ChainConfig)? {
        return Ok(config.forks());
    }
    Ok(stored_dev_config(chain)?.map(|config| config.forks()).unwrap_or_default())
}

/// The name of a fork as `--hardfork` spells it (`prague`).
pub fn fork_name(spec: SpecId) -> String {
    spec.to_string().to_lowercase()
}

/// The dev accounts' keys, derived from `--mnemonic` along `--derivation-path`.
fn dev_signers(config: &NodeConfig) -> Result<Vec<PrivateKeySigner>, NodeError> {
    hearth_actors::dev::dev_signers_at(&config.mnemonic, &config.derivation_path, config.accounts)
        .map_err(|e| NodeError::Keys(e.to_string()))
}

/// `clock` moved so that it reads `start` now and advances with it from there: a genesis
/// timestamp given by flag, from which later blocks continue (as anvil's `--timestamp`).
fn clock_from(clock: Clock, start: u64) -> Clock {
    let at_start = clock();
    std::sync::Arc::new(move || start.saturating_add(clock().saturating_sub(at_start)))
}

/// What the node does when it is told to stop (SIGINT/SIGTERM), cloneable so the signal task
/// can start it while the HTTP server finishes its requests. See [`Drain::run`].
#[derive(Debug, Clone)]
pub struct Drain {
    executor: ExecutorClient,
    miner: Addr<MinerActor>,
}

impl Drain {
    /// Drains the actors that hold requests: the executor pool refuses new requests and each
    /// executor answers those still queued for it with "the node is shutting down" (-32005),
    /// unrun, once the one it runs finishes, so no caller hangs until the HTTP server's timeout;
    /// then the miner starts no block and this returns once the block in progress, if any, is
    /// committed. Idempotent. The caller checkpoints the journal after it
    /// ([`Node::checkpoint`]).
    pub async fn run(&self) {
        self.executor.close();
        if self.miner.send(hearth_messages::miner::StopMining).await.is_err() {
            tracing::debug!(target: "node", "the miner had already stopped");
        }
    }
}

impl Node {
    /// The shutdown drain of this node (see [`Drain::run`]).
    pub fn drain(&self) -> Drain {
        Drain { executor: self.executor.clone(), miner: self.miner.clone() }
    }

    /// Opens storage and starts every actor, with the wall clock stamping blocks.
    pub fn start(config: NodeConfig) -> Result<Self, NodeError> {
        Self::start_with_clock(config, system_clock())
    }

    /// Like [`Node::start`], with block timestamps from `clock` (tests pass a fixed one).
    pub fn start_with_clock(mut config: NodeConfig, clock: Clock) -> Result<Self, NodeError> {
        if !config.artifacts.is_empty() {
            config.show.artifacts = Arc::new(load_artifacts(&config.artifacts)?);
        }
        // As given: a reset builds the genesis a start would, whatever the start changed.
        let given = config.clone();
        if let Some(settings) = config.fork.clone() {
            let addresses: Vec<Address> =
                dev_signers(&config)?.iter().map(|s| s.address()).collect();
            let start = crate::fork::ForkStart {
                dev_accounts: &addresses,
                balance: config.balance_wei,
                cache: None,
                counters: None,
            };
            let (chain, handle) = crate::fork::open_fork(&settings, start)?;
            config.chain_id = handle.chain_id;
            if let Some(plan) = &handle.replay {
                crate::fork::before_tx::replay_at_start(
                    &chain,
                    plan,
                    handle.chain_id,
                    config.given.hardfork.then_some(config.spec),
                    config.code_size_limit,
                )?;
            }
            let mut node = Self::start_on(chain, config, Arc::clone(&clock))?;
            node.executor.set_fork_reads(true);
            node.fork_counters = Arc::clone(&handle.counters);
            node.reset = Some(node.start_resetter(given, clock, Some((settings, &handle))));
            node.fork = Some(Arc::new(handle));
            return Ok(node);
        }
        let chain = match &config.storage {
            StorageMode::Disk(path) => {
                ChainWriter::open_with_cache(path, config.db_cache_bytes).map_err(|source| {
                    NodeError::OpenStorage { path: path.display().to_string(), source }
                })?
            }
            StorageMode::Ephemeral => ChainWriter::in_memory()
                .map_err(|source| NodeError::OpenStorage { path: "memory".into(), source })?,
        };
        let mut node = Self::start_on(chain, config, Arc::clone(&clock))?;
        node.reset = Some(node.start_resetter(given, clock, None));
        node.replica = node.config.follow.clone().map(|follow| node.start_follower(&follow));
        Ok(node)
    }

    /// The actor that serves anvil_reset for this node, started as `given` says.
    fn start_resetter(
        &self,
        given: NodeConfig,
        clock: Clock,
        fork: Option<(crate::config::ForkSettings, &crate::fork::ForkHandle)>,
    ) -> Addr<crate::reset::Resetter> {
        let accounts = self.signers.iter().map(|s| s.address()).collect();
        let peers = crate::reset::ResetPeers {
            miner: self.miner.clone(),
            mempool: self.mempool.clone(),
            filters: self.filters.clone(),
            chain_id: self.chain_id.clone(),
            fork_counters: Arc::clone(&self.fork_counters),
            executor: self.executor.clone(),
        };
        crate::reset::Resetter::new(given, accounts, clock, fork, peers).start_own()
    }

    /// Like [`Node::start_with_clock`], on an already opened store (tests that import a chain
    /// first). A store holding an imported chain runs under its stored chain id and fork rules
    /// (see `hearth import`); any other gets the dev genesis and dev rules.
    pub fn start_on(
        chain: ChainWriter,
        mut config: NodeConfig,
        clock: Clock,
    ) -> Result<Self, NodeError> {
        let signers = dev_signers(&config)?;
        let where_ = match &config.storage {
            StorageMode::Disk(path) => path.display().to_string(),
            StorageMode::Ephemeral => "memory".to_owned(),
        };
        let imported = crate::chainfile::stored_config(&chain).map_err(NodeError::ChainConfig)?;
        // An imported chain crossed forks: trace replays follow its schedule block by block.
        let forks: Option<std::sync::Arc<dyn hearth_messages::trace::ForkSchedule>> =
            imported.clone().map(|c| std::sync::Arc::new(c) as _);
        let opened = OpenedChain::open(&chain, &mut config, imported, clock, &signers, &where_)?;
        if !opened.new_chain {
            warn_genesis_only_flags(&config, &where_);
        }
        config.spec = opened.spec;
        log_chain_opened(&config, opened.head);
        load_state_dump(&chain, &mut config)?;
        let fork_table = Arc::new(chain_forks(&chain)?);
        let chain_id = ChainId::new(config.chain_id);
        let wiring = Wiring {
            chain: &chain,
            config: &config,
            opened: &opened,
            chain_id: chain_id.clone(),
            restarts: vec![],
        };
        let Actors {
            show,
            state,
            mempool,
            miner,
            code_cache,
            executor,
            filters,
            subscriptions,
            restarts,
        } = wiring.start(forks)?;
        Ok(Self {
            chain: chain.reader(),
            writer: chain,
            state,
            mempool,
            miner,
            code_cache,
            executor,
            signers: Arc::new(signers),
            rpc_metrics: Arc::default(),
            fork_table,
            filters,
            subscriptions,
            restarts,
            chain_id,
            logging: LogSwitch::default(),
            facts: NodeFacts {
                transaction_order: config.order.name().to_owned(),
                ..NodeFacts::new(<&'static str>::from(opened.spec))
            },
            new_chain: opened.new_chain,
            fork: None,
            fork_counters: hearth_messages::fork::ForkCounters::shared(),
            reset: None,
            replica: None,
            show,
            config,
        })
    }

    /// Applies what is deferred, flushes the store and empties its commit journal, so that the
    /// next start has nothing to replay (shutdown).
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        self.writer.checkpoint()
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
            mempool: MempoolClient::new(&self.mempool),
            miner: MinerClient::new(&self.miner),
            state: StateClient::new(&self.state),
            // Without unlocked accounts the front knows no key: eth_accounts is empty and a
            // dev account is as unknown to eth_sendTransaction as any other.
            signers: if self.config.unlocked_accounts {
                Arc::clone(&self.signers)
            } else {
                Arc::default()
            },
            api: self.config.api,
            web: Arc::new(self.config.web.clone()),
            chain_id: self.chain_id.clone(),
            node: self.facts.clone(),
            logging: self.logging.clone(),
            gas_price: self.config.gas_price,
            forks: Arc::clone(&self.fork_table),
            limits: self.config.rpc,
            extensions,
            client_version: hearth_rpc::client_version(),
            metrics: Arc::clone(&self.rpc_metrics),
            filters: FilterClient::new(&self.filters),
            subscriptions: SubscriptionClient::new(&self.subscriptions),
            reset: self.reset.as_ref().map(|r| r.clone().recipient()),
            fork_url: self.reset.as_ref().map(|r| r.clone().recipient()),
            surface: hearth_rpc::Surface::Public,
            engine: None,
            replica: self.replica.clone(),
            metric_sources: hearth_rpc::MetricSources {
                code_cache: CodeCacheClient::new(&self.code_cache),
                restarts: self.restarts.clone(),
                // On every node that runs a fork or can reset into one (zeros until it does).
                fork: (self.fork.is_some() || self.reset.is_some())
                    .then(|| Arc::clone(&self.fork_counters)),
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
        hearth_rpc::serve(addr, &self.config.more_http_ips, self.rpc_context(extensions), workers)
            .map_err(|source| NodeError::Bind { addr, source })
    }

    /// Binds the Engine API port (`--authrpc.*`), when configured: the same server with a
    /// context that serves the engine methods and the spec's `eth_` subset, each request
    /// checked for a JWT made with the secret in `--authrpc.jwtsecret` (created when missing).
    pub fn serve_engine(&self) -> Result<Option<(actix_web::dev::Server, SocketAddr)>, NodeError> {
        let Some(auth) = &self.config.authrpc else { return Ok(None) };
        if self.config.automine || self.config.interval.is_some() {
            tracing::warn!(target: "node", "the node also makes blocks of its own (automine or --block-time) beside the Engine API's; start it with --no-mining so that only the consensus client or sequencer makes blocks");
        }
        let secret = crate::jwt::load_or_create(&auth.jwt_secret)?;
        let mut ctx = self.rpc_context(Extensions::default());
        ctx.surface = hearth_rpc::Surface::Engine(std::sync::Arc::new(secret));
        let config =
            EngineConfig { same_second_blocks: auth.same_second_blocks, dev_leader: false };
        ctx.engine = Some(EngineClient::new(&self.start_engine(config)));
        // Only authenticated requests are read (the JWT is checked before the body).
        ctx.limits.max_body_bytes = hearth_rpc::ENGINE_MAX_BODY_BYTES;
        ctx.limits.max_response_bytes =
            ctx.limits.max_response_bytes.max(hearth_rpc::ENGINE_MAX_BODY_BYTES);
        let workers = self.config.http_workers.get();
        let served = hearth_rpc::serve(auth.addr, &[], ctx, workers)
            .map_err(|source| NodeError::Bind { addr: auth.addr, source })?;
        tracing::info!(target: "node", addr = %served.1, secret = %auth.jwt_secret.display(), "Engine API listening (JWT)");
        Ok(Some(served))
    }

    /// Starts a read replica's follower (`--follow`), which imports the leader's blocks through
    /// an engine actor of its own; the link the RPC front forwards writes and reads health by.
    fn start_follower(&self, follow: &crate::config::FollowSettings) -> hearth_rpc::Replica {
        use hearth_actors::follow::{EngineTarget, FollowerActor, FollowerConfig};
        let engine = EngineClient::new(
            &self.start_engine(EngineConfig { same_second_blocks: false, dev_leader: true }),
        );
        let gauges = Arc::new(hearth_messages::follow::FollowGauges::default());
        let config = FollowerConfig {
            leader: follow.leader.clone(),
            poll: follow.poll,
            max_wait: follow.max_lag_time,
            timeout: LEADER_TIMEOUT,
        };
        let target = EngineTarget::new(engine, MinerClient::new(&self.miner), self.chain.clone());
        let follower = FollowerActor::new(config, target, self.chain.clone(), Arc::clone(&gauges))
            .start_bounded(self.config.mailbox);
        hearth_rpc::Replica {
            leader: follow.leader.clone(),
            follower: hearth_messages::follow::FollowerClient::new(&follower),
            gauges,
            max_lag: follow.max_lag,
            max_lag_time: follow.max_lag_time,
        }
    }

    /// Starts the engine actor, which the Engine API port's calls go to.
    fn start_engine(&self, config: EngineConfig) -> Addr<EngineActor> {
        let peers = EnginePeers {
            executor: self.executor.clone(),
            miner: MinerClient::new(&self.miner),
            take_pending: self.mempool.clone().recipient(),
            txs_mined: self.mempool.clone().recipient(),
            marks: self.state.clone().recipient(),
            show: self.show.clone(),
        };
        EngineActor::new(self.chain.clone(), peers, config).start_bounded(self.config.mailbox)
    }

    /// The configuration the node runs with.
    pub const fn config(&self) -> &NodeConfig {
        &self.config
    }
}

/// How long one request of a replica to its leader may take (a forwarded
/// eth_sendRawTransactionSync waits for its block there).
const LEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// What opening the store found: its head, the rules it runs, and what the miner starts from.
struct OpenedChain {
    head: u64,
    spec: SpecId,
    /// The chain's own blob schedule, when its rules name one (else the spec's default).
    blob_params: Option<alloy_eips::eip7840::BlobParams>,
    /// The beneficiary of the blocks this node mines.
    coinbase: Address,
    /// Whether this start made the chain (a dev genesis or a fork's first block written).
    new_chain: bool,
    /// Stamps mined blocks (moved to `--timestamp` on a new dev chain).
    clock: Clock,
}

impl OpenedChain {
    /// Opens the chain in `chain` (an imported chain, a fork, or a dev chain; a new dev chain
    /// when the store is empty) and settles in `config` what the chain decides over the flags:
    /// its chain id and gas limit.
    fn open(
        chain: &ChainWriter,
        config: &mut NodeConfig,
        imported: Option<ChainConfig>,
        clock: Clock,
        signers: &[PrivateKeySigner],
        where_: &str,
    ) -> Result<Self, NodeError> {
        match imported {
            Some(chain_config) => Self::imported(chain, config, &chain_config, clock, where_),
            None if chain.fork().is_some() => Self::fork(chain, config, clock),
            None if chain.head_number().is_none() => Self::new_dev(chain, config, clock, signers),
            None => Self::dev(chain, config, clock, where_),
        }
    }

    /// A chain written by `hearth import`: its stored id and rules, at its head.
    fn imported(
        chain: &ChainWriter,
        config: &mut NodeConfig,
        chain_config: &ChainConfig,
        clock: Clock,
        where_: &str,
    ) -> Result<Self, NodeError> {
        let head = chain.head_number().unwrap_or_default();
        let header = chain
            .header(head)
            .map_err(NodeError::Genesis)?
            .ok_or(NodeError::Genesis(StorageError::Corrupt { what: "head header" }))?;
        let rules = chain_config.rules_for(&header);
        let spec = rules.spec;
        check_given(config, chain_config.chain_id, spec, where_)?;
        // The imported chain's id replaces the default: transactions signed for it must
        // be accepted, and eth_chainId must name it.
        config.chain_id = chain_config.chain_id;
        config.gas_limit = header.gas_limit;
        info!(target: "node", head, chain_id = config.chain_id, ?spec, "imported chain opened");
        let blob_params = Some(rules.blob_params);
        Ok(Self { head, spec, blob_params, coinbase: Address::ZERO, new_chain: false, clock })
    }

    /// A fork: its first block is the upstream's, its id the upstream's (or the flag's).
    fn fork(chain: &ChainWriter, config: &mut NodeConfig, clock: Clock) -> Result<Self, NodeError> {
        let head = chain.head_number().unwrap_or_default();
        let header = chain
            .header(head)
            .map_err(NodeError::Genesis)?
            .ok_or(NodeError::Genesis(StorageError::Corrupt { what: "fork header" }))?;
        config.gas_limit = header.gas_limit;
        // The upstream's rules at the fork block, not the dev default (`fork::rules`).
        let given = config.given.hardfork.then_some(config.spec);
        let rules = crate::fork::rules::of(config.chain_id, &header, given);
        info!(target: "node", spec = %fork_name(rules.spec), from = %rules.source, "fork rules");
        Ok(Self {
            head,
            spec: rules.spec,
            blob_params: rules.blob_params,
            coinbase: header.beneficiary,
            new_chain: true,
            clock,
        })
    }

    /// An empty store: a new dev chain, its genesis written now.
    fn new_dev(
        chain: &ChainWriter,
        config: &NodeConfig,
        mut clock: Clock,
        signers: &[PrivateKeySigner],
    ) -> Result<Self, NodeError> {
        let timestamp = config.genesis.timestamp.unwrap_or_else(|| clock());
        let addresses: Vec<Address> = signers.iter().map(|s| s.address()).collect();
        write_dev_genesis(chain, config, &addresses, config.chain_id, timestamp)?;
        if let Some(start) = config.genesis.timestamp {
            clock = clock_from(clock, start);
        }
        let coinbase = config.genesis.coinbase;
        Ok(Self { head: 0, spec: config.spec, blob_params: None, coinbase, new_chain: true, clock })
    }

    /// A dev chain written by an earlier start.
    fn dev(
        chain: &ChainWriter,
        config: &mut NodeConfig,
        clock: Clock,
        where_: &str,
    ) -> Result<Self, NodeError> {
        let head = chain.head_number().unwrap_or_default();
        let genesis = chain
            .header(0)
            .map_err(NodeError::Genesis)?
            .ok_or(NodeError::Genesis(StorageError::Corrupt { what: "genesis header" }))?;
        // The genesis document names the chain's id and rules; a datadir written before
        // it was kept runs what the flags say, as it always did.
        let spec = match stored_dev_config(chain)? {
            Some(dev_config) => {
                let spec = dev_config.spec_at(0, genesis.timestamp);
                check_given(config, dev_config.chain_id, spec, where_)?;
                config.chain_id = dev_config.chain_id;
                spec
            }
            None => config.spec,
        };
        info!(target: "node", head, chain_id = config.chain_id, spec = %fork_name(spec), "dev chain opened");
        let coinbase = genesis.beneficiary;
        Ok(Self { head, spec, blob_params: None, coinbase, new_chain: false, clock })
    }
}

/// Says the chain is open, with the page cache where there is one: a chain in memory is a map
/// (`--cache.db` applies to datadirs only).
fn log_chain_opened(config: &NodeConfig, head: u64) {
    match &config.storage {
        StorageMode::Disk(_) => {
            info!(target: "node", head, db_cache_bytes = config.db_cache_bytes, "chain opened");
        }
        StorageMode::Ephemeral => info!(target: "node", head, "chain opened in memory"),
    }
}

/// Tells the operator that the flags which only shape a new chain's genesis were ignored: the
/// chain in `where_` existed already.
fn warn_genesis_only_flags(config: &NodeConfig, where_: &str) {
    if config.given.genesis_only.is_empty() {
        return;
    }
    tracing::warn!(
        target: "node",
        "{} only shape a new chain's genesis; the chain in {where_} has one already, so \
         they change nothing (start a new chain elsewhere to use them)",
        config.given.genesis_only.join(", ")
    );
}

/// Writes the `--load-state` dump into the head state, taking it out of `config`: the node
/// keeps its config, and a dump may be large.
fn load_state_dump(chain: &ChainWriter, config: &mut NodeConfig) -> Result<(), NodeError> {
    if let Some(loaded) = config.load_state.take() {
        // Before any actor starts, so it needs no owner (as the genesis); one patch of the
        // head state, so the chain starts with all of it or the start fails.
        let (root, _) =
            hearth_storage::load_accounts(chain, &loaded.accounts).map_err(NodeError::LoadState)?;
        info!(target: "node", accounts = loaded.accounts.len(), best_block_number = ?loaded.best_block_number, %root, "state dump loaded into the head state");
    }
    Ok(())
}

/// Every actor of a node, as [`Wiring::start`] started them.
struct Actors {
    show: hearth_actors::Show,
    state: Addr<StateActor>,
    mempool: Addr<MempoolActor>,
    miner: Addr<MinerActor>,
    code_cache: Addr<CodeCacheActor>,
    executor: ExecutorClient,
    filters: Addr<FilterActor>,
    subscriptions: Addr<SubscriptionActor>,
    restarts: Vec<(&'static str, hearth_messages::restarts::RestartCounter)>,
}

/// What starting the actors reads: the opened chain and the config, each actor with a mailbox
/// of `config.mailbox`. Each restartable actor adds its restart counter to `restarts` as it
/// starts (the order `/metrics` lists them in).
struct Wiring<'a> {
    chain: &'a ChainWriter,
    config: &'a NodeConfig,
    opened: &'a OpenedChain,
    /// The node's shared chain-id handle (the pool writes it: anvil_setChainId).
    chain_id: ChainId,
    restarts: Vec<(&'static str, hearth_messages::restarts::RestartCounter)>,
}

/// The actors that tell clients about new blocks and transactions, and whether they have
/// clients for admitted transactions.
struct Listeners {
    filters: Addr<FilterActor>,
    filters_pending: Interest,
    subscriptions: Addr<SubscriptionActor>,
    subs_pending: Interest,
    subs_console: Interest,
}

impl Wiring<'_> {
    /// Starts every actor, each after the peers it holds. `forks` is an imported chain's fork
    /// schedule, which trace replays follow.
    fn start(
        mut self,
        forks: Option<Arc<dyn hearth_messages::trace::ForkSchedule>>,
    ) -> Result<Actors, NodeError> {
        self.index_old_store(forks.as_ref())?;
        let (code_cache, l2) = self.start_code_cache();
        // The mempool and the miner exchange three messages per block (take, mined, take
        // again): on one thread those are task switches instead of thread wake-ups. A chain in
        // memory has no durable write to wait for, so its state owner joins them and a block's
        // commit is one more task switch (it applies a block to the store a moment after
        // answering it, so the miner answers first). A store on disk keeps its writer on a
        // thread of its own, so admission never waits behind a flush, and so does a fork,
        // whose state reads may wait on the upstream.
        let pool_and_miner = actix::Arbiter::new();
        let state = StateActor::new(self.chain.clone())
            .with_commit_threads(self.config.parallel.threads.get());
        let shared_state = match self.config.storage {
            StorageMode::Ephemeral => self.config.fork.is_none(),
            StorageMode::Disk(_) => false,
        };
        let state = if shared_state {
            hearth_actors::start_on(
                &pool_and_miner.handle(),
                state.sharing_a_thread(),
                self.config.mailbox,
            )
        } else {
            state.start_bounded(self.config.mailbox)
        };
        let listeners = self.start_listeners(&state)?;
        // The executors print calls' console output and the miner mined transactions'; both
        // hand it to the subscription actor too.
        let show = hearth_actors::Show {
            sink: ConsoleSink::new(
                listeners.subscriptions.clone().recipient(),
                listeners.subs_console.clone(),
            ),
            ..self.config.show.clone()
        };
        let executor = self.start_executor_pool(l2, forks, show.clone());
        let mempool = self.start_mempool(&pool_and_miner, &listeners);
        let settle = shared_state.then(|| state.clone().recipient());
        let miner =
            self.start_miner(&pool_and_miner, &mempool, &executor, (&state, settle), show.clone());
        info!(
            target: "node",
            threads = self.config.executor_threads.get(),
            max_queue_delay = ?self.config.admission.max_queue_delay,
            max_queued = self.config.admission.max_queued,
            "actors started"
        );
        let Listeners { filters, subscriptions, .. } = listeners;
        let restarts = self.restarts;
        Ok(Actors {
            show,
            state,
            mempool,
            miner,
            code_cache,
            executor,
            filters,
            subscriptions,
            restarts,
        })
    }

    /// The code cache the executors share, and their handle to it.
    fn start_code_cache(&mut self) -> (Addr<CodeCacheActor>, CodeL2) {
        let code_cache = CodeCacheActor::new(self.config.code_cache_entries);
        self.restarts.push(("code_cache", code_cache.restart_counter()));
        let code_cache = code_cache.start_bounded(self.config.mailbox);
        info!(target: "node", entries = self.config.code_cache_entries.get(), "code cache sized");
        let l2 =
            CodeL2 { get: code_cache.clone().recipient(), insert: code_cache.clone().recipient() };
        (code_cache, l2)
    }

    /// What every executor runs under.
    fn exec_config(&self, show: hearth_actors::Show) -> ExecConfig {
        let config = self.config;
        ExecConfig {
            chain_id: self.chain_id.clone(),
            spec: self.opened.spec,
            gas_cap: config.rpc.gas_cap,
            evm_timeout: Some(config.evm_timeout),
            blob_params: self.opened.blob_params,
            code_size_limit: config.code_size_limit,
            parallel: config.parallel,
            show,
        }
    }

    /// Indexes the addresses of a store an older Hearth wrote (`address_index`), with an
    /// executor of its own, before any actor can write to the store.
    fn index_old_store(
        &self,
        forks: Option<&Arc<dyn hearth_messages::trace::ForkSchedule>>,
    ) -> Result<(), NodeError> {
        if self.chain.head_number().is_none()
            || self.chain.address_index_from().ok().flatten().is_some()
        {
            return Ok(());
        }
        let show = hearth_actors::Show::default();
        let executor = ExecutorActor::new(self.chain.reader(), self.exec_config(show), None);
        let mut executor = match forks {
            Some(forks) => executor.with_fork_schedule(Arc::clone(forks)),
            None => executor,
        };
        Ok(crate::address_index::index_old_store(self.chain, &mut executor)?)
    }

    /// The executor pool: `--executor.threads` executors, bounded by admission.
    fn start_executor_pool(
        &mut self,
        l2: CodeL2,
        forks: Option<Arc<dyn hearth_messages::trace::ForkSchedule>>,
        show: hearth_actors::Show,
    ) -> ExecutorClient {
        let config = self.config;
        let exec_config = self.exec_config(show);
        let exec_chain = self.chain.reader();
        // `make` runs on each executor thread as it starts. Admission caps what the pool holds
        // over all lanes, so a mailbox of that size is never full.
        let threads = config.executor_threads.get();
        let executor_mailbox =
            NonZeroUsize::new(ExecutorClient::mailbox_for(threads, config.admission))
                .expect("a mailbox for one thread and a block is at least 2");
        let executor_restarts = hearth_messages::restarts::RestartCounter::default();
        self.restarts.push(("executor", executor_restarts.clone()));
        // Every executor reads the same chain under the same rules; `l2` is the shared code
        // cache, which the pool's executors use.
        let make = std::sync::Arc::new(move |l2: Option<CodeL2>| {
            let executor = ExecutorActor::new(exec_chain.clone(), exec_config.clone(), l2);
            match &forks {
                Some(forks) => executor.with_fork_schedule(std::sync::Arc::clone(forks)),
                None => executor,
            }
        });
        // The RPC workers' own executors for cheap calls (`executor::inline`), and the miner's
        // for small blocks, made on each thread's first use, without the shared code cache:
        // asking it means waiting for another actor's reply, which neither thread does (its own
        // requests, or the cache itself on a test's single thread, would wait behind it). A
        // panic there counts among the executors' restarts.
        let inline = config.inline_budget.map(|budget| {
            let make = std::sync::Arc::clone(&make);
            let restarts = executor_restarts.clone();
            hearth_actors::executor::InlineExecutors::new(budget, move || {
                make(None).with_restart_counter(restarts.clone())
            })
        });
        let lanes = hearth_actors::executor::start_pool(threads, executor_mailbox, move || {
            crate::os::lower_this_thread_priority(crate::os::EXECUTOR_NICE);
            make(Some(l2.clone())).with_restart_counter(executor_restarts.clone())
        });
        let client = ExecutorClient::with_lanes(lanes, config.admission);
        match inline {
            Some(inline) => client.with_inline(Box::new(inline)),
            None => client,
        }
    }

    /// The filter and subscription actors, the latter subscribed to `state`'s blocks.
    fn start_listeners(&mut self, state: &Addr<StateActor>) -> Result<Listeners, NodeError> {
        let mailbox = self.config.mailbox;
        // The filter and subscription actors say when they have clients for an event kind, so
        // that nothing wakes them per block or transaction while nobody listens.
        let filter_actor = FilterActor::new(MAX_FILTERS);
        let filters_pending = filter_actor.pending_interest();
        let filters_logs = filter_actor.logs_interest();
        self.restarts.push(("filters", filter_actor.restart_counter()));
        let filters = filter_actor.start_bounded(mailbox);
        let subscription_actor = SubscriptionActor::new(self.config.subscriptions);
        let (subs_blocks, subs_pending, subs_console, subs_logs) = (
            subscription_actor.block_interest(),
            subscription_actor.pending_interest(),
            subscription_actor.console_interest(),
            subscription_actor.logs_interest(),
        );
        self.restarts.push(("subscriptions", subscription_actor.restart_counter()));
        let subscriptions = subscription_actor.start_bounded(mailbox);
        // The state actor's mailbox was just made and is empty, so these cannot be refused.
        let refused = |_| NodeError::Wiring("the state actor refused a block subscription");
        // Rewinds reach log subscriptions and log filters, whose undone logs are then
        // reported `removed: true`.
        let removals = [
            SubscribeRemovals(subscriptions.clone().recipient(), subs_logs),
            SubscribeRemovals(filters.clone().recipient(), filters_logs),
        ];
        for removal in removals {
            state.try_send(removal).map_err(refused)?;
        }
        state
            .try_send(SubscribeBlocks(subscriptions.clone().recipient(), subs_blocks))
            .map_err(|_| NodeError::Wiring("the state actor refused the block subscription"))?;
        Ok(Listeners { filters, filters_pending, subscriptions, subs_pending, subs_console })
    }

    /// The mempool, on `arbiter`, telling the listeners of admitted transactions.
    fn start_mempool(
        &mut self,
        arbiter: &actix::Arbiter,
        listeners: &Listeners,
    ) -> Addr<MempoolActor> {
        let (config, spec) = (self.config, self.opened.spec);
        let mempool = MempoolActor::new(
            self.chain.reader(),
            MempoolConfig {
                chain_id: self.chain_id.clone(),
                spec,
                blob_params: self
                    .opened
                    .blob_params
                    .unwrap_or_else(|| hearth_actors::exec::default_blob_params(spec)),
                block_gas_limit: config.gas_limit,
                code_size_limit: config.code_size_limit,
                max_count: config.txpool_max_count.get(),
                max_bytes: config.txpool_max_bytes,
                order: config.order,
                auto_impersonate: config.auto_impersonate,
                recover_threads: config.parallel.threads.get(),
            },
        )
        .notify_admitted(listeners.filters.clone().recipient(), listeners.filters_pending.clone())
        .notify_admitted(
            listeners.subscriptions.clone().recipient(),
            listeners.subs_pending.clone(),
        );
        self.restarts.push(("mempool", mempool.restart_counter()));
        hearth_actors::start_on(&arbiter.handle(), mempool, config.mailbox)
    }

    /// The miner, on `arbiter` beside the mempool it takes transactions from; `settle` is the
    /// state owner's when it shares that thread (`MinerPeers::settle`).
    fn start_miner(
        &mut self,
        arbiter: &actix::Arbiter,
        mempool: &Addr<MempoolActor>,
        executor: &ExecutorClient,
        (state, settle): (&Addr<StateActor>, Option<Recipient<Settle>>),
        show: hearth_actors::Show,
    ) -> Addr<MinerActor> {
        let config = self.config;
        let miner = MinerActor::new(
            self.chain.reader(),
            MinerPeers {
                take_pending: mempool.clone().recipient(),
                txs_mined: mempool.clone().recipient(),
                executor: executor.clone(),
                commit: state.clone().recipient(),
                rollback: state.clone().recipient(),
                replace: state.clone().recipient(),
                head_writes: HeadWrites::of(state),
                show,
                settle,
            },
            MinerConfig {
                automine: config.automine,
                interval: config.interval,
                gas_limit: config.gas_limit,
                coinbase: self.opened.coinbase,
                clock: Arc::clone(&self.opened.clock),
                // Fixed, so random block times repeat from run to run with the same settings.
                seed: config.chain_id,
            },
        );
        self.restarts.push(("miner", miner.restart_counter()));
        hearth_actors::start_on(&arbiter.handle(), miner, config.mailbox)
    }
}

/// Reads `--artifacts` (and the standard interfaces), saying how far it is every few hundred
/// files and what it found.
fn load_artifacts(
    dirs: &[std::path::PathBuf],
) -> Result<hearth_actors::report::Artifacts, NodeError> {
    let mut artifacts = hearth_actors::report::Artifacts::standard();
    for dir in dirs {
        let shown = dir.display();
        let loaded = artifacts.load_dir(dir, |files| {
            info!(target: "node", dir = %shown, files, "reading artifacts");
        })?;
        info!(target: "node", dir = %shown, contracts = loaded.contracts, skipped = loaded.skipped, "artifacts read");
    }
    Ok(artifacts)
}

/// Writes the genesis of a new dev chain into `chain`: the dev accounts funded, the flags'
/// allocations, chain id `chain_id`, stamped `timestamp`. At startup and on anvil_reset.
pub fn write_dev_genesis(
    chain: &ChainWriter,
    config: &NodeConfig,
    dev_accounts: &[Address],
    chain_id: u64,
    timestamp: u64,
) -> Result<alloy_primitives::B256, NodeError> {
    let dev = DevGenesis {
        chain_id,
        spec: config.spec,
        accounts: dev_accounts.iter().map(|a| (*a, config.balance_wei)).collect(),
        gas_limit: config.gas_limit,
        base_fee: config.genesis.base_fee,
        timestamp,
        coinbase: config.genesis.coinbase,
        create2_deployer: config.genesis.create2_deployer,
        alloc: config.genesis.alloc.clone(),
    };
    let genesis =
        Genesis::from_json(&dev.document()).map_err(|e| NodeError::ChainConfig(e.into()))?;
    let hash = crate::chainfile::write_genesis(chain, &genesis).map_err(NodeError::ChainConfig)?;
    info!(target: "node", %hash, spec = %fork_name(config.spec), "dev genesis written");
    Ok(hash)
}

/// The chain configuration in the genesis document of a dev chain, when the datadir keeps one.
fn stored_dev_config(chain: &ChainDb) -> Result<Option<ChainConfig>, NodeError> {
    let Some(bytes) = chain.genesis_document().map_err(NodeError::Genesis)? else {
        return Ok(None);
    };
    let corrupt = || NodeError::Genesis(StorageError::Corrupt { what: "stored genesis document" });
    let document: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| corrupt())?;
    let config = document.get("config").ok_or_else(corrupt)?;
    ChainConfig::from_json(config).map(Some).map_err(|_| corrupt())
}

/// Refuses a `--chain-id` or `--hardfork` given explicitly that differs from what the existing
/// chain runs: running the chain's own would ignore the flag, and the flag's would break the
/// chain.
fn check_given(
    config: &NodeConfig,
    chain_id: u64,
    spec: SpecId,
    path: &str,
) -> Result<(), NodeError> {
    let mismatch = |flag, given: String, runs: String| NodeError::Mismatch {
        flag,
        given,
        runs,
        path: path.to_owned(),
    };
    if config.given.chain_id && config.chain_id != chain_id {
        return Err(mismatch(
            "--chain-id",
            config.chain_id.to_string(),
            format!("chain id {chain_id}"),
        ));
    }
    if config.given.hardfork && config.spec != spec {
        return Err(mismatch("--hardfork", fork_name(config.spec), fork_name(spec)));
    }
    Ok(())
}
