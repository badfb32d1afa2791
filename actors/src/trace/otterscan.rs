//! Otterscan's views of one transaction (ots_traceTransaction, ots_getInternalOperations,
//! ots_getTransactionError), shaped as Erigon answers them, from the call tree revm-inspectors
//! records while the transaction is replayed in its block.
//!
//! Frames come in the order they opened (the arena's), a self-destruct right after the
//! frames its contract opened, one level below the entry before it (Erigon's tracer gives the
//! SELFDESTRUCT instruction the depth of the last entry plus one); frames that reverted are
//! kept, and precompile calls left out, as in Erigon.

use alloy_primitives::{Address, Bytes, U256};
use hearth_messages::ExecError;
use hearth_messages::trace::{OtsView, TraceBudget};
use revm::context::result::ExecutionResult;
use revm_inspectors::tracing::types::{CallKind, CallTraceNode};
use revm_inspectors::tracing::{CallTraceArena, TracingInspectorConfig};
use serde::Serialize;

use super::{Bounds, JsonOut, check_index, parity_tracer};
use crate::executor::ExecutorActor;

/// One entry of ots_traceTransaction.
#[derive(Debug, Serialize)]
struct TraceEntry {
    #[serde(rename = "type")]
    kind: &'static str,
    depth: usize,
    from: Address,
    to: Address,
    /// `null` for STATICCALL and DELEGATECALL, which move no value.
    value: Option<U256>,
    input: Bytes,
    output: Bytes,
}

/// One entry of ots_getInternalOperations: `type` 0 transfer, 1 self-destruct, 2 create,
/// 3 create2.
#[derive(Debug, Serialize)]
struct Operation {
    #[serde(rename = "type")]
    kind: u8,
    from: Address,
    to: Address,
    value: U256,
}

const TRANSFER: u8 = 0;
const SELF_DESTRUCT: u8 = 1;
const CREATE: u8 = 2;
const CREATE2: u8 = 3;

impl ExecutorActor {
    /// Answers `view` of transaction `index` of stored block `block` into `out`.
    pub(super) fn otterscan(
        &mut self,
        out: &mut JsonOut,
        (block, index): (u64, usize),
        view: OtsView,
        bounds: Bounds,
    ) -> Result<(), ExecError> {
        let replay = self.stored_block(block)?;
        check_index(&replay, index)?;
        let config = match view {
            // Erigon's trace leaves precompile calls out (the tracer then keeps them off the
            // tree); its operations count a value sent to one like any call.
            OtsView::Trace => {
                TracingInspectorConfig::default_parity().set_exclude_precompile_calls(true)
            }
            OtsView::Operations => TracingInspectorConfig::default_parity(),
            OtsView::Error => TracingInspectorConfig::none(),
        };
        self.replay(
            &replay,
            index..=index,
            || parity_tracer(config, bounds),
            |step| match view {
                OtsView::Error => out.value(&revert_data(&step.result.result)),
                OtsView::Trace => {
                    let arena = std::mem::take(step.inspector).into_traces();
                    out.value(&trace_entries(&arena))
                }
                OtsView::Operations => {
                    let arena = std::mem::take(step.inspector).into_traces();
                    out.value(&operations(&arena))
                }
            },
        )
    }
}

impl ExecutorActor {
    /// The accounts each transaction of stored block `block` touched, as its execution in the
    /// block committed them, and the callees of its call frames: what `BlockDraft::touched`
    /// held when the block was made (`ExecDb::note_called`), for the
    /// address index of a store written before the index existed. The block is replayed on its
    /// parent's state, without a time cap.
    pub fn touched_accounts(&mut self, block: u64) -> Result<Vec<Vec<Address>>, ExecError> {
        let replay = self.stored_block(block)?;
        let budget = TraceBudget { max_bytes: usize::MAX, timeout: None };
        let bounds = Bounds::new(budget, None);
        let mut touched = Vec::with_capacity(replay.txs.len());
        self.replay(
            &replay,
            replay.all(),
            || parity_tracer(TracingInspectorConfig::none(), bounds),
            |step| {
                let state = &step.result.state;
                let mut accounts: Vec<Address> = state
                    .iter()
                    .filter(|(_, a)| a.is_touched())
                    .map(|(address, _)| *address)
                    .collect();
                // What the block's call instructions noted: every call frame's callee (a
                // DELEGATECALL's code), reverted ones included.
                let arena = std::mem::take(step.inspector).into_traces();
                accounts.extend(
                    arena
                        .nodes()
                        .iter()
                        .filter(|node| node.trace.depth > 0 && !node.trace.kind.is_any_create())
                        .map(|node| node.trace.address),
                );
                touched.push(accounts);
                Ok(())
            },
        )?;
        Ok(touched)
    }
}

/// What a reverted transaction returned; `0x` for one that succeeded or halted.
fn revert_data(result: &ExecutionResult) -> Bytes {
    match result {
        ExecutionResult::Revert { output, .. } => output.clone(),
        _ => Bytes::new(),
    }
}

/// Every frame of the tree under `arena`'s root, in the order they opened.
fn trace_entries(arena: &CallTraceArena) -> Vec<TraceEntry> {
    let mut entries = Vec::new();
    walk(arena.nodes(), 0, &mut |node, closing| {
        let trace = &node.trace;
        if !closing {
            let value = match trace.kind {
                CallKind::StaticCall | CallKind::DelegateCall => None,
                _ => Some(trace.value),
            };
            entries.push(TraceEntry {
                kind: trace.kind.to_str(),
                depth: trace.depth,
                from: trace.caller,
                to: trace.address,
                value,
                input: trace.data.clone(),
                output: trace.output.clone(),
            });
        } else if let Some(beneficiary) = trace.selfdestruct_refund_target {
            // Erigon's depth: one below the entry appended last (the frame's own, or its last
            // descendant's when it called out before self-destructing).
            let depth = entries.last().map_or(trace.depth, |last| last.depth) + 1;
            entries.push(TraceEntry {
                kind: "SELFDESTRUCT",
                depth,
                from: trace.selfdestruct_address.unwrap_or(trace.address),
                to: beneficiary,
                value: Some(trace.selfdestruct_transferred_value.unwrap_or_default()),
                input: Bytes::new(),
                output: Bytes::new(),
            });
        }
    });
    entries
}

/// The internal operations: value moved by a call below the top frame, contracts created
/// below it, and self-destructs anywhere.
fn operations(arena: &CallTraceArena) -> Vec<Operation> {
    let mut found = Vec::new();
    walk(arena.nodes(), 0, &mut |node, closing| {
        let trace = &node.trace;
        if closing {
            if let Some(beneficiary) = trace.selfdestruct_refund_target {
                found.push(Operation {
                    kind: SELF_DESTRUCT,
                    from: trace.selfdestruct_address.unwrap_or(trace.address),
                    to: beneficiary,
                    value: trace.selfdestruct_transferred_value.unwrap_or_default(),
                });
            }
            return;
        }
        if trace.depth == 0 {
            return;
        }
        let kind = match trace.kind {
            CallKind::Call if !trace.value.is_zero() => TRANSFER,
            CallKind::Create => CREATE,
            CallKind::Create2 => CREATE2,
            _ => return,
        };
        found.push(Operation { kind, from: trace.caller, to: trace.address, value: trace.value });
    });
    found
}

/// Visits `nodes[index]` and its subtree depth first: each node when it opens
/// (`closing == false`), then its children, then the node again as it closes.
fn walk(nodes: &[CallTraceNode], index: usize, visit: &mut impl FnMut(&CallTraceNode, bool)) {
    let Some(node) = nodes.get(index) else { return };
    visit(node, false);
    for &child in &node.children {
        walk(nodes, child, visit);
    }
    visit(node, true);
}
