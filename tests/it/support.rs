//! Test support: `TestNode` (a whole node on in-memory storage), `Probe` (an actor that stands
//! in for a peer and records what it receives) and fixtures (signed transactions, BenchToken).

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, Recipient};
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxLegacy};
use alloy_primitives::{Address, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth::config::NodeConfig;
use hearth::node::Node;
use hearth_messages::executor::Admitted;
use hearth_rpc::{Extensions, RpcContext};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Timestamp of the genesis block in tests; blocks then advance one second each.
pub(crate) const GENESIS_TIME: u64 = 1_700_000_000;

/// A whole node on in-memory storage, driven by messages and by JSON-RPC bodies.
pub(crate) struct TestNode {
    pub(crate) node: Node,
    pub(crate) ctx: RpcContext,
}

impl TestNode {
    /// The default dev chain.
    pub(crate) fn start() -> Self {
        Self::start_with(NodeConfig::for_tests())
    }

    /// A node with `config` and a fixed clock.
    pub(crate) fn start_with(config: NodeConfig) -> Self {
        let node = Node::start_with_clock(config, Arc::new(|| GENESIS_TIME)).expect("node starts");
        let ctx = node.rpc_context(Extensions::default());
        Self { node, ctx }
    }

    /// Dev account `i`.
    pub(crate) fn signer(&self, i: usize) -> PrivateKeySigner {
        self.node.signers[i].clone()
    }

    /// Sends a raw JSON-RPC body; the parsed response, or `None` when there is none.
    pub(crate) async fn raw(&self, body: &str) -> Option<Value> {
        let reply = hearth_rpc::handle_body(&self.ctx, body.as_bytes()).await;
        reply.body.map(|b| serde_json::from_slice(&b).expect("response is JSON"))
    }

    /// Calls `method` and returns the whole response object.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.raw(&body.to_string()).await.expect("a request with an id gets a response")
    }

    /// Calls `method` and returns its `result`, failing the test on an error.
    pub(crate) async fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.call(method, params).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// Calls `method`, expecting an error: returns (code, message, data).
    pub(crate) async fn err(&self, method: &str, params: Value) -> (i64, String, Value) {
        let response = self.call(method, params).await;
        let error =
            response.get("error").unwrap_or_else(|| panic!("{method} should fail: {response}"));
        (
            error["code"].as_i64().expect("code is a number"),
            error["message"].as_str().expect("message is a string").to_owned(),
            error.get("data").cloned().unwrap_or(Value::Null),
        )
    }

    /// eth_blockNumber as a number.
    pub(crate) async fn block_number(&self) -> u64 {
        quantity(&self.ok("eth_blockNumber", json!([])).await)
    }

    /// Deploys BenchToken from account 0 and returns its address.
    pub(crate) async fn deploy_bench_token(&self) -> Address {
        let from = self.signer(0).address();
        let hash = self
            .ok(
                "eth_sendTransaction",
                json!([{"from": from, "data": fixtures::bench_token_bytecode()}]),
            )
            .await;
        let receipt = self.ok("eth_getTransactionReceipt", json!([hash])).await;
        assert_eq!(receipt["status"], "0x1", "deploy failed: {receipt}");
        receipt["contractAddress"].as_str().expect("contract address").parse().expect("address")
    }
}

/// Parses a JSON-RPC quantity.
pub(crate) fn quantity(value: &Value) -> u64 {
    let s = value.as_str().unwrap_or_else(|| panic!("not a quantity: {value}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex quantity")
}

/// Mailbox of a probe.
const PROBE_MAILBOX: usize = 256;

/// How a probe answers a message.
type Reply<M> = Box<dyn Fn(&M) -> <M as Message>::Result>;

/// Stands in for a peer actor: records every message it receives (as `K`) and answers with
/// `reply`.
pub(crate) struct Probe<M: Message, K = M> {
    seen: mpsc::Sender<K>,
    reply: Reply<M>,
    /// What of each message is recorded.
    keep: fn(M) -> K,
}

impl<M> Probe<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    /// A probe answering with `reply`; returns its recipient and what it receives, in order.
    /// An executor request (`Admitted<_>`) is kept whole, so its slot in the pool stays taken
    /// until the test drops what it received: an executor still running it.
    pub(crate) fn start(
        reply: impl Fn(&M) -> M::Result + 'static,
    ) -> (Recipient<M>, mpsc::Receiver<M>)
    where
        Self: Actor<Context = Context<Self>> + Handler<M>,
    {
        Self::spawn(Box::new(reply), |msg| msg)
    }
}

impl<M> Probe<Admitted<M>, M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    /// A stand-in executor: answers each request with `reply` and keeps only the request, so
    /// the request's slot frees once it has been answered, as a real executor's does.
    pub(crate) fn start_as_executor(
        reply: impl Fn(&M) -> M::Result + 'static,
    ) -> (Recipient<Admitted<M>>, mpsc::Receiver<M>)
    where
        Self: Actor<Context = Context<Self>> + Handler<Admitted<M>>,
    {
        Self::spawn(Box::new(move |msg: &Admitted<M>| reply(&msg.request)), |msg| msg.request)
    }
}

impl<M, K> Probe<M, K>
where
    M: Message + Send + 'static,
    M::Result: Send,
    K: 'static,
{
    fn spawn(reply: Reply<M>, keep: fn(M) -> K) -> (Recipient<M>, mpsc::Receiver<K>)
    where
        Self: Actor<Context = Context<Self>> + Handler<M>,
    {
        let (seen, received) = mpsc::channel(PROBE_MAILBOX);
        let probe = Self { seen, reply, keep };
        let addr = Self::create(|ctx| {
            ctx.set_mailbox_capacity(PROBE_MAILBOX);
            probe
        });
        (addr.recipient(), received)
    }
}

impl<M: Message + 'static, K: 'static> Actor for Probe<M, K> {
    type Context = Context<Self>;
}

impl<M, K> Handler<M> for Probe<M, K>
where
    M: Message + Send + 'static,
    M::Result: actix::dev::MessageResponse<Self, M>,
    K: 'static,
{
    type Result = M::Result;

    fn handle(&mut self, msg: M, _ctx: &mut Self::Context) -> Self::Result {
        let reply = (self.reply)(&msg);
        self.seen.try_send((self.keep)(msg)).expect("probe channel has room");
        reply
    }
}

/// Transactions and contracts for tests.
pub(crate) mod fixtures {
    use super::*;

    /// A signed EIP-1559 transaction.
    pub(crate) fn eip1559(
        signer: &PrivateKeySigner,
        nonce: u64,
        to: Option<Address>,
        value: U256,
        input: Bytes,
        gas_limit: u64,
    ) -> TxEnvelope {
        let tx = TxEip1559 {
            chain_id: 31337,
            nonce,
            gas_limit,
            max_fee_per_gas: 10_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: to.map_or(TxKind::Create, TxKind::Call),
            value,
            access_list: Default::default(),
            input,
        };
        let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
        tx.into_signed(signature).into()
    }

    /// A signed ETH transfer of `value` wei to `to`.
    pub(crate) fn transfer(
        signer: &PrivateKeySigner,
        nonce: u64,
        to: Address,
        value: u64,
    ) -> TxEnvelope {
        eip1559(signer, nonce, Some(to), U256::from(value), Bytes::new(), 21_000)
    }

    /// A signed legacy (EIP-155) transfer with `gas_price`.
    pub(crate) fn legacy_transfer(
        signer: &PrivateKeySigner,
        nonce: u64,
        to: Address,
        gas_price: u128,
        chain_id: Option<u64>,
    ) -> TxEnvelope {
        let tx = TxLegacy {
            chain_id,
            nonce,
            gas_price,
            gas_limit: 21_000,
            to: TxKind::Call(to),
            value: U256::from(1),
            input: Bytes::new(),
        };
        let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
        tx.into_signed(signature).into()
    }

    fn peers_dir() -> PathBuf {
        crate::conformance::shared_dir().join("../peers")
    }

    /// BenchToken's creation bytecode (../shared/peers/build/BenchToken.json).
    pub(crate) fn bench_token_bytecode() -> String {
        let path = peers_dir().join("build/BenchToken.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let artifact: Value = serde_json::from_str(&text).expect("artifact is JSON");
        let code = artifact["bytecode"].as_str().expect("bytecode");
        if code.starts_with("0x") { code.to_owned() } else { format!("0x{code}") }
    }

    /// Calldata and expected results made by `cast` (../shared/peers/build/calldata.json).
    pub(crate) fn bench_calldata() -> Value {
        let path = peers_dir().join("build/calldata.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("calldata.json")).expect("JSON")
    }

    /// A tiny mailbox size for tests that need a full mailbox.
    pub(crate) fn one() -> NonZeroUsize {
        NonZeroUsize::new(1).expect("1 is non-zero")
    }
}
