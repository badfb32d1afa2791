//! A transaction's call tree with names: each call's contract (its code matched against the
//! developer's artifacts), function and arguments, return values or revert reason, and each
//! event by name; console calls read as their line. Filled into revm-inspectors' arena, which
//! its trace writer prints as forge and anvil do, and turned into JSON for
//! `hearth_traceTransactionDecoded`.

use alloy_dyn_abi::{EventExt as _, FunctionExt as _, JsonAbiExt as _};
use alloy_primitives::{Address, Bytes};
use hearth_messages::console::CONSOLE_ADDRESS;
use revm_inspectors::tracing::CallTraceArena;
use revm_inspectors::tracing::types::{
    CallTraceNode, DecodedCallData, DecodedCallLog, DecodedCallTrace,
};
use serde_json::{Value, json};

use super::artifacts::{Artifacts, Contract};
use super::revert::{revert_reason, token};

/// Fills in the names `artifacts` know; `code_at` gives the code at an address (the state
/// after the transaction).
pub fn decode_arena(
    arena: &mut CallTraceArena,
    artifacts: &Artifacts,
    code_at: impl Fn(Address) -> Option<Bytes>,
) {
    for node in arena.nodes_mut() {
        let trace = &node.trace;
        let code = if trace.kind.is_any_create() {
            trace.success.then(|| trace.output.clone())
        } else {
            code_at(trace.address)
        };
        let contract = code.as_deref().and_then(|code| artifacts.contract_of(code));
        let decoded = decode_call(node, artifacts, contract);
        node.trace.decoded = Some(Box::new(decoded));
        for log in &mut node.logs {
            let Some(topic) = log.raw_log.topics().first().copied() else { continue };
            let event = artifacts.events(topic, contract).find_map(|event| {
                let values = event.decode_log(&log.raw_log).ok()?;
                let (mut indexed, mut body) = (values.indexed.into_iter(), values.body.into_iter());
                let params = event
                    .inputs
                    .iter()
                    .map(|input| {
                        let value = if input.indexed { indexed.next() } else { body.next() };
                        (input.name.clone(), value.as_ref().map(token).unwrap_or_default())
                    })
                    .collect();
                Some(DecodedCallLog { name: Some(event.name.clone()), params: Some(params) })
            });
            log.decoded = event.map(Box::new);
        }
    }
}

fn decode_call(
    node: &CallTraceNode,
    artifacts: &Artifacts,
    contract: Option<&Contract>,
) -> DecodedCallTrace {
    let trace = &node.trace;
    let mut decoded =
        DecodedCallTrace { label: contract.map(|c| c.name.clone()), ..Default::default() };
    if trace.address == CONSOLE_ADDRESS && !trace.kind.is_any_create() {
        decoded.label = Some("console".into());
        if let Some((signature, values)) = crate::console::decode_call(&trace.data) {
            let args = values.iter().map(token).collect();
            decoded.call_data = Some(DecodedCallData { signature, args });
        }
        return decoded;
    }
    if trace.kind.is_any_create() {
        if !trace.success {
            decoded.return_data = Some(revert_reason(&trace.output, &artifacts.errors));
        }
        return decoded;
    }
    let Some((selector, args)) = trace.data.split_first_chunk::<4>() else { return decoded };
    let function = artifacts
        .functions(*selector, contract)
        .find_map(|f| Some((f, f.abi_decode_input(args).ok()?)));
    if let Some((function, values)) = function {
        decoded.call_data = Some(DecodedCallData {
            signature: function.signature(),
            args: values.iter().map(token).collect(),
        });
        if trace.success {
            decoded.return_data = function
                .abi_decode_output(&trace.output)
                .ok()
                .filter(|values| !values.is_empty())
                .map(|values| values.iter().map(token).collect::<Vec<_>>().join(", "));
        }
    }
    if !trace.success {
        decoded.return_data = Some(revert_reason(&trace.output, &artifacts.errors));
    }
    decoded
}

/// The decoded tree as JSON, calls nested: what `hearth_traceTransactionDecoded` answers.
pub fn arena_json(arena: &CallTraceArena) -> Value {
    node_json(arena.nodes(), 0)
}

fn node_json(nodes: &[CallTraceNode], index: usize) -> Value {
    let node = &nodes[index];
    let trace = &node.trace;
    let decoded = trace.decoded.as_deref();
    let call = decoded.and_then(|d| d.call_data.as_ref());
    let logs: Vec<Value> = node
        .logs
        .iter()
        .map(|log| match log.decoded.as_deref() {
            Some(DecodedCallLog { name: Some(name), params }) => json!({
                "address": log.address,
                "event": name,
                "params": params.iter().flatten().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
            }),
            _ => json!({
                "address": log.address,
                "topics": log.raw_log.topics(),
                "data": log.raw_log.data,
            }),
        })
        .collect();
    let calls: Vec<Value> = node.children.iter().map(|&child| node_json(nodes, child)).collect();
    json!({
        "type": trace.kind.to_string(),
        "from": trace.caller,
        "to": trace.address,
        "contract": decoded.and_then(|d| d.label.clone()),
        "function": call.map(|c| c.signature.clone()),
        "args": call.map(|c| c.args.clone()),
        "input": trace.data,
        "value": trace.value,
        "gasUsed": alloy_primitives::U64::from(trace.gas_used),
        "output": trace.output,
        "success": trace.success,
        "returns": if trace.success { decoded.and_then(|d| d.return_data.clone()) } else { None },
        "error": if trace.success { None } else { decoded.and_then(|d| d.return_data.clone()) },
        "logs": logs,
        "calls": calls,
    })
}

/// The tree as forge and anvil print it (no colours unless `colors`).
pub fn arena_text(arena: &CallTraceArena, colors: bool) -> String {
    use revm_inspectors::tracing::{TraceWriter, TraceWriterConfig};
    let choice = if colors {
        revm_inspectors::ColorChoice::Always
    } else {
        revm_inspectors::ColorChoice::Never
    };
    let mut writer =
        TraceWriter::with_config(Vec::new(), TraceWriterConfig::new()).use_colors(choice);
    // Writing to memory cannot fail.
    let _ = writer.write_arena(arena);
    String::from_utf8_lossy(&writer.into_writer()).into_owned()
}
