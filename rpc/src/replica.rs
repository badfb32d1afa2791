//! A read replica's front (`--follow URL`): which methods the replica serves itself, which it
//! forwards to its leader and which it refuses, and what `/health` and `/metrics` say of it.
//!
//! - **Served here:** every read (at the replica's own head, which the follower keeps equal
//!   to the leader's up to its lag), filters and subscriptions (on the replica's blocks).
//! - **Forwarded:** `eth_sendRawTransaction`, `eth_sendRawTransactionSync` and
//!   `eth_sendTransaction` (the leader signs with the same dev accounts), answered with the
//!   leader's answer; when the leader automines, only once this replica has imported the block
//!   holding the transaction, so a client that stays on one replica reads its own writes.
//!   `txpool_*` too: the pool is the leader's (read-only, so forwarding is safe); so is
//!   `eth_getTransactionCount` at `pending`, which counts the leader's pool; and the getters of
//!   the mining mode, which is the leader's.
//! - **Refused:** every other method that changes the chain or the node (`anvil_*`, `evm_*`,
//!   `hardhat_*`, `debug_setHead`, ...), with an error naming the leader: a dev change made
//!   on one replica would make its chain differ from the leader's.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use alloy_primitives::B256;
use hearth_messages::follow::{
    AwaitImport, FollowGauges, FollowStats, FollowerClient, ForwardWrite,
};
use serde_json::{Value, json};

use crate::core::{Reply, RpcError, counter, gauge};

/// A read replica's link to its leader, as the front sees it.
#[derive(Clone, Debug)]
pub struct Replica {
    /// The leader's URL.
    pub leader: String,
    /// The follower actor: forwards writes, tells when their blocks are imported.
    pub follower: FollowerClient,
    /// What the follower last learned of the leader.
    pub gauges: Arc<FollowGauges>,
    /// `--follow.max-lag`.
    pub max_lag: u64,
    /// `--follow.max-lag-time`.
    pub max_lag_time: Duration,
}

/// What a replica does with a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Served by this node.
    Local,
    /// Sent to the leader, its answer passed on.
    Forward,
    /// Refused: it would change this replica's chain or node.
    Refuse,
}

/// The writes a replica forwards, and the reads of the leader's mining mode (a replica mines
/// nothing; a replica following a replica reads the leader's automine through it).
const FORWARDED: [&str; 6] = [
    "eth_sendRawTransaction",
    "eth_sendRawTransactionSync",
    "eth_sendTransaction",
    "anvil_getAutomine",
    "hardhat_getAutomine",
    "anvil_getIntervalMining",
];

/// How a replica handles the method `name`, gated under `namespace`, which changes something
/// when `writes` (the method table's `Kind::Write`).
fn route(name: &str, namespace: &str, writes: bool) -> Route {
    if FORWARDED.contains(&name) || namespace == "txpool" {
        Route::Forward
    } else if writes && namespace != "eth" {
        // eth's other writes are filters and subscriptions, which live on this node.
        Route::Refuse
    } else {
        Route::Local
    }
}

/// What a replica does with the method `name` (see [`route`]) instead of serving it: `None`
/// to serve it here, else its answer (forwarded, taking `params`, or refused).
pub(crate) async fn divert(
    replica: &Replica,
    name: &'static str,
    namespace: &str,
    writes: bool,
    params: &mut Option<Value>,
) -> Option<Result<Reply, RpcError>> {
    // The pending nonce counts the leader's pool: a client that numbers its own transactions
    // asks it before each send.
    let pending = name == "eth_getTransactionCount"
        && params.as_ref().and_then(|p| p.get(1)).and_then(Value::as_str) == Some("pending");
    match if pending { Route::Forward } else { route(name, namespace, writes) } {
        Route::Local => None,
        Route::Forward => Some(forward(replica, name, params.take()).await),
        Route::Refuse => Some(Err(RpcError::ReplicaRefused {
            method: name.to_owned(),
            leader: replica.leader.clone(),
        })),
    }
}

/// Sends `method(params)` to the leader and passes its answer on; for a transaction the
/// leader mines at once, answers once this replica has imported its block.
async fn forward(
    replica: &Replica,
    method: &str,
    params: Option<Value>,
) -> Result<Reply, RpcError> {
    let params = params.unwrap_or_else(|| json!([]));
    let message = ForwardWrite { method: method.to_owned(), params };
    let answer = replica.follower.forward(message).await?.map_err(RpcError::Follow)?;
    let mut response = answer.response;
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        return Err(leader_error(error));
    }
    let result = response["result"].take();
    if answer.automine
        && let Some(tx) = written_tx(method, &result)
    {
        replica.follower.await_import(AwaitImport(tx)).await?.map_err(RpcError::Follow)?;
    }
    Ok(Reply::Value(result))
}

/// The leader's error object as this node's error, code, message and data kept.
fn leader_error(error: &Value) -> RpcError {
    RpcError::Leader {
        code: error["code"].as_i64().and_then(|c| i32::try_from(c).ok()).unwrap_or(-32603),
        message: error["message"].as_str().unwrap_or("the leader answered an error").to_owned(),
        data: error.get("data").cloned(),
    }
}

/// The transaction a forwarded write's result names: a hash, or a receipt's.
fn written_tx(method: &str, result: &Value) -> Option<B256> {
    let hash = match method {
        "eth_sendRawTransactionSync" => &result["transactionHash"],
        "eth_sendRawTransaction" | "eth_sendTransaction" => result,
        _ => return None,
    };
    hash.as_str()?.parse().ok()
}

/// Whether a replica at block `head` is fit to serve, and the body `/health` answers (see
/// [`judge`]).
pub(crate) fn health(replica: &Replica, head: u64, now: SystemTime) -> (bool, Value) {
    let stats = replica.gauges.stats();
    let status = judge(&stats, head, replica.max_lag, replica.max_lag_time, now);
    let silent = silence(&stats, now);
    let body = json!({
        "status": status,
        "head": head,
        "leader": replica.leader,
        "leaderHead": stats.leader_head,
        "lag": stats.leader_head.saturating_sub(head),
        "maxLag": replica.max_lag,
        "sinceLeaderMs": silent.map(|s| u64::try_from(s.as_millis()).unwrap_or(u64::MAX)),
        "maxLagTimeMs": u64::try_from(replica.max_lag_time.as_millis()).unwrap_or(u64::MAX),
        "refusedBlock": stats.diverged_at,
    });
    (status == "ok", body)
}

/// `ok` while the replica at `head` is at most `max_lag` blocks behind the leader and heard
/// from it within `max_lag_time` at `now`; else `diverged` (it refused a leader block and
/// cannot go past it), `leader-silent` or `behind`.
fn judge(
    stats: &FollowStats,
    head: u64,
    max_lag: u64,
    max_lag_time: Duration,
    now: SystemTime,
) -> &'static str {
    let heard = silence(stats, now).is_some_and(|silent| silent <= max_lag_time);
    if stats.diverged_at.is_some() {
        "diverged"
    } else if !heard {
        "leader-silent"
    } else if stats.leader_head.saturating_sub(head) > max_lag {
        "behind"
    } else {
        "ok"
    }
}

/// How long the leader has been silent at `now` (`None`: never heard).
fn silence(stats: &FollowStats, now: SystemTime) -> Option<Duration> {
    stats.heard_at.map(|at| now.duration_since(at).unwrap_or_default())
}

/// A replica's gauges and counters on `/metrics`, at block `head`.
pub(crate) fn metrics(out: &mut String, replica: &Replica, head: u64) {
    let stats = replica.gauges.stats();
    gauge(
        out,
        "hearth_follow_lag_blocks",
        "Blocks the replica is behind its leader's head as last heard.",
        stats.leader_head.saturating_sub(head),
    );
    gauge(
        out,
        "hearth_follow_leader_head",
        "The leader's head block as last heard.",
        stats.leader_head,
    );
    let silent = silence(&stats, SystemTime::now()).map_or(-1.0, |s| s.as_secs_f64());
    gauge(
        out,
        "hearth_follow_leader_silence_seconds",
        "Seconds since the leader last answered (-1: never).",
        silent,
    );
    counter(
        out,
        "hearth_follow_imported_blocks_total",
        "Leader blocks imported (executed and checked) by this replica.",
        stats.imported_blocks,
    );
    counter(
        out,
        "hearth_follow_imported_transactions_total",
        "Transactions in the leader blocks imported.",
        stats.imported_txs,
    );
    counter(
        out,
        "hearth_follow_rewinds_total",
        "Times the replica rewound with its leader.",
        stats.rewinds,
    );
    gauge(
        out,
        "hearth_follow_refused_block",
        "One more than the leader block this replica refused and cannot follow past (0: none).",
        stats.diverged_at.map_or(0, |n| n + 1),
    );
    counter(
        out,
        "hearth_follow_errors_total",
        "Rounds of following that failed (leader unreachable, a block that did not check).",
        stats.errors,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_forwarded_dev_methods_refused_reads_served() {
        // As the method table names and gates them.
        let route_of = |name: &str| {
            let (namespace, writes) = match name {
                "eth_sendUnsignedTransaction" | "debug_setHead" => ("anvil", true),
                "txpool_content" => ("txpool", false),
                "eth_call" | "eth_getBalance" | "eth_getLogs" | "eth_sign" => ("eth", false),
                _ => (name.split('_').next().unwrap_or_default(), true),
            };
            route(name, namespace, writes)
        };
        assert_eq!(route_of("eth_sendRawTransaction"), Route::Forward);
        assert_eq!(route_of("eth_sendTransaction"), Route::Forward);
        assert_eq!(route_of("eth_sendRawTransactionSync"), Route::Forward);
        assert_eq!(route_of("txpool_content"), Route::Forward);
        assert_eq!(route("anvil_getAutomine", "anvil", false), Route::Forward);
        for refused in [
            "anvil_setBalance",
            "evm_mine",
            "evm_revert",
            "hardhat_reset",
            "anvil_rollback",
            "debug_setHead",
            "eth_sendUnsignedTransaction",
            "anvil_setChainId",
        ] {
            assert_eq!(route_of(refused), Route::Refuse, "{refused}");
        }
        for local in [
            "eth_call",
            "eth_getBalance",
            "eth_getLogs",
            "eth_newFilter",
            "eth_subscribe",
            "eth_sign",
        ] {
            assert_eq!(route_of(local), Route::Local, "{local}");
        }
    }

    #[test]
    fn health_needs_a_recent_answer_and_a_lag_within_the_limit() {
        let gauges = FollowGauges::default();
        let limit = Duration::from_secs(10);
        let now = SystemTime::now();
        // Never heard from the leader: not fit, whatever the head.
        assert_eq!(judge(&gauges.stats(), 0, 8, limit, now), "leader-silent");
        gauges.heard(20);
        let later = now + Duration::from_secs(1);
        let stats = gauges.stats();
        assert_eq!(judge(&stats, 12, 8, limit, later), "ok");
        assert_eq!(judge(&stats, 11, 8, limit, later), "behind");
        assert_eq!(judge(&stats, 20, 0, limit, later), "ok");
        // Caught up but silent for longer than --follow.max-lag-time.
        assert_eq!(judge(&stats, 20, 8, limit, now + Duration::from_secs(12)), "leader-silent");
        // A leader block that does not check here: not fit however small the lag, until
        // blocks import again.
        gauges.diverged(21);
        assert_eq!(judge(&gauges.stats(), 20, 8, limit, later), "diverged");
        gauges.converged();
        assert_eq!(judge(&gauges.stats(), 20, 8, limit, later), "ok");
    }

    #[test]
    fn the_written_transaction_is_read_from_a_hash_or_a_receipt() {
        let hash = B256::repeat_byte(7);
        let text = json!(hash.to_string());
        assert_eq!(written_tx("eth_sendRawTransaction", &text), Some(hash));
        assert_eq!(written_tx("eth_sendTransaction", &text), Some(hash));
        let receipt = json!({"transactionHash": hash.to_string(), "status": "0x1"});
        assert_eq!(written_tx("eth_sendRawTransactionSync", &receipt), Some(hash));
        assert_eq!(written_tx("txpool_content", &text), None);
        assert_eq!(written_tx("eth_sendTransaction", &json!(null)), None);
    }

    #[test]
    fn a_leader_error_keeps_its_code_message_and_data() {
        let error =
            leader_error(&json!({"code": -32003, "message": "nonce too low", "data": "0x01"}));
        assert_eq!(error.code(), -32003);
        assert_eq!(error.to_string(), "nonce too low");
        assert_eq!(error.data(), Some(json!("0x01")));
    }
}
