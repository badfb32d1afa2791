//! Read replicas (`--follow URL`): a replica imports each leader block through its engine
//! actor, forwards writes and answers them once it holds their block, refuses dev methods,
//! follows the leader's rewinds, catches up from its own head after a kill -9, and says on
//! `/health` and `/metrics` how far behind it is.
//!
//! Nothing here waits on a clock: a write sent through the replica is answered only once the
//! replica imported the block holding it, which is the event every check waits for.

use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir, get};

const SINK: &str = "0x00000000000000000000000000000000000000aa";

fn url(node: &NodeProcess) -> String {
    format!("http://{}", node.addr)
}

/// A replica of `leader` with `more` flags.
fn replica_of(leader: &NodeProcess, more: &[&str]) -> NodeProcess {
    let leader = url(leader);
    let mut args = vec!["--http.port", "0", "--follow", leader.as_str()];
    args.extend_from_slice(more);
    NodeProcess::spawn(&args)
}

fn send(node: &NodeProcess, from: &Value, value: &str) -> Value {
    node.ok("eth_sendTransaction", json!([{"from": from, "to": SINK, "value": value}]))
}

fn hash_at(node: &NodeProcess, n: u64) -> Value {
    node.ok("eth_getBlockByNumber", json!([format!("{n:#x}"), false]))["hash"].clone()
}

fn head(node: &NodeProcess) -> u64 {
    let head = node.ok("eth_blockNumber", json!([]));
    u64::from_str_radix(head.as_str().expect("hex").trim_start_matches("0x"), 16).expect("number")
}

fn metric(node: &NodeProcess, name: &str) -> u64 {
    let (status, text) = get(node.addr, "/metrics").expect("metrics");
    assert_eq!(status, 200);
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[test]
fn a_replica_forwards_writes_answers_them_once_imported_and_refuses_dev_methods() {
    let leader = NodeProcess::spawn(&["--http.port", "0"]);
    // No --timestamp: the replica takes the leader's genesis time.
    let replica = replica_of(&leader, &[]);
    let from = replica.ok("eth_accounts", json!([]))[0].clone();

    // Each write is answered after the replica imported its block: read at once, it is there.
    for n in 1..=3u64 {
        let tx = send(&replica, &from, "0x1");
        let receipt = replica.ok("eth_getTransactionReceipt", json!([tx]));
        assert_eq!(receipt["blockNumber"], format!("{n:#x}"));
        assert_eq!(hash_at(&replica, n), hash_at(&leader, n));
    }
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x3");
    // A raw transaction too (signed by the replica, a read; taken by the leader).
    let signed = replica.ok(
        "eth_signTransaction",
        json!([{"from": from, "to": SINK, "value": "0x2", "nonce": "0x3", "gas": "0x5208", "maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x1"}]),
    );
    let tx = replica.ok("eth_sendRawTransaction", json!([signed]));
    assert_eq!(replica.ok("eth_getTransactionReceipt", json!([tx]))["status"], "0x1");
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x5");

    // The leader's refusal comes back as the leader gave it.
    let again = replica.call("eth_sendRawTransaction", json!([signed]));
    let direct = leader.call("eth_sendRawTransaction", json!([signed]));
    assert_eq!(again["error"]["code"], direct["error"]["code"], "{again} / {direct}");
    assert_eq!(again["error"]["message"], direct["error"]["message"]);

    // Dev methods would make the replica's chain differ from the leader's: refused, naming it.
    for (method, params) in [
        ("anvil_setBalance", json!([SINK, "0x1"])),
        ("evm_mine", json!([])),
        ("evm_snapshot", json!([])),
        ("anvil_rollback", json!([1])),
    ] {
        let refused = replica.call(method, params);
        assert_eq!(refused["error"]["code"], -32000, "{method}: {refused}");
        let message = refused["error"]["message"].as_str().expect("message");
        assert!(message.contains(&url(&leader)) && message.contains(method), "{message}");
    }
    assert_eq!(head(&replica), 4);
    assert_eq!(head(&leader), 4);

    // The pool is the leader's: txpool_* and the pending nonce are answered from there.
    assert_eq!(replica.ok("txpool_status", json!([])), leader.ok("txpool_status", json!([])));
    leader.ok("evm_setAutomine", json!([false]));
    leader.ok("eth_sendTransaction", json!([{"from": from, "to": SINK, "value": "0x1"}]));
    let nonce =
        |node: &NodeProcess, tag: &str| node.ok("eth_getTransactionCount", json!([from, tag]));
    assert_eq!(nonce(&replica, "pending"), "0x5");
    assert_eq!(nonce(&replica, "latest"), "0x4");
    leader.ok("evm_mine", json!([]));
    leader.ok("evm_setAutomine", json!([true]));
    send(&replica, &from, "0x1");

    let (status, body) = get(replica.addr, "/health").expect("health");
    let health: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(status, 200, "{body}");
    assert_eq!((health["status"].as_str(), health["lag"].as_u64()), (Some("ok"), Some(0)));
    assert_eq!(health["leaderHead"], 6);
    assert_eq!(metric(&replica, "hearth_follow_lag_blocks"), 0);
    assert_eq!(metric(&replica, "hearth_follow_imported_blocks_total"), 6);
    assert_eq!(metric(&replica, "hearth_follow_imported_transactions_total"), 6);
}

#[test]
fn a_replica_follows_the_leaders_rewinds_to_the_common_block() {
    let leader = NodeProcess::spawn(&["--http.port", "0"]);
    let replica = replica_of(&leader, &[]);
    let from = replica.ok("eth_accounts", json!([]))[0].clone();
    for _ in 0..5 {
        send(&replica, &from, "0x1");
    }
    let old_four = hash_at(&replica, 4);

    // anvil_rollback on the leader: blocks 4 and 5 are gone, then two others are made.
    leader.ok("anvil_rollback", json!([2]));
    send(&leader, &from, "0x10");
    // The next write through the replica finds the leader's chain changed, rewinds, imports.
    send(&replica, &from, "0x100");
    assert_eq!(head(&replica), 5);
    assert_ne!(hash_at(&replica, 4), old_four);
    for n in 1..=5 {
        assert_eq!(hash_at(&replica, n), hash_at(&leader, n), "block {n}");
    }
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x113");

    // evm_revert on the leader takes it back to a snapshot: the replica follows again.
    let snapshot = leader.ok("evm_snapshot", json!([]));
    send(&replica, &from, "0x1000");
    leader.ok("evm_revert", json!([snapshot]));
    send(&replica, &from, "0x2000");
    for n in 1..=6 {
        assert_eq!(hash_at(&replica, n), hash_at(&leader, n), "block {n}");
    }
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x2113");
    assert!(metric(&replica, "hearth_follow_rewinds_total") >= 2);
}

#[test]
fn a_replica_catches_up_from_its_own_head_after_kill_9() {
    let leader = NodeProcess::spawn(&["--http.port", "0"]);
    let dir = TempDir::new("replica-restart");
    let datadir = dir.path().to_str().expect("utf-8").to_owned();
    let replica = replica_of(&leader, &["--datadir", &datadir]);
    let from = replica.ok("eth_accounts", json!([]))[0].clone();
    leader.ok("anvil_mine", json!(["0x28"]));
    send(&replica, &from, "0x1");
    assert_eq!(head(&replica), 41);
    replica.kill_9();

    // The leader goes on, with dev patches between its blocks; the replica restarts on its
    // datadir and imports only what it lacks, replaying each patch before the next block.
    leader.ok("anvil_mine", json!(["0x19"]));
    leader.ok("anvil_setBalance", json!([SINK, "0x500"]));
    leader.ok("anvil_mine", json!(["0x19"]));
    leader.ok(
        "anvil_setStorageAt",
        json!([SINK, "0x1", "0x0000000000000000000000000000000000000000000000000000000000000009"]),
    );
    let replica = replica_of(&leader, &["--datadir", &datadir]);
    send(&replica, &from, "0x1");
    assert_eq!(head(&replica), 92);
    assert_eq!(hash_at(&replica, 92), hash_at(&leader, 92));
    assert_eq!(metric(&replica, "hearth_follow_imported_blocks_total"), 51);
    assert_eq!(
        replica.ok("eth_getStorageAt", json!([SINK, "0x1", "latest"])),
        leader.ok("eth_getStorageAt", json!([SINK, "0x1", "latest"]))
    );

    // The leader gone, a write fails with a clear error and reads go on at the last head,
    // also after the replica restarts while the leader is down.
    let leader_url = url(&leader);
    leader.kill_9();
    let refused = replica.call("eth_sendTransaction", json!([{"from": from, "to": SINK}]));
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did not answer"), "{refused}");
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x501");
    replica.kill_9();
    let replica =
        NodeProcess::spawn(&["--http.port", "0", "--follow", &leader_url, "--datadir", &datadir]);
    assert_eq!(head(&replica), 92);
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x501");
}

#[test]
fn a_replica_whose_genesis_patches_the_leader_undid_says_it_diverged() {
    let leader = NodeProcess::spawn(&["--http.port", "0"]);
    let snapshot = leader.ok("evm_snapshot", json!([]));
    leader.ok("anvil_setBalance", json!([SINK, "0x64"]));
    let replica = replica_of(&leader, &["--follow.max-lag-time", "1s"]);
    let from = replica.ok("eth_accounts", json!([]))[0].clone();
    send(&replica, &from, "0x1");
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x65");
    // Back to before the genesis patch: the replica's genesis state keeps it (a rewind keeps
    // a block's own state), so it cannot follow from its datadir and says so.
    leader.ok("evm_revert", json!([snapshot]));
    let answer =
        replica.call("eth_sendTransaction", json!([{"from": from, "to": SINK, "value": "0x1"}]));
    assert!(
        answer["error"]["message"].as_str().unwrap_or_default().contains("not imported"),
        "{answer}"
    );
    let (status, body) = get(replica.addr, "/health").expect("health");
    let health: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        (health["status"].as_str(), health["refusedBlock"].as_u64()),
        (Some("diverged"), Some(0))
    );
}

#[test]
fn a_raw_transaction_shaped_as_the_impersonation_placeholder_is_refused() {
    use alloy_consensus::{SignableTransaction, TxEnvelope, TxLegacy};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Address, Signature, U256};
    let node = NodeProcess::spawn(&["--http.port", "0"]);
    let sender = Address::repeat_byte(0x42);
    let tx = TxLegacy {
        chain_id: Some(31337),
        gas_limit: 21_000,
        gas_price: 2_000_000_000,
        ..Default::default()
    };
    let signature = Signature::new(U256::from_be_slice(sender.as_slice()), U256::from(1), false);
    let raw = TxEnvelope::from(tx.into_signed(signature)).encoded_2718();
    let answer =
        node.call("eth_sendRawTransaction", json!([alloy_primitives::hex::encode_prefixed(raw)]));
    assert_eq!(answer["error"]["message"], "invalid transaction signature", "{answer}");
}

#[test]
fn a_replica_of_another_chain_does_not_start() {
    let leader = NodeProcess::spawn(&["--http.port", "0"]);
    let leader_url = url(&leader);
    let (code, _, stderr) =
        NodeProcess::run_to_exit(&["--http.port", "0", "--follow", &leader_url, "--balance", "5"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("genesis") && stderr.contains("--balance"), "{stderr}");

    let (code, _, stderr) = NodeProcess::run_to_exit(&["--follow", "ftp://x"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = NodeProcess::run_to_exit(&["--follow", &leader_url, "-b", "1"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--block-time") || stderr.contains("cannot be used"), "{stderr}");
}

#[test]
fn a_replica_follows_the_leaders_dev_choices_and_replays_its_patches() {
    let leader = NodeProcess::spawn(&["--http.port", "0"]);
    // A patch of the genesis state, before any block.
    leader.ok("anvil_setBalance", json!([SINK, "0x64"]));
    let replica = replica_of(&leader, &["--follow.max-lag-time", "2s"]);
    let from = replica.ok("eth_accounts", json!([]))[0].clone();
    // Header fields the leader's dev methods choose: a base fee off the EIP-1559 rule, a gas
    // limit past the 1/1024 step, a jump in time.
    leader.ok("anvil_setNextBlockBaseFeePerGas", json!(["0x0"]));
    send(&replica, &from, "0x1");
    leader.ok("evm_setBlockGasLimit", json!(["0x5f5e100"]));
    send(&replica, &from, "0x1");
    leader.ok("evm_increaseTime", json!([86_400]));
    send(&replica, &from, "0x1");
    // A transaction of an impersonated account (funded by a transfer, not a patch).
    let whale = "0x00000000000000000000000000000000000000bb";
    leader.ok(
        "eth_sendTransaction",
        json!([{"from": from, "to": whale, "value": "0xde0b6b3a7640000"}]),
    );
    leader.ok("anvil_impersonateAccount", json!([whale]));
    send(&replica, &json!(whale), "0x1");
    assert_eq!(head(&replica), 5);
    for n in 1..=5 {
        assert_eq!(hash_at(&replica, n), hash_at(&leader, n), "block {n}");
    }
    assert_eq!(replica.ok("eth_getBalance", json!([SINK, "latest"])), "0x68");

    // Patches of every kind at block 5, then a block on top: replayed before it, so the
    // block's state root checks.
    let other = "0x00000000000000000000000000000000000000cc";
    leader.ok("anvil_setBalance", json!([other, "0x1000"]));
    leader.ok("anvil_setNonce", json!([other, "0x7"]));
    leader.ok("anvil_setCode", json!([other, "0x6001600055"]));
    let slot = "0x0000000000000000000000000000000000000000000000000000000000000002";
    leader.ok("anvil_setStorageAt", json!([other, slot, slot]));
    send(&replica, &from, "0x1");
    assert_eq!(hash_at(&replica, 6), hash_at(&leader, 6));
    for (method, params) in [
        ("eth_getBalance", json!([other, "latest"])),
        ("eth_getTransactionCount", json!([other, "latest"])),
        ("eth_getCode", json!([other, "latest"])),
        ("eth_getStorageAt", json!([other, slot, "latest"])),
    ] {
        assert_eq!(replica.ok(method, params.clone()), leader.ok(method, params), "{method}");
    }

    // A patch undone by evm_revert before the next block: the replica, which may have replayed
    // it, takes block 6 again without it.
    let snapshot = leader.ok("evm_snapshot", json!([]));
    leader.ok("anvil_setBalance", json!([other, "0x1"]));
    send(&replica, &from, "0x1");
    leader.ok("evm_revert", json!([snapshot]));
    leader.ok("anvil_setBalance", json!([other, "0x2"]));
    send(&replica, &from, "0x1");
    assert_eq!(head(&replica), 7);
    assert_eq!(hash_at(&replica, 7), hash_at(&leader, 7));
    assert_eq!(replica.ok("eth_getBalance", json!([other, "latest"])), "0x2");
    let (status, body) = get(replica.addr, "/health").expect("health");
    assert_eq!(status, 200, "{body}");
    assert_eq!(metric(&replica, "hearth_follow_refused_block"), 0);
    // The replica logs the patches it replayed as the leader does: another replica can follow it.
    let patches = |node: &NodeProcess| node.ok("hearth_getPatches", json!(["0x6", true]));
    assert_eq!(patches(&replica), patches(&leader));
}
