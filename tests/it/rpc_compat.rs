//! The hive `rpc-compat` chains (`shared/conformance/rpc/{prague,osaka}`, README section 6)
//! imported through `hearth::chainfile::import_chain` (the code behind `hearth import`), then
//! served by a whole node: the head must be the chain's, and every `.io` request/response pair
//! of every method directory is replayed in hive's order (files sorted by path, one node) and
//! compared as JSON (error messages ignored, as hive does).
//!
//! The osaka snapshot is the reference. The prague one is older: where a prague answer differs
//! from ours only by members execution-apis added since ([`NEWER_MEMBERS`]), the file is
//! counted as "older snapshot", not as a pass. Every other file must pass except the
//! documented [`KNOWN_MISMATCHES`]; the tests print the pass rates per method
//! (`cargo test --test it rpc_compat -- --nocapture`; `RPC_COMPAT_SHOW=<part of a path>`
//! prints both answers of failing files in full).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_consensus::{Block, TxEnvelope};
use alloy_rlp::{Decodable, Encodable};
use hearth::chainfile::{export_chain, import_chain};
use hearth::config::NodeConfig;
use hearth::genesis::Genesis;
use hearth::node::Node;
use hearth_rpc::Extensions;
use hearth_storage::ChainWriter;
use serde_json::{Value, json};

use crate::conformance::shared_dir;
use crate::support::TestNode;

/// Members of answers the prague snapshot predates, which the osaka snapshot expects and
/// Hearth sends: `blockTimestamp` in transaction objects and `maxUsedGas` in eth_simulateV1
/// call results.
const NEWER_MEMBERS: &[&str] = &["blockTimestamp", "maxUsedGas"];

/// Why prague's fee-cap errors differ: the geth that recorded it answered a fee cap below the
/// base fee with -32602; execution-apis assigns -38012, which the osaka snapshot expects.
const OLD_FEE_CAP_CODE: &str = "older geth answered -32602 for a fee cap below the base fee; \
    execution-apis assigns -38012, as the osaka snapshot expects";

/// Why prague's reverting simulated calls differ: the geth that recorded it gave a revert
/// inside a simulated call's result code -32000; execution-apis (and the osaka snapshot) give
/// it 3, as eth_call does.
const OLD_REVERT_CODE: &str = "older geth coded a reverted simulated call -32000; \
    execution-apis codes it 3, as the osaka snapshot expects";

/// `.io` files (snapshot/method/file) Hearth does not match, and why. Everything else must
/// pass (or, in prague, differ only by [`NEWER_MEMBERS`]).
const KNOWN_MISMATCHES: &[(&str, &str)] = &[
    (
        "prague/eth_getStorageAt/get-storage-invalid-key.io",
        "older geth answered -32000 for a malformed slot; Hearth answers -32602 (bad params), \
         which the osaka snapshot expects",
    ),
    (
        "osaka/eth_getLogs/filter-error-future-block-range.io",
        "Hearth cuts a range at the head (documented in rpc/src/logs.rs); newer geth rejects \
         a toBlock after the head with -32602",
    ),
    (
        "prague/eth_simulateV1/ethSimulate-basefee-too-low-with-validation-38012.io",
        OLD_FEE_CAP_CODE,
    ),
    ("prague/eth_simulateV1/ethSimulate-check-invalid-nonce.io", OLD_FEE_CAP_CODE),
    (
        "prague/eth_simulateV1/ethSimulate-simple-no-funds-with-validation-without-nonces.io",
        OLD_FEE_CAP_CODE,
    ),
    (
        "prague/eth_simulateV1/ethSimulate-simple-send-from-contract-with-validation.io",
        OLD_FEE_CAP_CODE,
    ),
    (
        "prague/eth_simulateV1/ethSimulate-eth-send-should-not-produce-logs-on-revert.io",
        OLD_REVERT_CODE,
    ),
    (
        "prague/eth_simulateV1/ethSimulate-eth-send-should-produce-no-logs-on-forward-revert.io",
        OLD_REVERT_CODE,
    ),
    (
        "osaka/testing_buildBlockV1/build-block-empty-transactions.io",
        "the built block's gas limit moves toward the miner's: geth's default gas ceiling of 60M \
         there (one step down from the parent's 200M), the node's block gas limit here (the \
         imported head's 200M), so gasLimit and blockHash differ; the state root and every \
         other field match, and with a 60M target the block hash matches too",
    ),
];

fn snapshot(name: &str) -> PathBuf {
    shared_dir().join("rpc").join(name)
}

/// Imports a snapshot into a fresh in-memory store, as `hearth import` would.
fn import_snapshot(name: &str) -> (ChainWriter, hearth::chainfile::ImportSummary) {
    let dir = snapshot(name);
    let genesis = Genesis::read(&dir.join("genesis.json")).expect("genesis.json parses");
    let db = ChainWriter::in_memory().expect("in-memory store");
    let summary =
        import_chain(&db, &genesis, &[dir.join("chain.rlp")], false).expect("the chain imports");
    (db, summary)
}

/// The head block hash `headfcu.json` sets.
fn fcu_head(name: &str) -> String {
    let text = std::fs::read_to_string(snapshot(name).join("headfcu.json")).expect("headfcu");
    let fcu: Value = serde_json::from_str(&text).expect("headfcu is JSON");
    fcu["params"][0]["headBlockHash"].as_str().expect("head hash").to_owned()
}

fn start_node(db: ChainWriter) -> TestNode {
    let mut config = NodeConfig::for_tests();
    // hive runs the suite against an idle node: nothing may be mined behind its back.
    config.automine = false;
    let node = Node::start_on(db, config, Arc::new(|| 0)).expect("node starts on the import");
    let ctx = node.rpc_context(Extensions::default());
    TestNode { node, ctx }
}

/// A node serving the imported osaka snapshot, for other modules' tests.
pub(crate) fn osaka_node() -> TestNode {
    start_node(import_snapshot("osaka").0)
}

#[test]
fn import_is_idempotent_and_exports_byte_for_byte() {
    or_skip!(crate::conformance::conformance_dir());
    for name in ["prague", "osaka"] {
        let dir = snapshot(name);
        let genesis = Genesis::read(&dir.join("genesis.json")).expect("genesis.json parses");
        let (db, first) = import_snapshot(name);
        assert_eq!(format!("{}", first.head_hash), fcu_head(name), "{name} head");
        let again = import_chain(&db, &genesis, &[dir.join("chain.rlp")], false).expect("re-run");
        assert_eq!((again.imported, again.skipped, again.head), (0, first.head, first.head));
        let out =
            std::env::temp_dir().join(format!("hearth-export-{name}-{}.rlp", std::process::id()));
        assert_eq!(export_chain(&db, None, None, &out).expect("export"), first.head);
        let exported = std::fs::read(&out).expect("exported file");
        let _ = std::fs::remove_file(&out);
        assert!(exported == std::fs::read(dir.join("chain.rlp")).expect("chain.rlp"), "{name}");
    }
}

#[test]
fn a_genesis_of_another_chain_is_refused() {
    or_skip!(crate::conformance::conformance_dir());
    let (db, _) = import_snapshot("prague");
    let other = Genesis::read(&snapshot("osaka").join("genesis.json")).expect("parses");
    let err = import_chain(&db, &other, &[], false).expect_err("another genesis");
    assert!(err.to_string().contains("use another --datadir"), "{err}");
}

#[test]
fn a_bad_block_stops_the_import_at_the_last_good_block() {
    or_skip!(crate::conformance::conformance_dir());
    let dir = snapshot("prague");
    let genesis = Genesis::read(&dir.join("genesis.json")).expect("genesis.json parses");
    let chain = std::fs::read(dir.join("chain.rlp")).expect("chain.rlp");
    // Blocks 1..=10 with block 10's gas used changed: it still decodes, its hash changes, and
    // its execution disagrees with the header.
    let mut rest = chain.as_slice();
    let mut broken = Vec::new();
    for _ in 0..10 {
        let mut block = Block::<TxEnvelope>::decode(&mut rest).expect("block decodes");
        if block.header.number == 10 {
            block.header.gas_used += 1;
        }
        block.encode(&mut broken);
    }
    let path = std::env::temp_dir().join(format!("hearth-broken-{}.rlp", std::process::id()));
    std::fs::write(&path, &broken).expect("write the broken chain");
    let db = ChainWriter::in_memory().expect("in-memory store");
    let err = import_chain(&db, &genesis, std::slice::from_ref(&path), false)
        .expect_err("block 10 is bad");
    let _ = std::fs::remove_file(&path);
    let message = err.to_string();
    assert!(message.contains("block 10") && message.contains("gas used"), "{message}");
    assert!(message.contains("stays at block 9"), "{message}");
    assert_eq!(db.head_number(), Some(9));

    // The good chain then continues from block 9, skipping what is already stored.
    let summary = import_chain(&db, &genesis, &[dir.join("chain.rlp")], false).expect("imports");
    assert_eq!((summary.imported, summary.skipped, summary.head), (36, 9, 45));
}

/// One `.io` file: its round trips and whether it only checks the result's shape.
struct IoTest {
    speconly: bool,
    pairs: Vec<(String, Value)>,
}

fn read_io(path: &Path) -> IoTest {
    let text = std::fs::read_to_string(path).expect(".io file");
    let mut test = IoTest { speconly: false, pairs: Vec::new() };
    let mut request = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix("//") {
            test.speconly |= comment.trim_start().starts_with("speconly:");
        } else if let Some(req) = line.strip_prefix(">>") {
            request = Some(req.trim().to_owned());
        } else if let Some(resp) = line.strip_prefix("<<") {
            let req = request.take().expect("a response follows a request");
            test.pairs.push((req, serde_json::from_str(resp.trim()).expect("response JSON")));
        } else {
            panic!("{}: unexpected line {line}", path.display());
        }
    }
    test
}

/// hive's comparison: error messages are dropped when both sides have an error; numbers
/// compare by value (serde_json already does for integers).
fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(error)) = map.get_mut("error") {
                error.remove("message");
            }
            map.values_mut().for_each(normalise);
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        _ => {}
    }
}

/// How one `.io` file fared.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Every answer matched.
    Pass,
    /// The answers differ only by members the (prague) snapshot predates.
    OlderSnapshot,
    /// An answer differs; the first differences.
    Mismatch(String),
}

/// Per method: (passed, older snapshot, total).
type Rates = BTreeMap<String, (usize, usize, usize)>;

/// `got` without the [`NEWER_MEMBERS`] that `want` lacks at the same place.
fn without_newer_members(got: &Value, want: &Value) -> Value {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => Value::Object(
            g.iter()
                .filter(|(k, _)| w.contains_key(*k) || !NEWER_MEMBERS.contains(&k.as_str()))
                .map(|(k, v)| {
                    (k.clone(), w.get(k).map_or(v.clone(), |w| without_newer_members(v, w)))
                })
                .collect(),
        ),
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            Value::Array(g.iter().zip(w).map(|(g, w)| without_newer_members(g, w)).collect())
        }
        _ => got.clone(),
    }
}

/// Replays one `.io` file.
async fn run_file(node: &TestNode, name: &str, file: &Path) -> Verdict {
    let test = read_io(file);
    let mut verdict = Verdict::Pass;
    for (request, mut want) in test.pairs {
        let mut got = node.raw(&request).await.unwrap_or(Value::Null);
        // A schema-only test checks only the shape of a successful reply; an error reply is
        // compared like any other.
        if test.speconly && got.get("error").is_none() {
            if got.get("result").is_none() {
                return Verdict::Mismatch(format!("speconly: {got}"));
            }
            continue;
        }
        if got.get("error").is_some() && want.get("error").is_some() {
            normalise(&mut got);
            normalise(&mut want);
        }
        if got == want {
            continue;
        }
        if name == "prague" && without_newer_members(&got, &want) == want {
            verdict = Verdict::OlderSnapshot;
            continue;
        }
        // RPC_COMPAT_SHOW=<part of a path> prints both answers in full.
        if std::env::var("RPC_COMPAT_SHOW").is_ok_and(|part| file.to_string_lossy().contains(&part))
        {
            eprintln!("{}\n  got  {got}\n  want {want}", file.display());
        }
        let mut diffs = Vec::new();
        differences("", &got, &want, &mut diffs);
        diffs.truncate(4);
        return Verdict::Mismatch(diffs.join("; "));
    }
    verdict
}

/// Runs every `.io` file of every method directory of `name`, in hive's order; returns the
/// rates and the mismatching files with their first differences.
async fn run_io(node: &TestNode, name: &str) -> (Rates, Vec<String>) {
    let mut rates = Rates::new();
    let mut failures = Vec::new();
    let mut methods: Vec<String> = std::fs::read_dir(snapshot(name))
        .expect("snapshot directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .collect();
    methods.sort();
    for method in &methods {
        let mut files: Vec<_> = std::fs::read_dir(snapshot(name).join(method))
            .expect("method directory")
            .map(|e| e.expect("dir entry").path())
            .filter(|f| f.extension().is_some_and(|e| e == "io"))
            .collect();
        files.sort();
        for file in files {
            let entry = rates.entry(method.clone()).or_insert((0, 0, 0));
            entry.2 += 1;
            let stem = file.file_name().and_then(|s| s.to_str()).unwrap_or_default();
            match run_file(node, name, &file).await {
                Verdict::Pass => entry.0 += 1,
                Verdict::OlderSnapshot => entry.1 += 1,
                Verdict::Mismatch(why) => failures.push(format!("{name}/{method}/{stem}: {why}")),
            }
        }
    }
    (rates, failures)
}

/// The paths where `got` and `want` differ, for a readable failure line.
fn differences(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for key in g.keys().chain(w.keys().filter(|k| !g.contains_key(*k))) {
                let sub = format!("{path}.{key}");
                match (g.get(key), w.get(key)) {
                    (Some(a), Some(b)) => differences(&sub, a, b, out),
                    (Some(_), None) => out.push(format!("{sub} extra")),
                    (None, _) => out.push(format!("{sub} missing")),
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                differences(&format!("{path}[{i}]"), a, b, out);
            }
        }
        _ if got != want => {
            let short = |v: &Value| v.to_string().chars().take(80).collect::<String>();
            out.push(format!("{path}: got {} want {}", short(got), short(want)));
        }
        _ => {}
    }
}

fn report(name: &str, rates: &Rates) {
    let (passed, older, total) =
        rates.values().fold((0, 0, 0), |(p, o, t), (a, b, c)| (p + a, o + b, t + c));
    let percent = |n: usize| 100.0 * n as f64 / total.max(1) as f64;
    eprintln!("rpc-compat {name}: {passed}/{total} files pass ({:.1}%)", percent(passed));
    if older > 0 {
        eprintln!(
            "  and {older} more differ only by members the snapshot predates ({}): \
             {}/{total} ({:.1}%) against the osaka reference",
            NEWER_MEMBERS.join(", "),
            passed + older,
            percent(passed + older)
        );
    }
    for (method, (p, o, t)) in rates {
        let older = if *o > 0 { format!(" (+{o} older snapshot)") } else { String::new() };
        eprintln!("  {method:<42} {p}/{t}{older}");
    }
}

#[actix::test]
async fn prague_chain_serves_its_head_and_the_rpc_compat_pairs() {
    or_skip!(crate::conformance::conformance_dir());
    let (db, summary) = import_snapshot("prague");
    assert_eq!(summary.head, 45);
    let node = start_node(db);
    let head = fcu_head("prague");
    assert_eq!(node.ok("eth_blockNumber", json!([])).await, json!("0x2d"));
    assert_eq!(
        node.ok("eth_getBlockByNumber", json!(["latest", false])).await["hash"],
        json!(head)
    );
    assert_eq!(node.ok("eth_chainId", json!([])).await, json!("0xc72dd9d5e883e"));

    check_io(&node, "prague").await;
}

/// Runs the `.io` pairs of snapshot `name`, prints the pass rates, and fails on any mismatch
/// not in [`KNOWN_MISMATCHES`].
async fn check_io(node: &TestNode, name: &str) {
    let (rates, failures) = run_io(node, name).await;
    report(name, &rates);
    let known = |f: &String| {
        KNOWN_MISMATCHES.iter().find(|(file, _)| f.starts_with(&format!("{file}:"))).map(|k| k.1)
    };
    for failure in &failures {
        if let Some(why) = known(failure) {
            let file = failure.split(':').next().unwrap_or_default();
            eprintln!("  documented mismatch {file}: {why}");
        }
    }
    let unexpected: Vec<_> = failures.iter().filter(|f| known(f).is_none()).collect();
    for failure in &unexpected {
        eprintln!("mismatch {failure}");
    }
    assert!(unexpected.is_empty(), "{name}: {} unexpected mismatches", unexpected.len());
    // A documented mismatch that no longer happens must leave the list, so the list stays
    // exactly what differs.
    let stale: Vec<_> = KNOWN_MISMATCHES
        .iter()
        .filter(|(file, _)| file.starts_with(&format!("{name}/")))
        .filter(|(file, _)| !failures.iter().any(|f| f.starts_with(&format!("{file}:"))))
        .map(|(file, _)| *file)
        .collect();
    assert!(stale.is_empty(), "documented mismatches that now pass, remove them: {stale:?}");
}

#[actix::test]
async fn osaka_chain_serves_its_head_and_the_rpc_compat_pairs() {
    or_skip!(crate::conformance::conformance_dir());
    let (db, summary) = import_snapshot("osaka");
    assert_eq!(summary.head, 54);
    let node = start_node(db);
    let head = fcu_head("osaka");
    assert_eq!(
        node.ok("eth_getBlockByNumber", json!(["latest", false])).await["hash"],
        json!(head)
    );
    check_io(&node, "osaka").await;
    uncles_of_imported_blocks_are_served(&node).await;
}

/// The pre-merge blocks of the osaka chain carry ommers: their count and headers are served,
/// each ommer's hash being one the block lists.
async fn uncles_of_imported_blocks_are_served(node: &TestNode) {
    let mut seen = 0;
    for number in 1..36u64 {
        let block = node.ok("eth_getBlockByNumber", json!([format!("{number:#x}"), false])).await;
        let hashes = block["uncles"].as_array().expect("uncles").clone();
        let count = node.ok("eth_getUncleCountByBlockNumber", json!([block["number"]])).await;
        assert_eq!(count, json!(format!("{:#x}", hashes.len())), "block {number}");
        for (i, hash) in hashes.iter().enumerate() {
            let index = format!("{i:#x}");
            let uncle =
                node.ok("eth_getUncleByBlockHashAndIndex", json!([block["hash"], index])).await;
            assert_eq!(&uncle["hash"], hash, "block {number} ommer {i}");
            assert!(uncle.get("transactions").is_none() && uncle["uncles"] == json!([]));
            seen += 1;
        }
    }
    assert_eq!(seen, 18, "the osaka chain has 18 ommers");
}
