//! `GET /metrics` on the RPC port: Prometheus text with request counters, latency histograms,
//! rejections by path and the gauges other actors own.

use serde_json::json;

use crate::process::{NodeProcess, TempDir, get, post};

const ALICE: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

/// The value of the first sample line that starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(prefix))?.rsplit(' ').next()?.parse().ok()
}

#[test]
fn metrics_count_requests_errors_and_rejections() {
    let dir = TempDir::new("metrics");
    let node = NodeProcess::start(dir.path(), &["--rpc.gascap", "100000"]);
    for _ in 0..3 {
        node.ok("eth_getBalance", json!([ALICE, "latest"]));
    }
    node.ok("eth_sendTransaction", json!([{"from": ALICE, "to": ALICE, "value": "0x1"}]));
    // Given 2M gas, a block is over the miner's own-thread bound: the pool builds it.
    let big = json!([{"from": ALICE, "to": ALICE, "value": "0x1", "gas": "0x1e8480"}]);
    node.ok("eth_sendTransaction", big);
    assert!(node.call("eth_getBalance", json!(["0x12"])).get("error").is_some());
    // A batch over the item limit is shed whole.
    let items: Vec<_> = (0..1001)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "eth_chainId", "params": []}))
        .collect();
    let (_, body) = post(node.addr, &serde_json::Value::Array(items).to_string()).unwrap();
    assert!(body.contains("-32005"), "{body}");

    let (status, text) = get(node.addr, "/metrics").unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        sample(&text, "hearth_rpc_requests_total{method=\"eth_getBalance\"}"),
        Some(4.0),
        "{text}"
    );
    assert_eq!(sample(&text, "hearth_rpc_errors_total{method=\"eth_getBalance\"}"), Some(1.0));
    assert_eq!(
        sample(&text, "hearth_rpc_request_duration_seconds_count{method=\"eth_getBalance\"}"),
        Some(4.0)
    );
    assert_eq!(sample(&text, "hearth_rpc_rejections_total{path=\"batch_too_large\"}"), Some(1.0));
    assert_eq!(sample(&text, "hearth_rpc_rejections_total{path=\"executor_busy\"}"), Some(0.0));
    assert_eq!(sample(&text, "hearth_block_number"), Some(2.0));
    let blocks = "hearth_executor_inline_blocks_total{outcome=";
    assert_eq!(sample(&text, &format!("{blocks}\"built\"}}")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &format!("{blocks}\"handed_back\"}}")), Some(1.0), "{text}");
    assert_eq!(sample(&text, "hearth_executor_in_flight"), Some(0.0));
    assert_eq!(sample(&text, "hearth_executor_max_queue_delay_seconds"), Some(0.1));
    assert_eq!(sample(&text, "hearth_executor_max_queued"), Some(1024.0));
    assert_eq!(sample(&text, "hearth_executor_refusals_total{reason=\"queue_delay\"}"), Some(0.0));
    assert_eq!(sample(&text, "hearth_executor_refusals_total{reason=\"queue_full\"}"), Some(0.0));
    // Block 2 was built on the pool (and block 1's gas estimated there): their waits for the
    // thread are in the histogram.
    let waited = sample(&text, "hearth_executor_queue_delay_seconds_count").unwrap_or(0.0);
    assert!(waited >= 1.0, "{text}");
    assert_eq!(
        sample(&text, "hearth_executor_queue_delay_seconds_bucket{le=\"+Inf\"}"),
        Some(waited)
    );
    assert_eq!(sample(&text, "hearth_mempool_pending"), Some(0.0));
    assert!(sample(&text, "hearth_code_cache_entries").is_some(), "{text}");
    assert!(text.contains("# TYPE hearth_rpc_request_duration_seconds histogram"));
}

#[test]
fn health_answers_200_with_the_head_while_the_node_serves() {
    let node = NodeProcess::spawn(&["--http.port", "0"]);
    node.ok("evm_mine", json!([]));
    let hash = node.ok("eth_getBlockByNumber", json!(["latest", false]))["hash"].clone();
    for path in ["/health", "/readyz"] {
        let (status, body) = get(node.addr, path).expect("answered");
        assert_eq!(status, 200, "{path}: {body}");
        let body: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(body, json!({"status": "ok", "head": 1, "hash": hash}));
    }
}
