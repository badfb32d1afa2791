//! A new actor added without touching the core: `TxCounterActor` subscribes to committed
//! blocks, keeps a running count of transactions per sender, and serves it as the RPC method
//! `hearth_txCountBySender(address)`.
//!
//! Run it with `cargo run --example tx_counter` (an in-memory dev chain on 127.0.0.1:8545), then
//! `cast send --unlocked --from 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 --value 1`
//! and `cast rpc hearth_txCountBySender 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266`.
//!
//! The pattern: own your state in an actor, learn about the chain from `BlockCommitted`, and
//! register RPC methods that ask your actor by message.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, Addr, Context, Handler, Message};
use alloy_primitives::Address;
use hearth::cli::Cli;
use hearth::config::NodeConfig;
use hearth::node::Node;
use hearth_messages::state::BlockCommitted;
use hearth_rpc::Extensions;

/// Owns the per-sender counts.
#[derive(Debug, Default)]
pub struct TxCounterActor {
    counts: HashMap<Address, u64>,
}

impl Actor for TxCounterActor {
    type Context = Context<Self>;
}

impl Handler<BlockCommitted> for TxCounterActor {
    type Result = ();

    fn handle(&mut self, msg: BlockCommitted, _ctx: &mut Self::Context) {
        for sender in &msg.block.body.senders {
            *self.counts.entry(*sender).or_default() += 1;
        }
    }
}

/// How many transactions `0` has sent in committed blocks.
#[derive(Debug, Clone, Copy)]
pub struct GetTxCount(pub Address);

impl Message for GetTxCount {
    type Result = u64;
}

impl Handler<GetTxCount> for TxCounterActor {
    type Result = u64;

    fn handle(&mut self, msg: GetTxCount, _ctx: &mut Self::Context) -> u64 {
        self.counts.get(&msg.0).copied().unwrap_or_default()
    }
}

/// Starts the counter (mailbox bounded), subscribes it to blocks, and registers its method.
pub async fn install(node: &Node, mailbox: NonZeroUsize) -> (Addr<TxCounterActor>, Extensions) {
    let counter = TxCounterActor::create(|ctx| {
        ctx.set_mailbox_capacity(mailbox.get());
        TxCounterActor::default()
    });
    node.subscribe_blocks(counter.clone().recipient()).await;
    let mut extensions = Extensions::default();
    let addr = counter.clone();
    extensions.register(
        "hearth_txCountBySender",
        Arc::new(move |params| {
            let addr = addr.clone();
            Box::pin(async move {
                let sender: Address = params
                    .get(0)
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .ok_or((-32602, "expected [address]".to_owned()))?;
                let count =
                    addr.send(GetTxCount(sender)).await.map_err(|e| (-32603, e.to_string()))?;
                Ok(serde_json::json!(format!("{count:#x}")))
            })
        }),
    );
    (counter, extensions)
}

fn main() -> std::io::Result<()> {
    let cli = <Cli as clap::Parser>::parse_from(["hearth", "--ephemeral"]);
    let config = NodeConfig::try_from(cli).map_err(std::io::Error::other)?;
    actix_rt::System::new().block_on(async move {
        let node = Node::start(config).map_err(std::io::Error::other)?;
        let (_counter, extensions) = install(&node, node.config().mailbox).await;
        let (server, addr) = node.serve_rpc(extensions).map_err(std::io::Error::other)?;
        println!("tx_counter example: JSON-RPC on http://{addr} (hearth_txCountBySender)");
        // Ctrl-C stops it as it stops the node: requests answered, journal checkpointed.
        hearth::shutdown::serve_until_signal(&node, server).await.map_err(std::io::Error::other)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[actix::test]
    async fn counts_each_senders_mined_transactions_over_rpc() {
        let node =
            Node::start_with_clock(NodeConfig::for_tests(), Arc::new(|| 1_700_000_000)).unwrap();
        let (_counter, extensions) = install(&node, NonZeroUsize::new(16).unwrap()).await;
        let ctx = node.rpc_context(extensions);
        let rpc = |method: &str, params: serde_json::Value| {
            let body =
                json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
            let ctx = ctx.clone();
            async move {
                let reply = hearth_rpc::handle_body(&ctx, body.as_bytes()).await;
                serde_json::from_slice::<serde_json::Value>(&reply.body.unwrap()).unwrap()
            }
        };
        let alice = node.signers[0].address();
        let bob = node.signers[1].address();
        for _ in 0..3 {
            rpc("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
        }
        rpc("eth_sendTransaction", json!([{"from": bob, "to": alice, "value": "0x1"}])).await;
        // The notification is delivered after the commit; one more round trip through the
        // counter's mailbox (FIFO) guarantees it has handled all four.
        assert_eq!(rpc("hearth_txCountBySender", json!([alice])).await["result"], "0x3");
        assert_eq!(rpc("hearth_txCountBySender", json!([bob])).await["result"], "0x1");
        let bad = rpc("hearth_txCountBySender", json!(["nope"])).await;
        assert_eq!(bad["error"]["code"], -32602);
    }
}
