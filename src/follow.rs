//! `hearth drive`: feeds a leader's blocks to a node through its Engine API, as a consensus
//! client would: for each new block of the leader, its raw form (`debug_getRawBlock`), then
//! `engine_newPayload` (the version its fork fields call for) and `engine_forkchoiceUpdated`
//! to it. Any node speaking the Engine API can be driven so, Hearth in engine mode first.
//!
//! The rounds are a read replica's (`hearth_actors::follow::chase`), with another node's Engine
//! API as the target: at most `chase::MAX_BATCH` blocks at a time, so memory does not grow with
//! how far behind the follower is; when the leader's chain no longer holds the follower's head
//! (the leader rewound: `evm_revert`, `anvil_rollback`, `anvil_reorg`), the follower goes back
//! to the newest block both have (a durable rewind), then on from there.

use std::time::{Duration, Instant};

use alloy_consensus::Header;
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_primitives::B256;
use hearth_actors::follow::chase::{self, Diverged, FollowTarget, Reach};
use hearth_actors::follow::leader::{Leader, LeaderBlock, LeaderError};
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
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The driven node refused a call.
    #[error("the driven node: {0}")]
    Engine(#[from] EngineCallError),
    /// The driven node's chain shares no block with the leader's.
    #[error(transparent)]
    Diverged(#[from] Diverged),
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

fn quantity(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.trim_start_matches("0x"), 16).ok()
}

/// Another node, reached through its Engine API.
struct EngineApiTarget<'a>(&'a EngineApi);

impl FollowTarget for EngineApiTarget<'_> {
    type Error = DriveError;

    async fn head(&self) -> Result<(u64, B256), DriveError> {
        let head = quantity(&self.0.call("eth_blockNumber", json!([])).await?).unwrap_or_default();
        Ok((head, self.hash_at(head).await?.unwrap_or_default()))
    }

    async fn hash_at(&self, number: u64) -> Result<Option<B256>, DriveError> {
        let block =
            self.0.call("eth_getBlockByNumber", json!([format!("{number:#x}"), false])).await?;
        Ok(block["hash"].as_str().and_then(|h| h.parse().ok()))
    }

    /// Sends one block as a payload and chooses it.
    async fn import(&self, block: LeaderBlock) -> Result<(), DriveError> {
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
        let status = self.0.new_payload(&block, &[]).await?;
        if status["status"] != "VALID" {
            return Err(refused(&status));
        }
        let chosen = self.0.forkchoice(forkchoice_version(header), hash, hash, B256::ZERO).await?;
        if chosen["status"] != "VALID" {
            return Err(refused(&chosen));
        }
        Ok(())
    }

    async fn rewind_to(&self, header: &Header, hash: B256) -> Result<(), DriveError> {
        // The shared block's fork fields choose the version, as for every block sent.
        let chosen = self.0.forkchoice(forkchoice_version(header), hash, hash, B256::ZERO).await?;
        if chosen["status"] != "VALID" {
            return Err(DriveError::Refused {
                number: header.number,
                hash,
                status: chosen["status"].as_str().unwrap_or_default().to_owned(),
                why: "the common block could not be made the head".into(),
            });
        }
        eprintln!("the leader rewound: the follower went back to block {}", header.number);
        Ok(())
    }
}

/// Follows the leader until `settings.until` (or forever); answers the follower's head.
pub async fn drive(settings: DriveSettings) -> Result<u64, DriveError> {
    let leader = Leader::new(&settings.leader, Duration::from_secs(60), 0);
    let target = EngineApiTarget(&settings.engine);
    let mut head = target.head().await?.0;
    let mut last_report = Instant::now();
    loop {
        if settings.until.is_some_and(|until| head >= until) {
            return Ok(head);
        }
        let until = settings.until.unwrap_or(u64::MAX);
        let round = chase::round(&leader, &target, Reach { until, ..Reach::default() }).await?;
        head = round.head;
        if let Some(error) = round.stopped {
            return Err(error);
        }
        if round.caught_up() {
            actix_rt::time::sleep(settings.poll).await;
        } else if last_report.elapsed() >= Duration::from_secs(5) {
            eprintln!("followed to block {head} (the leader is at {})", round.leader_head);
            last_report = Instant::now();
        }
    }
}
