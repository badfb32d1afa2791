//! State dump and load, anvil's format: anvil_dumpState / anvil_loadState between two nodes
//! (every account's balance, nonce, code and storage read back equal), bad input refused with
//! nothing loaded, and the `--dump-state` / `--load-state` / `--state` flags on the real
//! binary. scripts/dumpstate-compare.sh does the same against anvil itself.

use std::io::Write as _;

use alloy_primitives::{Address, U256};
use hearth_rpc::{LoadedState, MAX_STATE_JSON_BYTES, StateLimits};
use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir};
use crate::support::TestNode;

const LIMITS: StateLimits =
    StateLimits { max_json_bytes: MAX_STATE_JSON_BYTES, max_code_bytes: usize::MAX };

fn hex_bytes(value: &Value) -> Vec<u8> {
    alloy_primitives::hex::decode(value.as_str().expect("hex string")).expect("hex")
}

fn to_hex(bytes: &[u8]) -> String {
    alloy_primitives::hex::encode_prefixed(bytes)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("write");
    encoder.finish().expect("finish")
}

/// anvil_dumpState, read back.
async fn dump(node: &TestNode) -> LoadedState {
    let hex = node.ok("anvil_dumpState", json!([])).await;
    hearth_rpc::decode_state(&hex_bytes(&hex), LIMITS).expect("a dump reads")
}

/// Every account of `accounts` as `node` serves it through the ordinary methods: balance,
/// nonce, code and each listed slot.
async fn served(node: &TestNode, accounts: &LoadedState) -> Vec<Value> {
    let mut out = Vec::new();
    for account in &accounts.accounts {
        let address = account.address;
        let mut slots = Vec::new();
        for (slot, _) in &account.storage {
            slots.push(node.ok("eth_getStorageAt", json!([address, slot, "latest"])).await);
        }
        out.push(json!({
            "address": address,
            "balance": node.ok("eth_getBalance", json!([address, "latest"])).await,
            "nonce": node.ok("eth_getTransactionCount", json!([address, "latest"])).await,
            "code": node.ok("eth_getCode", json!([address, "latest"])).await,
            "storage": slots,
        }));
    }
    out
}

/// A chain with transfers, a deployed contract with storage, and dev patches.
async fn busy(node: &TestNode) -> Address {
    let alice = node.signer(0).address();
    let stranger = Address::repeat_byte(0xc0);
    for value in 1..=3u64 {
        node.ok(
            "eth_sendTransaction",
            json!([{"from": alice, "to": stranger, "value": format!("{value:#x}")}]),
        )
        .await;
    }
    let token = node.deploy_bench_token().await;
    // BenchToken's transfer(address,uint256): a second holder's balance slot.
    let data = format!("0xa9059cbb{:0>64}{:064x}", &stranger.to_string()[2..], 5_000);
    node.ok("eth_sendTransaction", json!([{"from": alice, "to": token, "data": data}])).await;
    let patched = Address::repeat_byte(0xd0);
    node.ok("anvil_setCode", json!([patched, "0x6001600055"])).await;
    node.ok("anvil_setNonce", json!([patched, "0x2a"])).await;
    node.ok("anvil_setStorageAt", json!([patched, "0x7", format!("0x{}", "ff".repeat(32))])).await;
    node.ok("anvil_setBalance", json!([patched, format!("0x{}", "f".repeat(64))])).await;
    token
}

#[actix::test]
async fn a_dump_loads_into_a_fresh_node_and_reads_back_equal() {
    or_skip!(crate::conformance::conformance_dir());
    let source = TestNode::start();
    let token = busy(&source).await;
    let dumped = dump(&source).await;
    let contract = dumped.accounts.iter().find(|a| a.address == token).expect("the token");
    assert!(contract.storage.len() >= 3, "BenchToken's supply and two balances: {contract:?}");
    assert!(dumped.accounts.iter().any(|a| a.balance == U256::MAX), "the patched balance");

    let target = TestNode::start();
    let hex = source.ok("anvil_dumpState", json!([])).await;
    assert_eq!(target.ok("anvil_loadState", json!([hex])).await, json!(true));
    assert_eq!(served(&target, &dumped).await, served(&source, &dumped).await);
    // The loaded node dumps the same accounts (its own dev accounts are the same ones).
    assert_eq!(dump(&target).await.accounts, dumped.accounts);
    // Its head keeps its number (Hearth loads state, not history) and mining goes on from the
    // loaded nonces.
    assert_eq!(target.block_number().await, 0);
    let alice = target.signer(0).address();
    let nonce = target.ok("eth_getTransactionCount", json!([alice, "latest"])).await;
    assert_eq!(nonce, "0x5", "three transfers, a deploy, a token transfer");
    let to = Address::repeat_byte(0xc0);
    let hash = target.ok("eth_sendTransaction", json!([{"from": alice, "to": to}])).await;
    let receipt = target.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(
        (receipt["status"].clone(), receipt["blockNumber"].clone()),
        (json!("0x1"), json!("0x1"))
    );

    // Plain JSON hex is taken too, as anvil takes it; and the flag is accepted.
    let plain = hearth_rpc::state_document(
        &hearth_messages::state::HeadState {
            header: alloy_consensus::Header::default(),
            accounts: vec![],
        },
        &hearth_rpc::ChainForks::default(),
    )
    .expect("json");
    assert_eq!(target.ok("anvil_loadState", json!([to_hex(&plain)])).await, json!(true));
    assert!(source.ok("anvil_dumpState", json!([true])).await.is_string());
}

/// Loading inside a snapshot is undone by evm_revert, like any dev patch.
#[actix::test]
async fn evm_revert_undoes_a_load() {
    or_skip!(crate::conformance::conformance_dir());
    let source = TestNode::start();
    busy(&source).await;
    let hex = source.ok("anvil_dumpState", json!([])).await;
    let target = TestNode::start();
    let before = dump(&target).await;
    let id = target.ok("evm_snapshot", json!([])).await;
    target.ok("anvil_loadState", json!([hex])).await;
    assert_ne!(dump(&target).await, before);
    assert_eq!(target.ok("evm_revert", json!([id])).await, json!(true));
    assert_eq!(dump(&target).await, before);
}

#[actix::test]
async fn bad_dumps_are_refused_and_load_nothing() {
    or_skip!(crate::conformance::conformance_dir());
    let source = TestNode::start();
    busy(&source).await;
    let good = hex_bytes(&source.ok("anvil_dumpState", json!([])).await);
    // A bound of 1 MiB instead of 256 (the bomb below inflates past either; reading 256 MiB
    // of it takes a debug build tens of seconds).
    let mut config = hearth::config::NodeConfig::for_tests();
    config.rpc.max_state_json_bytes = BOMB_BOUND;
    let node = TestNode::start_with(config);
    let before = dump(&node).await;
    let head = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;

    let mut truncated = good.clone();
    truncated.truncate(good.len() * 2 / 3);
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    // The dump's JSON with one account's nonce past 64 bits, after valid accounts: the valid
    // ones must not be loaded either.
    let mut text: Value = serde_json::from_slice(&flate2_decode(&good)).expect("json");
    let accounts = text["accounts"].as_object_mut().expect("accounts");
    let last = accounts.keys().next_back().expect("an account").clone();
    accounts[&last]["nonce"] = json!("NONCE");
    let over = text.to_string().replace("\"NONCE\"", "18446744073709551616");
    let schema = gzip(over.as_bytes());
    let mut big_code = serde_json::from_slice::<Value>(&flate2_decode(&good)).expect("json");
    big_code["accounts"][&last]["code"] = json!(to_hex(&vec![0x5b; 24_577]));
    let big_code = gzip(big_code.to_string().as_bytes());

    for (what, params) in [
        ("truncated gzip", json!([to_hex(&truncated)])),
        ("corrupt gzip", json!([to_hex(&flipped)])),
        ("nonce over 64 bits", json!([to_hex(&schema)])),
        ("code over EIP-170", json!([to_hex(&big_code)])),
        ("a gzip bomb", json!([to_hex(&bomb())])),
        ("not gzip, not JSON", json!(["0x0102030405"])),
        ("not hex", json!(["0xzz"])),
        ("odd hex", json!(["0x123"])),
        ("no hex prefix", json!(["1f8b"])),
        ("a JSON object", json!([{"accounts": {}}])),
        ("nothing", json!([])),
        ("two arguments", json!([to_hex(&good), 1])),
    ] {
        let (code, message, _) = node.err("anvil_loadState", params).await;
        assert_eq!(code, -32602, "{what}: {message}");
        if what == "a gzip bomb" {
            assert!(message.contains(&format!("larger than {BOMB_BOUND} bytes")), "{message}");
        }
        assert_eq!(dump(&node).await, before, "{what} loaded something");
    }
    assert_eq!(node.ok("eth_getBlockByNumber", json!(["latest", false])).await, head);
    let (code, message, _) = node.err("anvil_dumpState", json!(["yes"])).await;
    assert_eq!(code, -32602, "{message}");
}

fn flate2_decode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut out).expect("gunzip");
    out
}

/// The JSON bound of the node that gets the bomb.
const BOMB_BOUND: usize = 1 << 20;

/// Gzip that inflates to 256 MiB and more (a valid dump's opening, then whitespace), in a few
/// hundred KiB: one compressed MiB of spaces repeated, since after a sync flush every such
/// segment is the same bytes.
fn bomb() -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let spaces = vec![b' '; 1 << 20];
    encoder.write_all(b"{\"block\":null,\"best_block_number\":null,\"accounts\":{}").expect("w");
    encoder.write_all(&spaces).expect("write");
    encoder.flush().expect("flush");
    let start = encoder.get_ref().len();
    encoder.write_all(&spaces).expect("write");
    encoder.flush().expect("flush");
    let segment = encoder.get_ref()[start..].to_vec();
    let mut bomb = encoder.get_ref().clone();
    for _ in 0..MAX_STATE_JSON_BYTES >> 20 {
        bomb.extend_from_slice(&segment);
    }
    // Its hex must fit the 5 MiB request body.
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    bomb
}

/// The flags on the real binary: `--dump-state` writes anvil's plain JSON on SIGTERM,
/// `--load-state` starts a new node with it, `--state` does both.
#[test]
fn the_state_flags_dump_on_exit_and_load_at_start() {
    let dir = TempDir::new("dumpstate");
    let file = dir.path().join("state.json");
    let path = file.to_str().expect("utf-8");
    let first = NodeProcess::spawn(&["-p", "0", "--dump-state", path]);
    let alice = first.ok("eth_accounts", json!([]))[0].clone();
    let stranger = "0x00000000000000000000000000000000000c0ffe";
    first.ok("eth_sendTransaction", json!([{"from": alice, "to": stranger, "value": "0x1234"}]));
    first.ok("anvil_setStorageAt", json!([stranger, "0x1", format!("0x{:064x}", 0x99)]));
    let alice_balance = first.ok("eth_getBalance", json!([alice, "latest"]));
    first.stop();
    let text = std::fs::read_to_string(&file).expect("the dump was written");
    let written: Value = serde_json::from_str(&text).expect("plain JSON, as anvil writes it");
    assert_eq!(written["best_block_number"], json!(1));
    assert_eq!(written["accounts"][stranger]["balance"], json!("0x1234"));

    let second = NodeProcess::spawn(&["-p", "0", "--load-state", path]);
    assert_eq!(second.ok("eth_getBalance", json!([stranger, "latest"])), json!("0x1234"));
    assert_eq!(second.ok("eth_getBalance", json!([alice, "latest"])), alice_balance);
    assert_eq!(second.ok("eth_getTransactionCount", json!([alice, "latest"])), json!("0x1"));
    assert_eq!(
        second.ok("eth_getStorageAt", json!([stranger, "0x1", "latest"])),
        json!(format!("0x{:064x}", 0x99))
    );
    second.stop();

    // --state: a file that is not there yet is only written; then it is read back.
    let state = dir.path().join("both.json");
    let state = state.to_str().expect("utf-8");
    let third = NodeProcess::spawn(&["-p", "0", "--state", state]);
    third.ok("anvil_setBalance", json!([stranger, "0x77"]));
    third.stop();
    let fourth = NodeProcess::spawn(&["-p", "0", "--state", state]);
    assert_eq!(fourth.ok("eth_getBalance", json!([stranger, "latest"])), json!("0x77"));
    fourth.ok("anvil_setBalance", json!([stranger, "0x78"]));
    fourth.stop();
    let again: Value = serde_json::from_slice(&std::fs::read(state).expect("read")).expect("json");
    assert_eq!(again["accounts"][stranger]["balance"], json!("0x78"));

    // A directory gets state.json inside, as anvil's.
    let into = dir.path().join("dir");
    std::fs::create_dir(&into).expect("dir");
    let fifth = NodeProcess::spawn(&["-p", "0", "--dump-state", into.to_str().expect("utf-8")]);
    // An answer first: the signal handlers are installed once the server runs.
    fifth.ok("eth_chainId", json!([]));
    fifth.stop();
    assert!(into.join("state.json").is_file());
}

/// A dump that cannot be loaded stops the start with exit code 2 and a message naming the
/// flag, the file and what is wrong; so do the combinations that make no sense.
#[test]
fn unusable_state_files_stop_the_start() {
    let dir = TempDir::new("badstate");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    let good = json!({"block": null, "best_block_number": null, "accounts": {
        "0x00000000000000000000000000000000000c0ffe":
            {"nonce": 1, "balance": "0x1", "code": "0x", "storage": {}}}})
    .to_string();
    let truncated = write("truncated.json", &good.as_bytes()[..good.len() - 5]);
    let gz = gzip(good.as_bytes());
    let truncated_gz = write("truncated.json.gz", &gz[..gz.len() - 6]);
    let balance = write(
        "balance.json",
        good.replace(
            "\"0x1\",",
            "\"0x1ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\",",
        )
        .as_bytes(),
    );
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().expect("utf-8");
    let datadir = dir.path().join("chain");
    let ok = write("ok.json", good.as_bytes());
    for (args, says) in [
        (vec!["--load-state", truncated.as_str()], "EOF while parsing"),
        (vec!["--load-state", truncated_gz.as_str()], "gzip"),
        (vec!["--load-state", balance.as_str()], "256 bits"),
        (vec!["--load-state", missing], "cannot read it"),
        (vec!["--state", truncated.as_str()], "--state"),
        (
            vec!["--load-state", ok.as_str(), "--datadir", datadir.to_str().expect("utf-8")],
            "--datadir",
        ),
        (vec!["--dump-state", "/nonexistent-dir/x/state.json"], "directory does not exist"),
    ] {
        let mut all = vec!["-p", "0"];
        all.extend_from_slice(&args);
        let (code, stdout, stderr) = NodeProcess::run_to_exit(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert!(stderr.contains(says), "{args:?} should say {says:?}: {stderr}");
        assert!(stderr.contains(args[1]), "{args:?} should name the file: {stderr}");
    }
    assert!(!datadir.exists(), "nothing was created");
}
