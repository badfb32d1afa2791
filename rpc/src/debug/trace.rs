//! Geth-style tracing: debug_traceTransaction, debug_traceCall, debug_traceBlockByNumber,
//! debug_traceBlockByHash and debug_traceBlock (RLP), run on the executor pool like eth_call.
//!
//! The tracer options are geth's: no `tracer` (or `""`) is the struct logger (`enableMemory`,
//! `disableStack`, `disableStorage`, `enableReturnData`, `limit`); the built-in tracers are
//! revm-inspectors' (callTracer, prestateTracer, 4byteTracer, noopTracer, flatCallTracer,
//! muxTracer, erc7562Tracer). A JavaScript tracer, an unknown tracer name or a malformed
//! configuration is -32602 with what to change. `timeout` is a Go duration (`"5s"`, `"500ms"`),
//! 5 s by default, at most [`MAX_TRACER_TIMEOUT`]; a trace that runs past it is -32002. An
//! answer larger than the response cap is -32005 (the executor stops as soon as it knows).
//! As geth: an unknown transaction is -32000 "transaction not found", an unknown block -32000
//! "block ... not found", block 0 -32000 "genesis is not traceable".

use std::sync::Arc;
use std::time::Duration;

use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{B256, Bytes};
use alloy_rlp::Decodable;
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use alloy_rpc_types_trace::geth::{
    GethDebugBuiltInTracerType, GethDebugTracerType, GethDebugTracingOptions,
};
use hearth_messages::executor::{BlockOverrides, StateOverrides};
use hearth_messages::trace::{Trace, TraceBudget, TraceJob};
use serde_json::Value;

use crate::core::Reply;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{FromParam, Params, TxObject};
use crate::core::{head, state_block, tag_number};

/// A tracer's timeout when its options name none (geth's).
pub(crate) const DEFAULT_TRACER_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest `timeout` a request may ask for: one trace must not hold an executor thread
/// for longer.
pub(crate) const MAX_TRACER_TIMEOUT: Duration = Duration::from_secs(60);

/// The built-in tracers, as their names are written in a request.
const BUILT_IN: &str = "callTracer, prestateTracer, 4byteTracer, noopTracer, flatCallTracer, \
                        muxTracer, erc7562Tracer, or none for the struct logger";

/// Validated tracer options and the timeout they ask for.
#[derive(Debug, Clone)]
pub(crate) struct TraceOptions {
    options: GethDebugTracingOptions,
    timeout: Duration,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self { options: GethDebugTracingOptions::default(), timeout: DEFAULT_TRACER_TIMEOUT }
    }
}

impl FromParam for TraceOptions {
    fn from_param(value: &Value) -> Result<Self, String> {
        if !value.is_object() {
            return Err(format!("expected a tracer options object, got {value}"));
        }
        let options: GethDebugTracingOptions =
            serde_json::from_value(mux_without_empty_configs(value)).map_err(|e| e.to_string())?;
        check_tracer(&options)?;
        let timeout = match &options.timeout {
            None => DEFAULT_TRACER_TIMEOUT,
            Some(text) => {
                let timeout = parse_go_duration(text).map_err(|e| format!("timeout: {e}"))?;
                if timeout.is_zero() || timeout > MAX_TRACER_TIMEOUT {
                    return Err(format!(
                        "timeout: {text} is out of range; give more than 0s and at most {}s",
                        MAX_TRACER_TIMEOUT.as_secs()
                    ));
                }
                timeout
            }
        };
        Ok(Self { options, timeout })
    }
}

/// The options with a muxTracer's `{}` configurations of tracers that take none (4byteTracer,
/// noopTracer) made `null`: geth ignores them, revm-inspectors refuses them.
fn mux_without_empty_configs(value: &Value) -> Value {
    let mut value = value.clone();
    if value.get("tracer").and_then(Value::as_str) == Some("muxTracer")
        && let Some(Value::Object(inner)) = value.get_mut("tracerConfig")
    {
        for (name, config) in inner.iter_mut() {
            let takes_none = matches!(name.as_str(), "4byteTracer" | "noopTracer");
            if takes_none && config.as_object().is_some_and(|c| c.is_empty()) {
                *config = Value::Null;
            }
        }
    }
    value
}

/// Refuses what no executor could run: a JavaScript tracer, an unknown name, a configuration
/// the named tracer cannot read. (The executor refuses a bad muxTracer inner tracer the same
/// way.)
fn check_tracer(options: &GethDebugTracingOptions) -> Result<(), String> {
    let config = &options.tracer_config;
    let tracer = match &options.tracer {
        None => return Ok(()),
        Some(GethDebugTracerType::JsTracer(name)) if name.is_empty() => return Ok(()),
        Some(GethDebugTracerType::JsTracer(code)) => {
            // A bare name that is none of the built-in ones is a typo, not a program.
            let is_name = code.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            return Err(if is_name {
                format!("unknown tracer {code:?}; the built-in tracers are {BUILT_IN}")
            } else {
                format!("JavaScript tracers are not supported; use a built-in tracer: {BUILT_IN}")
            });
        }
        Some(GethDebugTracerType::BuiltInTracer(tracer)) => tracer,
    };
    let checked = match tracer {
        GethDebugBuiltInTracerType::CallTracer => config.clone().into_call_config().map(drop),
        GethDebugBuiltInTracerType::PreStateTracer => {
            config.clone().into_pre_state_config().map(drop)
        }
        GethDebugBuiltInTracerType::MuxTracer => config.clone().into_mux_config().map(drop),
        GethDebugBuiltInTracerType::FlatCallTracer => {
            config.clone().into_flat_call_config().map(drop)
        }
        _ => Ok(()),
    };
    checked.map_err(|e| format!("tracerConfig: {e}"))
}

/// A Go duration (`time.ParseDuration`): decimal numbers each with a unit (`ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h`), e.g. `"1.5s"`, `"1m30s"`, `"300ms"`; `"0"` alone is zero.
pub(crate) fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}; write e.g. \"5s\" or \"500ms\"");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() || rest.starts_with('-') {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let (number, after) = rest.split_at(digits);
        if number.is_empty() || number == "." {
            return Err(bad());
        }
        let number: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = after;
    }
    // Anything this large is refused by the range check anyway.
    Duration::try_from_secs_f64(total.min(1e9)).map_err(|_| bad())
}

/// The budget of one geth trace: the response cap and the options' timeout.
fn budget(ctx: &RpcContext, options: &TraceOptions) -> TraceBudget {
    TraceBudget { max_bytes: ctx.limits.max_response_bytes, timeout: Some(options.timeout) }
}

/// Runs `job` on the pool and answers its JSON as is.
pub(crate) async fn run(
    ctx: &RpcContext,
    job: TraceJob,
    budget: TraceBudget,
) -> Result<Reply, RpcError> {
    let output = ctx.executor.trace(Trace { job, budget }).await?;
    Ok(Reply::Encoded(output.0))
}

/// Where transaction `hash` is: (block, index), or geth's "transaction not found".
pub(crate) fn locate(ctx: &RpcContext, hash: &B256) -> Result<(u64, usize), RpcError> {
    let (block, index) = ctx.chain.tx_location(hash)?.ok_or(RpcError::TxNotFound)?;
    Ok((block, index as usize))
}

/// debug_traceTransaction: `[hash, options?]`.
pub(crate) async fn trace_transaction(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let hash: B256 = p.required(0)?;
    let options: TraceOptions = p.optional(1)?.unwrap_or_default();
    let (block, index) = locate(ctx, &hash)?;
    let budget = budget(ctx, &options);
    let options = Box::new(options.options);
    run(ctx, TraceJob::GethTransaction { block, index, options }, budget).await
}

/// hearth_traceTransactionDecoded: `[hash]`, the transaction's call tree with names from
/// `--artifacts` and the standard interfaces (contract, function, arguments, return values,
/// revert reasons, events), as JSON. debug_traceTransaction's callTracer stays geth's.
pub(crate) async fn trace_decoded(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(1)?;
    let hash: B256 = p.required(0)?;
    let (block, index) = locate(ctx, &hash)?;
    let budget = TraceBudget { max_bytes: ctx.limits.max_response_bytes, timeout: None };
    run(ctx, TraceJob::Decoded { block, index }, budget).await
}

/// A stored block to trace, by number or tag: geth's errors for one after the head and for
/// block 0.
pub(crate) fn traceable_block(ctx: &RpcContext, tag: BlockNumberOrTag) -> Result<u64, RpcError> {
    let number = tag_number(ctx, tag, head(ctx)?)?;
    if ctx.chain.header(number)?.is_none() {
        return Err(RpcError::BlockNotFound(format!("#{number}")));
    }
    if number == 0 {
        return Err(RpcError::GenesisNotTraceable);
    }
    Ok(number)
}

/// debug_traceBlockByNumber: `[number, options?]`.
pub(crate) async fn trace_block_by_number(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let tag: BlockNumberOrTag = p.required(0)?;
    let options: TraceOptions = p.optional(1)?.unwrap_or_default();
    let block = traceable_block(ctx, tag)?;
    trace_block(ctx, block, options).await
}

/// debug_traceBlockByHash: `[hash, options?]`.
pub(crate) async fn trace_block_by_hash(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let hash: B256 = p.required(0)?;
    let options: TraceOptions = p.optional(1)?.unwrap_or_default();
    let number =
        ctx.chain.block_number(&hash)?.ok_or_else(|| RpcError::BlockNotFound(hash.to_string()))?;
    if number == 0 {
        return Err(RpcError::GenesisNotTraceable);
    }
    trace_block(ctx, number, options).await
}

async fn trace_block(
    ctx: &RpcContext,
    block: u64,
    options: TraceOptions,
) -> Result<Reply, RpcError> {
    let budget = budget(ctx, &options);
    run(ctx, TraceJob::GethBlock { block, options: Box::new(options.options) }, budget).await
}

/// debug_traceBlock: `[rlp, options?]`, a whole block (header, transactions, ommers,
/// withdrawals) whose parent is stored; it need not be stored itself.
pub(crate) async fn trace_raw_block(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(2)?;
    let rlp: Bytes = p.required(0)?;
    let options: TraceOptions = p.optional(1)?.unwrap_or_default();
    let block = Block::<TxEnvelope>::decode(&mut rlp.as_ref())
        .map_err(|e| RpcError::BlockDecode(e.to_string()))?;
    if block.header.number == 0 {
        return Err(RpcError::GenesisNotTraceable);
    }
    let parent_hash = block.header.parent_hash;
    let parent = ctx
        .chain
        .block_number(&parent_hash)?
        .ok_or_else(|| RpcError::BlockNotFound(format!("{parent_hash} (the parent)")))?;
    if parent + 1 != block.header.number {
        return Err(RpcError::InvalidParams(format!(
            "invalid argument 0: block number {} does not follow its parent, block {parent}",
            block.header.number
        )));
    }
    let budget = budget(ctx, &options);
    let options = Box::new(options.options);
    run(ctx, TraceJob::GethRawBlock { block: Box::new(block), parent, options }, budget).await
}

/// debug_traceCall's third argument: geth's `TraceCallConfig`, the tracer options with
/// `stateOverrides` and `blockOverrides` beside them.
#[derive(Debug, Default)]
struct TraceCallOptions {
    trace: TraceOptions,
    state_overrides: Option<StateOverrides>,
    block_overrides: Option<BlockOverrides>,
}

impl FromParam for TraceCallOptions {
    fn from_param(value: &Value) -> Result<Self, String> {
        let Some(object) = value.as_object() else {
            return Err(format!("expected a tracer options object, got {value}"));
        };
        let mut rest = object.clone();
        let mut take = |name: &str| rest.remove(name).filter(|v| !v.is_null());
        let state_overrides = take("stateOverrides")
            .map(|v| StateOverrides::from_param(&v).map_err(|e| format!("stateOverrides: {e}")))
            .transpose()?;
        let block_overrides = take("blockOverrides")
            .map(|v| BlockOverrides::from_param(&v).map_err(|e| format!("blockOverrides: {e}")))
            .transpose()?;
        if take("txIndex").is_some() {
            return Err("txIndex is not supported: debug_traceCall runs on the state after the \
                        block"
                .to_owned());
        }
        let trace = TraceOptions::from_param(&Value::Object(rest))?;
        Ok(Self { trace, state_overrides, block_overrides })
    }
}

/// debug_traceCall: `[callObject, block?, options?]`, run as eth_call runs it.
pub(crate) async fn trace_call(ctx: &RpcContext, p: &Params) -> Result<Reply, RpcError> {
    p.at_most(3)?;
    let tx: TxObject = p.required(0)?;
    let block: BlockId = p.optional(1)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let options: TraceCallOptions = p.optional(2)?.unwrap_or_default();
    let block = state_block(ctx, block)?;
    let mut request = tx.into_call_request(ctx.limits.gas_cap);
    request.state_overrides = options.state_overrides.filter(|o| !o.is_empty()).map(Arc::new);
    request.block_overrides = options.block_overrides;
    let budget = budget(ctx, &options.trace);
    let job = TraceJob::GethCall {
        request: Box::new(request),
        block,
        options: Box::new(options.trace.options),
    };
    run(ctx, job, budget).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn go_durations_parse_as_geth_does() {
        let ms = Duration::from_millis;
        assert_eq!(parse_go_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_go_duration("500ms"), Ok(ms(500)));
        assert_eq!(parse_go_duration("1.5s"), Ok(ms(1500)));
        assert_eq!(parse_go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("2500us"), Ok(ms(2) + Duration::from_micros(500)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "5", "s", "-1s", "5 s", "1.2.3s", "5sec", "ms5", "."] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn tracer_options_are_checked_where_they_are_parsed() {
        let ok = |v: Value| TraceOptions::from_param(&v).expect("valid");
        let err = |v: Value| TraceOptions::from_param(&v).expect_err("invalid");
        assert_eq!(ok(json!({})).timeout, DEFAULT_TRACER_TIMEOUT);
        assert_eq!(ok(json!({"timeout": "250ms"})).timeout, Duration::from_millis(250));
        ok(json!({"tracer": "callTracer", "tracerConfig": {"onlyTopCall": true, "withLog": true}}));
        ok(json!({"tracer": "prestateTracer", "tracerConfig": {"diffMode": true}}));
        ok(json!({"tracer": ""}));
        ok(json!({"enableMemory": true, "disableStack": true, "limit": 10}));
        ok(json!({"tracer": "muxTracer", "tracerConfig": {"callTracer": {}, "4byteTracer": null}}));

        assert!(err(json!({"tracer": "fooTracer"})).contains("unknown tracer \"fooTracer\""));
        let js = err(json!({"tracer": "{data: [], step: function() {}}"}));
        assert!(js.contains("JavaScript tracers are not supported"), "{js}");
        assert!(
            err(json!({"tracer": "callTracer", "tracerConfig": {"onlyTopCall": "yes"}}))
                .starts_with("tracerConfig:")
        );
        assert!(err(json!({"enableMemory": "yes"})).contains("invalid type"));
        assert!(err(json!({"limit": -1})).contains("invalid value"));
        assert!(err(json!({"timeout": "forever"})).contains("invalid duration"));
        assert!(err(json!({"timeout": "2m"})).contains("out of range"));
        assert!(err(json!({"timeout": "0s"})).contains("out of range"));
        assert!(err(json!("callTracer")).contains("expected a tracer options object"));
    }

    #[test]
    fn trace_call_options_take_overrides_beside_the_tracer() {
        let addr = "0x00000000000000000000000000000000000000aa";
        let options = TraceCallOptions::from_param(&json!({
            "tracer": "callTracer",
            "stateOverrides": {addr: {"balance": "0x1"}},
            "blockOverrides": {"number": "0x10"},
        }))
        .expect("valid");
        assert_eq!(options.state_overrides.map(|o| o.len()), Some(1));
        assert_eq!(options.block_overrides.and_then(|o| o.number), Some(16));
        let err = TraceCallOptions::from_param(&json!({"txIndex": "0x1"})).expect_err("refused");
        assert!(err.contains("txIndex is not supported"), "{err}");
        let err = TraceCallOptions::from_param(&json!({"stateOverrides": {addr: {"x": 1}}}))
            .expect_err("refused");
        assert!(err.starts_with("stateOverrides:"), "{err}");
    }
}
