//! Early shedding: refusing an executor-bound request before its body is parsed.
//!
//! When the executor pool would refuse a call anyway (its expected queueing delay is over
//! `--executor.max-queue-delay`, or its queue is full: `ExecutorClient::refuse_early`), a
//! single request for a method that always runs there (eth_call, eth_estimateGas,
//! eth_createAccessList, eth_simulateV1) is answered -32005 from a scan of its raw body: the
//! object's top-level `jsonrpc`, `method` and `id` members are found by walking its bytes,
//! skipping `params` without decoding it. No `serde_json::Value` tree, no parameter decoding,
//! no span and no executor work: under a retry storm (closed-loop clients that resend at once
//! when refused) a refusal is then a few hundred nanoseconds of the front's time, not a full
//! request. Anything the scan is not sure of (a notification, an escaped method name, an odd
//! id, a duplicate member) and params of a shape the method does not take go the ordinary way,
//! which answers bad params -32602 and applies the same rule to the rest; so does a body that
//! is not valid JSON (checked by serde_json reading every value into nothing, only for a
//! request about to be refused; a lone surrogate escape, a byte that is not UTF-8 or a number
//! out of range is invalid too), which gets -32700 busy or not. The pool's rule is asked first
//! (a few atomic loads): while it admits, no body is scanned, so a closed loop of any size
//! below capacity pays nothing here.
//!
//! A batch whose items are all such calls (each with an id, well-shaped params, a method the
//! API filter serves; at least one item and at most the batch limit) is refused the same way:
//! the array's items are found by the same walk, the body is checked valid JSON once, and the
//! answer is what the ordinary path gives when admission refuses every item: a JSON array of
//! one -32005 per item, in order, each with its id, HTTP 200, each item counted as a refusal
//! by method and by reason. The pool's rule is decided once for the batch
//! (`ExecutorClient::refuse_early_many`): the ordinary path admits a batch's items within
//! microseconds of each other, and a refused call takes no place, so each meets the state the
//! first met. A batch with any other item (another method, a notification, params of another
//! shape, anything the scan is not sure of), an empty one or one over the limit goes the
//! ordinary way, which answers it as before: each executor call in it is refused at admission
//! after its params are decoded.
//!
//! [`RetryPace`] slows one connection (HTTP, or a WebSocket) that comes straight back after
//! such a refusal, of a single request or of a batch: its request is held for [`RETRY_PAUSE`]
//! and then decided again, so a few hundred refused connections spinning on a 2-core machine
//! cannot take the CPU the admitted calls need.

use std::cell::Cell;
use std::time::Duration;

use hearth_messages::admission::Arrival;
use hearth_messages::executor::current_arrival;
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::methods;
use crate::transport::envelope::{ErrorBatch, RpcReply};

/// How long a connection that comes back within [`RETRY_WINDOW`] of its last early refusal
/// waits before its request is decided again: the default budget, the time in which the queue
/// that refused it turns over. Admitted calls keep the executors busy meanwhile (a connection
/// whose call finished is not held), so the pause costs the refused clients latency, not the
/// node goodput. 256 connections held 100 ms each make at most ~2,500 refusals/s; in one
/// side-by-side run a 25 ms hold let 6,991/s through and kept 0.61 of the 8-connection goodput,
/// 100 ms 2,429/s and 1.22 (BENCHMARKS.md, retry storm).
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// A request that arrives this soon after its connection's last early refusal is a retry "at
/// once". Not a round trip's few microseconds: a client spinning on 256 connections, and the
/// front answering them, each take a turn of several ms to come back to one connection. An
/// open-loop client at 3x capacity on 512 connections comes back to one every ~120 ms, and a
/// client that backs off after -32005 waits longer than this; neither is ever held.
pub const RETRY_WINDOW: Duration = Duration::from_millis(20);

/// The top-level members of a request object that routing needs, as raw JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    /// The method name (a string with no escapes).
    pub(crate) method: &'a str,
    /// The id's JSON text: `null`, a string, or an integer.
    pub(crate) id: &'a [u8],
    /// The params' JSON text, if any (not decoded).
    pub(crate) params: Option<&'a [u8]>,
}

/// Answers a request for an executor method, or a batch of only such requests, with -32005
/// when the pool would refuse it now, counting each refusal as the ordinary path does (by
/// method, in `hearth_rpc_rejections_total{path="executor_busy"}` and in the pool's refusals
/// by reason). A single request gets HTTP 503, a batch HTTP 200 (as the ordinary path
/// answers them). `None`: the body goes the ordinary way.
pub(crate) fn refuse_early(ctx: &RpcContext, body: &[u8]) -> Option<RpcReply> {
    // The pool's rule first: a few atomic loads, so that while the pool admits (a closed loop
    // of any size below capacity) no body is scanned twice. The plain budget is the strictest
    // rule: when it admits, every arrival is admitted.
    if !would_refuse(ctx, Arrival::Among) {
        return None;
    }
    match refusable(ctx, body)? {
        Refusable::Single(head) => {
            // The id is a literal of a few bytes; decoding it gives the ordinary path's
            // encoding.
            let id: Value = serde_json::from_slice(head.id).ok()?;
            // An HTTP request is its connection's only one (`current_arrival`), as admission
            // would see it.
            let refused: Result<(), RpcError> =
                Err(RpcError::Exec(ctx.executor.refuse_early(current_arrival())?));
            ctx.metrics.observe_slot(ctx.metrics.slot_of(head.method), Duration::ZERO, &refused);
            let error = refused.err()?;
            Some(RpcReply::busy(crate::transport::envelope::encode_error(&id, &error)))
        }
        Refusable::Batch { items } => refuse_batch(ctx, body, items),
    }
}

/// Answers a batch of `items` executor calls (checked by [`refusable`]) with one -32005 per
/// item, in order, each with its id. The pool's rule is decided once for the batch and its
/// refusal counted once per item ([`ExecutorClient::refuse_early_many`]): the ordinary path
/// admits a batch's items one after another within microseconds, and as a refused call
/// takes no place, each meets the state the first met.
///
/// [`ExecutorClient::refuse_early_many`]: hearth_messages::executor::ExecutorClient::refuse_early_many
fn refuse_batch(ctx: &RpcContext, body: &[u8], items: usize) -> Option<RpcReply> {
    let refused: Result<(), RpcError> =
        Err(RpcError::Exec(ctx.executor.refuse_early_many(items as u64)?));
    let error = refused.as_ref().err()?;
    let mut reply = ErrorBatch::new(error, items, &ctx.limits);
    for_each_item(body, items, |head| {
        ctx.metrics.observe_slot(ctx.metrics.slot_of(head.method), Duration::ZERO, &refused);
        // The body is valid JSON (checked), so the id literal decodes; as a single request's,
        // decoding gives the ordinary path's encoding of it.
        let id: Value = serde_json::from_slice(head.id).unwrap_or(Value::Null);
        reply.push(&id);
        Some(())
    });
    Some(reply.finish())
}

/// Whether the pool would refuse a call now: one load while it has an idle thread, a few
/// more otherwise; nothing counted.
fn would_refuse(ctx: &RpcContext, arrival: Arrival) -> bool {
    ctx.executor.may_refuse() && ctx.executor.would_refuse(arrival).is_some()
}

/// A body that may be refused early.
enum Refusable<'b> {
    /// One well-shaped call of an executor method.
    Single(Head<'b>),
    /// A batch of `items` (at least one, at most the batch limit), each a well-shaped call of
    /// an executor method with an id.
    Batch { items: usize },
}

/// What `body` is when it is a well-shaped call of an executor method, or a batch of only
/// such calls, written in valid JSON; `None`: it goes the ordinary way. The validity check is
/// serde_json's own parser reading every value and dropping it ([`Checked`]: no tree, no
/// allocation unless a string holds escapes), once for the whole body, so that a malformed
/// body gets the ordinary path's -32700, not -32005: a parse error says what the client must
/// fix, a refusal only when to come back. It costs about as much as the scan (both linear in
/// the body, which the front's limit bounds), and runs only for bodies about to be refused.
fn refusable<'b>(ctx: &RpcContext, body: &'b [u8]) -> Option<Refusable<'b>> {
    if body.len() > ctx.limits.max_body_bytes {
        return None;
    }
    let refusable = if body.get(skip_ws(body, 0)) == Some(&b'[') {
        let items =
            for_each_item(body, ctx.limits.max_batch_items, |head| executor_call(ctx, &head))?;
        Refusable::Batch { items }
    } else {
        let head = scan_head(body)?;
        executor_call(ctx, &head)?;
        Refusable::Single(head)
    };
    valid_json(body).then_some(refusable)
}

/// Whether `body` is JSON the ordinary parser would read (see [`Checked`]).
pub(crate) fn valid_json(body: &[u8]) -> bool {
    serde_json::from_slice::<Checked>(body).is_ok()
}

/// Any JSON value, checked as the ordinary parser checks the members it decodes, and dropped
/// as read: numbers in range, strings UTF-8 with their escapes paired. serde_json's
/// [`IgnoredAny`](serde::de::IgnoredAny) skips strings and numbers unchecked, so a lone
/// `\ud800`, a raw byte that is not UTF-8 or `1e999` in params would pass it, where the
/// ordinary path answers -32700 (found by `fuzz::the_shed_scans_find_what_the_parser_finds`).
/// Strings are borrowed from the body, or decoded into the parser's one scratch buffer when
/// they hold escapes; no tree is built. It checks other members too, which the ordinary path
/// skips: such a body only goes the ordinary way.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> serde::de::Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

/// `Some` when `head` calls an executor method this port serves, with params of its shape.
fn executor_call(ctx: &RpcContext, head: &Head<'_>) -> Option<()> {
    let row = executor_row(head)?;
    ctx.serves(row.name, row.namespace).then_some(())
}

/// Whether `head` calls an executor method with params of a shape it takes.
#[cfg(test)]
pub(crate) fn executor_shape(head: &Head<'_>) -> bool {
    executor_row(head).is_some()
}

/// The row of the executor method `head` calls, when its params have a shape it takes.
fn executor_row(head: &Head<'_>) -> Option<&'static methods::Method> {
    // The executor calls are the table's `Kind::Call` rows, each with the most arguments it
    // takes: refusing them early answers what the ordinary path would. Params of the wrong
    // shape (not an array, no transaction object first, too many arguments) go the ordinary
    // way and get its -32602; a well-shaped request with a bad field inside (an address that
    // is not hex) is still refused as busy, as its fields are not decoded here.
    let row = methods::EXECUTOR_CALLS.iter().find(|row| row.name == head.method)?;
    let methods::Kind::Call { max_args } = row.kind else { return None };
    head.params.is_some_and(|params| well_shaped(params, max_args)).then_some(*row)
}

/// Calls `each` with the head of every item of `body`, a JSON array of request objects, in
/// order, and answers how many there were. `None` when the body is not one array, is empty
/// (the ordinary path answers -32600), holds more than `max_items` (it answers "batch too
/// large"), or an item is not a request the scan is sure of, or `each` answers `None`.
/// Nothing is allocated: each item is walked once, as [`scan_head`] walks a request.
pub(crate) fn for_each_item<'b>(
    body: &'b [u8],
    max_items: usize,
    mut each: impl FnMut(Head<'b>) -> Option<()>,
) -> Option<usize> {
    let start = skip_ws(body, 0);
    let mut end = body.len();
    while end > start && matches!(body[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    if end < start + 2 || body[start] != b'[' || body[end - 1] != b']' {
        return None;
    }
    let inner = &body[start + 1..end - 1];
    let mut at = skip_ws(inner, 0);
    let mut items = 0;
    loop {
        let (head, item_end) = scan_object(inner, at)?;
        items += 1;
        if items > max_items {
            return None;
        }
        each(head)?;
        at = skip_ws(inner, item_end);
        match inner.get(at) {
            None => return Some(items),
            Some(b',') => at = skip_ws(inner, at + 1),
            _ => return None,
        }
    }
}

/// Finds the top-level `jsonrpc` (which must be `"2.0"`), `method` and `id` of a body that
/// is one JSON object, skipping every other member's value without decoding it. `None` when
/// the body is anything else or the scan is not sure (see the module doc).
pub(crate) fn scan_head(body: &[u8]) -> Option<Head<'_>> {
    let (head, end) = scan_object(body, skip_ws(body, 0))?;
    (skip_ws(body, end) == body.len()).then_some(head)
}

/// [`scan_head`] of the object starting at `at` in `body`, and the index just past its `}`.
fn scan_object(body: &[u8], mut at: usize) -> Option<(Head<'_>, usize)> {
    if body.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let (mut method, mut id, mut params, mut version_ok) = (None, None, None, false);
    loop {
        at = skip_ws(body, at);
        let key_start = at;
        at = skip_string(body, at)?;
        let key = &body[key_start + 1..at - 1];
        at = skip_ws(body, at);
        if body.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(body, at + 1);
        let value_start = at;
        at = skip_value(body, at)?;
        let value = &body[value_start..at];
        match key {
            b"method" if method.is_none() => {
                let name = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
                if name.contains(&b'\\') {
                    return None;
                }
                method = Some(std::str::from_utf8(name).ok()?);
            }
            b"id" if id.is_none() => {
                let plain_integer =
                    value.strip_prefix(b"-").unwrap_or(value).iter().all(u8::is_ascii_digit);
                let ok = value == b"null"
                    || value.first() == Some(&b'"')
                    || (!value.is_empty() && value != b"-" && plain_integer);
                if !ok {
                    return None;
                }
                id = Some(value);
            }
            b"params" if params.is_none() => params = Some(value),
            b"jsonrpc" if !version_ok => {
                if value != b"\"2.0\"" {
                    return None;
                }
                version_ok = true;
            }
            // A duplicate or escaped key: the ordinary parser decides what it means.
            b"method" | b"id" | b"params" | b"jsonrpc" => return None,
            key if key.contains(&b'\\') => return None,
            _ => {}
        }
        at = skip_ws(body, at);
        match body.get(at) {
            Some(b',') => at += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    if !version_ok {
        return None;
    }
    Some((Head { method: method?, id: id?, params }, at + 1))
}

/// Whether `params` (raw JSON text) has the shape an executor method takes: an array of one
/// to `max_args` arguments, the first an object (the transaction, or eth_simulateV1's
/// payload). Items are skipped as [`skip_value`] skips them, nothing decoded.
fn well_shaped(params: &[u8], max_args: usize) -> bool {
    if params.first() != Some(&b'[') || params.last() != Some(&b']') {
        return false;
    }
    let inner = &params[1..params.len() - 1];
    let mut at = skip_ws(inner, 0);
    if inner.get(at) != Some(&b'{') {
        return false;
    }
    let mut args = 0;
    loop {
        let Some(end) = skip_item(inner, at) else { return false };
        args += 1;
        at = skip_ws(inner, end);
        match inner.get(at) {
            None => return args <= max_args,
            Some(b',') if args < max_args => at = skip_ws(inner, at + 1),
            _ => return false,
        }
    }
}

/// The index just past the array item starting at `at`: brackets and strings counted, up to
/// the `,` at depth zero or the end of `inner` (the array's text between its brackets).
fn skip_item(inner: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = at;
    while let Some(&byte) = inner.get(i) {
        match byte {
            b'"' => {
                i = skip_string(inner, i)?;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => break,
            _ => {}
        }
        i += 1;
    }
    let mut end = i;
    while end > at && matches!(inner[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    (end > at && depth == 0).then_some(end)
}

fn skip_ws(body: &[u8], mut at: usize) -> usize {
    while body.get(at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The index just past the string starting at `at` (which must be its opening quote).
fn skip_string(body: &[u8], at: usize) -> Option<usize> {
    if body.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        match body.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The index just past the JSON value starting at `at`: a string, or anything up to the `,`
/// or `}` that ends it at depth zero, brackets and strings inside counted. It only finds the
/// value's end; whether the body is valid JSON is checked apart, before a refusal
/// ([`refusable`]).
fn skip_value(body: &[u8], at: usize) -> Option<usize> {
    if body.get(at) == Some(&b'"') {
        return skip_string(body, at);
    }
    let mut depth = 0usize;
    let mut i = at;
    loop {
        match body.get(i)? {
            b'"' => {
                i = skip_string(body, i)?;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => depth -= 1,
            b',' | b'}' if depth == 0 => break,
            b']' => return None,
            _ => {}
        }
        i += 1;
    }
    // A value ends before trailing whitespace.
    let mut end = i;
    while end > at && matches!(body[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    (end > at).then_some(end)
}

/// One connection's memory of its last early refusal, to tell a client that retries at once
/// from one that comes back later. Lives in the connection's data on its worker thread.
#[derive(Debug, Default)]
pub(crate) struct RetryPace {
    last_refusal: Cell<Option<tokio::time::Instant>>,
}

impl RetryPace {
    /// Whether a request arriving `now` comes straight back after a refusal.
    pub(crate) fn is_quick_retry(&self, now: tokio::time::Instant) -> bool {
        self.last_refusal.get().is_some_and(|refused| now.duration_since(refused) < RETRY_WINDOW)
    }

    /// Notes what the connection was answered at `now`: an early refusal or anything else.
    pub(crate) fn answered(&self, refused: bool, now: tokio::time::Instant) {
        self.last_refusal.set(refused.then_some(now));
    }

    /// Whether its last answer was an early refusal: only then does a request on it read the
    /// clock (two reads per request on the hot path otherwise, for nothing).
    fn refused_last(&self) -> bool {
        self.last_refusal.get().is_some()
    }
}

/// [`refuse_early`] for an HTTP request arriving on a connection that remembers `pace`: a
/// quick retry that would be refused again is held for [`RETRY_PAUSE`] first and then
/// decided again. `None`: the request goes the ordinary way (it may have been held).
pub(crate) async fn refuse_early_paced(
    ctx: &RpcContext,
    body: &[u8],
    pace: Option<&RetryPace>,
) -> Option<RpcReply> {
    // The clock is read only around early refusals (`RetryPace::refused_last`).
    let quick = pace.is_some_and(|pace| {
        pace.refused_last() && pace.is_quick_retry(tokio::time::Instant::now())
    });
    // Only the answer given counts as a refusal: a held retry is decided (and counted) once,
    // after the hold.
    let held = |refusable: Refusable<'_>| match refusable {
        Refusable::Single(_) => would_refuse(ctx, current_arrival()),
        Refusable::Batch { .. } => true,
    };
    if quick && would_refuse(ctx, Arrival::Among) && refusable(ctx, body).is_some_and(held) {
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    let refused = refuse_early(ctx, body);
    if let Some(pace) = pace.filter(|pace| refused.is_some() || pace.refused_last()) {
        pace.answered(refused.is_some(), tokio::time::Instant::now());
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(body: &str) -> Option<(String, String)> {
        scan_head(body.as_bytes())
            .map(|h| (h.method.to_owned(), String::from_utf8(h.id.to_vec()).expect("utf-8")))
    }

    fn some(method: &str, id: &str) -> Option<(String, String)> {
        Some((method.to_owned(), id.to_owned()))
    }

    #[test]
    fn the_scan_finds_method_and_id_whatever_their_order() {
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"eth_call","params":[{"to":"0x01","data":"0x"},"latest"]}"#;
        assert_eq!(head(call), some("eth_call", "7"));
        let reordered = r#" { "params" : [ {"a":[1,{"b":"}]"}]} ] , "method" : "eth_estimateGas" ,
            "id" : "x\"y" , "jsonrpc" : "2.0" } "#;
        assert_eq!(head(reordered), some("eth_estimateGas", r#""x\"y""#));
        assert_eq!(
            head(r#"{"jsonrpc":"2.0","method":"eth_call","id":null}"#),
            some("eth_call", "null")
        );
        assert_eq!(
            head(r#"{"jsonrpc":"2.0","method":"eth_call","id":-12}"#),
            some("eth_call", "-12")
        );
    }

    #[test]
    fn a_method_key_inside_params_is_not_the_method() {
        let nested = r#"{"jsonrpc":"2.0","id":1,"params":[{"method":"eth_call"}],"method":"eth_blockNumber"}"#;
        assert_eq!(head(nested), some("eth_blockNumber", "1"));
        let in_string = r#"{"jsonrpc":"2.0","id":1,"params":["\"method\":\"eth_call\""],"method":"eth_chainId"}"#;
        assert_eq!(head(in_string), some("eth_chainId", "1"));
    }

    #[test]
    fn anything_the_scan_is_not_sure_of_goes_the_ordinary_way() {
        for body in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_call"}]"#, // a batch
            r#"{"jsonrpc":"2.0","method":"eth_call"}"#,          // a notification
            r#"{"id":1,"method":"eth_call"}"#,                   // no version
            r#"{"jsonrpc":"1.0","id":1,"method":"eth_call"}"#,   // wrong version
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_\u0063all"}"#, // escaped name
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_call","method":"eth_chainId"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"eth_call"}"#, // not an integer
            r#"{"jsonrpc":"2.0","id":[1],"method":"eth_call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_call"} x"#, // trailing bytes
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_call""#,    // cut short
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[}"#,
            r#"{"jsonrpc":"2.0","id":1,"m\u0065thod":"eth_call"}"#,
            "",
            "{}",
        ] {
            assert_eq!(head(body), None, "{body}");
        }
    }

    #[test]
    fn only_params_an_executor_method_takes_are_refused_early() {
        assert!(well_shaped(br#"[{"to":"0x01","data":"0x"},"latest"]"#, 4));
        assert!(well_shaped(br#"[ {"a":"],{"} , "latest", {"0x01":{}}, {} ]"#, 4));
        assert!(well_shaped(br#"[{}]"#, 2));
        for (params, max) in [
            (&br#"[]"#[..], 4),                // no transaction
            (br#"["latest"]"#, 4),             // not an object first
            (br#"{"to":"0x01"}"#, 4),          // not an array
            (br#"[{},"latest",{}]"#, 2),       // too many for eth_simulateV1
            (br#"[{},"latest",{},{},{}]"#, 4), // too many for eth_call
            (br#"[{},]"#, 4),                  // an empty argument
            (br#"[{}}"#, 4),                   // cut short
            (br#"[{}],[{}]"#, 4),              // not one array
        ] {
            assert!(!well_shaped(params, max), "{}", String::from_utf8_lossy(params));
        }
        let head = scan_head(br#"{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{}]}"#);
        assert_eq!(head.and_then(|h| h.params), Some(&b"[{}]"[..]));
        let bare = scan_head(br#"{"jsonrpc":"2.0","id":1,"method":"eth_call"}"#);
        assert_eq!(bare.map(|h| h.params), Some(None));
    }

    /// The (method, id) of every item of a batch body the scan is sure of, or `None`.
    fn items(body: &str, max: usize) -> Option<Vec<(String, String)>> {
        let mut seen = Vec::new();
        for_each_item(body.as_bytes(), max, |h| {
            seen.push((h.method.to_owned(), String::from_utf8(h.id.to_vec()).expect("utf-8")));
            Some(())
        })?;
        Some(seen)
    }

    #[test]
    fn the_batch_scan_finds_every_item_in_order() {
        let batch = r#" [ {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"a":"],["}]} ,
            {"params":[[{}]],"method":"eth_estimateGas","id":"x,y","jsonrpc":"2.0"}] "#;
        let expected =
            vec![("eth_call".into(), "1".into()), ("eth_estimateGas".into(), r#""x,y""#.into())];
        assert_eq!(items(batch, 2), Some(expected));
        assert_eq!(items(batch, 1), None, "over the item limit");
        let one = r#"[{"jsonrpc":"2.0","id":null,"method":"eth_call"}]"#;
        assert_eq!(items(one, 1), Some(vec![("eth_call".into(), "null".into())]));
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"eth_call"}"#;
        for body in [
            "[]".to_owned(),
            " [ ] ".to_owned(),
            "".to_owned(),
            call.to_owned(),      // not a batch
            format!("[{call},]"), // an empty item
            format!("[,{call}]"),
            format!("[{call}"), // cut short
            format!("[{call}]]"),
            format!("[{call}] [{call}]"), // two arrays
            format!("[{call} {call}]"),   // no comma
            format!("[{call},[{call}]]"), // a nested array
            format!("[{call},7]"),        // not an object
            format!(r#"[{call},{{"jsonrpc":"2.0","method":"eth_call"}}]"#), // a notification
        ] {
            assert_eq!(items(&body, 10), None, "{body}");
        }
    }

    #[test]
    fn only_json_the_ordinary_parser_reads_is_valid() {
        assert!(valid_json(br#"{"a":["\ud83d\ude00","\n",1,-2.5e3,null,true,{}]}"#));
        assert!(valid_json("[\"é\"]".as_bytes()));
        for invalid in [
            &br#"["\ud800"]"#[..],  // a lone leading surrogate
            br#"["\udc00"]"#,       // a lone trailing one
            br#"["\ud800\u0041"]"#, // a leading one not followed by a trailing one
            br#"[1e999]"#,          // out of range
            b"[\"\x80\"]",          // not UTF-8
            b"{\"\x80\":1}",        // in a key
            br#"[1,]"#,
        ] {
            assert!(!valid_json(invalid), "{}", String::from_utf8_lossy(invalid));
        }
    }

    #[test]
    fn a_quick_retry_is_one_within_the_window_of_a_refusal() {
        let pace = RetryPace::default();
        let t0 = tokio::time::Instant::now();
        assert!(!pace.is_quick_retry(t0), "nothing refused yet");
        pace.answered(true, t0);
        assert!(pace.is_quick_retry(t0 + RETRY_WINDOW / 2));
        assert!(!pace.is_quick_retry(t0 + RETRY_WINDOW), "came back later");
        pace.answered(false, t0 + RETRY_WINDOW);
        assert!(!pace.is_quick_retry(t0 + RETRY_WINDOW), "answered since");
    }
}
