//! Chain facts and state queries: eth_chainId, eth_blockNumber, eth_accounts, eth_syncing,
//! eth_getBalance, eth_getTransactionCount, eth_getCode, eth_getStorageAt.
//!
//! State queries read the snapshot at a resolved block (`ChainDb::state_at`), so they work at
//! any past block (archive) and never see a half-written one. A block after the head is
//! "header not found" (-32000).

use alloy_primitives::{Address, B256};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag};
use alloy_signer_local::PrivateKeySigner;
use hearth_messages::ask::ask;
use hearth_messages::mempool::PendingNonce;
use serde_json::Value;

use crate::blocks::{head, quantity, state_block, to_json};
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::{Params, StorageSlot};

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

/// The block argument at `index` of a state query; "latest" when absent.
pub(crate) fn block_arg(params: &Params, index: usize) -> Result<BlockId, RpcError> {
    Ok(params.optional(index)?.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest)))
}

/// eth_getBalance: `[address, block?]`.
pub(crate) fn get_balance(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let address: Address = params.required(0)?;
    let number = state_block(ctx, block_arg(params, 1)?)?;
    let account = ctx.chain.state_at(number).account(&address)?;
    to_json(&account.map(|a| a.balance).unwrap_or_default())
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
    let reply = ask(&ctx.pending_nonce, PendingNonce(address)).await;
    Ok(reply.map_err(|e| RpcError::ask("mempool", e))??)
}

/// eth_getCode: `[address, block?]`; `0x` for an account without code.
pub(crate) fn get_code(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(2)?;
    let address: Address = params.required(0)?;
    let number = state_block(ctx, block_arg(params, 1)?)?;
    to_json(&ctx.chain.state_at(number).code_of(&address)?)
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
