//! Dev-chain controls: mining (evm_mine, anvil_mine, evm_setAutomine, evm_setIntervalMining),
//! block settings (evm_setNextBlockTimestamp, evm_increaseTime, evm_setBlockGasLimit,
//! anvil_setNextBlockBaseFeePerGas, anvil_setCoinbase, anvil_setPrevRandao), the clock
//! (anvil_setTime, anvil_setBlockTimestampInterval, anvil_removeBlockTimestampInterval),
//! state patches (anvil_setBalance, addBalance, setCode, setNonce, setStorageAt),
//! impersonation, the pool (anvil_dropTransaction, dropAllTransactions,
//! removePoolTransactions), the chain id (anvil_setChainId), logging
//! (anvil_setLoggingEnabled), anvil_setMinGasPrice, and evm_snapshot / evm_revert. The `evm_`
//! methods are also served under anvil's `anvil_` names. Where Hardhat has the same method
//! under `hardhat_`, both names are served; Hardhat's setters answer `true`, anvil's `null`,
//! and each name answers its own peer's error codes where they differ.

use std::time::Duration;

use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::MineError;
use hearth_messages::chain_id::MAX_CHAIN_ID;
use hearth_messages::mempool::{
    DropAll, DropTx, RemoveSender, Revalidate, SetAutoImpersonate, SetChainId, SetImpersonated,
};
use hearth_messages::miner::{
    BetweenBlocks, GetMiningStatus, IntervalMining, MAX_TIMESTAMP, MineBlocks, MineSpaced,
    SetAutomine, SetBlockParam, SetIntervalMining, SetTime, SetTimestampInterval,
};
use hearth_messages::state::{AccountPatch, PatchState, RevertTo, TakeSnapshot};
use serde_json::Value;

use crate::core::RpcError;
use crate::core::{Dialect, RpcContext};
use crate::core::{FromParam, HexOrDecimal, MineOptions, Params, StorageSlot, parse_quantity};

/// What a setter answers: Hardhat's methods say `true`, anvil's and evm_'s say `null`.
fn done(dialect: Dialect) -> Value {
    if dialect == Dialect::Hardhat { Value::Bool(true) } else { Value::Null }
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::InvalidParams(message.into())
}

/// An amount as anvil reads one (wei, tokens, seconds): a hex quantity (leading zeros
/// allowed), a decimal string, or a non-negative JSON integer, up to 2^256 - 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Amount(pub(crate) U256);

impl FromParam for Amount {
    fn from_param(value: &Value) -> Result<Self, String> {
        match value {
            Value::Number(n) => n
                .as_u64()
                .map(|n| Self(U256::from(n)))
                .ok_or_else(|| format!("expected a non-negative integer, got {n}")),
            Value::String(s) if s.starts_with("0x") || s.starts_with("0X") => {
                if s.len() == 2 {
                    return Err("hex string \"0x\" has no digits".to_owned());
                }
                let digits = s[2..].trim_start_matches('0');
                parse_quantity(&format!("0x{}", if digits.is_empty() { "0" } else { digits }))
                    .map(Self)
            }
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                U256::from_str_radix(s, 10).map(Self).map_err(|_| format!("{s} is over 256 bits"))
            }
            Value::String(s) => Err(format!("invalid number {s:?}")),
            other => Err(format!("expected a number, got {other}")),
        }
    }
}

/// evm_mine: `[timestamp | {timestamp, blocks}]?`; mines the blocks now, whatever the mining
/// mode, with pending transactions if any. Answers "0x0" as anvil and ganache do.
pub(crate) async fn mine(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let options: MineOptions = params.optional(0)?.unwrap_or_default();
    let count = block_count(ctx, options.blocks.unwrap_or(1), "blocks")?;
    if let Some(timestamp) = options.timestamp {
        timestamp_within(timestamp)?;
    }
    let last = ctx.miner.mine_blocks(MineBlocks { count, timestamp: options.timestamp }).await??;
    tracing::debug!(target: "rpc::dev", count, last, "evm_mine");
    Ok(Value::String("0x0".to_owned()))
}

/// anvil_mine / hardhat_mine: `[count?, interval?]` (hex or decimal); mines `count` blocks
/// (default 1), `interval` seconds apart when given. An interval of 0 is no spacing, as in
/// anvil: each block still gets a later timestamp than its parent (viem's `mine({ blocks })`
/// always sends one).
pub(crate) async fn mine_many(
    ctx: &RpcContext,
    dialect: Dialect,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let count = block_count(ctx, params.optional::<HexOrDecimal>(0)?.map_or(1, |c| c.0), "count")?;
    let interval = params.optional::<HexOrDecimal>(1)?.map(|i| i.0);
    if let Some(interval) = interval
        && interval > MAX_TIMESTAMP
    {
        return Err(invalid(format!(
            "invalid argument 1: interval {interval} is over {MAX_TIMESTAMP} seconds"
        )));
    }
    match interval {
        Some(interval) if interval > 0 => {
            ctx.miner.mine_spaced(MineSpaced { count, interval }).await
        }
        _ => ctx.miner.mine_blocks(MineBlocks { count, timestamp: None }).await,
    }??;
    Ok(done(dialect))
}

/// Checks a number of blocks to mine: at least 1, at most `--dev.max-mine-blocks`.
pub(crate) fn block_count(ctx: &RpcContext, count: u64, name: &str) -> Result<u64, RpcError> {
    let max = ctx.limits.max_mine_blocks;
    if count == 0 {
        return Err(invalid(format!("invalid argument 0: {name} must be at least 1")));
    }
    if count > max {
        return Err(invalid(format!(
            "invalid argument 0: {name} {count} is over the limit of {max} blocks per call \
             (--dev.max-mine-blocks)"
        )));
    }
    Ok(count)
}

/// Checks a block timestamp a dev method asks for.
pub(crate) fn timestamp_within(timestamp: u64) -> Result<(), RpcError> {
    if timestamp > MAX_TIMESTAMP {
        return Err(invalid(format!(
            "invalid argument 0: timestamp {timestamp} is past the latest allowed {MAX_TIMESTAMP}"
        )));
    }
    Ok(())
}

/// An `evm_setIntervalMining` argument: milliseconds, or a `[min, max]` pair of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntervalParam(pub(crate) Option<IntervalMining>);

fn millis(value: &Value) -> Result<Duration, String> {
    match value {
        Value::Number(n) if n.as_i64().is_some_and(|v| v < 0) => {
            Err(format!("interval must not be negative, got {n}"))
        }
        Value::Number(n) => n
            .as_u64()
            .map(Duration::from_millis)
            .ok_or_else(|| format!("interval must be whole milliseconds, got {n}")),
        _ => HexOrDecimal::from_param(value).map(|ms| Duration::from_millis(ms.0)),
    }
}

impl FromParam for IntervalParam {
    fn from_param(value: &Value) -> Result<Self, String> {
        match value {
            Value::Array(pair) => match pair.as_slice() {
                [min, max] => IntervalMining::range(millis(min)?, millis(max)?)
                    .map(|i| Self(Some(i)))
                    .map_err(|e| e.to_string()),
                _ => Err(format!("expected [min, max], got {} values", pair.len())),
            },
            other => IntervalMining::fixed(millis(other)?).map(Self).map_err(|e| e.to_string()),
        }
    }
}

/// evm_setIntervalMining: `[ms | [minMs, maxMs]]` (Hardhat's milliseconds); 0 turns interval
/// mining off.
pub(crate) async fn set_interval_mining(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let interval: IntervalParam = params.required(0)?;
    send_interval(ctx, interval.0).await?;
    Ok(Value::Bool(true))
}

/// anvil_setIntervalMining: `[seconds]` (anvil's unit); 0 turns interval mining off. Answers
/// `null`, as anvil does.
pub(crate) async fn set_interval_mining_seconds(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let seconds: HexOrDecimal = params.required(0)?;
    let interval = IntervalMining::fixed(Duration::from_secs(seconds.0))
        .map_err(|e| invalid(format!("invalid argument 0: {e}")))?;
    send_interval(ctx, interval).await?;
    Ok(Value::Null)
}

async fn send_interval(ctx: &RpcContext, interval: Option<IntervalMining>) -> Result<(), RpcError> {
    Ok(ctx.miner.set_interval_mining(SetIntervalMining(interval)).await?)
}

/// evm_setAutomine / anvil_setAutomine: `[enabled]`; Hardhat's evm_ name answers `true`,
/// anvil's name `null`.
pub(crate) async fn set_automine(
    ctx: &RpcContext,
    dialect: Dialect,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let enabled: bool = params.required(0)?;
    ctx.miner.set_automine(SetAutomine(enabled)).await?;
    Ok(if dialect == Dialect::Anvil { Value::Null } else { Value::Bool(true) })
}

/// anvil_getAutomine / hardhat_getAutomine: `[]`; whether automine is on.
pub(crate) async fn get_automine(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let status = ctx.miner.mining_status(GetMiningStatus).await?;
    Ok(Value::Bool(status.automine))
}

/// anvil_getIntervalMining: `[]`; the block interval in seconds, as anvil answers it (a JSON
/// number), or `null` when blocks are not mined on a timer. An interval set in milliseconds
/// (evm_setIntervalMining) that is not whole seconds answers its fraction (`0.5`); a random
/// interval (Hardhat's `[min, max]`) has no single value, and answers `[min, max]` in seconds.
pub(crate) async fn get_interval_mining(ctx: &RpcContext, (): ()) -> Result<Value, RpcError> {
    let status = ctx.miner.mining_status(GetMiningStatus).await?;
    let seconds = |d: Duration| {
        if d.subsec_nanos() == 0 { Value::from(d.as_secs()) } else { Value::from(d.as_secs_f64()) }
    };
    Ok(match status.interval {
        None => Value::Null,
        Some(IntervalMining::Fixed(every)) => seconds(every),
        Some(IntervalMining::Range { min, max }) => Value::Array(vec![seconds(min), seconds(max)]),
    })
}

async fn block_param(ctx: &RpcContext, param: SetBlockParam) -> Result<u64, RpcError> {
    Ok(ctx.miner.set_block_param(param).await??)
}

/// What a block-setting method sets (the method table names one per method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockSetting {
    /// The next block's timestamp.
    NextTimestamp,
    /// The offset added to the clock.
    IncreaseTime,
    /// The block gas limit.
    GasLimit,
    /// The next block's base fee.
    NextBaseFee,
    /// The fee recipient.
    Coinbase,
    /// PREVRANDAO.
    PrevRandao,
}

/// The block settings: evm_setNextBlockTimestamp `[ts]`, evm_increaseTime `[seconds]`
/// (answers the total offset), evm_setBlockGasLimit `[gas]`,
/// anvil_setNextBlockBaseFeePerGas `[fee]`, anvil_setCoinbase `[address]`,
/// anvil_setPrevRandao `[hash]` (and their hardhat_ names).
pub(crate) async fn set_block(
    ctx: &RpcContext,
    dialect: Dialect,
    setting: BlockSetting,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let param = match setting {
        BlockSetting::NextTimestamp => {
            let timestamp = params.required::<HexOrDecimal>(0)?.0;
            timestamp_within(timestamp)?;
            SetBlockParam::NextTimestamp(timestamp)
        }
        BlockSetting::IncreaseTime => {
            SetBlockParam::IncreaseTime(params.required::<HexOrDecimal>(0)?.0)
        }
        BlockSetting::GasLimit => SetBlockParam::GasLimit(params.required::<HexOrDecimal>(0)?.0),
        BlockSetting::NextBaseFee => {
            SetBlockParam::NextBaseFee(params.required::<HexOrDecimal>(0)?.0)
        }
        BlockSetting::Coinbase => SetBlockParam::Coinbase(params.required::<Address>(0)?),
        BlockSetting::PrevRandao => SetBlockParam::PrevRandao(params.required::<B256>(0)?),
    };
    let offset = match block_param(ctx, param).await {
        // anvil answers a timestamp that is not in the future as bad params; Hardhat (the
        // evm_ name here) as a server error.
        Err(RpcError::Mine(MineError::Timestamp { parent, got })) if dialect == Dialect::Anvil => {
            return Err(invalid(format!(
                "Timestamp error: {got} is not after the previous block's timestamp {parent}"
            )));
        }
        other => other?,
    };
    match param {
        SetBlockParam::IncreaseTime(_) => Ok(Value::from(offset)),
        SetBlockParam::GasLimit(gas) => {
            // The pool checks admissions against the new limit too.
            ctx.mempool.set_pool_gas_limit(hearth_messages::mempool::SetPoolGasLimit(gas)).await?;
            Ok(Value::Bool(true))
        }
        _ => Ok(done(dialect)),
    }
}

/// What a state-patch method changes (the method table names one per method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// Sets the balance.
    Balance,
    /// Adds to the balance.
    AddBalance,
    /// Sets the nonce.
    Nonce,
    /// Sets the code.
    Code,
    /// Sets one storage slot.
    Storage,
}

/// anvil_setBalance `[address, wei]`, anvil_setNonce `[address, nonce]`, anvil_setCode
/// `[address, code]`, anvil_setStorageAt `[address, slot, value]` (and hardhat_ names):
/// changes the head state at once, persisted, and the next block builds on it.
pub(crate) async fn patch(
    ctx: &RpcContext,
    dialect: Dialect,
    kind: PatchKind,
    params: &Params,
) -> Result<Value, RpcError> {
    let address: Address = params.required(0)?;
    let change = match kind {
        PatchKind::Balance => {
            params.at_most(2)?;
            AccountPatch::Balance(params.required::<Amount>(1)?.0)
        }
        PatchKind::AddBalance => {
            params.at_most(2)?;
            AccountPatch::AddBalance(params.required::<Amount>(1)?.0)
        }
        PatchKind::Nonce => {
            params.at_most(2)?;
            let nonce = params.required::<Amount>(1)?.0;
            let nonce = u64::try_from(nonce).map_err(|_| {
                invalid(format!("invalid argument 1: nonce {nonce} is over 64 bits"))
            })?;
            AccountPatch::Nonce(nonce)
        }
        PatchKind::Code => {
            params.at_most(2)?;
            AccountPatch::Code(params.required::<Bytes>(1)?)
        }
        PatchKind::Storage => {
            params.at_most(3)?;
            let slot: StorageSlot = params.required(1)?;
            let value: StorageSlot = params.required(2)?;
            AccountPatch::Storage { slot: slot.0, value: value.0 }
        }
    };
    // The state owner reads the account before patching it; on a fork, fetched here first so
    // that read never waits on the upstream (the owner may share the pool's thread after a
    // reset into a fork).
    crate::eth::fork_warm::accounts(ctx, &[address]).await?;
    ctx.miner.patch_state(BetweenBlocks(PatchState { address, change })).await??;
    // A new nonce or balance may make pooled transactions stale.
    revalidate(ctx).await?;
    Ok(done(dialect))
}

pub(crate) async fn revalidate(ctx: &RpcContext) -> Result<(), RpcError> {
    Ok(ctx.mempool.revalidate(Revalidate).await?)
}

/// anvil_impersonateAccount / anvil_stopImpersonatingAccount `[address]` (and hardhat_).
pub(crate) async fn impersonate(
    ctx: &RpcContext,
    dialect: Dialect,
    enabled: bool,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let address: Address = params.required(0)?;
    ctx.mempool.set_impersonated(SetImpersonated { address, enabled }).await?;
    Ok(done(dialect))
}

/// anvil_autoImpersonateAccount `[enabled]`: every address may send unsigned.
pub(crate) async fn auto_impersonate(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let enabled: bool = params.required(0)?;
    ctx.mempool.set_auto_impersonate(SetAutoImpersonate(enabled)).await?;
    Ok(Value::Null)
}

/// anvil_dropTransaction / hardhat_dropTransaction `[hash]`: removes it from the pool; anvil
/// answers the hash (or `null` when it was not pooled), Hardhat whether it was.
pub(crate) async fn drop_transaction(
    ctx: &RpcContext,
    dialect: Dialect,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let hash: B256 = params.required(0)?;
    let dropped = ctx.mempool.drop_tx(DropTx(hash)).await?;
    if dialect == Dialect::Hardhat {
        return Ok(Value::Bool(dropped));
    }
    Ok(if dropped { Value::String(hash.to_string()) } else { Value::Null })
}

/// evm_snapshot / anvil_snapshot: `[]`; the id of a snapshot of the current head state.
pub(crate) async fn snapshot(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let id = ctx.miner.take_snapshot(BetweenBlocks(TakeSnapshot)).await??;
    Ok(Value::String(format!("{id:#x}")))
}

/// evm_revert / anvil_revert: `[id]`; goes back to the snapshot (used up, with every later
/// one); `false` when the id is unknown. anvil's name also takes the id as a number.
pub(crate) async fn revert(
    ctx: &RpcContext,
    dialect: Dialect,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let id: u64 = if dialect == Dialect::Anvil {
        params.required::<HexOrDecimal>(0)?.0
    } else {
        params.required(0)?
    };
    let reverted = ctx.miner.revert_to(BetweenBlocks(RevertTo(id))).await??;
    if reverted {
        revalidate(ctx).await?;
    }
    Ok(Value::Bool(reverted))
}

/// anvil_setChainId: `[id]`; from now on eth_chainId, signing, calls, blocks and the pool
/// use `id` (pooled transactions signed for another chain are dropped). `null`.
pub(crate) async fn set_chain_id(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let HexOrDecimal(id) = params.required(0)?;
    if id == 0 || id > MAX_CHAIN_ID {
        return Err(invalid(format!(
            "invalid argument 0: chain id {id} is outside 1..={MAX_CHAIN_ID} (a legacy signature's \
             v = 2 * id + 36 must fit 64 bits)"
        )));
    }
    let dropped = ctx.mempool.set_chain_id(SetChainId(id)).await?;
    tracing::info!(target: "rpc::dev", chain_id = id, dropped, "chain id changed");
    Ok(Value::Null)
}

/// anvil_setLoggingEnabled / hardhat_setLoggingEnabled: `[enabled]`; turns the node's
/// informational log lines off or on (warnings and errors stay).
pub(crate) fn set_logging(
    ctx: &RpcContext,
    dialect: Dialect,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let enabled: bool = params.required(0)?;
    if !enabled {
        tracing::info!(target: "rpc::dev", "logging turned off (warnings and errors stay)");
    }
    ctx.logging.set(enabled);
    if enabled {
        tracing::info!(target: "rpc::dev", "logging turned on");
    }
    Ok(done(dialect))
}

/// anvil_setMinGasPrice / hardhat_setMinGasPrice: `[price]`. A minimum gas price only applies
/// to chains without EIP-1559 (London), and every fork Hearth runs has it, so this always
/// refuses, as anvil and Hardhat do on such a chain: -32602 for anvil's name, -32000 for
/// Hardhat's.
pub(crate) fn set_min_gas_price(dialect: Dialect, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let Amount(_) = params.required(0)?;
    let message =
        format!("{} is not supported when EIP-1559 is active", dialect.method("setMinGasPrice"));
    if dialect == Dialect::Hardhat {
        Err(RpcError::Unsupported(message))
    } else {
        Err(invalid(message))
    }
}

/// Timestamps above this are milliseconds (anvil_setTime takes either, as Ganache did).
const MILLIS_ABOVE: u64 = 1_000_000_000_000;

/// anvil_setTime / evm_setTime: `[timestamp]` in seconds, or milliseconds above 10^12; the
/// next block is stamped `timestamp` (or its parent's plus one, if later) and later ones go
/// on from there. Answers how many seconds `timestamp` is past what the next block would have
/// been stamped.
pub(crate) async fn set_time(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let Amount(raw) = params.required(0)?;
    let raw = u64::try_from(raw)
        .ok()
        .filter(|t| *t < u64::MAX)
        .ok_or_else(|| invalid("The timestamp is too big"))?;
    let timestamp = if raw > MILLIS_ABOVE { raw / 1000 } else { raw };
    timestamp_within(timestamp)?;
    let ahead = ctx.miner.set_time(SetTime(timestamp)).await??;
    Ok(Value::from(ahead))
}

/// anvil_setBlockTimestampInterval: `[seconds]`; each next block is stamped `seconds` after
/// its parent (at least one second: a block is always later than its parent). `null`.
pub(crate) async fn set_timestamp_interval(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let HexOrDecimal(seconds) = params.required(0)?;
    if seconds > MAX_TIMESTAMP {
        return Err(invalid(format!(
            "invalid argument 0: interval {seconds} is over {MAX_TIMESTAMP} seconds"
        )));
    }
    ctx.miner.set_timestamp_interval(SetTimestampInterval(Some(seconds))).await?;
    Ok(Value::Null)
}

/// anvil_removeBlockTimestampInterval: `[]`; blocks are stamped by the clock again. Answers
/// whether an interval was set.
pub(crate) async fn remove_timestamp_interval(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(Value::Bool(ctx.miner.set_timestamp_interval(SetTimestampInterval(None)).await?))
}

/// anvil_dropAllTransactions: `[]`; empties the pool. `null`.
pub(crate) async fn drop_all(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let dropped = ctx.mempool.drop_all(DropAll { chain_replaced: false }).await?;
    tracing::debug!(target: "rpc::dev", dropped, "pool emptied");
    Ok(Value::Null)
}

/// anvil_removePoolTransactions: `[address]`; removes every pooled transaction it sent. `null`.
pub(crate) async fn remove_pool_transactions(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let sender: Address = params.required(0)?;
    let removed = ctx.mempool.remove_sender(RemoveSender(sender)).await?;
    tracing::debug!(target: "rpc::dev", %sender, removed, "sender's transactions removed");
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn amounts_read_as_anvil_reads_them() {
        let parse = |v: Value| Amount::from_param(&v).map(|a| a.0);
        assert_eq!(parse(json!("0x10")), Ok(U256::from(16)));
        assert_eq!(parse(json!("0x0010")), Ok(U256::from(16)), "leading zeros, as anvil");
        assert_eq!(parse(json!("0x0")), Ok(U256::ZERO));
        assert!(parse(json!("0x")).is_err(), "no digits is not a silent zero");
        assert_eq!(parse(json!("1000")), Ok(U256::from(1000)));
        assert_eq!(parse(json!(1000)), Ok(U256::from(1000)));
        assert_eq!(parse(json!(format!("0x{}", "f".repeat(64)))), Ok(U256::MAX));
        assert!(parse(json!(format!("0x1{}", "0".repeat(64)))).is_err(), "over 256 bits");
        assert!(parse(json!("1".repeat(80))).is_err(), "over 256 bits");
        assert!(parse(json!(-1)).is_err());
        assert!(parse(json!(1.5)).is_err());
        assert!(parse(json!("12abc")).is_err());
        assert!(parse(json!("")).is_err());
        assert!(parse(json!(true)).is_err());
    }

    #[test]
    fn interval_params_follow_anvil_and_hardhat() {
        let parse = |v: Value| IntervalParam::from_param(&v);
        assert_eq!(
            parse(json!(1500)),
            Ok(IntervalParam(Some(IntervalMining::Fixed(Duration::from_millis(1500)))))
        );
        assert_eq!(parse(json!(0)), Ok(IntervalParam(None)));
        assert_eq!(
            parse(json!([1000, 3000])),
            Ok(IntervalParam(Some(IntervalMining::Range {
                min: Duration::from_secs(1),
                max: Duration::from_secs(3)
            })))
        );
        assert!(parse(json!([3000, 1000])).unwrap_err().contains("above max"));
        assert!(parse(json!([0, 0])).unwrap_err().contains("[0, 0]"));
        assert!(parse(json!(-5)).unwrap_err().contains("negative"));
        assert!(parse(json!([1, 2, 3])).is_err());
        assert!(parse(json!(true)).is_err());
        // A hostile tester's value: it used to overflow the miner's clock and kill it.
        assert!(parse(json!("0x7fffffffffffffff")).unwrap_err().contains("too long"));
        assert!(parse(json!([0, "0xffffffffffffffff"])).unwrap_err().contains("too long"));
        let year = IntervalMining::MAX.as_millis() as u64;
        assert_eq!(
            parse(json!(year)),
            Ok(IntervalParam(Some(IntervalMining::Fixed(IntervalMining::MAX))))
        );
        assert!(parse(json!(year + 1)).is_err());
    }
}
