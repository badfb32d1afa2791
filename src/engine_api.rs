//! A client of a node's Engine API: JSON-RPC over HTTP with a fresh JWT per request, and the
//! payload calls made from whole blocks (the method version chosen by the block's fork).
//! `hearth enginetest` drives a node with it, and so does anything that feeds a node blocks
//! made elsewhere.

use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{B256, Bytes};
use alloy_rpc_types_engine::{Claims, ExecutionPayload, JwtSecret};
use serde_json::{Value, json};

/// Largest answer read (a payload body list can be large).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// Why an Engine API call got no result.
#[derive(Debug, thiserror::Error)]
pub enum EngineCallError {
    /// The request did not get an HTTP answer.
    #[error("no answer from {url}: {why}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What failed.
        why: String,
    },
    /// The node answered a JSON-RPC error.
    #[error("{method}: error {code}: {message}")]
    Rpc {
        /// The method.
        method: String,
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
}

/// A node's Engine API endpoint and the secret its tokens are made with.
#[derive(Clone)]
pub struct EngineApi {
    url: String,
    secret: JwtSecret,
    client: awc::Client,
}

impl std::fmt::Debug for EngineApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineApi").field("url", &self.url).finish_non_exhaustive()
    }
}

impl EngineApi {
    /// A client of `url` (`http://127.0.0.1:8551`) with `secret`.
    pub fn new(url: impl Into<String>, secret: JwtSecret) -> Self {
        let client = awc::Client::builder().timeout(std::time::Duration::from_secs(120)).finish();
        Self { url: url.into(), secret, client }
    }

    /// Calls `method` with `params`; its `result`.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, EngineCallError> {
        let transport = |why: String| EngineCallError::Transport { url: self.url.clone(), why };
        let iat = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| transport(e.to_string()))?
            .as_secs();
        let token =
            self.secret.encode(&Claims { iat, exp: None }).map_err(|e| transport(e.to_string()))?;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut response = self
            .client
            .post(&self.url)
            .insert_header(("Authorization", format!("Bearer {token}")))
            .send_json(&body)
            .await
            .map_err(|e| transport(e.to_string()))?;
        let answer: Value = response
            .json()
            .limit(MAX_ANSWER_BYTES)
            .await
            .map_err(|e| transport(format!("HTTP {}: {e}", response.status())))?;
        match answer.get("error") {
            Some(error) => Err(EngineCallError::Rpc {
                method: method.to_owned(),
                code: error["code"].as_i64().unwrap_or_default(),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            }),
            None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// engine_newPayload for `block`, in the version its header's fork fields call for (V4
    /// with a requests hash, V3 with a beacon root, V2 with withdrawals, else V1), with its
    /// EIP-7685 `requests` from Prague on. Answers the payload status object.
    pub async fn new_payload(
        &self,
        block: &Block<TxEnvelope>,
        requests: &[Bytes],
    ) -> Result<Value, EngineCallError> {
        let (payload, sidecar) = ExecutionPayload::from_block_slow(block);
        let hashes: Vec<B256> = sidecar.versioned_hashes().cloned().unwrap_or_default();
        let header = &block.header;
        let root = header.parent_beacon_block_root.unwrap_or_default();
        let payload = payload_json(&payload);
        let (method, params) = if header.requests_hash.is_some() {
            ("engine_newPayloadV4", json!([payload, hashes, root, requests]))
        } else if header.parent_beacon_block_root.is_some() {
            ("engine_newPayloadV3", json!([payload, hashes, root]))
        } else if header.withdrawals_root.is_some() {
            ("engine_newPayloadV2", json!([payload]))
        } else {
            ("engine_newPayloadV1", json!([payload]))
        };
        self.call(method, params).await
    }

    /// engine_forkchoiceUpdatedV`version` to `head` (safe and finalized as given), without
    /// payload attributes. Answers the payload status object.
    pub async fn forkchoice(
        &self,
        version: u8,
        head: B256,
        safe: B256,
        finalized: B256,
    ) -> Result<Value, EngineCallError> {
        let state =
            json!({"headBlockHash": head, "safeBlockHash": safe, "finalizedBlockHash": finalized});
        let method = format!("engine_forkchoiceUpdatedV{version}");
        let answer = self.call(&method, json!([state, null])).await?;
        Ok(answer["payloadStatus"].clone())
    }
}

/// The engine_forkchoiceUpdated version for a head with `header`'s fork fields (V3 from
/// Cancun, V2 from Shanghai, else V1).
pub const fn forkchoice_version(header: &alloy_consensus::Header) -> u8 {
    if header.parent_beacon_block_root.is_some() {
        3
    } else if header.withdrawals_root.is_some() {
        2
    } else {
        1
    }
}

/// A payload as JSON, in its own version's shape.
fn payload_json(payload: &ExecutionPayload) -> Value {
    match payload {
        ExecutionPayload::V1(v1) => json!(v1),
        ExecutionPayload::V2(v2) => json!(v2),
        ExecutionPayload::V3(v3) => json!(v3),
        ExecutionPayload::V4(v4) => json!(v4.payload_inner),
    }
}
