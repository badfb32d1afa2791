//! `hearth drive`: feeds a leader's blocks to a node through its Engine API, as a consensus
//! client would: for each new block of the leader, its raw form (`debug_getRawBlock`), then
//! `engine_newPayload` (the version its fork fields call for) and `engine_forkchoiceUpdated`
//! to it. Any node speaking the Engine API can be driven so, Hearth in engine mode first.
//!
//! One block at a time, so memory does not grow with how far behind the follower is. When the
//! leader's block does not extend what the follower has (the leader rewound: `evm_revert`,
//! `anvil_rollback`, `anvil_reorg`), it walks back to the newest block both have and chooses it
//! as the follower's head (a durable rewind), then goes on from there.

use std::time::{Duration, Instant};

use alloy_consensus::{Block, TxEnvelope};
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_primitives::{B256, Bytes};
use alloy_rlp::Decodable;
use serde_json::{Value, json};

use crate::engine_api::{EngineApi, EngineCallError, forkchoice_version};

/// What to follow, and how.
#[derive(Debug, Clone)]
pub struct DriveSettings {
    /// The leader's public JSON-RPC URL.
    pub leader: String,
    /// The driven node's Engine API.
    pub engine: EngineApi,
    /// How long to wait before asking the leader again once caught up.
    pub poll: Duration,
    /// Stop once the follower's head reaches this block (`None`: run until stopped).
    pub until: Option<u64>,
}

/// Why driving stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The leader did not answer, or answered an error.
    #[error("the leader at {url}: {why}")]
    Leader {
        /// Its URL.
        url: String,
        /// What failed.
        why: String,
    },
    /// The driven node refused a call.
    #[error("the driven node: {0}")]
    Engine(#[from] EngineCallError),
    /// The driven node did not take a block the leader has.
    #[error("block {number} ({hash}) was {status} on the driven node: {why}")]
    Refused {
        /// The block's number.
        number: u64,
        /// Its hash.
        hash: B256,
        /// The status answered.
        status: String,
        /// The node's reason, if it gave one.
        why: String,
    },
    /// A block carries EIP-7685 requests, which no leader method serves.
    #[error(
        "block {0} carries EIP-7685 requests (deposits or system-contract requests), which the leader does not serve with the block; it cannot be sent as a payload"
    )]
    Requests(u64),
}

/// The leader's side: plain JSON-RPC over HTTP.
struct Leader {
    url: String,
    client: awc::Client,
}

impl Leader {
    async fn call(&self, method: &str, params: Value) -> Result<Value, DriveError> {
        let failed = |why: String| DriveError::Leader { url: self.url.clone(), why };
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut response = self
            .client
            .post(&self.url)
            .send_json(&body)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let answer: Value =
            response.json().limit(64 * 1024 * 1024).await.map_err(|e| failed(e.to_string()))?;
        match answer.get("error") {
            Some(error) => Err(failed(format!("{method}: {error}"))),
            None => Ok(answer["result"].clone()),
        }
    }

    async fn head(&self) -> Result<u64, DriveError> {
        quantity(&self.call("eth_blockNumber", json!([])).await?).ok_or_else(|| {
            DriveError::Leader { url: self.url.clone(), why: "eth_blockNumber".into() }
        })
    }

    async fn block(&self, number: u64) -> Result<Block<TxEnvelope>, DriveError> {
        let raw = self.call("debug_getRawBlock", json!([format!("{number:#x}")])).await?;
        let bytes: Bytes = serde_json::from_value(raw)
            .map_err(|e| DriveError::Leader { url: self.url.clone(), why: e.to_string() })?;
        Block::decode(&mut bytes.as_ref()).map_err(|e| DriveError::Leader {
            url: self.url.clone(),
            why: format!("block {number} does not decode: {e}"),
        })
    }

    async fn hash(&self, number: u64) -> Result<Option<B256>, DriveError> {
        let block =
            self.call("eth_getBlockByNumber", json!([format!("{number:#x}"), false])).await?;
        Ok(block["hash"].as_str().and_then(|h| h.parse().ok()))
    }
}

fn quantity(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.trim_start_matches("0x"), 16).ok()
}

/// The driven node's block `number`'s hash, read on its Engine API port.
async fn local_hash(engine: &EngineApi, number: u64) -> Result<Option<B256>, DriveError> {
    let block = engine.call("eth_getBlockByNumber", json!([format!("{number:#x}"), false])).await?;
    Ok(block["hash"].as_str().and_then(|h| h.parse().ok()))
}

/// Follows the leader until `settings.until` (or forever); answers the follower's head.
pub async fn drive(settings: DriveSettings) -> Result<u64, DriveError> {
    let leader = Leader {
        url: settings.leader.clone(),
        client: awc::Client::builder().timeout(Duration::from_secs(60)).finish(),
    };
    let engine = &settings.engine;
    let mut head = quantity(&engine.call("eth_blockNumber", json!([])).await?).unwrap_or_default();
    let mut head_hash = local_hash(engine, head).await?.unwrap_or_default();
    let mut last_report = Instant::now();
    loop {
        if settings.until.is_some_and(|until| head >= until) {
            return Ok(head);
        }
        let leader_head = leader.head().await?;
        if leader_head <= head {
            // Caught up, or the leader went back: a shorter leader is a rewind too.
            if leader_head < head || leader.hash(head).await? != Some(head_hash) {
                (head, head_hash) = rewind(&leader, engine, head).await?;
                continue;
            }
            actix_rt::time::sleep(settings.poll).await;
            continue;
        }
        let block = leader.block(head + 1).await?;
        if block.header.parent_hash != head_hash {
            (head, head_hash) = rewind(&leader, engine, head).await?;
            continue;
        }
        head_hash = send(engine, &block).await?;
        head += 1;
        if last_report.elapsed() >= Duration::from_secs(5) {
            eprintln!("followed to block {head} (the leader is at {leader_head})");
            last_report = Instant::now();
        }
    }
}

/// Sends one block as a payload and chooses it; answers its hash.
async fn send(engine: &EngineApi, block: &Block<TxEnvelope>) -> Result<B256, DriveError> {
    let header = &block.header;
    let number = header.number;
    if header.requests_hash.is_some_and(|hash| hash != EMPTY_REQUESTS_HASH) {
        return Err(DriveError::Requests(number));
    }
    let hash = header.hash_slow();
    let refused = |status: &Value| DriveError::Refused {
        number,
        hash,
        status: status["status"].as_str().unwrap_or("no status").to_owned(),
        why: status["validationError"].as_str().unwrap_or_default().to_owned(),
    };
    let status = engine.new_payload(block, &[]).await?;
    if status["status"] != "VALID" {
        return Err(refused(&status));
    }
    let chosen = engine.forkchoice(forkchoice_version(header), hash, hash, B256::ZERO).await?;
    if chosen["status"] != "VALID" {
        return Err(refused(&chosen));
    }
    Ok(hash)
}

/// Walks back from `from` to the newest block the leader and the follower share and makes it
/// the follower's head; answers it.
async fn rewind(leader: &Leader, engine: &EngineApi, from: u64) -> Result<(u64, B256), DriveError> {
    let mut number = from;
    loop {
        let ours = local_hash(engine, number).await?;
        if ours.is_some() && leader.hash(number).await? == ours {
            let hash = ours.unwrap_or_default();
            // The shared block's fork fields choose the version, as for every block sent.
            let version = forkchoice_version(&leader.block(number).await?.header);
            let chosen = engine.forkchoice(version, hash, hash, B256::ZERO).await?;
            if chosen["status"] != "VALID" {
                return Err(DriveError::Refused {
                    number,
                    hash,
                    status: chosen["status"].as_str().unwrap_or_default().to_owned(),
                    why: "the common block could not be made the head".into(),
                });
            }
            eprintln!("the leader rewound: the follower went back to block {number}");
            return Ok((number, hash));
        }
        if number == 0 {
            return Err(DriveError::Leader {
                url: leader.url.clone(),
                why: "no block in common, not even the genesis: another chain".into(),
            });
        }
        number -= 1;
    }
}
