//! The way in: the HTTP server and its WebSocket upgrade (`server`, `ws`, `ws/frames`), the Unix
//! socket (`ipc`), the
//! JSON-RPC envelope (`envelope`: bodies, batches, limits, encoding), early shedding of
//! executor calls when the pool is over its budget (`shed`), the per-thread response buffers
//! (`out_buffer`). [`handle_body`] answers one request body: the method table runs each
//! request, under a panic guard, counted in the metrics.

pub(crate) mod envelope;
pub(crate) mod explorer;
pub(crate) mod ipc;
pub(crate) mod out_buffer;
pub(crate) mod server;
pub(crate) mod shed;
pub(crate) mod ws;

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

use crate::core::{Rejection, RpcContext, RpcError};
use crate::eth::tx as eth_tx;
use crate::methods;
use envelope::RpcReply;

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
    envelope::handle_with_grouped(
        &ctx.limits,
        body,
        |method, params| async move {
            let start = std::time::Instant::now();
            // Looked up before `dispatch` takes the name, so counting allocates nothing.
            // One search finds the method's counters and its row (the same sorted order).
            let slot = ctx.metrics.slot_of(&method);
            // Each request's method, as Hardhat's node prints them (`RUST_LOG=rpc::method=debug`).
            tracing::debug!(target: "rpc::method", "{method}");
            // A panic in a method (an extension's, or a bug) fails this request with -32603
            // instead of unwinding through the worker and every request it is serving.
            let run = methods::dispatch(ctx, method, methods::row_at(slot), params, connection);
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
