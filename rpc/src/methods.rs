//! The method table: one `match` from method name to handler. Extension methods are consulted
//! only when the table has no entry, so a core method always wins over an extension.

use hearth_messages::subscriptions::ConnectionId;
use serde_json::Value;

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::Params;
use crate::transport::Reply;
use crate::{
    blocks, call, dev, eth, eth_tx, fees, filters, logs, net, proof, subscriptions, txpool,
};

/// Runs `method` with its raw `params` and returns the result; `connection` is the WebSocket
/// connection the request came on (`None` over HTTP).
pub(crate) async fn dispatch(
    ctx: &RpcContext,
    method: String,
    params: Option<Value>,
    connection: Option<ConnectionId>,
) -> Result<Reply, RpcError> {
    let params = Params::new(params);
    let p = &params;
    let value = match method.as_str() {
        "web3_clientVersion" => net::client_version(ctx, p),
        "web3_sha3" => net::sha3(p),
        "net_version" => net::version(ctx, p),
        "net_listening" => net::listening(p),

        "eth_chainId" => eth::chain_id(ctx, p),
        "eth_blockNumber" => eth::block_number(ctx, p),
        "eth_accounts" => eth::accounts(ctx, p),
        "eth_syncing" => eth::syncing(p),
        "eth_getBalance" => eth::get_balance(ctx, p),
        "eth_getTransactionCount" => eth::get_transaction_count(ctx, p).await,
        "eth_getCode" => eth::get_code(ctx, p),
        "eth_getStorageAt" => eth::get_storage_at(ctx, p),
        "eth_getProof" => proof::get_proof(ctx, p),

        "eth_call" => call::call(ctx, p).await,
        "eth_estimateGas" => call::estimate_gas(ctx, p).await,

        "eth_gasPrice" => fees::gas_price(ctx, p),
        "eth_maxPriorityFeePerGas" => fees::max_priority_fee(p),
        "eth_feeHistory" => fees::fee_history(ctx, p),

        "eth_sendRawTransaction" => eth_tx::send_raw_transaction(ctx, p).await,
        "eth_sendTransaction" => eth_tx::send_transaction(ctx, p).await,
        "eth_getTransactionByHash" => eth_tx::get_transaction_by_hash(ctx, p).await,
        "eth_getTransactionReceipt" => eth_tx::get_transaction_receipt(ctx, p),

        "eth_getBlockByNumber" => blocks::get_block_by_number(ctx, p),
        "eth_getBlockByHash" => blocks::get_block_by_hash(ctx, p),
        "eth_getBlockTransactionCountByNumber" => blocks::tx_count_by_number(ctx, p),
        "eth_getBlockTransactionCountByHash" => blocks::tx_count_by_hash(ctx, p),
        "eth_getTransactionByBlockNumberAndIndex" => blocks::tx_by_number_and_index(ctx, p),
        "eth_getTransactionByBlockHashAndIndex" => blocks::tx_by_hash_and_index(ctx, p),

        // Logs are encoded as they are read, within the response and log-count caps.
        "eth_getLogs" => return logs::get_logs(ctx, p),
        "eth_getFilterChanges" => return filters::get_filter_changes(ctx, p).await,
        "eth_getFilterLogs" => return filters::get_filter_logs(ctx, p).await,
        "eth_newFilter" => filters::new_filter(ctx, p).await,
        "eth_newBlockFilter" => filters::new_block_filter(ctx, p).await,
        "eth_newPendingTransactionFilter" => filters::new_pending_transaction_filter(ctx, p).await,
        "eth_uninstallFilter" => filters::uninstall_filter(ctx, p).await,
        "eth_subscribe" => subscriptions::subscribe(ctx, connection, p).await,
        "eth_unsubscribe" => subscriptions::unsubscribe(ctx, connection, p).await,

        "evm_mine" => dev::mine(ctx, p).await,
        "anvil_mine" | "hardhat_mine" => dev::mine_many(ctx, &method, p).await,
        "evm_setAutomine" => dev::set_automine(ctx, p).await,
        "anvil_getAutomine" | "hardhat_getAutomine" => dev::get_automine(ctx, p).await,
        "evm_setIntervalMining" => dev::set_interval_mining(ctx, p).await,
        "anvil_setIntervalMining" => dev::set_interval_mining_seconds(ctx, p).await,
        "evm_setNextBlockTimestamp"
        | "evm_increaseTime"
        | "evm_setBlockGasLimit"
        | "anvil_setNextBlockBaseFeePerGas"
        | "hardhat_setNextBlockBaseFeePerGas"
        | "anvil_setCoinbase"
        | "hardhat_setCoinbase"
        | "anvil_setPrevRandao"
        | "hardhat_setPrevRandao" => dev::set_block(ctx, &method, p).await,
        "anvil_setBalance"
        | "hardhat_setBalance"
        | "anvil_setNonce"
        | "hardhat_setNonce"
        | "anvil_setCode"
        | "hardhat_setCode"
        | "anvil_setStorageAt"
        | "hardhat_setStorageAt" => dev::patch(ctx, &method, p).await,
        "anvil_impersonateAccount"
        | "hardhat_impersonateAccount"
        | "anvil_stopImpersonatingAccount"
        | "hardhat_stopImpersonatingAccount" => dev::impersonate(ctx, &method, p).await,
        "anvil_autoImpersonateAccount" => dev::auto_impersonate(ctx, p).await,
        "anvil_dropTransaction" | "hardhat_dropTransaction" => {
            dev::drop_transaction(ctx, &method, p).await
        }
        "evm_snapshot" => dev::snapshot(ctx, p).await,
        "evm_revert" => dev::revert(ctx, p).await,

        "txpool_status" => txpool::status(ctx, p).await,
        "txpool_content" => txpool::content_method(ctx, p).await,
        "txpool_inspect" => txpool::inspect(ctx, p).await,

        _ => match ctx.extensions.get(&method) {
            Some(extension) => extension(params.into_value())
                .await
                .map_err(|(code, message)| RpcError::Extension { code, message }),
            None => Err(RpcError::MethodNotFound(method)),
        },
    };
    value.map(Reply::Value)
}
