//! The method table: one row per core method, and everything that needs to know about methods
//! read from it. A row names the method, how it runs ([`Kind`]), the namespace `--http.api`
//! gates it under when that is not the name's prefix, and its handler. From the rows come:
//! dispatch (one `match` on the name), the sorted name list the metrics count by, the early
//! refusal of executor calls (`transport::shed`), the namespace gate, and the [`Dialect`] a
//! handler serving several dialects is given (it never looks at the method's name).
//!
//! Adding a method: write its handler in its namespace's folder, add one row here. Extension
//! methods are consulted only when the table has no row, so a core method always wins.

use std::sync::LazyLock;

use hearth_messages::fork::misses;
use hearth_messages::subscriptions::ConnectionId;
use serde_json::Value;

use crate::anvil::dev::{BlockSetting, PatchKind};
use crate::anvil::{blobs, dev, erc20, mined, node_info, reset, rewind, state_dump};
use crate::core::{Dialect, Params, Reply, RpcContext, RpcError, RpcMetrics};
use crate::debug::{head, patches, raw, storage_range, trace as debug_trace};
use crate::eth::{
    access_list, blocks, call, call_many, capabilities, config, fees, filters, headers, logs,
    proof, receipts, sign, simulate, state, subscriptions, tx,
};
use crate::{engine, net, ots, testing, trace, txpool};
use hearth_messages::trace::OtsView;

/// How a method runs, for the layers that decide before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Only reads: running it again changes nothing (a read that raced `anvil_reset` runs
    /// again; on a fork it collects its misses instead of waiting on the upstream).
    Read,
    /// A read that runs on the executor pool, with at most `max_args` params: the front may
    /// refuse it before parsing its body when the pool is over its budget (`transport::shed`).
    Call {
        /// Most params a well-formed request has.
        max_args: usize,
    },
    /// Changes something (the chain, the pool, the node, a filter or a subscription).
    Write,
}

impl Kind {
    /// Whether running the method again changes nothing.
    pub(crate) const fn is_read(self) -> bool {
        matches!(self, Self::Read | Self::Call { .. })
    }
}

/// One row of the table, as the layers around dispatch see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Method {
    /// The JSON-RPC name.
    pub(crate) name: &'static str,
    /// The `--http.api` namespace it is served under: its prefix, except for dev methods
    /// named in another namespace (eth_sendUnsignedTransaction is gated as `anvil`'s).
    pub(crate) namespace: &'static str,
    /// How it runs.
    pub(crate) kind: Kind,
}

/// What a handler returns, made a [`Reply`]: a JSON value, or a reply already shaped (hot,
/// typed or encoded results).
trait IntoReply {
    fn into_reply(self) -> Result<Reply, RpcError>;
}

impl IntoReply for Result<Value, RpcError> {
    #[inline]
    fn into_reply(self) -> Result<Reply, RpcError> {
        self.map(Reply::Value)
    }
}

impl IntoReply for Result<Reply, RpcError> {
    #[inline]
    fn into_reply(self) -> Result<Reply, RpcError> {
        self
    }
}

/// The core methods served under `namespace`, in the table's order.
fn namespace_methods(namespace: &str) -> impl Iterator<Item = &'static str> + '_ {
    TABLE.iter().filter(move |row| row.namespace == namespace).map(|row| row.name)
}

/// The namespace of `name`: the part before its first `_`.
const fn prefix(name: &'static str) -> &'static str {
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() && bytes[i] != b'_' {
        i += 1;
    }
    let (head, _) = bytes.split_at(i);
    match std::str::from_utf8(head) {
        Ok(head) => head,
        Err(_) => name,
    }
}

/// Declares the table. Each row: `"name" kind [in "namespace"] => handler expression;` where
/// the expression may use the names bound in `|ctx, params, connection, dialect|`, may
/// `.await`, and may `?` (typed params: `params.decode()?`). Kinds: `read`, `write`,
/// `call(max_args)`.
macro_rules! methods {
    (
        |$ctx:ident, $p:ident, $conn:ident, $d:ident|
        $( $name:literal $kind:ident $(($max:literal))? $(in $ns:literal)? => $body:expr; )*
    ) => {
        /// Every core method, in the table's order.
        pub(crate) const TABLE: &[Method] = &[$(
            Method {
                name: $name,
                namespace: methods!(@namespace $name $(, $ns)?),
                kind: methods!(@kind $kind $(, $max)?),
            },
        )*];

        /// Runs the core method `name` (-32601 when the table has no row for it).
        async fn run(
            $ctx: &RpcContext,
            name: &str,
            $p: &Params,
            $conn: Option<ConnectionId>,
        ) -> Result<Reply, RpcError> {
            match name {
                $( $name => {
                    #[allow(unused_variables)]
                    let $d = const { Dialect::of(prefix($name)) };
                    IntoReply::into_reply($body)
                } )*
                _ => Err(RpcError::MethodNotFound(name.to_owned())),
            }
        }
    };
    (@namespace $name:literal) => { prefix($name) };
    (@namespace $name:literal, $ns:literal) => { $ns };
    (@kind read) => { Kind::Read };
    (@kind write) => { Kind::Write };
    (@kind call, $max:literal) => { Kind::Call { max_args: $max } };
}

methods! {
    |ctx, p, connection, dialect|

    "web3_clientVersion" read => net::client_version(ctx, p);
    "web3_sha3" read => net::sha3(p);
    "net_version" read => net::version(ctx, p);
    "net_listening" read => net::listening(p);
    "net_peerCount" read => net::peer_count(p);

    "eth_chainId" read => state::chain_id(ctx, p);
    "eth_blockNumber" read => state::block_number(ctx, p);
    "eth_accounts" read => state::accounts(ctx, p);
    "eth_syncing" read => state::syncing(p);
    "eth_capabilities" read => capabilities::capabilities(ctx, p);
    "eth_config" read => config::config(ctx, p);
    // The hot results are typed: encoded straight into the response buffer.
    "eth_getBalance" read => state::get_balance(ctx, p.decode()?);
    "eth_getTransactionCount" read => state::get_transaction_count(ctx, p).await;
    "eth_getCode" read => state::get_code(ctx, p.decode()?);
    "eth_getAccount" read => proof::get_account(ctx, p.decode()?);
    "eth_getAccountInfo" read => state::get_account_info(ctx, p.decode()?);
    "eth_getStorageAt" read => state::get_storage_at(ctx, p);
    "eth_getStorageValues" read => state::get_storage_values(ctx, p);
    "eth_coinbase" read => state::coinbase(ctx, p).await;
    "eth_mining" read => state::mining(ctx, p).await;
    "eth_getProof" read => proof::get_proof(ctx, p);

    "eth_call" call(4) => call::call(ctx, p).await;
    "eth_estimateGas" call(4) => call::estimate_gas(ctx, p).await;
    "eth_createAccessList" call(3) => access_list::create_access_list(ctx, p).await;
    // Simulated blocks are encoded one by one, within the response cap.
    "eth_simulateV1" call(2) => simulate::simulate(ctx, p).await;
    "eth_callMany" read => call_many::call_many(ctx, p).await;

    "eth_gasPrice" read => fees::gas_price(ctx, p);
    "eth_maxPriorityFeePerGas" read => fees::max_priority_fee(p);
    "eth_feeHistory" read => fees::fee_history(ctx, p);
    "eth_baseFee" read => fees::base_fee(ctx, p);
    "eth_blobBaseFee" read => fees::blob_base_fee(ctx, p);

    "eth_sendRawTransaction" write => tx::send_raw_transaction(ctx, p).await;
    "eth_sendRawTransactionSync" write => tx::send_raw_transaction_sync(ctx, p).await;
    "eth_sendTransaction" write => tx::send_transaction(ctx, p).await;
    "eth_sendUnsignedTransaction" write in "anvil" => tx::send_unsigned_transaction(ctx, p).await;
    "eth_sign" read => sign::eth_sign(ctx, p);
    "personal_sign" read => sign::personal_sign(ctx, p);
    "eth_signTypedData_v4" read => sign::sign_typed_data_v4(ctx, p);
    "eth_signTypedData" read => sign::sign_typed_data_v4(ctx, p);
    "eth_signTransaction" read => sign::sign_transaction(ctx, p).await;
    "eth_getTransactionByHash" read => tx::get_transaction_by_hash(ctx, p).await;
    "eth_getTransactionReceipt" read => tx::get_transaction_receipt(ctx, p);
    "eth_getTransactionBySenderAndNonce" read => tx::get_transaction_by_sender_and_nonce(ctx, p.decode()?).await;
    "eth_getRawTransactionByHash" read => tx::get_raw_transaction(ctx, p.decode()?).await;

    "eth_getBlockByNumber" read => blocks::get_block_by_number(ctx, p);
    "eth_getBlockByHash" read => blocks::get_block_by_hash(ctx, p);
    "eth_getBlockTransactionCountByNumber" read => blocks::tx_count_by_number(ctx, p);
    "eth_getBlockTransactionCountByHash" read => blocks::tx_count_by_hash(ctx, p);
    "eth_getTransactionByBlockNumberAndIndex" read => blocks::tx_by_number_and_index(ctx, p);
    "eth_getTransactionByBlockHashAndIndex" read => blocks::tx_by_hash_and_index(ctx, p);
    "eth_getRawTransactionByBlockNumberAndIndex" read =>
        blocks::raw_tx_by_number_and_index(ctx, p.decode()?);
    "eth_getRawTransactionByBlockHashAndIndex" read =>
        blocks::raw_tx_by_hash_and_index(ctx, p.decode()?);
    // A block's receipts are encoded as they are read, within the response cap.
    "eth_getBlockReceipts" read => receipts::get_block_receipts(ctx, p);
    "eth_getHeaderByNumber" read => headers::get_header_by_number(ctx, p);
    "eth_getHeaderByHash" read => headers::get_header_by_hash(ctx, p);
    "eth_getUncleCountByBlockNumber" read => headers::uncle_count_by_number(ctx, p);
    "eth_getUncleCountByBlockHash" read => headers::uncle_count_by_hash(ctx, p);
    "eth_getUncleByBlockNumberAndIndex" read => headers::uncle_by_number_and_index(ctx, p);
    "eth_getUncleByBlockHashAndIndex" read => headers::uncle_by_hash_and_index(ctx, p);

    "debug_getRawHeader" read => raw::get_raw_header(ctx, p);
    "debug_getRawBlock" read => raw::get_raw_block(ctx, p);
    "debug_getRawReceipts" read => raw::get_raw_receipts(ctx, p);
    "debug_getRawTransaction" read => tx::get_raw_transaction(ctx, p.decode()?).await;
    "debug_storageRangeAt" read => storage_range::storage_range_at(ctx, p);
    // The dev patches made while a block was the head, which read replicas replay.
    "hearth_getPatches" read => patches::get_patches(ctx, p);
    "ots_getApiLevel" read => ots::api_level(p);
    "ots_hasCode" read => ots::has_code(ctx, p);
    "ots_getTransactionBySenderAndNonce" read => ots::tx_by_sender_and_nonce(ctx, p);
    "ots_getContractCreator" read => ots::contract_creator(ctx, p).await;
    "ots_traceTransaction" read => ots::transaction_view(ctx, p, OtsView::Trace).await;
    "ots_getInternalOperations" read => ots::transaction_view(ctx, p, OtsView::Operations).await;
    "ots_getTransactionError" read => ots::transaction_view(ctx, p, OtsView::Error).await;
    "ots_getBlockDetails" read => ots::block_details(ctx, p);
    "ots_getBlockDetailsByHash" read => ots::block_details_by_hash(ctx, p);
    "ots_getBlockTransactions" read => ots::block_transactions(ctx, p);
    "ots_searchTransactionsBefore" read => ots::search_before(ctx, p);
    "ots_searchTransactionsAfter" read => ots::search_after(ctx, p);
    "erigon_getHeaderByNumber" read in "ots" => ots::header_by_number(ctx, p);
    // A rewind, gated with the dev methods (like anvil_rollback, it changes the chain outside
    // its rules).
    "debug_setHead" write in "anvil" => head::set_head(ctx, p.decode()?).await;

    // Logs are encoded as they are read, within the response and log-count caps.
    "eth_getLogs" read => logs::get_logs(ctx, p);
    "eth_getFilterChanges" write => filters::get_filter_changes(ctx, p).await;
    "eth_getFilterLogs" write => filters::get_filter_logs(ctx, p).await;
    "eth_newFilter" write => filters::new_filter(ctx, p).await;
    "eth_newBlockFilter" write => filters::new_block_filter(ctx, p).await;
    "eth_newPendingTransactionFilter" write => filters::new_pending_transaction_filter(ctx, p).await;
    "eth_uninstallFilter" write => filters::uninstall_filter(ctx, p).await;
    "eth_subscribe" write => subscriptions::subscribe(ctx, connection, p).await;
    "eth_unsubscribe" write => subscriptions::unsubscribe(ctx, connection, p).await;

    "evm_mine" write => dev::mine(ctx, p).await;
    "evm_mine_detailed" write => mined::mine_detailed(ctx, p).await;
    "anvil_mine_detailed" write => mined::mine_detailed(ctx, p).await;
    "anvil_mine" write => dev::mine_many(ctx, dialect, p).await;
    "hardhat_mine" write => dev::mine_many(ctx, dialect, p).await;
    "evm_setAutomine" write => dev::set_automine(ctx, dialect, p).await;
    "anvil_setAutomine" write => dev::set_automine(ctx, dialect, p).await;
    "anvil_getAutomine" read => dev::get_automine(ctx, p).await;
    "hardhat_getAutomine" read => dev::get_automine(ctx, p).await;
    "anvil_getIntervalMining" read => dev::get_interval_mining(ctx, p.decode()?).await;
    "anvil_getBlobByHash" read => blobs::blob_by_hash(ctx, p).await;
    "anvil_getBlobsByTransactionHash" read => blobs::blobs_by_transaction(ctx, p).await;
    "evm_setIntervalMining" write => dev::set_interval_mining(ctx, p).await;
    "anvil_setIntervalMining" write => dev::set_interval_mining_seconds(ctx, p).await;
    "evm_setNextBlockTimestamp" write =>
        dev::set_block(ctx, dialect, BlockSetting::NextTimestamp, p).await;
    "anvil_setNextBlockTimestamp" write =>
        dev::set_block(ctx, dialect, BlockSetting::NextTimestamp, p).await;
    "evm_increaseTime" write => dev::set_block(ctx, dialect, BlockSetting::IncreaseTime, p).await;
    "anvil_increaseTime" write =>
        dev::set_block(ctx, dialect, BlockSetting::IncreaseTime, p).await;
    "evm_setBlockGasLimit" write => dev::set_block(ctx, dialect, BlockSetting::GasLimit, p).await;
    "anvil_setBlockGasLimit" write =>
        dev::set_block(ctx, dialect, BlockSetting::GasLimit, p).await;
    "anvil_setNextBlockBaseFeePerGas" write =>
        dev::set_block(ctx, dialect, BlockSetting::NextBaseFee, p).await;
    "hardhat_setNextBlockBaseFeePerGas" write =>
        dev::set_block(ctx, dialect, BlockSetting::NextBaseFee, p).await;
    "anvil_setCoinbase" write => dev::set_block(ctx, dialect, BlockSetting::Coinbase, p).await;
    "hardhat_setCoinbase" write => dev::set_block(ctx, dialect, BlockSetting::Coinbase, p).await;
    "anvil_setPrevRandao" write =>
        dev::set_block(ctx, dialect, BlockSetting::PrevRandao, p).await;
    "hardhat_setPrevRandao" write =>
        dev::set_block(ctx, dialect, BlockSetting::PrevRandao, p).await;
    "anvil_setTime" write => dev::set_time(ctx, p).await;
    "evm_setTime" write => dev::set_time(ctx, p).await;
    "anvil_setBlockTimestampInterval" write => dev::set_timestamp_interval(ctx, p).await;
    "anvil_removeBlockTimestampInterval" write => dev::remove_timestamp_interval(ctx, p).await;
    "anvil_setBalance" write => dev::patch(ctx, dialect, PatchKind::Balance, p).await;
    "hardhat_setBalance" write => dev::patch(ctx, dialect, PatchKind::Balance, p).await;
    "anvil_addBalance" write => dev::patch(ctx, dialect, PatchKind::AddBalance, p).await;
    "anvil_setNonce" write => dev::patch(ctx, dialect, PatchKind::Nonce, p).await;
    "hardhat_setNonce" write => dev::patch(ctx, dialect, PatchKind::Nonce, p).await;
    // anvil's aliases of its own methods, answered as anvil answers them (`null`).
    "evm_setAccountNonce" write => dev::patch(ctx, Dialect::Anvil, PatchKind::Nonce, p).await;
    "hardhat_addBalance" write => dev::patch(ctx, Dialect::Anvil, PatchKind::AddBalance, p).await;
    "anvil_setCode" write => dev::patch(ctx, dialect, PatchKind::Code, p).await;
    "hardhat_setCode" write => dev::patch(ctx, dialect, PatchKind::Code, p).await;
    "anvil_setStorageAt" write => dev::patch(ctx, dialect, PatchKind::Storage, p).await;
    "hardhat_setStorageAt" write => dev::patch(ctx, dialect, PatchKind::Storage, p).await;
    "anvil_impersonateAccount" write => dev::impersonate(ctx, dialect, true, p).await;
    "hardhat_impersonateAccount" write => dev::impersonate(ctx, dialect, true, p).await;
    "anvil_stopImpersonatingAccount" write => dev::impersonate(ctx, dialect, false, p).await;
    "hardhat_stopImpersonatingAccount" write => dev::impersonate(ctx, dialect, false, p).await;
    "anvil_dealERC20" write => erc20::deal(ctx, p).await;
    "anvil_setERC20Balance" write => erc20::deal(ctx, p).await;
    "anvil_setERC20Allowance" write => erc20::set_allowance(ctx, p).await;
    "anvil_autoImpersonateAccount" write => dev::auto_impersonate(ctx, p).await;
    "anvil_dropTransaction" write => dev::drop_transaction(ctx, dialect, p).await;
    "hardhat_dropTransaction" write => dev::drop_transaction(ctx, dialect, p).await;
    "anvil_dropAllTransactions" write => dev::drop_all(ctx, p).await;
    "hardhat_dropAllTransactions" write => dev::drop_all(ctx, p).await;
    "anvil_removePoolTransactions" write => dev::remove_pool_transactions(ctx, p).await;
    "evm_snapshot" write => dev::snapshot(ctx, p).await;
    "anvil_snapshot" write => dev::snapshot(ctx, p).await;
    "evm_revert" write => dev::revert(ctx, dialect, p).await;
    "anvil_revert" write => dev::revert(ctx, dialect, p).await;
    "anvil_rollback" write => rewind::rollback(ctx, p).await;
    "anvil_reset" write => reset::reset(ctx, dialect, p).await;
    "anvil_setRpcUrl" write => reset::set_rpc_url(ctx, p).await;
    "hardhat_reset" write => reset::reset(ctx, dialect, p).await;
    "anvil_reorg" write => rewind::reorg(ctx, p).await;
    "anvil_setChainId" write => dev::set_chain_id(ctx, p).await;
    "anvil_dumpState" read => state_dump::dump_state(ctx, p).await;
    "anvil_loadState" write => state_dump::load_state(ctx, p).await;
    "anvil_setLoggingEnabled" write => dev::set_logging(ctx, dialect, p);
    "hardhat_setLoggingEnabled" write => dev::set_logging(ctx, dialect, p);
    "anvil_setMinGasPrice" write => dev::set_min_gas_price(dialect, p);
    "hardhat_setMinGasPrice" write => dev::set_min_gas_price(dialect, p);
    "anvil_nodeInfo" read => node_info::node_info(ctx, p).await;
    "anvil_metadata" read => node_info::metadata(ctx, p).await;
    "hardhat_metadata" read => node_info::metadata(ctx, p).await;

    // Traces are encoded on the executor thread, within the response cap.
    "debug_traceTransaction" read => debug_trace::trace_transaction(ctx, p).await;
    "debug_traceCall" read => debug_trace::trace_call(ctx, p).await;
    "debug_traceBlockByNumber" read => debug_trace::trace_block_by_number(ctx, p).await;
    "debug_traceBlockByHash" read => debug_trace::trace_block_by_hash(ctx, p).await;
    "debug_traceBlock" read => debug_trace::trace_raw_block(ctx, p).await;
    "hearth_traceTransactionDecoded" read => debug_trace::trace_decoded(ctx, p).await;
    "trace_transaction" read => trace::trace_transaction(ctx, p).await;
    "trace_get" read => trace::trace_get(ctx, p).await;
    "trace_block" read => trace::trace_block(ctx, p).await;
    "trace_replayTransaction" read => trace::replay_transaction(ctx, p).await;
    "trace_replayBlockTransactions" read => trace::replay_block(ctx, p).await;
    "trace_call" read => trace::trace_call(ctx, p).await;
    "trace_callMany" read => trace::trace_call_many(ctx, p).await;
    "trace_filter" read => trace::trace_filter(ctx, p).await;
    "testing_buildBlockV1" read => testing::build_block(ctx, p).await;

    // The Engine API, on its authenticated port only (`core::surface`).
    "engine_exchangeCapabilities" read =>
        engine::capabilities::exchange_capabilities(p, namespace_methods("engine"));
    "engine_getClientVersionV1" read => engine::capabilities::client_version_v1(p);
    "engine_newPayloadV1" write => engine::payload::new_payload(ctx, p, 1).await;
    "engine_newPayloadV2" write => engine::payload::new_payload(ctx, p, 2).await;
    "engine_newPayloadV3" write => engine::payload::new_payload(ctx, p, 3).await;
    "engine_newPayloadV4" write => engine::payload::new_payload(ctx, p, 4).await;
    "engine_forkchoiceUpdatedV1" write =>
        engine::forkchoice::forkchoice_updated(ctx, p, 1).await;
    "engine_forkchoiceUpdatedV2" write =>
        engine::forkchoice::forkchoice_updated(ctx, p, 2).await;
    "engine_forkchoiceUpdatedV3" write =>
        engine::forkchoice::forkchoice_updated(ctx, p, 3).await;
    "engine_getPayloadV1" read => engine::payload::get_payload(ctx, p, 1).await;
    "engine_getPayloadV2" read => engine::payload::get_payload(ctx, p, 2).await;
    "engine_getPayloadV3" read => engine::payload::get_payload(ctx, p, 3).await;
    "engine_getPayloadV4" read => engine::payload::get_payload(ctx, p, 4).await;
    "engine_getPayloadV5" read => engine::payload::get_payload(ctx, p, 5).await;
    "engine_getPayloadBodiesByHashV1" read => engine::bodies::by_hash(ctx, p);
    "engine_getPayloadBodiesByRangeV1" read => engine::bodies::by_range(ctx, p);
    "engine_getBlobsV1" read => engine::blobs::get_blobs(ctx, p, 1).await;
    "engine_getBlobsV2" read => engine::blobs::get_blobs(ctx, p, 2).await;

    "txpoolExt_getTxs" read in "txpool" => txpool::get_txs(ctx, p).await;
    "txpool_status" read => txpool::status(ctx, p).await;
    "txpool_content" read => txpool::content_method(ctx, p).await;
    "txpool_contentFrom" read => txpool::content_from(ctx, p).await;
    "txpool_inspect" read => txpool::inspect(ctx, p).await;
}

/// The table's rows sorted by name: the order the metrics count methods in (a binary search
/// finds a method's counters and its row at once).
static SORTED: LazyLock<Vec<&'static Method>> = LazyLock::new(|| {
    let mut rows: Vec<&'static Method> = TABLE.iter().collect();
    rows.sort_unstable_by_key(|row| row.name);
    rows
});

/// Every core method's name, sorted.
pub(crate) static NAMES: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| SORTED.iter().map(|row| row.name).collect());

/// The row of `name`, if it is a core method (the request path usually has it already, from
/// the metrics' slot: [`row_at`]).
pub(crate) fn row(name: &str) -> Option<&'static Method> {
    SORTED.binary_search_by_key(&name, |row| row.name).ok().map(|at| SORTED[at])
}

/// The row at `index` of the sorted names (what [`RpcMetrics::slot_of`] answers for a core
/// method: the metrics count the table's names in the same order), `None` past them.
pub(crate) fn row_at(index: usize) -> Option<&'static Method> {
    SORTED.get(index).copied()
}

/// The executor calls (the `Kind::Call` rows): what the front scans a body for before parsing
/// it (`transport::shed`), a few rows, read one after another.
pub(crate) static EXECUTOR_CALLS: LazyLock<Vec<&'static Method>> =
    LazyLock::new(|| TABLE.iter().filter(|row| matches!(row.kind, Kind::Call { .. })).collect());

/// Counters for every core method of the table, then `other`.
impl Default for RpcMetrics {
    fn default() -> Self {
        Self::for_methods(&NAMES)
    }
}

/// Runs `method` (whose table row is `row`, `None` when it has none) with its raw `params`
/// and returns the result; `connection` is the WebSocket connection the request came on
/// (`None` over HTTP).
pub(crate) async fn dispatch(
    ctx: &RpcContext,
    method: String,
    row: Option<&'static Method>,
    mut params: Option<Value>,
    connection: Option<ConnectionId>,
) -> Result<Reply, RpcError> {
    // The slot's row is the method's while the metrics count the table's names (they do: its
    // `Default`); anything else is looked up.
    let row = match row {
        Some(row) if row.name == method => Some(row),
        _ => self::row(&method),
    };
    let Some(row) = row else {
        return run_extension(ctx, method, params).await;
    };
    if !ctx.serves(row.name, row.namespace) {
        return Err(RpcError::MethodNotFound(method));
    }
    if let Some(replica) = &ctx.replica {
        let writes = !row.kind.is_read();
        if let Some(answer) =
            crate::replica::divert(replica, row.name, row.namespace, writes, &mut params).await
        {
            return answer;
        }
    }
    let params = Params::new(params);
    let read = row.kind.is_read();
    let mut retries = 0;
    let mut fork_rounds = 0;
    loop {
        let generation = ctx.chain.generation();
        // A read on a fork collects the fork state it misses instead of holding this worker
        // thread while the upstream answers (`fork::misses`): the misses are fetched, awaited,
        // and the read runs again; the last round's reads wait, as every read did before.
        let result = if read && fork_rounds < misses::MAX_ROUNDS && ctx.executor.fork_reads() {
            match misses::collect_async(run(ctx, row.name, &params, connection)).await {
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
            run(ctx, row.name, &params, connection).await
        };
        match &result {
            // The request found its block number on one chain and looked for it on the next
            // (anvil_reset switched between its reads): it runs again, on the new chain, so it
            // answers as of the old chain or the new one, never as of neither.
            Err(error)
                if error.is_missing_block()
                    && retries < MAX_RESET_RETRIES
                    && read
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

/// A method the table has no row for: an extension's, if one registered it and its namespace
/// is served; else -32601.
async fn run_extension(
    ctx: &RpcContext,
    method: String,
    params: Option<Value>,
) -> Result<Reply, RpcError> {
    // Extensions are served on the public port only.
    if !matches!(ctx.surface, crate::core::Surface::Public) || !ctx.api.allows(&method) {
        return Err(RpcError::MethodNotFound(method));
    }
    match ctx.extensions.get(&method) {
        Some(extension) => extension(Params::new(params).into_value())
            .await
            .map(Reply::Value)
            .map_err(|(code, message)| RpcError::Extension { code, message }),
        None => Err(RpcError::MethodNotFound(method)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_one_row() {
        let mut names: Vec<_> = TABLE.iter().map(|row| row.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a method declared twice");
        assert_eq!(NAMES.as_slice(), names.as_slice());
        for name in &names {
            assert_eq!(row(name).map(|row| row.name), Some(*name));
        }
        assert!(row("eth_nope").is_none());
    }

    #[test]
    fn rows_say_namespace_and_kind() {
        let call = row("eth_call").expect("a core method");
        assert_eq!((call.namespace, call.kind), ("eth", Kind::Call { max_args: 4 }));
        // anvil's eth_sendUnsignedTransaction sends from any account without a signature, so a
        // list that leaves `anvil` out must not serve it either.
        let unsigned = row("eth_sendUnsignedTransaction").expect("a core method");
        assert_eq!(unsigned.namespace, "anvil", "a dev method named in eth_ is gated as anvil's");
        let eth_only = crate::core::ApiNamespaces::parse("eth").expect("valid");
        assert!(!eth_only.serves(unsigned.namespace) && eth_only.serves(call.namespace));
        assert!(row("hardhat_mine").is_some_and(|row| row.namespace == "hardhat"));
        assert!(row("eth_getBalance").is_some_and(|row| row.kind.is_read()));
        assert!(!row("eth_sendRawTransaction").is_some_and(|row| row.kind.is_read()));
        assert!(!row("eth_newFilter").is_some_and(|row| row.kind.is_read()));
    }
}
