//! eth_callMany: bundles of calls run one after the other on one block's state, each call
//! seeing what the calls before it wrote, each bundle in a block of its own after the previous
//! bundle's. Nothing is written anywhere.
//!
//! Every call runs as eth_call runs it (no fee unless priced, no nonce check unless a nonce is
//! given, the call gas cap), so a bundle answers what the same eth_calls would answer if the
//! calls before them had been mined. As anvil does, the first bundle runs in the block asked
//! for (the next block's fields for `pending`) and each later one in a block one number and one
//! second after; a bundle's block overrides hold for it and the bundles after it.

use std::time::Instant;

use alloy_consensus::Header;
use hearth_messages::ExecError;
use hearth_messages::executor::{BlockOverrides, CallMany, CallOutcome};
use revm::context::evm::Evm;
use revm::context::{CfgEnv, Context};
use revm::context_interface::local::FrameStack;
use revm::{ExecuteCommitEvm, MainContext};

use hearth_messages::trace::BlockForkRules;
use hearth_storage::ChainDb;

use crate::exec::{
    CodeL1, ConsoleTap, ExecConfig, ExecDb, MovablePrecompiles, TimeCap, call_env_under,
    capped_instructions, exec_error, outcome,
};

/// Where a request runs: the store (pinned to one snapshot), the block's header, its rules and
/// the call gas cap under them.
pub(crate) struct At<'a> {
    pub(crate) db: &'a ChainDb,
    pub(crate) header: &'a Header,
    pub(crate) rules: BlockForkRules,
    pub(crate) cap: u64,
}

/// Runs `msg` (see the module docs) at `at`, reading code through `codes`.
pub(crate) fn call_many(
    at: At<'_>,
    codes: &mut CodeL1,
    config: &ExecConfig,
    msg: CallMany,
) -> Result<Vec<Vec<CallOutcome>>, ExecError> {
    let At { db, header, rules, cap } = at;
    let timeout = config.evm_timeout;
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    let mut db: ExecDb<'_> =
        ExecDb::new(db.state_at(msg.block), codes).with_time_cap(TimeCap::until(deadline));
    let mut precompiles = ConsoleTap::new(MovablePrecompiles::new(rules.spec));
    precompiles.capture(config.show.console_log);
    if let Some(overrides) = &msg.state_overrides {
        precompiles.inner.apply(overrides)?;
        db.apply_overrides(overrides)?;
    }
    let instruction = capped_instructions(rules.spec);
    let mut evm = Evm {
        ctx: Context::mainnet().with_db(db).with_cfg(CfgEnv::new_with_spec(rules.spec)),
        inspector: (),
        instruction,
        precompiles,
        frame_stack: FrameStack::new_prealloc(8),
    };
    let mut block = BundleBlock::starting(header, msg.env);
    let (mut budget, mut output_bytes) = (msg.gas_budget, 0usize);
    let mut out = Vec::with_capacity(msg.bundles.len());
    for bundle in msg.bundles {
        if let Some(o) = bundle.block_overrides {
            block.set(o);
        }
        let mut outcomes = Vec::with_capacity(bundle.calls.len());
        for mut request in bundle.calls {
            request.state_overrides = None;
            request.block_overrides = Some(block.fields);
            let gas = request.gas.unwrap_or(cap).min(cap).min(budget);
            let (cfg, block_env, tx) = call_env_under(config, &rules, &request, header, gas);
            evm.ctx.cfg = cfg;
            evm.ctx.block = block_env;
            let result = evm.transact_commit(tx).map_err(exec_error)?;
            if evm.ctx.journaled_state.database.time_cap_expired()
                && let Some(timeout) = timeout
            {
                return Err(ExecError::Timeout { timeout_ms: timeout.as_millis() as u64 });
            }
            let used = result.tx_gas_used();
            budget = budget
                .checked_sub(used)
                .ok_or(ExecError::GasCapExhausted { need: used, remaining: budget })?;
            output_bytes += result.output().map_or(0, |o| o.len());
            if output_bytes > msg.max_output_bytes {
                return Err(ExecError::OutputTooLarge { max_bytes: msg.max_output_bytes });
            }
            outcomes.push(outcome(result));
        }
        out.push(outcomes);
        block.next();
    }
    crate::report::call_printed(&config.show, "eth_callMany", evm.precompiles.take());
    Ok(out)
}

/// The block fields a bundle runs with: the block asked for (or the next block's fields), the
/// overrides of this and earlier bundles, and one number and one second more per bundle before.
struct BundleBlock {
    fields: BlockOverrides,
}

impl BundleBlock {
    fn starting(header: &Header, env: Option<BlockOverrides>) -> Self {
        let mut fields = env.unwrap_or_default();
        fields.number = fields.number.or(Some(header.number));
        fields.timestamp = fields.timestamp.or(Some(header.timestamp));
        Self { fields }
    }

    /// Takes a bundle's overrides: the fields it sets replace the ones so far.
    fn set(&mut self, o: BlockOverrides) {
        let f = &mut self.fields;
        f.number = o.number.or(f.number);
        f.timestamp = o.timestamp.or(f.timestamp);
        f.gas_limit = o.gas_limit.or(f.gas_limit);
        f.base_fee = o.base_fee.or(f.base_fee);
        f.coinbase = o.coinbase.or(f.coinbase);
        f.prevrandao = o.prevrandao.or(f.prevrandao);
    }

    /// The block of the next bundle.
    fn next(&mut self) {
        let f = &mut self.fields;
        f.number = f.number.map(|n| n.saturating_add(1));
        f.timestamp = f.timestamp.map(|t| t.saturating_add(1));
    }
}
