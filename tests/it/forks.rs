//! Per-block fork rules on an imported chain that crosses forks (hive's Osaka chain: Shanghai
//! at block 39, Cancun 42, Prague 45, Osaka 48, BPO1 51, BPO2 54): eth_call, eth_estimateGas,
//! debug_traceCall, trace_call and eth_feeHistory at block N follow block N's fork, not the
//! head's.

use serde_json::{Value, json};

use crate::support::TestNode;

/// Initcode `PUSH0 PUSH0 RETURN`: valid from Shanghai (EIP-3855).
const PUSH0: &str = "0x5f5ff3";
/// Initcode `PUSH1 1 CLZ PUSH0 MSTORE PUSH1 32 PUSH0 RETURN`: valid from Osaka (EIP-7939),
/// returns clz(1) = 255 as a word.
const CLZ: &str = "0x60011e5f5260205ff3";

fn at(block: u64) -> Value {
    json!(format!("{block:#x}"))
}

async fn call(node: &TestNode, code: &str, block: u64) -> Value {
    node.call("eth_call", json!([{"data": code}, at(block)])).await
}

#[actix::test]
async fn calls_estimates_and_traces_at_block_n_run_under_block_ns_fork() {
    or_skip!(crate::conformance::conformance_dir());
    let node = crate::rpc_compat::osaka_node();
    // PUSH0 is an invalid opcode before Shanghai (block 38) and works from block 39 on.
    let before = call(&node, PUSH0, 38).await;
    // revm's halt, in its words: the opcode is not activated yet.
    let error = before.get("error").unwrap_or_else(|| panic!("PUSH0 ran at block 38: {before}"));
    assert_eq!(
        (error["code"].as_i64(), error["message"].as_str()),
        (Some(-32000), Some("NotActivated"))
    );
    assert_eq!(call(&node, PUSH0, 39).await["result"], "0x");

    // CLZ only from Osaka: invalid at block 47 (Prague), 255 at block 48.
    assert!(call(&node, CLZ, 47).await.get("error").is_some());
    let clz = call(&node, CLZ, 48).await;
    assert_eq!(clz["result"], format!("0x{:064x}", 255), "{clz}");

    // eth_estimateGas: the same PUSH0 code cannot succeed at block 38 at any gas.
    let estimate = node.call("eth_estimateGas", json!([{"data": PUSH0}, at(38)])).await;
    assert!(estimate.get("error").is_some(), "{estimate}");
    node.ok("eth_estimateGas", json!([{"data": PUSH0}, at(39)])).await;

    // debug_traceCall: the struct logger sees the invalid opcode at block 38 only.
    let traced = node.ok("debug_traceCall", json!([{"data": PUSH0}, at(38)])).await;
    assert_eq!(traced["failed"], true, "{traced}");
    let traced = node.ok("debug_traceCall", json!([{"data": PUSH0}, at(39)])).await;
    assert_eq!(traced["failed"], false, "{traced}");

    // trace_call: the parity trace carries the error at block 38 only.
    let parity = node.ok("trace_call", json!([{"data": PUSH0}, ["trace"], at(38)])).await;
    assert!(parity["trace"][0].get("error").is_some(), "{parity}");
    let parity = node.ok("trace_call", json!([{"data": PUSH0}, ["trace"], at(39)])).await;
    assert!(parity["trace"][0].get("error").is_none(), "{parity}");
}

#[actix::test]
async fn fee_history_uses_each_blocks_blob_schedule() {
    or_skip!(crate::conformance::conformance_dir());
    let node = crate::rpc_compat::osaka_node();
    // Blocks 42..=53 each use one blob or none; the ratio is over the block's own maximum:
    // 6 blobs under Cancun, 9 under Prague and Osaka, 15 under BPO1.
    let history = node.ok("eth_feeHistory", json!([12, at(53), []])).await;
    let ratios: Vec<f64> = history["blobGasUsedRatio"]
        .as_array()
        .expect("ratios")
        .iter()
        .map(|r| r.as_f64().expect("a number"))
        .collect();
    let (cancun, prague, bpo1) = (1.0 / 6.0, 1.0 / 9.0, 1.0 / 15.0);
    let want = [cancun, cancun, 0.0, prague, 0.0, 0.0, prague, 0.0, 0.0, bpo1, 0.0, bpo1];
    assert_eq!(ratios.len(), want.len());
    for (block, (got, want)) in (42..).zip(ratios.iter().zip(want)) {
        assert!((got - want).abs() < 1e-12, "block {block}: {got} != {want}");
    }
    // No excess blob gas on this chain: every blob base fee is the minimum.
    assert!(history["baseFeePerBlobGas"].as_array().expect("fees").iter().all(|f| f == "0x1"));
    // Before Cancun there is no blob fee at all, nor one for the block after (geth: zero).
    let early = node.ok("eth_feeHistory", json!([2, at(41), []])).await;
    assert_eq!(early["baseFeePerBlobGas"], json!(["0x0", "0x0", "0x0"]));
    assert_eq!(early["blobGasUsedRatio"], json!([0.0, 0.0]));
}
