//! Hearth's JSON-RPC front: HTTP and WebSocket transports, limits, the method table, param decoding and the
//! mapping from internal errors to JSON-RPC codes. It owns nothing mutable: it parses, admits,
//! routes to actors through typed clients and recipients, and encodes.
//!
//! Entry points: [`serve`] runs the HTTP server (with WebSocket JSON-RPC and subscriptions on
//! the same port); [`handle_body`] answers one request body without HTTP (the server uses it
//! for HTTP and WebSocket alike, and so can tests). Layers, outside in: `access` (which web
//! origins, hosts and content types may call; the server enforces it before anything runs),
//! `server` and `ws` (the two transports; `ws/frames` reads client frames within the body
//! limit), `shed` (refusing executor calls before their body is parsed when the pool is over
//! its budget, and pacing connections that retry at once), `transport` (the JSON-RPC
//! envelope, batches, limits), `methods`
//! (the method table and the `--http.api` namespace gate), `subscriptions` (eth_subscribe and notification encoding),
//! one module per group of methods (`net`, `eth`, `call`, `fees`, `eth_tx`, `blocks`,
//! `receipts`, `headers`, `raw`, `capabilities`, `chain_config`, `simulate`, `access_list`,
//! `testing`, `logs`, `dev`, `erc20`, `rewind`, `mined`, `node_info`, `txpool`, `proof`,
//! `debug_trace`, `parity_trace`), `params` (strict argument decoding) and `error`
//! ([`RpcError`] and its codes).

mod access;
mod access_list;
mod blocks;
mod call;
mod capabilities;
mod chain_config;
mod context;
mod debug_trace;
mod dev;
mod erc20;
mod error;
mod eth;
mod eth_tx;
mod fees;
mod filters;
mod fork_warm;
mod headers;
mod log_switch;
mod logs;
mod methods;
mod metrics;
mod mined;
mod net;
mod node_info;
mod out_buffer;
mod params;
mod parity_trace;
mod proof;
mod raw;
mod receipts;
mod reset;
mod rewind;
mod server;
mod shed;
mod sign;
mod simulate;
mod state_dump;
mod storage_range;
mod subscriptions;
mod testing;
mod transport;
mod txpool;
mod ws;

pub use access::{
    DEFAULT_ORIGINS, DEFAULT_VHOSTS, HostPolicy, OriginPolicy, PatternError, WebAccess,
    is_json_content_type,
};
pub use chain_config::{ChainForks, TimeFork};
pub use context::{
    DEFAULT_WS_IDLE_TIMEOUT, DEFAULT_WS_PING_INTERVAL, ExtensionMethod, Extensions, MetricSources,
    RpcContext, RpcLimits,
};
pub use error::RpcError;
pub use fees::SUGGESTED_TIP;
pub use log_switch::LogSwitch;
pub use methods::{
    ApiNamespaces, DEV_METHODS_ELSEWHERE, DEV_NAMESPACES, KNOWN_NAMESPACES, NamespaceError,
};
pub use metrics::{Refusal, Rejection, RpcMetrics};
pub use node_info::{ANVIL_DIALECT, NodeFacts, client_version};
pub use out_buffer::RESPONSE_BUFFER_RETAINED_BYTES;
pub use server::{KEEP_ALIVE, serve};
pub use shed::{RETRY_PAUSE, RETRY_WINDOW};
pub use state_dump::{
    EIP170_CODE_BYTES, LoadedState, MAX_STATE_JSON_BYTES, StateFileError, StateLimits,
    decode as decode_state, document as state_document, read_file as read_state_file, to_hex_gzip,
};
pub use transport::RpcReply;
pub use ws::MAX_IN_FLIGHT_PER_CONNECTION;

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

/// The names of the core JSON-RPC methods, sorted (extensions add their own).
pub fn core_methods() -> &'static [&'static str] {
    metrics::METHODS
}

/// Handles one raw request body and returns what to answer: a JSON body with its HTTP status,
/// or no body (HTTP 204 for notifications only, 413 for an oversized body). Over HTTP there
/// is no connection to notify, so eth_subscribe answers -32601 "notifications not supported".
pub async fn handle_body(ctx: &RpcContext, body: &[u8]) -> RpcReply {
    handle_request(ctx, body, None).await
}

/// [`handle_body`] for a request that came on WebSocket connection `connection` (`None` for
/// HTTP): eth_subscribe and eth_unsubscribe act on that connection's subscriptions.
pub(crate) async fn handle_request(
    ctx: &RpcContext,
    body: &[u8],
    connection: Option<hearth_messages::subscriptions::ConnectionId>,
) -> RpcReply {
    if let Some(refused) = shed::refuse_early(ctx, body) {
        return refused;
    }
    run_request(ctx, body, connection).await
}

/// [`handle_request`] past early shedding: parses the body and runs its requests.
pub(crate) async fn run_request(
    ctx: &RpcContext,
    body: &[u8],
    connection: Option<hearth_messages::subscriptions::ConnectionId>,
) -> RpcReply {
    transport::handle_with_grouped(
        &ctx.limits,
        body,
        |method, params| async move {
            let start = std::time::Instant::now();
            // Looked up before `dispatch` takes the name, so counting allocates nothing.
            let slot = RpcMetrics::slot_of(&method);
            // A panic in a method (an extension's, or a bug) fails this request with -32603
            // instead of unwinding through the worker and every request it is serving.
            let run = methods::dispatch(ctx, method, params, connection);
            let result = match AssertUnwindSafe(run).catch_unwind().await {
                Ok(result) => result,
                Err(panic) => {
                    let what = panic_message(&*panic);
                    ctx.metrics.count_panic();
                    tracing::error!(target: "rpc", panic = %what, "a method panicked; its request failed");
                    Err(RpcError::Panicked(what))
                }
            };
            ctx.metrics.observe_slot(slot, start.elapsed(), &result);
            result
        },
        // With eth off, a batch of raw transactions goes item by item to the gate (-32601).
        if ctx.api.allows("eth_sendRawTransaction") { "eth_sendRawTransaction" } else { "" },
        |items| async move {
            let start = std::time::Instant::now();
            let results = eth_tx::send_raw_batch(ctx, items).await;
            for result in &results {
                ctx.metrics.observe("eth_sendRawTransaction", start.elapsed(), result);
            }
            results
        },
        |error| {
            if matches!(error, RpcError::BatchTooLarge { .. }) {
                ctx.metrics.reject(Rejection::BatchTooLarge);
            }
        },
    )
    .await
}

/// The text of a panic's payload.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
