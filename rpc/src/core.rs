//! The leaf every handler stands on, importing nothing else of this crate: the context a
//! request runs with ([`RpcContext`]: clients, limits, the namespace set, node facts, the fork
//! table, the log switch), [`RpcError`] and its codes, strict parameter decoding
//! ([`Params`], [`FromParam`]), what a method answers ([`Reply`]), block-tag resolution
//! ([`head`], [`state_block`], ...) and conversions to the RPC shapes ([`quantity`],
//! [`rpc_block`], ...). A handler imports what it needs from here (`use crate::core::{...}`);
//! `scripts/module-rules.py` fails CI when a file under `core/` names a module outside it.

mod access;
mod context;
mod error;
mod forks;
mod geth_words;
mod json;
mod log_switch;
mod metrics;
mod namespaces;
mod node_facts;
mod params;
mod reply;
mod surface;
mod tags;

pub use access::*;
pub use context::*;
pub use error::*;
pub use forks::*;
pub(crate) use json::*;
pub use log_switch::*;
pub use metrics::*;
pub use namespaces::*;
pub use node_facts::*;
pub use params::*;
pub(crate) use reply::*;
pub use surface::*;
pub(crate) use tags::*;
