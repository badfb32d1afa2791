//! Tracing end to end: geth-style (`debug_trace*`) and parity-style (`trace_*`) methods on a
//! dev chain with hand-assembled contracts (a nested call with a failing static call, a
//! CREATE2 of a contract that self-destructs, a delegation), the replay of a block's earlier
//! transactions, the bounds (timeout, response cap), bad input, and geth's own struct logs from
//! the hive chain compared byte for byte.

use alloy_consensus::{
    Block, BlockBody, SignableTransaction, TxEip7702, TxEnvelope, transaction::SignerRecoverable,
};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip7702::Authorization;
use alloy_primitives::{Address, Bytes, U256, hex};
use alloy_rlp::Encodable;
use alloy_signer::SignerSync;
use hearth::config::NodeConfig;
use serde_json::{Value, json};

use crate::support::{TestNode, fixtures, quantity};

/// Callee: stores its calldata word in slot 0, logs it (topic = the word) and returns it + 1.
pub(crate) const CALLEE: &str = "600035 80600055 80600052 8060206000a1 600101 600052 60206000f3";
/// Caller: CALLs the address in its calldata with 42 (keeping the answer), then STATICCALLs
/// it with 10,000 gas (the SSTORE there halts: write protection), and returns the answer.
pub(crate) const NESTER: &str = "602a60005260206000602060006000600035 5af150\
                      602060206020600060003561 2710fa50 60206000f3";
/// Factory: CREATE2 (salt 1) of the init code in its calldata; returns the new address.
pub(crate) const FACTORY: &str = "3660006000376001366000 6000f5 60005260206000f3";
/// Init code that self-destructs to its creator while being created.
pub(crate) const SELF_DESTRUCTING_INIT: &str = "33ff";
/// Returns NUMBER (for block overrides).
const NUMBER: &str = "4360005260206000f3";

pub(crate) fn code(text: &str) -> Vec<u8> {
    hex::decode(text.replace(' ', "")).expect("hex")
}

/// Init code that deploys `runtime` as is.
pub(crate) fn deploy_code(runtime: &[u8]) -> Bytes {
    let len = u8::try_from(runtime.len()).expect("a short runtime");
    let mut init = vec![0x60, len, 0x80, 0x60, 0x0b, 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3];
    init.extend_from_slice(runtime);
    init.into()
}

/// A word of calldata holding `address`.
pub(crate) fn address_word(address: Address) -> Bytes {
    let mut word = [0u8; 32];
    word[12..].copy_from_slice(address.as_slice());
    Bytes::from(word.to_vec())
}

/// A dev chain with the callee, the nester and the factory deployed, and the hash of a
/// nested call (nester -> callee) mined alone in its block.
pub(crate) struct Chain {
    pub(crate) node: TestNode,
    pub(crate) callee: Address,
    pub(crate) nester: Address,
    pub(crate) factory: Address,
    pub(crate) nested: String,
}

impl Chain {
    pub(crate) async fn start() -> Self {
        Self::with(NodeConfig::for_tests()).await
    }

    async fn with(config: NodeConfig) -> Self {
        let node = TestNode::start_with(config);
        let callee = deploy(&node, &code(CALLEE)).await;
        let nester = deploy(&node, &code(NESTER)).await;
        let factory = deploy(&node, &code(FACTORY)).await;
        let nested = send(&node, Some(nester), address_word(callee), 200_000).await;
        Self { node, callee, nester, factory, nested }
    }

    async fn trace(&self, hash: &str, options: Value) -> Value {
        self.node.ok("debug_traceTransaction", json!([hash, options])).await
    }
}

pub(crate) async fn deploy(node: &TestNode, runtime: &[u8]) -> Address {
    let hash = send(node, None, deploy_code(runtime), 200_000).await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    receipt["contractAddress"].as_str().expect("created").parse().expect("address")
}

/// eth_sendTransaction from account 0 with a fixed gas (a reverting one is mined too).
pub(crate) async fn send(node: &TestNode, to: Option<Address>, data: Bytes, gas: u64) -> String {
    let from = node.signer(0).address();
    let mut tx = json!({"from": from, "data": data, "gas": format!("{gas:#x}")});
    if let Some(to) = to {
        tx["to"] = json!(to);
    }
    node.ok("eth_sendTransaction", json!([tx])).await.as_str().expect("hash").to_owned()
}

pub(crate) fn address_of(value: &Value) -> Address {
    value.as_str().expect("an address").parse().expect("address")
}

#[actix::test]
async fn call_tracer_shows_the_nested_calls_and_their_failures() {
    let chain = Chain::start().await;
    let from = chain.node.signer(0).address();
    let frame = chain.trace(&chain.nested, json!({"tracer": "callTracer"})).await;
    assert_eq!(frame["type"], "CALL");
    assert_eq!((address_of(&frame["from"]), address_of(&frame["to"])), (from, chain.nester));
    let receipt = chain.node.ok("eth_getTransactionReceipt", json!([chain.nested])).await;
    assert_eq!(frame["gasUsed"], receipt["gasUsed"], "the root frame's gas is the receipt's");
    let calls = frame["calls"].as_array().expect("two subcalls");
    assert_eq!(calls.len(), 2, "{frame}");
    assert_eq!(
        (calls[0]["type"].as_str(), address_of(&calls[0]["to"])),
        (Some("CALL"), chain.callee)
    );
    assert_eq!(calls[0]["output"], format!("0x{:064x}", 43), "42 + 1");
    assert!(calls[0].get("error").is_none());
    assert_eq!(calls[1]["type"], "STATICCALL");
    assert!(calls[1]["error"].is_string(), "the SSTORE in a static call fails: {}", calls[1]);
    assert!(calls[0].get("logs").is_none(), "no logs unless withLog");

    let with_log = json!({"tracer": "callTracer", "tracerConfig": {"withLog": true}});
    let frame = chain.trace(&chain.nested, with_log).await;
    let log = &frame["calls"][0]["logs"][0];
    assert_eq!(address_of(&log["address"]), chain.callee);
    assert_eq!(log["topics"][0], format!("0x{:064x}", 42));
    let top = json!({"tracer": "callTracer", "tracerConfig": {"onlyTopCall": true}});
    assert!(chain.trace(&chain.nested, top).await.get("calls").is_none());
}

#[actix::test]
async fn prestate_tracer_reports_the_state_before_and_after() {
    let chain = Chain::start().await;
    let pre = chain.trace(&chain.nested, json!({"tracer": "prestateTracer"})).await;
    let callee = &pre[format!("{:#x}", chain.callee)];
    assert_eq!(callee["storage"][format!("0x{:064x}", 0)], format!("0x{:064x}", 0), "{pre}");
    assert!(callee["code"].is_string());
    let from = format!("{:#x}", chain.node.signer(0).address());
    assert!(pre[&from]["balance"].is_string() && pre[&from]["nonce"].is_number(), "{pre}");

    let diff = json!({"tracer": "prestateTracer", "tracerConfig": {"diffMode": true}});
    let diff = chain.trace(&chain.nested, diff).await;
    let slot = format!("0x{:064x}", 0);
    let post = &diff["post"][format!("{:#x}", chain.callee)]["storage"][&slot];
    assert_eq!(post, &json!(format!("0x{:064x}", 42)), "{diff}");

    let bare = json!({"tracer": "prestateTracer", "tracerConfig": {"disableCode": true, "disableStorage": true}});
    let bare = chain.trace(&chain.nested, bare).await;
    let callee = &bare[format!("{:#x}", chain.callee)];
    assert!(callee.get("code").is_none() && callee.get("storage").is_none(), "{bare}");
}

#[actix::test]
async fn the_other_built_in_tracers_answer_their_frames() {
    let chain = Chain::start().await;
    let four = chain.trace(&chain.nested, json!({"tracer": "4byteTracer"})).await;
    // Every call here carries one word, whose first 4 bytes (zero) count as its selector: the
    // transaction, its CALL and its STATICCALL.
    assert_eq!(four, json!({"0x00000000-28": 3}));
    assert_eq!(chain.trace(&chain.nested, json!({"tracer": "noopTracer"})).await, json!({}));
    let flat = chain.trace(&chain.nested, json!({"tracer": "flatCallTracer"})).await;
    let addresses: Vec<_> =
        flat.as_array().expect("flat").iter().map(|t| t["traceAddress"].clone()).collect();
    assert_eq!(addresses, [json!([]), json!([0]), json!([1])]);
    let mux = json!({"tracer": "muxTracer", "tracerConfig": {"callTracer": {}, "4byteTracer": {}}});
    let mux = chain.trace(&chain.nested, mux).await;
    assert_eq!(mux["4byteTracer"], four);
    assert_eq!(mux["callTracer"]["calls"].as_array().map(Vec::len), Some(2));
}

#[actix::test]
async fn struct_logs_follow_the_options() {
    let chain = Chain::start().await;
    let full =
        chain.trace(&chain.nested, json!({"enableMemory": true, "enableReturnData": true})).await;
    let receipt = chain.node.ok("eth_getTransactionReceipt", json!([chain.nested])).await;
    assert_eq!(full["gas"].as_u64(), Some(quantity(&receipt["gasUsed"])));
    assert_eq!(full["failed"], false);
    assert_eq!(full["returnValue"], format!("0x{:064x}", 43));
    let logs = full["structLogs"].as_array().expect("struct logs");
    let depths: Vec<u64> = logs.iter().map(|l| l["depth"].as_u64().expect("depth")).collect();
    assert_eq!((depths[0], depths.iter().max()), (1, Some(&2)), "steps of the subcalls are deeper");
    let sstore =
        logs.iter().find(|l| l["op"] == "SSTORE" && l["depth"] == 2).expect("the callee's SSTORE");
    assert_eq!(sstore["storage"][format!("0x{:064x}", 0)], format!("0x{:064x}", 42));
    assert!(logs.iter().any(|l| l["memory"].is_array()), "memory when enabled");
    assert!(logs.iter().any(|l| l["returnData"].is_string()), "return data after the CALL");
    assert_eq!(
        logs.iter().filter(|l| l["error"] == "write protection").count(),
        1,
        "the static call's SSTORE fails in geth's words"
    );

    let limited = chain.trace(&chain.nested, json!({"limit": 5, "disableStack": true})).await;
    let limited = limited["structLogs"].as_array().expect("struct logs");
    assert_eq!(limited.len(), 5);
    assert!(limited.iter().all(|l| l.get("stack").is_none() && l.get("memory").is_none()));
    let quiet = chain.trace(&chain.nested, json!({"disableStorage": true})).await;
    assert!(
        quiet["structLogs"].as_array().expect("logs").iter().all(|l| l.get("storage").is_none())
    );
}

#[actix::test]
async fn a_replay_sees_what_earlier_transactions_of_its_block_did() {
    let chain = Chain::start().await;
    let node = &chain.node;
    let signer = node.signer(1);
    node.ok("evm_setAutomine", json!([false])).await;
    // Two calls of the nester in one block: the second finds the first's value in slot 0.
    let mut hashes = Vec::new();
    for nonce in 0..2 {
        let tx = fixtures::eip1559(
            &signer,
            nonce,
            Some(chain.nester),
            U256::ZERO,
            address_word(chain.callee),
            200_000,
        );
        let raw = Bytes::from(tx.encoded_2718());
        hashes.push(node.ok("eth_sendRawTransaction", json!([raw])).await);
    }
    node.ok("evm_mine", json!([])).await;
    let number = node.block_number().await;
    let block = node.ok("eth_getBlockByNumber", json!([format!("{number:#x}"), false])).await;
    assert_eq!(block["transactions"], json!(hashes), "both in one block");

    let second =
        chain.trace(hashes[1].as_str().expect("hash"), json!({"tracer": "prestateTracer"})).await;
    let slot = &second[format!("{:#x}", chain.callee)]["storage"][format!("0x{:064x}", 0)];
    assert_eq!(slot, &json!(format!("0x{:064x}", 42)), "written by the first: {second}");
    let sender = &second[format!("{:#x}", signer.address())];
    assert_eq!(sender["nonce"], 1, "after the first transaction");

    // Every receipt's gas equals the struct logger's.
    let traces = node.ok("debug_traceBlockByNumber", json!([format!("{number:#x}")])).await;
    let traces = traces.as_array().expect("one per transaction");
    assert_eq!(traces.len(), 2);
    for (trace, hash) in traces.iter().zip(&hashes) {
        assert_eq!(&trace["txHash"], hash);
        let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
        assert_eq!(trace["result"]["gas"].as_u64(), Some(quantity(&receipt["gasUsed"])));
    }
    let by_hash = node.ok("debug_traceBlockByHash", json!([block["hash"]])).await;
    assert_eq!(&by_hash, &Value::Array(traces.clone()));

    // debug_traceBlock on the same block, given as RLP, answers the same.
    let stored = node.ctx.chain.header(number).expect("read").expect("header");
    let body = node.ctx.chain.body(number).expect("read").expect("body");
    let raw = Block {
        header: stored,
        body: BlockBody {
            transactions: body.transactions,
            ommers: vec![],
            withdrawals: Some(Default::default()),
        },
    };
    let mut rlp = Vec::new();
    raw.encode(&mut rlp);
    let traced = node.ok("debug_traceBlock", json!([Bytes::from(rlp)])).await;
    assert_eq!(&traced, &by_hash);
}

#[actix::test]
async fn trace_call_takes_state_and_block_overrides() {
    let chain = Chain::start().await;
    let target = Address::repeat_byte(0x77);
    let call = json!({"to": target});
    let options = json!({
        "tracer": "callTracer",
        "stateOverrides": {format!("{target:#x}"): {"code": format!("0x{NUMBER}")}},
        "blockOverrides": {"number": "0x1234"},
    });
    let frame = chain.node.ok("debug_traceCall", json!([call, "latest", options])).await;
    assert_eq!(frame["output"], format!("0x{:064x}", 0x1234), "{frame}");
    // Without overrides the target has no code.
    let plain =
        chain.node.ok("debug_traceCall", json!([call, "latest", {"tracer": "callTracer"}])).await;
    assert!(plain.get("output").is_none_or(|o| o == "0x"), "{plain}");
    // The default tracer on a call.
    let logs = chain
        .node
        .ok("debug_traceCall", json!([{"to": chain.nester, "data": address_word(chain.callee)}]))
        .await;
    assert_eq!(logs["returnValue"], format!("0x{:064x}", 43));
}

#[actix::test]
async fn create2_selfdestruct_revert_and_delegation_trace() {
    or_skip!(crate::conformance::conformance_dir());
    let chain = Chain::start().await;
    let node = &chain.node;
    // CREATE2 of a contract that self-destructs while being created.
    let create =
        send(node, Some(chain.factory), Bytes::from(code(SELF_DESTRUCTING_INIT)), 200_000).await;
    let frame = chain.trace(&create, json!({"tracer": "callTracer"})).await;
    let child = &frame["calls"][0];
    assert_eq!(child["type"], "CREATE2", "{frame}");
    assert_eq!(child["calls"][0]["type"], "SELFDESTRUCT", "{frame}");
    assert_eq!(frame["output"].as_str().map(str::len), Some(66));

    // A reverting transaction: the call frame and the struct logs say it failed.
    let token = node.deploy_bench_token().await;
    let revert_data = fixtures::bench_calldata()["calldata"]["alwaysRevert()"].clone();
    let reverted =
        send(node, Some(token), serde_json::from_value(revert_data).expect("hex"), 100_000).await;
    let frame = chain.trace(&reverted, json!({"tracer": "callTracer"})).await;
    assert_eq!(frame["error"], "execution reverted", "{frame}");
    assert_eq!(frame["revertReason"], "BenchToken: always reverts");
    let logs = chain.trace(&reverted, json!({})).await;
    assert_eq!(logs["failed"], true);
    assert_eq!(
        logs["structLogs"].as_array().and_then(|l| l.last()).map(|l| l["op"].clone()),
        Some(json!("REVERT"))
    );

    // An EIP-7702 delegation: account 2 delegates to the callee, then is called.
    let authority = node.signer(2);
    let auth = Authorization { chain_id: U256::from(31337), address: chain.callee, nonce: 1 };
    let signature = authority.sign_hash_sync(&auth.signature_hash()).expect("signs");
    let tx = TxEip7702 {
        chain_id: 31337,
        nonce: 0,
        gas_limit: 200_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: authority.address(),
        value: U256::ZERO,
        access_list: Default::default(),
        authorization_list: vec![auth.into_signed(signature)],
        input: Bytes::from(vec![0u8; 31].into_iter().chain([7u8]).collect::<Vec<_>>()),
    };
    let signature = authority.sign_hash_sync(&tx.signature_hash()).expect("signs");
    let tx: TxEnvelope = tx.into_signed(signature).into();
    assert_eq!(tx.recover_signer().expect("recovers"), authority.address());
    let hash = node.ok("eth_sendRawTransaction", json!([Bytes::from(tx.encoded_2718())])).await;
    let frame = chain
        .trace(
            hash.as_str().expect("hash"),
            json!({"tracer": "callTracer", "tracerConfig": {"withLog": true}}),
        )
        .await;
    assert_eq!(address_of(&frame["to"]), authority.address());
    assert_eq!(frame["output"], format!("0x{:064x}", 8), "the callee's code ran: {frame}");
    let diff = chain
        .trace(
            hash.as_str().expect("hash"),
            json!({"tracer": "prestateTracer", "tracerConfig": {"diffMode": true}}),
        )
        .await;
    let post = &diff["post"][format!("{:#x}", authority.address())];
    assert!(post["code"].as_str().is_some_and(|c| c.starts_with("0xef0100")), "{diff}");
}

#[actix::test]
async fn parity_traces_of_transactions_blocks_and_calls() {
    let chain = Chain::start().await;
    let node = &chain.node;
    let traces = node.ok("trace_transaction", json!([chain.nested])).await;
    let traces = traces.as_array().expect("traces");
    let addresses: Vec<_> = traces.iter().map(|t| t["traceAddress"].clone()).collect();
    assert_eq!(addresses, [json!([]), json!([0]), json!([1])]);
    assert_eq!(traces[0]["subtraces"], 2);
    assert_eq!(traces[0]["transactionHash"], json!(chain.nested));
    assert_eq!(address_of(&traces[1]["action"]["to"]), chain.callee);
    assert!(traces[2]["error"].is_string(), "{}", traces[2]);
    assert_eq!(node.ok("trace_get", json!([chain.nested, ["0x1"]])).await, traces[1]);
    assert_eq!(node.ok("trace_get", json!([chain.nested, ["0x9"]])).await, Value::Null);

    let number = traces[0]["blockNumber"].clone();
    let block =
        node.ok("trace_block", json!([format!("{:#x}", number.as_u64().expect("n"))])).await;
    assert_eq!(block, Value::Array(traces.to_vec()), "the block holds only this transaction");

    let all = json!(["trace", "stateDiff", "vmTrace"]);
    let replay = node.ok("trace_replayTransaction", json!([chain.nested, all])).await;
    assert_eq!(
        replay["trace"],
        json!(
            traces
                .iter()
                .map(|t| {
                    let mut t = t.clone();
                    for key in
                        ["blockHash", "blockNumber", "transactionHash", "transactionPosition"]
                    {
                        t.as_object_mut().expect("object").remove(key);
                    }
                    t
                })
                .collect::<Vec<_>>()
        )
    );
    let slot =
        &replay["stateDiff"][format!("{:#x}", chain.callee)]["storage"][format!("0x{:064x}", 0)];
    assert_eq!(slot["*"]["to"], format!("0x{:064x}", 42), "{replay}");
    assert!(replay["vmTrace"]["ops"].as_array().is_some_and(|ops| !ops.is_empty()));
    let blocks = node
        .ok(
            "trace_replayBlockTransactions",
            json!([format!("{:#x}", number.as_u64().expect("n")), ["trace"]]),
        )
        .await;
    assert_eq!(blocks[0]["transactionHash"], json!(chain.nested));
    assert!(blocks[0]["stateDiff"].is_null() && blocks[0]["vmTrace"].is_null());

    let call = json!({"from": node.signer(0).address(), "to": chain.nester, "data": address_word(chain.callee)});
    let one = node.ok("trace_call", json!([call, ["trace"], "latest"])).await;
    assert_eq!(one["output"], format!("0x{:064x}", 43));
    assert_eq!(one["trace"].as_array().map(Vec::len), Some(3));
    // Each call of trace_callMany sees the state the one before left: the callee's slot holds
    // 42; the first call stores 5 there, the second stores 5 again, which changes nothing.
    let store = json!({"to": chain.callee, "data": format!("0x{:064x}", 5)});
    let many = node
        .ok("trace_callMany", json!([[[store, ["stateDiff"]], [store, ["stateDiff"]]], "latest"]))
        .await;
    let slot = |i: usize| {
        many[i]["stateDiff"][format!("{:#x}", chain.callee)]["storage"][format!("0x{:064x}", 0)]
            .clone()
    };
    let changed = json!({"from": format!("0x{:064x}", 42), "to": format!("0x{:064x}", 5)});
    assert_eq!(slot(0)["*"], changed, "{many}");
    assert_eq!(slot(1), Value::Null, "the second finds 5 already stored: {many}");
}

#[actix::test]
async fn trace_filter_matches_addresses_and_pages() {
    let chain = Chain::start().await;
    let node = &chain.node;
    send(node, Some(chain.nester), address_word(chain.callee), 200_000).await;
    let head = node.block_number().await;
    let to_callee = json!({"fromBlock": "0x1", "toAddress": [chain.callee]});
    let found = node.ok("trace_filter", json!([to_callee])).await;
    let found = found.as_array().expect("traces");
    // The callee's creation (its result is the callee), then two nested calls, each calling
    // the callee twice.
    assert_eq!(found.len(), 5, "{found:?}");
    assert_eq!(address_of(&found[0]["result"]["address"]), chain.callee);
    assert!(found[1..].iter().all(|t| address_of(&t["action"]["to"]) == chain.callee));
    let paged = node
        .ok(
            "trace_filter",
            json!([{"fromBlock": "0x1", "toAddress": [chain.callee], "after": 1, "count": 2}]),
        )
        .await;
    assert_eq!(paged, json!(found[1..3]));
    let all = node.ok("trace_filter", json!([{}])).await;
    assert!(all.as_array().is_some_and(|a| a.len() > found.len()));
    let (code, message, _) = node
        .err("trace_filter", json!([{"fromBlock": format!("{head:#x}"), "toBlock": "0x1"}]))
        .await;
    assert_eq!((code, message.as_str()), (-32000, "invalid block range params"));
    // The range is checked as eth_getLogs checks it (logs.rs has the cases): cut at the head.
    let cut = node.ok("trace_filter", json!([{"fromBlock": "0x0", "toBlock": "0x2710"}])).await;
    assert_eq!(cut, all);
}

#[actix::test]
async fn bad_input_gets_clear_errors() {
    let chain = Chain::start().await;
    let node = &chain.node;
    let unknown = format!("0x{}", "ab".repeat(32));
    let err = node.err("debug_traceTransaction", json!([unknown])).await;
    assert_eq!((err.0, err.1.as_str()), (-32000, "transaction not found"));
    assert_eq!(node.ok("trace_transaction", json!([unknown])).await, Value::Null);
    assert_eq!(node.err("trace_replayTransaction", json!([unknown, ["trace"]])).await.0, -32000);

    for (options, words) in [
        (json!({"tracer": "fooTracer"}), "unknown tracer"),
        (json!({"tracer": "function() { return {}; }"}), "JavaScript tracers are not supported"),
        (json!({"tracer": "callTracer", "tracerConfig": {"onlyTopCall": 1}}), "tracerConfig"),
        (json!({"tracer": "prestateTracer", "tracerConfig": {"diffMode": "x"}}), "tracerConfig"),
        (json!({"tracer": "muxTracer", "tracerConfig": {"muxTracer": {}}}), "mux"),
        (json!({"timeout": "10 seconds"}), "invalid duration"),
        (json!({"timeout": "1h"}), "out of range"),
        (json!({"limit": "ten"}), "invalid"),
        (json!(["callTracer"]), "expected a tracer options object"),
    ] {
        let (code, message, _) =
            node.err("debug_traceTransaction", json!([chain.nested, options])).await;
        assert_eq!(code, -32602, "{options}: {message}");
        assert!(message.contains(words), "{options}: {message}");
    }
    let (code, message, _) = node.err("debug_traceBlockByNumber", json!(["0x0"])).await;
    assert_eq!((code, message.as_str()), (-32000, "genesis is not traceable"));
    let (code, message, _) = node.err("debug_traceBlockByNumber", json!(["0x999"])).await;
    assert_eq!((code, message.as_str()), (-32000, "block #2457 not found"));
    assert_eq!(node.err("debug_traceBlockByNumber", json!(["3"])).await.0, -32602);
    let (code, message, _) = node.err("debug_traceBlockByHash", json!([unknown])).await;
    assert_eq!((code, message), (-32000, format!("block {unknown} not found")));
    assert_eq!(node.err("debug_traceBlock", json!(["0x1234"])).await.0, -32000);
    assert_eq!(node.err("trace_call", json!([{"to": chain.nester}, ["traces"]])).await.0, -32602);
    assert_eq!(node.ok("trace_block", json!(["0x999"])).await, Value::Null);

    // Nothing changed: the chain serves the same head and the traces still work.
    let head = node.block_number().await;
    chain.trace(&chain.nested, json!({"tracer": "callTracer"})).await;
    assert_eq!(node.block_number().await, head);
}

#[actix::test]
async fn a_trace_past_its_timeout_or_the_response_cap_is_stopped() {
    or_skip!(crate::conformance::conformance_dir());
    let mut config = NodeConfig::for_tests();
    config.rpc.max_response_bytes = 200_000;
    let chain = Chain::with(config).await;
    let node = &chain.node;
    let token = node.deploy_bench_token().await;
    let hash_loop = "0x67151319".to_owned() + &format!("{:064x}", 20_000);
    let call = json!({"to": token, "data": hash_loop, "gas": "0x2faf080"});
    // 1ns is gone by the first look at the clock (every 4,096 steps).
    let quick = json!({"tracer": "callTracer", "timeout": "1ns"});
    let (code, message, _) = node.err("debug_traceCall", json!([call, "latest", quick])).await;
    assert_eq!(code, -32002, "{message}");
    assert!(message.contains("timeout"), "{message}");
    // Hundreds of thousands of struct logs cannot fit 200 kB: refused, long before the end.
    let (code, message, _) = node.err("debug_traceCall", json!([call, "latest"])).await;
    assert_eq!(code, -32005, "{message}");
    assert!(message.contains("200000 bytes"), "{message}");
    // With a limit the same trace fits, and reports the whole execution.
    let limited = node.ok("debug_traceCall", json!([call, "latest", {"limit": 100}])).await;
    assert_eq!(limited["structLogs"].as_array().map(Vec::len), Some(100));
    assert_eq!(limited["failed"], false);
    assert!(limited["gas"].as_u64().is_some_and(|gas| gas > 1_000_000));
}

/// The hive chain's struct logs are schema-checked only by rpc_compat; here they must equal
/// geth's answers exactly (a Homestead-era block replayed under its own fork's rules).
#[actix::test]
async fn struct_logs_equal_geths_on_the_hive_chain() {
    or_skip!(crate::conformance::conformance_dir());
    let node = crate::rpc_compat::osaka_node();
    let dir = crate::conformance::shared_dir().join("rpc/osaka");
    for file in [
        "debug_traceTransaction/trace-contract-call.io",
        "debug_traceTransaction/trace-legacy-transfer.io",
        "debug_traceBlockByNumber/trace-block-memory-encoding.io",
        "debug_traceBlockByNumber/trace-block-storage-encoding.io",
        "debug_traceBlockByNumber/trace-block-storage-snapshot-timing.io",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).expect(".io file");
        let line = |prefix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .expect("a request and a response")
                .trim()
                .to_owned()
        };
        let want: Value = serde_json::from_str(&line("<<")).expect("JSON");
        let got = node.raw(&line(">>")).await.expect("an answer");
        assert!(got == want, "{file}: {got}");
    }
}
