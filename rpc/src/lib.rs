//! Hearth's JSON-RPC front: HTTP and WebSocket transports, limits, the method table, param decoding and the
//! mapping from internal errors to JSON-RPC codes. It owns nothing mutable: it parses, admits,
//! routes to actors through typed clients and recipients, and encodes.
//!
//! Entry points: [`serve`] runs the HTTP server (with WebSocket JSON-RPC and subscriptions on
//! the same port); [`handle_body`] answers one request body without HTTP (the server uses it
//! for HTTP and WebSocket alike, and so can tests). Layers, outside in: `server` and `ws`
//! (the two transports), `transport` (the JSON-RPC envelope, batches, limits), `methods`
//! (the method table), `subscriptions` (eth_subscribe and notification encoding),
//! one module per group of methods (`net`, `eth`, `call`, `fees`, `eth_tx`, `blocks`, `logs`,
//! `dev`, `txpool`, `proof`), `params` (strict argument decoding) and `error` ([`RpcError`] and its codes).

mod blocks;
mod call;
mod context;
mod dev;
mod error;
mod eth;
mod eth_tx;
mod fees;
mod filters;
mod logs;
mod methods;
mod metrics;
mod net;
mod params;
mod proof;
mod server;
mod subscriptions;
mod transport;
mod txpool;
mod ws;

pub use context::{
    Controls, ExtensionMethod, Extensions, FilterRecipients, MetricSources, RpcContext, RpcLimits,
    SubscriptionRecipients,
};
pub use error::RpcError;
pub use metrics::{Rejection, RpcMetrics};
pub use server::serve;
pub use transport::RpcReply;
pub use ws::MAX_IN_FLIGHT_PER_CONNECTION;

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
    transport::handle_with_grouped(
        &ctx.limits,
        body,
        |method, params| async move {
            let start = std::time::Instant::now();
            // Looked up before `dispatch` takes the name, so counting allocates nothing.
            let slot = RpcMetrics::slot_of(&method);
            let result = methods::dispatch(ctx, method, params, connection).await;
            ctx.metrics.observe_slot(slot, start.elapsed(), &result);
            result
        },
        "eth_sendRawTransaction",
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

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
