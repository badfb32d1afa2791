//! Hearth actors: one module per actor, each owning one piece of state.
//!
//! `StateActor` is the only writer of storage; `ExecutorActor`s (one thread each) run revm;
//! `CodeCacheActor` shares analysed bytecode; `MempoolActor` holds pending transactions;
//! `MinerActor` decides when blocks are made; `FilterActor` keeps polling filters and
//! `SubscriptionActor` fans new blocks and transactions out to WebSocket subscribers. See
//! ARCHITECTURE.md for the message flow.

mod access_list;
pub mod block_check;
pub mod block_exec;
mod block_logs;
mod bounded;
mod call_many;
pub mod code_cache;
pub mod console;
pub mod dev;
pub mod engine;
pub mod exec;
pub mod executor;
pub mod filters;
pub mod follow;
pub mod fork;
mod log_bloom;
pub mod mempool;
pub mod miner;
pub mod parallel;
pub mod report;
pub mod senders;
mod simulate;
pub mod state;
pub mod subscriptions;
pub mod supervise;
mod trace;

pub use bounded::start_on;
pub use code_cache::{CodeCache, CodeCacheActor};
pub use exec::{
    CodeL1, CodeL2, ExecConfig, ParallelConfig, ParallelMode, READ_CACHE_ENTRIES, ReadCache, Show,
};
pub use executor::ExecutorActor;
pub use filters::FilterActor;
pub use mempool::{MempoolActor, MempoolConfig};
pub use miner::{Clock, MinerActor, MinerConfig, MinerPeers, system_clock};
pub use state::{GenesisSpec, StateActor, init_genesis};
pub use subscriptions::SubscriptionActor;
pub use supervise::{Restart, RestartCounter};
