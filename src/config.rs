//! `NodeConfig`: only usable values. Every check on flags lives here, and each error names
//! the flag so the user knows what to change.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use alloy_primitives::U256;
use hearth_rpc::RpcLimits;

use crate::cli::Cli;

/// Where the chain lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageMode {
    /// sled in this directory.
    Disk(PathBuf),
    /// In memory; gone when the process ends.
    Ephemeral,
}

/// A validated node configuration.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Where the chain lives.
    pub storage: StorageMode,
    /// JSON-RPC listen address.
    pub http_addr: SocketAddr,
    /// Chain id.
    pub chain_id: u64,
    /// Number of dev accounts.
    pub accounts: u32,
    /// Balance of each dev account in wei.
    pub balance_wei: U256,
    /// Mnemonic of the dev accounts.
    pub mnemonic: String,
    /// Executor threads.
    pub executor_threads: NonZeroUsize,
    /// Admission bound of the executor pool.
    pub max_in_flight: NonZeroUsize,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Capacity of every actor mailbox.
    pub mailbox: NonZeroUsize,
    /// Shared code cache entries.
    pub code_cache_entries: NonZeroUsize,
    /// Most pooled transactions.
    pub txpool_max_count: NonZeroUsize,
    /// Mine on each transaction.
    pub automine: bool,
    /// RPC limits, including the call gas cap.
    pub rpc: RpcLimits,
}

/// A flag value that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
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
    /// No home directory to put the default datadir in.
    #[error("--datadir is required: $HOME is not set (or use --ephemeral)")]
    NoHome,
    /// The mnemonic is not a valid BIP-39 phrase.
    #[error("--mnemonic is not a valid BIP-39 mnemonic: {0}")]
    Mnemonic(String),
}

/// Most dev accounts derived at startup.
const MAX_ACCOUNTS: u64 = 10_000;
/// Most code cache entries.
const MAX_CODE_CACHE_ENTRIES: u64 = 1_048_576;
/// Smallest block gas limit that fits a transfer.
const MIN_GAS_LIMIT: u64 = 21_000;

/// The datadir when `--datadir` is not given: `$HOME/.hearth/dev`.
pub fn default_datadir() -> Result<PathBuf, ConfigError> {
    let home = std::env::var_os("HOME").ok_or(ConfigError::NoHome)?;
    Ok(PathBuf::from(home).join(".hearth").join("dev"))
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

impl TryFrom<Cli> for NodeConfig {
    type Error = ConfigError;

    fn try_from(cli: Cli) -> Result<Self, Self::Error> {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let storage = match (cli.ephemeral, cli.datadir) {
            (true, _) => StorageMode::Ephemeral,
            (false, Some(dir)) => StorageMode::Disk(dir),
            (false, None) => StorageMode::Disk(default_datadir()?),
        };
        let executor_threads =
            non_zero("--executor.threads", cli.executor_threads.unwrap_or(cores))?;
        let max_in_flight =
            non_zero("--executor.max-in-flight", cli.executor_max_in_flight.unwrap_or(2 * cores))?;
        in_range("--accounts", u64::from(cli.accounts), 0, MAX_ACCOUNTS)?;
        in_range("--gas-limit", cli.gas_limit, MIN_GAS_LIMIT, u64::MAX)?;
        in_range("--rpc.gascap", cli.rpc_gascap, MIN_GAS_LIMIT, u64::MAX)?;
        in_range("--cache.code-entries", cli.cache_code_entries as u64, 1, MAX_CODE_CACHE_ENTRIES)?;
        hearth_actors::dev::dev_signers(&cli.mnemonic, 1)
            .map_err(|e| ConfigError::Mnemonic(e.to_string()))?;
        Ok(Self {
            storage,
            http_addr: SocketAddr::new(cli.http_addr, cli.http_port),
            chain_id: cli.chain_id,
            accounts: cli.accounts,
            balance_wei: U256::from(cli.balance) * U256::from(10u64).pow(U256::from(18)),
            mnemonic: cli.mnemonic,
            executor_threads,
            max_in_flight,
            gas_limit: cli.gas_limit,
            mailbox: non_zero("--actors.mailbox", cli.actors_mailbox)?,
            code_cache_entries: non_zero("--cache.code-entries", cli.cache_code_entries)?,
            txpool_max_count: non_zero("--txpool.max-count", cli.txpool_max_count)?,
            automine: !cli.no_mining,
            rpc: RpcLimits { gas_cap: cli.rpc_gascap, ..RpcLimits::default() },
        })
    }
}

impl NodeConfig {
    /// An in-memory dev chain with the defaults, RPC on an ephemeral loopback port: for tests.
    pub fn for_tests() -> Self {
        let cli = <Cli as clap::Parser>::parse_from(["hearth", "--ephemeral", "--http.port", "0"]);
        let mut config = Self::try_from(cli).expect("defaults are valid");
        // Small mailboxes make full-mailbox paths reachable in tests.
        config.mailbox = NonZeroUsize::new(64).expect("64 is non-zero");
        config.executor_threads = NonZeroUsize::new(2).expect("2 is non-zero");
        config.max_in_flight = NonZeroUsize::new(8).expect("8 is non-zero");
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
    fn defaults_are_the_dev_chain() {
        let config = parse(&["--ephemeral"]).expect("valid");
        assert_eq!(config.chain_id, 31337);
        assert_eq!(config.accounts, 10);
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:8545");
        assert_eq!(config.storage, StorageMode::Ephemeral);
        assert!(config.automine);
        assert_eq!(
            config.balance_wei,
            U256::from(10_000u64) * U256::from(10u64).pow(U256::from(18))
        );
    }

    #[test]
    fn each_bad_value_names_its_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--executor.threads", "0"], "--executor.threads"),
            (&["--executor.max-in-flight", "0"], "--executor.max-in-flight"),
            (&["--actors.mailbox", "0"], "--actors.mailbox"),
            (&["--cache.code-entries", "0"], "--cache.code-entries"),
            (&["--cache.code-entries", "2000000"], "--cache.code-entries"),
            (&["--gas-limit", "100"], "--gas-limit"),
            (&["--rpc.gascap", "5"], "--rpc.gascap"),
            (&["--accounts", "20000"], "--accounts"),
            (&["--mnemonic", "not a mnemonic"], "--mnemonic"),
            (&["--txpool.max-count", "0"], "--txpool.max-count"),
        ];
        for (args, flag) in cases {
            let err = parse(args).expect_err("must be rejected");
            assert!(err.to_string().contains(flag), "{err} should name {flag}");
        }
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
