//! Hearth messages: every actor message, its reply and error types, and the typed clients.
//!
//! Messages live in one module per receiving actor. They own their data, and requests reply
//! with `Result<T, E>`; notifications (past tense) reply `()`. Clients wrap `Recipient`s so
//! that the RPC front and tests never name an actor type.

pub mod access_list;
pub mod admission;
pub mod ask;
pub mod base_fee;
// Leaves other message modules share; their items are public through `executor`, where other
// crates have always named them.
mod block_build;
pub mod chain_id;
pub mod client;
pub mod code_cache;
pub mod console;
pub mod engine;
pub mod error;
pub mod executor;
pub mod filters;
pub mod follow;
pub mod fork;
pub mod interest;
pub mod mempool;
pub mod miner;
pub mod payload;
// A leaf, public through `executor` as `block_build` is.
mod request;
pub mod reset;
pub mod restarts;
pub mod simulate;
pub mod state;
pub mod subscriptions;
pub mod trace;

pub use chain_id::ChainId;
pub use error::{ExecError, MineError, OverrideError, StateError, TxError};
/// The storage read types (blocks, receipts, state snapshots) the RPC front reads directly.
pub use hearth_storage as storage;
pub use hearth_storage::{ChainDb, SealedBlock, StateView, StoredAccount, StoredBody};
/// revm's reason for refusing a transaction before running it, carried as a type in
/// [`ExecError::Rejected`] and [`TxError::Rejected`].
pub use revm::context::result::InvalidTransaction;
