//! Property tests on a whole node: hostile raw transactions through eth_sendRawTransaction
//! (the pool's decoder and validator), and random requests of the real method names through
//! the dispatch table. Nothing may panic or hang, every error must carry a standard code, and
//! nothing invalid may be admitted: an admitted transaction is mined at once (automine) or
//! waits for a reason (a nonce gap, a fee cap under the base fee), and the pool's count of
//! admitted transactions block building refused stays 0.
//!
//! Cases per property: `HEARTH_FUZZ_CASES` (default: a quick run for CI). Each batch of cases
//! runs on a fresh node, so the chain stays small over a long run. Shrunk failures become the
//! literal regression tests at the end.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use alloy_consensus::{
    SidecarBuilder, SignableTransaction, SimpleCoder, TxEip1559, TxEip2930, TxEip4844, TxEip7702,
    TxEnvelope, TxLegacy,
};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip4844::BlobTransactionSidecar;
use alloy_eips::eip7702::Authorization;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, hex};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use hearth::config::NodeConfig;
use hearth_messages::mempool::{
    DropTx, GetPoolContent, GetPoolCounters, GetPooledTx, PendingNonce,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};

use crate::support::TestNode;

const CHAIN_ID: u64 = 31337;
const GWEI: u128 = 1_000_000_000;
/// Cases on one node before a fresh one takes over.
const BATCH: u32 = 1_000;
/// Longest any one request may take before the case counts as a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Cases per property: `HEARTH_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("HEARTH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A node on its own actix system.
struct Live {
    runner: actix_rt::SystemRunner,
    node: TestNode,
}

impl Live {
    fn start() -> Self {
        let runner = actix_rt::System::new();
        let node = runner.block_on(async {
            let mut config = NodeConfig::for_tests();
            config.rpc.max_mine_blocks = MAX_MINE_BLOCKS;
            let node = TestNode::start_with(config);
            // Let every actor run `started` inside the runtime: an actor that never started
            // would start while its runtime is dropped, outside any reactor.
            for _ in 0..16 {
                tokio::task::yield_now().await;
            }
            node
        });
        Self { runner, node }
    }

    /// Stops the system and waits until it has: its arbiters (and their threads) end, and
    /// with them every actor, so a long run holds one node at a time.
    fn stop(self) {
        let Self { runner, node } = self;
        runner.block_on(async move {
            drop(node);
            actix_rt::System::current().stop();
        });
        // Runs the system's controller, which stops every arbiter, then returns.
        let _ = runner.run();
    }
}

/// A node replaced every [`BATCH`] cases; once a case has failed, replaced before every case,
/// so that shrinking judges each candidate on a fresh node and not on what an earlier
/// candidate left behind.
struct Harness {
    live: Option<Live>,
    ran: u32,
    /// A case has not finished with `Ok` (a panic leaves this set too).
    failed: bool,
}

impl Harness {
    fn start() -> Self {
        Self { live: Some(Live::start()), ran: 0, failed: false }
    }

    /// Runs one case's future on the node, replacing the node first when its batch is done or
    /// once shrinking has begun.
    fn run<T, E>(&mut self, case: impl AsyncFnOnce(&TestNode) -> Result<T, E>) -> Result<T, E> {
        if self.ran == BATCH || self.failed || self.live.is_none() {
            if let Some(live) = self.live.take() {
                live.stop();
            }
            self.live = Some(Live::start());
            self.ran = 0;
        }
        self.ran += 1;
        let failed = std::mem::replace(&mut self.failed, true);
        let live = self.live.as_ref().expect("started above");
        let result = live.runner.block_on(case(&live.node));
        self.failed = failed || result.is_err();
        result
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            live.stop();
        }
    }
}

/// Sends one JSON-RPC request body; the response object (a hang fails the case).
async fn request(node: &TestNode, body: &Value) -> Result<Value, TestCaseError> {
    let reply =
        tokio::time::timeout(REQUEST_TIMEOUT, node.raw(&body.to_string())).await.map_err(|_| {
            TestCaseError::fail(format!("no answer within {REQUEST_TIMEOUT:?}: {body}"))
        })?;
    reply.ok_or_else(|| TestCaseError::fail(format!("no response to {body}")))
}

/// The error code of `response`, or `None` for a result; fails on anything that is neither,
/// or on a code outside `allowed`.
fn code_of(response: &Value, allowed: &[i64]) -> Result<Option<i64>, TestCaseError> {
    match (response.get("result"), response.get("error")) {
        (Some(_), None) => Ok(None),
        (None, Some(error)) => {
            let code = error["code"].as_i64().ok_or_else(|| TestCaseError::fail("no code"))?;
            prop_assert!(allowed.contains(&code), "code {} not allowed: {}", code, response);
            prop_assert!(error["message"].is_string(), "{}", response);
            Ok(Some(code))
        }
        _ => Err(TestCaseError::fail(format!("not a JSON-RPC response: {response}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Raw transactions
// ---------------------------------------------------------------------------------------------

/// Which nonce a generated transaction takes.
#[derive(Debug, Clone)]
enum NonceChoice {
    /// The sender's pending nonce.
    Next,
    /// That many past it (queued behind a gap).
    Ahead(u64),
    /// One already used (when there is one).
    Used,
    /// 2^64 - 1 (EIP-2681).
    Max,
    /// Any.
    Any(u64),
}

/// A transaction's fields, before signing.
#[derive(Debug, Clone)]
struct Spec {
    ty: u8,
    /// 0-1: funded dev accounts; 2: an account without funds; 3: one with little.
    signer: usize,
    nonce: NonceChoice,
    gas: u64,
    max_fee: u128,
    tip: u128,
    value: U256,
    to: Option<Address>,
    input: Vec<u8>,
    chain_id: u64,
    /// A legacy transaction without a chain id (pre-EIP-155 form).
    unprotected: bool,
    access_list: Vec<(Address, Vec<B256>)>,
    authorizations: Vec<(u64, Address, u64)>,
    blobs: Vec<B256>,
    /// How a blob transaction is sent: 0 canonical (no sidecar, refused), 1 in network form
    /// with a valid sidecar of as many blobs whose hashes replace `blobs`, 2 in network form
    /// with that sidecar but `blobs` kept (hashes that do not match).
    sidecar: u8,
}

/// An edit of encoded bytes.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Truncate(usize),
}

#[derive(Debug, Clone)]
enum RawCase {
    /// Arbitrary bytes.
    Bytes(Vec<u8>),
    /// A signed transaction.
    Signed(Spec),
    /// A signed transaction with its encoding edited.
    Mutated(Spec, Vec<Mutation>),
}

fn gas() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => proptest::sample::select(vec![
            0,
            20_999,
            21_000,
            53_000,
            100_000,
            1_000_000,
            10_000_000,
            30_000_000,
            30_000_001,
            1 << 24,
            (1 << 24) + 1,
            u64::MAX,
        ]),
        1 => any::<u64>(),
        5 => 21_000u64..2_000_000,
    ]
}

fn fee() -> impl Strategy<Value = u128> {
    prop_oneof![
        proptest::sample::select(vec![
            0,
            1,
            GWEI,
            2 * GWEI,
            10 * GWEI,
            100 * GWEI,
            1 << 64,
            1 << 100,
            1 << 110,
            u128::MAX,
        ]),
        any::<u128>(),
        0..1000 * GWEI,
    ]
}

fn value() -> impl Strategy<Value = U256> {
    prop_oneof![
        4 => proptest::sample::select(vec![
            U256::ZERO,
            U256::from(1),
            U256::from(10u128.pow(18)),
            U256::from(10u128.pow(22)),
            U256::from(10).pow(U256::from(30)),
            U256::from(1) << 255,
            U256::MAX,
            U256::MAX - U256::from(1),
        ]),
        1 => any::<[u8; 32]>().prop_map(U256::from_be_bytes),
        4 => (0u64..1_000_000).prop_map(U256::from),
    ]
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..64),
        2 => (0usize..4).prop_map(|i| vec![0x5b; [49_152, 49_153, 24_577, 1_000][i]]),
        1 => Just(vec![0u8; 140_000]),
        // Initcode that returns empty code: a creation that succeeds.
        2 => Just(hex::decode("60006000f3").expect("hex")),
    ]
}

fn address() -> impl Strategy<Value = Address> {
    prop_oneof![
        Just(Address::repeat_byte(0xb0)),
        Just(Address::ZERO),
        // Dev account 0 (a self-transfer when it sends).
        Just("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".parse().expect("address")),
        any::<[u8; 20]>().prop_map(Address::from),
    ]
}

fn any_spec() -> impl Strategy<Value = Spec> {
    let nonce = prop_oneof![
        8 => Just(NonceChoice::Next),
        1 => (1u64..4).prop_map(NonceChoice::Ahead),
        1 => Just(NonceChoice::Used),
        1 => Just(NonceChoice::Max),
        1 => any::<u64>().prop_map(NonceChoice::Any),
    ];
    let chain_id =
        prop_oneof![16 => Just(CHAIN_ID), 1 => Just(1u64), 1 => Just(0u64), 1 => any::<u64>()];
    let access_list = proptest::collection::vec(
        (address(), proptest::collection::vec(any::<[u8; 32]>().prop_map(B256::from), 0..3)),
        0..3,
    );
    let authorizations = proptest::collection::vec(
        (prop_oneof![Just(CHAIN_ID), Just(0u64), any::<u64>()], address(), 0u64..3),
        0..3,
    );
    let blobs = proptest::collection::vec(
        prop_oneof![
            any::<[u8; 31]>().prop_map(|h| {
                let mut hash = [1u8; 32];
                hash[1..].copy_from_slice(&h);
                B256::from(hash)
            }),
            any::<[u8; 32]>().prop_map(B256::from),
        ],
        0..3,
    );
    (
        (0u8..=4, 0usize..4, nonce, gas(), fee(), fee(), value()),
        (proptest::option::weighted(0.9, address()), input(), chain_id, any::<bool>()),
        (access_list, authorizations, blobs, any::<bool>(), 0u8..3),
    )
        .prop_map(
            |(
                (ty, signer, nonce, gas, max_fee, tip, value),
                (to, input, chain_id, unprotected),
                (access_list, authorizations, blobs, sane_fees, sidecar),
            )| {
                // Half the time the fees are ordinary, so the other fields get exercised.
                let (max_fee, tip) = if sane_fees { (10 * GWEI, GWEI) } else { (max_fee, tip) };
                Spec {
                    ty,
                    signer,
                    nonce,
                    gas,
                    max_fee,
                    tip,
                    value,
                    to,
                    input,
                    chain_id,
                    unprotected,
                    access_list,
                    authorizations,
                    blobs,
                    sidecar,
                }
            },
        )
}

/// One field of an otherwise valid transaction, changed.
#[derive(Debug, Clone)]
enum Change {
    None,
    Nonce(NonceChoice),
    Gas(u64),
    Fees(u128, u128),
    Value(U256),
    Create(Vec<u8>),
    ChainId(u64),
    NoAuthorizations,
    Signer(usize),
    AccessList(Vec<(Address, Vec<B256>)>),
}

/// A valid transaction of a random type from a funded dev account, with at most one field
/// changed to something hostile: most cases then probe one rule at a time, and a good share
/// are valid and get mined.
fn one_change_spec() -> impl Strategy<Value = Spec> {
    let change = prop_oneof![
        3 => Just(Change::None),
        1 => prop_oneof![
            (1u64..4).prop_map(NonceChoice::Ahead),
            Just(NonceChoice::Used),
            Just(NonceChoice::Max),
            any::<u64>().prop_map(NonceChoice::Any),
        ]
        .prop_map(Change::Nonce),
        1 => gas().prop_map(Change::Gas),
        1 => (fee(), fee()).prop_map(|(f, t)| Change::Fees(f, t)),
        1 => value().prop_map(Change::Value),
        1 => input().prop_map(Change::Create),
        1 => any::<u64>().prop_map(Change::ChainId),
        1 => Just(Change::NoAuthorizations),
        1 => (2usize..4).prop_map(Change::Signer),
        1 => proptest::collection::vec(
            (address(), proptest::collection::vec(any::<[u8; 32]>().prop_map(B256::from), 0..4)),
            0..4,
        )
        .prop_map(Change::AccessList),
    ];
    (0u8..=4, 0usize..2, (0u64..1_000).prop_map(U256::from), address(), any::<bool>(), change)
        .prop_map(|(ty, signer, value, to, unprotected, change)| {
            let mut spec = Spec {
                ty,
                signer,
                nonce: NonceChoice::Next,
                gas: 200_000,
                max_fee: 10 * GWEI,
                tip: GWEI,
                value,
                to: Some(to),
                input: Vec::new(),
                chain_id: CHAIN_ID,
                unprotected,
                access_list: vec![(to, vec![B256::ZERO])],
                authorizations: vec![(CHAIN_ID, to, 0)],
                blobs: vec![B256::with_last_byte(1)],
                sidecar: 1,
            };
            match change {
                Change::None => {}
                Change::Nonce(nonce) => spec.nonce = nonce,
                Change::Gas(gas) => spec.gas = gas,
                Change::Fees(max_fee, tip) => (spec.max_fee, spec.tip) = (max_fee, tip),
                Change::Value(value) => spec.value = value,
                Change::Create(input) => (spec.to, spec.input) = (None, input),
                Change::ChainId(id) => spec.chain_id = id,
                Change::NoAuthorizations => spec.authorizations.clear(),
                Change::Signer(signer) => spec.signer = signer,
                Change::AccessList(list) => spec.access_list = list,
            }
            spec
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![1 => any_spec(), 1 => one_change_spec()]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), 0usize..8).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn raw_case() -> impl Strategy<Value = RawCase> {
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(RawCase::Bytes),
        6 => spec().prop_map(RawCase::Signed),
        3 => (spec(), proptest::collection::vec(mutation(), 1..4))
            .prop_map(|(spec, m)| RawCase::Mutated(spec, m)),
    ]
}

fn mutate(body: &mut Vec<u8>, mutation: &Mutation) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match *mutation {
        Mutation::Flip(i, b) if !body.is_empty() => {
            let i = at(i, body.len());
            body[i] ^= b.max(1);
        }
        Mutation::Flip(..) => {}
        Mutation::Insert(i, b) => {
            let i = at(i, body.len() + 1);
            body.insert(i, b);
        }
        Mutation::Delete(i, n) => {
            let i = at(i, body.len());
            let end = (i + n).min(body.len());
            body.drain(i..end);
        }
        Mutation::Truncate(i) => body.truncate(at(i, body.len() + 1)),
    }
}

/// The fuzzing keys: dev accounts 0 and 1, an unfunded key, a key with 0.01 ether.
fn keys(node: &TestNode) -> [PrivateKeySigner; 4] {
    let key = |b| PrivateKeySigner::from_bytes(&B256::repeat_byte(b)).expect("key");
    [node.signer(0), node.signer(1), key(0x71), key(0x72)]
}

fn sign<T: SignableTransaction<alloy_primitives::Signature>>(
    key: &PrivateKeySigner,
    tx: T,
) -> alloy_consensus::Signed<T> {
    let signature = key.sign_hash_sync(&tx.signature_hash()).expect("signs");
    tx.into_signed(signature)
}

/// A valid sidecar of `count` copies of one blob (its KZG commitment and proof computed once).
fn blob_sidecar(count: usize) -> BlobTransactionSidecar {
    static ONE: std::sync::OnceLock<BlobTransactionSidecar> = std::sync::OnceLock::new();
    let one = ONE.get_or_init(|| {
        SidecarBuilder::<SimpleCoder>::from_slice(b"fuzzed blob").build().expect("builds")
    });
    BlobTransactionSidecar {
        blobs: vec![one.blobs[0]; count],
        commitments: vec![one.commitments[0]; count],
        proofs: vec![one.proofs[0]; count],
    }
}

/// Signs `spec` with its key at the nonce its choice resolves to.
fn build(spec: &Spec, key: &PrivateKeySigner, pending: u64) -> TxEnvelope {
    let nonce = match spec.nonce {
        NonceChoice::Next => pending,
        NonceChoice::Ahead(k) => pending + k,
        NonceChoice::Used => pending.saturating_sub(1),
        NonceChoice::Max => u64::MAX,
        NonceChoice::Any(n) => n,
    };
    let kind = spec.to.map_or(TxKind::Create, TxKind::Call);
    let access_list = AccessList(
        spec.access_list
            .iter()
            .map(|(address, keys)| AccessListItem { address: *address, storage_keys: keys.clone() })
            .collect(),
    );
    let input = Bytes::from(spec.input.clone());
    match spec.ty {
        0 => sign(
            key,
            TxLegacy {
                chain_id: (!spec.unprotected).then_some(spec.chain_id),
                nonce,
                gas_price: spec.max_fee,
                gas_limit: spec.gas,
                to: kind,
                value: spec.value,
                input,
            },
        )
        .into(),
        1 => sign(
            key,
            TxEip2930 {
                chain_id: spec.chain_id,
                nonce,
                gas_price: spec.max_fee,
                gas_limit: spec.gas,
                to: kind,
                value: spec.value,
                access_list,
                input,
            },
        )
        .into(),
        2 => sign(
            key,
            TxEip1559 {
                chain_id: spec.chain_id,
                nonce,
                gas_limit: spec.gas,
                max_fee_per_gas: spec.max_fee,
                max_priority_fee_per_gas: spec.tip,
                to: kind,
                value: spec.value,
                access_list,
                input,
            },
        )
        .into(),
        3 => {
            let sidecar = blob_sidecar(spec.blobs.len());
            let hashes = match spec.sidecar {
                1 => sidecar.versioned_hashes().collect(),
                _ => spec.blobs.clone(),
            };
            let tx = TxEip4844 {
                chain_id: spec.chain_id,
                nonce,
                gas_limit: spec.gas,
                max_fee_per_gas: spec.max_fee,
                max_priority_fee_per_gas: spec.tip,
                to: spec.to.unwrap_or_default(),
                value: spec.value,
                access_list,
                blob_versioned_hashes: hashes,
                max_fee_per_blob_gas: spec.max_fee,
                input,
            };
            let canonical = sign(key, tx.clone());
            if spec.sidecar == 0 {
                TxEnvelope::Eip4844(canonical.into())
            } else {
                let (_, signature, hash) = canonical.into_parts();
                let network: alloy_consensus::TxEip4844Variant = tx.with_sidecar(sidecar).into();
                TxEnvelope::Eip4844(alloy_consensus::Signed::new_unchecked(
                    network, signature, hash,
                ))
            }
        }
        _ => {
            let authorization_list = spec
                .authorizations
                .iter()
                .map(|(chain_id, address, nonce)| {
                    let auth = Authorization {
                        chain_id: U256::from(*chain_id),
                        address: *address,
                        nonce: *nonce,
                    };
                    let signature = key.sign_hash_sync(&auth.signature_hash()).expect("signs");
                    auth.into_signed(signature)
                })
                .collect();
            sign(
                key,
                TxEip7702 {
                    chain_id: spec.chain_id,
                    nonce,
                    gas_limit: spec.gas,
                    max_fee_per_gas: spec.max_fee,
                    max_priority_fee_per_gas: spec.tip,
                    to: spec.to.unwrap_or_default(),
                    value: spec.value,
                    access_list,
                    authorization_list,
                    input,
                },
            )
            .into()
        }
    }
}

/// Error codes eth_sendRawTransaction may answer: rejected (-32000) or a bound hit (-32005).
const SEND_CODES: &[i64] = &[-32000, -32005];

/// What the raw-transaction property saw, for BENCHMARKS.md.
#[derive(Debug, Default)]
struct Tally {
    /// (code, message up to its first ':') -> count.
    errors: BTreeMap<(i64, String), u64>,
    mined: u64,
    queued: u64,
}

/// Runs one raw case: send it, check the answer, and check an admitted transaction was mined
/// or waits for a reason; then empty the pool for the next case.
async fn raw_transaction(
    node: &TestNode,
    case: &RawCase,
    tally: &RefCell<Tally>,
) -> Result<(), TestCaseError> {
    let keys = keys(node);
    if node.block_number().await == 0 {
        // A fresh node: fund the poor key with 0.01 ether.
        node.ok("anvil_setBalance", json!([keys[3].address(), U256::from(10u128.pow(16))])).await;
    }
    let raw = match case {
        RawCase::Bytes(bytes) => bytes.clone(),
        RawCase::Signed(spec) | RawCase::Mutated(spec, _) => {
            let key = &keys[spec.signer];
            let pending = node.node.mempool.send(PendingNonce(key.address())).await.expect("pool");
            let mut raw = build(spec, key, pending.expect("nonce")).encoded_2718();
            if let RawCase::Mutated(_, mutations) = case {
                for m in mutations {
                    mutate(&mut raw, m);
                }
            }
            raw
        }
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_sendRawTransaction",
        "params": [format!("0x{}", hex::encode(&raw))]});
    let response = request(node, &body).await?;
    if let Some(code) = code_of(&response, SEND_CODES)? {
        let message = response["error"]["message"].as_str().unwrap_or_default();
        let kind = message.split(':').next().unwrap_or_default().to_owned();
        *tally.borrow_mut().errors.entry((code, kind)).or_default() += 1;
    } else {
        let hash: B256 = serde_json::from_value(response["result"].clone())
            .map_err(|e| TestCaseError::fail(format!("result is not a hash: {e}: {response}")))?;
        let receipt = request(
            node,
            &json!({"jsonrpc": "2.0", "id": 2,
            "method": "eth_getTransactionReceipt", "params": [hash]}),
        )
        .await?;
        if receipt["result"].is_null() {
            // Not mined: it must still be pooled, waiting on a nonce gap or the base fee.
            let pooled = node.node.mempool.send(GetPooledTx(hash)).await.expect("pool");
            let pooled = pooled.ok_or_else(|| {
                TestCaseError::fail(format!("admitted {hash} was neither mined nor pooled"))
            })?;
            // Split at the next base fee, as txpool_content does.
            let content = node.node.mempool.send(GetPoolContent).await.expect("pool");
            prop_assert!(node.node.mempool.send(DropTx(pooled.hash)).await.expect("pool"));
            let waiting: Vec<B256> = content.queued.iter().map(|tx| tx.hash).collect();
            prop_assert!(
                content.pending.is_empty() && waiting == [hash],
                "an executable transaction was not mined: {:?}",
                content
            );
            tally.borrow_mut().queued += 1;
        } else {
            prop_assert!(receipt["result"]["status"].is_string(), "{}", receipt);
            tally.borrow_mut().mined += 1;
        }
    }
    let counters = node.node.mempool.send(GetPoolCounters).await.expect("pool");
    prop_assert_eq!(counters.dropped_invalid, 0, "block building refused an admitted transaction");
    Ok(())
}

#[test]
fn fuzz_raw_transactions_through_the_pool() {
    let harness = RefCell::new(Harness::start());
    let tally = RefCell::new(Tally::default());
    let mut runner = TestRunner::new(Config {
        cases: cases(1_500),
        failure_persistence: None,
        ..Config::default()
    });
    let started = std::time::Instant::now();
    let result = runner.run(&raw_case(), |case| {
        harness.borrow_mut().run(async |node: &TestNode| raw_transaction(node, &case, &tally).await)
    });
    let tally = tally.into_inner();
    eprintln!("raw transactions: {:?} in {:?}", tally, started.elapsed());
    result.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Method dispatch
// ---------------------------------------------------------------------------------------------

/// The most blocks one mining request may ask for on the fuzzed node (`--dev.max-mine-blocks`):
/// counts are drawn from the whole u64 range, and those above this are refused with -32602
/// instead of mining for minutes.
const MAX_MINE_BLOCKS: u64 = 8;

/// What each core method takes, one letter per argument: `A` address, `B` block, `Q`
/// quantity, `H` 32-byte hash, `D` data, `T` transaction object, `F` filter, `b` bool, `S`
/// storage slot, `N` block count, depth, interval, time or mining options (mostly small), `K`
/// storage keys, `P` percentiles, `I` filter or snapshot id, `s` subscription kind, `Y` EIP-712
/// typed data, `R` a reset target. Methods not listed take no arguments.
const SIGNATURES: &[(&str, &str)] = &[
    ("anvil_addBalance", "AQ"),
    ("anvil_autoImpersonateAccount", "b"),
    ("anvil_dealERC20", "AAQ"),
    ("anvil_dropTransaction", "H"),
    ("anvil_dumpState", "b"),
    ("anvil_impersonateAccount", "A"),
    ("anvil_increaseTime", "N"),
    ("anvil_loadState", "D"),
    ("anvil_mine", "NN"),
    ("anvil_mine_detailed", "N"),
    ("anvil_removePoolTransactions", "A"),
    ("anvil_reorg", "N"),
    ("anvil_revert", "I"),
    ("anvil_reset", "R"),
    ("anvil_rollback", "N"),
    ("anvil_setAutomine", "b"),
    ("anvil_setBalance", "AQ"),
    ("anvil_setBlockGasLimit", "Q"),
    ("anvil_setBlockTimestampInterval", "N"),
    ("anvil_setChainId", "N"),
    ("anvil_setCode", "AD"),
    ("anvil_setCoinbase", "A"),
    ("anvil_setERC20Allowance", "AAAQ"),
    ("anvil_setERC20Balance", "AAQ"),
    ("anvil_setIntervalMining", "N"),
    ("anvil_setLoggingEnabled", "b"),
    ("anvil_setMinGasPrice", "Q"),
    ("anvil_setNextBlockBaseFeePerGas", "Q"),
    ("anvil_setNextBlockTimestamp", "N"),
    ("anvil_setNonce", "AQ"),
    ("anvil_setPrevRandao", "H"),
    ("anvil_setStorageAt", "ASH"),
    ("anvil_setTime", "N"),
    ("anvil_stopImpersonatingAccount", "A"),
    ("debug_getRawBlock", "B"),
    ("debug_getRawHeader", "B"),
    ("debug_getRawReceipts", "B"),
    ("debug_getRawTransaction", "H"),
    ("debug_setHead", "Q"),
    ("debug_storageRangeAt", "HNADN"),
    ("eth_call", "TB"),
    ("eth_createAccessList", "TB"),
    ("eth_estimateGas", "TB"),
    ("eth_feeHistory", "QBP"),
    ("eth_getAccount", "AB"),
    ("eth_getAccountInfo", "AB"),
    ("eth_getBalance", "AB"),
    ("eth_getBlockByHash", "Hb"),
    ("eth_getBlockByNumber", "Bb"),
    ("eth_getBlockReceipts", "B"),
    ("eth_getBlockTransactionCountByHash", "H"),
    ("eth_getBlockTransactionCountByNumber", "B"),
    ("eth_getCode", "AB"),
    ("eth_getFilterChanges", "I"),
    ("eth_getFilterLogs", "I"),
    ("eth_getHeaderByHash", "H"),
    ("eth_getHeaderByNumber", "B"),
    ("eth_getLogs", "F"),
    ("eth_getProof", "AKB"),
    ("eth_getStorageAt", "ASB"),
    ("eth_getStorageValues", "VB"),
    ("eth_getRawTransactionByBlockHashAndIndex", "HQ"),
    ("eth_getRawTransactionByBlockNumberAndIndex", "BQ"),
    ("eth_getRawTransactionByHash", "H"),
    ("eth_getTransactionByBlockHashAndIndex", "HQ"),
    ("eth_getTransactionByBlockNumberAndIndex", "BQ"),
    ("eth_getTransactionByHash", "H"),
    ("eth_getTransactionCount", "AB"),
    ("eth_getTransactionReceipt", "H"),
    ("eth_getUncleByBlockHashAndIndex", "HQ"),
    ("eth_getUncleByBlockNumberAndIndex", "BQ"),
    ("eth_getUncleCountByBlockHash", "H"),
    ("eth_getUncleCountByBlockNumber", "B"),
    ("eth_newFilter", "F"),
    ("personal_sign", "DA"),
    ("eth_sendRawTransaction", "D"),
    ("eth_sendTransaction", "T"),
    ("eth_sendUnsignedTransaction", "T"),
    ("eth_sign", "AD"),
    ("eth_signTransaction", "T"),
    ("eth_signTypedData", "AY"),
    ("eth_signTypedData_v4", "AY"),
    ("eth_simulateV1", "MB"),
    ("eth_subscribe", "sF"),
    ("eth_uninstallFilter", "I"),
    ("eth_unsubscribe", "I"),
    ("evm_increaseTime", "N"),
    ("evm_mine", "N"),
    ("evm_mine_detailed", "N"),
    ("evm_revert", "I"),
    ("evm_setAutomine", "b"),
    ("evm_setBlockGasLimit", "Q"),
    ("evm_setIntervalMining", "N"),
    ("evm_setNextBlockTimestamp", "N"),
    ("evm_setTime", "N"),
    ("hardhat_dropTransaction", "H"),
    ("hardhat_impersonateAccount", "A"),
    ("hardhat_mine", "NN"),
    ("hardhat_reset", "R"),
    ("hardhat_setBalance", "AQ"),
    ("hardhat_setCode", "AD"),
    ("hardhat_setCoinbase", "A"),
    ("hardhat_setLoggingEnabled", "b"),
    ("hardhat_setMinGasPrice", "Q"),
    ("hardhat_setNextBlockBaseFeePerGas", "Q"),
    ("hardhat_setNonce", "AQ"),
    ("hardhat_setPrevRandao", "H"),
    ("hardhat_setStorageAt", "ASH"),
    ("hardhat_stopImpersonatingAccount", "A"),
    ("txpool_contentFrom", "A"),
    ("web3_sha3", "D"),
    ("evm_setAccountNonce", "AQ"),
    ("hardhat_addBalance", "AQ"),
    ("eth_getTransactionBySenderAndNonce", "AQ"),
    ("hearth_traceTransactionDecoded", "H"),
    ("eth_sendRawTransactionSync", "DQ"),
];

/// Dev account 0, the usual sender.
const DEV0: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

/// Anything at all, in the shapes JSON-RPC carries.
fn junk() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        proptest::sample::select(vec!["0x", "0x00", "0xzz", "", "0X1", "latest", "0x-1"])
            .prop_map(|s| json!(s)),
        ".{0,10}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::vec((".{0,4}", inner), 0..3)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn hex_of(bytes: &[u8]) -> Value {
    json!(format!("0x{}", hex::encode(bytes)))
}

fn quantity() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => (0u64..64).prop_map(|n| json!(format!("{n:#x}"))),
        2 => any::<u64>().prop_map(|n| json!(format!("{n:#x}"))),
        1 => any::<[u8; 32]>().prop_map(|b| json!(format!("{:#x}", U256::from_be_bytes(b)))),
        1 => proptest::sample::select(vec![
            format!("{:#x}", U256::MAX),
            format!("0x1{}", "0".repeat(64)),
            "0x01".to_owned(),
            "0x".to_owned(),
            format!("{:#x}", u64::MAX),
            format!("{:#x}", 10u128.pow(18)),
        ])
        .prop_map(Value::String),
        1 => junk(),
    ]
    .boxed()
}

fn address_arg() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => Just(json!(DEV0)),
        2 => any::<[u8; 20]>().prop_map(|a| json!(Address::from(a))),
        1 => Just(json!(Address::ZERO)),
        1 => proptest::collection::vec(any::<u8>(), 0..24).prop_map(|b| hex_of(&b)),
        1 => junk(),
    ]
    .boxed()
}

fn hash_arg() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => any::<[u8; 32]>().prop_map(|h| json!(B256::from(h))),
        1 => Just(json!(B256::ZERO)),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| hex_of(&b)),
        1 => junk(),
    ]
    .boxed()
}

fn block_arg() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => proptest::sample::select(vec!["latest", "pending", "earliest", "safe", "finalized"])
            .prop_map(|s| json!(s)),
        2 => (0u64..6).prop_map(|n| json!(format!("{n:#x}"))),
        1 => quantity().prop_map(|n| json!({"blockNumber": n})),
        1 => (hash_arg(), any::<bool>())
            .prop_map(|(h, c)| json!({"blockHash": h, "requireCanonical": c})),
        1 => hash_arg(),
        1 => junk(),
    ]
    .boxed()
}

fn data_arg() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(|b| hex_of(&b)),
        // Initcode returning empty code, and a contract that reverts.
        1 => Just(json!("0x60006000f3")),
        1 => Just(json!("0x60006000fd")),
        1 => Just(json!(format!("0x{}", "5b".repeat(24_577)))),
        1 => junk(),
    ]
    .boxed()
}

fn tx_object() -> BoxedStrategy<Value> {
    let field = |name: &'static str, value: BoxedStrategy<Value>| {
        proptest::option::weighted(0.4, value).prop_map(move |v| (name, v))
    };
    (
        proptest::option::weighted(0.9, address_arg()),
        field("to", address_arg()),
        field("gas", quantity()),
        field("gasPrice", quantity()),
        field("maxFeePerGas", quantity()),
        field("maxPriorityFeePerGas", quantity()),
        field("value", quantity()),
        field("data", data_arg()),
        field("input", data_arg()),
        field("nonce", quantity()),
        field("chainId", quantity()),
        field("authorizationList", authorization_list()),
    )
        .prop_map(|(from, a, b, c, d, e, f, g, h, i, j, k)| {
            let mut object = Map::new();
            if let Some(from) = from {
                object.insert("from".to_owned(), from);
            }
            for (name, value) in [a, b, c, d, e, f, g, h, i, j, k] {
                if let Some(value) = value {
                    object.insert(name.to_owned(), value);
                }
            }
            Value::Object(object)
        })
        .boxed()
}

/// An EIP-7702 authorization list: authorizations with random fields (almost never a valid
/// signature), sometimes one member short or one too many, or junk.
fn authorization_list() -> BoxedStrategy<Value> {
    let authorization = (quantity(), address_arg(), quantity(), quantity(), hash_arg(), hash_arg())
        .prop_map(|(chain_id, address, nonce, y_parity, r, s)| {
            json!({"chainId": chain_id, "address": address, "nonce": nonce,
                   "yParity": y_parity, "r": r, "s": s})
        });
    let mutated = (authorization.clone(), 0usize..8).prop_map(|(mut auth, cut)| {
        let object = auth.as_object_mut().expect("an object");
        match object.keys().nth(cut).cloned() {
            Some(key) => {
                object.remove(&key);
            }
            None => {
                object.insert("extra".to_owned(), json!(1));
            }
        }
        auth
    });
    prop_oneof![
        4 => proptest::collection::vec(authorization, 0..3).prop_map(Value::Array),
        1 => proptest::collection::vec(mutated, 1..2).prop_map(Value::Array),
        1 => junk(),
    ]
    .boxed()
}

/// EIP-712 typed data: a valid message with a field value drawn at random (often out of its
/// type's range), with a member dropped or the primary type changed, as a JSON string, or junk.
fn typed_data() -> BoxedStrategy<Value> {
    let base = |level: Value| {
        json!({
            "types": {
                "EIP712Domain": [{"name": "name", "type": "string"}],
                "Item": [{"name": "level", "type": "uint8"}, {"name": "owner", "type": "address"}]
            },
            "primaryType": "Item",
            "domain": {"name": "fuzz"},
            "message": {"level": level, "owner": "0x000000000000000000000000000000000000dead"}
        })
    };
    let level = prop_oneof![quantity(), (0u64..300).prop_map(|n| json!(n)), junk()];
    prop_oneof![
        3 => level.clone().prop_map(base),
        1 => (level.clone(), 0usize..4).prop_map(move |(l, cut)| {
            let mut typed = base(l);
            let key = ["types", "primaryType", "domain", "message"][cut];
            typed.as_object_mut().expect("an object").remove(key);
            typed
        }),
        1 => (level.clone(), "[A-Za-z]{0,8}").prop_map(move |(l, primary)| {
            let mut typed = base(l);
            typed["primaryType"] = json!(primary);
            typed
        }),
        1 => level.prop_map(move |l| Value::String(base(l).to_string())),
        1 => junk(),
    ]
    .boxed()
}

fn filter_arg() -> BoxedStrategy<Value> {
    let topic = prop_oneof![
        hash_arg(),
        Just(Value::Null),
        proptest::collection::vec(hash_arg(), 0..3).prop_map(Value::Array),
    ];
    (
        proptest::option::of(block_arg()),
        proptest::option::of(block_arg()),
        proptest::option::of(prop_oneof![
            address_arg(),
            proptest::collection::vec(address_arg(), 0..3).prop_map(Value::Array)
        ]),
        proptest::option::of(proptest::collection::vec(topic, 0..5)),
        proptest::option::weighted(0.1, hash_arg()),
    )
        .prop_map(|(from, to, address, topics, hash)| {
            let mut object = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    object.insert(k.to_owned(), v);
                }
            };
            put("fromBlock", from);
            put("toBlock", to);
            put("address", address);
            put("topics", topics.map(Value::Array));
            put("blockHash", hash);
            Value::Object(object)
        })
        .boxed()
}

/// A block count, depth, interval, time or `evm_mine` options: mostly small, sometimes
/// anything in the u64 range (or past it).
fn count() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => (0u64..4).prop_map(|n| json!(n)),
        3 => (0u64..4).prop_map(|n| json!(format!("{n:#x}"))),
        2 => (quantity(), quantity(), proptest::option::of(quantity())).prop_map(|(b, i, t)| {
            let mut options = json!({"blocks": b, "interval": i});
            if let Some(t) = t {
                options["timestamp"] = t;
            }
            options
        }),
        1 => (0u64..4, 0u64..3).prop_map(|(b, i)| json!({"blocks": b, "interval": i})),
        2 => quantity(),
        1 => any::<u64>().prop_map(|n| json!(n)),
        1 => Just(json!(-1)),
    ]
    .boxed()
}

/// A strategy for one argument of kind `kind` (see [`SIGNATURES`]).
fn argument(kind: char) -> BoxedStrategy<Value> {
    match kind {
        'A' => address_arg(),
        'B' => block_arg(),
        'Q' => quantity(),
        'H' => hash_arg(),
        'D' => data_arg(),
        'T' => tx_object(),
        'F' => filter_arg(),
        'b' => prop_oneof![any::<bool>().prop_map(Value::Bool), junk()].boxed(),
        'S' => prop_oneof![quantity(), hash_arg()].boxed(),
        'N' => count(),
        'K' => proptest::collection::vec(hash_arg(), 0..3).prop_map(Value::Array).boxed(),
        'P' => {
            proptest::collection::vec(prop_oneof![(0u8..=100).prop_map(|p| json!(p)), junk()], 0..4)
                .prop_map(Value::Array)
                .boxed()
        }
        'I' => prop_oneof![(0u64..4).prop_map(|n| json!(format!("{n:#x}"))), quantity()].boxed(),
        'M' => simulate_payload(),
        'Y' => typed_data(),
        'V' => storage_request(),
        // Never a reachable upstream: a fuzz case must not wait on the network.
        'R' => prop_oneof![
            Just(Value::Null),
            Just(json!({})),
            (proptest::sample::select(vec!["ftp://x", "", "http://", "not a url"]), count())
                .prop_map(
                    |(url, block)| json!({"forking": {"jsonRpcUrl": url, "blockNumber": block}})
                ),
            count().prop_map(|block| json!({"forking": {"blockNumber": block}})),
            junk(),
        ]
        .boxed(),
        's' => prop_oneof![
            proptest::sample::select(vec!["newHeads", "logs", "newPendingTransactions", "syncing"])
                .prop_map(|s| json!(s)),
            junk()
        ]
        .boxed(),
        other => unreachable!("no argument kind {other}"),
    }
}

/// An eth_simulateV1 payload: a few blocks of overrides and calls, sometimes out of order or
/// past the limits.
fn simulate_payload() -> BoxedStrategy<Value> {
    let overrides = (
        proptest::option::of(quantity()),
        proptest::option::of(quantity()),
        proptest::option::of(quantity()),
        proptest::option::of(quantity()),
    )
        .prop_map(|(number, time, gas_limit, base_fee)| {
            let mut object = Map::new();
            for (name, value) in [
                ("number", number),
                ("time", time),
                ("gasLimit", gas_limit),
                ("baseFeePerGas", base_fee),
            ] {
                if let Some(value) = value {
                    object.insert(name.to_owned(), value);
                }
            }
            Value::Object(object)
        });
    let state = (address_arg(), quantity(), proptest::option::of(data_arg())).prop_map(
        |(address, balance, code)| {
            let mut account = json!({"balance": balance});
            if let Some(code) = code {
                account["code"] = code;
            }
            let key = address.as_str().map_or_else(|| address.to_string(), str::to_owned);
            json!({key: account})
        },
    );
    let block =
        (overrides, proptest::option::of(state), proptest::collection::vec(tx_object(), 0..3))
            .prop_map(|(overrides, state, calls)| {
                let mut block = json!({"blockOverrides": overrides, "calls": calls});
                if let Some(state) = state {
                    block["stateOverrides"] = state;
                }
                block
            });
    (proptest::collection::vec(block, 0..4), any::<bool>(), any::<bool>(), any::<bool>())
        .prop_map(|(blocks, validation, trace_transfers, full)| {
            json!({
                "blockStateCalls": blocks,
                "validation": validation,
                "traceTransfers": trace_transfers,
                "returnFullTransactions": full,
            })
        })
        .boxed()
}

/// An eth_getStorageValues request: slots of a few accounts.
fn storage_request() -> BoxedStrategy<Value> {
    proptest::collection::vec((address_arg(), proptest::collection::vec(hash_arg(), 0..3)), 0..3)
        .prop_map(|accounts| {
            let object: Map<String, Value> = accounts
                .into_iter()
                .map(|(a, slots)| {
                    (a.as_str().map_or_else(|| a.to_string(), str::to_owned), json!(slots))
                })
                .collect();
            Value::Object(object)
        })
        .boxed()
}

/// The codes `method` may answer with besides [`METHOD_CODES`]: execution-apis' -38xxx
/// codes where the method has them, and for a simulated call that is no valid transaction
/// for a reason geth has no code for, -32603 (geth's; its message starts with "err: ").
fn extra_codes(method: &str) -> &'static [i64] {
    match method {
        "eth_simulateV1" => &[
            -38010, -38011, -38012, -38013, -38014, -38015, -38020, -38021, -38024, -38025, -38026,
            -32603,
        ],
        "eth_getStorageValues" => &[-38026],
        // EIP-7966's confirmation timeout.
        "eth_sendRawTransactionSync" => &[4],
        // A call naming another chain's chainId (anvil's code for it).
        "eth_call"
        | "eth_estimateGas"
        | "eth_createAccessList"
        | "debug_traceCall"
        | "trace_call"
        | "trace_callMany" => &[-32003],
        _ => &[],
    }
}

/// A request for one real method: arguments of its kinds most of the time (sometimes one too
/// many or one missing), anything at all otherwise.
fn call() -> impl Strategy<Value = (String, Value)> {
    let methods: Vec<&'static str> = hearth_rpc::core_methods().to_vec();
    proptest::sample::select(methods).prop_flat_map(|method| {
        let kinds = SIGNATURES.iter().find(|(m, _)| *m == method).map_or("", |(_, k)| *k);
        let typed: Vec<BoxedStrategy<Value>> = kinds.chars().map(argument).collect();
        let anything = proptest::collection::vec(junk(), 0..4);
        let params = prop_oneof![
            6 => typed.clone(),
            1 => (typed.clone(), junk()).prop_map(|(mut args, extra)| {
                args.push(extra);
                args
            }),
            1 => typed.prop_map(|mut args| {
                args.pop();
                args
            }),
            2 => anything,
        ];
        params.prop_map(move |params| (method.to_owned(), Value::Array(params)))
    })
}

/// Codes a core method may answer with: everything but internal errors.
const METHOD_CODES: &[i64] = &[-32000, -32001, -32002, -32005, -32601, -32602, 3];

#[test]
fn fuzz_method_dispatch_with_random_params() {
    let harness = RefCell::new(Harness::start());
    let codes = RefCell::new(BTreeMap::<i64, u64>::new());
    let mut runner = TestRunner::new(Config {
        cases: cases(1_500),
        failure_persistence: None,
        ..Config::default()
    });
    let started = std::time::Instant::now();
    // A few calls per case, so that a failure that needs earlier calls shrinks to them.
    let result = runner.run(&proptest::collection::vec(call(), 1..4), |calls| {
        harness.borrow_mut().run(async |node: &TestNode| dispatch(node, &calls, &codes).await)
    });
    eprintln!("dispatch: codes (0 = result) {:?} in {:?}", codes.borrow(), started.elapsed());
    result.unwrap();
}

/// Sends `calls` in order; each must answer with a result or a standard error code.
async fn dispatch(
    node: &TestNode,
    calls: &[(String, Value)],
    codes: &RefCell<BTreeMap<i64, u64>>,
) -> Result<(), TestCaseError> {
    for (method, params) in calls {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let response = request(node, &body).await?;
        prop_assert_eq!(response["id"].clone(), json!(7), "{}", response);
        let allowed: Vec<i64> = METHOD_CODES.iter().chain(extra_codes(method)).copied().collect();
        let code = code_of(&response, &allowed)
            .map_err(|e| TestCaseError::fail(format!("{method} {params}: {e}")))?;
        if code == Some(-32603) {
            let message = response["error"]["message"].as_str().unwrap_or_default();
            prop_assert!(message.starts_with("err: "), "{} {}: {}", method, params, response);
        }
        *codes.borrow_mut().entry(code.unwrap_or(0)).or_default() += 1;
    }
    // Every actor still serves: a panic in one shows here, in the case that caused it.
    for probe in ["anvil_getAutomine", "txpool_status", "eth_blockNumber"] {
        let response =
            request(node, &json!({"jsonrpc": "2.0", "id": 8, "method": probe, "params": []}))
                .await?;
        prop_assert!(response.get("result").is_some(), "{} after {:?}: {}", probe, calls, response);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Shrunk failures
// ---------------------------------------------------------------------------------------------

/// Found by `fuzz_method_dispatch_with_random_params` on the txvalid branch before the miner's
/// range checks (another part of issue 15) were merged: a block stamped u64::MAX made the next
/// mine compute `parent.timestamp + 1` and overflow (actors/src/miner.rs), which panicked the
/// miner thread; every mining method then answered -32603 "miner is unavailable".
#[actix::test]
async fn a_timestamp_at_u64_max_does_not_panic_the_miner() {
    let node = TestNode::start();
    let _ = node.call("evm_setNextBlockTimestamp", json!([format!("{:#x}", u64::MAX)])).await;
    let _ = node.call("evm_mine", json!([])).await;
    let _ = node.call("evm_mine", json!([])).await;
    let response = node.call("evm_mine", json!([])).await;
    let code = response["error"]["code"].as_i64();
    assert_ne!(code, Some(-32603), "the miner died: {response}");
}
