//! The leader's side of following: plain JSON-RPC over HTTP to the node whose chain is
//! followed (any node that serves `debug_getRawBlock`: Hearth, anvil, geth, reth). Reads are
//! batched (one HTTP request per round, one per run of missing blocks); a forwarded write is
//! sent once, never retried.

use std::rc::Rc;
use std::time::Duration;

use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{B256, Bytes, U256};
use alloy_rlp::Decodable;
use hearth_messages::fork::ForkCounters;
use hearth_storage::WholeAccount;
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
        let why = why.into();
        // The HTTP client's reasons name the URL already.
        let why = why.strip_prefix(&format!("{}: ", self.url)).map_or(why.clone(), str::to_owned);
        LeaderError { url: self.url.clone(), why }
    }

    /// Sends `calls` as one batch; each call's result, or the first error.
    async fn batch(&self, calls: Vec<(&'static str, Value)>) -> Result<Vec<Value>, LeaderError> {
        let answers =
            Rc::clone(&self.upstream).batch(calls).await.map_err(|why| self.error(why))?;
        answers.into_iter().map(|answer| answer.map_err(|why| self.error(why))).collect()
    }

    /// The leader's head; its block `number` (hash, header state root) and the roots of the
    /// dev patches made while that block was its head (`None`: the leader does not log them,
    /// it is not Hearth).
    pub async fn view(&self, number: u64) -> Result<LeaderView, LeaderError> {
        let calls = vec![
            ("eth_blockNumber", json!([])),
            ("eth_getBlockByNumber", by_number(number)),
            ("hearth_getPatches", json!([format!("{number:#x}"), false])),
        ];
        let answers =
            Rc::clone(&self.upstream).batch(calls).await.map_err(|why| self.error(why))?;
        let mut answers = answers.into_iter();
        let mut next = || answers.next().unwrap_or_else(|| Err("missing".into()));
        let head = next().map_err(|why| self.error(why))?;
        let head = quantity(&head).ok_or_else(|| self.error("eth_blockNumber"))?;
        let block = next().map_err(|why| self.error(why))?;
        let patch_roots = next().ok().and_then(|answer| patch_roots(&answer));
        Ok(LeaderView {
            head,
            hash: block_hash(&block),
            state_root: block["stateRoot"].as_str().and_then(|r| r.parse().ok()),
            patch_roots,
        })
    }

    /// The `index`-th dev patch made while the leader's block `number` was its head: its
    /// accounts and the root it left (`None`: it has no such patch now). One per request, so
    /// that an answer holds one patch.
    pub async fn patch(
        &self,
        number: u64,
        index: usize,
    ) -> Result<Option<LeaderPatch>, LeaderError> {
        let call = ("hearth_getPatches", json!([format!("{number:#x}"), true, index]));
        let answer = self.batch(vec![call]).await?.pop().unwrap_or_default();
        let Some(patch) = answer["patches"].as_array().and_then(|p| p.first()) else {
            return Ok(None);
        };
        let root = patch["stateRoot"].as_str().and_then(|r| r.parse().ok());
        let accounts = patch["accounts"]
            .as_array()
            .and_then(|list| list.iter().map(whole_account).collect::<Option<Vec<_>>>());
        match (root, accounts) {
            (Some(root), Some(accounts)) => Ok(Some(LeaderPatch { root, accounts })),
            _ => Err(self.error(format!("hearth_getPatches {number}: a malformed patch"))),
        }
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
        (from..).zip(answers).map(|(number, raw)| self.decode_block(number, raw)).collect()
    }

    /// [`Self::blocks`], each with the roots of the dev patches made while it was the head
    /// (`None`: the leader does not log them).
    pub async fn blocks_and_patches(
        &self,
        from: u64,
        count: u64,
    ) -> Result<Vec<(LeaderBlock, Option<Vec<B256>>)>, LeaderError> {
        let mut calls = Vec::new();
        for n in from..from.saturating_add(count) {
            calls.push(("debug_getRawBlock", json!([format!("{n:#x}")])));
            calls.push(("hearth_getPatches", json!([format!("{n:#x}"), false])));
        }
        let answers =
            Rc::clone(&self.upstream).batch(calls).await.map_err(|why| self.error(why))?;
        let mut blocks = Vec::with_capacity(answers.len() / 2);
        let mut answers = answers.into_iter();
        for number in from..from.saturating_add(count) {
            let raw = answers.next().unwrap_or_else(|| Err("missing".into()));
            let block = self.decode_block(number, raw.map_err(|why| self.error(why))?)?;
            let roots = answers.next().and_then(Result::ok).and_then(|answer| patch_roots(&answer));
            blocks.push((block, roots));
        }
        Ok(blocks)
    }

    fn decode_block(&self, number: u64, raw: Value) -> Result<LeaderBlock, LeaderError> {
        let bytes: Bytes = serde_json::from_value(raw)
            .map_err(|e| self.error(format!("debug_getRawBlock {number}: {e}")))?;
        let block = LeaderBlock::decode(&mut bytes.as_ref())
            .map_err(|e| self.error(format!("block {number} does not decode: {e}")))?;
        if block.header.number != number {
            return Err(
                self.error(format!("asked for block {number}, got block {}", block.header.number))
            );
        }
        Ok(block)
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
            single if single.get("error").is_some_and(|e| !e.is_null()) => {
                return Ok((single, false));
            }
            _ => return Err(self.error("the answer to a batch is neither a batch nor an error")),
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
        let response = response
            .filter(|r| r.get("result").is_some() || r.get("error").is_some_and(|e| !e.is_null()))
            .ok_or_else(|| self.error("no result or error for the write in the batch"))?;
        Ok((response, automine))
    }
}

/// What the leader says of its head and of one of its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderView {
    /// Its head block's number.
    pub head: u64,
    /// The hash of the block asked about (`None`: it has no such block).
    pub hash: Option<B256>,
    /// That block's header state root.
    pub state_root: Option<B256>,
    /// The roots its dev patches left while that block was the head, in order (`None`: the
    /// leader does not serve `hearth_getPatches`).
    pub patch_roots: Option<Vec<B256>>,
}

/// A dev patch of the leader's head state: the accounts it set and the root it left.
#[derive(Debug, Clone)]
pub struct LeaderPatch {
    /// The root the patch left.
    pub root: B256,
    /// The accounts it set.
    pub accounts: Vec<WholeAccount>,
}

/// The patch roots of a `hearth_getPatches` answer.
fn patch_roots(answer: &Value) -> Option<Vec<B256>> {
    let patches = answer["patches"].as_array()?;
    patches.iter().map(|p| p["stateRoot"].as_str()?.parse().ok()).collect()
}

/// An account of a `hearth_getPatches` answer.
fn whole_account(account: &Value) -> Option<WholeAccount> {
    let storage = account["storage"]
        .as_object()?
        .iter()
        .map(|(slot, value)| Some((slot.parse().ok()?, value.as_str()?.parse().ok()?)))
        .collect::<Option<Vec<(U256, U256)>>>()?;
    Some(WholeAccount {
        address: account["address"].as_str()?.parse().ok()?,
        nonce: quantity(&account["nonce"])?,
        balance: account["balance"].as_str()?.parse().ok()?,
        code: account["code"].as_str()?.parse().ok()?,
        storage,
    })
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
