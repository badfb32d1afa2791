//! What every executor thread is configured with: the chain's rules and limits, and when and
//! on how many threads a block runs in parallel.

use std::num::NonZeroUsize;
use std::str::FromStr;

use revm::primitives::hardfork::SpecId;

/// What every executor thread is configured with.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The chain id transactions must carry, read per call and per block (anvil_setChainId
    /// changes it at runtime).
    pub chain_id: hearth_messages::ChainId,
    /// The hard fork rules.
    pub spec: SpecId,
    /// The most gas an eth_call / eth_estimateGas may use.
    pub gas_cap: u64,
    /// The longest an eth_call / eth_estimateGas run may take (`None`: no cap).
    pub evm_timeout: Option<std::time::Duration>,
    /// The blob schedule of the chain's current fork (an imported chain's blob schedule may
    /// differ from the fork's defaults); `None` uses the fork's defaults.
    pub blob_params: Option<alloy_eips::eip7840::BlobParams>,
    /// Contract code size limit (`None`: the fork's, EIP-170's 24,576 bytes); initcode may be
    /// twice it. anvil's `--code-size-limit`.
    pub code_size_limit: Option<usize>,
    /// When and on how many threads a block runs in parallel (`--exec.parallel`,
    /// `--exec.threads`); see `parallel.rs`.
    pub parallel: ParallelConfig,
    /// What the node shows of what ran (`--disable-console-log`, `--print-traces`).
    pub show: Show,
}

/// What the node prints of what ran: console.log lines (on in a node, `--disable-console-log`
/// turns them off) and call traces (`--print-traces`). Off by default, as in tests and
/// conformance runs, where nobody reads them.
#[derive(Debug, Clone, Default)]
pub struct Show {
    /// Capture and print console.log calls of mined transactions and calls.
    pub console_log: bool,
    /// Print the call tree of every mined transaction and eth_call.
    pub traces: bool,
    /// Where console output goes besides the log (hearth_console subscribers).
    pub sink: hearth_messages::console::ConsoleSink,
    /// Names from the developer's build output (`--artifacts`) and standard interfaces, for
    /// revert reasons and printed traces.
    pub artifacts: std::sync::Arc<crate::report::Artifacts>,
}

impl Show {
    /// Whether a block built in `mode` captures console output: blocks the node mines do; an
    /// imported block's transactions ran elsewhere, and nobody waits for their lines.
    pub(crate) fn console_in(&self, mode: hearth_messages::executor::BuildMode) -> bool {
        self.console_log && mode == hearth_messages::executor::BuildMode::Pack
    }
}

/// Most threads `--exec.threads` accepts.
pub const MAX_EXEC_THREADS: usize = 64;

/// When blocks run in parallel (`--exec.parallel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParallelMode {
    /// Blocks of at least `parallel::MIN_PARALLEL_TXS` transactions not dominated by one sender.
    Auto,
    /// Every block with a transaction (the conformance runs use this to test the path).
    Always,
    /// Never: every block runs sequentially.
    #[default]
    Never,
}

impl FromStr for ParallelMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(format!("`{other}` is not a parallel mode; use auto, always or never")),
        }
    }
}

impl std::fmt::Display for ParallelMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        })
    }
}

/// How blocks are executed: the mode and the threads a parallel block uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParallelConfig {
    /// When.
    pub mode: ParallelMode,
    /// Threads of one parallel block, its executor included (1 to `MAX_EXEC_THREADS`).
    pub threads: NonZeroUsize,
    /// Helpers run every transaction against the block's start state and the committer
    /// executes none itself unless its run failed validation: the most conflicts, which tests
    /// use to exercise validation (false in every real configuration).
    pub stale_helpers: bool,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        Self { mode: ParallelMode::Never, threads: NonZeroUsize::MIN, stale_helpers: false }
    }
}

impl ParallelConfig {
    /// A configuration, refusing a thread count out of range with a message naming the flag.
    pub fn new(mode: ParallelMode, threads: usize) -> Result<Self, String> {
        match NonZeroUsize::new(threads) {
            Some(n) if threads <= MAX_EXEC_THREADS => {
                Ok(Self { mode, threads: n, stale_helpers: false })
            }
            _ => Err(format!(
                "--exec.threads must be between 1 and {MAX_EXEC_THREADS}, got {threads}"
            )),
        }
    }
}
