//! eth_createAccessList on an executor thread, as geth computes it: run the call with an
//! access list, collect what it touches (revm-inspectors' `AccessListInspector`: slots read or
//! written, accounts called or inspected, minus the sender, the recipient or created address
//! and the precompiles), and run it again with that list until the list stops changing. Each
//! run sees the same snapshot; the whole search shares the EVM time cap.

use alloy_eips::eip2930::AccessList;
use hearth_messages::ExecError;
use hearth_messages::access_list::{AccessListOutcome, CreateAccessList};
use revm::context::Context;
use revm::context::evm::Evm;
use revm::context::result::ExecutionResult;
use revm::context_interface::local::FrameStack;
use revm::{InspectEvm, MainContext};
use revm_inspectors::access_list::AccessListInspector;

use crate::exec::{
    ConsoleTap, ExecDb, MovablePrecompiles, TimeCap, capped_instructions, exec_error, halt_message,
};
use crate::executor::ExecutorActor;

impl ExecutorActor {
    /// Serves eth_createAccessList (see the module docs). Public so that tests can drive an
    /// executor without an actor system.
    pub fn create_access_list(
        &mut self,
        msg: CreateAccessList,
    ) -> Result<AccessListOutcome, ExecError> {
        let CreateAccessList { mut request, block } = msg;
        let header = self.db.header(block)?.ok_or(ExecError::UnknownBlock)?;
        let rules = self.rules_at(&header);
        let cap = self.call_gas_cap(rules.spec);
        let gas = request.gas.unwrap_or(cap).min(cap);
        let spec = rules.spec;
        let deadline = self.config.evm_timeout.map(|t| std::time::Instant::now() + t);
        // What the search starts from, as the collector itself would list it.
        let mut previous =
            AccessListInspector::new(request.access_list.clone().unwrap_or_default()).access_list();
        // The first run prints what the call logs to the console; the runs after it would
        // print it again.
        let mut first = true;
        loop {
            request.access_list = Some(previous.clone());
            // eth_call semantics, as for eth_call: unpriced unless a price is given, the
            // nonce unchecked unless given, contract senders allowed, the gas cap bounding.
            let (cfg, block_env, tx) = self.call_env(&request, &header, gas);
            let mut db: ExecDb<'_> = ExecDb::new(self.db.state_at(block), &mut self.codes)
                .with_time_cap(TimeCap::until(deadline));
            let mut precompiles = ConsoleTap::new(MovablePrecompiles::new(spec));
            precompiles.capture(first && self.config.show.console_log);
            if let Some(overrides) = &request.state_overrides {
                precompiles.inner.apply(overrides)?;
                db.apply_overrides(overrides)?;
            }
            let instruction = capped_instructions(spec);
            let mut evm = Evm {
                ctx: Context::mainnet().with_db(db).with_cfg(cfg).with_block(block_env),
                inspector: AccessListInspector::new(previous.clone()),
                instruction,
                precompiles,
                frame_stack: FrameStack::new_prealloc(8),
            };
            let result = evm.inspect_tx(tx).map(|r| r.result).map_err(exec_error);
            let printed = evm.precompiles.take();
            crate::report::call_printed(&self.config.show, "eth_createAccessList", printed);
            first = false;
            let result = result?;
            if evm.ctx.journaled_state.database.time_cap_expired() {
                let timeout_ms = self.config.evm_timeout.unwrap_or_default().as_millis() as u64;
                return Err(ExecError::Timeout { timeout_ms });
            }
            let found: AccessList = evm.inspector.into_access_list();
            if found == previous {
                return Ok(AccessListOutcome {
                    access_list: found,
                    gas_used: result.tx_gas_used(),
                    error: failure(&result),
                });
            }
            previous = found;
        }
    }
}

/// geth's words for a call that failed: "execution reverted" (no reason), or the halt.
fn failure(result: &ExecutionResult) -> Option<String> {
    match result {
        ExecutionResult::Success { .. } => None,
        ExecutionResult::Revert { .. } => Some("execution reverted".to_owned()),
        ExecutionResult::Halt { reason, .. } => Some(halt_message(reason)),
    }
}
