//! WebSocket JSON-RPC on the HTTP port: ordinary methods and batches, eth_subscribe for
//! newHeads, logs and newPendingTransactions, eth_unsubscribe, the bounds, and a slow
//! subscriber being closed with its reason. Each test runs the real server on 127.0.0.1:0 and
//! talks to it with a minimal client built on actix-http's own WebSocket frame codec. No test
//! sleeps: each awaits the next frame, with a timeout only as a failure guard.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use actix_codec::Framed;
use actix_http::ws;
use futures_util::{SinkExt, StreamExt};
use hearth::config::NodeConfig;
use hearth_messages::subscriptions::GetSubscriptionStats;
use hearth_rpc::Extensions;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::support::TestNode;

/// How long a test waits for a frame before it fails (a guard, not a pacing sleep).
const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// A node with its JSON-RPC server (HTTP and WebSocket) bound on an ephemeral loopback port.
pub(crate) struct Served {
    pub(crate) node: TestNode,
    pub(crate) addr: SocketAddr,
    server: actix_web::dev::ServerHandle,
}

impl Served {
    pub(crate) fn start(config: NodeConfig) -> Self {
        let node = TestNode::start_with(config);
        let (server, addr) = node.node.serve_rpc(Extensions::default()).expect("binds");
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Self { node, addr, server: handle }
    }

    async fn connect(&self) -> WsClient {
        WsClient::connect(self.addr, None).await
    }

    pub(crate) async fn stop(self) {
        self.server.stop(false).await;
    }
}

/// A WebSocket client speaking JSON-RPC, one frame at a time.
struct WsClient {
    framed: Framed<TcpStream, ws::Codec>,
    next_id: u64,
}

/// The opening handshake request (RFC 6455's sample key).
fn handshake(addr: SocketAddr) -> String {
    format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// Sends the handshake on `stream` and returns the response head.
async fn open(stream: &mut TcpStream, addr: SocketAddr) -> String {
    stream.write_all(handshake(addr).as_bytes()).await.expect("handshake sent");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.expect("handshake response"));
    }
    String::from_utf8(head).expect("an ASCII response head")
}

impl WsClient {
    /// Connects and upgrades; `recv_buffer` shrinks the socket's receive buffer (a client
    /// that does not read then fills up quickly).
    async fn connect(addr: SocketAddr, recv_buffer: Option<u32>) -> Self {
        let socket = TcpSocket::new_v4().expect("socket");
        if let Some(bytes) = recv_buffer {
            socket.set_recv_buffer_size(bytes).expect("receive buffer size");
        }
        let mut stream = socket.connect(addr).await.expect("connects");
        let head = open(&mut stream, addr).await;
        assert!(head.starts_with("HTTP/1.1 101"), "not upgraded: {head}");
        let codec = ws::Codec::new().client_mode().max_size(64 << 20);
        Self { framed: Framed::new(stream, codec), next_id: 1 }
    }

    async fn send_text(&mut self, text: String) {
        self.framed.send(ws::Message::Text(text.into())).await.expect("frame sent");
    }

    /// The next frame.
    async fn frame(&mut self) -> ws::Frame {
        tokio::time::timeout(FRAME_TIMEOUT, self.framed.next())
            .await
            .expect("a frame in time")
            .expect("the connection is open")
            .expect("a valid frame")
    }

    /// The next text frame as JSON (answering pings on the way).
    async fn json(&mut self) -> Value {
        loop {
            match self.frame().await {
                ws::Frame::Text(bytes) => return serde_json::from_slice(&bytes).expect("JSON"),
                ws::Frame::Ping(bytes) => {
                    self.framed.send(ws::Message::Pong(bytes)).await.expect("pong sent");
                }
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// Calls `method` and returns the whole response (no notification may come first).
    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_text(request.to_string()).await;
        let response = self.json().await;
        assert_eq!(response["id"], id, "expected the answer to {method}, got {response}");
        response
    }

    /// Calls `method` and returns its result.
    async fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// eth_subscribe; the subscription id.
    async fn subscribe(&mut self, params: Value) -> String {
        let id = self.ok("eth_subscribe", params).await;
        let id = id.as_str().expect("a string id").to_owned();
        assert!(
            id.len() == 34
                && id.starts_with("0x")
                && id[2..].chars().all(|c| c.is_ascii_hexdigit()),
            "a 16-byte hex id: {id}"
        );
        id
    }

    /// The next notification: (subscription id, result).
    async fn notification(&mut self) -> (String, Value) {
        let note = self.json().await;
        assert_eq!(note["jsonrpc"], "2.0");
        assert_eq!(note["method"], "eth_subscription", "a notification: {note}");
        assert!(note.get("id").is_none(), "notifications carry no id");
        let subscription = note["params"]["subscription"].as_str().expect("subscription id");
        (subscription.to_owned(), note["params"]["result"].clone())
    }
}

/// The newHeads form of a block from eth_getBlockByNumber: the header fields only, as geth.
fn header_of(mut block: Value) -> Value {
    let object = block.as_object_mut().expect("a block object");
    for field in ["transactions", "uncles", "withdrawals", "size"] {
        object.remove(field);
    }
    block
}

/// A one-GET HTTP client: (status, body).
async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("request sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("response");
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// The value of the sample line that starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(prefix))?.rsplit(' ').next()?.parse().ok()
}

#[actix::test]
async fn ordinary_methods_and_batches_work_over_websocket() {
    let served = Served::start(NodeConfig::for_tests());
    let mut ws = served.connect().await;
    assert_eq!(ws.ok("eth_chainId", json!([])).await, "0x7a69");
    assert_eq!(ws.ok("eth_blockNumber", json!([])).await, "0x0");

    ws.send_text(
        json!([
            {"jsonrpc": "2.0", "id": "a", "method": "eth_chainId", "params": []},
            {"jsonrpc": "2.0", "method": "eth_chainId", "params": []},
            {"jsonrpc": "2.0", "id": "b", "method": "eth_nope", "params": []},
        ])
        .to_string(),
    )
    .await;
    let batch = ws.json().await;
    assert_eq!(batch.as_array().map(Vec::len), Some(2), "the notification is not answered");
    assert_eq!(batch[0], json!({"jsonrpc": "2.0", "id": "a", "result": "0x7a69"}));
    assert_eq!(
        (batch[1]["id"].clone(), batch[1]["error"]["code"].clone()),
        (json!("b"), json!(-32601))
    );

    // A notification alone gets nothing back; malformed JSON gets the same -32700 as HTTP.
    ws.send_text(json!({"jsonrpc": "2.0", "method": "eth_chainId"}).to_string()).await;
    ws.send_text("{\"jsonrpc\":".to_owned()).await;
    let parse_error = ws.json().await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    // Methods that change the chain work too, and HTTP sees the result.
    let alice = served.node.signer(0).address();
    ws.ok("eth_sendTransaction", json!([{"from": alice, "to": alice, "value": "0x1"}])).await;
    assert_eq!(served.node.block_number().await, 1);
    served.stop().await;
}

#[actix::test]
async fn new_heads_delivers_one_header_per_mined_block() {
    let served = Served::start(NodeConfig::for_tests());
    let mut ws = served.connect().await;
    let id = ws.subscribe(json!(["newHeads"])).await;
    served.node.ok("evm_mine", json!([])).await;
    served.node.ok("evm_mine", json!([])).await;
    for number in ["0x1", "0x2"] {
        let (subscription, header) = ws.notification().await;
        assert_eq!(subscription, id);
        let block = served.node.ok("eth_getBlockByNumber", json!([number, false])).await;
        assert_eq!(header["number"], number);
        assert_eq!(header["hash"], block["hash"]);
        assert_eq!(header, header_of(block), "the header fields of eth_getBlockByNumber");
    }
    // Nothing else was queued: the next frame is the answer to this call.
    assert_eq!(ws.ok("eth_blockNumber", json!([])).await, "0x2");
    served.stop().await;
}

#[actix::test]
async fn logs_subscription_delivers_only_matching_logs_in_block_order() {
    or_skip!(crate::conformance::conformance_dir());
    let served = Served::start(NodeConfig::for_tests());
    let node = &served.node;
    let token = node.deploy_bench_token().await;
    let alice = node.signer(0).address();
    let bob = node.signer(1).address();
    let transfer = alloy_primitives::keccak256("Transfer(address,address,uint256)").to_string();
    let approval = alloy_primitives::keccak256("Approval(address,address,uint256)").to_string();

    let mut ws = served.connect().await;
    // Made first, so within one block their notifications would come before the matching one.
    let wrong_topic = ws.subscribe(json!(["logs", {"address": token, "topics": [approval]}])).await;
    let wrong_address = ws.subscribe(json!(["logs", {"address": bob}])).await;
    let matching =
        ws.subscribe(json!(["logs", {"address": [token], "topics": [transfer.clone()]}])).await;
    assert_ne!(wrong_topic, wrong_address);
    let first = node.block_number().await + 1;

    let data =
        |amount: u64| format!("0xa9059cbb{:0>64}{amount:064x}", alloy_primitives::hex::encode(bob));
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": data(5)}])).await;
    // A block with no log at all.
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}])).await;
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": data(7)}])).await;

    let expected = node
        .ok(
            "eth_getLogs",
            json!([{"fromBlock": format!("{first:#x}"), "address": token, "topics": [transfer]}]),
        )
        .await;
    let expected = expected.as_array().expect("an array");
    assert_eq!(expected.len(), 2);
    for log in expected {
        let (subscription, got) = ws.notification().await;
        assert_eq!(subscription, matching, "only the matching subscription is notified");
        assert_eq!(&got, log, "the same log object as eth_getLogs");
        assert_eq!(got["removed"], false);
    }
    let blocks: Vec<_> = expected.iter().map(|l| l["blockNumber"].clone()).collect();
    assert_eq!(blocks, [json!(format!("{first:#x}")), json!(format!("{:#x}", first + 2))]);
    served.stop().await;
}

#[actix::test]
async fn new_pending_transactions_delivers_admitted_hashes_or_transactions_without_mining() {
    let mut config = NodeConfig::for_tests();
    config.automine = false;
    let served = Served::start(config);
    let mut ws = served.connect().await;
    let id = ws.subscribe(json!(["newPendingTransactions"])).await;
    // geth's `true`: the whole transaction, as eth_getTransactionByHash shows it pending.
    let full = ws.subscribe(json!(["newPendingTransactions", true])).await;

    let alice = served.node.signer(0).address();
    let bob = served.node.signer(1).address();
    let hash = served
        .node
        .ok("eth_sendTransaction", json!([{"from": alice, "to": bob, "value": "0x1"}]))
        .await;
    assert_eq!(ws.notification().await, (id.clone(), hash.clone()));
    assert_eq!(served.node.block_number().await, 0, "nothing was mined");
    let pending = served.node.ok("eth_getTransactionByHash", json!([hash])).await;
    assert_eq!(pending["blockNumber"], Value::Null);
    assert_eq!(ws.notification().await, (full, pending));
    served.stop().await;
}

#[actix::test]
async fn unsubscribe_stops_delivery() {
    let served = Served::start(NodeConfig::for_tests());
    let mut ws = served.connect().await;
    let dropped = ws.subscribe(json!(["newHeads"])).await;
    let kept = ws.subscribe(json!(["newHeads"])).await;
    assert_eq!(ws.ok("eth_unsubscribe", json!([dropped])).await, true);
    assert_eq!(ws.ok("eth_unsubscribe", json!([dropped])).await, false, "already gone");
    assert_eq!(ws.call("eth_unsubscribe", json!(["0x12"])).await["error"]["code"], -32602);

    for number in ["0x1", "0x2"] {
        served.node.ok("evm_mine", json!([])).await;
        // The dropped one was made first, so its notification would have come first.
        let (subscription, header) = ws.notification().await;
        assert_eq!((subscription.as_str(), &header["number"]), (kept.as_str(), &json!(number)));
    }
    // Another connection cannot remove this connection's subscription.
    let mut other = served.connect().await;
    assert_eq!(other.ok("eth_unsubscribe", json!([kept])).await, false);
    assert_eq!(ws.ok("eth_unsubscribe", json!([kept])).await, true);
    served.stop().await;
}

#[actix::test]
async fn subscribing_needs_a_websocket_and_a_known_kind() {
    let served = Served::start(NodeConfig::for_tests());
    let (code, message, _) = served.node.err("eth_subscribe", json!(["newHeads"])).await;
    assert_eq!(code, -32601);
    assert!(message.starts_with("notifications not supported"), "{message}");
    assert_eq!(served.node.err("eth_unsubscribe", json!(["0x01"])).await.0, -32601);

    let mut ws = served.connect().await;
    let unknown = ws.call("eth_subscribe", json!(["newBlocks"])).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let message = unknown["error"]["message"].as_str().expect("a message");
    assert!(message.contains("unknown subscription kind \"newBlocks\""), "{message}");
    // A GET without an upgrade is not a WebSocket.
    assert_eq!(http_get(served.addr, "/").await.0, 400);
    served.stop().await;
}

#[actix::test]
async fn connections_and_subscriptions_are_bounded() {
    let mut config = NodeConfig::for_tests();
    config.subscriptions.max_connections = NonZeroUsize::new(1).expect("non-zero");
    config.subscriptions.max_per_connection = NonZeroUsize::new(2).expect("non-zero");
    let served = Served::start(config);
    let mut ws = served.connect().await;
    ws.subscribe(json!(["newHeads"])).await;
    let last = ws.subscribe(json!(["logs"])).await;
    let over = ws.call("eth_subscribe", json!(["newHeads"])).await;
    assert_eq!(over["error"]["code"], -32005, "{over}");

    let mut refused = TcpStream::connect(served.addr).await.expect("connects");
    let head = open(&mut refused, served.addr).await;
    assert!(head.starts_with("HTTP/1.1 503"), "over --ws.max-connections: {head}");
    // Room comes back as subscriptions and connections end.
    assert_eq!(ws.ok("eth_unsubscribe", json!([last])).await, true);
    ws.subscribe(json!(["newPendingTransactions"])).await;
    drop(ws);
    let mut again = None;
    for _ in 0..1000 {
        let mut stream = TcpStream::connect(served.addr).await.expect("connects");
        if open(&mut stream, served.addr).await.starts_with("HTTP/1.1 101") {
            again = Some(stream);
            break;
        }
        // The closed connection is forgotten once its session ends; ask until it has.
        served.node.node.subscriptions.send(GetSubscriptionStats).await.expect("stats");
    }
    assert!(again.is_some(), "a slot frees up when a connection closes");
    served.stop().await;
}

#[actix::test]
async fn a_slow_subscriber_is_closed_with_the_reason_and_the_node_stays_healthy() {
    let mut config = NodeConfig::for_tests();
    config.subscriptions.queue = NonZeroUsize::new(4).expect("non-zero");
    let served = Served::start(config);
    let mut slow = WsClient::connect(served.addr, Some(4096)).await;
    let slow_id = slow.subscribe(json!(["newHeads"])).await;
    let mut reader = served.connect().await;
    let reader_id = reader.subscribe(json!(["newHeads"])).await;

    // The slow client reads nothing: once the socket, the session's channel and its queue of
    // four are full, the next block closes it. Mine until the actor says so (bounded).
    let stats = || async {
        served.node.node.subscriptions.send(GetSubscriptionStats).await.expect("stats")
    };
    let mut mined = 0;
    while stats().await.slow_dropped == 0 {
        assert!(mined < 20_000, "the slow subscriber was never dropped");
        served.node.ok("evm_mine", json!([])).await;
        mined += 1;
        // The reader takes each header before the next block, so its queue never fills.
        assert_eq!(reader.notification().await.0, reader_id);
    }
    assert_eq!(stats().await.connections, 1, "only the reader is left");

    // Reading now drains what was sent, then the close frame with its reason.
    let mut headers = 0;
    let reason = loop {
        match slow.frame().await {
            ws::Frame::Text(bytes) => {
                let note: Value = serde_json::from_slice(&bytes).expect("JSON");
                assert_eq!(note["params"]["subscription"], slow_id.as_str());
                headers += 1;
            }
            ws::Frame::Close(reason) => break reason.expect("a close reason"),
            other => panic!("unexpected frame {other:?}"),
        }
    };
    assert_eq!(reason.code, ws::CloseCode::Policy);
    assert_eq!(reason.description.as_deref(), Some("subscriber too slow: 4 notifications queued"));
    assert!(headers < mined, "the slow client missed the blocks after it was dropped");

    // The node and the other subscriber carry on.
    served.node.ok("evm_mine", json!([])).await;
    let (subscription, header) = reader.notification().await;
    assert_eq!(subscription, reader_id);
    assert_eq!(header["number"], format!("{:#x}", mined + 1));
    assert_eq!(reader.ok("eth_chainId", json!([])).await, "0x7a69");
    let (status, metrics) = http_get(served.addr, "/metrics").await;
    assert_eq!(status, 200);
    assert_eq!(
        sample(&metrics, "hearth_ws_slow_subscribers_dropped_total"),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(sample(&metrics, "hearth_ws_connections "), Some(1.0));
    assert_eq!(sample(&metrics, "hearth_ws_subscriptions{kind=\"newHeads\"}"), Some(1.0));
    served.stop().await;
}

#[actix::test]
async fn a_message_over_the_body_limit_closes_with_1009() {
    let mut config = NodeConfig::for_tests();
    config.rpc.max_body_bytes = 1024;
    let served = Served::start(config);
    let mut ws = served.connect().await;
    // Within the limit it is an ordinary request.
    assert_eq!(ws.ok("eth_chainId", json!([])).await, "0x7a69");
    let padding = "x".repeat(2048);
    let big =
        json!({"jsonrpc": "2.0", "id": 9, "method": "eth_chainId", "params": [], "p": padding});
    ws.send_text(big.to_string()).await;
    match ws.frame().await {
        ws::Frame::Close(Some(reason)) => {
            assert_eq!(reason.code, ws::CloseCode::Size);
            assert_eq!(reason.description.as_deref(), Some("message larger than 1024 bytes"));
        }
        other => panic!("expected a close frame, got {other:?}"),
    }
    served.stop().await;
}

/// Reads one unfragmented server frame (unmasked, as servers send them): (opcode, payload).
fn read_frame(stream: &mut std::net::TcpStream) -> (u8, Vec<u8>) {
    use std::io::Read;
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).expect("frame header");
    let len = match head[1] & 0x7f {
        126 => {
            let mut n = [0u8; 2];
            stream.read_exact(&mut n).expect("length");
            usize::from(u16::from_be_bytes(n))
        }
        127 => {
            let mut n = [0u8; 8];
            stream.read_exact(&mut n).expect("length");
            usize::try_from(u64::from_be_bytes(n)).expect("fits")
        }
        n => usize::from(n),
    };
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).expect("payload");
    (head[0] & 0x0f, payload)
}

#[test]
fn stopping_the_node_closes_websockets_at_once_with_1001() {
    use std::io::{BufRead, BufReader, Write};

    let dir = crate::process::TempDir::new("ws-stop");
    let node = crate::process::NodeProcess::start(dir.path(), &[]);
    let mut stream = std::net::TcpStream::connect(node.addr).expect("connects");
    stream.set_read_timeout(Some(FRAME_TIMEOUT)).expect("timeout");
    stream.write_all(handshake(node.addr).as_bytes()).expect("handshake sent");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut status = String::new();
    reader.read_line(&mut status).expect("status line");
    assert!(status.starts_with("HTTP/1.1 101"), "{status}");
    let mut line = String::new();
    while line != "\r\n" {
        line.clear();
        reader.read_line(&mut line).expect("header line");
    }
    // A client frame must be masked; an all-zero key leaves the payload as it is.
    let request = br#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
    let mut frame = vec![0x81, 0x80 | u8::try_from(request.len()).expect("short"), 0, 0, 0, 0];
    frame.extend_from_slice(request);
    stream.write_all(&frame).expect("request sent");
    let (opcode, answer) = read_frame(&mut stream);
    assert_eq!(opcode, 1, "a text frame");
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    assert!(answer["result"].is_string(), "{answer}");

    // actix-web would wait up to its 30 s shutdown timeout for an open WebSocket.
    let started = std::time::Instant::now();
    node.stop();
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    let (opcode, payload) = read_frame(&mut stream);
    assert_eq!(opcode, 8, "a close frame");
    assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1001);
    assert_eq!(&payload[2..], b"the node is shutting down");
}

/// Creation code of a contract that forwards its calldata to the console address
/// (`STATICCALL(gas, console, 0, calldatasize, 0, 0)` after copying the calldata to memory).
const CONSOLE_RELAY: &str =
    "0x6020600a5f3960205ff3365f5f375f5f365f73000000000000000000636f6e736f6c652e6c6f675afa00";

/// console.sol's calldata for `log(string,string)`.
fn console_log(format: &str, arg: &str) -> String {
    use alloy_dyn_abi::DynSolValue as V;
    let mut data = alloy_primitives::keccak256("log(string,string)")[..4].to_vec();
    data.extend(
        V::Tuple(vec![V::String(format.into()), V::String(arg.into())]).abi_encode_params(),
    );
    alloy_primitives::hex::encode_prefixed(data)
}

#[actix::test]
async fn console_subscription_delivers_what_calls_and_transactions_print() {
    let served = Served::start(NodeConfig::for_tests());
    let node = &served.node;
    let alice = node.signer(0).address();
    let deploy =
        node.ok("eth_sendTransaction", json!([{"from": alice, "data": CONSOLE_RELAY}])).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([deploy])).await;
    let relay = receipt["contractAddress"].clone();

    let mut ws = served.connect().await;
    let id = ws.subscribe(json!(["hearth_console"])).await;
    // A subscription of another kind gets none of it.
    let heads = ws.subscribe(json!(["newHeads"])).await;
    let data = console_log("hello %s", "world\nagain");
    node.ok("eth_call", json!([{"to": relay, "data": data}, "latest"])).await;
    let (subscription, printed) = ws.notification().await;
    assert_eq!(subscription, id);
    assert_eq!(printed, json!({"source": "eth_call", "lines": ["hello world", "again"]}));

    // With its gas given, the transaction is not estimated (an estimate prints too).
    let tx = json!([{"from": alice, "to": relay, "data": data, "gas": "0x30000"}]);
    let hash = node.ok("eth_sendTransaction", tx).await;
    // The block's head comes first: the state owner announces the block as it commits it,
    // and the miner prints the block's transactions once the commit is done.
    let (subscription, _) = ws.notification().await;
    assert_eq!(subscription, heads);
    let (subscription, printed) = ws.notification().await;
    assert_eq!(subscription, id);
    assert_eq!(
        printed,
        json!({
            "source": "transaction",
            "transactionHash": hash,
            "blockNumber": "0x2",
            "lines": ["hello world", "again"],
        })
    );
    // Nothing else was queued.
    assert_eq!(ws.ok("eth_blockNumber", json!([])).await, "0x2");
    served.stop().await;
}

#[actix::test]
async fn logs_a_rewind_undid_are_sent_again_as_removed() {
    let served = Served::start(NodeConfig::for_tests());
    let node = &served.node;
    let alice = node.signer(0).address();
    // Logs one word (LOG0) whenever called.
    let code = "0x600b600a5f39600b5ff360ff60005260206000a000";
    let deploy = node.ok("eth_sendTransaction", json!([{"from": alice, "data": code}])).await;
    let logger =
        node.ok("eth_getTransactionReceipt", json!([deploy])).await["contractAddress"].clone();
    let mut ws = served.connect().await;
    let id = ws.subscribe(json!(["logs", {"address": logger}])).await;
    let snapshot = node.ok("evm_snapshot", json!([])).await;
    let mut logs = Vec::new();
    for _ in 0..2 {
        node.ok("eth_sendTransaction", json!([{"from": alice, "to": logger}])).await;
        let (subscription, log) = ws.notification().await;
        assert_eq!((subscription.as_str(), &log["removed"]), (id.as_str(), &json!(false)));
        logs.push(log);
    }
    assert_eq!(node.ok("evm_revert", json!([snapshot])).await, true);
    for log in logs.iter().rev() {
        let (subscription, removed) = ws.notification().await;
        assert_eq!(subscription, id);
        let mut expected = log.clone();
        expected["removed"] = json!(true);
        assert_eq!(removed, expected, "the undone log again, newest first");
    }
    // Nothing else was queued.
    assert_eq!(ws.ok("eth_blockNumber", json!([])).await, "0x1");
    served.stop().await;
}
