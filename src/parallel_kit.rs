//! Blocks for checking and measuring parallel block execution: a chain with funded senders and
//! a few contracts, transactions built without signatures (block execution takes the recovered
//! sender as given, so none is needed), and a runner that executes one block under a given
//! `ParallelConfig` and reduces the result to what must be identical both ways.
//! Used by the property test (tests/it/parallel.rs) and `hearth-parallel-bench`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_consensus::{Header, ReceiptEnvelope, Sealed, Signed, TxEip1559, TxEnvelope};
use alloy_primitives::{Address, B256, Bytes, Signature, TxKind, U256, keccak256};
use hearth_actors::parallel::{ParallelStats, last_block_stats};
use hearth_actors::{ExecConfig, ExecutorActor, ParallelConfig};
use hearth_messages::ExecError;
use hearth_messages::executor::{
    BlockEnvSpec, BlockRules, BuildBlock, BuildMode, BuiltBlock, PooledTx,
};
use hearth_storage::{
    AccountChange, AccountFields, BlockDraft, ChainWriter, EMPTY_CODE_HASH, StateDiff, StoredBody,
    state_root_after, write_block,
};
use revm::primitives::hardfork::SpecId;

/// The kit's chain id.
pub const CHAIN_ID: u64 = 31337;
/// The coinbase of the kit's blocks (starts without an account).
pub const COINBASE: Address = Address::new([0xcb; 20]);
/// A contract with four counter slots: `f(k, r)` adds 1 to slot `k % 4`, logs the new value,
/// and reverts when `r` is non-zero.
pub const COUNTER: Address = Address::new([0xc0; 20]);
/// A contract that stores the coinbase's balance in slot 0 (it observes the coinbase).
pub const OBSERVER: Address = Address::new([0x0b; 20]);
/// A factory: `f(salt, create, call)` deploys a child (CREATE2 with `salt`, or CREATE when
/// `create` is non-zero) whose code self-destructs to its caller, records the child's address
/// in slot 0, and calls it (so it self-destructs in its creating transaction) when `call` is
/// non-zero.
pub const FACTORY: Address = Address::new([0xfa; 20]);
/// BenchToken, when the chain has it.
pub const TOKEN: Address = Address::new([0x70; 20]);
/// A contract that forwards its calldata to COUNTER: the same slots through another `to`.
pub const PROXY: Address = Address::new([0x9e; 20]);

/// Each funded account's balance: 1,000 ether.
const FUNDS: u128 = 1_000_000_000_000_000_000_000;
/// Gas price terms of every kit transaction: a 1 gwei tip over a 1 gwei base fee.
const BASE_FEE: u64 = 1_000_000_000;
const TIP: u128 = 1_000_000_000;

/// A chain at its genesis.
#[derive(Debug)]
pub struct Kit {
    /// Its store.
    pub db: ChainWriter,
    /// Its genesis header.
    pub genesis: Header,
    /// Funded senders.
    pub senders: Vec<Address>,
    /// The gas limit of the block it executes (a trillion unless set: every block fits).
    pub gas_limit: u64,
    /// Whether its executor captures console.log output, as a node's does by default (the
    /// bench's `--console-log yes` measures what that costs).
    pub console_log: bool,
}

/// The `i`-th kit account.
pub fn account(i: usize) -> Address {
    let mut bytes = [0u8; 20];
    bytes[0] = 0xaa;
    bytes[12..20].copy_from_slice(&(i as u64).to_be_bytes());
    Address::new(bytes)
}

/// The COUNTER contract's code.
fn counter_code() -> Vec<u8> {
    // k = calldata[0] & 3; v = sload(k) + 1; mstore(0, v); sstore(k, v); log0(0, 32);
    // if calldata[32] { revert(0, 0) }
    let mut c = vec![
        0x60, 0x00, 0x35, 0x60, 0x03, 0x16, 0x80, 0x54, 0x60, 0x01, 0x01, 0x80, 0x60, 0x00, 0x52,
        0x90, 0x55, 0x60, 0x20, 0x60, 0x00, 0xa0, 0x60, 0x20, 0x35,
    ];
    let dest = u8::try_from(c.len() + 4).expect("small");
    c.extend([0x60, dest, 0x57, 0x00, 0x5b, 0x60, 0x00, 0x60, 0x00, 0xfd]);
    c
}

/// The OBSERVER contract's code: sstore(0, balance(coinbase)).
fn observer_code() -> Vec<u8> {
    vec![0x41, 0x31, 0x60, 0x00, 0x55, 0x00]
}

/// The PROXY contract's code: call(gas, COUNTER, 0, calldata) and stop.
fn proxy_code() -> Vec<u8> {
    let mut c = vec![0x36, 0x60, 0x00, 0x60, 0x00, 0x37, 0x60, 0x00, 0x60, 0x00, 0x36, 0x60, 0x00];
    c.extend([0x60, 0x00, 0x73]);
    c.extend(COUNTER.as_slice());
    c.extend([0x5a, 0xf1, 0x50, 0x00]);
    c
}

/// The FACTORY contract's code.
fn factory_code() -> Vec<u8> {
    // The child's initcode returns the runtime `CALLER SELFDESTRUCT` (0x33ff).
    let initcode = [0x61, 0x33, 0xff, 0x60, 0x00, 0x52, 0x60, 0x02, 0x60, 0x1e, 0xf3];
    let mut c = vec![0x6a];
    c.extend(initcode);
    // mstore(0, initcode): it sits in memory at 21..32.
    c.extend([0x60, 0x00, 0x52]);
    // if calldata[32] goto create
    c.extend([0x60, 0x20, 0x35]);
    let jump_create = c.len() + 1;
    c.extend([0x60, 0x00, 0x57]);
    // create2(0, 21, 11, calldata[0])
    c.extend([0x60, 0x00, 0x35, 0x60, 0x0b, 0x60, 0x15, 0x60, 0x00, 0xf5]);
    let jump_after = c.len() + 1;
    c.extend([0x60, 0x00, 0x56]);
    c[jump_create] = u8::try_from(c.len()).expect("small");
    // create: create(0, 21, 11)
    c.extend([0x5b, 0x60, 0x0b, 0x60, 0x15, 0x60, 0x00, 0xf0]);
    c[jump_after] = u8::try_from(c.len()).expect("small");
    // after: sstore(0, child)
    c.extend([0x5b, 0x80, 0x60, 0x00, 0x55]);
    // if !calldata[64] goto end
    c.extend([0x60, 0x40, 0x35, 0x15]);
    let jump_end = c.len() + 1;
    c.extend([0x60, 0x00, 0x57]);
    // call(gas, child, 0, 0, 0, 0, 0); pop
    c.extend([0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x85, 0x5a, 0xf1, 0x50]);
    c[jump_end] = u8::try_from(c.len()).expect("small");
    c.extend([0x5b, 0x00]);
    c
}

/// BenchToken's `balanceOf` slot of `holder` (the mapping is the contract's slot 1).
pub fn token_balance_slot(holder: Address) -> U256 {
    let mut key = [0u8; 64];
    key[12..32].copy_from_slice(holder.as_slice());
    key[63] = 1;
    U256::from_be_bytes(keccak256(key).0)
}

fn contract(diff: &mut StateDiff, address: Address, code: Bytes, storage: BTreeMap<U256, U256>) {
    let hash = keccak256(&code);
    diff.codes.insert(hash, code);
    diff.accounts.insert(
        address,
        AccountChange {
            info: Some(AccountFields { nonce: 1, balance: U256::ZERO, code_hash: hash }),
            storage_wiped: false,
            storage,
        },
    );
}

impl Kit {
    /// A chain whose genesis funds `senders` accounts and holds COUNTER, OBSERVER and FACTORY;
    /// with `token`, also BenchToken (`runtime` code) at TOKEN with 1,000 units for each of the
    /// first `holders` accounts.
    pub fn new(senders: usize, token: Option<(Bytes, usize)>) -> Self {
        let db = ChainWriter::in_memory().expect("in-memory store");
        let mut diff = StateDiff::default();
        let accounts: Vec<Address> = (0..senders).map(account).collect();
        for address in &accounts {
            diff.accounts.insert(
                *address,
                AccountChange {
                    info: Some(AccountFields {
                        nonce: 0,
                        balance: U256::from(FUNDS),
                        code_hash: EMPTY_CODE_HASH,
                    }),
                    storage_wiped: false,
                    storage: BTreeMap::new(),
                },
            );
        }
        contract(&mut diff, COUNTER, counter_code().into(), BTreeMap::new());
        contract(&mut diff, OBSERVER, observer_code().into(), BTreeMap::new());
        contract(&mut diff, FACTORY, factory_code().into(), BTreeMap::new());
        contract(&mut diff, PROXY, proxy_code().into(), BTreeMap::new());
        if let Some((runtime, holders)) = token {
            let storage = (0..holders)
                .map(|i| (token_balance_slot(account(i)), U256::from(1_000u64)))
                .chain([(U256::ZERO, U256::from(1_000u64 * holders as u64))])
                .collect();
            contract(&mut diff, TOKEN, runtime, storage);
        }
        let header = Header {
            gas_limit: 30_000_000,
            base_fee_per_gas: Some(BASE_FEE),
            ..Default::default()
        };
        let draft = BlockDraft {
            header,
            body: StoredBody { transactions: vec![], senders: vec![] },
            receipts: vec![],
            touched: Vec::new(),
        };
        let genesis = write_block(&db, draft, &diff).expect("genesis writes").header;
        Self { db, genesis, senders: accounts, gas_limit: 1_000_000_000_000, console_log: false }
    }

    /// Executes `txs` as block 1 under `parallel`, timing the execution.
    pub fn execute(
        &self,
        txs: &[PooledTx],
        mode: BuildMode,
        parallel: ParallelConfig,
    ) -> (Digest, ParallelStats, Duration) {
        let (built, stats, elapsed) = self.build(txs, mode, parallel);
        let digest = match built {
            Ok(block) => Digest::Built {
                state_root: state_root_after(&self.db, 1, &block.diff).expect("root"),
                header: Box::new(block.draft.header),
                receipts: block.draft.receipts,
                diff: block.diff,
                outputs: block.outputs,
                invalid: format!("{:?}", block.invalid),
                included: block.draft.body.transactions.len(),
                touched: block
                    .draft
                    .touched
                    .into_iter()
                    .map(|mut accounts| {
                        accounts.sort_unstable();
                        accounts.dedup();
                        accounts
                    })
                    .collect(),
            },
            Err(e) => Digest::Failed(e.to_string()),
        };
        (digest, stats, elapsed)
    }

    /// Executes `txs` as block 1 under `parallel` and times it, without reducing the result
    /// to a digest (a profiler then sees the block's work only).
    pub fn time(
        &self,
        txs: &[PooledTx],
        mode: BuildMode,
        parallel: ParallelConfig,
    ) -> (ParallelStats, Duration) {
        let (_, stats, elapsed) = self.build(txs, mode, parallel);
        (stats, elapsed)
    }

    fn build(
        &self,
        txs: &[PooledTx],
        mode: BuildMode,
        parallel: ParallelConfig,
    ) -> (Result<BuiltBlock, ExecError>, ParallelStats, Duration) {
        let config = ExecConfig {
            chain_id: hearth_messages::ChainId::new(CHAIN_ID),
            spec: SpecId::PRAGUE,
            gas_cap: u64::MAX,
            evm_timeout: None,
            blob_params: None,
            code_size_limit: None,
            parallel,
            show: hearth_actors::Show { console_log: self.console_log, ..Default::default() },
        };
        let mut executor = ExecutorActor::new(self.db.reader(), config, None);
        let mut env =
            BlockEnvSpec::dev(1, 12, COINBASE, self.gas_limit, BASE_FEE, B256::repeat_byte(7));
        // The kit's chain has no system contracts: run the transactions only, so that an
        // imported block needs none either.
        env.rules = BlockRules::TransactionsOnly;
        let msg =
            BuildBlock { parent: Sealed::new(self.genesis.clone()), env, txs: txs.to_vec(), mode };
        let started = Instant::now();
        let built = executor.build_block(msg);
        let elapsed = started.elapsed();
        (built, last_block_stats(), elapsed)
    }
}

/// What must be identical between sequential and parallel execution of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digest {
    /// The block was built.
    Built {
        /// The state root after it.
        state_root: B256,
        /// Its header (gas used, bloom, transactions and receipts roots, ...).
        header: Box<Header>,
        /// Its receipts (status, cumulative gas, logs, bloom).
        receipts: Vec<ReceiptEnvelope>,
        /// Its state changes.
        diff: StateDiff,
        /// What each transaction returned.
        outputs: Vec<Option<alloy_primitives::Bytes>>,
        /// The refused transactions and why.
        invalid: String,
        /// How many transactions it holds.
        included: usize,
        /// The accounts each transaction touched or called (the address index's), unique.
        touched: Vec<Vec<alloy_primitives::Address>>,
    },
    /// The block was refused, with this error.
    Failed(String),
}

/// An EIP-1559 transaction from `from` (unsigned: the sender is given).
pub fn tx(
    from: Address,
    nonce: u64,
    to: TxKind,
    value: U256,
    input: Vec<u8>,
    gas_limit: u64,
) -> PooledTx {
    let body = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit,
        max_fee_per_gas: u128::from(BASE_FEE) + TIP,
        max_priority_fee_per_gas: TIP,
        to,
        value,
        access_list: Default::default(),
        input: input.into(),
    };
    // A unique hash per (sender, nonce) is all block execution needs of it.
    let hash = keccak256([from.as_slice(), &nonce.to_be_bytes()].concat());
    let signature = Signature::new(U256::from(1u8), U256::from(1u8), false);
    let envelope = TxEnvelope::Eip1559(Signed::new_unchecked(body, signature, hash));
    PooledTx { tx: Arc::new(envelope), sender: from, hash }
}

/// ABI words: each argument as a 32-byte big-endian word, after an optional 4-byte selector.
pub fn words(selector: Option<[u8; 4]>, args: &[U256]) -> Vec<u8> {
    let mut out = selector.map(|s| s.to_vec()).unwrap_or_default();
    for arg in args {
        out.extend_from_slice(&arg.to_be_bytes::<32>());
    }
    out
}

/// The address as an ABI word.
pub fn address_word(address: Address) -> U256 {
    U256::from_be_slice(address.as_slice())
}
