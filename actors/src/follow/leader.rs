//! The leader's side of following: plain JSON-RPC over HTTP to the node whose chain is
//! followed (any node that serves `debug_getRawBlock`: Hearth, anvil, geth, reth). Reads are
//! batched (one HTTP request per round, one per run of missing blocks); a forwarded write is
//! sent once, never retried.

use std::rc::Rc;
use std::time::Duration;

use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{B256, Bytes};
use alloy_rlp::Decodable;
use hearth_messages::fork::ForkCounters;
use serde_json::{Value, json};

use crate::fork::upstream::{Upstream, UpstreamConfig};

/// The leader did not answer, or answered something that is not what was asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the leader at {url}: {why}")]
pub struct LeaderError {
    /// The leader's URL, without path or credentials.
    pub url: String,
    /// What failed.
    pub why: String,
}

/// A block of the leader's, as it sent it.
pub type LeaderBlock = Block<TxEnvelope>;

/// The leader's JSON-RPC endpoint. Lives on one arbiter (awc's client is not `Send`).
#[derive(Debug, Clone)]
pub struct Leader {
    upstream: Rc<Upstream>,
    url: String,
}

impl Leader {
    /// A client of the leader at `url`, giving each request `timeout` and retrying a read
    /// `retries` times (a write never).
    pub fn new(url: &str, timeout: Duration, retries: u32) -> Self {
        let config = UpstreamConfig {
            url: url.to_owned(),
            headers: Vec::new(),
            retries,
            timeout,
            rate_limit: None,
        };
        let url = config.display_url();
        Self { upstream: Upstream::new(config, ForkCounters::shared()), url }
    }

    /// The leader's URL without path or credentials, for errors and logs.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, why: impl Into<String>) -> LeaderError {
        LeaderError { url: self.url.clone(), why: why.into() }
    }

    /// Sends `calls` as one batch; each call's result, or the first error.
    async fn batch(&self, calls: Vec<(&'static str, Value)>) -> Result<Vec<Value>, LeaderError> {
        let answers =
            Rc::clone(&self.upstream).batch(calls).await.map_err(|why| self.error(why))?;
        answers.into_iter().map(|answer| answer.map_err(|why| self.error(why))).collect()
    }

    /// The leader's head, and the hash of its block `number` (`None`: it has no such block).
    pub async fn head_and_hash(&self, number: u64) -> Result<(u64, Option<B256>), LeaderError> {
        let answers = self
            .batch(vec![
                ("eth_blockNumber", json!([])),
                ("eth_getBlockByNumber", by_number(number)),
            ])
            .await?;
        let head = quantity(&answers[0]).ok_or_else(|| self.error("eth_blockNumber"))?;
        Ok((head, block_hash(&answers[1])))
    }

    /// The hashes of the leader's blocks `numbers` (`None` where it has none).
    pub async fn hashes(&self, numbers: &[u64]) -> Result<Vec<Option<B256>>, LeaderError> {
        let calls = numbers.iter().map(|&n| ("eth_getBlockByNumber", by_number(n))).collect();
        Ok(self.batch(calls).await?.iter().map(block_hash).collect())
    }

    /// The leader's blocks `from..from + count`, decoded from their raw form.
    pub async fn blocks(&self, from: u64, count: u64) -> Result<Vec<LeaderBlock>, LeaderError> {
        let calls = (from..from.saturating_add(count))
            .map(|n| ("debug_getRawBlock", json!([format!("{n:#x}")])))
            .collect();
        let answers = self.batch(calls).await?;
        let mut blocks = Vec::with_capacity(answers.len());
        for (number, raw) in (from..).zip(answers) {
            let bytes: Bytes = serde_json::from_value(raw)
                .map_err(|e| self.error(format!("debug_getRawBlock {number}: {e}")))?;
            let block = LeaderBlock::decode(&mut bytes.as_ref())
                .map_err(|e| self.error(format!("block {number} does not decode: {e}")))?;
            if block.header.number != number {
                return Err(self.error(format!(
                    "asked for block {number}, got block {}",
                    block.header.number
                )));
            }
            blocks.push(block);
        }
        Ok(blocks)
    }

    /// Sends the write `method(params)` once, with `anvil_getAutomine` in the same batch;
    /// the leader's response object for the write, and whether it automines (false when it
    /// does not know the method).
    pub async fn forward(&self, method: &str, params: Value) -> Result<(Value, bool), LeaderError> {
        let body = json!([
            {"jsonrpc": "2.0", "id": 0, "method": method, "params": params},
            {"jsonrpc": "2.0", "id": 1, "method": "anvil_getAutomine", "params": []},
        ]);
        let answer = self.upstream.once(body.to_string()).await.map_err(|why| self.error(why))?;
        let items = match answer {
            Value::Array(items) => items,
            // One error object: the leader refused the batch whole (its own reason).
            single => return Ok((single, false)),
        };
        let mut response = None;
        let mut automine = false;
        for item in items {
            match item["id"].as_u64() {
                Some(0) => response = Some(item),
                Some(1) => automine = item["result"].as_bool() == Some(true),
                _ => {}
            }
        }
        let response = response.ok_or_else(|| self.error("no answer to the write in the batch"))?;
        Ok((response, automine))
    }
}

fn by_number(number: u64) -> Value {
    json!([format!("{number:#x}"), false])
}

fn block_hash(block: &Value) -> Option<B256> {
    block["hash"].as_str().and_then(|h| h.parse().ok())
}

fn quantity(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.strip_prefix("0x")?, 16).ok()
}
