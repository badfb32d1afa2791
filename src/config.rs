//! `NodeConfig`: only usable values. Every check on flags lives here, and each error names
//! the flag so the user knows what to change.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use hearth_actors::mempool::TxOrder;
use hearth_messages::admission::{AdmissionLimits, MAX_QUEUE_DELAY, MAX_QUEUED};
use hearth_messages::miner::{IntervalMining, MAX_TIMESTAMP};
use hearth_messages::subscriptions::SubscriptionLimits;
use hearth_rpc::{ApiNamespaces, HostPolicy, OriginPolicy, RpcLimits, WebAccess};
use revm::primitives::hardfork::SpecId;
use serde_json::Value;

use crate::cli::{Cli, DEFAULT_BALANCE_ETH, DEFAULT_BASE_FEE, DEFAULT_CHAIN_ID, DEFAULT_GAS_LIMIT};
use crate::cli::{Hardfork, LogFormat, Order};
use crate::genesis::InitGenesis;

/// Most `--executor.inline-budget`: an RPC worker busy longer than this on one call delays
/// every other request on its connections.
const MAX_INLINE_BUDGET: Duration = Duration::from_millis(10);

/// Longest `--rpc.evm-timeout`: an hour of one call is past any use, and it keeps every
/// deadline computed from it (`Instant::now() + timeout`, which panics past the clock's range)
/// well inside that range.
const MAX_EVM_TIMEOUT: Duration = Duration::from_secs(3600);

/// Where the chain lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageMode {
    /// sled in this directory.
    Disk(PathBuf),
    /// In memory; gone when the process ends.
    Ephemeral,
}

/// What a new chain's genesis is made of beside the chain id, rules, gas limit and dev
/// accounts (which the node's other settings give).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisSettings {
    /// Base fee of block 0.
    pub base_fee: u64,
    /// Timestamp of block 0; `None` is the time at start. When set, later blocks continue from
    /// it (the miner's clock starts there), as anvil's `--timestamp`.
    pub timestamp: Option<u64>,
    /// Fee recipient of block 0 and of the blocks mined after it.
    pub coinbase: Address,
    /// Whether the CREATE2 deployer is deployed.
    pub create2_deployer: bool,
    /// Accounts of the `--init` file, set over the dev accounts.
    pub alloc: BTreeMap<Address, Value>,
}

/// Which chain-shaping flags the command line gave explicitly: an existing chain keeps its own
/// chain id, rules and genesis, so these are checked against it instead of applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GivenFlags {
    /// `--chain-id`.
    pub chain_id: bool,
    /// `--hardfork`.
    pub hardfork: bool,
    /// `--gas-limit` (anvil's `--config-out` reports the limit only when given).
    pub gas_limit: bool,
    /// Flags that only shape a new chain's genesis, by name.
    pub genesis_only: Vec<&'static str>,
}

/// A validated node configuration.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The chain to fork (`--fork-url`), if any.
    pub fork: Option<ForkSettings>,
    /// How anvil_reset forks on a node started without `--fork-url` (its upstream is the
    /// reset's `jsonRpcUrl`).
    pub reset_fork: ForkSettings,
    /// Where the chain lives.
    pub storage: StorageMode,
    /// JSON-RPC listen address.
    pub http_addr: SocketAddr,
    /// Further addresses the server also binds, on `http_addr`'s port (`--host a,b`).
    pub more_http_ips: Vec<std::net::IpAddr>,
    /// Chain id.
    pub chain_id: u64,
    /// Number of dev accounts.
    pub accounts: u32,
    /// Balance of each dev account in wei.
    pub balance_wei: U256,
    /// Mnemonic of the dev accounts.
    pub mnemonic: String,
    /// Derivation path of the dev accounts; account i is this followed by i.
    pub derivation_path: String,
    /// The rules a new dev chain runs (`--hardfork`); once the node started, the rules its
    /// chain runs (an existing or imported chain's own).
    pub spec: SpecId,
    /// What a new chain's genesis is made of.
    pub genesis: GenesisSettings,
    /// The chain-shaping flags given explicitly.
    pub given: GivenFlags,
    /// What eth_gasPrice answers and the price eth_sendTransaction fills in a legacy
    /// transaction when a request names no fee (`None`: base fee plus tip, EIP-1559).
    pub gas_price: Option<u128>,
    /// Contract code size limit (`None`: EIP-170's); initcode may be twice it.
    pub code_size_limit: Option<usize>,
    /// Whether `--disable-block-gas-limit` made the block gas limit 2^64-1.
    pub block_gas_limit_disabled: bool,
    /// Ordering of pending transactions in a block.
    pub order: TxOrder,
    /// Every sender impersonated from the start.
    pub auto_impersonate: bool,
    /// Where anvil's JSON description of the node goes at startup.
    pub config_out: Option<PathBuf>,
    /// No banner on stdout.
    pub quiet: bool,
    /// Format of the log lines on stderr.
    pub log_format: LogFormat,
    /// Executor threads.
    pub executor_threads: NonZeroUsize,
    /// Parallel block execution (`--exec.parallel`, `--exec.threads`).
    pub parallel: hearth_actors::ParallelConfig,
    /// What the node prints of what ran (`--disable-console-log`, `--print-traces`).
    pub show: hearth_actors::Show,
    /// Build output directories to read names from at start (`--artifacts`), each checked to
    /// be a directory.
    pub artifacts: Vec<PathBuf>,
    /// Where JSON-RPC is also served on a Unix socket (`--ipc`).
    pub ipc: Option<PathBuf>,
    /// The Engine API port (`--authrpc.*`), when any of its flags was given.
    pub authrpc: Option<AuthRpc>,
    /// The leader this node is a read replica of (`--follow`).
    pub follow: Option<FollowSettings>,
    /// How often the state file is written while the node runs (`--state-interval`).
    pub state_interval: Option<Duration>,
    /// JSON-RPC worker threads.
    pub http_workers: NonZeroUsize,
    /// What the executor pool admits: the queue-delay budget and the queue cap.
    pub admission: AdmissionLimits,
    /// How long an eth_call may run on the RPC worker's thread (`--executor.inline-budget`);
    /// `None`: every call goes to the executor pool.
    pub inline_budget: Option<Duration>,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Capacity of every actor mailbox.
    pub mailbox: NonZeroUsize,
    /// Shared code cache entries.
    pub code_cache_entries: NonZeroUsize,
    /// Most pooled transactions.
    pub txpool_max_count: NonZeroUsize,
    /// Most encoded transaction bytes pooled.
    pub txpool_max_bytes: usize,
    /// Bytes of the store's page cache.
    pub db_cache_bytes: u64,
    /// Mine on each transaction.
    pub automine: bool,
    /// Time cap of one eth_call / eth_estimateGas run.
    pub evm_timeout: Duration,
    /// Mine on a timer too.
    pub interval: Option<IntervalMining>,
    /// RPC limits, including the call gas cap.
    pub rpc: RpcLimits,
    /// WebSocket connection, subscription and notification-queue bounds.
    pub subscriptions: SubscriptionLimits,
    /// Which web origins and hosts may call (`--http.corsdomain`, `--ws.origins`,
    /// `--http.vhosts`).
    pub web: WebAccess,
    /// The JSON-RPC namespaces served (`--http.api`).
    pub api: ApiNamespaces,
    /// Whether eth_sendTransaction signs for the dev accounts (off with
    /// `--no-unlocked-accounts`).
    pub unlocked_accounts: bool,
    /// Where the head state is written as anvil's state dump when the node stops
    /// (`--dump-state`, `--state`).
    pub dump_state: Option<PathBuf>,
    /// A state dump, read and checked, whose accounts a new chain starts with (`--load-state`,
    /// `--state` when its file exists).
    pub load_state: Option<hearth_rpc::LoadedState>,
}

/// A flag value that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// `--mnemonic-random` with a word count BIP-39 has no mnemonic of.
    #[error("--mnemonic-random {words}: a mnemonic has 12, 15, 18, 21 or 24 words")]
    MnemonicWords {
        /// The count given.
        words: usize,
    },
    /// `--state-interval` without a file to write.
    #[error("--state-interval needs a file to write: give --state PATH or --dump-state PATH")]
    StateInterval,
    /// `--ipc`'s path cannot be a socket's.
    #[error(
        "--ipc {}: a Unix socket path is 1 to {} bytes; give a shorter one",
        path.display(),
        hearth_rpc::MAX_IPC_PATH_BYTES
    )]
    IpcPath {
        /// The path given.
        path: PathBuf,
    },
    /// `--artifacts` names no directory.
    #[error(
        "--artifacts {}: not a directory; give the build output directory (Foundry's out/, \
         Hardhat's artifacts/)",
        path.display()
    )]
    Artifacts {
        /// The path given.
        path: PathBuf,
    },
    /// A fork flag that cannot be used as given.
    #[error("{flag}: {reason}")]
    Fork {
        /// The flag.
        flag: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A count that must be positive was zero.
    #[error("{flag} must be at least 1")]
    Zero {
        /// The flag.
        flag: &'static str,
    },
    /// A value outside its range.
    #[error("{flag} must be between {min} and {max}, got {got}")]
    OutOfRange {
        /// The flag.
        flag: &'static str,
        /// Lowest allowed.
        min: u64,
        /// Highest allowed.
        max: u64,
        /// What was given.
        got: u64,
    },
    /// A duration that cannot be read or is not positive.
    #[error("{flag} must be a positive duration like 5s or 500ms, got {value}")]
    Duration {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
    },
    /// A duration that cannot be read or is beyond its bound (zero is allowed).
    #[error("{flag} must be a duration from 0 to {max:?} like 2ms or 500us, got {value}")]
    DurationRange {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
        /// The longest allowed.
        max: Duration,
    },
    /// `--follow` with a URL that is not http(s):// or ws(s)://.
    #[error("--follow {0}: give the leader's JSON-RPC URL, http://HOST:PORT (or ws://HOST:PORT)")]
    FollowUrl(String),
    /// No home directory to put the default datadir in.
    #[error("--datadir is required: $HOME is not set (or use --ephemeral)")]
    NoHome,
    /// A size that does not parse.
    #[error("{flag} must be a byte size like 268435456, 64MiB or 1GiB, got {got:?}")]
    Size {
        /// The flag.
        flag: &'static str,
        /// What was given.
        got: String,
    },
    /// A byte size below what one largest transaction needs.
    #[error("{flag} must be at least {min} bytes (one largest transaction), got {got}")]
    SizeTooSmall {
        /// The flag.
        flag: &'static str,
        /// The least allowed.
        min: usize,
        /// What was given.
        got: usize,
    },
    /// A block time that cannot be used.
    #[error("{flag} {got:?} is not usable: {reason}")]
    BlockTime {
        /// The flag.
        flag: &'static str,
        /// What was given.
        got: String,
        /// Why.
        reason: String,
    },
    /// The mnemonic is not a valid BIP-39 phrase.
    #[error("--mnemonic is not a valid BIP-39 mnemonic: {0}")]
    Mnemonic(String),
    /// The derivation path does not give a key for every dev account.
    #[error(
        "--derivation-path {path:?} is not usable: {reason} (write it like m/44'/60'/0'/0/; \
         account i is the path followed by i)"
    )]
    DerivationPath {
        /// What was given.
        path: String,
        /// Why.
        reason: String,
    },
    /// A genesis block number other than 0.
    #[error("{flag} {got} is not supported: Hearth stores every chain from block 0 (leave it out)")]
    GenesisNumber {
        /// The flag (or the `--init` file's field).
        flag: &'static str,
        /// The number given.
        got: u64,
    },
    /// A state file flag that cannot be used: a dump that cannot be loaded, a path that cannot
    /// be written, or a chain it does not go with.
    #[error("{flag} {path}: {reason}")]
    StateFile {
        /// The flag.
        flag: &'static str,
        /// The file.
        path: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The `--init` genesis file cannot be used.
    #[error("--init {path}: {reason}")]
    Init {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// An origin or host list that cannot be parsed.
    #[error("{flag} {got:?} is not usable: {reason}")]
    Access {
        /// The flag.
        flag: &'static str,
        /// What was given.
        got: String,
        /// Why.
        reason: hearth_rpc::PatternError,
    },
    /// A namespace list that cannot be served.
    #[error("--http.api {got:?} is not usable: {reason}")]
    Api {
        /// What was given.
        got: String,
        /// Why.
        reason: hearth_rpc::NamespaceError,
    },
}

/// Most dev accounts derived at startup.
const MAX_ACCOUNTS: u64 = 10_000;
/// Highest `--rpc.max-logs`: the 25 MiB response cap stops an answer long before this.
const MAX_RPC_MAX_LOGS: u64 = 10_000_000;
/// Smallest `--rpc.max-response-size`: room for a block, its receipts or a page of logs.
const MIN_RESPONSE_BYTES: u64 = 64 << 10;
/// Largest `--rpc.max-response-size`: a response is built in memory before it is sent.
const MAX_RESPONSE_BYTES: u64 = 4 << 30;
/// Highest `--dev.max-mine-blocks`: about four hours of empty blocks here.
const MAX_MINE_BLOCKS: u64 = 100_000_000;
/// Most code cache entries.
const MAX_CODE_CACHE_ENTRIES: u64 = 1_048_576;
/// Smallest block gas limit that fits a transfer.
const MIN_GAS_LIMIT: u64 = 21_000;

/// Reads a duration written as `5s`, `500ms`, `250us` or plain seconds (`2.5`); `None` when it
/// is not a number, is negative or does not fit.
fn parse_duration(value: &str) -> Option<Duration> {
    let (number, per_second) = if let Some(ms) = value.strip_suffix("ms") {
        (ms, 1e3)
    } else if let Some(us) = value.strip_suffix("us") {
        (us, 1e6)
    } else {
        (value.strip_suffix('s').unwrap_or(value), 1.0)
    };
    let number: f64 = number.trim().parse().ok()?;
    // Dividing keeps `500us` exact where multiplying by 1e-6 could land a nanosecond short.
    Duration::try_from_secs_f64(number / per_second).ok()
}

/// `--exec.threads` when not given: `fallback` (the executor threads, or the cores), at most
/// what a block may use, so that a machine with more cores than that still starts.
pub fn default_exec_threads(fallback: usize) -> usize {
    fallback.clamp(1, hearth_actors::exec::MAX_EXEC_THREADS)
}

/// The cores this machine has, for `--exec.threads`' default where no executor pool is sized.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `--mnemonic`, or with `--mnemonic-random` a new one of that many words (BIP-39 allows 12,
/// 15, 18, 21 and 24) from the operating system's randomness.
fn mnemonic(cli: &Cli) -> Result<String, ConfigError> {
    use alloy_signer_local::coins_bip39::{English, Mnemonic};
    let Some(words) = cli.mnemonic_random else { return Ok(cli.mnemonic.clone()) };
    if ![12, 15, 18, 21, 24].contains(&words) {
        return Err(ConfigError::MnemonicWords { words });
    }
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::from_entropy();
    let mnemonic = Mnemonic::<English>::new_with_count(&mut rng, words)
        .map_err(|_| ConfigError::MnemonicWords { words })?;
    Ok(mnemonic.to_phrase())
}

/// `--state-interval`: 1 to 86,400 seconds, and only with a file to write (`--state` or
/// `--dump-state`).
fn state_interval(seconds: Option<u64>, has_file: bool) -> Result<Option<Duration>, ConfigError> {
    match seconds {
        None => Ok(None),
        Some(s) if !(1..=86_400).contains(&s) => {
            Err(ConfigError::OutOfRange { flag: "--state-interval", min: 1, max: 86_400, got: s })
        }
        Some(_) if !has_file => Err(ConfigError::StateInterval),
        Some(s) => Ok(Some(Duration::from_secs(s))),
    }
}

/// What the node prints of what ran (`--disable-console-log`, `--print-traces`); the names of
/// `--artifacts` join the standard interfaces when the node starts.
fn show_settings(cli: &Cli) -> hearth_actors::Show {
    hearth_actors::Show {
        console_log: !cli.disable_console_log,
        traces: cli.print_traces,
        artifacts: std::sync::Arc::new(hearth_actors::report::Artifacts::standard()),
        ..Default::default()
    }
}

/// A read replica's leader and limits (`--follow*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowSettings {
    /// The leader's JSON-RPC URL over HTTP (a ws:// URL is read as the same address's http://:
    /// Hearth and anvil serve both on one port).
    pub leader: String,
    /// `--follow.max-lag`: blocks behind the leader before /health answers 503.
    pub max_lag: u64,
    /// `--follow.max-lag-time`: silence of the leader before /health answers 503, and how long
    /// a forwarded write waits for its block.
    pub max_lag_time: Duration,
    /// `--follow.poll-ms`: how often a caught-up replica asks for a new head.
    pub poll: Duration,
}

/// Longest `--follow.max-lag-time`.
pub const MAX_FOLLOW_LAG_TIME: Duration = Duration::from_secs(3600);

/// `--follow` and its limits, checked.
fn follow_settings(cli: &Cli) -> Result<Option<FollowSettings>, ConfigError> {
    let Some(url) = &cli.follow else { return Ok(None) };
    let leader = if let Some(rest) = url.strip_prefix("ws://") {
        format!("http://{rest}")
    } else if let Some(rest) = url.strip_prefix("wss://") {
        format!("https://{rest}")
    } else {
        url.clone()
    };
    // Checked as an upstream is: http(s) with a host.
    if check_fork_url(&leader).is_err() {
        return Err(ConfigError::FollowUrl(url.clone()));
    }
    let max_lag_time =
        duration_up_to("--follow.max-lag-time", &cli.follow_max_lag_time, MAX_FOLLOW_LAG_TIME)?;
    if max_lag_time.is_zero() {
        return Err(ConfigError::Duration {
            flag: "--follow.max-lag-time",
            value: cli.follow_max_lag_time.clone(),
        });
    }
    Ok(Some(FollowSettings {
        leader,
        max_lag: cli.follow_max_lag,
        max_lag_time,
        poll: Duration::from_millis(cli.follow_poll_ms),
    }))
}

/// The Engine API's port: where it listens and the file of its JWT secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRpc {
    /// `--authrpc.addr` (127.0.0.1) and `--authrpc.port` (8551).
    pub addr: std::net::SocketAddr,
    /// `--authrpc.jwtsecret` ($HOME/.hearth/jwt.hex).
    pub jwt_secret: PathBuf,
    /// `--engine.same-second-blocks`: a block may carry its parent's timestamp.
    pub same_second_blocks: bool,
}

/// The Engine API port, when any `--authrpc.*` flag asks for it.
fn auth_rpc(
    addr: Option<std::net::IpAddr>,
    port: Option<u16>,
    secret: Option<PathBuf>,
    same_second_blocks: bool,
) -> Result<Option<AuthRpc>, ConfigError> {
    if addr.is_none() && port.is_none() && secret.is_none() && !same_second_blocks {
        return Ok(None);
    }
    let ip = addr.unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    let jwt_secret = match secret {
        Some(path) => path,
        None => {
            let home = std::env::var_os("HOME").ok_or(ConfigError::NoHome)?;
            PathBuf::from(home).join(".hearth").join("jwt.hex")
        }
    };
    Ok(Some(AuthRpc {
        addr: std::net::SocketAddr::new(ip, port.unwrap_or(DEFAULT_AUTHRPC_PORT)),
        jwt_secret,
        same_second_blocks,
    }))
}

/// The Engine API's default port (geth's, reth's).
pub const DEFAULT_AUTHRPC_PORT: u16 = 8551;

/// `--ipc`'s path must fit a Unix socket address.
fn check_ipc(path: Option<&std::path::Path>) -> Result<(), ConfigError> {
    match path {
        Some(path) if path.as_os_str().len() > hearth_rpc::MAX_IPC_PATH_BYTES => {
            Err(ConfigError::IpcPath { path: path.to_owned() })
        }
        Some(path) if path.as_os_str().is_empty() => {
            Err(ConfigError::IpcPath { path: path.to_owned() })
        }
        _ => Ok(()),
    }
}

/// Each `--artifacts` path must be a directory (a build output), read at start.
fn check_artifacts(dirs: &[PathBuf]) -> Result<(), ConfigError> {
    match dirs.iter().find(|dir| !dir.is_dir()) {
        Some(dir) => Err(ConfigError::Artifacts { path: dir.clone() }),
        None => Ok(()),
    }
}

/// `--exec.parallel` and `--exec.threads`, the thread count range-checked.
pub fn parallel_config(
    mode: hearth_actors::ParallelMode,
    threads: usize,
) -> Result<hearth_actors::ParallelConfig, ConfigError> {
    hearth_actors::ParallelConfig::new(mode, threads).map_err(|_| ConfigError::OutOfRange {
        flag: "--exec.threads",
        min: 1,
        max: hearth_actors::exec::MAX_EXEC_THREADS as u64,
        got: threads as u64,
    })
}

/// Parses a duration (see [`parse_duration`]) that must be positive.
fn duration(flag: &'static str, value: &str) -> Result<Duration, ConfigError> {
    parse_duration(value)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| ConfigError::Duration { flag, value: value.to_owned() })
}

/// Parses a positive duration (see [`duration`]) up to `max`.
fn positive_up_to(flag: &'static str, value: &str, max: Duration) -> Result<Duration, ConfigError> {
    let parsed = duration(flag, value)?;
    if parsed > max {
        return Err(ConfigError::DurationRange { flag, value: value.to_owned(), max });
    }
    Ok(parsed)
}

/// Parses a duration (see [`parse_duration`]) from zero up to `max`.
fn duration_up_to(flag: &'static str, value: &str, max: Duration) -> Result<Duration, ConfigError> {
    parse_duration(value).filter(|d| *d <= max).ok_or_else(|| ConfigError::DurationRange {
        flag,
        value: value.to_owned(),
        max,
    })
}

/// Parses a byte size: plain bytes, or a number with a binary (KiB, MiB, GiB) or decimal
/// (KB, MB, GB) unit; `B` is allowed.
pub fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits.parse().ok()?;
    let multiplier: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

/// Parses `--block-time`: seconds (fractional allowed), or `MIN,MAX` seconds; 0 is off.
pub fn parse_block_time(text: &str) -> Result<Option<IntervalMining>, String> {
    let seconds = |part: &str| -> Result<Duration, String> {
        let value: f64 = part.trim().parse().map_err(|_| format!("{part:?} is not a number"))?;
        if !value.is_finite() {
            return Err(format!("{part:?} is not a finite number"));
        }
        if value < 0.0 {
            return Err(format!("{part} is negative"));
        }
        Duration::try_from_secs_f64(value).map_err(|_| format!("{part} seconds is too long"))
    };
    match text.split_once(',') {
        None => IntervalMining::fixed(seconds(text)?).map_err(|e| e.to_string()),
        Some((min, max)) => {
            IntervalMining::range(seconds(min)?, seconds(max)?).map(Some).map_err(|e| e.to_string())
        }
    }
}

/// Parses an origin list flag, or its default when not given.
fn origins(flag: &'static str, given: Option<&str>) -> Result<OriginPolicy, ConfigError> {
    match given {
        None => Ok(OriginPolicy::default()),
        Some(list) => OriginPolicy::parse(list).map_err(|reason| ConfigError::Access {
            flag,
            got: list.to_owned(),
            reason,
        }),
    }
}

/// The web-access policies. `--http.corsdomain '*'` lets every page call already, so the host
/// check (which only stops pages that reach the node under another name) and the WebSocket
/// origin check add nothing: they default to `*` too, anvil's behaviour in one flag. Given
/// explicitly, they apply as given.
fn web_access(cli: &Cli) -> Result<WebAccess, ConfigError> {
    let cors = origins("--http.corsdomain", cli.http_corsdomain.as_deref())?;
    let ws_origins = match cli.ws_origins.as_deref() {
        None if cors.is_any() => OriginPolicy::any(),
        given => origins("--ws.origins", given)?,
    };
    let vhosts = match cli.http_vhosts.as_deref() {
        None if cors.is_any() => HostPolicy::any(),
        None => HostPolicy::default(),
        Some(list) => HostPolicy::parse(list).map_err(|reason| ConfigError::Access {
            flag: "--http.vhosts",
            got: list.to_owned(),
            reason,
        })?,
    };
    // The page reads the chain with the RPC's own methods; off by default where the port is
    // reachable from other machines, which can still turn it on.
    let explorer =
        cli.http_explorer.unwrap_or_else(|| cli.http_addr.iter().all(IpAddr::is_loopback));
    Ok(WebAccess { cors, ws_origins, vhosts, explorer })
}

/// The datadir of `hearth import` and `hearth export` when `--datadir` is not given:
/// `$HOME/.hearth/dev`.
pub fn default_datadir() -> Result<PathBuf, ConfigError> {
    let home = std::env::var_os("HOME").ok_or(ConfigError::NoHome)?;
    Ok(PathBuf::from(home).join(".hearth").join("dev"))
}

/// Where a fork starts (`--fork-block-number`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkBlock {
    /// The upstream's head when the node starts.
    Head,
    /// This block.
    Number(u64),
    /// This many blocks below the upstream's head.
    BehindHead(u64),
    /// The parent of the block of this upstream transaction, with the block's transactions
    /// before it replayed on top (`--fork-transaction-hash`).
    BeforeTx(alloy_primitives::B256),
}

/// How to fork a live chain (`--fork-url` and the `--fork-*` flags).
#[derive(Debug, Clone)]
pub struct ForkSettings {
    /// The upstream endpoint and how to talk to it.
    pub upstream: hearth_actors::fork::UpstreamConfig,
    /// Where the fork starts.
    pub block: ForkBlock,
    /// The chain id to run under instead of the upstream's.
    pub chain_id: Option<u64>,
    /// Where fetched values persist (`None`: memory only, `--no-fork-cache`).
    pub cache_dir: Option<PathBuf>,
    /// Most bytes the fork cache grows to (`--fork.cache-size`).
    pub cache_size: u64,
}

/// `$HOME/.hearth/fork-cache`.
pub fn default_fork_cache_dir() -> Result<PathBuf, ConfigError> {
    let home = std::env::var_os("HOME").ok_or(ConfigError::NoHome)?;
    Ok(PathBuf::from(home).join(".hearth").join("fork-cache"))
}

/// `--dump-state`, `--load-state` and `--state`: where to dump the state on exit, and the dump
/// to load at startup, read and checked now (a dump that cannot be loaded stops the start).
/// A persisted chain (`--datadir`, `--dev`) keeps its state itself, and loading into it at
/// every start would patch it again each time, so loading is refused there; a fork's state is
/// the upstream's, of which a dump would hold only what was fetched, so dumping is refused
/// there.
fn state_files(
    cli: &Cli,
    storage: &StorageMode,
    forked: bool,
    code_size_limit: Option<usize>,
) -> Result<(Option<PathBuf>, Option<hearth_rpc::LoadedState>), ConfigError> {
    let error = |flag: &'static str, path: &std::path::Path, reason: String| {
        ConfigError::StateFile { flag, path: path.display().to_string(), reason }
    };
    // A directory stands for state.json inside it, as in anvil.
    let in_dir =
        |path: &PathBuf| if path.is_dir() { path.join("state.json") } else { path.clone() };
    let (dump_flag, dump) = match (&cli.state, &cli.dump_state) {
        (Some(path), _) => ("--state", Some(in_dir(path))),
        (None, path) => ("--dump-state", path.as_ref().map(in_dir)),
    };
    let (load_flag, load) = match (&cli.state, &cli.load_state) {
        // anvil's --state loads only a file that is there.
        (Some(path), _) => ("--state", Some(in_dir(path)).filter(|p| p.exists())),
        (None, path) => ("--load-state", path.clone()),
    };
    let dump = match dump {
        None => None,
        Some(_) if forked => {
            return Err(ConfigError::Fork {
                flag: dump_flag,
                reason: "cannot be used with --fork-url: a fork's state is the upstream's, and                          the node holds only what it fetched"
                    .into(),
            });
        }
        Some(path) => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if parent.is_some_and(|p| !p.is_dir()) {
                return Err(error(dump_flag, &path, "its directory does not exist".into()));
            }
            Some(path)
        }
    };
    let Some(path) = load.as_deref() else { return Ok((dump, None)) };
    if let StorageMode::Disk(dir) = storage {
        return Err(error(
            load_flag,
            path,
            format!(
                "cannot be used with a chain stored in {} (--datadir, --dev): it keeps its state                  itself; load into a chain in memory (leave --datadir and --dev out)",
                dir.display()
            ),
        ));
    }
    let limits = hearth_rpc::StateLimits {
        max_json_bytes: hearth_rpc::MAX_STATE_JSON_BYTES,
        max_code_bytes: code_size_limit.unwrap_or(hearth_rpc::EIP170_CODE_BYTES),
    };
    let loaded = hearth_rpc::read_state_file(path, limits)
        .map_err(|e| error(load_flag, path, e.to_string()))?;
    Ok((dump, Some(loaded)))
}

/// The fork flags as a [`ForkSettings`], range-checked; `None` without `--fork-url`.
fn fork_settings(cli: &Cli) -> Result<Option<ForkSettings>, ConfigError> {
    let Some(url) = cli.fork_url.clone() else {
        let given = [
            ("--fork-block-number", cli.fork_block_number.is_some()),
            ("--fork-transaction-hash", cli.fork_transaction_hash.is_some()),
            ("--fork-chain-id", cli.fork_chain_id.is_some()),
            ("--fork-header", !cli.fork_header.is_empty()),
            ("--fork-rate-limit", cli.fork_rate_limit.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(ConfigError::Fork { flag, reason: "needs --fork-url".into() });
        }
        return Ok(None);
    };
    check_fork_url(&url).map_err(|reason| fork_error("--fork-url", reason))?;
    if cli.datadir.is_some() {
        return Err(fork_error(
            "--datadir",
            "cannot be used with --fork-url: a forked chain lives in memory (the upstream's \
             values persist in --fork.cache-dir)"
                .into(),
        ));
    }
    fork_settings_with(cli, url, true).map(Some)
}

/// Why `url` cannot be an upstream (`None`: it can): not http(s), or no host.
fn check_fork_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("must be an http:// or https:// URL, got {url:?}"))?;
    if rest.is_empty() || rest.starts_with('/') || url.chars().any(char::is_whitespace) {
        return Err(format!("has no host: {url:?}"));
    }
    Ok(())
}

/// `base` (the node's fork settings) for the upstream `url` instead (anvil_reset's
/// `jsonRpcUrl`), checked as `--fork-url` is.
pub fn fork_settings_for(url: &str, base: &ForkSettings) -> Result<ForkSettings, String> {
    check_fork_url(url).map_err(|reason| format!("invalid jsonRpcUrl: {reason}"))?;
    let upstream =
        hearth_actors::fork::UpstreamConfig { url: url.to_owned(), ..base.upstream.clone() };
    Ok(ForkSettings { upstream, ..base.clone() })
}

/// The settings a reset into a fork uses on a node started without `--fork-url`: the
/// `--fork.cache-dir` / `--no-fork-cache` given (accepted without `--fork-url` for this), the
/// default cache dir if `$HOME` is known, else a cache in memory; defaults for the rest.
fn reset_fork_settings(cli: &Cli) -> Result<ForkSettings, ConfigError> {
    fork_settings_with(cli, String::new(), false)
}

/// The `--fork-*` flags as settings for the upstream `url`, range-checked.
/// Without `need_home`, an unknown `$HOME` means a cache in memory instead of an error.
fn fork_settings_with(
    cli: &Cli,
    url: String,
    need_home: bool,
) -> Result<ForkSettings, ConfigError> {
    let block = fork_block(cli)?;
    if cli.fork_chain_id == Some(0) {
        return Err(fork_error("--fork-chain-id", "must be at least 1".into()));
    }
    let upstream = upstream_config(cli, url)?;
    let cache_dir = fork_cache_dir(cli, need_home)?;
    let cache_size = parse_size(&cli.fork_cache_size).map(|n| n as u64).ok_or_else(|| {
        ConfigError::Size { flag: "--fork.cache-size", got: cli.fork_cache_size.clone() }
    })?;
    Ok(ForkSettings { upstream, block, chain_id: cli.fork_chain_id, cache_dir, cache_size })
}

/// A `--fork-*` flag that cannot be used as given, and why.
fn fork_error(flag: &'static str, reason: String) -> ConfigError {
    ConfigError::Fork { flag, reason }
}

/// The block to fork at: `--fork-transaction-hash`'s, else `--fork-block-number`'s (counted
/// back from the head when negative), else the upstream's head.
fn fork_block(cli: &Cli) -> Result<ForkBlock, ConfigError> {
    Ok(match (cli.fork_block_number, &cli.fork_transaction_hash) {
        (_, Some(hash)) => ForkBlock::BeforeTx(hash.parse().map_err(|_| {
            fork_error(
                "--fork-transaction-hash",
                format!("must be a 32-byte hex hash, got {hash:?}"),
            )
        })?),
        (None, None) => ForkBlock::Head,
        (Some(n), None) if n >= 0 => ForkBlock::Number(n.unsigned_abs()),
        (Some(n), None) => ForkBlock::BehindHead(n.unsigned_abs()),
    })
}

/// How to reach the upstream `url`: `--fork-header`, `--fork-retries`, `--fork-timeout` and
/// `--fork-rate-limit`, range-checked.
fn upstream_config(
    cli: &Cli,
    url: String,
) -> Result<hearth_actors::fork::UpstreamConfig, ConfigError> {
    use crate::cli::{MAX_FORK_RETRIES, MAX_FORK_TIMEOUT};
    let headers = fork_headers(cli)?;
    if cli.fork_retries > MAX_FORK_RETRIES {
        return Err(ConfigError::OutOfRange {
            flag: "--fork-retries",
            min: 0,
            max: MAX_FORK_RETRIES.into(),
            got: cli.fork_retries.into(),
        });
    }
    let timeout = duration("--fork-timeout", &cli.fork_timeout)?;
    if timeout > MAX_FORK_TIMEOUT {
        return Err(ConfigError::DurationRange {
            flag: "--fork-timeout",
            value: cli.fork_timeout.clone(),
            max: MAX_FORK_TIMEOUT,
        });
    }
    let rate_limit = fork_rate_limit(cli)?;
    Ok(hearth_actors::fork::UpstreamConfig {
        url,
        headers,
        retries: cli.fork_retries,
        timeout,
        rate_limit,
    })
}

/// `--fork-header KEY:VALUE`s as (name, value) pairs, each a header that can be sent.
fn fork_headers(cli: &Cli) -> Result<Vec<(String, String)>, ConfigError> {
    let mut headers = Vec::with_capacity(cli.fork_header.len());
    for header in &cli.fork_header {
        let (name, value) = header
            .split_once(':')
            .map(|(n, v)| (n.trim(), v.trim()))
            .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| {
                fork_error("--fork-header", format!("must be KEY:VALUE, got {header:?}"))
            })?;
        if value.bytes().any(|b| b.is_ascii_control()) {
            return Err(fork_error(
                "--fork-header",
                format!("has a control character: {header:?}"),
            ));
        }
        headers.push((name.to_owned(), value.to_owned()));
    }
    Ok(headers)
}

/// `--fork-rate-limit` (requests per second; `None`: no limit), from 1 to its maximum.
fn fork_rate_limit(cli: &Cli) -> Result<Option<std::num::NonZeroU32>, ConfigError> {
    use crate::cli::MAX_FORK_RATE_LIMIT;
    let Some(rate) = cli.fork_rate_limit else {
        return Ok(None);
    };
    std::num::NonZeroU32::new(rate).filter(|r| r.get() <= MAX_FORK_RATE_LIMIT).map(Some).ok_or(
        ConfigError::OutOfRange {
            flag: "--fork-rate-limit",
            min: 1,
            max: MAX_FORK_RATE_LIMIT.into(),
            got: rate.into(),
        },
    )
}

/// Where the fork cache lives (`None`: in memory): `--fork.cache-dir`, none with
/// `--no-fork-cache`, else the default dir. Without `need_home`, an unknown `$HOME` means none.
fn fork_cache_dir(cli: &Cli, need_home: bool) -> Result<Option<PathBuf>, ConfigError> {
    Ok(match (&cli.fork_cache_dir, cli.no_fork_cache) {
        (Some(_), true) => {
            return Err(fork_error(
                "--no-fork-cache",
                "contradicts --fork.cache-dir; pass one".into(),
            ));
        }
        (_, true) => None,
        (Some(dir), false) => Some(dir.clone()),
        (None, false) if need_home => Some(default_fork_cache_dir()?),
        (None, false) => default_fork_cache_dir().ok(),
    })
}

fn non_zero(flag: &'static str, value: usize) -> Result<NonZeroUsize, ConfigError> {
    NonZeroUsize::new(value).ok_or(ConfigError::Zero { flag })
}

fn in_range(flag: &'static str, value: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::OutOfRange { flag, min, max, got: value })
    }
}

/// What the chain-shaping flags resolve to.
struct ChainSettings {
    chain_id: u64,
    spec: SpecId,
    genesis: GenesisSettings,
    given: GivenFlags,
    gas_limit: u64,
}

/// Resolves the chain-shaping flags. Flags given explicitly win over the `--init` file, which
/// wins over the defaults (anvil's precedence).
fn chain_settings(cli: &Cli) -> Result<ChainSettings, ConfigError> {
    let init = match &cli.init {
        None => None,
        Some(path) => Some(InitGenesis::read(path).map_err(|e| ConfigError::Init {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?),
    };
    if let Some(number) = cli.number.filter(|n| *n != 0) {
        return Err(ConfigError::GenesisNumber { flag: "--number", got: number });
    }
    if let Some(number) = init.as_ref().map(|i| i.number).filter(|n| *n != 0) {
        return Err(ConfigError::GenesisNumber { flag: "--init's genesis number", got: number });
    }
    let timestamp = cli.timestamp.or(init.as_ref().map(|i| i.timestamp));
    if let Some(timestamp) = timestamp {
        // Dev methods refuse block timestamps past this; a genesis past it would leave no
        // timestamp for the next block.
        let flag = if cli.timestamp.is_some() { "--timestamp" } else { "--init's timestamp" };
        in_range(flag, timestamp, 0, MAX_TIMESTAMP)?;
    }
    let gas_limit = if cli.disable_block_gas_limit {
        u64::MAX
    } else {
        in_range(
            "--gas-limit",
            cli.gas_limit.unwrap_or(DEFAULT_GAS_LIMIT),
            MIN_GAS_LIMIT,
            u64::MAX,
        )?
    };
    let genesis = GenesisSettings {
        base_fee: cli
            .base_fee
            .or(init.as_ref().and_then(|i| i.base_fee))
            .unwrap_or(DEFAULT_BASE_FEE),
        timestamp,
        coinbase: init.as_ref().map_or(Address::ZERO, |i| i.coinbase),
        create2_deployer: !cli.disable_default_create2_deployer,
        alloc: init.as_ref().map(|i| i.alloc.clone()).unwrap_or_default(),
    };
    let genesis_only = [
        ("--balance", cli.balance.is_some()),
        ("--timestamp", cli.timestamp.is_some()),
        ("--number", cli.number.is_some()),
        ("--block-base-fee-per-gas", cli.base_fee.is_some()),
        ("--init", cli.init.is_some()),
        ("--disable-default-create2-deployer", cli.disable_default_create2_deployer),
    ];
    let given = GivenFlags {
        chain_id: cli.chain_id.is_some(),
        hardfork: cli.hardfork.is_some(),
        gas_limit: cli.gas_limit.is_some(),
        genesis_only: genesis_only.iter().filter(|(_, on)| *on).map(|(flag, _)| *flag).collect(),
    };
    Ok(ChainSettings {
        chain_id: cli.chain_id.or(init.map(|i| i.chain_id)).unwrap_or(DEFAULT_CHAIN_ID),
        spec: cli.hardfork.unwrap_or(Hardfork::DEFAULT).spec(),
        genesis,
        given,
        gas_limit,
    })
}

/// The flags that take more than a copy into [`NodeConfig`]: parsed, range-checked and checked
/// against each other, in the order [`NodeConfig::try_from`] reports their errors.
struct Resolved {
    web: WebAccess,
    api: ApiNamespaces,
    chain: ChainSettings,
    fork: Option<ForkSettings>,
    reset_fork: ForkSettings,
    storage: StorageMode,
    threads: ThreadSettings,
    sizes: Sizes,
    actors: ActorSettings,
    code_size_limit: Option<usize>,
    interval: Option<IntervalMining>,
    dump_state: Option<PathBuf>,
    load_state: Option<hearth_rpc::LoadedState>,
    state_interval: Option<Duration>,
    /// `--mnemonic`, or the one `--mnemonic-random` drew.
    mnemonic: String,
    authrpc: Option<AuthRpc>,
    follow: Option<FollowSettings>,
}

/// The threads serving requests: the executor pool, the HTTP workers, and how much the pool
/// admits.
struct ThreadSettings {
    executor_threads: NonZeroUsize,
    http_workers: NonZeroUsize,
    admission: AdmissionLimits,
    inline_budget: Option<Duration>,
}

/// The actors' mailboxes and sizes, and how the executors run.
struct ActorSettings {
    parallel: hearth_actors::ParallelConfig,
    mailbox: NonZeroUsize,
    code_cache_entries: NonZeroUsize,
    txpool_max_count: NonZeroUsize,
    evm_timeout: Duration,
    subscriptions: SubscriptionLimits,
}

/// The flags given as sizes (`64MiB`), in bytes.
struct Sizes {
    txpool_max_bytes: usize,
    max_response_bytes: usize,
    db_cache_bytes: u64,
}

impl TryFrom<Cli> for NodeConfig {
    type Error = ConfigError;

    fn try_from(cli: Cli) -> Result<Self, Self::Error> {
        let web = web_access(&cli)?;
        let api = ApiNamespaces::parse(&cli.http_api)
            .map_err(|reason| ConfigError::Api { got: cli.http_api.clone(), reason })?;
        let chain = chain_settings(&cli)?;
        let fork = fork_settings(&cli)?;
        let reset_fork = reset_fork_settings(&cli)?;
        let storage = storage_mode(&cli)?;
        let threads = thread_settings(&cli)?;
        check_ranges(&cli)?;
        let sizes = sizes(&cli)?;
        let code_size_limit = code_size_limit(&cli)?;
        let interval = block_interval(&cli)?;
        let (dump_state, load_state) =
            state_files(&cli, &storage, fork.is_some(), code_size_limit)?;
        check_dev_keys(&cli)?;
        check_artifacts(&cli.artifacts)?;
        check_ipc(cli.ipc.as_deref())?;
        let actors = actor_settings(&cli, threads.executor_threads)?;
        let resolved = Resolved {
            web,
            api,
            chain,
            fork,
            reset_fork,
            storage,
            threads,
            sizes,
            actors,
            code_size_limit,
            interval,
            state_interval: state_interval(cli.state_interval, dump_state.is_some())?,
            mnemonic: mnemonic(&cli)?,
            authrpc: auth_rpc(
                cli.authrpc_addr,
                cli.authrpc_port,
                cli.authrpc_jwtsecret.clone(),
                cli.engine_same_second_blocks,
            )?,
            follow: follow_settings(&cli)?,
            dump_state,
            load_state,
        };
        Ok(Self::assemble(cli, resolved))
    }
}

impl NodeConfig {
    /// The config of `cli` with its `resolved` flags.
    // long: one field of the config per line, each from its flag or its resolved value.
    fn assemble(cli: Cli, resolved: Resolved) -> Self {
        let Resolved { web, api, chain, fork, reset_fork, storage, threads, sizes, actors, .. } =
            resolved;
        let ChainSettings { chain_id, spec, genesis, given, gas_limit } = chain;
        let ThreadSettings { executor_threads, http_workers, admission, inline_budget } = threads;
        let code_size_limit = resolved.code_size_limit;
        let interval = resolved.interval;
        // A block time alone means interval mining only, as anvil; --automine keeps both.
        // A replica makes no block of its own: each comes from the leader.
        let automine =
            !cli.no_mining && cli.follow.is_none() && (interval.is_none() || cli.automine);
        let balance = cli.balance.unwrap_or(DEFAULT_BALANCE_ETH);
        let show = show_settings(&cli);
        Self {
            storage,
            http_addr: SocketAddr::new(cli.http_addr[0], cli.http_port),
            more_http_ips: cli.http_addr[1..].to_vec(),
            chain_id,
            accounts: cli.accounts,
            balance_wei: U256::from(balance) * U256::from(10u64).pow(U256::from(18)),
            mnemonic: resolved.mnemonic,
            derivation_path: cli.derivation_path,
            spec,
            genesis,
            given,
            gas_price: cli.gas_price,
            code_size_limit,
            block_gas_limit_disabled: cli.disable_block_gas_limit,
            order: match cli.order {
                Order::Fees => TxOrder::Fees,
                Order::Fifo => TxOrder::Fifo,
            },
            auto_impersonate: cli.auto_impersonate,
            config_out: cli.config_out,
            quiet: cli.quiet,
            log_format: if cli.json { LogFormat::Json } else { cli.log_format },
            executor_threads,
            parallel: actors.parallel,
            show,
            artifacts: cli.artifacts,
            ipc: cli.ipc,
            authrpc: resolved.authrpc,
            follow: resolved.follow,
            state_interval: resolved.state_interval,
            http_workers,
            admission,
            inline_budget,
            gas_limit,
            mailbox: actors.mailbox,
            code_cache_entries: actors.code_cache_entries,
            txpool_max_count: actors.txpool_max_count,
            txpool_max_bytes: sizes.txpool_max_bytes,
            db_cache_bytes: sizes.db_cache_bytes,
            automine,
            interval,
            evm_timeout: actors.evm_timeout,
            rpc: RpcLimits {
                gas_cap: cli.rpc_gascap,
                max_logs: cli.rpc_max_logs,
                max_mine_blocks: cli.dev_max_mine_blocks,
                max_response_bytes: sizes.max_response_bytes,
                max_code_bytes: code_size_limit.unwrap_or(hearth_rpc::EIP170_CODE_BYTES),
                ..RpcLimits::default()
            },
            subscriptions: actors.subscriptions,
            web,
            api,
            unlocked_accounts: !cli.no_unlocked_accounts,
            fork,
            reset_fork,
            dump_state: resolved.dump_state,
            load_state: resolved.load_state,
        }
    }
}

/// Where the chain lives. `hearth --dev` (the README's command) is Hearth's persistent dev
/// chain in ~/.hearth/dev, kept across restarts and kill -9. Without --dev or --datadir
/// (anvil's command lines) the chain lives in memory, as anvil's: a script that starts a node
/// gets a fresh chain every time, and several nodes run side by side. `--ephemeral` says so
/// explicitly, with or without --dev (clap refuses it beside --datadir).
fn storage_mode(cli: &Cli) -> Result<StorageMode, ConfigError> {
    Ok(match (cli.datadir.clone(), cli.dev && !cli.ephemeral) {
        (Some(dir), _) => StorageMode::Disk(dir),
        (None, true) => StorageMode::Disk(default_datadir()?),
        (None, false) => StorageMode::Ephemeral,
    })
}

/// `--executor.threads` (default: the cores), `--http.workers` and the pool's admission limits.
fn thread_settings(cli: &Cli) -> Result<ThreadSettings, ConfigError> {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let executor_threads = non_zero("--executor.threads", cli.executor_threads.unwrap_or(cores))?;
    let inline_budget =
        duration_up_to("--executor.inline-budget", &cli.executor_inline_budget, MAX_INLINE_BUDGET)?;
    let inline_budget = (!inline_budget.is_zero()).then_some(inline_budget);
    // With cheap calls run on the workers themselves, a worker per core; without, the front's
    // work per request is microseconds: half the cores keep it ahead of the executors, and on
    // 2 cores a second worker only added context switches (ARCHITECTURE.md).
    let default_workers = if inline_budget.is_some() { cores } else { (cores / 2).max(1) };
    let http_workers = non_zero("--http.workers", cli.http_workers.unwrap_or(default_workers))?;
    in_range("--executor.max-queued", cli.executor_max_queued as u64, 0, MAX_QUEUED as u64)?;
    let admission = AdmissionLimits {
        max_queue_delay: duration_up_to(
            "--executor.max-queue-delay",
            &cli.executor_max_queue_delay,
            MAX_QUEUE_DELAY,
        )?,
        max_queued: cli.executor_max_queued,
    };
    Ok(ThreadSettings { executor_threads, http_workers, admission, inline_budget })
}

/// The range checks of flags used as given.
fn check_ranges(cli: &Cli) -> Result<(), ConfigError> {
    in_range("--accounts", u64::from(cli.accounts), 0, MAX_ACCOUNTS)?;
    in_range("--rpc.gascap", cli.rpc_gascap, MIN_GAS_LIMIT, u64::MAX)?;
    in_range("--cache.code-entries", cli.cache_code_entries as u64, 1, MAX_CODE_CACHE_ENTRIES)?;
    in_range("--rpc.max-logs", cli.rpc_max_logs as u64, 1, MAX_RPC_MAX_LOGS)?;
    in_range("--dev.max-mine-blocks", cli.dev_max_mine_blocks, 1, MAX_MINE_BLOCKS)?;
    Ok(())
}

/// `--txpool.max-bytes` (room for at least one largest transaction), `--rpc.max-response-size`
/// and `--cache.db`, in bytes.
fn sizes(cli: &Cli) -> Result<Sizes, ConfigError> {
    let txpool_max_bytes = parse_size(&cli.txpool_max_bytes).ok_or_else(|| ConfigError::Size {
        flag: "--txpool.max-bytes",
        got: cli.txpool_max_bytes.clone(),
    })?;
    let min_bytes = hearth_actors::mempool::MAX_TX_BYTES;
    if txpool_max_bytes < min_bytes {
        return Err(ConfigError::SizeTooSmall {
            flag: "--txpool.max-bytes",
            min: min_bytes,
            got: txpool_max_bytes,
        });
    }
    let max_response_bytes =
        parse_size(&cli.rpc_max_response_size).ok_or_else(|| ConfigError::Size {
            flag: "--rpc.max-response-size",
            got: cli.rpc_max_response_size.clone(),
        })?;
    in_range(
        "--rpc.max-response-size",
        max_response_bytes as u64,
        MIN_RESPONSE_BYTES,
        MAX_RESPONSE_BYTES,
    )?;
    let db_cache_bytes = parse_size(&cli.cache_db)
        .ok_or_else(|| ConfigError::Size { flag: "--cache.db", got: cli.cache_db.clone() })?
        as u64;
    Ok(Sizes { txpool_max_bytes, max_response_bytes, db_cache_bytes })
}

/// The most code bytes a contract may have (`None`: the fork's limit).
fn code_size_limit(cli: &Cli) -> Result<Option<usize>, ConfigError> {
    Ok(match (cli.disable_code_size_limit, cli.code_size_limit) {
        // As anvil: disabling wins over a limit given beside it.
        (true, _) => Some(usize::MAX),
        (false, Some(0)) => return Err(ConfigError::Zero { flag: "--code-size-limit" }),
        (false, limit) => limit,
    })
}

/// `--block-time` (`None`: no interval mining).
fn block_interval(cli: &Cli) -> Result<Option<IntervalMining>, ConfigError> {
    match &cli.block_time {
        None => Ok(None),
        Some(text) => parse_block_time(text).map_err(|reason| ConfigError::BlockTime {
            flag: "--block-time",
            got: text.clone(),
            reason,
        }),
    }
}

/// That the dev keys can be derived: `--mnemonic` is a valid phrase, and `--derivation-path`
/// has room for `--accounts` keys.
fn check_dev_keys(cli: &Cli) -> Result<(), ConfigError> {
    hearth_actors::dev::dev_signers(&cli.mnemonic, 1)
        .map_err(|e| ConfigError::Mnemonic(e.to_string()))?;
    hearth_actors::dev::check_derivation_path(&cli.derivation_path, cli.accounts).map_err(|e| {
        ConfigError::DerivationPath { path: cli.derivation_path.clone(), reason: e.to_string() }
    })
}

/// `--exec.parallel` and `--exec.threads` (default: from `executor_threads`), the mailbox and
/// size flags of the actors, `--rpc.evm-timeout` and the WebSocket limits.
fn actor_settings(cli: &Cli, executor_threads: NonZeroUsize) -> Result<ActorSettings, ConfigError> {
    Ok(ActorSettings {
        parallel: parallel_config(
            cli.exec_parallel,
            cli.exec_threads.unwrap_or_else(|| default_exec_threads(executor_threads.get())),
        )?,
        mailbox: non_zero("--actors.mailbox", cli.actors_mailbox)?,
        code_cache_entries: non_zero("--cache.code-entries", cli.cache_code_entries)?,
        txpool_max_count: non_zero("--txpool.max-count", cli.txpool_max_count)?,
        evm_timeout: positive_up_to("--rpc.evm-timeout", &cli.rpc_evm_timeout, MAX_EVM_TIMEOUT)?,
        subscriptions: SubscriptionLimits {
            max_connections: non_zero("--ws.max-connections", cli.ws_max_connections)?,
            max_per_connection: non_zero("--ws.max-subscriptions", cli.ws_max_subscriptions)?,
            queue: non_zero("--ws.max-queued", cli.ws_max_queued)?,
        },
    })
}

impl NodeConfig {
    /// What an operator should know before exposing this node: dev methods or unlocked
    /// accounts on an address other machines can reach. One message per risk (logged as
    /// warnings at startup).
    pub fn exposure_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let ips = std::iter::once(self.http_addr.ip()).chain(self.more_http_ips.iter().copied());
        let Some(exposed) = ips.into_iter().find(|ip| !ip.is_loopback()) else {
            return warnings;
        };
        let addr = SocketAddr::new(exposed, self.http_addr.port());
        if self.api.serves_dev_methods() {
            warnings.push(format!(
                "JSON-RPC on {addr} is reachable from other machines and serves the dev methods \
                 (evm_*, anvil_*, hardhat_*), which set any balance, code or storage: for a \
                 shared node pass --http.api eth,net,web3"
            ));
        }
        if self.unlocked_accounts && self.accounts > 0 {
            warnings.push(format!(
                "JSON-RPC on {addr} is reachable from other machines and signs \
                 eth_sendTransaction for {} unlocked dev accounts, whose keys are public: pass \
                 --no-unlocked-accounts",
                self.accounts
            ));
        }
        warnings
    }

    /// An in-memory dev chain with the defaults, RPC on an ephemeral loopback port: for tests.
    pub fn for_tests() -> Self {
        let cli = <Cli as clap::Parser>::parse_from(["hearth", "--ephemeral", "--http.port", "0"]);
        let mut config = Self::try_from(cli).expect("defaults are valid");
        // Small mailboxes make full-mailbox paths reachable in tests.
        config.mailbox = NonZeroUsize::new(64).expect("64 is non-zero");
        config.executor_threads = NonZeroUsize::new(2).expect("2 is non-zero");
        config
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(args: &[&str]) -> Result<NodeConfig, ConfigError> {
        let mut all = vec!["hearth"];
        all.extend_from_slice(args);
        NodeConfig::try_from(Cli::try_parse_from(all).expect("flags parse"))
    }

    #[test]
    fn several_hosts_share_the_port() {
        let config =
            parse(&["--host", "127.0.0.1,::1", "--host", "127.0.0.2", "-p", "9"]).expect("valid");
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:9");
        assert_eq!(
            config.more_http_ips,
            vec!["::1".parse::<std::net::IpAddr>().unwrap(), "127.0.0.2".parse().unwrap()]
        );
        assert!(config.exposure_warnings().is_empty(), "all loopback");
        let exposed = parse(&["--host", "127.0.0.1,0.0.0.0"]).expect("valid");
        assert!(exposed.exposure_warnings().iter().all(|w| w.contains("0.0.0.0")));
        assert_eq!(exposed.exposure_warnings().len(), 2);
    }

    #[test]
    fn a_random_mnemonic_has_the_words_asked_for() {
        let twelve = parse(&["--mnemonic-random"]).expect("valid").mnemonic;
        assert_eq!(twelve.split(' ').count(), 12);
        assert_ne!(twelve, parse(&["--mnemonic-random"]).expect("valid").mnemonic, "drawn anew");
        let long = parse(&["--mnemonic-random", "24"]).expect("valid").mnemonic;
        assert_eq!(long.split(' ').count(), 24);
        assert!(alloy_signer_local::MnemonicBuilder::<alloy_signer_local::coins_bip39::English>::default()
            .phrase(long.as_str())
            .build()
            .is_ok());
        let odd = parse(&["--mnemonic-random", "13"]).unwrap_err();
        assert!(odd.to_string().contains("12, 15, 18, 21 or 24"), "{odd}");
    }

    #[test]
    fn a_state_interval_needs_a_file_and_a_range() {
        let file = std::env::temp_dir().join("hearth-state-interval.json");
        let file = file.to_str().unwrap();
        let every = parse(&["--state", file, "-s", "30"]).expect("valid").state_interval;
        assert_eq!(every, Some(Duration::from_secs(30)));
        assert_eq!(parse(&["--dump-state", file]).expect("valid").state_interval, None);
        let alone = parse(&["--state-interval", "30"]).unwrap_err();
        assert!(alone.to_string().contains("needs a file"), "{alone}");
        for out in ["0", "86401"] {
            let err = parse(&["--state", file, "-s", out]).unwrap_err();
            assert!(err.to_string().contains("between 1 and 86400"), "{err}");
        }
    }

    #[test]
    fn output_flags_take_anvils_names_and_aliases() {
        let plain = parse(&[]).expect("valid");
        assert!(plain.show.console_log && !plain.show.traces && !plain.quiet);
        for args in [
            &["--disable-console-log", "--print-traces", "-q"][..],
            &["--no-console-log", "--enable-trace-printing", "--silent"],
        ] {
            let config = parse(args).expect("valid");
            assert!(!config.show.console_log && config.show.traces && config.quiet, "{args:?}");
        }
        let dir = std::env::temp_dir();
        let given = parse(&["--artifacts", dir.to_str().unwrap()]).expect("a directory");
        assert_eq!(given.artifacts, vec![dir]);
        let missing = parse(&["--artifacts", "/nonexistent/out"]).unwrap_err();
        assert!(missing.to_string().contains("not a directory"), "{missing}");
    }

    #[test]
    fn fork_flags_become_fork_settings() {
        let fork = |args: &[&str]| parse(args).expect("valid").fork.expect("a fork");
        let url = ["--fork-url", "https://eth.example/v2/KEY"];
        let plain = fork(&url);
        assert_eq!(plain.block, ForkBlock::Head);
        assert_eq!(plain.upstream.retries, crate::cli::DEFAULT_FORK_RETRIES);
        assert_eq!(plain.upstream.timeout, Duration::from_secs(30));
        assert!(plain.cache_dir.is_some_and(|d| d.ends_with(".hearth/fork-cache")));
        let behind = fork(&[&url[..], &["--fork-block-number", "-5", "--no-fork-cache"]].concat());
        assert_eq!((behind.block, behind.cache_dir), (ForkBlock::BehindHead(5), None));
        let pinned = fork(
            &[
                &url[..],
                &[
                    "--fork-block-number",
                    "7",
                    "--fork-header",
                    "x-api-key: abc",
                    "--fork-rate-limit",
                    "9",
                ],
            ]
            .concat(),
        );
        assert_eq!(pinned.block, ForkBlock::Number(7));
        assert_eq!(pinned.upstream.headers, vec![("x-api-key".to_owned(), "abc".to_owned())]);
        assert_eq!(pinned.upstream.rate_limit.map(|r| r.get()), Some(9));
        let err = parse(&[&url[..], &["--datadir", "/tmp/x"]].concat()).expect_err("refused");
        assert!(err.to_string().contains("--datadir"), "{err}");
        assert!(parse(&["--ephemeral"]).expect("valid").fork.is_none());
    }

    /// The state file flags: where they go, and the combinations refused before anything runs.
    #[test]
    fn state_file_flags_are_checked() {
        let dir = std::env::temp_dir().join(format!("hearth-config-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("s.json");
        let path = file.to_str().expect("utf-8");
        let dir_path = dir.to_str().expect("utf-8");
        let plain = parse(&["--dump-state", path]).expect("valid");
        assert_eq!((plain.dump_state, plain.load_state), (Some(file.clone()), None));
        // A directory gets state.json; --state loads only a file that is there.
        let into = parse(&["--state", dir_path]).expect("valid");
        assert_eq!((into.dump_state, into.load_state), (Some(dir.join("state.json")), None));
        std::fs::write(&file, r#"{"block":null,"accounts":{},"best_block_number":7}"#)
            .expect("write");
        let both = parse(&["--state", path]).expect("valid");
        let loaded = both.load_state.expect("loaded");
        assert_eq!((loaded.accounts.len(), loaded.best_block_number), (0, Some(7)));
        assert!(
            parse(&["--load-state", path, "--datadir", dir_path])
                .expect_err("refused")
                .to_string()
                .contains("--load-state")
        );
        let fork = parse(&["--dump-state", path, "--fork-url", "http://127.0.0.1:1"])
            .expect_err("refused");
        assert!(fork.to_string().contains("--dump-state"), "{fork}");
        assert!(parse(&["--load-state", path, "--fork-url", "http://127.0.0.1:1"]).is_ok());
        assert!(Cli::try_parse_from(["hearth", "--state", path, "--dump-state", path]).is_err());
        std::fs::write(&file, "{").expect("write");
        let err = parse(&["--load-state", path]).expect_err("refused");
        assert!(err.to_string().starts_with(&format!("--load-state {path}: ")), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn defaults_are_the_dev_chain() {
        let config = parse(&["--ephemeral"]).expect("valid");
        assert_eq!(config.chain_id, 31337);
        assert_eq!(config.accounts, 10);
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:8545");
        assert_eq!(config.storage, StorageMode::Ephemeral);
        assert_eq!(parse(&[]).expect("valid").storage, StorageMode::Ephemeral, "as anvil");
        assert_eq!(
            parse(&["--dev", "--ephemeral"]).expect("valid").storage,
            StorageMode::Ephemeral
        );
        if let Ok(datadir) = default_datadir() {
            let dev = parse(&["--dev"]).expect("valid");
            assert_eq!(dev.storage, StorageMode::Disk(datadir), "--dev persists");
        }
        let disk = parse(&["--datadir", "/tmp/chain"]).expect("valid");
        assert_eq!(disk.storage, StorageMode::Disk(PathBuf::from("/tmp/chain")));
        assert!(config.automine);
        let ws = config.subscriptions;
        assert_eq!(
            (ws.max_connections.get(), ws.max_per_connection.get(), ws.queue.get()),
            (100, 128, 1024)
        );
        assert_eq!(
            config.balance_wei,
            U256::from(10_000u64) * U256::from(10u64).pow(U256::from(18))
        );
    }

    #[test]
    fn each_bad_value_names_its_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--executor.threads", "0"], "--executor.threads"),
            (&["--http.workers", "0"], "--http.workers"),
            (&["--executor.max-queued", "1048577"], "--executor.max-queued"),
            (&["--actors.mailbox", "0"], "--actors.mailbox"),
            (&["--cache.code-entries", "0"], "--cache.code-entries"),
            (&["--cache.code-entries", "2000000"], "--cache.code-entries"),
            (&["--gas-limit", "100"], "--gas-limit"),
            (&["--rpc.gascap", "5"], "--rpc.gascap"),
            (&["--accounts", "20000"], "--accounts"),
            (&["--mnemonic", "not a mnemonic"], "--mnemonic"),
            (&["--txpool.max-count", "0"], "--txpool.max-count"),
            (&["--ws.max-connections", "0"], "--ws.max-connections"),
            (&["--ws.max-subscriptions", "0"], "--ws.max-subscriptions"),
            (&["--ws.max-queued", "0"], "--ws.max-queued"),
            (&["--rpc.evm-timeout", "0s"], "--rpc.evm-timeout"),
            (&["--rpc.evm-timeout", "soon"], "--rpc.evm-timeout"),
            (&["--rpc.evm-timeout=-1"], "--rpc.evm-timeout"),
            (&["--executor.max-queue-delay", "11s"], "--executor.max-queue-delay"),
            (&["--executor.inline-budget", "11ms"], "--executor.inline-budget"),
            (&["--executor.inline-budget", "fast"], "--executor.inline-budget"),
            (&["--executor.max-queue-delay", "soon"], "--executor.max-queue-delay"),
            (&["--executor.max-queue-delay=-1ms"], "--executor.max-queue-delay"),
            (&["--txpool.max-bytes", "12XB"], "--txpool.max-bytes"),
            (&["--txpool.max-bytes", "1KiB"], "--txpool.max-bytes"),
            (&["--block-time", "-1"], "--block-time"),
            (&["--block-time", "x"], "--block-time"),
            (&["--block-time", "3,1"], "--block-time"),
            (&["--block-time", "0,0"], "--block-time"),
            (&["--block-time", "1e30"], "--block-time"),
            (&["--block-time", "inf"], "--block-time"),
            (&["--http.corsdomain", "localhost:5173"], "--http.corsdomain"),
            (&["--http.corsdomain", ""], "--http.corsdomain"),
            (&["--http.corsdomain", "http://a.test,none"], "--http.corsdomain"),
            (&["--http.corsdomain", "http://a.test:99999"], "--http.corsdomain"),
            (&["--ws.origins", "http://*.a.test"], "--ws.origins"),
            (&["--http.vhosts", "localhost:8545"], "--http.vhosts"),
            (&["--http.vhosts", "a,,b"], "--http.vhosts"),
            (&["--http.api", "eth,eht"], "--http.api"),
            (&["--http.api", ""], "--http.api"),
            // It used to panic the miner on its first tick ("overflow when adding duration").
            (&["--block-time", "9223372036854775807"], "--block-time"),
            (&["--block-time", "1,9223372036854775807"], "--block-time"),
            (&["--rpc.max-logs", "0"], "--rpc.max-logs"),
            (&["--rpc.max-logs", "10000001"], "--rpc.max-logs"),
            (&["--dev.max-mine-blocks", "0"], "--dev.max-mine-blocks"),
            (&["--dev.max-mine-blocks", "100000001"], "--dev.max-mine-blocks"),
        ];
        for (args, flag) in cases {
            let err = parse(args).expect_err("must be rejected");
            assert!(err.to_string().contains(flag), "{err} should name {flag}");
        }
    }

    #[test]
    fn anvils_spellings_set_the_same_config() {
        let config = parse(&[
            "-p",
            "0",
            "--host",
            "0.0.0.0",
            "-b",
            "2",
            "-a",
            "3",
            "--balance",
            "5",
            "-m",
            "test test test test test test test test test test test junk",
            "--derivation-path",
            "m/44'/60'/1'/0/",
            "--chain-id",
            "5",
            "--gas-limit",
            "40000000",
            "--base-fee",
            "3",
            "--gas-price",
            "7",
            "--hardfork",
            "CANCUN",
            "--timestamp",
            "1000",
            "--number",
            "0",
            "--code-size-limit",
            "50000",
            "--order",
            "FIFO",
            "--auto-impersonate",
            "--config-out",
            "/tmp/out.json",
            "-q",
            "--no-create2",
            "--json",
            "--steps-tracing",
        ])
        .expect("valid");
        assert_eq!(config.http_addr.to_string(), "0.0.0.0:0");
        assert_eq!(config.interval, Some(IntervalMining::Fixed(Duration::from_secs(2))));
        assert!(!config.automine, "-b alone mines on the interval only, as anvil");
        assert_eq!((config.accounts, config.chain_id, config.gas_limit), (3, 5, 40_000_000));
        assert_eq!(config.balance_wei, U256::from(5u64) * U256::from(10u64).pow(U256::from(18)));
        assert_eq!(config.derivation_path, "m/44'/60'/1'/0/");
        assert_eq!(config.spec, SpecId::CANCUN);
        assert_eq!(config.genesis.base_fee, 3);
        assert_eq!(config.genesis.timestamp, Some(1000));
        assert!(!config.genesis.create2_deployer);
        assert_eq!(config.gas_price, Some(7));
        assert_eq!(config.code_size_limit, Some(50_000));
        assert_eq!(config.order, TxOrder::Fifo);
        assert!(config.auto_impersonate && config.quiet);
        assert_eq!(config.config_out, Some(PathBuf::from("/tmp/out.json")));
        assert_eq!(config.log_format, LogFormat::Json);
        assert!(config.given.chain_id && config.given.hardfork && config.given.gas_limit);
        assert_eq!(
            config.given.genesis_only,
            [
                "--balance",
                "--timestamp",
                "--number",
                "--block-base-fee-per-gas",
                "--disable-default-create2-deployer"
            ]
        );

        // The long names, the other aliases and Hearth's own names land in the same fields.
        let long = parse(&[
            "--port",
            "9",
            "--block-base-fee-per-gas",
            "4",
            "--no-mine",
            "--auto-unlock",
            "--disable-default-create2-deployer",
            "--log.format",
            "json",
            "--hardfork",
            "osaka",
            "--allow-origin",
            "*",
            "--quiet",
        ])
        .expect("valid");
        assert_eq!(long.http_addr.port(), 9);
        assert_eq!((long.genesis.base_fee, long.spec), (4, SpecId::OSAKA));
        assert!(!long.automine && long.interval.is_none() && long.auto_impersonate);
        assert!(!long.genesis.create2_deployer && long.web.cors.is_any());
        let mixed = parse(&["--blockTime", "1", "--mixed-mining"]).expect("valid");
        assert!(mixed.automine && mixed.interval.is_some());
        let hearths = parse(&["--http.port", "9", "--http.addr", "::1"]).expect("valid");
        assert_eq!(hearths.http_addr.to_string(), "[::1]:9");
    }

    #[test]
    fn chain_flags_default_to_anvils_values() {
        let config = parse(&[]).expect("valid");
        assert_eq!(config.spec, SpecId::PRAGUE);
        assert_eq!(config.derivation_path, "m/44'/60'/0'/0/");
        assert_eq!(
            config.genesis,
            GenesisSettings {
                base_fee: 1_000_000_000,
                timestamp: None,
                coinbase: Address::ZERO,
                create2_deployer: true,
                alloc: BTreeMap::new(),
            }
        );
        assert_eq!(config.given, GivenFlags::default());
        assert_eq!((config.gas_price, config.code_size_limit), (None, None));
        assert_eq!(
            (config.order, config.auto_impersonate, config.quiet),
            (TxOrder::Fees, false, false)
        );
        assert_eq!((config.gas_limit, config.block_gas_limit_disabled), (30_000_000, false));
        assert_eq!(config.log_format, LogFormat::Text);
        for fork in ["shanghai", "Cancun", "PRAGUE", "osaka"] {
            assert!(parse(&["--hardfork", fork]).is_ok(), "{fork}");
        }
        // Disabling wins over a limit given beside it, as in anvil.
        let off = parse(&["--disable-block-gas-limit", "--gas-limit", "40000000"]).expect("valid");
        assert_eq!((off.gas_limit, off.block_gas_limit_disabled), (u64::MAX, true));
        let off = parse(&["--disable-code-size-limit", "--code-size-limit", "100"]).expect("ok");
        assert_eq!(off.code_size_limit, Some(usize::MAX));
        assert_eq!(parse(&["--timestamp", "0"]).unwrap().genesis.timestamp, Some(0));
        let leader = |url: &str| parse(&["--follow", url]).map(|c| c.follow.unwrap().leader);
        assert_eq!(leader("ws://127.0.0.1:8545").unwrap(), "http://127.0.0.1:8545");
        assert_eq!(leader("https://node.example/rpc").unwrap(), "https://node.example/rpc");
        for bad in ["http://", "ftp://x", "127.0.0.1:8545", "ws:// x"] {
            assert!(matches!(leader(bad), Err(ConfigError::FollowUrl(_))), "{bad}");
        }
        assert_eq!(
            parse(&["--timestamp", "9223372036854775807"]).unwrap().genesis.timestamp,
            Some(MAX_TIMESTAMP)
        );
    }

    /// Writes a genesis file for `--init` and returns its path (removed by the caller).
    fn genesis_file(name: &str, doc: &Value) -> PathBuf {
        let path = std::env::temp_dir().join(format!("hearth-{name}-{}.json", std::process::id()));
        std::fs::write(&path, doc.to_string()).expect("write");
        path
    }

    #[test]
    fn init_sets_what_the_flags_do_not() {
        let doc = serde_json::json!({
            "config": {"chainId": 777, "londonBlock": 0},
            "timestamp": "0x1000", "baseFeePerGas": "0x7",
            "coinbase": "0x00000000000000000000000000000000000000aa",
            "alloc": {"0x1111111111111111111111111111111111111111": {"balance": "0x10"}}
        });
        let path = genesis_file("init", &doc);
        let file = path.to_str().expect("utf-8");
        let config = parse(&["--init", file]).expect("valid");
        assert_eq!((config.chain_id, config.genesis.base_fee), (777, 7));
        assert_eq!(config.genesis.timestamp, Some(4096));
        assert_eq!(config.genesis.coinbase, Address::with_last_byte(0xaa));
        assert_eq!(config.genesis.alloc.len(), 1);
        assert_eq!(config.given.genesis_only, ["--init"]);
        assert!(!config.given.chain_id);
        let flags =
            parse(&["--init", file, "--chain-id", "5", "--base-fee", "9", "--timestamp", "1"])
                .expect("valid");
        assert_eq!((flags.chain_id, flags.genesis.base_fee), (5, 9));
        assert_eq!(flags.genesis.timestamp, Some(1));
        std::fs::remove_file(&path).expect("cleanup");
    }

    #[test]
    fn each_bad_chain_flag_names_itself() {
        let deep = genesis_file(
            "deep",
            &serde_json::json!({"config": {"chainId": 1}, "number": "0x5", "alloc": {}}),
        );
        let broken = genesis_file("broken", &serde_json::json!({"config": {"chainId": "x"}}));
        let cases: &[(&[&str], &str)] = &[
            (&["--number", "5"], "--number 5 is not supported"),
            (&["--timestamp", "9223372036854775808"], "--timestamp must be between 0 and"),
            (&["--code-size-limit", "0"], "--code-size-limit must be at least 1"),
            (&["--derivation-path", "m/x/"], "--derivation-path \"m/x/\" is not usable"),
            (&["--derivation-path", "m/44'/60'/0'/0/2147483647"], "--derivation-path"),
            (&["--init", "/nonexistent/genesis.json"], "--init /nonexistent/genesis.json"),
            (&["--init", deep.to_str().unwrap()], "--init's genesis number 5 is not supported"),
            (&["--init", broken.to_str().unwrap()], "config.chainId"),
            (&["--gas-limit", "20999"], "--gas-limit must be between 21000"),
        ];
        for (args, message) in cases {
            let err = parse(args).expect_err("must be rejected");
            assert!(err.to_string().contains(message), "{err} should say {message:?}");
        }
        let _ = std::fs::remove_file(deep);
        let _ = std::fs::remove_file(broken);
    }

    #[test]
    fn malformed_chain_flags_are_usage_errors_naming_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--hardfork", "london"], "--hardfork"),
            (&["--hardfork", "foo"], "[possible values: shanghai, cancun, prague, osaka]"),
            (&["--timestamp", "-1"], "invalid value '-1' for '--timestamp"),
            (&["--balance", "-5"], "--balance"),
            (&["--chain-id", "-1"], "--chain-id"),
            (&["--timestamp", "99999999999999999999"], "--timestamp"),
            (&["--base-fee", "99999999999999999999"], "--block-base-fee-per-gas"),
            (&["--base-fee", "-1"], "--block-base-fee-per-gas"),
            (&["--gas-price", "x"], "--gas-price"),
            (&["--gas-price", "-1"], "--gas-price"),
            (&["--number", "-1"], "--number"),
            (&["--code-size-limit", "-5"], "--code-size-limit"),
            (&["--gas-limit", "-1"], "--gas-limit"),
            (&["--order", "lifo"], "[possible values: fees, fifo]"),
            (&["--log.format", "xml"], "--log.format"),
            (&["-p", "65536"], "--http.port"),
            (&["--host", "localhost"], "--http.addr"),
            (&["-a", "x"], "--accounts"),
            (&["--no-mining", "-b", "2"], "--block-time"),
            // anvil flags Hearth does not have are refused by name, never ignored.
            (&["--prune-history"], "--prune-history"),
            (&["-j", "2"], "-j"),
        ];
        for (args, message) in cases {
            let mut all = vec!["hearth"];
            all.extend_from_slice(args);
            let err = Cli::try_parse_from(all).expect_err("must be rejected");
            assert_eq!(err.exit_code(), 2, "{args:?}");
            assert!(err.to_string().contains(message), "{err} should say {message:?}");
        }
    }

    #[test]
    fn web_access_defaults_and_star() {
        let config = parse(&["--ephemeral"]).expect("valid");
        assert_eq!(config.web, WebAccess::default());
        assert!(config.web.cors.allows("http://localhost:5173"));
        assert!(!config.web.cors.allows("http://evil.example"));
        assert!(!config.web.vhosts.allows("evil.example"));
        assert_eq!(config.api, ApiNamespaces::all());
        assert!(config.unlocked_accounts);
        // * for CORS makes the other two * unless they are given.
        let star = parse(&["--ephemeral", "--http.corsdomain", "*"]).expect("valid");
        assert!(star.web.cors.is_any() && star.web.ws_origins.is_any() && star.web.vhosts.is_any());
        let kept = parse(&[
            "--ephemeral",
            "--http.corsdomain",
            "*",
            "--http.vhosts",
            "node.internal",
            "--ws.origins",
            "none",
        ])
        .expect("valid");
        assert!(!kept.web.vhosts.allows("evil.example") && kept.web.vhosts.allows("node.internal"));
        assert_eq!(kept.web.ws_origins, OriginPolicy::none());
        let err = parse(&["--ephemeral", "--http.corsdomain", "localhost:5173"]).expect_err("bad");
        assert_eq!(
            err.to_string(),
            "--http.corsdomain \"localhost:5173\" is not usable: \"localhost:5173\" has no \
             scheme: write it as http://host[:port] (port may be *)"
        );
        let shared =
            parse(&["--ephemeral", "--http.api", "eth,net,web3", "--no-unlocked-accounts"])
                .unwrap();
        assert!(!shared.api.serves_dev_methods() && !shared.unlocked_accounts);
    }

    #[test]
    fn exposing_dev_methods_or_keys_warns() {
        assert!(parse(&["--ephemeral"]).unwrap().exposure_warnings().is_empty(), "loopback");
        let open = parse(&["--ephemeral", "--http.addr", "0.0.0.0"]).unwrap().exposure_warnings();
        assert_eq!(open.len(), 2, "{open:?}");
        assert!(open[0].contains("dev methods") && open[0].contains("--http.api eth,net,web3"));
        assert!(open[1].contains("10 unlocked dev accounts") && open[1].contains("--no-unlocked"));
        let shared = parse(&[
            "--ephemeral",
            "--http.addr",
            "192.168.1.20",
            "--http.api",
            "eth,net,web3",
            "--no-unlocked-accounts",
        ])
        .unwrap();
        assert!(shared.exposure_warnings().is_empty());
        let dev_only =
            parse(&["--ephemeral", "--http.addr", "::", "--http.api", "eth,anvil"]).unwrap();
        let warnings = dev_only.exposure_warnings();
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("JSON-RPC on [::]:8545"), "{warnings:?}");
        let ipv6_loopback = parse(&["--ephemeral", "--http.addr", "::1"]).unwrap();
        assert!(ipv6_loopback.exposure_warnings().is_empty());
    }

    #[test]
    fn durations_read_seconds_and_milliseconds() {
        assert_eq!(
            parse(&["--ephemeral", "--rpc.evm-timeout", "500ms"]).unwrap().evm_timeout.as_millis(),
            500
        );
        assert_eq!(
            parse(&["--ephemeral", "--rpc.evm-timeout", "2.5"]).unwrap().evm_timeout.as_millis(),
            2500
        );
        assert_eq!(parse(&["--ephemeral"]).unwrap().evm_timeout.as_secs(), 5);
        assert_eq!(
            parse(&["--ephemeral", "--rpc.evm-timeout", "250us"]).unwrap().evm_timeout,
            Duration::from_micros(250)
        );
        let longest = parse(&["--ephemeral", "--rpc.evm-timeout", "3600"]).unwrap();
        assert_eq!(longest.evm_timeout, MAX_EVM_TIMEOUT);
        for bad in ["0", "0ms", "3600.5", "1e19", "inf", "NaN", "5x"] {
            let err = parse(&["--ephemeral", "--rpc.evm-timeout", bad]).unwrap_err().to_string();
            assert!(err.contains("--rpc.evm-timeout"), "{bad}: {err}");
        }
    }

    #[test]
    fn inline_calls_default_to_200us_with_a_worker_per_core_and_zero_turns_them_off() {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let on = parse(&["--ephemeral"]).unwrap();
        assert_eq!(on.inline_budget, Some(Duration::from_micros(200)));
        assert_eq!(on.http_workers.get(), cores);
        let off = parse(&["--ephemeral", "--executor.inline-budget", "0"]).unwrap();
        assert_eq!(off.inline_budget, None);
        assert_eq!(off.http_workers.get(), (cores / 2).max(1));
        let given =
            parse(&["--ephemeral", "--executor.inline-budget", "10ms", "--http.workers", "3"]);
        let given = given.unwrap();
        assert_eq!(given.inline_budget, Some(Duration::from_millis(10)));
        assert_eq!(given.http_workers.get(), 3);
    }

    #[test]
    fn the_queue_delay_is_from_zero_to_ten_seconds_and_the_queue_cap_in_range() {
        let delay = |text: &str| {
            parse(&["--ephemeral", "--executor.max-queue-delay", text])
                .map(|c| c.admission.max_queue_delay)
        };
        let defaults = parse(&["--ephemeral"]).unwrap().admission;
        assert_eq!(defaults, AdmissionLimits::default());
        assert_eq!(defaults.max_queue_delay, Duration::from_millis(100));
        assert_eq!(defaults.max_queued, 1024);
        assert_eq!(delay("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(delay("0"), Ok(Duration::ZERO), "0 admits only onto an idle thread");
        assert_eq!(delay("10s"), Ok(Duration::from_secs(10)));
        let err = delay("11s").expect_err("beyond 10s");
        assert_eq!(
            err.to_string(),
            "--executor.max-queue-delay must be a duration from 0 to 10s like 2ms or 500us, got 11s"
        );
        let queued = |text: &str| {
            parse(&["--ephemeral", "--executor.max-queued", text]).map(|c| c.admission.max_queued)
        };
        assert_eq!(queued("0"), Ok(0));
        assert_eq!(queued("1048576"), Ok(1 << 20));
        assert!(queued("1048577").is_err());
    }

    #[test]
    fn the_response_cap_is_a_size_in_range() {
        let cap = |text: &str| {
            parse(&["--ephemeral", "--rpc.max-response-size", text])
                .map(|c| c.rpc.max_response_bytes)
        };
        assert_eq!(parse(&["--ephemeral"]).unwrap().rpc.max_response_bytes, 25 << 20);
        assert_eq!(cap("1GiB"), Ok(1 << 30));
        assert_eq!(cap("64KiB"), Ok(64 << 10));
        let err = cap("1KiB").expect_err("too small");
        assert_eq!(
            err.to_string(),
            "--rpc.max-response-size must be between 65536 and 4294967296, got 1024"
        );
        assert!(cap("5GiB").is_err());
        assert!(
            cap("lots").expect_err("not a size").to_string().contains("--rpc.max-response-size")
        );
    }

    #[test]
    fn sizes_and_block_times_parse() {
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("2MB"), Some(2_000_000));
        assert_eq!(parse_size("MiB"), None);
        assert_eq!(parse_size("1.5MiB"), None);
        let config = parse(&["--ephemeral"]).expect("valid");
        assert_eq!(config.txpool_max_bytes, 256 << 20);
        assert_eq!(config.interval, None);

        let config = parse(&["--ephemeral", "--block-time", "1.5"]).expect("valid");
        assert_eq!(config.interval, Some(IntervalMining::Fixed(Duration::from_millis(1500))));
        assert!(!config.automine, "a block time alone turns automine off");
        let both = parse(&["--ephemeral", "--block-time", "2", "--automine"]).expect("valid");
        assert!(both.automine && both.interval.is_some());
        let range = parse(&["--ephemeral", "--block-time", "1,3"]).expect("valid");
        assert_eq!(
            range.interval,
            Some(IntervalMining::Range {
                min: Duration::from_secs(1),
                max: Duration::from_secs(3)
            })
        );
        let off = parse(&["--ephemeral", "--block-time", "0"]).expect("valid");
        assert_eq!(off.interval, None);
        assert!(off.automine, "0 disables interval mining, automine stays");
        let err = Cli::try_parse_from(["hearth", "--no-mining", "--block-time", "2"]);
        assert_eq!(err.expect_err("conflict").exit_code(), 2);
    }

    #[test]
    fn malformed_values_are_parse_errors() {
        for args in [
            ["hearth", "--http.port", "99999"],
            ["hearth", "--chain-id", "-1"],
            ["hearth", "--balance", "x"],
        ] {
            let err = Cli::try_parse_from(args).expect_err("must fail");
            assert_eq!(err.exit_code(), 2);
        }
        assert!(Cli::try_parse_from(["hearth", "--datadir", "/tmp/x", "--ephemeral"]).is_err());
    }

    #[test]
    fn no_subcommand_runs_the_node_and_subcommands_take_paths() {
        assert!(Cli::try_parse_from(["hearth", "--dev"]).expect("node flags").command.is_none());
        let cli = Cli::try_parse_from(["hearth", "statetest", "a.json", "dir", "--fork", "Prague"])
            .expect("statetest parses");
        match cli.command {
            Some(crate::cli::Command::Statetest(args)) => {
                assert_eq!(args.paths.len(), 2);
                assert_eq!(args.fork.as_deref(), Some("Prague"));
            }
            other => panic!("expected statetest, got {other:?}"),
        }
        let cli = Cli::try_parse_from(["hearth", "blocktest", "dir"]).expect("blocktest parses");
        assert!(matches!(cli.command, Some(crate::cli::Command::Blocktest(_))));
        let cli = Cli::try_parse_from([
            "hearth",
            "import",
            "--genesis",
            "g.json",
            "--datadir",
            "d",
            "a.rlp",
            "b.rlp",
        ])
        .expect("import parses");
        match cli.command {
            Some(crate::cli::Command::Import(args)) => {
                assert_eq!((args.files.len(), args.datadir.is_some()), (2, true));
            }
            other => panic!("expected import, got {other:?}"),
        }
        assert!(Cli::try_parse_from(["hearth", "import", "a.rlp"]).is_err(), "--genesis required");
        let cli = Cli::try_parse_from(["hearth", "export", "--from", "3", "--to", "5", "out.rlp"])
            .expect("export parses");
        match cli.command {
            Some(crate::cli::Command::Export(args)) => {
                assert_eq!((args.from, args.to), (Some(3), Some(5)));
            }
            other => panic!("expected export, got {other:?}"),
        }
        // A runner without a path is a usage error (exit code 2).
        let err = Cli::try_parse_from(["hearth", "statetest"]).expect_err("paths required");
        assert_eq!(err.exit_code(), 2);
    }
}
