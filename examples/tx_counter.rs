//! A new actor added without touching the core: `TxCounterActor` subscribes to committed
//! blocks, keeps a running count of transactions per sender, and serves it as the RPC method
//! `hearth_txCountBySender(address)`.
//!
//! Run it with `cargo run --example tx_counter` (an in-memory dev chain on 127.0.0.1:8545), then
//! `cast send --unlocked --from 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 --value 1`
//! and `cast rpc hearth_txCountBySender 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266`.
//!
//! The pattern is the core's own, in four parts:
//! 1. **A core**: a plain struct with the state and its rules (`TxCounts`), tested without a
//!    `System`.
//! 2. **A thin actor** that owns the core, with a bounded mailbox: it learns about the chain
//!    from `BlockCommitted`, and answers its query both as a message and as `Ask<_>`.
//! 3. **A typed client** (`actor_client!`): the request path `ask`s, which fails at once with a
//!    full mailbox (-32005) instead of waiting for room as `addr.send` would.
//! 4. **A method with typed params** (`Extensions::method`): `(Address,)` is decoded with the
//!    core's strict rules and -32602 messages before the handler runs.
//!
//! The tests inject a message sequence into the actor, as the core's actors are tested, and
//! then ask through the whole node over JSON-RPC.

use std::collections::HashMap;
use std::num::NonZeroUsize;

use actix::{Actor, Addr, Context, Handler, Message};
use alloy_primitives::{Address, U64};
use hearth::cli::Cli;
use hearth::config::NodeConfig;
use hearth::node::Node;
use hearth_messages::state::BlockCommitted;
use hearth_rpc::Extensions;

/// The counts, and the one rule: every sender of a committed block's transactions counts one
/// per transaction.
#[derive(Debug, Default)]
pub struct TxCounts(HashMap<Address, u64>);

impl TxCounts {
    /// Counts the senders of one committed block.
    pub fn commit<'a>(&mut self, senders: impl IntoIterator<Item = &'a Address>) {
        for sender in senders {
            *self.0.entry(*sender).or_default() += 1;
        }
    }

    /// How many transactions `sender` has sent in committed blocks.
    pub fn of(&self, sender: &Address) -> u64 {
        self.0.get(sender).copied().unwrap_or_default()
    }
}

/// Owns the counts.
#[derive(Debug, Default)]
pub struct TxCounterActor {
    counts: TxCounts,
}

impl Actor for TxCounterActor {
    type Context = Context<Self>;
}

impl Handler<BlockCommitted> for TxCounterActor {
    type Result = ();

    fn handle(&mut self, msg: BlockCommitted, _ctx: &mut Self::Context) {
        self.counts.commit(&msg.block.body.senders);
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
        self.counts.of(&msg.0)
    }
}

// The actor answers `Ask<GetTxCount>` with its `Handler<GetTxCount>`.
hearth_messages::answer_asks!(TxCounterActor: GetTxCount);

hearth_messages::actor_client! {
    /// The counter's client: what the RPC method holds instead of the actor's address.
    pub struct TxCounterClient for "tx counter" {
        /// A sender's count; -32005 at once when the counter's mailbox is full.
        ask count: GetTxCount,
    }
}

/// Starts the counter with a bounded mailbox.
pub fn start(mailbox: NonZeroUsize) -> Addr<TxCounterActor> {
    TxCounterActor::create(|ctx| {
        ctx.set_mailbox_capacity(mailbox.get());
        TxCounterActor::default()
    })
}

/// Declares `hearth_txCountBySender([address])` on the counter's client.
pub fn methods(client: TxCounterClient) -> Extensions {
    let mut extensions = Extensions::default();
    extensions.method("hearth_txCountBySender", move |(sender,): (Address,)| {
        let client = client.clone();
        async move { Ok(U64::from(client.count(GetTxCount(sender)).await?)) }
    });
    extensions
}

/// Starts the counter, subscribes it to blocks, and declares its method.
pub async fn install(node: &Node, mailbox: NonZeroUsize) -> (Addr<TxCounterActor>, Extensions) {
    let counter = start(mailbox);
    node.subscribe_blocks(counter.clone().recipient()).await;
    (counter.clone(), methods(TxCounterClient::new(&counter)))
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
        hearth::shutdown::serve_until_signal(&node, server, &[])
            .await
            .map_err(std::io::Error::other)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use alloy_primitives::B256;
    use hearth_messages::storage::{SealedBlock, StoredBody};
    use serde_json::json;

    use super::*;

    /// A committed block whose transactions were sent by `senders` (the counter reads no more).
    fn committed(senders: &[Address]) -> BlockCommitted {
        let block = SealedBlock {
            header: Default::default(),
            hash: B256::ZERO,
            body: StoredBody { transactions: Vec::new(), senders: senders.to_vec() },
            receipts: Vec::new(),
            extras: Default::default(),
        };
        BlockCommitted { block: Arc::new(block) }
    }

    #[test]
    fn the_core_counts_one_per_transaction() {
        let (alice, bob) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let mut counts = TxCounts::default();
        counts.commit(&[alice, bob, alice]);
        counts.commit(&[]);
        assert_eq!((counts.of(&alice), counts.of(&bob), counts.of(&Address::ZERO)), (2, 1, 0));
    }

    /// A message sequence injected into the actor: blocks, then questions through the client.
    #[actix::test]
    async fn the_actor_answers_what_the_blocks_it_was_sent_say() {
        let (alice, bob) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let counter = start(NonZeroUsize::new(8).unwrap());
        let client = TxCounterClient::new(&counter);
        counter.try_send(committed(&[alice, bob])).unwrap();
        counter.try_send(committed(&[alice])).unwrap();
        // The mailbox is FIFO: the asks are answered after both blocks were counted.
        assert_eq!(client.count(GetTxCount(alice)).await.unwrap(), 2);
        assert_eq!(client.count(GetTxCount(bob)).await.unwrap(), 1);
    }

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
        // Typed params: the core's -32602 and its messages.
        let bad = rpc("hearth_txCountBySender", json!(["nope"])).await;
        assert_eq!(bad["error"]["code"], -32602);
        assert!(bad["error"]["message"].as_str().unwrap().starts_with("invalid argument 0"));
        let extra = rpc("hearth_txCountBySender", json!([alice, 1])).await;
        assert_eq!(extra["error"]["message"], "too many arguments, want at most 1");
        let missing = rpc("hearth_txCountBySender", json!([])).await;
        assert_eq!(missing["error"]["message"], "missing value for required argument 0");
    }
}
