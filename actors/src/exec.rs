//! The execution kernel: everything a revm run needs, and nothing that decides which runs to
//! make. It imports no other module of this crate, so every executing module (`block_exec`,
//! `parallel`, `simulate`, `trace`, `access_list`, the `executor` actor) and the mempool
//! depend on it and it on none of them.
//!
//! - **Configuration and rules** (`config.rs`, `rules.rs`): what every executor thread is
//!   configured with ([`ExecConfig`], [`ParallelConfig`]), and the block-level rules of a fork
//!   (blob schedule, excess blob gas, pre-merge rewards, withdrawals root, deposit requests).
//! - **Environments** (`env.rs`): the revm block environment of a stored header or of a block
//!   to execute, the transaction environment of a call request or a pooled transaction.
//! - **State** (`db.rs`, `code.rs`): `ExecDb`, revm's database over the store, with the
//!   block's changes, the thread's read cache and its code L1 ([`CodeL1`]) in front of the
//!   shared L2 actor; `published.rs` is its interface to a parallel block (the published
//!   values it reads before the store, implemented in `parallel`, generic and never `dyn`).
//! - **Running** (`block_evm.rs`, `scratch.rs`, `time_cap.rs`, `precompiles.rs`,
//!   `geth_errors.rs`): the block EVM and its instruction hooks, the thread's reused frames
//!   and memory, the calls' time cap (capped instructions), precompiles that state overrides
//!   move, and revm's errors in geth's words.

mod block_evm;
mod code;
mod config;
mod console_tap;
mod db;
mod env;
mod geth_errors;
mod precompiles;
mod published;
mod rules;
mod scratch;
mod time_cap;

pub(crate) use block_evm::{
    BlockEvm, BlockSetup, block_evm, block_evm_in, coinbase_seen, evm_over, forget_coinbase_seen,
    instrument, pre_block_calls, resolved_blob_params,
};
pub use code::{CODE_L1_ENTRIES, CodeL1, CodeL2};
pub use config::{ExecConfig, MAX_EXEC_THREADS, ParallelConfig, ParallelMode, Show};
pub use console_tap::ConsoleTap;
pub(crate) use db::{AccountNow, BlockChanges, ExecDb};
pub use db::{READ_CACHE_ENTRIES, ReadCache};
pub(crate) use env::{call_env_under, tx_env};
pub(crate) use geth_errors::{exec_error, halt_message, outcome};
pub(crate) use precompiles::MovablePrecompiles;
pub(crate) use published::{Publish, PublishedValues, ReadLog, SlotRead};
pub(crate) use rules::{blob_fraction, deposit_requests, excess_blob_gas, withdrawals_root};
pub use rules::{block_reward, default_blob_params};
pub(crate) use scratch::EvmScratch;
pub use scratch::SCRATCH_RETAINED_BYTES;
pub(crate) use time_cap::{TimeCap, capped_instructions};
