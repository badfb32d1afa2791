//! The upstream JSON-RPC endpoint of a fork: HTTP POSTs of JSON-RPC batches through awc, with
//! retries and backoff on 429, 5xx, connection errors and timeouts, a request-rate limit and
//! a deadline that nothing outlives.

use std::cell::Cell;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use hearth_messages::fork::ForkCounters;
use serde_json::{Value, json};
use tokio::time::Instant;

/// Largest upstream response body read (a batch of large contracts' code).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// First wait before a retry; doubled per retry up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How to reach the upstream.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// `http://` or `https://` JSON-RPC endpoint.
    pub url: String,
    /// Extra HTTP headers sent with every request (`--fork-header`).
    pub headers: Vec<(String, String)>,
    /// Retries after the first attempt (`--fork-retries`).
    pub retries: u32,
    /// How long a read may wait for the upstream in all, retries included (`--fork-timeout`).
    pub timeout: Duration,
    /// Most requests per second (`--fork-rate-limit`); `None`: no limit.
    pub rate_limit: Option<NonZeroU32>,
}

impl UpstreamConfig {
    /// The endpoint without its path, query or credentials: what errors and logs may show (a
    /// provider's API key often sits in the path).
    pub fn display_url(&self) -> String {
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("http", &self.url));
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = host.rsplit('@').next().unwrap_or(host);
        format!("{scheme}://{host}")
    }
}

/// One attempt's failure: worth retrying, or not.
enum Failure {
    Retry(String),
    Fatal(String),
}

/// The HTTP side of the backend. Lives on the backend's arbiter (awc's client is not `Send`).
pub(crate) struct Upstream {
    client: awc::Client,
    config: UpstreamConfig,
    counters: Arc<ForkCounters>,
    /// When the rate limit lets the next request go.
    next_slot: Cell<Instant>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("url", &self.config.display_url()).finish()
    }
}

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig, counters: Arc<ForkCounters>) -> Rc<Self> {
        // awc's connector picks rustls (ring) for https:// URLs.
        let client = awc::Client::builder().timeout(config.timeout).disable_redirects().finish();
        Rc::new(Self { client, config, counters, next_slot: Cell::new(Instant::now()) })
    }

    /// Waits until the rate limit lets one more request go.
    async fn rate_slot(&self) {
        let Some(rate) = self.config.rate_limit else { return };
        let now = Instant::now();
        let slot = self.next_slot.get().max(now);
        self.next_slot.set(slot + Duration::from_secs(1) / rate.get());
        if slot > now {
            tokio::time::sleep_until(slot).await;
        }
    }

    /// Sends `calls` (method, params) as one JSON-RPC batch and returns each call's result or
    /// error message, in order; gives up with the reason once `--fork-timeout` has passed or
    /// the retries are spent.
    pub(crate) async fn batch(
        self: Rc<Self>,
        calls: Vec<(&'static str, Value)>,
    ) -> Result<Vec<Result<Value, String>>, String> {
        let body = Value::Array(
            calls
                .iter()
                .enumerate()
                .map(|(id, (method, params))| {
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                })
                .collect(),
        );
        let body = body.to_string();
        let deadline = Instant::now() + self.config.timeout;
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0u32;
        let last = loop {
            self.rate_slot().await;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break format!("no answer within --fork-timeout {:?}", self.config.timeout);
            }
            self.counters.add_requests(1);
            let failure = match tokio::time::timeout(left, self.post(&body, left)).await {
                Ok(Ok(response)) => return Self::split(response, calls.len()),
                Ok(Err(Failure::Fatal(reason))) => return Err(self.reason(&reason)),
                Ok(Err(Failure::Retry(reason))) => reason,
                Err(_) => format!("no answer within --fork-timeout {:?}", self.config.timeout),
            };
            if attempt >= self.config.retries {
                break failure;
            }
            attempt += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break failure;
            }
            tokio::time::sleep(backoff.min(left)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        };
        Err(self.reason(&format!("{last} (after {} attempts)", attempt + 1)))
    }

    /// Sends the JSON-RPC `body` once, without retrying (a write sent twice could be taken
    /// twice); the response as it came: one object, or an array for a batch.
    pub(crate) async fn once(&self, body: String) -> Result<Value, String> {
        self.counters.add_requests(1);
        let timeout = self.config.timeout;
        match tokio::time::timeout(timeout, self.post(&body, timeout)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(Failure::Retry(reason) | Failure::Fatal(reason))) => Err(self.reason(&reason)),
            Err(_) => Err(self.reason(&format!("no answer within {timeout:?}"))),
        }
    }

    fn reason(&self, what: &str) -> String {
        format!("{}: {what}", self.config.display_url())
    }

    async fn post(&self, body: &str, timeout: Duration) -> Result<Value, Failure> {
        let mut request = self
            .client
            .post(&self.config.url)
            .timeout(timeout)
            .insert_header(("content-type", "application/json"));
        for (name, value) in &self.config.headers {
            request = request.insert_header((name.as_str(), value.as_str()));
        }
        let mut response = request
            .send_body(body.to_owned())
            .await
            .map_err(|e| Failure::Retry(format!("request failed: {e}")))?;
        let status = response.status();
        let bytes = response.body().limit(MAX_RESPONSE_BYTES).await;
        if status.as_u16() == 429 || status.is_server_error() {
            return Err(Failure::Retry(format!("HTTP {status}")));
        }
        if !status.is_success() {
            return Err(Failure::Fatal(format!("HTTP {status}")));
        }
        let bytes = bytes.map_err(|e| Failure::Retry(format!("reading the response: {e}")))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Failure::Fatal(format!("the response is not JSON: {e}")))
    }

    /// Each call's result by its id (the batch answer may come in any order).
    fn split(response: Value, calls: usize) -> Result<Vec<Result<Value, String>>, String> {
        let items = match response {
            Value::Array(items) => items,
            // A single error object: the upstream refused the batch as a whole.
            other => {
                let message = other["error"]["message"].as_str().unwrap_or("not a batch answer");
                return Err(format!("the upstream refused a JSON-RPC batch: {message}"));
            }
        };
        let mut by_id: HashMap<u64, Result<Value, String>> = HashMap::with_capacity(items.len());
        for mut item in items {
            let Some(id) = item["id"].as_u64() else { continue };
            let answer = match item.get_mut("error") {
                Some(error) if !error.is_null() => {
                    Err(error["message"].as_str().map_or_else(|| error.to_string(), str::to_owned))
                }
                _ => Ok(item["result"].take()),
            };
            by_id.insert(id, answer);
        }
        Ok((0..calls as u64)
            .map(|id| by_id.remove(&id).unwrap_or_else(|| Err("no answer in the batch".into())))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_url_hides_path_and_credentials() {
        let config = UpstreamConfig {
            url: "https://user:pw@eth.example:8443/v2/SECRETKEY?x=1".into(),
            headers: vec![],
            retries: 0,
            timeout: Duration::from_secs(1),
            rate_limit: None,
        };
        assert_eq!(config.display_url(), "https://eth.example:8443");
    }

    #[actix::test]
    async fn the_rate_limit_spaces_requests_evenly() {
        tokio::time::pause();
        let config = UpstreamConfig {
            url: "http://127.0.0.1:1".into(),
            headers: vec![],
            retries: 0,
            timeout: Duration::from_secs(1),
            rate_limit: NonZeroU32::new(10),
        };
        let upstream = Upstream::new(config, ForkCounters::shared());
        let start = Instant::now();
        for _ in 0..5 {
            upstream.rate_slot().await;
        }
        // The first goes at once, each next one 100 ms after the one before (the paused
        // clock's timer rounds a deadline up to its next millisecond).
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(400) && took < Duration::from_millis(405),
            "{took:?}"
        );
    }

    #[test]
    fn split_matches_answers_to_calls_by_id() {
        let answer = json!([
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "boom"}},
            {"jsonrpc": "2.0", "id": 0, "result": "0x1"}
        ]);
        let split = Upstream::split(answer, 3).unwrap();
        assert_eq!(split[0], Ok(json!("0x1")));
        assert_eq!(split[1], Err("boom".to_owned()));
        assert!(split[2].is_err());
        assert!(Upstream::split(json!({"error": {"message": "no batches"}}), 1).is_err());
    }
}
