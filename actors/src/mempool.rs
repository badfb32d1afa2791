//! `MempoolActor`: pending transactions by sender and nonce.
//!
//! Owns: every admitted, not yet mined transaction, indexed by hash and by (sender, nonce),
//! and the count bound. Handles `SubmitTx`, `TakePending`, `TxsMined`, `GetPooledTx`,
//! `PendingNonce`, `PoolSize`. Sends nothing. Mailbox: bounded by the node config. Restart:
//! never restarted; its contents are not persisted (a pool is lost on restart, as in geth
//! --dev without a journal).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, Addr, Context, Handler};
use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_primitives::{Address, B256, U256};
use hearth_messages::TxError;
use hearth_messages::executor::PooledTx;
use hearth_messages::mempool::{
    GetPooledTx, PendingNonce, PoolSize, SubmitTx, TakePending, TxsMined,
};
use hearth_storage::ChainDb;
use revm::context_interface::cfg::gas::calculate_initial_tx_gas_for_tx;
use revm::primitives::hardfork::SpecId;

use crate::executor::tx_env;

/// The pool's limits and the chain rules it validates against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MempoolConfig {
    /// Chain id transactions must carry (legacy pre-EIP-155 transactions carry none).
    pub chain_id: u64,
    /// Hard fork rules for intrinsic gas.
    pub spec: SpecId,
    /// No transaction may ask for more gas than a block holds.
    pub block_gas_limit: u64,
    /// Most transactions held.
    pub max_count: usize,
}

/// The pool's core: no actix types, tested directly.
#[derive(Debug)]
pub struct Pool {
    config: MempoolConfig,
    by_hash: HashMap<B256, PooledTx>,
    by_sender: HashMap<Address, BTreeMap<u64, B256>>,
}

impl Pool {
    /// An empty pool.
    pub fn new(config: MempoolConfig) -> Self {
        Self { config, by_hash: HashMap::new(), by_sender: HashMap::new() }
    }

    /// Validates `tx` against `db`'s head state and admits it.
    pub fn admit(&mut self, db: &ChainDb, tx: TxEnvelope) -> Result<B256, TxError> {
        let hash = *tx.tx_hash();
        if self.by_hash.contains_key(&hash) {
            return Err(TxError::AlreadyKnown);
        }
        if tx.is_eip4844() {
            return Err(TxError::UnsupportedType);
        }
        let sender = tx.recover_signer().map_err(|_| TxError::InvalidSignature)?;
        if let Some(got) = tx.chain_id()
            && got != self.config.chain_id
        {
            return Err(TxError::WrongChainId { expected: self.config.chain_id, got });
        }
        if tx.gas_limit() > self.config.block_gas_limit {
            return Err(TxError::GasLimitTooHigh {
                gas: tx.gas_limit(),
                block_limit: self.config.block_gas_limit,
            });
        }
        if let Some(tip) = tx.max_priority_fee_per_gas()
            && tip > tx.max_fee_per_gas()
        {
            return Err(TxError::TipAboveFeeCap);
        }
        let pooled = PooledTx { tx: Arc::new(tx), sender, hash };
        let gas = calculate_initial_tx_gas_for_tx(tx_env(&pooled), self.config.spec, None);
        let intrinsic = gas.initial_regular_gas.max(gas.floor_gas);
        let tx = &pooled.tx;
        if tx.gas_limit() < intrinsic {
            return Err(TxError::IntrinsicGasTooLow { gas: tx.gas_limit(), intrinsic });
        }

        let head = db.head_number().unwrap_or_default();
        let account = db.account(&sender, head).map_err(|e| TxError::Storage(e.to_string()))?;
        let (state_nonce, balance) = account.map_or((0, U256::ZERO), |a| (a.nonce, a.balance));
        if tx.nonce() < state_nonce {
            return Err(TxError::NonceTooLow { expected: state_nonce, got: tx.nonce() });
        }
        let cost = U256::from(tx.gas_limit()) * U256::from(tx.max_fee_per_gas()) + tx.value();
        if cost > balance {
            return Err(TxError::InsufficientFunds { sender, balance, cost });
        }

        let replaced = self.by_sender.get(&sender).and_then(|n| n.get(&tx.nonce())).copied();
        if let Some(old_hash) = replaced {
            let old = &self.by_hash[&old_hash].tx;
            // Both fee fields must rise by at least 10%, as geth's default price bump.
            let bumped = |new: u128, old: u128| new >= old + old / 10;
            let old_tip = old.max_priority_fee_per_gas().unwrap_or(old.max_fee_per_gas());
            let new_tip = tx.max_priority_fee_per_gas().unwrap_or(tx.max_fee_per_gas());
            if !bumped(tx.max_fee_per_gas(), old.max_fee_per_gas()) || !bumped(new_tip, old_tip) {
                return Err(TxError::ReplacementUnderpriced);
            }
            self.by_hash.remove(&old_hash);
        } else if self.by_hash.len() >= self.config.max_count {
            return Err(TxError::PoolFull);
        }
        self.by_sender.entry(sender).or_default().insert(tx.nonce(), hash);
        self.by_hash.insert(hash, pooled);
        Ok(hash)
    }

    /// Executable transactions (consecutive nonces from each sender's state nonce, paying at
    /// least `base_fee`), highest tip first across senders, nonce order within a sender, up to
    /// `gas_limit` of declared gas.
    pub fn pending(&self, db: &ChainDb, gas_limit: u64, base_fee: u64) -> Vec<PooledTx> {
        let head = db.head_number().unwrap_or_default();
        let mut queues: Vec<Vec<&PooledTx>> = Vec::new();
        for (sender, nonces) in &self.by_sender {
            let state_nonce = db.account(sender, head).ok().flatten().map_or(0, |a| a.nonce);
            let mut queue = Vec::new();
            // Executable: nonces state_nonce, state_nonce + 1, ... with no gap.
            for (expected, (nonce, hash)) in (state_nonce..).zip(nonces.range(state_nonce..)) {
                let tx = &self.by_hash[hash];
                if *nonce != expected || tx.tx.max_fee_per_gas() < u128::from(base_fee) {
                    break;
                }
                queue.push(tx);
            }
            if !queue.is_empty() {
                queue.reverse(); // pop() takes the lowest nonce
                queues.push(queue);
            }
        }
        let tip = |tx: &PooledTx| tx.tx.effective_tip_per_gas(base_fee).unwrap_or_default();
        let mut heap: BinaryHeap<(u128, Reverse<usize>)> = queues
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.last().map(|tx| (tip(tx), Reverse(i))))
            .collect();
        let mut out = Vec::new();
        let mut gas = 0u64;
        while let Some((_, Reverse(i))) = heap.pop() {
            let Some(tx) = queues[i].pop() else { continue };
            if gas + tx.tx.gas_limit() > gas_limit {
                continue; // this sender's later nonces cannot go first; its turn ends here
            }
            gas += tx.tx.gas_limit();
            out.push(tx.clone());
            if let Some(next) = queues[i].last() {
                heap.push((tip(next), Reverse(i)));
            }
        }
        out
    }

    /// Drops mined and invalid transactions, and any whose nonce the chain has passed.
    pub fn remove_mined(&mut self, db: &ChainDb, hashes: impl IntoIterator<Item = B256>) {
        for hash in hashes {
            if let Some(tx) = self.by_hash.remove(&hash)
                && let Some(nonces) = self.by_sender.get_mut(&tx.sender)
            {
                nonces.remove(&tx.tx.nonce());
            }
        }
        let head = db.head_number().unwrap_or_default();
        let by_hash = &mut self.by_hash;
        self.by_sender.retain(|sender, nonces| {
            let state_nonce = db.account(sender, head).ok().flatten().map_or(0, |a| a.nonce);
            let stale: Vec<u64> = nonces.range(..state_nonce).map(|(n, _)| *n).collect();
            for nonce in stale {
                if let Some(hash) = nonces.remove(&nonce) {
                    by_hash.remove(&hash);
                }
            }
            !nonces.is_empty()
        });
    }

    /// The next nonce for `sender`, counting consecutive pooled transactions.
    pub fn pending_nonce(&self, db: &ChainDb, sender: &Address) -> Result<u64, TxError> {
        let head = db.head_number().unwrap_or_default();
        let account = db.account(sender, head).map_err(|e| TxError::Storage(e.to_string()))?;
        let mut next = account.map_or(0, |a| a.nonce);
        if let Some(nonces) = self.by_sender.get(sender) {
            while nonces.contains_key(&next) {
                next += 1;
            }
        }
        Ok(next)
    }

    /// A pooled transaction by hash.
    pub fn get(&self, hash: &B256) -> Option<&PooledTx> {
        self.by_hash.get(hash)
    }

    /// Number of pooled transactions.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// The mempool actor.
#[derive(Debug)]
pub struct MempoolActor {
    pool: Pool,
    db: ChainDb,
}

impl MempoolActor {
    /// A pool validating against `db`.
    pub fn new(db: ChainDb, config: MempoolConfig) -> Self {
        Self { pool: Pool::new(config), db }
    }

    /// Starts the actor on its own arbiter with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> Addr<Self> {
        let arbiter = actix::Arbiter::new();
        Self::start_in_arbiter(&arbiter.handle(), move |ctx| {
            ctx.set_mailbox_capacity(mailbox.get());
            self
        })
    }
}

impl Actor for MempoolActor {
    type Context = Context<Self>;
}

impl Handler<SubmitTx> for MempoolActor {
    type Result = Result<B256, TxError>;

    fn handle(&mut self, msg: SubmitTx, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.admit(&self.db, msg.tx)
    }
}

impl Handler<TakePending> for MempoolActor {
    type Result = Vec<PooledTx>;

    fn handle(&mut self, msg: TakePending, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.pending(&self.db, msg.gas_limit, msg.base_fee)
    }
}

impl Handler<TxsMined> for MempoolActor {
    type Result = ();

    fn handle(&mut self, msg: TxsMined, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.remove_mined(&self.db, msg.included.into_iter().chain(msg.invalid));
    }
}

impl Handler<GetPooledTx> for MempoolActor {
    type Result = Option<PooledTx>;

    fn handle(&mut self, msg: GetPooledTx, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.get(&msg.0).cloned()
    }
}

impl Handler<PendingNonce> for MempoolActor {
    type Result = Result<u64, TxError>;

    fn handle(&mut self, msg: PendingNonce, _ctx: &mut Self::Context) -> Self::Result {
        self.pool.pending_nonce(&self.db, &msg.0)
    }
}

impl Handler<PoolSize> for MempoolActor {
    type Result = actix::MessageResult<PoolSize>;

    fn handle(&mut self, _msg: PoolSize, _ctx: &mut Self::Context) -> Self::Result {
        let executable = self.pool.pending(&self.db, u64::MAX, 0).len();
        actix::MessageResult((executable, self.pool.len() - executable))
    }
}
