//! The method table: one `match` from method name to handler. Extension methods are consulted
//! only when the table has no entry, so a core method always wins over an extension. In front
//! of the table sits the namespace gate of `--http.api` ([`ApiNamespaces`]): a method whose
//! namespace (the name up to its first `_`) is not enabled is unknown, -32601, whatever it is.

use hearth_messages::fork::misses;
use hearth_messages::subscriptions::ConnectionId;
use serde_json::Value;

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::params::Params;
use crate::transport::Reply;
use crate::{
    access_list, blocks, call, capabilities, chain_config, debug_trace, dev, erc20, eth, eth_tx,
    fees, filters, headers, logs, mined, net, node_info, parity_trace, proof, raw, receipts, reset,
    rewind, sign, simulate, state_dump, storage_range, subscriptions, testing, txpool,
};

/// Runs `method` with its raw `params` and returns the result; `connection` is the WebSocket
/// connection the request came on (`None` over HTTP).
pub(crate) async fn dispatch(
    ctx: &RpcContext,
    method: String,
    params: Option<Value>,
    connection: Option<ConnectionId>,
) -> Result<Reply, RpcError> {
    if !ctx.api.allows(&method) {
        return Err(RpcError::MethodNotFound(method));
    }
    let params = Params::new(params);
    let mut retries = 0;
    let mut fork_rounds = 0;
    loop {
        let generation = ctx.chain.generation();
        // A read on a fork collects the fork state it misses instead of holding this worker
        // thread while the upstream answers (`fork::misses`): the misses are fetched, awaited,
        // and the read runs again; the last round's reads wait, as every read did before.
        let result =
            if fork_rounds < misses::MAX_ROUNDS && ctx.executor.fork_reads() && is_read(&method) {
                match misses::collect_async(dispatch_once(ctx, &method, &params, connection)).await
                {
                    (_, Some(missed)) => {
                        fork_rounds += 1;
                        missed.fetch().await.map_err(|error| {
                            RpcError::Storage(hearth_messages::storage::StorageError::Fork(
                                error.to_string(),
                            ))
                        })?;
                        continue;
                    }
                    (result, None) => result,
                }
            } else {
                dispatch_once(ctx, &method, &params, connection).await
            };
        match &result {
            // The request found its block number on one chain and looked for it on the next
            // (anvil_reset switched between its reads): it runs again, on the new chain, so it
            // answers as of the old chain or the new one, never as of neither.
            Err(error)
                if error.is_missing_block()
                    && retries < MAX_RESET_RETRIES
                    && is_read(&method)
                    && ctx.chain.generation() != generation =>
            {
                retries += 1;
            }
            _ => return result,
        }
    }
}

/// How many times a read that raced anvil_reset runs again (each retry means another reset
/// happened while it ran).
const MAX_RESET_RETRIES: u32 = 3;

/// Whether `method` only reads, so that running it again changes nothing.
fn is_read(method: &str) -> bool {
    let read_namespace =
        ["eth_", "debug_", "trace_", "ots_"].iter().any(|ns| method.starts_with(ns));
    read_namespace && !method.starts_with("eth_send") && !method.contains("Filter")
}

async fn dispatch_once(
    ctx: &RpcContext,
    method: &str,
    params: &Params,
    connection: Option<ConnectionId>,
) -> Result<Reply, RpcError> {
    let p = params;
    let value = match method {
        "web3_clientVersion" => net::client_version(ctx, p),
        "web3_sha3" => net::sha3(p),
        "net_version" => net::version(ctx, p),
        "net_listening" => net::listening(p),
        "net_peerCount" => net::peer_count(p),

        "eth_chainId" => eth::chain_id(ctx, p),
        "eth_blockNumber" => eth::block_number(ctx, p),
        "eth_accounts" => eth::accounts(ctx, p),
        "eth_syncing" => eth::syncing(p),
        "eth_capabilities" => capabilities::capabilities(ctx, p),
        "eth_config" => chain_config::config(ctx, p),
        // The hot results are typed: encoded straight into the response buffer.
        "eth_getBalance" => return eth::get_balance(ctx, p),
        "eth_getTransactionCount" => eth::get_transaction_count(ctx, p).await,
        "eth_getCode" => eth::get_code(ctx, p),
        "eth_getAccountInfo" => eth::get_account_info(ctx, p),
        "eth_getStorageAt" => eth::get_storage_at(ctx, p),
        "eth_getStorageValues" => eth::get_storage_values(ctx, p),
        "eth_coinbase" => eth::coinbase(ctx, p).await,
        "eth_mining" => eth::mining(ctx, p).await,
        "eth_getProof" => proof::get_proof(ctx, p),

        "eth_call" => return call::call(ctx, p).await,
        "eth_estimateGas" => call::estimate_gas(ctx, p).await,
        "eth_createAccessList" => access_list::create_access_list(ctx, p).await,
        // Simulated blocks are encoded one by one, within the response cap.
        "eth_simulateV1" => return simulate::simulate(ctx, p).await,

        "eth_gasPrice" => fees::gas_price(ctx, p),
        "eth_maxPriorityFeePerGas" => fees::max_priority_fee(p),
        "eth_feeHistory" => fees::fee_history(ctx, p),
        "eth_baseFee" => fees::base_fee(ctx, p),
        "eth_blobBaseFee" => fees::blob_base_fee(ctx, p),

        "eth_sendRawTransaction" => return eth_tx::send_raw_transaction(ctx, p).await,
        "eth_sendTransaction" => eth_tx::send_transaction(ctx, p).await,
        "eth_sendUnsignedTransaction" => eth_tx::send_unsigned_transaction(ctx, p).await,
        "eth_sign" => sign::eth_sign(ctx, p),
        "personal_sign" => sign::personal_sign(ctx, p),
        "eth_signTypedData_v4" | "eth_signTypedData" => sign::sign_typed_data_v4(ctx, p),
        "eth_signTransaction" => sign::sign_transaction(ctx, p).await,
        "eth_getTransactionByHash" => eth_tx::get_transaction_by_hash(ctx, p).await,
        "eth_getTransactionReceipt" => return eth_tx::get_transaction_receipt(ctx, p),

        "eth_getBlockByNumber" => return blocks::get_block_by_number(ctx, p),
        "eth_getBlockByHash" => return blocks::get_block_by_hash(ctx, p),
        "eth_getBlockTransactionCountByNumber" => blocks::tx_count_by_number(ctx, p),
        "eth_getBlockTransactionCountByHash" => blocks::tx_count_by_hash(ctx, p),
        "eth_getTransactionByBlockNumberAndIndex" => blocks::tx_by_number_and_index(ctx, p),
        "eth_getTransactionByBlockHashAndIndex" => blocks::tx_by_hash_and_index(ctx, p),
        // A block's receipts are encoded as they are read, within the response cap.
        "eth_getBlockReceipts" => return receipts::get_block_receipts(ctx, p),
        "eth_getHeaderByNumber" => headers::get_header_by_number(ctx, p),
        "eth_getHeaderByHash" => headers::get_header_by_hash(ctx, p),
        "eth_getUncleCountByBlockNumber" => headers::uncle_count_by_number(ctx, p),
        "eth_getUncleCountByBlockHash" => headers::uncle_count_by_hash(ctx, p),
        "eth_getUncleByBlockNumberAndIndex" => headers::uncle_by_number_and_index(ctx, p),
        "eth_getUncleByBlockHashAndIndex" => headers::uncle_by_hash_and_index(ctx, p),

        "debug_getRawHeader" => raw::get_raw_header(ctx, p),
        "debug_getRawBlock" => return raw::get_raw_block(ctx, p),
        "debug_getRawReceipts" => return raw::get_raw_receipts(ctx, p),
        "debug_getRawTransaction" => raw::get_raw_transaction(ctx, p).await,
        "debug_storageRangeAt" => storage_range::storage_range_at(ctx, p),

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
        "evm_mine_detailed" | "anvil_mine_detailed" => mined::mine_detailed(ctx, p).await,
        "anvil_mine" | "hardhat_mine" => dev::mine_many(ctx, method, p).await,
        "evm_setAutomine" | "anvil_setAutomine" => dev::set_automine(ctx, method, p).await,
        "anvil_getAutomine" | "hardhat_getAutomine" => dev::get_automine(ctx, p).await,
        "evm_setIntervalMining" => dev::set_interval_mining(ctx, p).await,
        "anvil_setIntervalMining" => dev::set_interval_mining_seconds(ctx, p).await,
        "evm_setNextBlockTimestamp"
        | "anvil_setNextBlockTimestamp"
        | "evm_increaseTime"
        | "anvil_increaseTime"
        | "evm_setBlockGasLimit"
        | "anvil_setBlockGasLimit"
        | "anvil_setNextBlockBaseFeePerGas"
        | "hardhat_setNextBlockBaseFeePerGas"
        | "anvil_setCoinbase"
        | "hardhat_setCoinbase"
        | "anvil_setPrevRandao"
        | "hardhat_setPrevRandao" => dev::set_block(ctx, method, p).await,
        "anvil_setTime" | "evm_setTime" => dev::set_time(ctx, p).await,
        "anvil_setBlockTimestampInterval" => dev::set_timestamp_interval(ctx, p).await,
        "anvil_removeBlockTimestampInterval" => dev::remove_timestamp_interval(ctx, p).await,
        "anvil_setBalance"
        | "hardhat_setBalance"
        | "anvil_addBalance"
        | "anvil_setNonce"
        | "hardhat_setNonce"
        | "anvil_setCode"
        | "hardhat_setCode"
        | "anvil_setStorageAt"
        | "hardhat_setStorageAt" => dev::patch(ctx, method, p).await,
        "anvil_impersonateAccount"
        | "hardhat_impersonateAccount"
        | "anvil_stopImpersonatingAccount"
        | "hardhat_stopImpersonatingAccount" => dev::impersonate(ctx, method, p).await,
        "anvil_dealERC20" | "anvil_setERC20Balance" => erc20::deal(ctx, p).await,
        "anvil_setERC20Allowance" => erc20::set_allowance(ctx, p).await,
        "anvil_autoImpersonateAccount" => dev::auto_impersonate(ctx, p).await,
        "anvil_dropTransaction" | "hardhat_dropTransaction" => {
            dev::drop_transaction(ctx, method, p).await
        }
        "anvil_dropAllTransactions" => dev::drop_all(ctx, p).await,
        "anvil_removePoolTransactions" => dev::remove_pool_transactions(ctx, p).await,
        "evm_snapshot" | "anvil_snapshot" => dev::snapshot(ctx, p).await,
        "evm_revert" | "anvil_revert" => dev::revert(ctx, method, p).await,
        "anvil_rollback" => rewind::rollback(ctx, p).await,
        "anvil_reset" | "hardhat_reset" => reset::reset(ctx, method, p).await,
        "anvil_reorg" => rewind::reorg(ctx, p).await,
        "anvil_setChainId" => dev::set_chain_id(ctx, p).await,
        "anvil_dumpState" => state_dump::dump_state(ctx, p).await,
        "anvil_loadState" => state_dump::load_state(ctx, p).await,
        "anvil_setLoggingEnabled" | "hardhat_setLoggingEnabled" => dev::set_logging(ctx, method, p),
        "anvil_setMinGasPrice" | "hardhat_setMinGasPrice" => dev::set_min_gas_price(method, p),
        "anvil_nodeInfo" => node_info::node_info(ctx, p).await,
        "anvil_metadata" | "hardhat_metadata" => node_info::metadata(ctx, p).await,

        // Traces are encoded on the executor thread, within the response cap.
        "debug_traceTransaction" => return debug_trace::trace_transaction(ctx, p).await,
        "debug_traceCall" => return debug_trace::trace_call(ctx, p).await,
        "debug_traceBlockByNumber" => return debug_trace::trace_block_by_number(ctx, p).await,
        "debug_traceBlockByHash" => return debug_trace::trace_block_by_hash(ctx, p).await,
        "debug_traceBlock" => return debug_trace::trace_raw_block(ctx, p).await,
        "trace_transaction" => return parity_trace::trace_transaction(ctx, p).await,
        "trace_get" => return parity_trace::trace_get(ctx, p).await,
        "trace_block" => return parity_trace::trace_block(ctx, p).await,
        "trace_replayTransaction" => return parity_trace::replay_transaction(ctx, p).await,
        "trace_replayBlockTransactions" => return parity_trace::replay_block(ctx, p).await,
        "trace_call" => return parity_trace::trace_call(ctx, p).await,
        "trace_callMany" => return parity_trace::trace_call_many(ctx, p).await,
        "trace_filter" => return parity_trace::trace_filter(ctx, p).await,
        "testing_buildBlockV1" => testing::build_block(ctx, p).await,

        "txpool_status" => txpool::status(ctx, p).await,
        "txpool_content" => return txpool::content_method(ctx, p).await,
        "txpool_contentFrom" => return txpool::content_from(ctx, p).await,
        "txpool_inspect" => return txpool::inspect(ctx, p).await,

        _ => match ctx.extensions.get(method) {
            Some(extension) => extension(params.clone().into_value())
                .await
                .map_err(|(code, message)| RpcError::Extension { code, message }),
            None => Err(RpcError::MethodNotFound(method.to_owned())),
        },
    };
    value.map(Reply::Value)
}

/// The namespaces `--http.api` may name: the core's, the dev chain's, execution-apis'
/// `testing`, and those peers serve that extensions may add (`trace`, `personal`, `admin`,
/// `ots`, `hearth`).
pub const KNOWN_NAMESPACES: [&str; 14] = [
    "eth", "net", "web3", "txpool", "debug", "trace", "evm", "anvil", "hardhat", "personal",
    "admin", "ots", "hearth", "testing",
];

/// The namespaces whose methods change the chain outside its rules (balances, code, time,
/// mining): a shared deployment should not serve them.
pub const DEV_NAMESPACES: [&str; 3] = ["evm", "anvil", "hardhat"];

/// Dev methods named in another namespace: anvil's eth_sendUnsignedTransaction sends from any
/// account without a signature, so a list that leaves `anvil` out must not serve it either.
pub const DEV_METHODS_ELSEWHERE: [&str; 1] = ["eth_sendUnsignedTransaction"];

/// A namespace `--http.api` cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// The list is empty.
    #[error("empty: name namespaces such as eth,net,web3, or all")]
    Empty,
    /// A name that is not a namespace.
    #[error("unknown namespace {name:?}; known: all, {}", KNOWN_NAMESPACES.join(", "))]
    Unknown {
        /// What was given.
        name: String,
    },
}

/// The JSON-RPC namespaces served (`--http.api`): all of them (a dev node's default), or a set
/// of [`KNOWN_NAMESPACES`]. Applies to HTTP and WebSocket alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiNamespaces(Option<u16>);

impl ApiNamespaces {
    /// Every namespace, extensions' included.
    pub const fn all() -> Self {
        Self(None)
    }

    /// Parses a comma-separated list of namespaces, or `all`.
    pub fn parse(list: &str) -> Result<Self, NamespaceError> {
        let mut bits = 0u16;
        let mut empty = true;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            empty = false;
            if name.eq_ignore_ascii_case("all") {
                return Ok(Self::all());
            }
            let index = KNOWN_NAMESPACES
                .iter()
                .position(|known| known.eq_ignore_ascii_case(name))
                .ok_or_else(|| NamespaceError::Unknown { name: name.to_owned() })?;
            bits |= 1 << index;
        }
        if empty { Err(NamespaceError::Empty) } else { Ok(Self(Some(bits))) }
    }

    /// Whether `namespace` (e.g. `anvil`) is served.
    pub fn serves(&self, namespace: &str) -> bool {
        match self.0 {
            None => true,
            Some(bits) => KNOWN_NAMESPACES
                .iter()
                .position(|known| *known == namespace)
                .is_some_and(|index| bits & (1 << index) != 0),
        }
    }

    /// Whether `method` may run: its namespace is the part before the first `_`, except for
    /// [`DEV_METHODS_ELSEWHERE`], which are gated as `anvil`'s.
    pub fn allows(&self, method: &str) -> bool {
        if self.0.is_none() {
            return true;
        }
        if DEV_METHODS_ELSEWHERE.contains(&method) {
            return self.serves("anvil");
        }
        method.split_once('_').is_some_and(|(ns, _)| self.serves(ns))
    }

    /// Whether any dev namespace (evm, anvil, hardhat) is served.
    pub fn serves_dev_methods(&self) -> bool {
        DEV_NAMESPACES.iter().any(|ns| self.serves(ns))
    }
}

impl Default for ApiNamespaces {
    fn default() -> Self {
        Self::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_gate_by_prefix() {
        let shared = ApiNamespaces::parse("eth, net,WEB3").expect("valid");
        assert!(shared.allows("eth_chainId") && shared.allows("net_version"));
        assert!(shared.allows("web3_clientVersion"));
        for refused in ["anvil_setBalance", "evm_mine", "hardhat_mine", "txpool_status"] {
            assert!(!shared.allows(refused), "{refused}");
        }
        assert!(!shared.allows("eth"), "no namespace");
        assert!(shared.allows("eth_sendTransaction"));
        assert!(!shared.allows("eth_sendUnsignedTransaction"), "a dev method in eth_");
        let with_anvil = ApiNamespaces::parse("anvil").expect("valid");
        assert!(with_anvil.allows("eth_sendUnsignedTransaction"));
        assert!(!with_anvil.allows("eth_chainId"));
        assert!(!shared.allows("ext_echo"), "an unknown namespace is not served by a list");
        assert!(!shared.serves_dev_methods());
        let all = ApiNamespaces::default();
        assert!(all.allows("anvil_setBalance") && all.allows("ext_echo") && all.allows("x"));
        assert!(all.serves_dev_methods());
        assert_eq!(ApiNamespaces::parse("eth,all"), Ok(ApiNamespaces::all()));
        assert!(ApiNamespaces::parse("eth,anvil").expect("valid").serves_dev_methods());
    }

    #[test]
    fn bad_namespace_lists_say_why() {
        assert_eq!(ApiNamespaces::parse(""), Err(NamespaceError::Empty));
        assert_eq!(ApiNamespaces::parse(" , "), Err(NamespaceError::Empty));
        let err = ApiNamespaces::parse("eth,eht").expect_err("typo");
        assert_eq!(err, NamespaceError::Unknown { name: "eht".into() });
        assert!(err.to_string().contains("known: all, eth, net"), "{err}");
    }
}
