//! The clean stop of a serving node: on SIGINT or SIGTERM, in the order that loses nothing.
//!
//! 1. Close every WebSocket connection (code 1001): an open one would hold the HTTP server's
//!    graceful stop until its 30 s timeout.
//! 2. Drain ([`Node::drain`]): executor calls still queued are answered with -32005 "the node is
//!    shutting down", and the miner commits its block in progress and starts no other.
//! 3. Stop the HTTP servers gracefully (the Engine API port first): the requests they are
//!    serving are answered.
//! 4. `--dump-state`: write the state file, which so holds every block committed above.
//! 5. Checkpoint the journal (flush sled), so the next start has nothing to replay.
//!
//! actix-web's own signal handling is off (`hearth_rpc::serve`) because on a signal it stops
//! the whole actix System, every actor's arbiter, 300 ms after the server: steps 4 and 5 need
//! the state actor after the server has stopped, and would race with that.

use actix_web::dev::Server;

use crate::node::{Node, NodeError};

/// Serves until SIGINT or SIGTERM (or until the server fails), then stops as the module docs
/// say. A server that failed is the error returned, after the checkpoint still ran.
pub async fn serve_until_signal(
    node: &Node,
    server: Server,
    others: &[actix_web::dev::ServerHandle],
) -> Result<(), NodeError> {
    let addr = node.config().http_addr;
    let handle = server.handle();
    let mut running = actix_rt::spawn(server);
    let served = tokio::select! {
        () = signal() => {
            tracing::info!(target: "node", "shutting down: draining requests and the miner");
            if node.subscriptions.send(hearth_messages::subscriptions::CloseAll).await.is_err() {
                tracing::debug!(target: "node", "subscription actor already stopped");
            }
            node.drain().run().await;
            for other in others {
                other.stop(true).await;
            }
            handle.stop(true).await;
            running.await
        }
        ended = &mut running => ended,
    };
    let served = match served {
        Ok(result) => result.map_err(|source| NodeError::Bind { addr, source }),
        Err(join) => Err(NodeError::Bind { addr, source: std::io::Error::other(join) }),
    };
    // A server that ended on its own still gets the miner's block in progress committed.
    node.drain().run().await;
    let dumped = match node.config().dump_state.clone() {
        Some(path) => crate::state_file::write(&node.state, &node.fork_table, &path)
            .await
            .map(|accounts| {
                tracing::info!(target: "node", path = %path.display(), accounts, "state dumped (--dump-state)");
            }),
        None => Ok(()),
    };
    // A failed checkpoint only means the next start replays the journal.
    if let Err(error) = node.checkpoint() {
        tracing::warn!(target: "node", %error, "final journal checkpoint failed; the next start replays it");
    }
    served.and(dumped)
}

/// Resolves on SIGINT or SIGTERM (only on SIGINT when SIGTERM cannot be listened for).
async fn signal() {
    use actix_rt::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = actix_rt::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(error) => {
            tracing::warn!(target: "node", %error, "cannot listen for SIGTERM");
            let _ = actix_rt::signal::ctrl_c().await;
        }
    }
}
