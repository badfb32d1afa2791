//! Command-line flags. Each flag is typed as given; `config.rs` turns them into a validated
//! `NodeConfig`.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use revm::primitives::hardfork::SpecId;

/// Default JSON-RPC port, as every dev tool expects.
pub const DEFAULT_HTTP_PORT: u16 = 8545;
/// Default chain id (anvil and Hardhat use the same).
pub const DEFAULT_CHAIN_ID: u64 = 31337;
/// Default number of dev accounts.
pub const DEFAULT_ACCOUNTS: u32 = 10;
/// Default balance of each dev account, in ETH.
pub const DEFAULT_BALANCE_ETH: u64 = 10_000;
/// Default block gas limit.
pub const DEFAULT_GAS_LIMIT: u64 = 30_000_000;
/// Default base fee of the genesis block (1 gwei, as anvil).
pub const DEFAULT_BASE_FEE: u64 = 1_000_000_000;
/// Default gas cap of eth_call / eth_estimateGas.
pub const DEFAULT_RPC_GAS_CAP: u64 = 50_000_000;
/// Default EVM time cap of eth_call and eth_estimateGas.
pub const DEFAULT_EVM_TIMEOUT: &str = "5s";
/// Default `--executor.inline-budget`: a `balanceOf` takes microseconds, and a call still
/// running at 200 µs is better off on an executor thread.
pub const DEFAULT_INLINE_BUDGET: &str = "200us";
/// Default `--executor.max-queue-delay` (`hearth_messages::admission::DEFAULT_MAX_QUEUE_DELAY`).
pub const DEFAULT_MAX_QUEUE_DELAY: &str = "100ms";
/// Default capacity of every actor mailbox.
pub const DEFAULT_MAILBOX: usize = 1024;
/// Default number of analysed contracts kept in the shared code cache.
pub const DEFAULT_CODE_CACHE_ENTRIES: usize = 4096;
/// Default bound on pooled transactions.
pub const DEFAULT_TXPOOL_MAX_COUNT: usize = 100_000;
/// Default bound on the encoded bytes of pooled transactions.
pub const DEFAULT_TXPOOL_MAX_BYTES: &str = "256MiB";
/// Default size of the store's page cache (`--cache.db`).
pub const DEFAULT_DB_CACHE: &str = "128MiB";
/// Default bound on the blocks one evm_mine / anvil_mine / hardhat_mine call may mine: about
/// 15 s of empty blocks here, far more than a test suite moves through.
pub const DEFAULT_MAX_MINE_BLOCKS: u64 = 100_000;
/// Default bound on the logs of one eth_getLogs answer: Infura's and Alchemy's, so clients that
/// split a range on "query returned more than 10000 results" do so here as well.
pub const DEFAULT_RPC_MAX_LOGS: usize = 10_000;
/// Default cap on one JSON-RPC response (a batch's included).
pub const DEFAULT_RPC_MAX_RESPONSE_SIZE: &str = "25MiB";
/// Default bound on open WebSocket connections.
pub const DEFAULT_WS_MAX_CONNECTIONS: usize = 100;
/// Default bound on the subscriptions of one WebSocket connection.
pub const DEFAULT_WS_MAX_SUBSCRIPTIONS: usize = 128;
/// Default bound on the notifications queued for one WebSocket connection.
pub const DEFAULT_WS_MAX_QUEUED: usize = 1024;
/// Default JSON-RPC namespaces: all of them, as a dev node.
pub const DEFAULT_HTTP_API: &str = "all";

/// The hard forks a dev chain can run (`--hardfork`): every one revm supports from Shanghai on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
pub enum Hardfork {
    /// Shanghai (withdrawals, PUSH0).
    Shanghai,
    /// Cancun (blobs, transient storage, the beacon roots contract).
    Cancun,
    /// Prague (EIP-7702, requests, the block hashes contract).
    Prague,
    /// Osaka (CLZ, EIP-7825's transaction gas cap, PeerDAS blob limits).
    Osaka,
}

impl Hardfork {
    /// The fork a dev chain runs when `--hardfork` is not given.
    pub const DEFAULT: Self = Self::Prague;

    /// revm's rules for this fork.
    pub const fn spec(self) -> SpecId {
        match self {
            Self::Shanghai => SpecId::SHANGHAI,
            Self::Cancun => SpecId::CANCUN,
            Self::Prague => SpecId::PRAGUE,
            Self::Osaka => SpecId::OSAKA,
        }
    }
}

/// How the pool orders pending transactions of different senders in a block (`--order`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Order {
    /// Highest tip first.
    #[default]
    Fees,
    /// First admitted first.
    Fifo,
}

/// How log lines are written (to stderr).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Hearth: an Ethereum execution node built on actors.
///
/// anvil's flags are accepted under anvil's names (-p/--port, --host, -b/--block-time,
/// -a/--accounts, -m/--mnemonic, --base-fee, ...) beside Hearth's own; see README.md for the
/// full table of anvil's flags and what Hearth does with each.
#[derive(Debug, Parser)]
#[command(name = "hearth", version, about)]
pub struct Cli {
    /// A one-shot tool instead of the node (default: run the node).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Hearth's persistent dev chain: stored in $HOME/.hearth/dev (or --datadir), kept across
    /// restarts. Without --dev or --datadir the chain lives in memory, as anvil's.
    #[arg(long)]
    pub dev: bool,
    /// Addresses the JSON-RPC server binds, all on the same port (repeat the flag or separate
    /// them with commas, as anvil's --host).
    #[arg(
        long = "http.addr",
        visible_alias = "host",
        default_value = "127.0.0.1",
        value_delimiter = ','
    )]
    pub http_addr: Vec<IpAddr>,
    /// Port of the JSON-RPC server (0 picks a free one).
    #[arg(
        short = 'p',
        long = "http.port",
        visible_alias = "port",
        default_value_t = DEFAULT_HTTP_PORT
    )]
    pub http_port: u16,
    /// Where the chain is stored (with --dev: $HOME/.hearth/dev); without it and without
    /// --dev the chain lives in memory, as anvil's.
    #[arg(long, conflicts_with = "ephemeral")]
    pub datadir: Option<PathBuf>,
    /// Keep the chain in memory only (the default without --dev and --datadir): in the node's
    /// own memory, which grows with the chain; use --datadir for long runs.
    #[arg(long)]
    pub ephemeral: bool,
    /// Chain id [default: 31337, or the chain id of the --init file].
    #[arg(long = "chain-id", allow_negative_numbers = true)]
    pub chain_id: Option<u64>,
    /// Number of funded dev accounts.
    #[arg(short = 'a', long, default_value_t = DEFAULT_ACCOUNTS, allow_negative_numbers = true)]
    pub accounts: u32,
    /// Balance of each dev account, in ETH [default: 10000].
    #[arg(long, allow_negative_numbers = true)]
    pub balance: Option<u64>,
    /// Mnemonic the dev accounts derive from.
    #[arg(short = 'm', long, default_value = hearth_actors::dev::DEFAULT_MNEMONIC)]
    pub mnemonic: String,
    /// Derive the dev accounts from a new random mnemonic of WORDS words (12, 15, 18, 21 or
    /// 24; 12 without a number), printed in the banner, as anvil's flag.
    #[arg(
        long = "mnemonic-random",
        value_name = "WORDS",
        num_args = 0..=1,
        default_missing_value = "12",
        conflicts_with = "mnemonic"
    )]
    pub mnemonic_random: Option<usize>,
    /// Derivation path of the dev accounts: account i is this path followed by i.
    #[arg(long = "derivation-path", default_value = hearth_actors::dev::DEFAULT_DERIVATION_PATH)]
    pub derivation_path: String,
    /// Hard fork rules of a new dev chain (the genesis's system contracts, the executor's and
    /// the pool's rules), any case [default: prague]. An existing chain runs its own.
    #[arg(long, ignore_case = true)]
    pub hardfork: Option<Hardfork>,
    /// Timestamp of a new chain's genesis block, in seconds; later blocks continue from it
    /// [default: the time at start].
    #[arg(long, allow_negative_numbers = true)]
    pub timestamp: Option<u64>,
    /// Number of the genesis block. Only 0: Hearth stores every chain from block 0.
    #[arg(long, allow_negative_numbers = true)]
    pub number: Option<u64>,
    /// Base fee of a new chain's genesis block, in wei [default: 1000000000].
    #[arg(
        long = "block-base-fee-per-gas",
        visible_alias = "base-fee",
        allow_negative_numbers = true
    )]
    pub base_fee: Option<u64>,
    /// What eth_gasPrice answers, in wei, and the price of the legacy transaction
    /// eth_sendTransaction then fills when a request names no fee [default: the latest base
    /// fee plus a 1 gwei tip, and EIP-1559 transactions].
    #[arg(long = "gas-price", allow_negative_numbers = true)]
    pub gas_price: Option<u128>,
    /// Start a new dev chain from a geth-style genesis.json: its accounts, chain id, timestamp,
    /// base fee and coinbase (flags given explicitly win), beside the dev accounts. Its gas
    /// limit and fork schedule are not used: --gas-limit and --hardfork set those, as in anvil.
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Leave the CREATE2 deployer (0x4e59b44847b379578588920ca78fbf26c0b4956c) out of a new
    /// dev chain's genesis.
    #[arg(long = "disable-default-create2-deployer", visible_alias = "no-create2")]
    pub disable_default_create2_deployer: bool,
    /// Largest contract code a creation may deploy, in bytes (initcode may be twice it)
    /// [default: 24576, EIP-170].
    #[arg(long = "code-size-limit", allow_negative_numbers = true)]
    pub code_size_limit: Option<usize>,
    /// No limit on contract code size (EIP-170) or initcode size (EIP-3860).
    #[arg(long = "disable-code-size-limit")]
    pub disable_code_size_limit: bool,
    /// How pending transactions of different senders are ordered in a block.
    #[arg(long, value_enum, ignore_case = true, default_value_t = Order::Fees)]
    pub order: Order,
    /// Every sender is impersonated from the start: eth_sendTransaction from any address.
    #[arg(long = "auto-impersonate", visible_alias = "auto-unlock")]
    pub auto_impersonate: bool,
    /// Accepted from anvil command lines and changes nothing: struct logs (debug_trace* with
    /// the default tracer) are always available, since Hearth re-executes to trace.
    #[arg(long = "steps-tracing", visible_alias = "tracing")]
    pub steps_tracing: bool,
    /// When the node stops (SIGINT, SIGTERM), write its head state to PATH as anvil's state
    /// dump (plain JSON); a directory gets PATH/state.json, as in anvil.
    #[arg(long = "dump-state", value_name = "PATH")]
    pub dump_state: Option<PathBuf>,
    /// Also write the --state / --dump-state file every SECONDS while the node runs (1 to
    /// 86400), each write atomic, as anvil's -s.
    #[arg(short = 's', long = "state-interval", value_name = "SECONDS")]
    pub state_interval: Option<u64>,
    /// At startup, set the accounts of an anvil state dump (plain or gzip-compressed JSON, as
    /// `--dump-state` or anvil_dumpState write it) in the new chain's state. Not with --datadir
    /// or --dev.
    #[arg(long = "load-state", value_name = "PATH")]
    pub load_state: Option<PathBuf>,
    /// --load-state PATH if the file exists, and --dump-state PATH, as in anvil.
    #[arg(long = "state", value_name = "PATH", conflicts_with_all = ["dump_state", "load_state"])]
    pub state: Option<PathBuf>,
    /// Write the accounts, keys and fee settings as anvil's JSON to FILE at startup.
    #[arg(long = "config-out", value_name = "FILE")]
    pub config_out: Option<PathBuf>,
    /// Print no banner and no log lines below warnings (transactions, console.log, traces),
    /// as anvil's -q; RUST_LOG, when set, still decides what the log shows.
    #[arg(short = 'q', long, visible_alias = "silent")]
    pub quiet: bool,
    /// Also serve JSON-RPC on a Unix socket at PATH (default /tmp/anvil.ipc, as anvil), as forge
    /// and cast reach a node by a path: the same methods and limits as HTTP.
    #[arg(
        long = "ipc",
        visible_alias = "ipcpath",
        value_name = "PATH",
        num_args = 0..=1,
        default_missing_value = "/tmp/anvil.ipc"
    )]
    pub ipc: Option<PathBuf>,
    /// Serve the Engine API (engine_*, with the eth_ subset the spec lists) on this address,
    /// behind JWT authentication. Any --authrpc.* flag turns the port on.
    #[arg(long = "authrpc.addr", value_name = "IP")]
    pub authrpc_addr: Option<std::net::IpAddr>,
    /// The Engine API's port (default 8551, as geth and reth; 0 picks a free one).
    #[arg(long = "authrpc.port", value_name = "PORT")]
    pub authrpc_port: Option<u16>,
    /// The Engine API's JWT secret: a file of 32 bytes in hex. Created with a random secret
    /// (mode 0600) when missing, as geth and reth do; default $HOME/.hearth/jwt.hex.
    #[arg(long = "authrpc.jwtsecret", value_name = "FILE")]
    pub authrpc_jwtsecret: Option<PathBuf>,
    /// Take Engine API blocks (and payload attributes) whose timestamp equals the parent's, as
    /// ev-reth does for a rollup sequencer's sub-second blocks. Turns the Engine API port on.
    #[arg(long = "engine.same-second-blocks")]
    pub engine_same_second_blocks: bool,
    /// Run as a read replica of the node at URL (its JSON-RPC URL, http:// or ws://): import
    /// each of its blocks (re-executed, every root checked), serve reads, forward writes to
    /// it, refuse dev methods. The replica mines nothing; start it with the leader's chain
    /// flags (--chain-id, --init, --accounts, --mnemonic, --hardfork, ...).
    #[arg(
        long = "follow",
        value_name = "URL",
        conflicts_with_all = [
            "fork_url", "block_time", "load_state", "state", "authrpc_addr", "authrpc_port",
            "authrpc_jwtsecret", "engine_same_second_blocks",
        ]
    )]
    pub follow: Option<String>,
    /// A replica's /health answers 503 when it is more than N blocks behind the leader.
    #[arg(
        long = "follow.max-lag",
        value_name = "N",
        default_value_t = 8,
        requires = "follow",
        value_parser = clap::value_parser!(u64).range(0..=1_000_000)
    )]
    pub follow_max_lag: u64,
    /// A replica's /health answers 503 when the leader has not answered for this long (10s,
    /// 500ms, ...); a forwarded write waits this long for the block holding it.
    #[arg(
        long = "follow.max-lag-time",
        value_name = "DURATION",
        default_value = "10s",
        requires = "follow"
    )]
    pub follow_max_lag_time: String,
    /// How often a caught-up replica asks the leader for a new head, in milliseconds.
    #[arg(
        long = "follow.poll-ms",
        value_name = "MS",
        default_value_t = 20,
        requires = "follow",
        value_parser = clap::value_parser!(u64).range(1..=60_000)
    )]
    pub follow_poll_ms: u64,
    /// Print no console.log lines (they are captured and printed by default, as in anvil).
    #[arg(long = "disable-console-log", visible_alias = "no-console-log")]
    pub disable_console_log: bool,
    /// Print the call tree of every mined transaction and eth_call, named from --artifacts
    /// where the contracts are known.
    #[arg(long = "print-traces", visible_alias = "enable-trace-printing")]
    pub print_traces: bool,
    /// The build output to name contracts, functions, events and errors by in printed traces,
    /// revert reasons and hearth_traceTransactionDecoded: Foundry's out/ or Hardhat's
    /// artifacts/ (repeatable).
    #[arg(long = "artifacts", value_name = "DIR")]
    pub artifacts: Vec<PathBuf>,
    /// Format of the log lines on stderr.
    #[arg(long = "log.format", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log lines as JSON (the same as --log.format json).
    #[arg(long)]
    pub json: bool,
    /// Executor threads (default: number of cores).
    #[arg(long = "executor.threads")]
    pub executor_threads: Option<usize>,
    /// Run blocks in parallel: auto (blocks of 64+ transactions, unless one sender's calls
    /// dominate), always, or never. Results equal sequential execution either way.
    #[arg(long = "exec.parallel", default_value = "auto")]
    pub exec_parallel: hearth_actors::ParallelMode,
    /// Threads one parallel block runs on, its executor included (1..=64; default: the
    /// executor threads / cores).
    #[arg(long = "exec.threads")]
    pub exec_threads: Option<usize>,
    /// JSON-RPC worker threads (default: the cores; half the cores, at least 1, with
    /// `--executor.inline-budget 0`).
    #[arg(long = "http.workers")]
    pub http_workers: Option<usize>,
    /// Longest expected wait for an executor thread a call is admitted with, e.g. 100ms or
    /// 500us (at most 10s); calls expected to wait longer fail at once with -32005. 0 admits a
    /// call only when an executor thread is idle.
    #[arg(long = "executor.max-queue-delay", default_value = DEFAULT_MAX_QUEUE_DELAY)]
    pub executor_max_queue_delay: String,
    /// Most requests waiting for an executor thread, pool-wide (0..=1048576); more fail at once
    /// with -32005. Bounds memory; the queue delay is what normally refuses.
    #[arg(long = "executor.max-queued", default_value_t = hearth_messages::admission::DEFAULT_MAX_QUEUED)]
    pub executor_max_queued: usize,
    /// Longest an eth_call runs on the RPC worker's own thread before it is handed to the
    /// executor pool, e.g. 200us (at most 10ms); 0 sends every call to the pool. Cheap calls
    /// then skip the trip to an executor thread; a call handed on runs again there. Unless 0,
    /// automine also builds blocks of at most 1M gas on the miner's own thread.
    #[arg(long = "executor.inline-budget", default_value = DEFAULT_INLINE_BUDGET)]
    pub executor_inline_budget: String,
    /// Gas cap of eth_call and eth_estimateGas.
    #[arg(long = "rpc.gascap", default_value_t = DEFAULT_RPC_GAS_CAP)]
    pub rpc_gascap: u64,
    /// Most logs one eth_getLogs, eth_getFilterLogs or eth_getFilterChanges answer holds;
    /// more fail with -32005 "query returned more than N results" (1..=10000000).
    #[arg(long = "rpc.max-logs", default_value_t = DEFAULT_RPC_MAX_LOGS)]
    pub rpc_max_logs: usize,
    /// Largest JSON-RPC response (a batch's included), e.g. 25MiB or 1GiB (64KiB..=4GiB);
    /// larger answers fail with -32005. Logs and traces are refused as soon as they outgrow it.
    #[arg(long = "rpc.max-response-size", default_value = DEFAULT_RPC_MAX_RESPONSE_SIZE)]
    pub rpc_max_response_size: String,
    /// Most blocks one evm_mine, anvil_mine or hardhat_mine call mines (1..=100000000); more
    /// are refused with -32602.
    #[arg(long = "dev.max-mine-blocks", default_value_t = DEFAULT_MAX_MINE_BLOCKS)]
    pub dev_max_mine_blocks: u64,
    /// Time cap of one eth_call / eth_estimateGas run, e.g. 5s or 500ms (-32002 when hit).
    #[arg(long = "rpc.evm-timeout", default_value = DEFAULT_EVM_TIMEOUT)]
    pub rpc_evm_timeout: String,
    /// Block gas limit [default: 30000000].
    #[arg(long = "gas-limit", allow_negative_numbers = true)]
    pub gas_limit: Option<u64>,
    /// No block gas limit: blocks take up to 2^64-1 gas (anvil's meaning).
    #[arg(long = "disable-block-gas-limit")]
    pub disable_block_gas_limit: bool,
    /// Capacity of every actor mailbox.
    #[arg(long = "actors.mailbox", default_value_t = DEFAULT_MAILBOX)]
    pub actors_mailbox: usize,
    /// Analysed contracts kept in the shared code cache (1..=1048576).
    #[arg(long = "cache.code-entries", default_value_t = DEFAULT_CODE_CACHE_ENTRIES)]
    pub cache_code_entries: usize,
    /// Most bytes the page cache (sled) of a store on disk (--datadir, --dev) holds in memory,
    /// e.g. 128MiB or 1GiB. A larger cache speeds up commits on a large state; it is most of
    /// such a node's memory beyond the pool. A node without a datadir keeps its chain in memory.
    #[arg(long = "cache.db", default_value = DEFAULT_DB_CACHE)]
    pub cache_db: String,
    /// Most transactions the pool holds.
    #[arg(long = "txpool.max-count", default_value_t = DEFAULT_TXPOOL_MAX_COUNT)]
    pub txpool_max_count: usize,
    /// Most encoded transaction bytes the pool holds: plain bytes or with a unit (KiB, MiB,
    /// GiB, KB, MB, GB), e.g. 64MiB.
    #[arg(long = "txpool.max-bytes", default_value = DEFAULT_TXPOOL_MAX_BYTES)]
    pub txpool_max_bytes: String,
    /// Do not mine on each transaction (mine with evm_mine only).
    #[arg(
        long = "no-mining",
        visible_alias = "no-mine",
        conflicts_with_all = ["block_time", "automine"]
    )]
    pub no_mining: bool,
    /// Mine a block every SECONDS (fractional allowed), or after a random time in MIN,MAX
    /// seconds; 0 disables. Turns automine off unless --automine is given too.
    #[arg(
        short = 'b',
        long = "block-time",
        visible_alias = "blockTime",
        allow_hyphen_values = true
    )]
    pub block_time: Option<String>,
    /// Keep automine on together with --block-time.
    #[arg(long, visible_alias = "mixed-mining")]
    pub automine: bool,
    /// Most WebSocket connections open at once; more are refused with HTTP 503.
    #[arg(long = "ws.max-connections", default_value_t = DEFAULT_WS_MAX_CONNECTIONS)]
    pub ws_max_connections: usize,
    /// Most subscriptions one WebSocket connection holds (-32005 above).
    #[arg(long = "ws.max-subscriptions", default_value_t = DEFAULT_WS_MAX_SUBSCRIPTIONS)]
    pub ws_max_subscriptions: usize,
    /// Most notifications queued for one WebSocket connection; a connection that lets more
    /// pile up is closed (1008, "subscriber too slow").
    #[arg(long = "ws.max-queued", default_value_t = DEFAULT_WS_MAX_QUEUED)]
    pub ws_max_queued: usize,
    /// Web origins allowed to call over HTTP: comma-separated patterns scheme://host or
    /// scheme://host:port (port may be *), * for every origin, or none (default: loopback pages
    /// on any port, and browser extensions). Requests from other origins get 403. * also makes
    /// --http.vhosts and --ws.origins default to *.
    #[arg(long = "http.corsdomain", visible_alias = "allow-origin")]
    pub http_corsdomain: Option<String>,
    /// Serve the built-in block explorer to a browser at / on the RPC port (JSON-RPC clients
    /// are unaffected): true or false (default: true when every --http.addr is loopback).
    #[arg(long = "http.explorer", value_name = "BOOL")]
    pub http_explorer: Option<bool>,
    /// Web origins allowed to open a WebSocket; same syntax and default as --http.corsdomain.
    #[arg(long = "ws.origins")]
    pub ws_origins: Option<String>,
    /// Host names the server answers (Host header, port ignored), comma-separated, or * for any
    /// (default: localhost; IP addresses are always answered). Others get 403: this stops DNS
    /// rebinding.
    #[arg(long = "http.vhosts")]
    pub http_vhosts: Option<String>,
    /// JSON-RPC namespaces served over HTTP and WebSocket, comma-separated (eth, net, web3,
    /// txpool, evm, anvil, hardhat, ...), or all. Methods of other namespaces answer -32601.
    #[arg(long = "http.api", default_value = DEFAULT_HTTP_API)]
    pub http_api: String,
    /// Do not sign for the dev accounts: eth_accounts answers [], and eth_sendTransaction from
    /// a dev account is refused like any unknown account (they stay funded).
    #[arg(long = "no-unlocked-accounts")]
    pub no_unlocked_accounts: bool,
    /// Fork the chain behind this JSON-RPC endpoint (http:// or https://): local blocks start
    /// after its block --fork-block-number, over its state, which is fetched as it is read and
    /// kept in --fork.cache-dir.
    #[arg(short = 'f', long = "fork-url", visible_alias = "rpc-url", value_name = "URL")]
    pub fork_url: Option<String>,
    /// The upstream block to fork at (default: its head); a negative N forks N blocks below the
    /// head.
    #[arg(long = "fork-block-number", allow_negative_numbers = true, value_name = "N")]
    pub fork_block_number: Option<i64>,
    /// Fork just before this upstream transaction: at the parent of its block, with the
    /// block's earlier transactions replayed in the first local block.
    #[arg(
        long = "fork-transaction-hash",
        value_name = "HASH",
        conflicts_with = "fork_block_number"
    )]
    pub fork_transaction_hash: Option<String>,
    /// The chain id of the fork (default: the upstream's, fetched once and cached).
    #[arg(long = "fork-chain-id")]
    pub fork_chain_id: Option<u64>,
    /// An HTTP header sent with every upstream request, as KEY:VALUE (repeatable).
    #[arg(long = "fork-header", value_name = "KEY:VALUE")]
    pub fork_header: Vec<String>,
    /// Retries of an upstream request after HTTP 429, 5xx, a connection error or a timeout.
    #[arg(long = "fork-retries", visible_alias = "retries", default_value_t = DEFAULT_FORK_RETRIES)]
    pub fork_retries: u32,
    /// How long one read of forked state may wait for the upstream, retries included; past it
    /// the read fails with -32000 "fork upstream: ...".
    #[arg(long = "fork-timeout", default_value = DEFAULT_FORK_TIMEOUT)]
    pub fork_timeout: String,
    /// Most upstream requests per second (default: no limit).
    #[arg(long = "fork-rate-limit", visible_alias = "compute-units-per-second")]
    pub fork_rate_limit: Option<u32>,
    /// Keep fetched upstream values in memory only, not in --fork.cache-dir.
    #[arg(long = "no-fork-cache", visible_alias = "no-storage-caching")]
    pub no_fork_cache: bool,
    /// Where fetched upstream values are kept across runs (default: ~/.hearth/fork-cache).
    #[arg(long = "fork.cache-dir", value_name = "DIR")]
    pub fork_cache_dir: Option<PathBuf>,
    /// Most bytes the fork cache grows to (its size on disk when opened plus the keys and
    /// values written since), e.g. 512MiB; once full, fetched values are no longer kept.
    #[arg(long = "fork.cache-size", default_value = DEFAULT_FORK_CACHE_SIZE)]
    pub fork_cache_size: String,
}

/// Default bound of the fork cache (`--fork.cache-size`).
pub const DEFAULT_FORK_CACHE_SIZE: &str = "4GiB";

/// Default retries of an upstream request (`--fork-retries`).
pub const DEFAULT_FORK_RETRIES: u32 = 5;
/// Most retries `--fork-retries` accepts.
pub const MAX_FORK_RETRIES: u32 = 100;
/// Default wait of a forked read for the upstream (`--fork-timeout`).
pub const DEFAULT_FORK_TIMEOUT: &str = "30s";
/// Longest `--fork-timeout`.
pub const MAX_FORK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
/// Highest `--fork-rate-limit`.
pub const MAX_FORK_RATE_LIMIT: u32 = 1_000_000;

/// One-shot tools that run instead of the node.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Ethereum Foundation state tests (files or directories of *.json) through Hearth's
    /// executor and trie.
    Statetest(ConformanceArgs),
    /// Run Ethereum Foundation blockchain tests (files or directories of *.json) through
    /// Hearth's block import path.
    Blocktest(ConformanceArgs),
    /// Run Ethereum Foundation blockchain tests (post-merge networks) through a node's Engine
    /// API: each block sent as engine_newPayload over HTTP with a JWT, then
    /// engine_forkchoiceUpdated; the same verdicts as `blocktest`.
    Enginetest(ConformanceArgs),
    /// Drive a node through its Engine API with a leader's blocks: each new block of the
    /// leader (debug_getRawBlock) sent as engine_newPayload, then engine_forkchoiceUpdated to
    /// it; the leader's rewinds are followed. Runs until stopped (or --until).
    Drive(DriveArgs),
    /// Import a chain: write the genesis of a geth-style genesis.json (or check it), then
    /// import blocks from files of concatenated RLP blocks, validating and executing each.
    Import(ImportArgs),
    /// Export canonical blocks as concatenated RLP blocks (geth's export format).
    Export(ExportArgs),
    /// Print a completion script for SHELL (bash, elvish, fish, powershell, zsh), as anvil's
    /// `completions`: e.g. `hearth completions bash > /etc/bash_completion.d/hearth`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Arguments of `hearth import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// geth-style genesis.json: chain config (chain id, forks, blob schedule), alloc, header.
    #[arg(long, required = true)]
    pub genesis: PathBuf,
    /// Run blocks in parallel: auto, always or never (results are identical either way).
    #[arg(long = "exec.parallel", default_value = "auto")]
    pub exec_parallel: hearth_actors::ParallelMode,
    /// Threads one parallel block uses (1..=64; default: cores).
    #[arg(long = "exec.threads")]
    pub exec_threads: Option<usize>,
    /// Where the chain is stored (default: $HOME/.hearth/dev).
    #[arg(long)]
    pub datadir: Option<PathBuf>,
    /// Files of concatenated RLP blocks, imported in order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Arguments of `hearth export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where the chain is stored (default: $HOME/.hearth/dev).
    #[arg(long)]
    pub datadir: Option<PathBuf>,
    /// First block to export (default 1: genesis comes from the genesis file).
    #[arg(long)]
    pub from: Option<u64>,
    /// Last block to export (default: the head).
    #[arg(long)]
    pub to: Option<u64>,
    /// Also write the chain's genesis.json here, so that `hearth import --genesis FILE`
    /// re-creates the chain (a dev chain too).
    #[arg(long = "genesis-out")]
    pub genesis_out: Option<PathBuf>,
    /// The output file.
    pub out: PathBuf,
}

/// Arguments of `hearth drive`.
#[derive(Debug, Args)]
pub struct DriveArgs {
    /// The leader's JSON-RPC URL (its public port).
    #[arg(long)]
    pub leader: String,
    /// The driven node's Engine API URL.
    #[arg(long, default_value = "http://127.0.0.1:8551")]
    pub engine: String,
    /// The driven node's JWT secret file (hex, 32 bytes).
    #[arg(long = "jwtsecret", value_name = "FILE")]
    pub jwt_secret: PathBuf,
    /// Milliseconds between asks once caught up (10 to 60000).
    #[arg(long = "poll-ms", default_value_t = 250, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub poll_ms: u64,
    /// Stop once the driven node's head reaches this block.
    #[arg(long)]
    pub until: Option<u64>,
}

/// Arguments of the conformance runners.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// Fixture files or directories (searched recursively for *.json).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Only run this fork (state tests) or network (blockchain tests), e.g. Prague.
    #[arg(long)]
    pub fork: Option<String>,
    /// Worker threads (default: number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Skip the files `index.json` flags `revme_skips` (EIP-7610 storage collisions, which
    /// revm alone does not detect; Hearth's executor does, so they run by default).
    #[arg(long = "skip-known")]
    pub skip_known: bool,
    /// Run blocks in parallel: auto (blocks of 64+ transactions, unless one sender's calls
    /// dominate), always, or never. Results equal sequential execution either way.
    #[arg(long = "exec.parallel", default_value = "auto")]
    pub exec_parallel: hearth_actors::ParallelMode,
    /// Threads one parallel block runs on, its executor included (1..=64; default: the
    /// executor threads / cores).
    #[arg(long = "exec.threads")]
    pub exec_threads: Option<usize>,
}
