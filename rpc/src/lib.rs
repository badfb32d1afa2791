//! Hearth's JSON-RPC front: HTTP transport, limits, the method table, param decoding and the
//! mapping from internal errors to JSON-RPC codes. It owns nothing mutable: it parses, admits,
//! routes to actors through typed clients and recipients, and encodes.
//!
//! Entry points: [`serve`] runs the HTTP server; [`handle_body`] answers one request body
//! without HTTP (the server uses it, and so can tests). Layers, outside in:
//! `transport` (the JSON-RPC envelope, batches, limits), `methods` (the method table),
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
mod transport;
mod txpool;

pub use context::{
    Controls, ExtensionMethod, Extensions, FilterRecipients, MetricSources, RpcContext, RpcLimits,
};
pub use error::RpcError;
pub use metrics::{Rejection, RpcMetrics};
pub use server::serve;
pub use transport::RpcReply;

/// Handles one raw request body and returns what to answer: a JSON body with its HTTP status,
/// or no body (HTTP 204 for notifications only, 413 for an oversized body).
pub async fn handle_body(ctx: &RpcContext, body: &[u8]) -> RpcReply {
    transport::handle_with_grouped(
        &ctx.limits,
        body,
        |method, params| async move {
            let start = std::time::Instant::now();
            // Looked up before `dispatch` takes the name, so counting allocates nothing.
            let slot = RpcMetrics::slot_of(&method);
            let result = methods::dispatch(ctx, method, params).await;
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
mod tests;
