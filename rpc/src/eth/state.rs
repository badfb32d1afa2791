//! Chain facts and state queries: eth_chainId, eth_blockNumber, eth_accounts, eth_syncing,
//! eth_getBalance, eth_getTransactionCount, eth_getCode, eth_getAccount, eth_getAccountInfo,
//! eth_getStorageAt,
//! eth_getStorageValues, eth_coinbase, eth_mining.
//!
//! State queries read the snapshot at a resolved block (`ChainDb::state_at`), so they work at
//! any past block (archive) and never see a half-written one. A block after the head is
//! "header not found" (-32000).

use alloy_primitives::{Address, B256, U256};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use alloy_signer_local::PrivateKeySigner;
use hearth_messages::mempool::PendingNonce;
use serde_json::Value;

use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::{FromParam, Params, StorageSlot};
use crate::core::{Hot, Reply};
use crate::core::{head, quantity, state_block, to_json};

/// eth_chainId: the chain id as a quantity.
pub(crate) fn chain_id(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(quantity(ctx.chain_id.get()))
}

/// eth_blockNumber: the head.
pub(crate) fn block_number(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(quantity(head(ctx)?))
}

/// eth_accounts: the unlocked dev accounts, in order.
pub(crate) fn accounts(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let addresses: Vec<Address> = ctx.signers.iter().map(PrivateKeySigner::address).collect();
    to_json(&addresses)
}

/// eth_syncing: a dev node is never syncing.
pub(crate) fn syncing(params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    Ok(Value::Bool(false))
}

/// The block a state query reads when it names none.
pub(crate) const LATEST: BlockId = BlockId::Number(BlockNumberOrTag::Latest);

/// The block argument at `index` of a state query; "latest" when absent.
pub(crate) fn block_arg(params: &Params, index: usize) -> Result<BlockId, RpcError> {
    Ok(params.optional(index)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest)))
}

/// eth_getBalance: `[address, block?]`.
pub(crate) fn get_balance(
    ctx: &RpcContext,
    (address, block): (Address, Option<BlockId>),
) -> Result<Reply, RpcError> {
    let number = state_block(ctx, block.unwrap_or(LATEST))?;
    let account = ctx.chain.state_at(number).account(&address)?;
    Ok(Reply::Hot(Hot::Quantity(account.map(|a| a.balance).unwrap_or_default())))
}

/// eth_getTransactionCount: `[address, block?]`. With "pending" the mempool answers, counting
/// the sender's pooled transactions.
pub(crate) async fn get_transaction_count(
    ctx: &RpcContext,
    params: &Params,
) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let address: Address = params.required(0)?;
    let block = block_arg(params, 1)?;
    if block == BlockId::Number(BlockNumberOrTag::Pending) {
        return Ok(quantity(pending_nonce(ctx, address).await?));
    }
    let number = state_block(ctx, block)?;
    let account = ctx.chain.state_at(number).account(&address)?;
    Ok(quantity(account.map_or(0, |a| a.nonce)))
}

/// The sender's next nonce counting its pooled transactions.
pub(crate) async fn pending_nonce(ctx: &RpcContext, address: Address) -> Result<u64, RpcError> {
    // The pool reads the account on its own thread: on a fork, fetched here first.
    crate::eth::fork_warm::accounts(ctx, &[address]).await?;
    Ok(ctx.mempool.pending_nonce(PendingNonce(address)).await??)
}

/// eth_getCode: `[address, block?]`; `0x` for an account without code.
pub(crate) fn get_code(
    ctx: &RpcContext,
    (address, block): (Address, Option<BlockId>),
) -> Result<Value, RpcError> {
    let number = state_block(ctx, block.unwrap_or(LATEST))?;
    to_json(&ctx.chain.state_at(number).code_of(&address)?)
}

/// eth_getAccountInfo (anvil's): `[address, block?]`; `{balance, nonce, code}` in one answer,
/// what a fork asks its upstream for an account in one call instead of three.
pub(crate) fn get_account_info(
    ctx: &RpcContext,
    (address, block): (Address, Option<BlockId>),
) -> Result<Value, RpcError> {
    let number = state_block(ctx, block.unwrap_or(LATEST))?;
    let state = ctx.chain.state_at(number);
    let account = state.account(&address)?;
    let code = state.code_of(&address)?;
    Ok(serde_json::json!({
        "balance": to_json(&account.as_ref().map(|a| a.balance).unwrap_or_default())?,
        "nonce": quantity(account.map_or(0, |a| a.nonce)),
        "code": to_json(&code)?,
    }))
}

/// eth_getStorageAt: `[address, slot, block?]`; the value as 32 bytes of hex.
pub(crate) fn get_storage_at(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let address: Address = params.required(0)?;
    let StorageSlot(slot) = params.required(1)?;
    let number = state_block(ctx, block_arg(params, 2)?)?;
    let value = ctx.chain.state_at(number).storage(&address, &slot)?;
    to_json(&B256::from(value))
}

/// geth's bound on the slots of one eth_getStorageValues request.
pub(crate) const MAX_STORAGE_VALUES: usize = 1024;

/// The slots eth_getStorageValues asks for: `{address: [32-byte slot, ...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StorageRequest(pub(crate) Vec<(Address, Vec<B256>)>);

impl FromParam for StorageRequest {
    fn from_param(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| "expected an object of address to storage slots".to_owned())?;
        let mut request = Vec::with_capacity(object.len());
        for (address, slots) in object {
            let address = Address::from_param(&Value::String(address.clone()))?;
            let slots = slots
                .as_array()
                .ok_or_else(|| format!("account {address}: expected an array of storage slots"))?
                .iter()
                .map(B256::from_param)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("account {address}: {e}"))?;
            request.push((address, slots));
        }
        Ok(Self(request))
    }
}

/// eth_getStorageValues: `[{address: [slot, ...]}, block?]`; the values as 32-byte words, by
/// address, in the order asked. At most [`MAX_STORAGE_VALUES`] slots (-38026 above, geth's
/// "client limit exceeded"); an empty request is -32602.
pub(crate) fn get_storage_values(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let StorageRequest(request) = params.required(0)?;
    let slots = request.iter().map(|(_, slots)| slots.len()).sum::<usize>();
    if slots > MAX_STORAGE_VALUES {
        return Err(RpcError::TooManySlots { max: MAX_STORAGE_VALUES });
    }
    if slots == 0 {
        return Err(RpcError::InvalidParams("empty request".to_owned()));
    }
    let number = state_block(ctx, block_arg(params, 1)?)?;
    let state = ctx.chain.state_at(number);
    let mut out = serde_json::Map::with_capacity(request.len());
    for (address, slots) in request {
        let values = slots
            .iter()
            .map(|slot| {
                let value = state.storage(&address, &U256::from_be_bytes(slot.0))?;
                Ok(Value::String(B256::from(value).to_string()))
            })
            .collect::<Result<Vec<_>, RpcError>>()?;
        out.insert(alloy_primitives::hex::encode_prefixed(address), Value::Array(values));
    }
    Ok(Value::Object(out))
}

/// eth_coinbase: the address mined blocks pay (`anvil_setCoinbase` changes it), as anvil
/// answers; geth answers the etherbase.
pub(crate) async fn coinbase(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let status = mining_status(ctx).await?;
    to_json(&status.coinbase)
}

/// eth_mining: whether blocks are being mined, automatically or on a timer (anvil's answer).
pub(crate) async fn mining(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(0)?;
    let status = mining_status(ctx).await?;
    Ok(Value::Bool(status.automine || status.interval.is_some()))
}

async fn mining_status(ctx: &RpcContext) -> Result<hearth_messages::miner::MiningStatus, RpcError> {
    Ok(ctx.miner.mining_status(hearth_messages::miner::GetMiningStatus).await?)
}
