//! anvil_reset / hardhat_reset: back to a fresh dev chain, into a fork, to another fork block;
//! a failed reset changes nothing; reads racing resets answer from the old or the new chain.
//! The upstream is a `hearth` process behind the fork tests' counting proxy.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fork::{ALICE, HOLDER, Proxy, Upstream, balance_of};
use crate::process::NodeProcess;
use crate::support::quantity;

/// What the upstream's chain holds for [`HOLDER`] (see `Upstream::start`): tokens from block 3,
/// one ether from block 4.
const ONE_ETHER: &str = "0xde0b6b3a7640000";
const DEV_BALANCE: &str = "0x21e19e0c9bab2400000";

fn block_number(node: &NodeProcess) -> u64 {
    quantity(&node.ok("eth_blockNumber", json!([])))
}

fn error_of(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    let code = error["code"].as_i64().unwrap_or_else(|| panic!("an error: {answer}"));
    (code, error["message"].as_str().unwrap_or_default().to_owned())
}

fn fork_to(url: &str, block: u64) -> Value {
    json!([{"forking": {"jsonRpcUrl": url, "blockNumber": block}}])
}

#[test]
fn a_dev_chain_resets_to_a_fresh_genesis_and_keeps_its_mining_settings() {
    let node = NodeProcess::spawn(&["--http.port", "0", "--fork-timeout", "1s"]);
    let genesis = node.ok("eth_getBlockByNumber", json!(["0x0", false]));
    let other = "0x00000000000000000000000000000000000000bb";
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": other, "value": "0x1"}]));
    node.ok("anvil_setBalance", json!([other, "0x5"]));
    let snapshot = node.ok("evm_snapshot", json!([]));
    let filter = node.ok("eth_newBlockFilter", json!([]));
    node.ok("evm_setAutomine", json!([false]));
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": other, "value": "0x1"}]));
    assert_eq!(node.ok("txpool_status", json!([]))["pending"], "0x1");
    assert_eq!(block_number(&node), 1);

    // Refused targets change nothing: a fork without an upstream, a malformed argument, an
    // upstream nobody listens on.
    for params in [json!([{}]), json!([{"forking": {}}]), json!([{"forking": {"blockNumber": 3}}])]
    {
        let (code, message) = error_of(&node.call("anvil_reset", params));
        assert_eq!(code, -32602);
        assert_eq!(message, "Forking not enabled and RPC URL not provided to start forking");
    }
    for params in [
        json!(["x"]),
        json!([{}, 1]),
        json!([{"forking": {"jsonRpcUrl": "ftp://x"}}]),
        json!([{"forking": {"jsonRpcUrl": 5}}]),
        json!([{"forking": {"jsonRpcUrl": "http://127.0.0.1:1", "blockNumber": -1}}]),
    ] {
        assert_eq!(error_of(&node.call("anvil_reset", params.clone())).0, -32602, "{params}");
    }
    let (code, message) = error_of(&node.call("anvil_reset", fork_to("http://127.0.0.1:1", 1)));
    assert_eq!(code, -32603, "{message}");
    assert!(message.contains("cannot fork"), "{message}");
    assert_eq!(block_number(&node), 1, "a failed reset leaves the chain as it was");
    assert_eq!(node.ok("eth_getBalance", json!([other, "latest"])), "0x5");

    assert_eq!(node.ok("anvil_reset", json!([])), Value::Null);
    assert_eq!(block_number(&node), 0);
    let fresh = node.ok("eth_getBlockByNumber", json!(["0x0", false]));
    assert_eq!(fresh["stateRoot"], genesis["stateRoot"], "the same dev genesis state");
    assert_eq!(node.ok("eth_getBalance", json!([ALICE, "latest"])), DEV_BALANCE);
    assert_eq!(node.ok("eth_getBalance", json!([other, "latest"])), "0x0");
    assert_eq!(node.ok("eth_getTransactionCount", json!([ALICE, "latest"])), "0x0");
    assert_eq!(node.ok("txpool_status", json!([]))["pending"], "0x0", "the pool is empty");
    assert_eq!(node.ok("evm_revert", json!([snapshot])), false, "snapshots are gone");
    let poll = node.call("eth_getFilterChanges", json!([filter]));
    assert_eq!(error_of(&poll), (-32000, "filter not found".to_owned()));
    // As in anvil, the mining mode stays.
    assert_eq!(node.ok("anvil_getAutomine", json!([])), false);
    node.ok("evm_mine", json!([]));
    assert_eq!(block_number(&node), 1);
    // `[null]` is `[]`; Hardhat's name answers true.
    assert_eq!(node.ok("anvil_reset", json!([null])), Value::Null);
    assert_eq!(node.ok("hardhat_reset", json!([])), true);
    assert_eq!(block_number(&node), 0);
}

#[test]
fn a_reset_forks_refork_at_another_block_and_returns_to_a_dev_chain() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let head = block_number(&upstream.node);
    assert_eq!(head, 4);
    let url = proxy.url();
    let node = NodeProcess::spawn(&[
        "--http.port",
        "0",
        "--chain-id",
        "999",
        "--no-fork-cache",
        "--fork-timeout",
        "2s",
    ]);
    let holder = |node: &NodeProcess| node.ok("eth_getBalance", json!([HOLDER, "latest"]));
    let tokens = |node: &NodeProcess| {
        node.ok("eth_call", json!([{"to": upstream.token, "data": balance_of(HOLDER)}, "latest"]))
    };

    // Into a fork at block 3: the upstream's chain id, block and state.
    assert_eq!(node.ok("anvil_reset", fork_to(&url, 3)), Value::Null);
    assert_eq!(block_number(&node), 3);
    assert_eq!(node.ok("eth_chainId", json!([])), "0x7a69");
    assert_eq!(holder(&node), "0x0");
    assert_eq!(tokens(&node), format!("0x{:064x}", 1000));
    let upstream_block = upstream.node.ok("eth_getBlockByNumber", json!(["0x3", false]));
    assert_eq!(
        node.ok("eth_getBlockByNumber", json!(["0x3", false]))["hash"],
        upstream_block["hash"]
    );
    // Local blocks run over it.
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": HOLDER, "value": "0x7"}]));
    assert_eq!(holder(&node), "0x7");
    // The node started on a dev chain, and /metrics counts the fork a reset switched it to.
    let (status, metrics) = crate::process::get(node.addr, "/metrics").expect("metrics");
    assert_eq!(status, 200);
    let upstream_requests = metrics
        .lines()
        .find_map(|l| l.strip_prefix("hearth_fork_upstream_requests_total "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("fork counters on /metrics: {metrics}"));
    assert!(upstream_requests > 0, "{metrics}");

    // Again to the same block: a fresh fork (the local block is gone), and nothing is fetched
    // again (the node's fork cache, in memory here, is kept across resets).
    let fetched = proxy.total();
    assert_eq!(node.ok("anvil_reset", fork_to(&url, 3)), Value::Null);
    assert_eq!(proxy.total(), fetched, "a reset to the same fork block asks the upstream nothing");
    assert_eq!((block_number(&node), holder(&node)), (3, "0x0".into()));
    assert_eq!(tokens(&node), format!("0x{:064x}", 1000));
    assert_eq!(proxy.total(), fetched, "its reads come from the cache too");

    // Without a URL, a fork node forks its own upstream again: at another block, at its head.
    assert_eq!(node.ok("anvil_reset", json!([{"forking": {"blockNumber": "0x4"}}])), Value::Null);
    assert_eq!((block_number(&node), holder(&node)), (4, ONE_ETHER.into()));
    assert_eq!(node.ok("anvil_reset", json!([{"forking": {"blockNumber": 2}}])), Value::Null);
    assert_eq!(tokens(&node), format!("0x{:064x}", 0), "no tokens before block 3");
    assert_eq!(node.ok("hardhat_reset", json!([{}])), true);
    assert_eq!(block_number(&node), head);

    // A failed reset of a fork (a block the upstream lacks, an upstream nobody listens on)
    // leaves it serving the same fork.
    let (code, message) = error_of(&node.call("anvil_reset", fork_to(&url, 99)));
    assert_eq!(code, -32603, "{message}");
    let (code, message) = error_of(&node.call("anvil_reset", fork_to("http://127.0.0.1:1", 1)));
    assert_eq!(code, -32603, "{message}");
    assert_eq!((block_number(&node), holder(&node)), (head, ONE_ETHER.into()));
    assert_eq!(tokens(&node), format!("0x{:064x}", 1000));

    // Back to a dev chain: block 0, the dev accounts funded, nothing of the fork. The chain id
    // stays the fork's, as in anvil.
    assert_eq!(node.ok("anvil_reset", json!([])), Value::Null);
    assert_eq!(block_number(&node), 0);
    assert_eq!(node.ok("eth_getBalance", json!([ALICE, "latest"])), DEV_BALANCE);
    assert_eq!(holder(&node), "0x0");
    assert_eq!(node.ok("eth_getCode", json!([upstream.token, "latest"])), "0x");
    assert_eq!(node.ok("eth_chainId", json!([])), "0x7a69");
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": HOLDER, "value": "0x7"}]));
    assert_eq!((block_number(&node), holder(&node)), (1, "0x7".into()));
}

/// One JSON-RPC call that must answer within `limit` (a hang fails the test).
fn call_within(addr: SocketAddr, limit: Duration, method: &str, params: &Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(limit)).expect("timeout");
    stream.set_write_timeout(Some(limit)).expect("timeout");
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("{method} did not answer within {limit:?}: {e}"));
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{method}: {e}: {response}"))
}

#[test]
fn reads_racing_resets_answer_from_the_old_or_the_new_chain_and_never_hang() {
    or_skip!(crate::conformance::conformance_dir());
    let upstream = Upstream::start();
    let proxy = Proxy::start(upstream.node.addr);
    let url = proxy.url();
    let node = NodeProcess::spawn(&["--http.port", "0", "--no-fork-cache", "--fork-timeout", "2s"]);
    // Both fork blocks once, so that the race runs on cached values (as a test suite's).
    for block in [3, 4, 3] {
        node.ok("anvil_reset", fork_to(&url, block));
    }
    let addr = node.addr;
    let token = upstream.token.as_str();
    let limit = Duration::from_secs(10);
    let stop = AtomicBool::new(false);
    let answers = AtomicU64::new(0);
    let mut resets = 0;
    std::thread::scope(|scope| {
        for reader in 0..16 {
            let (stop, answers) = (&stop, &answers);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // The three chains the node switches between: a dev chain (no balance, no
                    // token), the fork at block 3 (tokens, no ether) and at 4 (both).
                    let (method, params, allowed) = if reader % 2 == 0 {
                        let allowed = ["0x0".to_owned(), ONE_ETHER.to_owned()];
                        ("eth_getBalance", json!([HOLDER, "latest"]), allowed)
                    } else {
                        let call = json!([{"to": token, "data": balance_of(HOLDER)}, "latest"]);
                        ("eth_call", call, ["0x".to_owned(), format!("0x{:064x}", 1000)])
                    };
                    let answer = call_within(addr, limit, method, &params);
                    let result = answer["result"].as_str().unwrap_or_else(|| panic!("{answer}"));
                    assert!(
                        allowed.iter().any(|a| a == result),
                        "{method}: {result} is from no chain"
                    );
                    answers.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for round in 0..30 {
            let params = match round % 3 {
                0 => fork_to(&url, 4),
                1 => json!([]),
                _ => fork_to(&url, 3),
            };
            let answer = call_within(addr, limit, "anvil_reset", &params);
            assert_eq!(answer["result"], Value::Null, "{answer}");
            resets += 1;
        }
        stop.store(true, Ordering::Relaxed);
    });
    let answers = answers.load(Ordering::Relaxed);
    eprintln!("{resets} resets, {answers} reads answered");
    assert!(answers > 0, "the readers ran");
}
