//! Restart keeps everything; kill -9 loses nothing that was acknowledged.

use std::sync::mpsc;

use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir};
use crate::support::fixtures;

const ALICE: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const BOB: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";

/// Everything a user could read, as the node answers it now.
fn observe(node: &NodeProcess, token: &str, txs: &[Value]) -> Vec<Value> {
    let mut seen = vec![
        node.ok("eth_blockNumber", json!([])),
        node.ok("eth_getBlockByNumber", json!(["latest", true])),
        node.ok("eth_getBlockByNumber", json!(["0x1", false])),
        node.ok("eth_getBalance", json!([ALICE, "latest"])),
        node.ok("eth_getBalance", json!([BOB, "0x1"])),
        node.ok("eth_getTransactionCount", json!([ALICE, "latest"])),
        node.ok("eth_getCode", json!([token, "latest"])),
        node.ok("eth_getStorageAt", json!([token, "0x0", "latest"])),
        node.ok(
            "eth_call",
            json!([{"to": token, "data": format!("0x70a08231{:0>64}", &BOB[2..])}, "latest"]),
        ),
        node.ok("eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "latest"}])),
        node.ok("eth_getProof", json!([token, ["0x0", "0x1"], "latest"])),
        node.ok("eth_getProof", json!([BOB, [], "0x1"])),
    ];
    for tx in txs {
        seen.push(node.ok("eth_getTransactionReceipt", json!([tx])));
        seen.push(node.ok("eth_getTransactionByHash", json!([tx])));
    }
    seen
}

#[test]
fn restart_serves_the_same_chain() {
    or_skip!(crate::conformance::conformance_dir());
    let dir = TempDir::new("restart");
    let node = NodeProcess::start(dir.path(), &[]);
    let deploy = node.ok(
        "eth_sendTransaction",
        json!([{"from": ALICE, "data": fixtures::bench_token_bytecode()}]),
    );
    let token = node.ok("eth_getTransactionReceipt", json!([deploy]))["contractAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    let transfer_call = format!("0xa9059cbb{:0>64}{:0>64}", &BOB[2..], "2a");
    let token_tx = node
        .ok("eth_sendTransaction", json!([{"from": ALICE, "to": token, "data": transfer_call}]));
    let eth_tx =
        node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": BOB, "value": "0x1234"}]));
    let txs = [deploy, token_tx, eth_tx];
    let before = observe(&node, &token, &txs);
    assert_eq!(before[0], "0x3");
    node.stop();

    let node = NodeProcess::start(dir.path(), &[]);
    let after = observe(&node, &token, &txs);
    assert_eq!(before, after, "a restart must serve exactly what was served before");
    // And the chain goes on from there.
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": BOB, "value": "0x1"}]));
    assert_eq!(node.ok("eth_blockNumber", json!([])), "0x4");
}

#[test]
fn kill_9_keeps_every_acknowledged_block() {
    let dir = TempDir::new("kill9");
    let node = NodeProcess::start(dir.path(), &[]);
    let addr = node.addr;
    let (acks, acked) = mpsc::channel::<String>();
    // Sends transfers back to back until the node disappears; each hash it gets back was
    // acknowledged (automine: its block was committed before the reply).
    let sender = std::thread::spawn(move || {
        for _ in 0..10_000 {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_sendTransaction",
                              "params": [{"from": ALICE, "to": BOB, "value": "0x1"}]})
            .to_string();
            let Ok((_, response)) = crate::process::post(addr, &body) else { return };
            let Ok(response) = serde_json::from_str::<Value>(&response) else { return };
            let Some(hash) = response["result"].as_str() else { return };
            if acks.send(hash.to_owned()).is_err() {
                return;
            }
        }
    });
    let mut hashes: Vec<String> = acked.iter().take(25).collect();
    node.kill_9(); // while the sender keeps a block in flight
    sender.join().expect("sender thread");
    hashes.extend(acked.try_iter());

    let node = NodeProcess::start(dir.path(), &[]);
    let head = crate::support::quantity(&node.ok("eth_blockNumber", json!([])));
    assert!(head >= hashes.len() as u64, "head {head} lost acknowledged blocks ({})", hashes.len());
    for hash in &hashes {
        let receipt = node.ok("eth_getTransactionReceipt", json!([hash]));
        assert_eq!(receipt["status"], "0x1", "acknowledged {hash} missing after kill -9");
    }
    // The restarted node accepts new work on top.
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": BOB, "value": "0x1"}]));
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (&["--executor.threads", "0"][..], "--executor.threads"),
        (&["--http.port", "70000"][..], "--http.port"),
        (&["--cache.code-entries", "0"][..], "--cache.code-entries"),
        (&["--txpool.max-bytes", "12XB"][..], "--txpool.max-bytes"),
        (&["--block-time", "3,1"][..], "--block-time"),
        (&["--block-time", "0,0"][..], "--block-time"),
        (&["--block-time", "-2"][..], "--block-time"),
        (&["--no-mining", "--block-time", "2"][..], "--block-time"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--ephemeral"])
            .args(args)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

#[test]
fn dev_state_patches_survive_a_restart() {
    let dir = TempDir::new("patches");
    let node = NodeProcess::start(dir.path(), &[]);
    let who = "0x7777777777777777777777777777777777777777";
    node.ok("anvil_setBalance", json!([who, "0x1234"]));
    node.ok("anvil_setStorageAt", json!([who, "0x1", "0x2a"]));
    node.stop();

    let node = NodeProcess::start(dir.path(), &[]);
    assert_eq!(node.ok("eth_getBalance", json!([who, "latest"])), "0x1234");
    let slot = node.ok("eth_getStorageAt", json!([who, "0x1", "latest"]));
    assert_eq!(slot, format!("0x{:064x}", 0x2a));
    // The next block builds on the patched state.
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": who, "value": "0x1"}]));
    assert_eq!(node.ok("eth_getBalance", json!([who, "latest"])), "0x1235");
}

#[test]
fn a_port_in_use_exits_1_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = taken.local_addr().expect("bound").port().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["--ephemeral", "--http.port", &port])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--http.port"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
