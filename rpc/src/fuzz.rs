//! Property tests of the JSON-RPC envelope and param decoding on hostile input: arbitrary
//! bytes, valid requests mutated byte by byte and field by field, and arbitrary JSON for every
//! argument type. Nothing may panic, and every error must carry a standard code. The case count
//! is `HEARTH_FUZZ_CASES` (default: a quick run for CI); shrunk failures become the literal
//! tests at the end.

use std::cell::RefCell;
use std::collections::BTreeMap;

use alloy_eips::eip2930::AccessList;
use alloy_primitives::{Address, B128, B256, Bytes, U256};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag, Filter};
use futures_util::FutureExt;
use hearth_messages::executor::{BlockOverrides, StateOverrides};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

use crate::core::RpcError;
use crate::core::RpcLimits;
use crate::core::{
    FromParam, HexOrDecimal, MineOptions, Params, Percentiles, StorageSlot, TxObject,
};
use crate::transport::envelope::{Envelope, Item, handle_with, parse_body};

/// Cases per property: `HEARTH_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("HEARTH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn runner(default: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Codes the envelope itself may answer with.
const ENVELOPE_CODES: [i32; 3] = [-32700, -32600, -32005];

/// Field names the core methods read, so generated objects hit real decoders.
const KEYS: &[&str] = &[
    "from",
    "to",
    "gas",
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "value",
    "data",
    "input",
    "nonce",
    "chainId",
    "accessList",
    "type",
    "blockHash",
    "blockNumber",
    "requireCanonical",
    "fromBlock",
    "toBlock",
    "address",
    "topics",
    "balance",
    "code",
    "state",
    "stateDiff",
    "number",
    "time",
    "baseFee",
    "blocks",
    "interval",
    "timestamp",
    "storageKeys",
    "gasLimit",
    "coinbase",
    "random",
    "blobBaseFee",
    "jsonrpc",
    "id",
    "method",
    "params",
];

/// Strings shaped like what JSON-RPC carries: quantities (with and without leading zeros,
/// over 256 bits), data of odd and even length, addresses and hashes of wrong lengths, tags.
fn hexish() -> impl Strategy<Value = String> {
    let digits = proptest::collection::vec(
        prop_oneof![Just('0'), Just('f'), Just('a'), Just('9'), Just('g'), any::<char>()],
        0..70,
    );
    prop_oneof![
        (prop_oneof![Just("0x"), Just("0X"), Just(""), Just("0x0")], digits.clone())
            .prop_map(|(p, d)| format!("{p}{}", d.into_iter().collect::<String>())),
        (0usize..70).prop_map(|n| format!("0x{}", "f".repeat(n))),
        (0usize..70).prop_map(|n| format!("0x1{}", "0".repeat(n))),
        Just("latest".to_owned()),
        Just("pending".to_owned()),
        Just("earliest".to_owned()),
        Just("safe".to_owned()),
        Just("finalized".to_owned()),
        any::<u64>().prop_map(|n| format!("{n:#x}")),
        any::<u64>().prop_map(|n| n.to_string()),
        ".{0,12}",
    ]
}

/// Arbitrary JSON, biased toward the shapes params take.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        hexish().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop_oneof![proptest::sample::select(KEYS).prop_map(str::to_owned), ".{0,6}"],
                    inner
                ),
                0..6
            )
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A well-formed request (or batch of them) with arbitrary params.
fn request() -> impl Strategy<Value = Value> {
    let one = || {
        (
            prop_oneof![Just(json!(1)), Just(Value::Null), Just(json!("a")), json_value()],
            prop_oneof![
                Just("eth_call".to_owned()),
                Just("eth_getBalance".to_owned()),
                Just("eth_sendRawTransaction".to_owned()),
                "[a-z_A-Z]{0,24}",
            ],
            json_value(),
            any::<bool>(),
        )
            .prop_map(|(id, method, params, with_id)| {
                let mut request = json!({"jsonrpc": "2.0", "method": method, "params": params});
                if with_id {
                    request["id"] = id;
                }
                request
            })
    };
    prop_oneof![
        3 => one(),
        1 => proptest::collection::vec(one(), 0..5).prop_map(Value::Array),
    ]
}

/// One edit of a serialized body.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Truncate(usize),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), 0usize..8).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0usize..16).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

/// Applies `mutation` to `body`; positions wrap around its length.
fn mutate(body: &mut Vec<u8>, mutation: &Mutation) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match *mutation {
        Mutation::Flip(i, b) if !body.is_empty() => {
            let i = at(i, body.len());
            body[i] ^= b.max(1);
        }
        Mutation::Flip(..) => {}
        Mutation::Insert(i, b) => {
            let i = at(i, body.len() + 1);
            body.insert(i, b);
        }
        Mutation::Delete(i, n) => {
            let i = at(i, body.len());
            let end = (i + n).min(body.len());
            body.drain(i..end);
        }
        Mutation::Truncate(i) => body.truncate(at(i, body.len() + 1)),
        Mutation::Duplicate(i, n) => {
            let i = at(i, body.len());
            let end = (i + n).min(body.len());
            let copy = body[i..end].to_vec();
            body.splice(i..i, copy);
        }
    }
}

/// Every error the envelope can produce for `body` carries an envelope code.
fn check_envelope(body: &[u8]) -> Result<(), TestCaseError> {
    let codes = |error: &RpcError| {
        prop_assert!(ENVELOPE_CODES.contains(&error.code()), "{error}: code {}", error.code());
        Ok(())
    };
    match parse_body(body, &RpcLimits::default()) {
        Envelope::Reject(error) => codes(&error)?,
        Envelope::Single(Item::Invalid { error, .. }) => codes(&error)?,
        Envelope::Single(Item::Call(_)) => {}
        Envelope::Batch(items) => {
            prop_assert!(!items.is_empty(), "an empty batch is rejected whole");
            for item in items {
                if let Item::Invalid { error, .. } = item {
                    codes(&error)?;
                }
            }
        }
    }
    Ok(())
}

/// Decodes `params` as a few core methods would; the error, if any.
fn decode_some(method: &str, params: Option<Value>) -> Result<Value, RpcError> {
    let params = Params::new(params);
    match method {
        "eth_call" => {
            params.at_most(3)?;
            let tx: TxObject = params.required(0)?;
            let _: Option<BlockId> = params.optional(1)?;
            let _: Option<StateOverrides> = params.optional(2)?;
            let _ = tx.into_call_request(50_000_000);
        }
        "eth_getBalance" => {
            let _: Address = params.required(0)?;
            let _: Option<BlockId> = params.optional(1)?;
        }
        "eth_sendRawTransaction" => {
            let _: Bytes = params.required(0)?;
        }
        other => return Err(RpcError::MethodNotFound(other.to_owned())),
    }
    Ok(Value::Null)
}

/// Runs `body` through the whole envelope with [`decode_some`] as the method table and checks
/// the reply: valid JSON-RPC 2.0, one answer per request with an id, standard codes only.
fn check_reply(body: &[u8], codes: &RefCell<BTreeMap<i64, u64>>) -> Result<(), TestCaseError> {
    let reply = handle_with(&RpcLimits::default(), body, |method, params| async move {
        decode_some(&method, params)
    })
    .now_or_never()
    .expect("the stub method table never waits");
    let Some(encoded) = reply.body else {
        prop_assert!(reply.status == 204 || reply.status == 413, "no body with {}", reply.status);
        return Ok(());
    };
    let value: Value = serde_json::from_slice(&encoded).expect("the reply is JSON");
    let answers = match value {
        Value::Array(answers) => answers,
        single => vec![single],
    };
    for answer in answers {
        prop_assert_eq!(&answer["jsonrpc"], "2.0");
        prop_assert!(answer.get("id").is_some(), "{}", answer);
        match (answer.get("result"), answer.get("error")) {
            (Some(_), None) => *codes.borrow_mut().entry(0).or_default() += 1,
            (None, Some(error)) => {
                let code = error["code"].as_i64().expect("numeric code");
                *codes.borrow_mut().entry(code).or_default() += 1;
                prop_assert!(
                    [-32700, -32600, -32601, -32602, -32005].contains(&code),
                    "unexpected code in {}",
                    answer
                );
                prop_assert!(error["message"].is_string());
            }
            _ => prop_assert!(false, "neither or both of result and error: {}", answer),
        }
    }
    Ok(())
}

/// Runs `cases` of `strategy` through `test`, then prints how many answers carried each code
/// (0: a result) and how long it took, for BENCHMARKS.md.
fn run_counting<S: Strategy>(
    name: &str,
    default: u32,
    strategy: &S,
    test: impl Fn(S::Value, &RefCell<BTreeMap<i64, u64>>) -> Result<(), TestCaseError>,
) {
    let codes = RefCell::new(BTreeMap::new());
    let started = std::time::Instant::now();
    let result = runner(default).run(strategy, |value| test(value, &codes));
    eprintln!("{name}: codes (0 = result) {:?} in {:?}", codes.borrow(), started.elapsed());
    result.unwrap();
}

/// Bodies of arbitrary bytes, or of JSON tokens in arbitrary order (which reach the envelope
/// rules far more often than random bytes do).
fn arbitrary_body() -> impl Strategy<Value = Vec<u8>> {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\"",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"eth_call\"",
        "\"eth_sendRawTransaction\"",
        "\"0x1\"",
        "1",
        "-1",
        "1e999",
        "null",
        "true",
        "\"\\u0000\"",
        "\"\\ud800\"",
        "\u{feff}",
    ];
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        proptest::collection::vec(proptest::sample::select(TOKENS), 0..40)
            .prop_map(|tokens| tokens.concat().into_bytes()),
    ]
}

#[test]
fn arbitrary_bytes_never_break_the_envelope() {
    let strategy = arbitrary_body();
    run_counting("arbitrary bodies", 2_000, &strategy, |body, codes| {
        check_envelope(&body)?;
        check_reply(&body, codes)
    });
}

#[test]
fn mutated_requests_never_break_the_envelope() {
    let strategy = (request(), proptest::collection::vec(mutation(), 0..4));
    run_counting("mutated requests", 2_000, &strategy, |(request, mutations), codes| {
        let mut body = serde_json::to_vec(&request).expect("encodes");
        for m in &mutations {
            mutate(&mut body, m);
        }
        check_envelope(&body)?;
        check_reply(&body, codes)
    });
}

/// Whether the early refusal's scans (`shed`) agree with the envelope's parser on `body`:
/// whenever they find a well-shaped executor call (or a batch of only such calls) in a body
/// that is valid JSON, the parser finds the same requests, in order, with the same methods and
/// ids. A scan may give up where the parser would not (the body then goes the ordinary way),
/// never the reverse.
fn check_shed_scan(body: &[u8], hits: &RefCell<BTreeMap<i64, u64>>) -> Result<(), TestCaseError> {
    use crate::transport::shed::{executor_shape, for_each_item, scan_head, valid_json};
    if !valid_json(body) {
        return Ok(());
    }
    let limits = RpcLimits::default();
    let mut scanned = Vec::new();
    let batch = for_each_item(body, limits.max_batch_items, |head| {
        scanned.push((head.method.to_owned(), head.id.to_vec()));
        executor_shape(&head).then_some(())
    });
    let single = scan_head(body).filter(executor_shape);
    let items = match (batch, single, parse_body(body, &limits)) {
        (Some(n), None, Envelope::Batch(items)) if n == items.len() => items,
        (None, Some(head), Envelope::Single(item)) => {
            scanned = vec![(head.method.to_owned(), head.id.to_vec())];
            vec![item]
        }
        (None, None, _) => Vec::new(),
        (batch, single, envelope) => {
            let why = format!("scanned {batch:?} / {single:?} but parsed {envelope:?}");
            return Err(TestCaseError::fail(why));
        }
    };
    // 0: the scans gave up; otherwise how many requests they found.
    *hits.borrow_mut().entry(items.len() as i64).or_default() += 1;
    for (item, (method, id)) in items.into_iter().zip(scanned) {
        let Item::Call(request) = item else {
            return Err(TestCaseError::fail(format!("{method} scanned, but invalid: {item:?}")));
        };
        let id: Value = serde_json::from_slice(&id).expect("a scanned id is JSON");
        prop_assert_eq!((request.method, request.id), (method, Some(id)));
    }
    Ok(())
}

/// Executor calls (and a few others) with odd ids and params, alone or in batches.
fn shed_body() -> impl Strategy<Value = Vec<u8>> {
    let one = || {
        (
            proptest::sample::select(
                &[
                    "eth_call",
                    "eth_estimateGas",
                    "eth_createAccessList",
                    "eth_simulateV1",
                    "eth_blockNumber",
                ][..],
            ),
            proptest::sample::select(
                &[
                    "1",
                    "-5",
                    "null",
                    r#""a""#,
                    r#""x\"y""#,
                    r#""\u0041""#,
                    "1.5",
                    "[1]",
                    "",
                    "-0",
                    "123456789012345678901234567890",
                ][..],
            ),
            proptest::collection::vec(json_value(), 0..5),
        )
            .prop_map(|(method, id, args)| {
                let params = serde_json::to_string(&args).expect("encodes");
                let params =
                    params.replacen('[', r#"[{"to":"0x01"},"#, usize::from(!args.is_empty()));
                let id = if id.is_empty() { String::new() } else { format!(r#""id":{id},"#) };
                format!(r#"{{"jsonrpc":"2.0",{id}"method":"{method}","params":{params}}}"#)
            })
    };
    let body = prop_oneof![
        1 => one(),
        3 => proptest::collection::vec(one(), 0..6)
            .prop_map(|items| format!("[{}]", items.join(" , "))),
    ];
    (body, proptest::collection::vec(mutation(), 0..3)).prop_map(|(body, edits)| {
        let mut body = body.into_bytes();
        for m in &edits {
            mutate(&mut body, m);
        }
        body
    })
}

#[test]
fn the_shed_scans_find_what_the_parser_finds() {
    let strategy = prop_oneof![shed_body(), arbitrary_body()];
    run_counting("shed scans", 2_000, &strategy, |body, hits| check_shed_scan(&body, hits));
}

/// Decodes `value` as `T` directly and as argument 0 and 1 of a request: no panic, and a
/// refusal is always -32602.
fn decodes<T: FromParam>(
    value: &Value,
    codes: &RefCell<BTreeMap<i64, u64>>,
) -> Result<(), TestCaseError> {
    let _ = T::from_param(value);
    let count = |result: Result<(), RpcError>| {
        let code = match result {
            Ok(()) => 0,
            Err(error) => {
                prop_assert_eq!(error.code(), -32602, "{}", error);
                -32602
            }
        };
        *codes.borrow_mut().entry(code).or_default() += 1;
        Ok(())
    };
    for params in [json!([value]), json!([null, value])] {
        let params = Params::new(Some(params));
        for index in 0..2 {
            count(params.optional::<T>(index).map(drop))?;
        }
        count(params.required::<T>(1).map(drop))?;
    }
    Ok(())
}

#[test]
fn every_argument_type_refuses_garbage_with_invalid_params() {
    run_counting("params", 2_000, &json_value(), |value, codes| {
        decodes::<U256>(&value, codes)?;
        decodes::<u64>(&value, codes)?;
        decodes::<u128>(&value, codes)?;
        decodes::<Address>(&value, codes)?;
        decodes::<B256>(&value, codes)?;
        decodes::<B128>(&value, codes)?;
        decodes::<String>(&value, codes)?;
        decodes::<Bytes>(&value, codes)?;
        decodes::<bool>(&value, codes)?;
        decodes::<AccessList>(&value, codes)?;
        decodes::<StorageSlot>(&value, codes)?;
        decodes::<HexOrDecimal>(&value, codes)?;
        decodes::<BlockNumberOrTag>(&value, codes)?;
        decodes::<BlockId>(&value, codes)?;
        decodes::<StateOverrides>(&value, codes)?;
        decodes::<BlockOverrides>(&value, codes)?;
        decodes::<Filter>(&value, codes)?;
        decodes::<Percentiles>(&value, codes)?;
        decodes::<MineOptions>(&value, codes)?;
        decodes::<TxObject>(&value, codes)?;
        if let Ok(tx) = TxObject::from_param(&value) {
            let _ = tx.into_call_request(u64::MAX);
        }
        Ok(())
    });
}
