//! What the RPC front is given at startup: read handles, clients and limits.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use alloy_signer_local::PrivateKeySigner;
use hearth_messages::ChainDb;
use hearth_messages::code_cache::CodeCacheClient;
use hearth_messages::executor::ExecutorClient;
use hearth_messages::filters::FilterClient;
use hearth_messages::mempool::MempoolClient;
use hearth_messages::miner::MinerClient;
use hearth_messages::state::StateClient;
use hearth_messages::subscriptions::SubscriptionClient;

use super::error::RpcError;
use super::params::{FromParams, Params};

/// A method added by an extension actor: takes the raw `params` JSON, answers a result or a
/// JSON-RPC error `(code, message)`.
pub type ExtensionMethod = Arc<
    dyn Fn(
            serde_json::Value,
        ) -> Pin<Box<dyn Future<Output = Result<serde_json::Value, (i32, String)>>>>
        + Send
        + Sync,
>;

/// RPC methods registered by actors outside the core, by name.
#[derive(Clone, Default)]
pub struct Extensions {
    methods: HashMap<String, ExtensionMethod>,
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Extensions {
    /// Registers `name`. A core method of the same name still wins.
    pub fn register(&mut self, name: impl Into<String>, method: ExtensionMethod) {
        self.methods.insert(name.into(), method);
    }

    /// Registers `name` with typed params, decoded as the core's methods decode theirs: `P` is
    /// a tuple of argument types (`(Address,)`, `(Address, Option<BlockId>)`; an `Option` may
    /// be left out or `null`), each read with the core's strict rules, and a request that does
    /// not decode is answered -32602 with the core's messages before `handler` runs. The
    /// handler's `Ok` is serialized as the result; its [`RpcError`] is answered with the core's
    /// code for it (an [`ActorError`](hearth_messages::client::ActorError) from a typed
    /// client's `ask` converts with `?`: a full mailbox is -32005).
    pub fn method<P, R, F, Fut>(&mut self, name: impl Into<String>, handler: F)
    where
        P: FromParams + 'static,
        R: serde::Serialize,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + 'static,
    {
        let handler = Arc::new(handler);
        let method: ExtensionMethod = Arc::new(move |raw: serde_json::Value| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let run = async move {
                    let params = Params::new(Some(raw)).decode::<P>()?;
                    let result = handler(params).await?;
                    Ok::<_, RpcError>(serde_json::to_value(result)?)
                };
                run.await.map_err(|error| (error.code(), error.to_string()))
            })
        });
        self.register(name, method);
    }

    /// The method registered as `name`.
    pub fn get(&self, name: &str) -> Option<&ExtensionMethod> {
        self.methods.get(name)
    }
}

/// Request limits, validated at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcLimits {
    /// Largest request body in bytes (HTTP 413 above).
    pub max_body_bytes: usize,
    /// Most items in one batch (-32005 above).
    pub max_batch_items: usize,
    /// Largest response in bytes.
    pub max_response_bytes: usize,
    /// Gas cap for eth_call and eth_estimateGas.
    pub gas_cap: u64,
    /// How often the server pings each WebSocket connection.
    pub ws_ping_interval: Duration,
    /// How long a WebSocket connection may send nothing (no frame, no pong) before it is
    /// closed (1001).
    pub ws_idle_timeout: Duration,
    /// Most blocks one evm_mine / anvil_mine / hardhat_mine call may ask for (-32602 above).
    pub max_mine_blocks: u64,
    /// Most logs one eth_getLogs / eth_getFilterLogs / eth_getFilterChanges answer holds
    /// (-32005 above).
    pub max_logs: usize,
    /// Largest code of one account anvil_loadState sets: the node's code size limit.
    pub max_code_bytes: usize,
    /// Most JSON bytes (decompressed) anvil_loadState reads and anvil_dumpState writes.
    pub max_state_json_bytes: usize,
}

/// How often the server pings a WebSocket connection (geth pings every 30 s too).
pub const DEFAULT_WS_PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a WebSocket connection may stay silent: two ping intervals, so a live client that
/// answers pings is never closed, and a vanished one is within a minute.
pub const DEFAULT_WS_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for RpcLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 5 * 1024 * 1024,
            max_batch_items: 1000,
            max_response_bytes: 25 * 1024 * 1024,
            gas_cap: 50_000_000,
            ws_ping_interval: DEFAULT_WS_PING_INTERVAL,
            ws_idle_timeout: DEFAULT_WS_IDLE_TIMEOUT,
            max_mine_blocks: 100_000,
            max_logs: 10_000,
            max_code_bytes: EIP170_CODE_BYTES,
            max_state_json_bytes: MAX_STATE_JSON_BYTES,
        }
    }
}

/// Everything the RPC front talks to: read handles, one typed client per actor (each method
/// of a client names the message and the actor that answers it; see `hearth_messages::client`),
/// and limits.
#[derive(Clone, Debug)]
pub struct RpcContext {
    /// Read-only store handle: blocks, receipts and state snapshots at any block.
    pub chain: ChainDb,
    /// The bounded executor pool.
    pub executor: ExecutorClient,
    /// The transaction pool: admission, lookups, txpool_* and the pool's dev controls.
    pub mempool: MempoolClient,
    /// The miner: automine, evm_mine and the dev-chain clock and mode.
    pub miner: MinerClient,
    /// The state owner, for the dev methods that write state outside a block.
    pub state: StateClient,
    /// Unlocked dev accounts for eth_sendTransaction and eth_accounts, in order (empty with
    /// `--no-unlocked-accounts`).
    pub signers: Arc<Vec<PrivateKeySigner>>,
    /// The namespaces served (`--http.api`).
    pub api: crate::core::ApiNamespaces,
    /// Which web origins and hosts may call (`--http.corsdomain`, `--ws.origins`,
    /// `--http.vhosts`).
    pub web: Arc<crate::core::WebAccess>,
    /// The chain id, read per request (anvil_setChainId changes it through the pool).
    pub chain_id: hearth_messages::ChainId,
    /// A fixed gas price (`--gas-price`): what eth_gasPrice answers, and the price of the
    /// legacy transaction eth_sendTransaction fills for a request that names no fee. `None`:
    /// the latest base fee plus the suggested tip, and EIP-1559 transactions.
    pub gas_price: Option<u128>,
    /// What anvil_nodeInfo and anvil_metadata report about this node.
    pub node: crate::core::NodeFacts,
    /// Whether the node logs below `warn` (anvil_setLoggingEnabled).
    pub logging: crate::core::LogSwitch,
    /// The chain's fork schedule (eth_config).
    pub forks: Arc<crate::core::ChainForks>,
    /// Request limits.
    pub limits: RpcLimits,
    /// Methods added by extension actors.
    pub extensions: Extensions,
    /// Returned by web3_clientVersion.
    pub client_version: String,
    /// Request counters, shared by every worker (striped per thread inside).
    pub metrics: Arc<crate::core::RpcMetrics>,
    /// Where `GET /metrics` asks for the gauges other actors own.
    pub metric_sources: MetricSources,
    /// The polling filters' owner.
    pub filters: FilterClient,
    /// The WebSocket subscriptions' owner.
    pub subscriptions: SubscriptionClient,
    /// The node's resetter (anvil_reset); `None` where the node cannot reset.
    pub reset:
        Option<actix::Recipient<hearth_messages::ask::Ask<hearth_messages::reset::ResetChain>>>,
    /// The port this context serves: the public one, or the Engine API's (its JWT secret).
    pub surface: crate::core::Surface,
    /// A read replica's link to its leader (`--follow`; `None` on any other node).
    pub replica: Option<crate::Replica>,
    /// The Engine API's state owner (on the Engine API port only; `None` elsewhere).
    pub engine: Option<hearth_messages::engine::EngineClient>,
    /// Where anvil_setRpcUrl goes (the resetter, which owns the fork settings); `None` where
    /// the node cannot reset.
    pub fork_url:
        Option<actix::Recipient<hearth_messages::ask::Ask<hearth_messages::reset::SetForkUrl>>>,
}

impl RpcContext {
    /// Whether this port serves the method `name` of `namespace` (as the method table gates
    /// it): the Engine API port its own methods, the public port what `--http.api` names.
    pub(crate) fn serves(&self, name: &str, namespace: &str) -> bool {
        let public = matches!(self.surface, crate::core::Surface::Public);
        self.surface.serves(name, namespace) && (!public || self.api.serves(namespace))
    }
}

/// The actors `GET /metrics` asks at scrape time.
#[derive(Clone, Debug)]
pub struct MetricSources {
    /// The shared code cache's counters (the pool's come through `RpcContext::mempool`).
    pub code_cache: CodeCacheClient,
    /// Each restartable actor's restart counter, by name.
    pub restarts: Vec<(&'static str, hearth_messages::restarts::RestartCounter)>,
    /// The fork backend's counters, when the node forks a live chain.
    pub fork: Option<Arc<hearth_messages::fork::ForkCounters>>,
}

/// The largest state JSON read or written: 256 MiB, decompressed. A load past it is refused
/// (reading stops there); a dump that would pass it is refused (-32005) rather than written,
/// since no load would take it.
pub const MAX_STATE_JSON_BYTES: usize = 256 * 1024 * 1024;

/// The code size limit of EIP-170, which a load checks code against unless the node was given
/// another (`--code-size-limit`).
pub const EIP170_CODE_BYTES: usize = 24_576;
