//! Method tests through `handle_body` with a real `RpcContext`: an in-memory store holding two
//! hand-written blocks, and one stub actor standing in for the executor, mempool and miner.
//! Whole-node behaviour (real EVM, mining) is tested in `tests/it`.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Context, Handler, Message, MessageResult};
use alloy_consensus::{
    Header, Receipt, ReceiptEnvelope, SignableTransaction, Transaction as _, TxEip1559, TxEnvelope,
    TxLegacy, TxReceipt, transaction::SignerRecoverable,
};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bloom, Bytes, Log, LogData, TxKind, U256, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth_messages::code_cache::CodeCacheClient;
use hearth_messages::executor::{
    Admitted, BuildBlock, BuiltBlock, Call, CallOutcome, EstimateGas, EstimateOutcome,
    ExecutorClient, GetTouchedSlots, PooledTx, TouchedSlots,
};
use hearth_messages::filters::FilterClient;
use hearth_messages::mempool::{self, GetPooledTx, MempoolClient, PendingNonce, SubmitTx};
use hearth_messages::miner::{self, AutoMine, MineBlocks, MinerClient};
use hearth_messages::state::{self, StateClient};
use hearth_messages::storage::{
    AccountChange, AccountFields, BlockDraft, EMPTY_CODE_HASH, StateDiff, write_block,
};
use hearth_messages::subscriptions as subs;
use hearth_messages::subscriptions::SubscriptionClient;
use hearth_messages::{ExecError, MineError, StoredBody, TxError};
use serde_json::{Value, json};

use crate::transport::handle_body;
use crate::{Extensions, RpcContext, RpcLimits};

/// Hardhat/anvil dev account 0 (0xf39f..2266).
const ALICE_KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const GWEI: u128 = 1_000_000_000;
const CONTRACT: Address = Address::repeat_byte(0xcc);
const BOB: Address = Address::repeat_byte(0xb0);
/// What the stub's PendingNonce answers.
const PENDING_NONCE: u64 = 7;

// ---- the stub actor ------------------------------------------------------------------------

/// Executor, mempool and miner in one: canned answers, and a record of what it was sent.
#[derive(Default)]
struct Stub {
    submitted: Vec<TxEnvelope>,
    auto_mines: usize,
    mined: Vec<(u64, Option<u64>)>,
}

impl Actor for Stub {
    type Context = Context<Self>;
}

/// eth_call by the first input byte: 1 returns 0xabcd, 2 reverts with Error("nope"), 3 runs
/// out of gas; anything else returns nothing.
impl Handler<Admitted<Call>> for Stub {
    type Result = Result<CallOutcome, ExecError>;
    fn handle(&mut self, msg: Admitted<Call>, _: &mut Context<Self>) -> Self::Result {
        Ok(match msg.request.request.input.first() {
            Some(1) => {
                CallOutcome::Success { output: Bytes::from_static(&[0xab, 0xcd]), gas_used: 1 }
            }
            Some(2) => CallOutcome::Revert { output: error_string("nope"), gas_used: 1 },
            Some(3) => CallOutcome::Halt {
                reason: hearth_messages::executor::HaltReason::OutOfGas,
                gas_used: 1,
            },
            _ => CallOutcome::Success { output: Bytes::new(), gas_used: 1 },
        })
    }
}

/// Estimates 21000 unless the input starts with 2 (revert).
impl Handler<Admitted<EstimateGas>> for Stub {
    type Result = Result<EstimateOutcome, ExecError>;
    fn handle(&mut self, msg: Admitted<EstimateGas>, _: &mut Context<Self>) -> Self::Result {
        Ok(match msg.request.request.input.first() {
            Some(2) => EstimateOutcome::Failed(CallOutcome::Revert {
                output: error_string("nope"),
                gas_used: 1,
            }),
            _ => EstimateOutcome::Gas(21_000),
        })
    }
}

/// Touches no slot (the ERC-20 methods are tested through the whole node).
impl Handler<Admitted<GetTouchedSlots>> for Stub {
    type Result = Result<TouchedSlots, ExecError>;
    fn handle(&mut self, _: Admitted<GetTouchedSlots>, _: &mut Context<Self>) -> Self::Result {
        let outcome = CallOutcome::Success { output: Bytes::new(), gas_used: 1 };
        Ok(TouchedSlots { outcome, slots: Vec::new() })
    }
}

impl Handler<Admitted<BuildBlock>> for Stub {
    type Result = Result<BuiltBlock, ExecError>;
    fn handle(&mut self, _: Admitted<BuildBlock>, _: &mut Context<Self>) -> Self::Result {
        Err(ExecError::UnknownBlock)
    }
}

impl Handler<SubmitTx> for Stub {
    type Result = Result<B256, TxError>;
    fn handle(&mut self, msg: SubmitTx, _: &mut Context<Self>) -> Self::Result {
        let hash = *msg.tx.tx_hash();
        self.submitted.push(msg.tx);
        Ok(hash)
    }
}

/// Seals with the caller's nonce, else the stub's pending one, and records it as submitted.
impl Handler<mempool::SubmitFilled> for Stub {
    type Result = Result<B256, TxError>;
    fn handle(&mut self, msg: mempool::SubmitFilled, _: &mut Context<Self>) -> Self::Result {
        let tx = (msg.seal)(msg.nonce.unwrap_or(PENDING_NONCE))?;
        let hash = *tx.tx_hash();
        self.submitted.push(tx);
        Ok(hash)
    }
}

/// Admits as the plain message, then asks the given miner as the pool does (here the stub
/// itself, which counts it).
macro_rules! stub_then_mine {
    ($($msg:ty),+) => {$(
        impl Handler<mempool::ThenMine<$msg>> for Stub {
            type Result = <$msg as Message>::Result;
            fn handle(&mut self, msg: mempool::ThenMine<$msg>, ctx: &mut Context<Self>) -> Self::Result {
                let admitted = <Self as Handler<$msg>>::handle(self, msg.submit, ctx);
                if mempool::Admits::admitted_any(&admitted) {
                    let (reply, _) = tokio::sync::oneshot::channel();
                    let _ = msg.miner.try_send(hearth_messages::ask::Ask { msg: AutoMine, reply });
                }
                admitted
            }
        }
    )+};
}

stub_then_mine!(SubmitTx, mempool::SubmitFilled);

/// Finds what was submitted (the stub never mines it into the store).
impl Handler<GetPooledTx> for Stub {
    type Result = Option<PooledTx>;
    fn handle(&mut self, msg: GetPooledTx, _: &mut Context<Self>) -> Self::Result {
        let tx = self.submitted.iter().find(|tx| *tx.tx_hash() == msg.0)?;
        let sender = tx.recover_signer().ok()?;
        Some(PooledTx { tx: Arc::new(tx.clone()), sender, hash: msg.0 })
    }
}

impl Handler<PendingNonce> for Stub {
    type Result = Result<u64, TxError>;
    fn handle(&mut self, _: PendingNonce, _: &mut Context<Self>) -> Self::Result {
        Ok(PENDING_NONCE)
    }
}

impl Handler<AutoMine> for Stub {
    type Result = Result<Option<u64>, MineError>;
    fn handle(&mut self, _: AutoMine, _: &mut Context<Self>) -> Self::Result {
        self.auto_mines += 1;
        Ok(None)
    }
}

impl Handler<MineBlocks> for Stub {
    type Result = Result<u64, MineError>;
    fn handle(&mut self, msg: MineBlocks, _: &mut Context<Self>) -> Self::Result {
        self.mined.push((msg.count, msg.timestamp));
        Ok(1 + msg.count)
    }
}

/// What the stub recorded: (submitted, automine requests, mine requests).
struct Recorded;

impl Message for Recorded {
    type Result = (Vec<TxEnvelope>, usize, Vec<(u64, Option<u64>)>);
}

impl Handler<Recorded> for Stub {
    type Result = MessageResult<Recorded>;
    fn handle(&mut self, _: Recorded, _: &mut Context<Self>) -> Self::Result {
        MessageResult((self.submitted.clone(), self.auto_mines, self.mined.clone()))
    }
}

/// Answers every dev-control message with a fixed reply; the dev methods are tested through
/// the whole node (tests/it), this front-end suite only needs the context to exist.
struct Idle;

impl Actor for Idle {
    type Context = Context<Self>;
}

hearth_messages::answer_asks!(Stub: mempool::ThenMine<SubmitTx>, mempool::ThenMine<mempool::SubmitFilled>, GetPooledTx, PendingNonce, AutoMine);
hearth_messages::answer_asks!(Idle: mempool::ThenMine<SubmitTx>, mempool::ThenMine<mempool::SubmitFilled>, GetPooledTx, mempool::GetPooledByNonce, mempool::GetBlobs, mempool::GetBlobTxs, mempool::TakePending, PendingNonce, AutoMine);
hearth_messages::answer_asks!(Idle: mempool::ThenMine<mempool::SubmitTxs>, mempool::PoolSize, mempool::GetPoolCounters, hearth_messages::code_cache::GetCodeCacheStats, mempool::IsImpersonated);
hearth_messages::answer_asks!(Idle: subs::Connect, subs::Subscribe, subs::Unsubscribe, subs::GetSubscriptionStats);
hearth_messages::answer_asks!(Idle: hearth_messages::filters::InstallFilter, hearth_messages::filters::PollFilter, hearth_messages::filters::GetFilter, hearth_messages::filters::UninstallFilter);

macro_rules! idle_replies {
    ($($msg:ty => $reply:expr),* $(,)?) => {$(
        impl Handler<$msg> for Idle {
            type Result = MessageResult<$msg>;
            fn handle(&mut self, _: $msg, _: &mut Context<Self>) -> Self::Result {
                MessageResult($reply)
            }
        }
    )*};
}

idle_replies! {
    mempool::ThenMine<SubmitTx> => Err(TxError::PoolFull),
    mempool::ThenMine<mempool::SubmitFilled> => Err(TxError::PoolFull),
    GetPooledTx => None,
    mempool::GetPooledByNonce => None,
    mempool::GetBlobs => None,
    mempool::GetBlobTxs => Vec::new(),
    mempool::TakePending => Vec::new(),
    PendingNonce => Ok(0),
    AutoMine => Ok(None),
    MineBlocks => Ok(0),
    mempool::ThenMine<mempool::SubmitTxs> => Err(TxError::PoolFull),
    mempool::SetImpersonated => (),
    mempool::SetAutoImpersonate => (),
    mempool::GetPoolContent => mempool::PoolContent::default(),
    mempool::DropTx => false,
    mempool::Revalidate => (),
    mempool::SetPoolGasLimit => (),
    miner::MineSpaced => Ok(0),
    miner::SetIntervalMining => (),
    miner::SetAutomine => (),
    miner::SetBlockParam => Ok(0),
    miner::GetMiningStatus => miner::MiningStatus { automine: true, interval: None, ticks_skipped: 0, coinbase: alloy_primitives::Address::ZERO, gas_limit: 30_000_000, next_timestamp: 2 },
    miner::SetTime => Ok(0),
    miner::SetTimestampInterval => false,
    miner::MineDetailed => Ok(Vec::new()),
    miner::Rewind => Ok(0),
    miner::BetweenBlocks<state::CommitBlock> => Err(hearth_messages::MineError::Setting("idle".into())),
    mempool::SetChainId => 0,
    mempool::DropAll => 0,
    mempool::RemoveSender => 0,
    state::ListSnapshots => Vec::new(),
    mempool::PoolSize => (2, 1),
    mempool::GetPoolCounters => mempool::PoolCounters { dropped_invalid: 3 },
    mempool::IsImpersonated => false,
    hearth_messages::filters::InstallFilter => Err(hearth_messages::filters::FilterError::TooMany { max: 0 }),
    hearth_messages::filters::PollFilter => Err(hearth_messages::filters::FilterError::NotFound),
    hearth_messages::filters::GetFilter => Err(hearth_messages::filters::FilterError::NotFound),
    hearth_messages::filters::UninstallFilter => false,
    hearth_messages::code_cache::GetCodeCacheStats => hearth_messages::code_cache::CodeCacheStats { hits: 5, misses: 1, evictions: 0, entries: 1 },
    subs::Connect => Err(subs::SubscriptionError::TooManyConnections { max: 0 }),
    subs::Disconnect => (),
    subs::Subscribe => Err(subs::SubscriptionError::UnknownConnection),
    subs::Unsubscribe => false,
    subs::GetSubscriptionStats => subs::SubscriptionStats::default(),
    miner::BetweenBlocks<state::PatchState> => Ok(B256::ZERO),
    miner::BetweenBlocks<state::LoadState> => Ok(B256::ZERO),
    state::DumpState => Err(hearth_messages::StateError::DumpTooLarge { max_json_bytes: 0 }),
    miner::BetweenBlocks<state::TakeSnapshot> => Ok(1),
    miner::BetweenBlocks<state::RevertTo> => Ok(false),
}

/// The clients for the tests that reach the pool, the miner and the state owner: `stub`
/// answers what the tests record (submissions, mining), an idle actor the rest.
fn clients(stub: &Addr<Stub>) -> (MempoolClient, MinerClient, StateClient) {
    let idle = Idle.start();
    let mempool = MempoolClient {
        submit_tx_then_mine: stub.clone().recipient(),
        submit_filled_then_mine: stub.clone().recipient(),
        get_pooled_tx: stub.clone().recipient(),
        pending_nonce: stub.clone().recipient(),
        ..MempoolClient::new(&idle)
    };
    let miner = MinerClient {
        auto_mine: stub.clone().recipient(),
        mine_blocks: stub.clone().recipient(),
        ..MinerClient::new(&idle)
    };
    (mempool, miner, StateClient::new(&idle))
}

/// ABI encoding of `Error(reason)`.
fn error_string(reason: &str) -> Bytes {
    let mut out = vec![0x08, 0xc3, 0x79, 0xa0];
    out.extend_from_slice(&U256::from(32).to_be_bytes::<32>());
    out.extend_from_slice(&U256::from(reason.len()).to_be_bytes::<32>());
    let mut padded = reason.as_bytes().to_vec();
    padded.resize(reason.len().div_ceil(32) * 32, 0);
    out.extend_from_slice(&padded);
    out.into()
}

// ---- the fixture chain ---------------------------------------------------------------------

/// The context, the stub behind it, and the facts of the two stored blocks.
struct Fixture {
    ctx: RpcContext,
    stub: Addr<Stub>,
    alice: PrivateKeySigner,
    genesis: B256,
    block1: B256,
    /// Block 1, tx 0: Alice sends Bob 1 ETH (EIP-1559), one log.
    transfer: B256,
    /// Block 1, tx 1: Alice creates a contract (legacy), two logs.
    create: B256,
}

fn topic(n: u8) -> B256 {
    B256::repeat_byte(n)
}

fn log(topics: Vec<B256>) -> Log {
    Log { address: CONTRACT, data: LogData::new_unchecked(topics, Bytes::from_static(&[1])) }
}

fn sign<T: SignableTransaction<alloy_primitives::Signature>>(
    signer: &PrivateKeySigner,
    tx: T,
) -> TxEnvelope
where
    TxEnvelope: From<alloy_consensus::Signed<T>>,
{
    let signature = signer.sign_hash_sync(&tx.signature_hash()).expect("signing works");
    tx.into_signed(signature).into()
}

fn account(nonce: u64, eth: u64, code_hash: B256) -> AccountChange {
    AccountChange {
        info: Some(AccountFields {
            nonce,
            balance: U256::from(eth) * U256::from(10u64.pow(18)),
            code_hash,
        }),
        storage_wiped: false,
        storage: Default::default(),
    }
}

/// Genesis (Alice 10 ETH, a contract with slot 1 = 42) and block 1 (two transactions; Alice
/// then has 9 ETH and nonce 2, slot 1 = 43).
/// `max_queued`: the executor pool's queue cap (the budget is the default).
fn fixture(max_queued: usize) -> Fixture {
    let alice: PrivateKeySigner = ALICE_KEY.parse().expect("valid key");
    let db = hearth_messages::storage::ChainWriter::in_memory().expect("in-memory store");
    let code = Bytes::from_static(&[0x60, 0x01]);
    let code_hash = keccak256(&code);

    let mut genesis_diff = StateDiff::default();
    genesis_diff.accounts.insert(alice.address(), account(0, 10, EMPTY_CODE_HASH));
    let mut contract = account(1, 0, code_hash);
    contract.storage.insert(U256::from(1), U256::from(42));
    genesis_diff.accounts.insert(CONTRACT, contract);
    genesis_diff.codes.insert(code_hash, code);
    let genesis_header = Header {
        number: 0,
        gas_limit: 30_000_000,
        base_fee_per_gas: Some(GWEI as u64),
        withdrawals_root: Some(B256::ZERO),
        ..Default::default()
    };
    let empty = StoredBody { transactions: vec![], senders: vec![] };
    let draft =
        BlockDraft { header: genesis_header, body: empty, receipts: vec![], touched: Vec::new() };
    let genesis = write_block(&db, draft, &genesis_diff).expect("genesis written");

    let transfer = sign(
        &alice,
        TxEip1559 {
            chain_id: 31337,
            nonce: 0,
            gas_limit: 21_000,
            max_fee_per_gas: 3 * GWEI,
            max_priority_fee_per_gas: GWEI,
            to: TxKind::Call(BOB),
            value: U256::from(1),
            ..Default::default()
        },
    );
    let create = sign(
        &alice,
        TxLegacy {
            chain_id: Some(31337),
            nonce: 1,
            gas_price: 2 * GWEI,
            gas_limit: 100_000,
            to: TxKind::Create,
            input: Bytes::from_static(&[0x60, 0x01]),
            ..Default::default()
        },
    );
    let receipts = vec![
        ReceiptEnvelope::Eip1559(
            Receipt {
                status: true.into(),
                cumulative_gas_used: 21_000,
                logs: vec![log(vec![topic(1)])],
            }
            .into_with_bloom(),
        ),
        ReceiptEnvelope::Legacy(
            Receipt {
                status: true.into(),
                cumulative_gas_used: 74_000,
                logs: vec![log(vec![topic(2)]), log(vec![topic(1), topic(3)])],
            }
            .into_with_bloom(),
        ),
    ];
    let mut bloom = Bloom::default();
    for receipt in &receipts {
        bloom |= *receipt.logs_bloom();
    }
    let header = Header {
        number: 1,
        parent_hash: genesis.hash,
        gas_limit: 30_000_000,
        gas_used: 74_000,
        timestamp: 12,
        base_fee_per_gas: Some(GWEI as u64),
        withdrawals_root: Some(B256::ZERO),
        logs_bloom: bloom,
        ..Default::default()
    };
    let mut diff = StateDiff::default();
    diff.accounts.insert(alice.address(), account(2, 9, EMPTY_CODE_HASH));
    let mut contract = AccountChange { storage_wiped: false, ..account(1, 0, code_hash) };
    contract.storage.insert(U256::from(1), U256::from(43));
    diff.accounts.insert(CONTRACT, contract);
    let body = StoredBody {
        transactions: vec![transfer.clone(), create.clone()],
        senders: vec![alice.address(); 2],
    };
    let block1 =
        write_block(&db, BlockDraft { header, body, receipts, touched: Vec::new() }, &diff)
            .expect("block 1 written");

    let stub = Stub::default().start();
    let executor = ExecutorClient::new(
        stub.clone().recipient(),
        stub.clone().recipient(),
        stub.clone().recipient(),
        stub.clone().recipient(),
        hearth_messages::admission::AdmissionLimits {
            max_queued,
            ..hearth_messages::admission::AdmissionLimits::default()
        },
    );
    let mut extensions = Extensions::default();
    extensions.register("ext_echo", Arc::new(|params| Box::pin(async move { Ok(params) })));
    extensions.register(
        "eth_chainId",
        Arc::new(|_| {
            Box::pin(async { Err((1, "an extension must not shadow a core method".into())) })
        }),
    );
    let (mempool, miner, state) = clients(&stub);
    let idle = Idle.start();
    let ctx = RpcContext {
        chain: db.reader(),
        executor,
        mempool,
        miner,
        state,
        signers: Arc::new(vec![alice.clone()]),
        api: crate::ApiNamespaces::all(),
        web: Arc::default(),
        chain_id: hearth_messages::ChainId::new(31337),
        gas_price: None,
        node: crate::NodeFacts::new("Prague"),
        logging: crate::LogSwitch::default(),
        forks: Default::default(),
        limits: RpcLimits::default(),
        extensions,
        client_version: "hearth/test".into(),
        metrics: Arc::default(),
        filters: FilterClient::new(&idle),
        metric_sources: crate::MetricSources {
            code_cache: CodeCacheClient::new(&idle),
            restarts: Vec::new(),
            fork: None,
        },
        subscriptions: SubscriptionClient::new(&idle),
        reset: None,
        fork_url: None,
        surface: Default::default(),
        engine: None,
        replica: None,
    };
    Fixture {
        ctx,
        stub,
        alice,
        genesis: genesis.hash,
        block1: block1.hash,
        transfer: *transfer.tx_hash(),
        create: *create.tx_hash(),
    }
}

impl Fixture {
    /// The whole response to `method(params)`, with its HTTP status.
    async fn request(&self, method: &str, params: Value) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let reply = handle_body(&self.ctx, body.to_string().as_bytes()).await;
        let json = serde_json::from_slice(&reply.body.expect("a response")).expect("JSON");
        (reply.status, json)
    }

    /// The result of `method(params)`, failing on an error.
    async fn ok(&self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// The error `(code, message)` of `method(params)`, failing on success.
    async fn err(&self, method: &str, params: Value) -> (i64, String) {
        let (_, response) = self.request(method, params).await;
        let error = &response["error"];
        assert!(error.is_object(), "{method} should fail: {response}");
        (
            error["code"].as_i64().expect("code"),
            error["message"].as_str().expect("message").to_owned(),
        )
    }

    async fn recorded(&self) -> (Vec<TxEnvelope>, usize, Vec<(u64, Option<u64>)>) {
        self.stub.send(Recorded).await.expect("stub alive")
    }
}

fn eth(n: u64) -> String {
    format!("{:#x}", U256::from(n) * U256::from(10u64.pow(18)))
}

// ---- tests ---------------------------------------------------------------------------------

#[actix::test]
async fn identity_methods() {
    let f = fixture(4);
    assert_eq!(f.ok("web3_clientVersion", json!([])).await, "hearth/test");
    assert_eq!(f.ok("net_version", json!([])).await, "31337");
    assert_eq!(f.ok("net_listening", json!([])).await, true);
    assert_eq!(f.ok("eth_chainId", json!([])).await, "0x7a69", "core methods win over extensions");
    assert_eq!(f.ok("eth_blockNumber", json!(null)).await, "0x1");
    assert_eq!(f.ok("eth_syncing", json!([])).await, false);
    assert_eq!(f.ok("eth_accounts", json!([])).await, json!([f.alice.address()]));
    assert_eq!(
        f.ok("web3_sha3", json!(["0x68656c6c6f20776f726c64"])).await,
        "0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad"
    );
    assert_eq!(f.err("eth_chainId", json!([1])).await.0, -32602, "extra params");
    assert_eq!(f.err("eth_chainId", json!({"a": 1})).await.0, -32602, "by-name params");
}

#[actix::test]
async fn extensions_get_the_raw_params() {
    let f = fixture(4);
    assert_eq!(f.ok("ext_echo", json!({"a": 1})).await, json!({"a": 1}));
    assert_eq!(f.ok("ext_echo", json!([1, 2])).await, json!([1, 2]));
    let (code, message) = f.err("ext_nope", json!([])).await;
    assert_eq!(
        (code, message.as_str()),
        (-32601, "the method ext_nope does not exist/is not available")
    );
}

#[actix::test]
async fn state_queries_read_at_any_block() {
    let f = fixture(4);
    let alice = f.alice.address();
    assert_eq!(f.ok("eth_getBalance", json!([alice, "0x0"])).await, eth(10));
    assert_eq!(f.ok("eth_getBalance", json!([alice])).await, eth(9));
    assert_eq!(f.ok("eth_getBalance", json!([alice, "pending"])).await, eth(9));
    assert_eq!(f.ok("eth_getBalance", json!([alice, {"blockHash": f.genesis}])).await, eth(10));
    assert_eq!(f.ok("eth_getBalance", json!([alice, f.genesis])).await, eth(10));
    assert_eq!(f.ok("eth_getBalance", json!([alice, {"blockNumber": "0x1"}])).await, eth(9));
    assert_eq!(f.ok("eth_getBalance", json!([BOB, "latest"])).await, "0x0");
    assert_eq!(
        f.err("eth_getBalance", json!([alice, "0x2"])).await,
        (-32000, "header not found".into())
    );
    let unknown = json!([alice, {"blockHash": B256::repeat_byte(9)}]);
    assert_eq!(f.err("eth_getBalance", unknown).await, (-32000, "header not found".into()));
    assert_eq!(f.err("eth_getBalance", json!(["0xabc", "latest"])).await.0, -32602);
    // A block number with a leading zero, as anvil takes it (a test suite sent "0x08").
    assert_eq!(f.ok("eth_getBalance", json!([alice, "0x01"])).await, eth(9));
    assert_eq!(f.err("eth_getBalance", json!([alice, "0x1g"])).await.0, -32602);

    assert_eq!(f.ok("eth_getTransactionCount", json!([alice, "earliest"])).await, "0x0");
    assert_eq!(f.ok("eth_getTransactionCount", json!([alice, "latest"])).await, "0x2");
    assert_eq!(f.ok("eth_getTransactionCount", json!([alice, "pending"])).await, "0x7");

    assert_eq!(f.ok("eth_getCode", json!([CONTRACT, "latest"])).await, "0x6001");
    assert_eq!(f.ok("eth_getCode", json!([alice, "latest"])).await, "0x");
    let slot = |v: u64| format!("0x{v:064x}");
    assert_eq!(f.ok("eth_getStorageAt", json!([CONTRACT, "0x1", "0x0"])).await, slot(42));
    assert_eq!(f.ok("eth_getStorageAt", json!([CONTRACT, slot(1), "latest"])).await, slot(43));
    assert_eq!(f.ok("eth_getStorageAt", json!([CONTRACT, "0x2"])).await, slot(0));
}

#[actix::test]
async fn blocks_and_transactions() {
    let f = fixture(4);
    let block = f.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(block["hash"], json!(f.block1));
    assert_eq!(block["parentHash"], json!(f.genesis));
    assert_eq!(block["transactions"], json!([f.transfer, f.create]));
    for field in [
        "sha3Uncles",
        "miner",
        "stateRoot",
        "transactionsRoot",
        "receiptsRoot",
        "logsBloom",
        "difficulty",
        "number",
        "gasLimit",
        "gasUsed",
        "timestamp",
        "extraData",
        "mixHash",
        "nonce",
        "baseFeePerGas",
        "withdrawalsRoot",
        "size",
    ] {
        assert!(block[field].is_string(), "{field} missing: {block}");
    }
    assert_eq!((block["uncles"].clone(), block["withdrawals"].clone()), (json!([]), json!([])));
    assert_eq!(block["number"], "0x1");
    assert_eq!(f.ok("eth_getBlockByHash", json!([f.block1, false])).await, block);
    assert_eq!(f.ok("eth_getBlockByNumber", json!(["0x2", false])).await, Value::Null);
    assert_eq!(f.ok("eth_getBlockByHash", json!([B256::repeat_byte(9), false])).await, Value::Null);
    assert_eq!(f.err("eth_getBlockByNumber", json!(["latest"])).await.0, -32602);

    let full = f.ok("eth_getBlockByNumber", json!(["0x1", true])).await;
    let tx = &full["transactions"][0];
    assert_eq!((tx["hash"].clone(), tx["blockHash"].clone()), (json!(f.transfer), json!(f.block1)));
    assert_eq!((tx["type"].clone(), tx["transactionIndex"].clone()), (json!("0x2"), json!("0x0")));
    assert_eq!(tx["from"], json!(f.alice.address()));
    // An EIP-1559 transaction's gasPrice is what it paid: base fee + tip.
    assert_eq!(tx["gasPrice"], format!("{:#x}", 2 * GWEI));

    assert_eq!(
        f.ok("eth_getTransactionByHash", json!([f.create])).await["transactionIndex"],
        "0x1"
    );
    assert_eq!(f.ok("eth_getTransactionByHash", json!([B256::repeat_byte(7)])).await, Value::Null);
    assert_eq!(f.ok("eth_getBlockTransactionCountByNumber", json!(["0x1"])).await, "0x2");
    assert_eq!(f.ok("eth_getBlockTransactionCountByNumber", json!(["0x0"])).await, "0x0");
    assert_eq!(f.ok("eth_getBlockTransactionCountByNumber", json!(["0x5"])).await, Value::Null);
    assert_eq!(f.ok("eth_getBlockTransactionCountByHash", json!([f.block1])).await, "0x2");
    assert_eq!(f.ok("eth_getBlockTransactionCountByHash", json!([B256::ZERO])).await, Value::Null);
    let second = f.ok("eth_getTransactionByBlockHashAndIndex", json!([f.block1, "0x1"])).await;
    assert_eq!(second["hash"], json!(f.create));
    assert_eq!(
        f.ok("eth_getTransactionByBlockNumberAndIndex", json!(["0x1", "0x1"])).await,
        second
    );
    assert_eq!(
        f.ok("eth_getTransactionByBlockNumberAndIndex", json!(["0x1", "0x2"])).await,
        Value::Null
    );
}

#[actix::test]
async fn receipts_carry_per_transaction_gas_and_block_wide_log_indexes() {
    let f = fixture(4);
    let first = f.ok("eth_getTransactionReceipt", json!([f.transfer])).await;
    assert_eq!(first["gasUsed"], "0x5208");
    assert_eq!(first["effectiveGasPrice"], format!("{:#x}", 2 * GWEI), "min(maxFee, base + tip)");
    assert_eq!((first["to"].clone(), first["contractAddress"].clone()), (json!(BOB), Value::Null));
    assert_eq!(first["logs"][0]["logIndex"], "0x0");

    let second = f.ok("eth_getTransactionReceipt", json!([f.create])).await;
    assert_eq!(second["gasUsed"], format!("{:#x}", 74_000 - 21_000));
    assert_eq!(second["cumulativeGasUsed"], format!("{:#x}", 74_000));
    assert_eq!(second["effectiveGasPrice"], format!("{:#x}", 2 * GWEI));
    assert_eq!(second["contractAddress"], json!(f.alice.address().create(1)));
    assert_eq!(second["to"], Value::Null);
    assert_eq!((second["status"].clone(), second["type"].clone()), (json!("0x1"), json!("0x0")));
    assert_eq!(
        (second["transactionIndex"].clone(), second["blockHash"].clone()),
        (json!("0x1"), json!(f.block1))
    );
    assert_eq!(second["from"], json!(f.alice.address()));
    assert!(second["logsBloom"].is_string());
    let indexes: Vec<&Value> =
        second["logs"].as_array().unwrap().iter().map(|l| &l["logIndex"]).collect();
    assert_eq!(indexes, [&json!("0x1"), &json!("0x2")]);
    assert_eq!(second["logs"][0]["transactionHash"], json!(f.create));
    assert_eq!(f.ok("eth_getTransactionReceipt", json!([B256::repeat_byte(7)])).await, Value::Null);
}

#[actix::test]
async fn logs_match_address_topics_and_ranges() {
    let f = fixture(4);
    let all = f.ok("eth_getLogs", json!([{"fromBlock": "earliest"}])).await;
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all[2]["logIndex"], "0x2");
    assert_eq!(all[2]["transactionIndex"], "0x1");
    assert_eq!(all[2]["removed"], false);
    assert_eq!(f.ok("eth_getLogs", json!([{}])).await, all, "latest..latest is block 1");
    assert_eq!(f.ok("eth_getLogs", json!([{"blockHash": f.block1}])).await, all);
    assert_eq!(f.ok("eth_getLogs", json!([{"address": [BOB, CONTRACT]}])).await, all);
    assert_eq!(f.ok("eth_getLogs", json!([{"address": BOB}])).await, json!([]));
    assert_eq!(
        f.ok("eth_getLogs", json!([{"toBlock": "0x0", "fromBlock": "0x0"}])).await,
        json!([])
    );

    let topic1 = f.ok("eth_getLogs", json!([{"topics": [topic(1)]}])).await;
    assert_eq!(topic1.as_array().unwrap().len(), 2);
    let either = f.ok("eth_getLogs", json!([{"topics": [[topic(2), topic(3)]]}])).await;
    assert_eq!(either.as_array().unwrap().len(), 1);
    let second = f.ok("eth_getLogs", json!([{"topics": [null, topic(3)]}])).await;
    assert_eq!(second.as_array().unwrap().len(), 1);
    assert_eq!(second[0]["logIndex"], "0x2");

    assert_eq!(
        f.ok("eth_getLogs", json!([{"fromBlock": "0x5", "toBlock": "0x9"}])).await,
        json!([])
    );
    assert_eq!(
        f.err("eth_getLogs", json!([{"fromBlock": "0x1", "toBlock": "0x0"}])).await,
        (-32000, "invalid block range params".into())
    );
    assert_eq!(
        f.err("eth_getLogs", json!([{"blockHash": f.block1, "toBlock": "0x0"}])).await.0,
        -32602
    );
    assert_eq!(
        f.err("eth_getLogs", json!([{"blockHash": B256::ZERO}])).await,
        (-32000, "unknown block".into())
    );
}

#[actix::test]
async fn calls_map_outcomes_to_codes() {
    let f = fixture(4);
    let call = |data: &str| json!([{"to": CONTRACT, "data": data}, "latest"]);
    assert_eq!(f.ok("eth_call", call("0x01")).await, "0xabcd");
    let (_, reverted) = f.request("eth_call", call("0x02")).await;
    assert_eq!(reverted["error"]["code"], 3);
    assert_eq!(reverted["error"]["message"], "execution reverted: nope");
    assert_eq!(reverted["error"]["data"], json!(error_string("nope")));
    assert_eq!(f.err("eth_call", call("0x03")).await, (-32000, "out of gas".into()));
    assert_eq!(
        f.err("eth_call", json!([{"to": CONTRACT}, "0x9"])).await,
        (-32000, "header not found".into())
    );
    // State overrides are decoded strictly: a bad address is -32602.
    assert_eq!(
        f.err("eth_call", json!([{"to": CONTRACT}, "latest", {"0x12": {}}])).await.0,
        -32602
    );
    assert_eq!(
        f.err("eth_call", json!([{"to": CONTRACT, "input": "0x01", "data": "0x02"}])).await.0,
        -32602
    );

    assert_eq!(f.ok("eth_estimateGas", json!([{"to": CONTRACT}])).await, "0x5208");
    assert_eq!(f.err("eth_estimateGas", json!([{"to": CONTRACT, "data": "0x02"}])).await.0, 3);
}

#[actix::test]
async fn a_busy_executor_sheds_with_503_for_single_requests_only() {
    // No queue: a call sent and not yet run takes the one thread, so the next is refused.
    let f = fixture(0);
    let call = Call { request: Default::default(), block: 1 };
    let mut running = Box::pin(f.ctx.executor.call(call));
    assert!(futures_util::poll!(&mut running).is_pending());
    let (status, response) = f.request("eth_call", json!([{"to": CONTRACT}])).await;
    assert_eq!((status, response["error"]["code"].clone()), (503, json!(-32005)));
    let batch =
        json!([{"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [{"to": CONTRACT}]}]);
    let reply = handle_body(&f.ctx, batch.to_string().as_bytes()).await;
    assert_eq!(reply.status, 200);
    let answer: Value = serde_json::from_slice(&reply.body.expect("a batch answer")).unwrap();
    assert_eq!(answer[0]["error"]["code"], json!(-32005), "{answer}");
    assert!(running.await.is_ok(), "the admitted call still runs");
}

#[actix::test]
async fn an_executor_call_over_budget_is_refused_from_a_scan_of_its_body() {
    // No queue: a call sent and not yet run takes the one thread, so the next is refused.
    let f = fixture(0);
    let mut running = Box::pin(f.ctx.executor.call(Call { request: Default::default(), block: 1 }));
    assert!(futures_util::poll!(&mut running).is_pending());
    // Params the ordinary path would answer -32602 for: the early refusal does not decode them.
    let body =
        br#"{"params":[{"to":"not an address"}],"id":"r-7","jsonrpc":"2.0","method":"eth_call"}"#;
    let reply = handle_body(&f.ctx, body).await;
    assert_eq!(reply.status, 503);
    let answer: Value = serde_json::from_slice(&reply.body.expect("an answer")).unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!("r-7"), json!(-32005))
    );
    let message = answer["error"]["message"].as_str().expect("a message");
    assert!(message.contains("--executor.max-queued"), "{message}");
    let estimate = br#"{"jsonrpc":"2.0","id":8,"method":"eth_estimateGas","params":[{}]}"#;
    let answer: Value =
        serde_json::from_slice(&handle_body(&f.ctx, estimate).await.body.expect("an answer"))
            .unwrap();
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(8), json!(-32005)));
    // Counted as the ordinary path counts a refusal: by path, by method, by reason.
    assert_eq!(f.ctx.metrics.rejections(crate::Rejection::ExecutorBusy), 2);
    assert_eq!(f.ctx.executor.refusals(), [0, 2], "queue_delay, queue_full");
    let mut text = String::new();
    f.ctx.metrics.render(&mut text);
    crate::core::executor_metrics(&mut text, &f.ctx.executor);
    assert!(text.contains("hearth_rpc_rejections_total{path=\"executor_busy\"} 2"), "{text}");
    assert!(text.contains("hearth_executor_refusals_total{reason=\"queue_full\"} 2"), "{text}");
    assert!(text.contains("hearth_rpc_requests_total{method=\"eth_call\"} 1"), "{text}");
    // Other methods are never refused by it, even when `"method":"eth_call"` is in the body.
    for other in [
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[{"method":"eth_call"}]}"#,
        r#"{"jsonrpc":"2.0","id":1,"params":["\"method\":\"eth_call\""],"method":"eth_blockNumber"}"#,
    ] {
        let reply = handle_body(&f.ctx, other.as_bytes()).await;
        let answer: Value = serde_json::from_slice(&reply.body.expect("an answer")).unwrap();
        assert_eq!(
            (reply.status, answer["error"]["code"].clone()),
            (200, json!(-32602)),
            "{other}"
        );
    }
    let plain = br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
    let answer: Value =
        serde_json::from_slice(&handle_body(&f.ctx, plain).await.body.expect("an answer")).unwrap();
    assert_eq!(answer["result"], json!("0x1"));
    assert_eq!(f.ctx.metrics.rejections(crate::Rejection::ExecutorBusy), 2, "nothing more shed");
    // Params of a shape no executor method takes are not refused as busy: the ordinary path
    // answers them -32602 (it decodes params before admission), busy or not.
    for malformed in [
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call"}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":["latest"]}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":{"to":"0x01"}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_simulateV1","params":[{},"latest",{}]}"#,
    ] {
        let reply = handle_body(&f.ctx, malformed.as_bytes()).await;
        let answer: Value = serde_json::from_slice(&reply.body.expect("an answer")).unwrap();
        assert_eq!(
            (reply.status, answer["id"].clone(), answer["error"]["code"].clone()),
            (200, json!(9), json!(-32602)),
            "{malformed}"
        );
    }
    assert_eq!(f.ctx.metrics.rejections(crate::Rejection::ExecutorBusy), 2, "none shed");
    // A body that is not valid JSON gets the ordinary path's parse error, busy or not: the
    // scan finds a well-shaped eth_call in each, but a refusal would hide what to fix.
    for invalid in [
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":[{"to":0x01}]}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":[{"to":"0x01",}]}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":[{"to":"\q"}]}"#,
        r#"{"jsonrpc":"2.0","id":9,"extra":tru,"method":"eth_call","params":[{}]}"#,
        // Skipped unchecked by serde_json's IgnoredAny, refused by the ordinary parser.
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":[{"to":"\ud800"}]}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"eth_call","params":[{"gas":1e999}]}"#,
    ] {
        let reply = handle_body(&f.ctx, invalid.as_bytes()).await;
        let answer: Value = serde_json::from_slice(&reply.body.expect("an answer")).unwrap();
        assert_eq!(
            (reply.status, answer["id"].clone(), answer["error"]["code"].clone()),
            (200, Value::Null, json!(-32700)),
            "{invalid}"
        );
    }
    assert_eq!(f.ctx.executor.refusals(), [0, 2], "a parse error is no refusal");
    assert!(running.await.is_ok(), "the admitted call still runs");
    // With the thread free again the same body goes the ordinary way, which decodes params.
    let answer: Value =
        serde_json::from_slice(&handle_body(&f.ctx, body).await.body.expect("an answer")).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
}

#[actix::test]
async fn a_connection_that_retries_at_once_after_a_refusal_is_held_then_decided_again() {
    use crate::transport::shed::{RETRY_PAUSE, RetryPace, refuse_early_paced};
    tokio::time::pause();
    let f = fixture(0);
    let body = br#"{"jsonrpc":"2.0","id":3,"method":"eth_call","params":[{"to":"0x01"}]}"#;
    let pace = RetryPace::default();
    let mut running = Box::pin(f.ctx.executor.call(Call { request: Default::default(), block: 1 }));
    assert!(futures_util::poll!(&mut running).is_pending());
    // The first refusal is answered at once (nothing here yields, so the call still runs).
    let start = tokio::time::Instant::now();
    let first = refuse_early_paced(&f.ctx, body, Some(&pace)).await.expect("refused");
    assert_eq!((first.status, start.elapsed()), (503, std::time::Duration::ZERO));
    // A request with no connection to remember is never held.
    assert!(refuse_early_paced(&f.ctx, body, None).await.is_some());
    assert_eq!(start.elapsed(), std::time::Duration::ZERO);
    // The connection's retry, at once, is held RETRY_PAUSE; meanwhile the running call ends,
    // so the retry is then admitted (goes the ordinary way) instead of refused again.
    assert!(refuse_early_paced(&f.ctx, body, Some(&pace)).await.is_none());
    // Paused time jumps to the timer's tick, which rounds the deadline up to a millisecond.
    let held = start.elapsed();
    assert!((RETRY_PAUSE..=RETRY_PAUSE + Duration::from_millis(1)).contains(&held), "{held:?}");
    assert!(running.await.is_ok());
    // Two answers were refusals; the held retry was admitted, so it counts none (only the
    // answer a request gets is counted, not the check before its hold).
    assert_eq!(f.ctx.executor.refusals(), [0, 2], "refused, refused, then admitted");
}

/// The answer's items as (id, error code) pairs.
fn batch_answer(reply: &crate::RpcReply) -> Vec<(Value, Value)> {
    let answer: Value = serde_json::from_slice(reply.body.as_ref().expect("an answer")).unwrap();
    let items = answer.as_array().unwrap_or_else(|| panic!("not a batch answer: {answer}"));
    items.iter().map(|item| (item["id"].clone(), item["error"]["code"].clone())).collect()
}

#[actix::test]
async fn a_batch_of_executor_calls_over_budget_is_refused_from_a_scan_of_its_body() {
    // No queue: a call sent and not yet run takes the one thread, so the next is refused.
    let f = fixture(0);
    let mut running = Box::pin(f.ctx.executor.call(Call { request: Default::default(), block: 1 }));
    assert!(futures_util::poll!(&mut running).is_pending());
    let to = json!({"to": CONTRACT, "data": "0x01"});
    // At `latest`: a call at `pending` (or with no block) asks the miner for the next block
    // before its admission, so the ordinary path would meet the pool later than the scan.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [to, "latest"]},
        {"jsonrpc": "2.0", "id": "b", "method": "eth_estimateGas", "params": [to, "latest"]},
        {"jsonrpc": "2.0", "id": null, "method": "eth_createAccessList", "params": [to]},
        {"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [to, "latest"]},
    ])
    .to_string();
    let early =
        crate::transport::shed::refuse_early(&f.ctx, batch.as_bytes()).expect("refused early");
    assert_eq!(early.status, 200, "a batch stays 200, as the ordinary path answers it");
    let busy = json!(-32005);
    assert_eq!(
        batch_answer(&early),
        vec![
            (json!(1), busy.clone()),
            (json!("b"), busy.clone()),
            (Value::Null, busy.clone()),
            (json!(1), busy.clone())
        ]
    );
    // One refusal per item, counted where the ordinary path counts it.
    assert_eq!(f.ctx.executor.refusals(), [0, 4], "queue_delay, queue_full");
    assert_eq!(f.ctx.metrics.rejections(crate::Rejection::ExecutorBusy), 4);
    let mut text = String::new();
    f.ctx.metrics.render(&mut text);
    assert!(text.contains("hearth_rpc_requests_total{method=\"eth_call\"} 2"), "{text}");
    assert!(text.contains("hearth_rpc_requests_total{method=\"eth_estimateGas\"} 1"), "{text}");
    // The ordinary path (past the shed) answers the same batch with the same bytes, each
    // item refused at admission after its params are decoded.
    let ordinary = crate::transport::run_request(&f.ctx, batch.as_bytes(), None).await;
    assert_eq!((early.status, &early.body), (ordinary.status, &ordinary.body));
    let full = early.body;
    assert_eq!(f.ctx.executor.refusals(), [0, 8]);
    assert_eq!(f.ctx.metrics.rejections(crate::Rejection::ExecutorBusy), 8);
    // Also past the response cap: the items that do not fit are "response too large".
    let mut capped = f.ctx.clone();
    capped.limits.max_response_bytes = full.as_ref().map_or(0, Vec::len) / 2;
    let early =
        crate::transport::shed::refuse_early(&capped, batch.as_bytes()).expect("refused early");
    let ordinary = crate::transport::run_request(&capped, batch.as_bytes(), None).await;
    assert_eq!(early.body, ordinary.body);
    assert_ne!(early.body, full, "some items over the cap");
    // Through the entry point, and with an item whose fields the scan does not decode (as
    // for a single request, only its shape is checked).
    let odd =
        br#" [ {"params":[{"to":"not an address"}],"id":7,"jsonrpc":"2.0","method":"eth_call"} ,
        {"jsonrpc":"2.0","id":"x\"y","method":"eth_simulateV1","params":[{}]} ] "#;
    let reply = handle_body(&f.ctx, odd).await;
    assert_eq!(reply.status, 200);
    assert_eq!(batch_answer(&reply), vec![(json!(7), busy.clone()), (json!("x\"y"), busy)]);
    assert_eq!(f.ctx.executor.refusals(), [0, 18], "4 + 4, 4 + 4 capped, then 2");
    assert!(running.await.is_ok(), "the admitted call still runs");
    // With the thread free again the same batch goes the ordinary way.
    assert!(crate::transport::shed::refuse_early(&f.ctx, batch.as_bytes()).is_none());
}

#[actix::test]
async fn a_batch_that_is_not_all_executor_calls_goes_the_ordinary_way_when_busy() {
    let f = fixture(0);
    let mut running = Box::pin(f.ctx.executor.call(Call { request: Default::default(), block: 1 }));
    assert!(futures_util::poll!(&mut running).is_pending());
    let to = "0xcccccccccccccccccccccccccccccccccccccccc";
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{{"to":"{to}"}},"latest"]}}"#
    );
    let shed_none =
        |body: &str| crate::transport::shed::refuse_early(&f.ctx, body.as_bytes()).is_none();
    // Mixed: eth_blockNumber is answered, the eth_call refused at admission.
    let mixed = format!(r#"[{call},{{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}}]"#);
    assert!(shed_none(&mixed));
    let reply = handle_body(&f.ctx, mixed.as_bytes()).await;
    let answer: Value = serde_json::from_slice(reply.body.as_ref().expect("an answer")).unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(
        (answer[0]["id"].clone(), answer[0]["error"]["code"].clone()),
        (json!(1), json!(-32005))
    );
    assert_eq!((answer[1]["id"].clone(), answer[1]["result"].clone()), (json!(2), json!("0x1")));
    assert_eq!(f.ctx.executor.refusals(), [0, 1]);
    // An item of a shape no executor method takes: its -32602, the other refused.
    let ill =
        format!(r#"[{call},{{"jsonrpc":"2.0","id":3,"method":"eth_call","params":["latest"]}}]"#);
    assert!(shed_none(&ill));
    let reply = handle_body(&f.ctx, ill.as_bytes()).await;
    assert_eq!(batch_answer(&reply), vec![(json!(1), json!(-32005)), (json!(3), json!(-32602))]);
    assert_eq!(f.ctx.executor.refusals(), [0, 2]);
    // Invalid JSON: -32700 with id null, nothing refused.
    let invalid = format!(
        r#"[{call},{{"jsonrpc":"2.0","id":4,"method":"eth_call","params":[{{"to":0x1}}]}}]"#
    );
    assert!(shed_none(&invalid));
    let reply = handle_body(&f.ctx, invalid.as_bytes()).await;
    let answer: Value = serde_json::from_slice(reply.body.as_ref().expect("an answer")).unwrap();
    assert_eq!(
        (reply.status, answer["id"].clone(), answer["error"]["code"].clone()),
        (200, Value::Null, json!(-32700))
    );
    // A notification item (no id): it runs (and is refused) but gets no answer.
    let notification =
        format!(r#"[{call},{{"jsonrpc":"2.0","method":"eth_call","params":[{{}},"latest"]}}]"#);
    assert!(shed_none(&notification));
    let reply = handle_body(&f.ctx, notification.as_bytes()).await;
    assert_eq!(batch_answer(&reply), vec![(json!(1), json!(-32005))]);
    assert_eq!(f.ctx.executor.refusals(), [0, 4]);
    // Empty: -32600. Over the item limit: one "batch too large" error, counted as such.
    for empty in ["[]", " [ ] "] {
        assert!(shed_none(empty));
        let reply = handle_body(&f.ctx, empty.as_bytes()).await;
        let answer: Value =
            serde_json::from_slice(reply.body.as_ref().expect("an answer")).unwrap();
        assert_eq!(
            (reply.status, answer["error"]["code"].clone()),
            (200, json!(-32600)),
            "{empty}"
        );
    }
    let mut small = f.ctx.clone();
    small.limits.max_batch_items = 2;
    let three = format!("[{call},{call},{call}]");
    assert!(crate::transport::shed::refuse_early(&small, three.as_bytes()).is_none());
    let reply = handle_body(&small, three.as_bytes()).await;
    let answer: Value = serde_json::from_slice(reply.body.as_ref().expect("an answer")).unwrap();
    assert_eq!((reply.status, answer["error"]["code"].clone()), (200, json!(-32005)));
    assert!(
        answer["error"]["message"].as_str().unwrap().starts_with("batch too large"),
        "{answer}"
    );
    assert_eq!(f.ctx.metrics.rejections(crate::Rejection::BatchTooLarge), 1);
    assert_eq!(f.ctx.executor.refusals(), [0, 4], "none of those refused by the pool");
    // At the limit, it is refused early.
    let two = format!("[{call},{call}]");
    assert!(crate::transport::shed::refuse_early(&small, two.as_bytes()).is_some());
    assert_eq!(f.ctx.executor.refusals(), [0, 6]);
    // An executor method the API filter does not serve is no executor call to shed.
    let mut no_eth = f.ctx.clone();
    no_eth.api = crate::ApiNamespaces::parse("net,web3").expect("namespaces");
    assert!(crate::transport::shed::refuse_early(&no_eth, two.as_bytes()).is_none());
    assert!(running.await.is_ok());
}

#[actix::test]
async fn a_connection_that_retries_a_refused_batch_at_once_is_held_too() {
    use crate::transport::shed::{RETRY_PAUSE, RetryPace, refuse_early_paced};
    tokio::time::pause();
    let f = fixture(0);
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"eth_call","params":[{"to":"0x01"}]}"#;
    let body = format!("[{call},{call},{call}]");
    let pace = RetryPace::default();
    let mut running = Box::pin(f.ctx.executor.call(Call { request: Default::default(), block: 1 }));
    assert!(futures_util::poll!(&mut running).is_pending());
    let start = tokio::time::Instant::now();
    let first = refuse_early_paced(&f.ctx, body.as_bytes(), Some(&pace)).await.expect("refused");
    assert_eq!((first.status, start.elapsed()), (200, Duration::ZERO));
    assert_eq!(f.ctx.executor.refusals(), [0, 3]);
    // The retry at once is held RETRY_PAUSE; the running call ends meanwhile, so the batch is
    // then admitted (the ordinary way) and counts no refusal.
    assert!(refuse_early_paced(&f.ctx, body.as_bytes(), Some(&pace)).await.is_none());
    let held = start.elapsed();
    assert!((RETRY_PAUSE..=RETRY_PAUSE + Duration::from_millis(1)).contains(&held), "{held:?}");
    assert!(running.await.is_ok());
    assert_eq!(f.ctx.executor.refusals(), [0, 3]);
}

#[actix::test]
async fn raw_transactions_are_submitted_then_automined() {
    let f = fixture(4);
    let tx = sign(
        &f.alice,
        TxEip1559 { chain_id: 31337, nonce: 2, gas_limit: 21_000, ..Default::default() },
    );
    let raw = Bytes::from(tx.encoded_2718());
    assert_eq!(f.ok("eth_sendRawTransaction", json!([raw])).await, json!(tx.tx_hash()));
    let (submitted, auto_mines, _) = f.recorded().await;
    assert_eq!((submitted, auto_mines), (vec![tx.clone()], 1));
    // The stub never mines: the transaction is pending.
    let pending = f.ok("eth_getTransactionByHash", json!([tx.tx_hash()])).await;
    assert_eq!(
        (pending["hash"].clone(), pending["blockHash"].clone()),
        (json!(tx.tx_hash()), Value::Null)
    );
    assert_eq!(pending["blockNumber"], Value::Null);
    assert_eq!(f.ok("eth_getTransactionReceipt", json!([tx.tx_hash()])).await, Value::Null);

    let (code, message) = f.err("eth_sendRawTransaction", json!(["0xdeadbeef"])).await;
    assert!(code == -32000 && message.starts_with("rlp: "), "{code} {message}");
    // A blob transaction is decoded like any other (the pool checks its sidecar); this one
    // is cut short.
    assert_eq!(
        f.err("eth_sendRawTransaction", json!(["0x03f8"])).await,
        (-32000, "rlp: input too short".into())
    );
    assert_eq!(f.err("eth_sendRawTransaction", json!(["0x"])).await.0, -32000);
    assert_eq!(f.err("eth_sendRawTransaction", json!(["0x0"])).await.0, -32602);
}

#[actix::test]
async fn send_transaction_fills_signs_and_submits() {
    let f = fixture(4);
    let hash = f
        .ok("eth_sendTransaction", json!([{"from": f.alice.address(), "to": BOB, "value": "0x5"}]))
        .await;
    let (submitted, auto_mines, _) = f.recorded().await;
    assert_eq!(auto_mines, 1);
    let tx = &submitted[0];
    assert_eq!(hash, json!(tx.tx_hash()));
    assert_eq!(tx.recover_signer().unwrap(), f.alice.address());
    assert_eq!((tx.nonce(), tx.gas_limit(), tx.chain_id()), (PENDING_NONCE, 21_000, Some(31337)));
    assert_eq!((tx.to(), tx.value()), (Some(BOB), U256::from(5)));
    // EIP-1559 with a 1 gwei tip and a fee cap of twice the base fee plus the tip.
    assert_eq!((tx.max_priority_fee_per_gas(), tx.max_fee_per_gas()), (Some(GWEI), 3 * GWEI));

    let legacy =
        json!([{"from": f.alice.address(), "gasPrice": "0x7", "gas": "0x5300", "nonce": "0x0"}]);
    f.ok("eth_sendTransaction", legacy).await;
    let (submitted, _, _) = f.recorded().await;
    let tx = &submitted[1];
    assert!(matches!(tx, TxEnvelope::Legacy(_)));
    assert_eq!((tx.nonce(), tx.gas_limit(), tx.gas_price(), tx.to()), (0, 0x5300, Some(7), None));

    let stranger = json!([{"from": BOB, "to": BOB}]);
    assert_eq!(f.err("eth_sendTransaction", stranger).await, (-32000, "unknown account".into()));
    assert_eq!(
        f.err("eth_sendTransaction", json!([{"to": BOB}])).await,
        (-32000, "unknown account".into())
    );
    let reverting = json!([{"from": f.alice.address(), "to": CONTRACT, "data": "0x02"}]);
    assert_eq!(
        f.err("eth_sendTransaction", reverting).await.0,
        3,
        "estimate failures are returned"
    );
    let wrong_chain = json!([{"from": f.alice.address(), "to": BOB, "chainId": "0x1"}]);
    assert_eq!(f.err("eth_sendTransaction", wrong_chain).await.0, -32000);
}

#[actix::test]
async fn fees() {
    let f = fixture(4);
    assert_eq!(f.ok("eth_gasPrice", json!([])).await, format!("{:#x}", 2 * GWEI));
    assert_eq!(f.ok("eth_maxPriorityFeePerGas", json!([])).await, "0x3b9aca00");
    let history = f.ok("eth_feeHistory", json!(["0x5", "latest", [0, 100]])).await;
    assert_eq!(history["oldestBlock"], "0x0", "cut to the two blocks that exist");
    assert_eq!(history["baseFeePerGas"].as_array().unwrap().len(), 3);
    assert_eq!(history["gasUsedRatio"].as_array().unwrap().len(), 2);
    assert_eq!(history["baseFeePerBlobGas"].as_array().unwrap().len(), 3);
    assert_eq!(history["blobGasUsedRatio"].as_array().unwrap().len(), 2);
    // Genesis is empty: rewards 0. Block 1: both transactions tip 1 gwei.
    assert_eq!(history["reward"], json!([["0x0", "0x0"], ["0x3b9aca00", "0x3b9aca00"]]));
    let plain = f.ok("eth_feeHistory", json!([1, "0x1"])).await;
    assert_eq!(plain["oldestBlock"], "0x1");
    assert!(plain.get("reward").is_none());
    let (code, message) = f.err("eth_feeHistory", json!(["0x1", "0x5"])).await;
    assert_eq!(
        (code, message.as_str()),
        (-32000, "request beyond head block: requested 5, head 1")
    );
    assert_eq!(f.err("eth_feeHistory", json!(["0x1", "latest", [50, 10]])).await.0, -32602);
}

#[actix::test]
async fn evm_mine_asks_the_miner() {
    let f = fixture(4);
    assert_eq!(f.ok("evm_mine", json!([])).await, "0x0");
    assert_eq!(f.ok("evm_mine", json!(["0x64"])).await, "0x0");
    assert_eq!(f.ok("evm_mine", json!([{"timestamp": 200, "blocks": 3}])).await, "0x0");
    assert_eq!(f.err("evm_mine", json!([{"blocks": 0}])).await.0, -32602);
    let (_, _, mined) = f.recorded().await;
    assert_eq!(mined, vec![(1, None), (1, Some(100)), (3, Some(200))]);
}

/// The HTTP server: status codes and bodies over a real socket.
#[actix::test]
async fn http_server_answers_post_with_status_codes() {
    let f = fixture(4);
    let ctx = RpcContext {
        limits: RpcLimits { max_body_bytes: 200, ..RpcLimits::default() },
        ..f.ctx.clone()
    };
    let (server, addr) = crate::serve("127.0.0.1:0".parse().unwrap(), &[], ctx, 1).unwrap();
    let handle = server.handle();
    actix::spawn(server);
    // Blocking socket I/O runs off the actix thread so the server keeps running.
    let post = |body: String| tokio::task::spawn_blocking(move || http_post(addr, &body));

    let (status, body) =
        post(r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#.into()).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["result"], "0x7a69");
    let (status, body) = post(r#"{"jsonrpc":"2.0","method":"eth_chainId"}"#.into()).await.unwrap();
    assert_eq!((status, body.as_str()), (204, ""));
    let (status, _) = post(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{}"}}"#, "x".repeat(300)))
        .await
        .unwrap();
    assert_eq!(status, 413);
    handle.stop(false).await;
}

/// One HTTP/1.1 POST to `/`; the status and body.
fn http_post(addr: std::net::SocketAddr, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("writes");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reads");
    let status = response[9..12].parse().expect("a status code");
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

// ---- WebSocket keep-alive, in process on a paused clock -------------------------------------

/// Stands in for the subscription actor: accepts every connection and keeps its queue open.
#[derive(Default)]
struct Connector {
    held: Vec<(
        tokio::sync::mpsc::Sender<subs::Notification>,
        tokio::sync::oneshot::Sender<subs::CloseReason>,
    )>,
}

impl Actor for Connector {
    type Context = Context<Self>;
}

impl Handler<subs::Connect> for Connector {
    type Result = MessageResult<subs::Connect>;
    fn handle(&mut self, _: subs::Connect, _: &mut Context<Self>) -> Self::Result {
        let (notify, notifications) = tokio::sync::mpsc::channel(4);
        let (close, closed) = tokio::sync::oneshot::channel();
        self.held.push((notify, close));
        let id = subs::ConnectionId(self.held.len() as u64);
        MessageResult(Ok(subs::Connection { id, notifications, closed }))
    }
}

hearth_messages::answer_asks!(Connector: subs::Connect);

/// The client side of an in-process WebSocket: frames in through the request payload, the
/// server's frames out of the response body.
struct InProcessWs {
    send: tokio::sync::mpsc::Sender<Result<actix_web::web::Bytes, actix_web::error::PayloadError>>,
    body: actix_web::body::BoxBody,
    read: Vec<u8>,
}

/// A server frame: (opcode, payload). Server frames are unmasked.
type ServerFrame = (u8, Vec<u8>);

impl InProcessWs {
    /// Upgrades a request to the app built from `ctx`, served on this thread.
    async fn open(ctx: RpcContext) -> Self {
        use actix_web::http::header;
        let app = actix_web::test::init_service(crate::transport::server::app(ctx)).await;
        let (send, receive) = tokio::sync::mpsc::channel(16);
        let stream = futures_util::stream::unfold(receive, |mut receive| async move {
            receive.recv().await.map(|item| (item, receive))
        });
        let stream: std::pin::Pin<
            Box<
                dyn futures_util::Stream<
                        Item = Result<actix_web::web::Bytes, actix_web::error::PayloadError>,
                    >,
            >,
        > = Box::pin(stream);
        let mut req = actix_web::test::TestRequest::get()
            .uri("/")
            .insert_header((header::UPGRADE, "websocket"))
            .insert_header((header::CONNECTION, "Upgrade"))
            .insert_header((header::SEC_WEBSOCKET_VERSION, "13"))
            .insert_header((header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ=="))
            .to_request();
        *req.payload() = actix_web::dev::Payload::Stream { payload: stream };
        let response = actix_web::dev::Service::call(&app, req).await.expect("served");
        assert_eq!(response.status().as_u16(), 101, "upgraded");
        Self { send, body: response.into_body(), read: Vec::new() }
    }

    /// The next frame the server sends; `None` when it ends the connection.
    async fn frame(&mut self) -> Option<ServerFrame> {
        use actix_web::body::MessageBody;
        loop {
            if self.read.len() >= 4 || (self.read.len() >= 2 && self.read[1] & 0x7f < 126) {
                // A 7-bit length, or 126 and a 16-bit one (answers of a few hundred bytes).
                let (head, len) = match usize::from(self.read[1] & 0x7f) {
                    126 => (4, usize::from(u16::from_be_bytes([self.read[2], self.read[3]]))),
                    127 => panic!("frames under 64 KiB only"),
                    len => (2, len),
                };
                if self.read.len() >= head + len {
                    let frame: Vec<u8> = self.read.drain(..head + len).collect();
                    return Some((frame[0] & 0x0f, frame[head..].to_vec()));
                }
            }
            let chunk =
                std::future::poll_fn(|cx| std::pin::Pin::new(&mut self.body).poll_next(cx)).await;
            match chunk {
                Some(Ok(bytes)) => self.read.extend_from_slice(&bytes),
                Some(Err(error)) => panic!("body failed: {error}"),
                None => return None,
            }
        }
    }

    /// Sends a masked client frame.
    async fn send(&self, opcode: u8, payload: &[u8]) {
        assert!(payload.len() < 126);
        let mut frame = vec![0x80 | opcode, 0x80 | payload.len() as u8, 0, 0, 0, 0];
        frame.extend_from_slice(payload);
        self.send.send(Ok(frame.into())).await.expect("the server reads");
    }
}

/// Asserts that `at` is `want` after `start`: tokio's timers tick in whole milliseconds, so a
/// deadline may fire up to a millisecond late.
#[track_caller]
fn assert_at(start: tokio::time::Instant, want: Duration) {
    let elapsed = start.elapsed();
    assert!(
        elapsed >= want && elapsed <= want + Duration::from_millis(2),
        "at {elapsed:?}, expected {want:?}"
    );
}

/// A context whose WebSocket connections are accepted.
fn ws_context() -> RpcContext {
    let mut ctx = fixture(4).ctx;
    ctx.subscriptions.connect = Connector::default().start().recipient();
    ctx
}

/// An executor thread that takes each call and keeps it (and so its place in the pool) without
/// answering: the pool stays busy for as long as the test runs.
#[derive(Default)]
struct Holder(Vec<Admitted<Call>>);

impl Actor for Holder {
    type Context = Context<Self>;
}

impl Handler<Admitted<Call>> for Holder {
    type Result = actix::ResponseFuture<Result<CallOutcome, ExecError>>;
    fn handle(&mut self, msg: Admitted<Call>, _: &mut Context<Self>) -> Self::Result {
        self.0.push(msg);
        Box::pin(std::future::pending())
    }
}

#[actix::test]
async fn a_websocket_batch_of_executor_calls_is_refused_early_and_its_quick_retry_held() {
    tokio::time::pause();
    let mut ctx = ws_context();
    let stub = Stub::default().start();
    ctx.executor = ExecutorClient::new(
        Holder::default().start().recipient(),
        stub.clone().recipient(),
        stub.clone().recipient(),
        stub.recipient(),
        hearth_messages::admission::AdmissionLimits {
            max_queued: 0,
            ..hearth_messages::admission::AdmissionLimits::default()
        },
    );
    // One call takes the one thread for good; every other is refused (queue full).
    let executor = ctx.executor.clone();
    let mut running = Box::pin(executor.call(Call { request: Default::default(), block: 1 }));
    assert!(futures_util::poll!(&mut running).is_pending());
    let mut ws = InProcessWs::open(ctx.clone()).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{}]}"#;
    let batch = format!(r#"[{call},{}]"#, call.replace(r#""id":1"#, r#""id":"b""#));
    let start = tokio::time::Instant::now();
    ws.send(0x1, batch.as_bytes()).await;
    let (opcode, answer) = ws.frame().await.expect("an answer");
    assert_eq!(opcode, 0x1);
    assert_at(start, Duration::ZERO);
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    let codes: Vec<_> = answer
        .as_array()
        .expect("a batch answer")
        .iter()
        .map(|item| (item["id"].clone(), item["error"]["code"].clone()))
        .collect();
    assert_eq!(codes, vec![(json!(1), json!(-32005)), (json!("b"), json!(-32005))]);
    assert_eq!(ctx.executor.refusals(), [0, 2]);
    // Sent again at once: held RETRY_PAUSE, then decided again (still busy: refused again).
    ws.send(0x1, batch.as_bytes()).await;
    let (_, again) = ws.frame().await.expect("an answer");
    assert_at(start, crate::RETRY_PAUSE);
    assert_eq!(serde_json::from_slice::<Value>(&again).expect("JSON")[1]["id"], json!("b"));
    assert_eq!(ctx.executor.refusals(), [0, 4], "the held retry counted once, when answered");
}

#[actix::test]
async fn a_silent_websocket_is_pinged_then_closed_when_idle() {
    tokio::time::pause();
    let ctx = ws_context();
    let (every, idle) = (ctx.limits.ws_ping_interval, ctx.limits.ws_idle_timeout);
    assert_eq!((every.as_secs(), idle.as_secs()), (30, 60));
    let start = tokio::time::Instant::now();
    let mut ws = InProcessWs::open(ctx).await;
    // The paused clock jumps to each timer: no test time passes.
    assert_eq!(ws.frame().await, Some((0x9, vec![])), "a ping");
    assert_at(start, every);
    let (opcode, payload) = ws.frame().await.expect("a close frame");
    assert_at(start, idle);
    assert_eq!(opcode, 0x8);
    assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1001);
    assert_eq!(&payload[2..], b"idle for 60s: no frame or pong");
    assert_eq!(ws.frame().await, None, "then the connection ends");
}

#[actix::test]
async fn a_websocket_that_answers_pings_stays_open() {
    tokio::time::pause();
    let ctx = ws_context();
    let every = ctx.limits.ws_ping_interval;
    let start = tokio::time::Instant::now();
    let mut ws = InProcessWs::open(ctx).await;
    for n in 1..=4u32 {
        assert_eq!(ws.frame().await, Some((0x9, vec![])), "ping {n}");
        assert_at(start, every * n);
        ws.send(0xa, b"").await;
    }
    // Requests count as activity too, and are answered between the pings.
    ws.send(0x1, br#"{"jsonrpc":"2.0","id":7,"method":"eth_chainId"}"#).await;
    let (opcode, answer) = ws.frame().await.expect("an answer");
    assert_eq!(opcode, 0x1);
    assert_eq!(
        serde_json::from_slice::<Value>(&answer).expect("JSON"),
        json!({"jsonrpc": "2.0", "id": 7, "result": "0x7a69"})
    );
    assert_at(start, every * 4);
    // Silent from now on: pinged on, then closed a whole idle timeout after the request.
    let mut pings = 0;
    loop {
        match ws.frame().await.expect("a frame") {
            (0x9, _) => pings += 1,
            (0x8, _) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!((1..=2).contains(&pings), "{pings} pings while silent");
    assert_at(start, every * 4 + Duration::from_secs(60));
}

#[actix::test]
async fn a_websocket_ping_from_the_client_is_answered_with_its_payload() {
    tokio::time::pause();
    let mut ws = InProcessWs::open(ws_context()).await;
    ws.send(0x9, b"are you there").await;
    assert_eq!(ws.frame().await, Some((0xa, b"are you there".to_vec())));
    ws.send(0x8, &[0x03, 0xe8]).await;
    assert_eq!(ws.frame().await, Some((0x8, vec![0x03, 0xe8])), "the close is echoed");
    assert_eq!(ws.frame().await, None);
}
