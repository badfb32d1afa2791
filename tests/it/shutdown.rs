//! Shutdown drains (issue 14, part 4): on SIGINT/SIGTERM the executor calls still queued are
//! answered with an error without running (not dropped, not left hanging until the HTTP server's
//! timeout), the miner finishes the block in progress and starts no other, and the journal is
//! checkpointed, so the next start serves the last mined block.

use std::num::NonZeroUsize;
use std::time::Duration;

use alloy_eips::Encodable2718;
use alloy_primitives::{Address, Bytes, U256, address};
use hearth::config::NodeConfig;
use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir, post};
use crate::support::{TestNode, fixtures};

/// Code that loops until its gas runs out (JUMPDEST; PUSH1 0; JUMP): a call or transaction to
/// it keeps an executor thread busy for as long as its gas lasts.
const SPIN: &str = "0x5b600056";
const SPINNER: Address = address!("00000000000000000000000000000000005b1200");

/// A real bound on "answered, not hung": far above what a drain takes, far below forever.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

fn shutting_down(response: &Value) -> bool {
    response["error"]["code"] == -32005
        && response["error"]["message"].as_str().is_some_and(|m| m.contains("shutting down"))
}

#[actix::test]
async fn drain_answers_queued_calls_and_lets_the_block_in_progress_commit() {
    let mut config = NodeConfig::for_tests();
    // One executor thread: the block build runs and every call queues behind it.
    config.executor_threads = NonZeroUsize::new(1).expect("1 is non-zero");
    let node = TestNode::start_with(config);
    node.ok("anvil_setCode", json!([SPINNER, SPIN])).await;
    let ctx = node.ctx.clone();

    // A transaction that spins for 15M gas, automined: its block is being built while the
    // calls queue and the drain starts. (At 5M the build once ended, on a loaded machine,
    // before the drain closed the pool, and the first queued call ran.)
    let tx =
        fixtures::eip1559(&node.signer(0), 0, Some(SPINNER), U256::ZERO, Bytes::new(), 15_000_000);
    let raw = alloy_primitives::hex::encode_prefixed(tx.encoded_2718());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_sendRawTransaction",
                      "params": [raw]})
    .to_string();
    let send = {
        let ctx = ctx.clone();
        actix::spawn(async move { hearth_rpc::handle_body(&ctx, body.as_bytes()).await })
    };
    let executor = node.node.executor.clone();
    while executor.in_flight() == 0 {
        tokio::task::yield_now().await;
    }

    // Four calls that would each spin for the whole gas cap, queued behind the block.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "eth_call",
                      "params": [{"to": SPINNER}, "latest"]})
    .to_string();
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let (ctx, call) = (ctx.clone(), call.clone());
            actix::spawn(async move { hearth_rpc::handle_body(&ctx, call.as_bytes()).await })
        })
        .collect();
    while executor.in_flight() < 5 {
        tokio::task::yield_now().await;
    }

    tokio::time::timeout(ANSWER_WITHIN, node.node.drain().run()).await.expect("drain ends");
    for call in calls {
        let reply = tokio::time::timeout(ANSWER_WITHIN, call)
            .await
            .expect("a queued call is answered, not left hanging")
            .expect("the task ran");
        assert_eq!(reply.status, 503, "a single request refused by shutdown is HTTP 503");
        let response: Value = serde_json::from_slice(&reply.body.expect("a body")).expect("JSON");
        assert!(shutting_down(&response), "{response}");
    }
    // The block in progress was committed, and the sender got its hash.
    let sent = send.await.expect("the task ran");
    let sent: Value = serde_json::from_slice(&sent.body.expect("a body")).expect("JSON");
    assert_eq!(sent["result"], json!(tx.tx_hash()), "{sent}");
    assert_eq!(node.block_number().await, 1);
    let receipt = node.ok("eth_getTransactionReceipt", json!([tx.tx_hash()])).await;
    assert_eq!(receipt["blockNumber"], "0x1", "{receipt}");

    // After the drain no block starts and no call runs.
    let mined = node.call("evm_mine", json!([])).await;
    assert!(shutting_down(&mined), "{mined}");
    let called = node.call("eth_call", json!([{"to": SPINNER}, "latest"])).await;
    assert!(shutting_down(&called), "{called}");
    assert_eq!(node.block_number().await, 1);
}

/// The whole process: SIGTERM while calls are queued on its one executor thread. Every call
/// gets an HTTP answer, the process exits 0, and the next start serves the last mined block.
#[test]
fn sigterm_answers_every_queued_call_and_the_chain_reopens_at_the_last_block() {
    let dir = TempDir::new("sigterm-drain");
    // One executor thread, and a queueing budget no spin call can exceed: admission must not
    // refuse what the drain is to answer.
    let node = NodeProcess::start(
        dir.path(),
        &["--executor.threads", "1", "--executor.max-queue-delay", "10s"],
    );
    node.ok("anvil_setCode", json!([SPINNER, SPIN]));
    let from = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    for _ in 0..2 {
        node.ok("eth_sendTransaction", json!([{"from": from, "to": SPINNER, "gas": "0x5208"}]));
    }
    let head = node.ok("eth_blockNumber", json!([]));
    assert_eq!(head, "0x2");

    let addr = node.addr;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call",
                      "params": [{"to": SPINNER}, "latest"]})
    .to_string();
    let callers: Vec<_> = (0..5)
        .map(|_| {
            let call = call.clone();
            std::thread::spawn(move || post(addr, &call))
        })
        .collect();
    // Wait until all five are in the pool (one running, four queued).
    let queued = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("hearth_executor_in_flight "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let started = std::time::Instant::now();
    loop {
        let (_, metrics) = crate::process::get(addr, "/metrics").expect("metrics");
        if queued(&metrics) >= 5.0 {
            break;
        }
        assert!(started.elapsed() < ANSWER_WITHIN, "the calls never queued:\n{metrics}");
    }
    node.stop();
    let mut refused = 0;
    for caller in callers {
        let (status, body) = caller.join().expect("caller").expect("an HTTP answer");
        let response: Value = serde_json::from_str(&body).expect("JSON");
        if shutting_down(&response) {
            assert_eq!(status, 503, "{body}");
            refused += 1;
        } else {
            // Only the running call could have ended before the signal came: out of gas, or
            // stopped by the EVM time cap on a machine slow enough (a loaded CI box).
            let message = response["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message == "out of gas" || message.starts_with("execution aborted (timeout"),
                "{response}"
            );
        }
    }
    // A spin runs for its whole gas cap: the four queued behind it were still waiting.
    assert!(refused >= 4, "{refused} of 5 calls were answered by the drain");

    let node = NodeProcess::start(dir.path(), &[]);
    assert_eq!(node.ok("eth_blockNumber", json!([])), head);
    node.stop();
}
