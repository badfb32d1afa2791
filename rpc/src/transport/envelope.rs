//! The JSON-RPC 2.0 envelope: parsing a body into requests, running them (a batch
//! concurrently, answers kept in order), and encoding the answers with their HTTP status.
//!
//! This layer knows nothing about methods: [`handle_with`] takes the method runner as a
//! closure, so the envelope rules are tested here without actors. The rules follow the
//! JSON-RPC 2.0 spec and geth: malformed JSON is `-32700` with id `null`; a value that is not a
//! request, or an empty batch, is `-32600`; a batch over the limit is one `-32005` error; each
//! batch item is answered on its own; a notification (no `id` member) gets no answer, and a
//! body of notifications only gets HTTP 204.

use std::future::Future;

use futures_util::future::join_all;
use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;

use crate::core::{Reply, RpcError, RpcLimits, TypedResult};

/// What to send back for one HTTP request body: the HTTP status and the JSON body, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcReply {
    /// 200; 503 for a single request shed by the busy executor pool; 204 when the body held
    /// only notifications; 413 when it is larger than `RpcLimits::max_body_bytes`.
    pub status: u16,
    /// The JSON response; `None` with 204 and 413.
    pub body: Option<Vec<u8>>,
}

impl RpcReply {
    /// HTTP 200 with `body`.
    pub(crate) const fn ok(body: Vec<u8>) -> Self {
        Self { status: 200, body: Some(body) }
    }

    /// HTTP 503 with `body`: the single request was shed, retry later.
    pub(crate) const fn busy(body: Vec<u8>) -> Self {
        Self { status: 503, body: Some(body) }
    }

    /// HTTP 204: only notifications, nothing to answer.
    const fn no_content() -> Self {
        Self { status: 204, body: None }
    }

    /// HTTP 413: the body is over the limit.
    const fn payload_too_large() -> Self {
        Self { status: 413, body: None }
    }
}

/// A well-formed request object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    /// `None`: a notification, which gets no answer.
    pub(crate) id: Option<Value>,
    /// The method name.
    pub(crate) method: String,
    /// `params` as given: absent, `null`, an array or an object.
    pub(crate) params: Option<Value>,
}

/// One item of a body: a request to run, or an error to answer in its place.
#[derive(Debug)]
pub(crate) enum Item {
    /// Run it.
    Call(Request),
    /// Answer this error with this id (`null` when the id could not be read).
    Invalid {
        /// The id to answer with.
        id: Value,
        /// Why the item is not a request.
        error: RpcError,
    },
}

/// A body after parsing.
#[derive(Debug)]
pub(crate) enum Envelope {
    /// One request object (or one invalid value, answered as one error).
    Single(Item),
    /// A non-empty batch within the limit.
    Batch(Vec<Item>),
    /// The whole body is answered with this one error, id `null`.
    Reject(RpcError),
}

/// Parses a body: JSON, then the JSON-RPC envelope of each request.
///
/// The body is read straight into requests ([`Body`]): the members of a request object go to
/// their fields and only `id` and `params` become `Value`s, instead of a `Value` tree of the
/// whole body whose object is then taken apart (that tree cost about a tenth of a balanceOf
/// eth_call's instructions; BENCHMARKS.md). The rules are [`check_request`]'s either way.
pub(crate) fn parse_body(body: &[u8], limits: &RpcLimits) -> Envelope {
    let body: Body = match serde_json::from_slice(body) {
        Ok(body) => body,
        Err(e) => return Envelope::Reject(RpcError::Parse(e.to_string())),
    };
    match body {
        Body::Batch(items) if items.is_empty() => {
            Envelope::Reject(RpcError::InvalidRequest("empty batch"))
        }
        Body::Batch(items) if items.len() > limits.max_batch_items => {
            Envelope::Reject(RpcError::BatchTooLarge {
                len: items.len(),
                max: limits.max_batch_items,
            })
        }
        Body::Batch(items) => Envelope::Batch(items.into_iter().map(|item| item.0).collect()),
        Body::Single(item) => Envelope::Single(item.0),
    }
}

/// A body as JSON: one value (a request object or not), or an array of them.
enum Body {
    Single(ParsedItem),
    Batch(Vec<ParsedItem>),
}

/// One value of a body, read as a request: the [`Item`] it is.
struct ParsedItem(Item);

/// The members of a request object the envelope reads; every other member is skipped.
enum Member {
    Id,
    Jsonrpc,
    Method,
    Params,
    Other,
}

impl<'de> serde::Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, name: &str) -> Result<Member, E> {
                Ok(match name {
                    "id" => Member::Id,
                    "jsonrpc" => Member::Jsonrpc,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    _ => Member::Other,
                })
            }
        }
        deserializer.deserialize_identifier(Name)
    }
}

/// Reads a request object's members (a repeated member: the last one, as a `Value` map keeps).
fn read_request<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<Item, A::Error> {
    let (mut id, mut jsonrpc, mut method, mut params) = (None, None, None, None);
    while let Some(member) = map.next_key::<Member>()? {
        match member {
            Member::Id => id = Some(map.next_value::<Value>()?),
            Member::Jsonrpc => jsonrpc = Some(map.next_value::<Value>()?),
            Member::Method => method = Some(map.next_value::<Value>()?),
            Member::Params => params = Some(map.next_value::<Value>()?),
            Member::Other => {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
    }
    Ok(check_request(id, jsonrpc, method, params))
}

/// What a value that is not an object is, as a request.
fn not_an_object() -> Item {
    invalid(Value::Null, "a request must be a JSON object")
}

/// Reads one value as a request; `batch`: an array is a batch of them (the top level only).
struct ItemVisitor {
    batch: bool,
}

impl<'de> serde::de::Visitor<'de> for ItemVisitor {
    type Value = Body;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC request or a batch of them")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Body, A::Error> {
        Ok(Body::Single(ParsedItem(read_request(map)?)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Body, A::Error> {
        if !self.batch {
            // An array inside a batch is one invalid item; its contents are only skipped.
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(Body::Single(ParsedItem(not_an_object())));
        }
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element::<ParsedItem>()? {
            items.push(item);
        }
        Ok(Body::Batch(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Body, E> {
        Ok(Body::Single(ParsedItem(not_an_object())))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Body, E> {
        Ok(Body::Single(ParsedItem(not_an_object())))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Body, E> {
        Ok(Body::Single(ParsedItem(not_an_object())))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Body, E> {
        Ok(Body::Single(ParsedItem(not_an_object())))
    }
    fn visit_str<E>(self, _: &str) -> Result<Body, E> {
        Ok(Body::Single(ParsedItem(not_an_object())))
    }
    fn visit_unit<E>(self) -> Result<Body, E> {
        Ok(Body::Single(ParsedItem(not_an_object())))
    }
}

impl<'de> serde::Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ItemVisitor { batch: true })
    }
}

impl<'de> serde::Deserialize<'de> for ParsedItem {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_any(ItemVisitor { batch: false })? {
            Body::Single(item) => Ok(item),
            // `batch: false` never yields a batch.
            Body::Batch(_) => Ok(Self(not_an_object())),
        }
    }
}

/// Checks one value against the JSON-RPC 2.0 request object rules.
#[cfg(test)]
fn parse_item(value: Value) -> Item {
    let Value::Object(mut object) = value else {
        return not_an_object();
    };
    let id = object.remove("id");
    let jsonrpc = object.remove("jsonrpc");
    let method = object.remove("method");
    let params = object.remove("params");
    check_request(id, jsonrpc, method, params)
}

/// The JSON-RPC 2.0 request object rules, on the members given (`None`: absent).
fn check_request(
    id: Option<Value>,
    jsonrpc: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
) -> Item {
    // The id is read first so that later errors can be answered with it.
    let id = match id {
        None => None,
        Some(id @ (Value::Null | Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => return invalid(Value::Null, "id must be a string, a number or null"),
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    if jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return invalid(answer_id, "jsonrpc must be \"2.0\"");
    }
    let method = match method {
        Some(Value::String(method)) => method,
        _ => return invalid(answer_id, "method must be a string"),
    };
    let params = match params {
        params @ (None | Some(Value::Null | Value::Array(_) | Value::Object(_))) => params,
        Some(_) => return invalid(answer_id, "params must be an array or an object"),
    };
    Item::Call(Request { id, method, params })
}

fn invalid(id: Value, reason: &'static str) -> Item {
    Item::Invalid { id, error: RpcError::InvalidRequest(reason) }
}

/// Runs a whole body with `run` as the method table and encodes the reply.
///
/// `run(method, params)` answers one request; batch items run concurrently.
#[cfg(test)]
pub(crate) async fn handle_with<F, Fut>(limits: &RpcLimits, body: &[u8], run: F) -> RpcReply
where
    F: Fn(String, Option<Value>) -> Fut,
    Fut: Future<Output = Result<Value, RpcError>>,
{
    let run = |method, params| {
        let answer = run(method, params);
        async move { answer.await.map(Reply::Value) }
    };
    handle_with_grouped(limits, body, run, "", |_| async { Vec::new() }, |_| {}).await
}

/// Runs a whole body with `run` as the method table (batch items concurrently), except that
/// the batch items calling `grouped` (when there are at least two) are answered together:
/// `group` gets their `params` in order, before the other items run, and answers one result
/// each. A JSON-RPC batch of eth_sendRawTransaction goes to the pool
/// as one batch this way.
pub(crate) async fn handle_with_grouped<F, Fut, G, GFut>(
    limits: &RpcLimits,
    body: &[u8],
    run: F,
    grouped: &str,
    group: G,
    on_reject: impl Fn(&RpcError),
) -> RpcReply
where
    F: Fn(String, Option<Value>) -> Fut,
    Fut: Future<Output = Result<Reply, RpcError>>,
    G: FnOnce(Vec<Option<Value>>) -> GFut,
    GFut: Future<Output = Vec<Result<Value, RpcError>>>,
{
    if body.len() > limits.max_body_bytes {
        return RpcReply::payload_too_large();
    }
    match parse_body(body, limits) {
        Envelope::Reject(error) => {
            on_reject(&error);
            RpcReply::ok(encode_error(&Value::Null, &error))
        }
        Envelope::Single(item) => match answer(item, &run, None).await {
            None => RpcReply::no_content(),
            Some(answer) => {
                let encoded = within_limit(answer.encoded, &answer.id, 0, limits);
                if answer.busy { RpcReply::busy(encoded) } else { RpcReply::ok(encoded) }
            }
        },
        Envelope::Batch(items) => {
            // Its items run at once: not the connection's only request in flight.
            hearth_messages::executor::among_others();
            let is_grouped = |item: &Item| matches!(item, Item::Call(r) if !grouped.is_empty() && r.method == grouped);
            let mut early: Vec<Option<Result<Reply, RpcError>>> = Vec::new();
            if items.iter().filter(|item| is_grouped(item)).count() >= 2 {
                let params = items
                    .iter()
                    .filter_map(|item| match item {
                        Item::Call(r) if is_grouped(item) => Some(r.params.clone()),
                        _ => None,
                    })
                    .collect();
                let mut results = group(params).await.into_iter();
                early = items
                    .iter()
                    .map(|item| {
                        if is_grouped(item) {
                            results.next().map(|r| r.map(Reply::Value))
                        } else {
                            None
                        }
                    })
                    .collect();
            }
            early.resize_with(items.len(), || None);
            // join_all polls every item concurrently and returns results in input order.
            let answers =
                join_all(items.into_iter().zip(early).map(|(item, done)| answer(item, &run, done)))
                    .await;
            let mut body = vec![b'['];
            let mut any = false;
            for answer in answers.into_iter().flatten() {
                if any {
                    body.push(b',');
                }
                any = true;
                let encoded = within_limit(answer.encoded, &answer.id, body.len(), limits);
                body.extend_from_slice(&encoded);
            }
            body.push(b']');
            // A batch stays HTTP 200 even when some items were shed as busy.
            if any { RpcReply::ok(body) } else { RpcReply::no_content() }
        }
    }
}

/// A request's id as the request span shows it: its JSON, or nothing for a notification.
struct IdField<'a>(Option<&'a Value>);

impl std::fmt::Display for IdField<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(id) => write!(f, "{id}"),
            None => Ok(()),
        }
    }
}

/// The encoded answer to one item.
struct Answer {
    id: Value,
    encoded: Vec<u8>,
    busy: bool,
}

/// Runs one item (or takes `done`, its result computed already); `None` for a notification.
async fn answer<F, Fut>(
    item: Item,
    run: &F,
    done: Option<Result<Reply, RpcError>>,
) -> Option<Answer>
where
    F: Fn(String, Option<Value>) -> Fut,
    Fut: Future<Output = Result<Reply, RpcError>>,
{
    let Request { id, method, params } = match item {
        Item::Call(request) => request,
        Item::Invalid { id, error } => {
            let encoded = encode_error(&id, &error);
            return Some(Answer { id, encoded, busy: false });
        }
    };
    // The id is formatted only when the span is recorded (debug logging on), not per request.
    let span = tracing::debug_span!(target: "rpc", "request", method = %method, id = %IdField(id.as_ref()));
    let mut outcome = match done {
        Some(outcome) => outcome,
        None => run(method, params).instrument(span.clone()).await,
    };
    if let Err(error) = &outcome {
        span.in_scope(
            || tracing::debug!(target: "rpc", code = error.code(), %error, "request failed"),
        );
    }
    // A notification still ran (e.g. it may have sent a transaction); only the answer is dropped.
    let id = id?;
    let busy = matches!(&outcome, Err(error) if error.is_busy());
    let encoded = match &mut outcome {
        Ok(Reply::Value(result)) => encode(&id, Some(result), None),
        Ok(Reply::Hot(result)) => encode_result(&id, |out| {
            result.write_json(out);
            Ok(())
        }),
        Ok(Reply::Typed(result)) => encode_typed(&id, &**result),
        Ok(Reply::Encoded(result)) => encode_raw(&id, std::mem::take(result)),
        Err(error) => encode_error(&id, error),
    };
    Some(Answer { id, encoded, busy })
}

/// `encoded` if `already + encoded` fits `max_response_bytes`, else the "response too large"
/// error for `id`. `already` is what earlier batch items used.
fn within_limit(encoded: Vec<u8>, id: &Value, already: usize, limits: &RpcLimits) -> Vec<u8> {
    if already.saturating_add(encoded.len()) <= limits.max_response_bytes {
        return encoded;
    }
    tracing::debug!(target: "rpc", len = encoded.len(), "response over the limit");
    encode_error(id, &RpcError::ResponseTooLarge { max: limits.max_response_bytes })
}

/// A response object, in the member order geth uses.
#[derive(Serialize)]
struct ResponseObject<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
}

#[derive(Serialize)]
struct ErrorObject {
    code: i32,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

pub(crate) fn encode_error(id: &Value, error: &RpcError) -> Vec<u8> {
    let object = ErrorObject { code: error.code(), message: error.to_string(), data: error.data() };
    encode(id, None, Some(object))
}

/// The answer to a batch whose every item fails with one error, built item by item as the
/// batch path builds it (same member order, same response cap per item, HTTP 200): the error
/// object is encoded once, each item adds its id. What `shed` answers a batch of executor
/// calls the pool refuses with.
pub(crate) struct ErrorBatch<'a> {
    body: Vec<u8>,
    error: Vec<u8>,
    limits: &'a RpcLimits,
}

impl<'a> ErrorBatch<'a> {
    /// An empty batch answer whose items will fail with `error`, for about `items` items.
    pub(crate) fn new(error: &RpcError, items: usize, limits: &'a RpcLimits) -> Self {
        let object =
            ErrorObject { code: error.code(), message: error.to_string(), data: error.data() };
        let error = serde_json::to_vec(&object).unwrap_or_else(|_| b"null".to_vec());
        let mut body = Vec::with_capacity(2 + items * (error.len() + 32));
        body.push(b'[');
        Self { body, error, limits }
    }

    /// Appends the answer to the next item, whose id is `id`; past the response cap it is the
    /// "response too large" error instead, as the batch path answers.
    pub(crate) fn push(&mut self, id: &Value) {
        if self.body.len() > 1 {
            self.body.push(b',');
        }
        let start = self.body.len();
        self.body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        // An id is null, a string or a number: encoding it cannot fail.
        if serde_json::to_writer(&mut self.body, id).is_err() {
            self.body.extend_from_slice(b"null");
        }
        self.body.extend_from_slice(br#","error":"#);
        self.body.extend_from_slice(&self.error);
        self.body.push(b'}');
        // `within_limit`'s rule, on the answer written in place.
        if self.body.len() > self.limits.max_response_bytes {
            self.body.truncate(start);
            let max = self.limits.max_response_bytes;
            self.body.extend_from_slice(&encode_error(id, &RpcError::ResponseTooLarge { max }));
        }
    }

    /// The reply: HTTP 200, as a batch stays whatever its items answer.
    pub(crate) fn finish(mut self) -> RpcReply {
        self.body.push(b']');
        RpcReply::ok(self.body)
    }
}

/// A success response around a result that is JSON already (same member order as [`encode`]).
/// The envelope goes around `result` in its own buffer: a large answer (a trace, logs) is
/// never copied whole into a second one.
fn encode_raw(id: &Value, mut result: Vec<u8>) -> Vec<u8> {
    let mut head = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    // An id is null, a string or a number: encoding it cannot fail.
    if serde_json::to_writer(&mut head, id).is_err() {
        head.extend_from_slice(b"null");
    }
    head.extend_from_slice(br#","result":"#);
    result.reserve(head.len() + 1);
    result.splice(0..0, head);
    result.push(b'}');
    result
}

/// What answers a response that could not be encoded (a bug: the results' types encode).
const ENCODE_FAILED: &[u8] =
    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#;

fn encode(id: &Value, result: Option<&Value>, error: Option<ErrorObject>) -> Vec<u8> {
    let response = ResponseObject { jsonrpc: "2.0", id, result, error };
    // Into the worker's response buffer (see `out_buffer`), then out at its exact size.
    crate::transport::out_buffer::encode_with(|out| {
        // Encoding a `Value` cannot fail (its map keys are strings); answer something valid
        // anyway.
        if let Err(e) = serde_json::to_writer(&mut *out, &response) {
            tracing::error!(target: "rpc", error = %e, "cannot encode a response");
            out.clear();
            out.extend_from_slice(ENCODE_FAILED);
        }
    })
}

/// A success response around a typed result, written into the worker's response buffer (same
/// member order as [`encode`]).
fn encode_typed(id: &Value, result: &dyn TypedResult) -> Vec<u8> {
    encode_result(id, |out| result.write_json(out))
}

/// A success response whose `result` member `write` appends, in the worker's response buffer.
fn encode_result(
    id: &Value,
    write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> Vec<u8> {
    crate::transport::out_buffer::encode_with(|out| {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        let written = serde_json::to_writer(&mut *out, id).and_then(|()| {
            out.extend_from_slice(br#","result":"#);
            write(out)
        });
        match written {
            Ok(()) => out.push(b'}'),
            Err(e) => {
                tracing::error!(target: "rpc", error = %e, "cannot encode a result");
                out.clear();
                out.extend_from_slice(ENCODE_FAILED);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::time::Duration;

    use hearth_messages::ExecError;
    use serde_json::json;

    use super::*;
    use crate::core::Hot;

    /// [`fake`] as the transport's method runner sees it.
    async fn fake_reply(method: String, params: Option<Value>) -> Result<Reply, RpcError> {
        fake(method, params).await.map(Reply::Value)
    }

    /// A method table for tests: `echo` returns its params, `busy` sheds, `fail` is invalid
    /// params, `sleep` waits the milliseconds in params[0] then returns them; anything else is
    /// unknown.
    async fn fake(method: String, params: Option<Value>) -> Result<Value, RpcError> {
        match method.as_str() {
            "echo" => Ok(params.unwrap_or(Value::Null)),
            "busy" => Err(RpcError::Exec(ExecError::Busy(
                hearth_messages::admission::Refusal::QueueFull { max_queued: 1 },
            ))),
            "fail" => Err(RpcError::InvalidParams("bad".into())),
            "sleep" => {
                let ms = params.as_ref().and_then(|p| p[0].as_u64()).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!(ms))
            }
            _ => Err(RpcError::MethodNotFound(method)),
        }
    }

    #[test]
    fn a_typed_result_encodes_as_its_value_would() {
        let id = json!(7);
        let balance = alloy_primitives::U256::from(0x1f_u64);
        let output = alloy_primitives::Bytes::from_static(&[0xca, 0xfe]);
        let typed: [&dyn TypedResult; 3] = [&balance, &output, &None::<u64>];
        let values = [json!(balance), json!(output), Value::Null];
        for (typed, value) in typed.into_iter().zip(values) {
            let a: Value = serde_json::from_slice(&encode_typed(&id, typed)).expect("JSON");
            let b: Value = serde_json::from_slice(&encode(&id, Some(&value), None)).expect("JSON");
            assert_eq!(a, b);
        }
        let text = encode_typed(&id, &balance);
        assert_eq!(text, br#"{"jsonrpc":"2.0","id":7,"result":"0x1f"}"#);
    }

    #[test]
    fn hot_results_are_written_as_serde_writes_them() {
        use alloy_primitives::{B256, Bytes, U256};
        let hot = |result: Hot| {
            let mut out = Vec::new();
            result.write_json(&mut out);
            String::from_utf8(out).expect("utf-8")
        };
        for value in [U256::ZERO, U256::from(0x1f_u64), U256::MAX] {
            assert_eq!(hot(Hot::Quantity(value)), serde_json::to_string(&value).expect("json"));
        }
        // Empty, short, and over one 32-byte chunk of the writer with a partial last one.
        let long = Bytes::from((0..70u8).map(|i| i.wrapping_mul(37)).collect::<Vec<_>>());
        for bytes in [Bytes::new(), Bytes::from_static(&[0x00, 0xab, 0xff]), long] {
            assert_eq!(hot(Hot::Data(bytes.clone())), serde_json::to_string(&bytes).expect("json"));
        }
        let hash = B256::repeat_byte(0x5a);
        assert_eq!(hot(Hot::Hash(hash)), serde_json::to_string(&hash).expect("json"));
    }

    async fn run(body: &str) -> RpcReply {
        handle_with(&RpcLimits::default(), body.as_bytes(), fake).await
    }

    fn json_body(reply: &RpcReply) -> Value {
        serde_json::from_slice(reply.body.as_deref().expect("a body")).expect("valid JSON")
    }

    #[tokio::test]
    async fn malformed_json_is_a_parse_error_with_null_id() {
        let reply = run(r#"{"jsonrpc":"2.0","method":"echo","id":1"#).await;
        assert_eq!(reply.status, 200);
        let body = json_body(&reply);
        assert_eq!(body["error"]["code"], -32700);
        assert_eq!(body["id"], Value::Null);
    }

    #[tokio::test]
    async fn empty_batch_and_non_requests_are_invalid_requests() {
        for body in ["[]", "1", "\"x\"", "null", r#"{"jsonrpc":"2.0","id":1}"#] {
            let reply = json_body(&run(body).await);
            assert_eq!(reply["error"]["code"], -32600, "{body}");
        }
        let wrong_version = json_body(&run(r#"{"jsonrpc":"1.0","method":"echo","id":7}"#).await);
        assert_eq!(
            (wrong_version["error"]["code"].clone(), wrong_version["id"].clone()),
            (json!(-32600), json!(7))
        );
        let bad_params =
            json_body(&run(r#"{"jsonrpc":"2.0","method":"echo","params":1,"id":1}"#).await);
        assert_eq!(bad_params["error"]["code"], -32600);
        let bad_id = json_body(&run(r#"{"jsonrpc":"2.0","method":"echo","id":[1]}"#).await);
        assert_eq!(
            (bad_id["error"]["code"].clone(), bad_id["id"].clone()),
            (json!(-32600), Value::Null)
        );
    }

    #[tokio::test]
    async fn single_request_echoes_id_and_result() {
        let reply = run(r#"{"jsonrpc":"2.0","method":"echo","params":[1,"a"],"id":"x"}"#).await;
        assert_eq!(reply.status, 200);
        assert_eq!(json_body(&reply), json!({"jsonrpc":"2.0","id":"x","result":[1,"a"]}));
        // A null id is a request (not a notification) and is answered.
        let null_id = run(r#"{"jsonrpc":"2.0","method":"echo","id":null}"#).await;
        assert_eq!(json_body(&null_id), json!({"jsonrpc":"2.0","id":null,"result":null}));
    }

    #[tokio::test]
    async fn unknown_method_is_32601() {
        let body = json_body(&run(r#"{"jsonrpc":"2.0","method":"eth_nope","id":1}"#).await);
        assert_eq!(body["error"]["code"], -32601);
        assert_eq!(body["error"]["message"], "the method eth_nope does not exist/is not available");
    }

    #[tokio::test]
    async fn notifications_get_no_answer() {
        let single = run(r#"{"jsonrpc":"2.0","method":"echo"}"#).await;
        assert_eq!((single.status, single.body), (204, None));
        let batch =
            run(r#"[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"fail"}]"#).await;
        assert_eq!((batch.status, batch.body), (204, None));
        let mixed =
            run(r#"[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"echo","id":2}]"#)
                .await;
        assert_eq!(json_body(&mixed), json!([{"jsonrpc":"2.0","id":2,"result":null}]));
    }

    #[tokio::test]
    async fn batch_items_are_answered_on_their_own_in_order() {
        let reply = run(
            r#"[{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}, 5,
                {"jsonrpc":"2.0","method":"fail","id":3}, {"jsonrpc":"2.0","method":"busy","id":4}]"#,
        )
        .await;
        assert_eq!(reply.status, 200, "a batch stays 200 even with a busy item");
        let body = json_body(&reply);
        assert_eq!(body[0], json!({"jsonrpc":"2.0","id":1,"result":[1]}));
        assert_eq!(
            (body[1]["id"].clone(), body[1]["error"]["code"].clone()),
            (Value::Null, json!(-32600))
        );
        assert_eq!(body[2]["error"]["code"], -32602);
        assert_eq!(body[3]["error"]["code"], -32005);
    }

    #[tokio::test(start_paused = true)]
    async fn batch_items_run_concurrently() {
        let started = tokio::time::Instant::now();
        let reply = run(r#"[{"jsonrpc":"2.0","method":"sleep","params":[300],"id":1},
                {"jsonrpc":"2.0","method":"sleep","params":[100],"id":2}]"#)
        .await;
        // Sequentially this would take 400 ms of (paused, auto-advanced) time.
        assert_eq!(started.elapsed(), Duration::from_millis(300));
        assert_eq!(
            json_body(&reply),
            json!([{"jsonrpc":"2.0","id":1,"result":300},{"jsonrpc":"2.0","id":2,"result":100}])
        );
    }

    #[tokio::test]
    async fn busy_single_request_is_http_503() {
        let reply = run(r#"{"jsonrpc":"2.0","method":"busy","id":1}"#).await;
        assert_eq!(reply.status, 503);
        assert_eq!(json_body(&reply)["error"]["code"], -32005);
    }

    #[tokio::test]
    async fn batch_over_the_limit_is_one_error() {
        let limits = RpcLimits { max_batch_items: 2, ..RpcLimits::default() };
        let item = r#"{"jsonrpc":"2.0","method":"echo","id":1}"#;
        let body = format!("[{item},{item},{item}]");
        let reply = handle_with(&limits, body.as_bytes(), fake).await;
        let body = json_body(&reply);
        assert_eq!(body["error"]["code"], -32005);
        assert!(body["error"]["message"].as_str().unwrap().starts_with("batch too large"));
        assert_eq!(body["id"], Value::Null);
    }

    #[tokio::test]
    async fn body_over_the_limit_is_413() {
        let limits = RpcLimits { max_body_bytes: 10, ..RpcLimits::default() };
        let reply =
            handle_with(&limits, br#"{"jsonrpc":"2.0","method":"echo","id":1}"#, fake).await;
        assert_eq!(reply, RpcReply { status: 413, body: None });
    }

    #[tokio::test]
    async fn responses_over_the_limit_become_errors() {
        let limits = RpcLimits { max_response_bytes: 60, ..RpcLimits::default() };
        let big = r#"{"jsonrpc":"2.0","method":"echo","params":["0123456789012345678901234567890123456789"],"id":1}"#;
        let reply = handle_with(&limits, big.as_bytes(), fake).await;
        let body = json_body(&reply);
        assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!(1), json!(-32005)));
        assert!(body["error"]["message"].as_str().unwrap().starts_with("response too large"));
        // In a batch the first item fits and the second pushes the total over.
        let small = r#"{"jsonrpc":"2.0","method":"echo","id":2}"#;
        let batch = format!("[{small},{small}]");
        let reply = handle_with(&limits, batch.as_bytes(), fake).await;
        let body = json_body(&reply);
        assert_eq!(body[0]["result"], Value::Null);
        assert_eq!(body[1]["error"]["code"], -32005);
    }

    #[tokio::test]
    async fn notifications_still_run() {
        let calls = RefCell::new(Vec::new());
        let reply =
            handle_with(&RpcLimits::default(), br#"{"jsonrpc":"2.0","method":"x"}"#, |m, _| {
                calls.borrow_mut().push(m);
                async { Ok(Value::Null) }
            })
            .await;
        assert_eq!(reply, RpcReply { status: 204, body: None });
        assert_eq!(calls.into_inner(), vec!["x".to_owned()]);
    }

    #[test]
    fn an_encoded_result_is_spliced_in_as_is() {
        let encoded = encode_raw(&json!("a\"b"), br#"[{"x":1}]"#.to_vec());
        assert_eq!(
            serde_json::from_slice::<Value>(&encoded).unwrap(),
            json!({"jsonrpc": "2.0", "id": "a\"b", "result": [{"x": 1}]})
        );
        assert_eq!(
            encode_raw(&json!(7), b"[]".to_vec()),
            encode(&json!(7), Some(&json!([])), None)
        );
    }

    #[tokio::test]
    async fn grouped_items_are_answered_together_and_the_rest_as_usual() {
        let groups = RefCell::new(Vec::new());
        let body = r#"[{"jsonrpc":"2.0","method":"g","params":[1],"id":1},
            {"jsonrpc":"2.0","method":"echo","params":[2],"id":2},
            {"jsonrpc":"2.0","method":"g","params":[3]},
            {"jsonrpc":"2.0","method":"g","params":[4],"id":4}]"#;
        let reply = handle_with_grouped(
            &RpcLimits::default(),
            body.as_bytes(),
            fake_reply,
            "g",
            |ps| {
                groups.borrow_mut().push(ps.clone());
                async move {
                    ps.into_iter()
                        .map(|p| match p.as_ref().and_then(|p| p[0].as_u64()) {
                            Some(4) => Err(RpcError::InvalidParams("four".into())),
                            other => Ok(json!(other)),
                        })
                        .collect()
                }
            },
            |_| {},
        )
        .await;
        assert_eq!(
            groups.into_inner(),
            vec![vec![Some(json!([1])), Some(json!([3])), Some(json!([4]))]]
        );
        let body = json_body(&reply);
        assert_eq!(body.as_array().unwrap().len(), 3, "the notification still gets no answer");
        assert_eq!(body[0], json!({"jsonrpc":"2.0","id":1,"result":1}));
        assert_eq!(body[1], json!({"jsonrpc":"2.0","id":2,"result":[2]}));
        assert_eq!(body[2]["error"]["code"], -32602);
        // A single grouped item runs through the method table as usual.
        let one = handle_with_grouped(
            &RpcLimits::default(),
            br#"[{"jsonrpc":"2.0","method":"echo","params":[9],"id":9}]"#,
            fake_reply,
            "echo",
            |_| async { panic!("one item is not grouped") },
            |_| {},
        )
        .await;
        assert_eq!(json_body(&one)[0]["result"], json!([9]));
    }

    /// The body read straight into requests answers as the `Value` tree of it did, item by
    /// item: repeated members (the last wins), escaped member names, skipped unknown members,
    /// arrays and scalars inside a batch, every envelope error.
    #[test]
    fn bodies_parse_as_their_value_tree_would() {
        let bodies = [
            r#"{"jsonrpc":"2.0","method":"m","params":[1,{"a":[2]}],"id":7}"#,
            r#"{"id":1,"id":"two","jsonrpc":"2.0","method":"m"}"#,
            r#"{"\u0069d":3,"jsonrpc":"2.0","meth\u006fd":"m","x":{"deep":[1,2,{}]}}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":null,"id":null}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":"no","id":1}"#,
            r#"{"jsonrpc":"1.0","method":"m","id":1}"#,
            r#"{"jsonrpc":2.0,"method":"m","id":1}"#,
            r#"{"jsonrpc":"2.0","method":5,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1.5e3}"#,
            r#"[{"jsonrpc":"2.0","method":"m","id":1},[1,[2]],3,"s",null,true,{},{"id":-1}]"#,
            r#"[[]]"#,
            "7",
            "\"text\"",
            "null",
            "false",
            "{}",
        ];
        let reference = |body: &str| -> String {
            let items = match serde_json::from_str::<Value>(body).expect("valid JSON") {
                Value::Array(items) => items.into_iter().map(parse_item).collect::<Vec<_>>(),
                single => vec![parse_item(single)],
            };
            format!("{items:?}")
        };
        for body in bodies {
            let parsed = match parse_body(body.as_bytes(), &RpcLimits::default()) {
                Envelope::Single(item) => format!("{:?}", vec![item]),
                Envelope::Batch(items) => format!("{items:?}"),
                Envelope::Reject(error) => panic!("{body}: rejected with {error}"),
            };
            assert_eq!(parsed, reference(body), "{body}");
        }
        for body in ["[", "{\"id\":1,}", "[1,]", "{} {}", ""] {
            let Envelope::Reject(RpcError::Parse(reason)) =
                parse_body(body.as_bytes(), &RpcLimits::default())
            else {
                panic!("{body}: not a parse error");
            };
            let value_reason = serde_json::from_str::<Value>(body).expect_err("malformed");
            assert_eq!(reason, value_reason.to_string(), "{body}");
        }
    }

    #[test]
    fn parse_item_keeps_params_as_given() {
        let item = parse_item(json!({"jsonrpc":"2.0","method":"m","params":{"a":1},"id":1}));
        let Item::Call(request) = item else { panic!("a call") };
        assert_eq!(request.params, Some(json!({"a":1})));
        assert_eq!(request.id, Some(json!(1)));
    }
}
