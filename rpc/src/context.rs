//! What the RPC front is given at startup: read handles, clients and limits.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use alloy_signer_local::PrivateKeySigner;
use hearth_messages::ChainDb;
use hearth_messages::ask::Ask;
use hearth_messages::executor::ExecutorClient;
use hearth_messages::mempool::{
    DropAll, DropTx, GetPoolContent, GetPooledTx, PendingNonce, RemoveSender, Revalidate,
    SetAutoImpersonate, SetChainId, SetImpersonated, SetPoolGasLimit, SubmitFilled, SubmitTx,
    SubmitTxs,
};
use hearth_messages::miner::{
    AutoMine, GetMiningStatus, MineBlocks, MineDetailed, MineSpaced, RestoreClock, Rewind,
    SaveClock, SetAutomine, SetBlockParam, SetIntervalMining, SetTime, SetTimestampInterval,
};
use hearth_messages::state::{
    DumpState, ListSnapshots, LoadState, PatchState, RevertTo, TakeSnapshot,
};

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
            max_code_bytes: crate::state_dump::EIP170_CODE_BYTES,
            max_state_json_bytes: crate::state_dump::MAX_STATE_JSON_BYTES,
        }
    }
}

/// Everything the RPC front talks to. Recipients on the request path take `Ask<M>`: a full
/// mailbox answers -32005 at once instead of making the request wait for room.
#[derive(Clone, Debug)]
pub struct RpcContext {
    /// Read-only store handle: blocks, receipts and state snapshots at any block.
    pub chain: ChainDb,
    /// The bounded executor pool.
    pub executor: ExecutorClient,
    /// Admits transactions.
    pub submit_tx: Recipient<Ask<SubmitTx>>,
    /// Admits what eth_sendTransaction filled, choosing its nonce.
    pub submit_filled: Recipient<Ask<SubmitFilled>>,
    /// Finds pending transactions.
    pub get_pooled_tx: Recipient<Ask<GetPooledTx>>,
    /// Next nonce counting pending transactions.
    pub pending_nonce: Recipient<Ask<PendingNonce>>,
    /// Asks the miner to mine what is pending (automine).
    pub auto_mine: Recipient<Ask<AutoMine>>,
    /// Mines blocks on demand (evm_mine).
    pub mine_blocks: Recipient<MineBlocks>,
    /// The txpool_* and dev-chain (evm_*, anvil_*, hardhat_*) controls.
    pub controls: Controls,
    /// Unlocked dev accounts for eth_sendTransaction and eth_accounts, in order (empty with
    /// `--no-unlocked-accounts`).
    pub signers: Arc<Vec<PrivateKeySigner>>,
    /// The namespaces served (`--http.api`).
    pub api: crate::methods::ApiNamespaces,
    /// Which web origins and hosts may call (`--http.corsdomain`, `--ws.origins`,
    /// `--http.vhosts`).
    pub web: Arc<crate::access::WebAccess>,
    /// The chain id, read per request (anvil_setChainId changes it through the pool).
    pub chain_id: hearth_messages::ChainId,
    /// A fixed gas price (`--gas-price`): what eth_gasPrice answers, and the price of the
    /// legacy transaction eth_sendTransaction fills for a request that names no fee. `None`:
    /// the latest base fee plus the suggested tip, and EIP-1559 transactions.
    pub gas_price: Option<u128>,
    /// What anvil_nodeInfo and anvil_metadata report about this node.
    pub node: crate::node_info::NodeFacts,
    /// Whether the node logs below `warn` (anvil_setLoggingEnabled).
    pub logging: crate::log_switch::LogSwitch,
    /// The chain's fork schedule (eth_config).
    pub forks: Arc<crate::chain_config::ChainForks>,
    /// Request limits.
    pub limits: RpcLimits,
    /// Methods added by extension actors.
    pub extensions: Extensions,
    /// Returned by web3_clientVersion.
    pub client_version: String,
    /// Request counters, shared by every worker (striped per thread inside).
    pub metrics: Arc<crate::metrics::RpcMetrics>,
    /// Where `GET /metrics` asks for the gauges other actors own.
    pub metric_sources: MetricSources,
    /// The polling filters' owner.
    pub filters: FilterRecipients,
    /// The WebSocket subscriptions' owner.
    pub subscriptions: SubscriptionRecipients,
}

/// The `SubscriptionActor`'s recipients (WebSocket connections, eth_subscribe and friends).
#[derive(Clone, Debug)]
pub struct SubscriptionRecipients {
    /// Registers a WebSocket connection.
    pub connect: Recipient<Ask<hearth_messages::subscriptions::Connect>>,
    /// Forgets one.
    pub disconnect: Recipient<hearth_messages::subscriptions::Disconnect>,
    /// Adds a subscription.
    pub subscribe: Recipient<Ask<hearth_messages::subscriptions::Subscribe>>,
    /// Removes one.
    pub unsubscribe: Recipient<Ask<hearth_messages::subscriptions::Unsubscribe>>,
    /// Its counters, for `GET /metrics`.
    pub stats: Recipient<Ask<hearth_messages::subscriptions::GetSubscriptionStats>>,
}

/// The `FilterActor`'s recipients (eth_newFilter and friends).
#[derive(Clone, Debug)]
pub struct FilterRecipients {
    /// Installs a filter.
    pub install: Recipient<Ask<hearth_messages::filters::InstallFilter>>,
    /// Polls one.
    pub poll: Recipient<Ask<hearth_messages::filters::PollFilter>>,
    /// Reads one's criteria.
    pub get: Recipient<Ask<hearth_messages::filters::GetFilter>>,
    /// Removes one.
    pub uninstall: Recipient<Ask<hearth_messages::filters::UninstallFilter>>,
}

/// The actors `GET /metrics` asks at scrape time.
#[derive(Clone, Debug)]
pub struct MetricSources {
    /// The pool's (executable, queued) counts.
    pub pool_size: Recipient<Ask<hearth_messages::mempool::PoolSize>>,
    /// The pool's counters (transactions dropped as invalid).
    pub pool_counters: Recipient<Ask<hearth_messages::mempool::GetPoolCounters>>,
    /// The shared code cache's counters.
    pub code_cache: Recipient<Ask<hearth_messages::code_cache::GetCodeCacheStats>>,
    /// Each restartable actor's restart counter, by name.
    pub restarts: Vec<(&'static str, hearth_messages::restarts::RestartCounter)>,
    /// The fork backend's counters, when the node forks a live chain.
    pub fork: Option<Arc<hearth_messages::fork::ForkCounters>>,
}

/// The recipients behind the txpool_* and dev-chain methods, grouped so the context grows by
/// one field per area rather than one per message.
#[derive(Clone, Debug)]
pub struct Controls {
    /// Admits a JSON-RPC batch of raw transactions as one pool batch.
    pub submit_txs: Recipient<Ask<SubmitTxs>>,
    /// Whether an account without a dev key may send unsigned (it is impersonated).
    pub is_impersonated: Recipient<Ask<hearth_messages::mempool::IsImpersonated>>,
    /// Starts / stops impersonating one account.
    pub set_impersonated: Recipient<SetImpersonated>,
    /// Impersonates every account.
    pub set_auto_impersonate: Recipient<SetAutoImpersonate>,
    /// The pool's pending and queued transactions.
    pub pool_content: Recipient<GetPoolContent>,
    /// Removes one pooled transaction.
    pub drop_tx: Recipient<DropTx>,
    /// Tells the pool the state changed outside a block.
    pub revalidate: Recipient<Revalidate>,
    /// Tells the pool the block gas limit changed.
    pub set_pool_gas_limit: Recipient<SetPoolGasLimit>,
    /// Mines blocks spaced by an interval.
    pub mine_spaced: Recipient<MineSpaced>,
    /// Turns interval mining on or off.
    pub set_interval_mining: Recipient<SetIntervalMining>,
    /// Turns automine on or off.
    pub set_automine: Recipient<SetAutomine>,
    /// Next-block settings (timestamp, base fee, coinbase, ...).
    pub set_block_param: Recipient<SetBlockParam>,
    /// Saves the miner's clock with a snapshot.
    pub save_clock: Recipient<SaveClock>,
    /// Turns the miner's clock back on revert.
    pub restore_clock: Recipient<RestoreClock>,
    /// Mining mode and counters.
    pub mining_status: Recipient<GetMiningStatus>,
    /// Writes dev-method state changes.
    pub patch_state: Recipient<PatchState>,
    /// Reads the whole head state (anvil_dumpState).
    pub dump_state: Recipient<DumpState>,
    /// Sets a state dump's accounts (anvil_loadState).
    pub load_state: Recipient<LoadState>,
    /// evm_snapshot.
    pub take_snapshot: Recipient<TakeSnapshot>,
    /// evm_revert.
    pub revert_to: Recipient<RevertTo>,
    /// anvil_rollback and anvil_reorg, through the miner.
    pub rewind: Recipient<Rewind>,
    /// The live snapshots (anvil_metadata).
    pub list_snapshots: Recipient<ListSnapshots>,
    /// anvil_setChainId: the pool publishes the new id.
    pub set_chain_id: Recipient<SetChainId>,
    /// anvil_dropAllTransactions.
    pub drop_all: Recipient<DropAll>,
    /// anvil_removePoolTransactions.
    pub remove_sender: Recipient<RemoveSender>,
    /// anvil_setTime, and the clock reset of anvil_rollback.
    pub set_time: Recipient<SetTime>,
    /// anvil_setBlockTimestampInterval / anvil_removeBlockTimestampInterval.
    pub set_timestamp_interval: Recipient<SetTimestampInterval>,
    /// evm_mine_detailed (and the new blocks of anvil_reorg).
    pub mine_detailed: Recipient<MineDetailed>,
}
