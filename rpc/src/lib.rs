//! Hearth's JSON-RPC front. It owns nothing mutable: it parses, admits, routes to actors
//! through typed clients and recipients, and encodes.
//!
//! Entry points: [`serve`] runs the HTTP server (with WebSocket JSON-RPC and subscriptions on
//! the same port); [`handle_body`] answers one request body without HTTP (tests use it).
//!
//! The map, inside out (each layer imports only the layers before it; `scripts/module-rules.py`
//! checks it in CI):
//! - `core`: the context, errors, params, replies, block tags, JSON shapes. A leaf.
//! - one folder per namespace: `eth`, then `net` (`net_`, `web3_`), `debug`, `trace`, `anvil`
//!   (the dev methods of anvil, Hardhat and `evm_`), `txpool`, `testing`. They may use `eth`;
//!   `eth` uses none of them.
//! - `methods`: the method table, one row per method (name, namespace, kind, handler). Dispatch,
//!   the metrics' method list, the early-refusal list and the namespace gate come from it.
//! - `transport`: HTTP, WebSocket, the JSON-RPC envelope, shedding.

mod anvil;
mod core;
mod debug;
mod engine;
mod eth;
mod methods;
mod net;
mod ots;
mod replica;
mod testing;
mod trace;
mod transport;
mod txpool;

pub use crate::core::{
    ANVIL_DIALECT, ApiNamespaces, Arg, ChainForks, DEFAULT_ORIGINS, DEFAULT_VHOSTS,
    DEFAULT_WS_IDLE_TIMEOUT, DEFAULT_WS_PING_INTERVAL, DEV_NAMESPACES, EIP170_CODE_BYTES,
    ENGINE_MAX_BODY_BYTES, ENGINE_PORT_ETH_METHODS, ExtensionMethod, Extensions, FromParam,
    FromParams, HostPolicy, KNOWN_NAMESPACES, LogSwitch, MAX_STATE_JSON_BYTES, MetricSources,
    NamespaceError, NodeFacts, OriginPolicy, PatternError, Refusal, Rejection, RpcContext,
    RpcError, RpcLimits, RpcMetrics, Surface, TimeFork, WebAccess, client_version,
    is_json_content_type,
};
pub use anvil::state_dump::{
    LoadedState, StateFileError, StateLimits, decode as decode_state, document as state_document,
    read_file as read_state_file, to_hex_gzip,
};
pub use eth::fees::SUGGESTED_TIP;
pub use replica::Replica;
pub use transport::envelope::RpcReply;
pub use transport::handle_body;
pub use transport::ipc::{MAX_IPC_CONNECTIONS, MAX_IPC_PATH_BYTES, serve_ipc};
pub use transport::out_buffer::RESPONSE_BUFFER_RETAINED_BYTES;
pub use transport::server::{KEEP_ALIVE, serve};
pub use transport::shed::{RETRY_PAUSE, RETRY_WINDOW};
pub use transport::ws::MAX_IN_FLIGHT_PER_CONNECTION;

/// The names of the core JSON-RPC methods, sorted (extensions add their own).
pub fn core_methods() -> &'static [&'static str] {
    methods::NAMES.as_slice()
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
