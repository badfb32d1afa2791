//! The pool's core, `Pool`: no actix types, tested directly. It holds every admitted, not yet
//! mined transaction, indexed by hash and by (sender, nonce), each sender's total possible
//! spend, the count and byte bounds, the impersonated senders and the count of admitted
//! transactions block building later refused. `MempoolActor` (in `mempool.rs`) owns one and
//! wraps each of its methods in a message handler.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip4844::Blob;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, U256};
use hearth_messages::ChainId;
use hearth_messages::TxError;
use hearth_messages::executor::{InvalidTx, PooledTx};
use hearth_messages::mempool::{GetBlobs, PoolContent, SignedBy, SubmitFilled};
use hearth_storage::ChainDb;
use revm::primitives::KECCAK_EMPTY;
use revm::primitives::hardfork::SpecId;

use super::blobs;
use super::kept_blobs::{KeptBlobs, blob_in, blobs_of};
use super::validation::{
    SenderState, Signer, TxRules, check_against_state, check_stateless_signed, recover_sender,
};
use crate::senders::recover_all;
/// Largest encoded transaction the pool accepts: geth's limit (four 32 KiB slots). A blob
/// transaction's sidecar is not counted here (its blob count bounds it), only in the pool's
/// byte budget.
pub const MAX_TX_BYTES: usize = 128 * 1024;

/// The order in which pending transactions of different senders go into a block (anvil's
/// `--order`). Each sender's own transactions always go in nonce order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TxOrder {
    /// Highest effective tip first.
    #[default]
    Fees,
    /// First admitted first.
    Fifo,
}

impl TxOrder {
    /// The name anvil's `--order` and `anvil_nodeInfo` use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Fees => "fees",
            Self::Fifo => "fifo",
        }
    }
}

/// The pool's limits and the chain rules it validates against.
#[derive(Debug, Clone)]
pub struct MempoolConfig {
    /// Chain id transactions must carry (legacy pre-EIP-155 transactions carry none), shared
    /// with every other reader; the pool is its only writer (`SetChainId`).
    pub chain_id: ChainId,
    /// Hard fork rules for intrinsic gas.
    pub spec: SpecId,
    /// The blob schedule of that fork (blobs per transaction, the blob base fee's update
    /// fraction).
    pub blob_params: BlobParams,
    /// No transaction may ask for more gas than a block holds.
    pub block_gas_limit: u64,
    /// Contract code size limit the block runs under (`None`: the fork's); a creation's
    /// initcode may be twice it.
    pub code_size_limit: Option<usize>,
    /// Most transactions held.
    pub max_count: usize,
    /// Most encoded (EIP-2718) transaction bytes held.
    pub max_bytes: usize,
    /// How pending transactions are ordered when a block is built.
    pub order: TxOrder,
    /// Every sender counts as impersonated from the start (anvil's `--auto-impersonate`).
    pub auto_impersonate: bool,
    /// Threads a batch's signatures are recovered on (`--exec.threads`; 1: the pool's own).
    pub recover_threads: usize,
}

/// A transaction that passed validation and is not inserted yet.
#[derive(Debug)]
struct Checked {
    pooled: PooledTx,
    size: usize,
    /// The same-nonce transaction it replaces.
    replaces: Option<B256>,
    /// The most it can cost ([`pooled_cost`]).
    cost: U256,
    /// The sender's balance at the head.
    balance: U256,
}

/// What the pool orders by when it must evict: the fee cap (the gas price of legacy ones).
fn price(tx: &TxEnvelope) -> u128 {
    tx.max_fee_per_gas()
}

/// The most a pooled transaction may cost its sender: `gas_limit * max_fee + value`, plus
/// `blob_gas * max_fee_per_blob_gas` for a blob transaction. Admitted transactions passed
/// revm's checked computation of the same sum, so saturation never happens; it only keeps
/// this total.
fn pooled_cost(tx: &TxEnvelope) -> U256 {
    let blob_fee = U256::from(tx.blob_gas_used().unwrap_or_default())
        .saturating_mul(U256::from(tx.max_fee_per_blob_gas().unwrap_or_default()));
    U256::from(tx.gas_limit())
        .saturating_mul(U256::from(tx.max_fee_per_gas()))
        .saturating_add(tx.value())
        .saturating_add(blob_fee)
}

/// `sender`'s account at `db`'s head, with its code when it has any (for EIP-3607).
fn sender_state(db: &ChainDb, sender: &Address) -> Result<SenderState, TxError> {
    let storage = |e: hearth_storage::StorageError| TxError::Storage(e.to_string());
    let head = db.head_number().unwrap_or_default();
    let Some(account) = db.account(sender, head).map_err(storage)? else {
        return Ok(SenderState { code_hash: KECCAK_EMPTY, ..SenderState::default() });
    };
    let has_code = account.code_hash != KECCAK_EMPTY && account.code_hash != B256::ZERO;
    let code = if has_code { db.code(&account.code_hash).map_err(storage)? } else { None };
    Ok(SenderState {
        nonce: account.nonce,
        balance: account.balance,
        code_hash: account.code_hash,
        code,
    })
}

/// The next block's blob base fee after `db`'s head under `params`; `None` before Cancun (a
/// head without excess blob gas).
pub fn next_blob_base_fee(db: &ChainDb, params: &BlobParams) -> Option<u128> {
    let head = db.head_number().unwrap_or_default();
    let parent = db.header(head).ok().flatten()?;
    parent.excess_blob_gas?;
    Some(params.calc_blob_fee(crate::exec::excess_blob_gas(&parent, params)))
}

/// The next block's base fee after `db`'s head (0 without a head or after a pre-London one).
pub fn next_base_fee(db: &ChainDb) -> u64 {
    let head = db.head_number().unwrap_or_default();
    match db.header(head) {
        Ok(Some(parent)) => hearth_messages::base_fee::next_base_fee(&parent).unwrap_or(0),
        _ => 0,
    }
}

/// The pool's core: no actix types, tested directly.
#[derive(Debug)]
pub struct Pool {
    config: MempoolConfig,
    by_hash: HashMap<B256, PooledTx>,
    by_sender: HashMap<Address, BTreeMap<u64, B256>>,
    /// Per sender, the most its pooled transactions may cost together ([`pooled_cost`]).
    spent: HashMap<Address, U256>,
    /// Encoded bytes of everything in `by_hash`.
    bytes: usize,
    impersonated: HashSet<Address>,
    auto_impersonate: bool,
    /// Admitted transactions block building refused, dropped since start.
    dropped_invalid: u64,
    /// When each pooled transaction was admitted (a counter), for [`TxOrder::Fifo`].
    arrival: HashMap<B256, u64>,
    /// The next admission's number.
    next_arrival: u64,
    /// Sidecars of blob transactions blocks included (see `kept_blobs`).
    kept: KeptBlobs,
}

impl Pool {
    /// An empty pool.
    pub fn new(config: MempoolConfig) -> Self {
        let auto_impersonate = config.auto_impersonate;
        Self {
            config,
            by_hash: HashMap::new(),
            by_sender: HashMap::new(),
            spent: HashMap::new(),
            bytes: 0,
            impersonated: HashSet::new(),
            auto_impersonate,
            dropped_invalid: 0,
            arrival: HashMap::new(),
            next_arrival: 0,
            kept: KeptBlobs::default(),
        }
    }

    /// The chain rules admissions are checked against.
    pub fn rules(&self) -> TxRules {
        TxRules {
            spec: self.config.spec,
            chain_id: self.config.chain_id.get(),
            block_gas_limit: self.config.block_gas_limit,
            code_size_limit: self.config.code_size_limit,
        }
    }

    /// Checks `tx` against `db`'s head state and the pool without changing anything. `sender`
    /// is given only for transactions the node sealed itself (a dev key's, or an impersonated
    /// account's placeholder signature).
    fn validate(&self, db: &ChainDb, tx: TxEnvelope, signer: Signer) -> Result<Checked, TxError> {
        let hash = *tx.tx_hash();
        if self.by_hash.contains_key(&hash) {
            return Err(TxError::AlreadyKnown);
        }
        let canonical = blobs::canonical_len(&tx);
        if canonical > MAX_TX_BYTES {
            return Err(TxError::Oversized { size: canonical, max: MAX_TX_BYTES });
        }
        // The byte budget counts what the pool holds: a blob transaction with its sidecar.
        let size = tx.encode_2718_len();
        if tx.is_eip4844() && self.config.spec.is_enabled_in(SpecId::CANCUN) {
            let blob_fee = next_blob_base_fee(db, &self.config.blob_params).unwrap_or_default();
            blobs::check_shape(&tx, self.config.spec, &self.config.blob_params, blob_fee)?;
        }
        let sealed_by_node = matches!(signer, Signer::Node(_));
        let valid = check_stateless_signed(tx, signer, &self.rules())?;
        let sender = valid.pooled.sender;
        let account = sender_state(db, &sender)?;
        check_against_state(&valid, &account, sealed_by_node)?;

        let tx = &valid.pooled.tx;
        let replaces = self.by_sender.get(&sender).and_then(|n| n.get(&tx.nonce())).copied();
        let replaced = replaces.map(|old| &self.by_hash[&old].tx);
        if let Some(old) = replaced {
            // Both fee fields must rise by at least 10%, as geth's default price bump; a blob
            // transaction replacing one also raises its blob fee cap by 10%.
            let bumped = |new: u128, old: u128| new >= old.saturating_add(old / 10);
            let old_tip = old.max_priority_fee_per_gas().unwrap_or(old.max_fee_per_gas());
            let new_tip = tx.max_priority_fee_per_gas().unwrap_or(tx.max_fee_per_gas());
            let blob_bumped = match (tx.max_fee_per_blob_gas(), old.max_fee_per_blob_gas()) {
                (Some(new), Some(old)) => bumped(new, old),
                _ => true,
            };
            if !bumped(tx.max_fee_per_gas(), old.max_fee_per_gas())
                || !bumped(new_tip, old_tip)
                || !blob_bumped
            {
                return Err(TxError::ReplacementUnderpriced);
            }
        }
        // `check_against_state` refused a cost that does not fit.
        let cost = valid.max_cost.unwrap_or(U256::MAX);
        let checked =
            Checked { pooled: valid.pooled, size, replaces, cost, balance: account.balance };
        self.check_overdraft(&checked)?;
        // Last, once every cheaper rule passed: the KZG proofs (milliseconds per blob).
        blobs::verify_proofs(&checked.pooled.tx)?;
        Ok(checked)
    }

    /// geth's overdraft rule: the sender's other pooled transactions spend the same balance,
    /// so one admitted now must not be refused by the block for lack of funds once they ran.
    fn check_overdraft(&self, checked: &Checked) -> Result<(), TxError> {
        let sender = &checked.pooled.sender;
        let spent = self.spent.get(sender).copied().unwrap_or_default();
        let replaced = checked.replaces.and_then(|old| self.by_hash.get(&old));
        let queued = spent.saturating_sub(replaced.map_or(U256::ZERO, |old| pooled_cost(&old.tx)));
        if queued.saturating_add(checked.cost) > checked.balance {
            return Err(TxError::Overdraft {
                balance: checked.balance,
                queued,
                cost: checked.cost,
            });
        }
        Ok(())
    }

    /// How much the pool grows when `checked` goes in: (transactions, bytes).
    fn growth(&self, checked: &Checked) -> (usize, usize) {
        match checked.replaces.and_then(|old| self.by_hash.get(&old)) {
            Some(old) => (0, checked.size.saturating_sub(old.tx.encode_2718_len())),
            None => (1, checked.size),
        }
    }

    /// Whether the pool stays within both bounds after growing by `count` and `bytes`, with
    /// `freed` = (count, bytes) evicted first.
    fn fits(&self, (count, bytes): (usize, usize), freed: (usize, usize)) -> bool {
        self.by_hash.len() - freed.0 + count <= self.config.max_count
            && self.bytes - freed.1 + bytes <= self.config.max_bytes
    }

    /// The cheapest transactions (each with its sender's higher nonces, which could no longer
    /// execute) whose eviction makes room for `checked`, all paying less than it; `None` when
    /// no such set exists. Reads only: the caller evicts.
    fn eviction_for(&self, checked: &Checked, growth: (usize, usize)) -> Option<Vec<B256>> {
        let new_price = price(&checked.pooled.tx);
        let mut candidates: Vec<(u128, Reverse<u64>, Address)> = self
            .by_sender
            .iter()
            // Evicting the sender's own earlier nonces would leave the newcomer stuck.
            .filter(|(sender, _)| **sender != checked.pooled.sender)
            .flat_map(|(sender, nonces)| {
                nonces
                    .iter()
                    .map(|(nonce, hash)| (price(&self.by_hash[hash].tx), Reverse(*nonce), *sender))
            })
            .collect();
        // Cheapest first; among equals the highest nonce, which strands nothing behind it.
        candidates.sort_unstable();
        let mut evicted = Vec::new();
        let mut seen = HashSet::new();
        let mut freed = (0usize, 0usize);
        for (candidate_price, Reverse(nonce), sender) in candidates {
            if candidate_price >= new_price {
                break;
            }
            for hash in self.by_sender[&sender].range(nonce..).map(|(_, h)| *h) {
                if seen.insert(hash) {
                    evicted.push(hash);
                    freed.0 += 1;
                    freed.1 += self.by_hash[&hash].tx.encode_2718_len();
                }
            }
            if self.fits(growth, freed) {
                return Some(evicted);
            }
        }
        None
    }

    /// Puts a validated transaction in, replacing its same-nonce predecessor.
    fn insert(&mut self, checked: Checked) -> B256 {
        let Checked { pooled, size, replaces, .. } = checked;
        if let Some(old) = replaces {
            self.remove(&old);
        }
        let hash = pooled.hash;
        self.by_sender.entry(pooled.sender).or_default().insert(pooled.tx.nonce(), hash);
        let spent = self.spent.entry(pooled.sender).or_default();
        *spent = spent.saturating_add(pooled_cost(&pooled.tx));
        self.bytes += size;
        self.by_hash.insert(hash, pooled);
        self.arrival.insert(hash, self.next_arrival);
        self.next_arrival += 1;
        hash
    }

    /// Takes one transaction out; `None` when it is not pooled.
    fn remove(&mut self, hash: &B256) -> Option<PooledTx> {
        let pooled = self.by_hash.remove(hash)?;
        self.arrival.remove(hash);
        self.bytes -= pooled.tx.encode_2718_len();
        if let Some(spent) = self.spent.get_mut(&pooled.sender) {
            *spent = spent.saturating_sub(pooled_cost(&pooled.tx));
        }
        if let Some(nonces) = self.by_sender.get_mut(&pooled.sender) {
            if nonces.get(&pooled.tx.nonce()) == Some(hash) {
                nonces.remove(&pooled.tx.nonce());
            }
            if nonces.is_empty() {
                self.by_sender.remove(&pooled.sender);
                self.spent.remove(&pooled.sender);
            }
        }
        Some(pooled)
    }

    /// Admits one validated transaction; when the pool is full, evicts cheaper ones for it
    /// if that makes room, else rejects it and changes nothing.
    fn admit_checked(&mut self, checked: Checked) -> Result<B256, TxError> {
        let growth = self.growth(&checked);
        if !self.fits(growth, (0, 0)) {
            let evicted = self.eviction_for(&checked, growth).ok_or(TxError::PoolFull)?;
            for hash in &evicted {
                self.remove(hash);
            }
            tracing::debug!(target: "actors::mempool", evicted = evicted.len(), "pool full; evicted cheaper transactions");
        }
        Ok(self.insert(checked))
    }

    /// Validates `tx` against `db`'s head state and admits it.
    pub fn admit(&mut self, db: &ChainDb, tx: TxEnvelope) -> Result<B256, TxError> {
        let checked = self.validate(db, tx, Signer::Recover)?;
        self.admit_checked(checked)
    }

    /// Admits what eth_sendTransaction filled: the nonce (the pending one unless given) is
    /// chosen and the transaction sealed within this one call, so no other submission from
    /// `sender` can take the same nonce in between. A dev-key transaction is admitted as from
    /// `sender` without recovering its signature: the node signed it itself.
    pub fn admit_filled(&mut self, db: &ChainDb, filled: SubmitFilled) -> Result<B256, TxError> {
        let SubmitFilled { sender, nonce, signed_by, seal } = filled;
        if signed_by == SignedBy::Impersonated && !self.is_impersonated(&sender) {
            return Err(TxError::NotImpersonated(sender));
        }
        let nonce = match nonce {
            Some(nonce) => nonce,
            None => self.pending_nonce(db, &sender)?,
        };
        let checked = self.validate(db, seal(nonce)?, Signer::Node(sender))?;
        self.admit_checked(checked)
    }

    /// Admits a batch: each transaction is validated on its own, but the bounds are
    /// all-or-nothing. A batch of one behaves as [`Pool::admit`] (it may evict).
    pub fn admit_batch(
        &mut self,
        db: &ChainDb,
        txs: Vec<TxEnvelope>,
    ) -> Result<Vec<Result<B256, TxError>>, TxError> {
        if txs.len() == 1 {
            return match self.admit(db, txs.into_iter().next().expect("one transaction")) {
                Err(TxError::PoolFull) => Err(TxError::PoolFull),
                result => Ok(vec![result]),
            };
        }
        // Signatures are recovered first, spread over `recover_threads` threads; each result is
        // used where validation would have recovered it, so every item gets the same error.
        let spec = self.config.spec;
        let senders = recover_all(&txs, self.config.recover_threads, |tx| recover_sender(tx, spec));
        let checked: Vec<_> = txs
            .into_iter()
            .zip(senders)
            .map(|(tx, sender)| self.validate(db, tx, Signer::Recovered(sender)))
            .collect();
        let growth = checked
            .iter()
            .flatten()
            .map(|c| self.growth(c))
            .fold((0, 0), |(n, b), (dn, db)| (n + dn, b + db));
        // Duplicates inside the batch count twice here: erring towards "full" keeps the bound.
        if !self.fits(growth, (0, 0)) {
            return Err(TxError::PoolFull);
        }
        Ok(checked
            .into_iter()
            .map(|checked| {
                let checked = checked?;
                // An earlier item of this batch may have taken the hash or the nonce.
                if self.by_hash.contains_key(&checked.pooled.hash) {
                    return Err(TxError::AlreadyKnown);
                }
                let nonce = checked.pooled.tx.nonce();
                let current =
                    self.by_sender.get(&checked.pooled.sender).and_then(|n| n.get(&nonce));
                if current.is_some() && current != checked.replaces.as_ref() {
                    return Err(TxError::ReplacementUnderpriced);
                }
                // Earlier items of this batch from the same sender spend its balance too.
                self.check_overdraft(&checked)?;
                Ok(self.insert(checked))
            })
            .collect())
    }

    /// Starts or stops impersonating `address`.
    pub fn set_impersonated(&mut self, address: Address, enabled: bool) {
        if enabled {
            self.impersonated.insert(address);
        } else {
            self.impersonated.remove(&address);
        }
    }

    /// Whether unsigned transactions from `address` are accepted.
    pub fn is_impersonated(&self, address: &Address) -> bool {
        self.auto_impersonate || self.impersonated.contains(address)
    }

    /// Impersonates every account (`true`) or only the listed ones.
    pub const fn set_auto_impersonate(&mut self, enabled: bool) {
        self.auto_impersonate = enabled;
    }

    /// Changes the block gas limit admissions are checked against.
    pub const fn set_block_gas_limit(&mut self, gas_limit: u64) {
        self.config.block_gas_limit = gas_limit;
    }

    /// A pool with the same settings holding what this one holds that is still valid at the
    /// head, re-admitted sender by sender in nonce order: what the actor rebuilds after a panic
    /// that may have left this pool's indexes half-updated. Only `by_hash`, the primary map,
    /// is trusted; every index is built anew.
    pub fn rebuilt(&self, db: &ChainDb) -> Self {
        let mut fresh = Self::new(self.config.clone());
        fresh.impersonated = self.impersonated.clone();
        fresh.auto_impersonate = self.auto_impersonate;
        fresh.dropped_invalid = self.dropped_invalid;
        fresh.kept = self.kept.clone();
        let mut txs: Vec<&PooledTx> = self.by_hash.values().collect();
        txs.sort_by_key(|p| (p.sender, p.tx.nonce()));
        for pooled in txs {
            // The sender was proved (or, for the node's own, known) at first admission; an
            // impersonated transaction's signature is a placeholder that proves nothing.
            let readmitted = fresh
                .validate(db, pooled.tx.as_ref().clone(), Signer::Node(pooled.sender))
                .and_then(|checked| fresh.admit_checked(checked));
            if let Err(error) = readmitted {
                tracing::warn!(target: "actors::mempool", hash = %pooled.hash, %error, "dropped while rebuilding the pool");
            }
        }
        // Re-admission numbered the transactions by sender; keep their first admission's
        // order (for `--order fifo`) wherever it is known.
        for (hash, arrival) in &mut fresh.arrival {
            if let Some(first) = self.arrival.get(hash) {
                *arrival = *first;
            }
        }
        fresh.next_arrival = fresh.next_arrival.max(self.next_arrival);
        fresh
    }

    /// Removes one transaction; whether it was pooled.
    pub fn drop_tx(&mut self, hash: &B256) -> bool {
        self.remove(hash).is_some()
    }

    /// Removes every transaction; how many there were. Impersonation settings stay.
    pub fn drop_all(&mut self) -> usize {
        let count = self.by_hash.len();
        self.by_hash.clear();
        self.by_sender.clear();
        self.spent.clear();
        self.bytes = 0;
        count
    }

    /// Forgets the sidecars kept of mined blob transactions (the chain that mined them is gone).
    pub fn forget_mined(&mut self) {
        self.kept.clear();
    }

    /// Removes every transaction from `sender`; how many there were.
    pub fn remove_sender(&mut self, sender: &Address) -> usize {
        let hashes: Vec<B256> =
            self.by_sender.get(sender).map(|n| n.values().copied().collect()).unwrap_or_default();
        for hash in &hashes {
            self.remove(hash);
        }
        hashes.len()
    }

    /// Publishes `chain_id` as the chain id and drops every pooled transaction signed for
    /// another one (legacy ones without a chain id stay valid); how many were dropped.
    pub fn set_chain_id(&mut self, chain_id: u64) -> usize {
        self.config.chain_id.set(chain_id);
        let foreign: Vec<B256> = self
            .by_hash
            .values()
            .filter(|p| p.tx.chain_id().is_some_and(|id| id != chain_id))
            .map(|p| p.hash)
            .collect();
        for hash in &foreign {
            self.remove(hash);
        }
        foreign.len()
    }

    /// Executable transactions (consecutive nonces from each sender's state nonce, paying at
    /// least `base_fee` and the next block's blob base fee), across senders highest tip first
    /// (or first admitted first, under [`TxOrder::Fifo`]), nonce order within a sender, up to
    /// `gas_limit` of declared gas and `max_bytes` of encoded transactions. Blob transactions
    /// come in their canonical form, without sidecars: what the block holds.
    pub fn pending(
        &self,
        db: &ChainDb,
        gas_limit: u64,
        max_bytes: usize,
        base_fee: u64,
    ) -> Vec<PooledTx> {
        let mut queues: Vec<Vec<&PooledTx>> = Vec::new();
        for (sender, nonces) in &self.by_sender {
            let mut queue = self.executable(db, sender, nonces, base_fee);
            if !queue.is_empty() {
                queue.reverse(); // pop() takes the lowest nonce
                queues.push(queue);
            }
        }
        // The heap pops the largest key: the highest tip (then the earliest admission, so
        // equal tips keep the order they were sent in, as in anvil, and a block's order does
        // not depend on the senders' hash map order), or the earliest admission.
        let arrival = |tx: &PooledTx| self.arrival.get(&tx.hash).copied().unwrap_or(u64::MAX);
        let key = |tx: &PooledTx| match self.config.order {
            TxOrder::Fees => {
                (tx.tx.effective_tip_per_gas(base_fee).unwrap_or_default(), Reverse(arrival(tx)))
            }
            TxOrder::Fifo => (0, Reverse(arrival(tx))),
        };
        // (tip or 0, earliest admission first), then the queue: the heap's entry per sender.
        type Key = (u128, Reverse<u64>);
        let mut heap: BinaryHeap<(Key, Reverse<usize>)> = queues
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.last().map(|tx| (key(tx), Reverse(i))))
            .collect();
        let mut out = Vec::new();
        let mut gas = 0u64;
        let mut bytes = 0usize;
        while let Some((_, Reverse(i))) = heap.pop() {
            let Some(tx) = queues[i].pop() else { continue };
            let size = blobs::canonical_len(&tx.tx);
            // Saturating: evm_setBlockGasLimit may set a limit near u64::MAX, and with the
            // block gas limit disabled it is u64::MAX.
            if gas.saturating_add(tx.tx.gas_limit()) > gas_limit
                || bytes.saturating_add(size) > max_bytes
            {
                continue; // this sender's later nonces cannot go first; its turn ends here
            }
            gas += tx.tx.gas_limit();
            bytes += size;
            let mut block_tx = tx.clone();
            if blobs::sidecar(&tx.tx).is_some() {
                block_tx.tx = std::sync::Arc::new(blobs::without_sidecar(&tx.tx));
            }
            out.push(block_tx);
            if let Some(next) = queues[i].last() {
                heap.push((key(next), Reverse(i)));
            }
        }
        out
    }

    /// The sender's transactions that can run next: nonces state_nonce, state_nonce + 1, ...
    /// with no gap, each paying at least `base_fee` (and a blob transaction the next block's
    /// blob base fee: one admitted before the blob fee rose waits, as in geth's blob pool).
    fn executable<'a>(
        &'a self,
        db: &ChainDb,
        sender: &Address,
        nonces: &BTreeMap<u64, B256>,
        base_fee: u64,
    ) -> Vec<&'a PooledTx> {
        let head = db.head_number().unwrap_or_default();
        let state_nonce = db.account(sender, head).ok().flatten().map_or(0, |a| a.nonce);
        let mut blob_fee = None;
        let mut queue = Vec::new();
        for (expected, (nonce, hash)) in (state_nonce..).zip(nonces.range(state_nonce..)) {
            let tx = &self.by_hash[hash];
            if *nonce != expected || tx.tx.max_fee_per_gas() < u128::from(base_fee) {
                break;
            }
            if let Some(cap) = tx.tx.max_fee_per_blob_gas() {
                let fee = *blob_fee.get_or_insert_with(|| {
                    next_blob_base_fee(db, &self.config.blob_params).unwrap_or_default()
                });
                if cap < fee {
                    break;
                }
            }
            queue.push(tx);
        }
        queue
    }

    /// Every pooled transaction, split into pending (executable at `base_fee`) and queued.
    pub fn content(&self, db: &ChainDb, base_fee: u64) -> PoolContent {
        let mut content = PoolContent::default();
        let mut senders: Vec<_> = self.by_sender.iter().collect();
        senders.sort_unstable_by_key(|(sender, _)| **sender);
        for (sender, nonces) in senders {
            let executable = self.executable(db, sender, nonces, base_fee);
            let pending: HashSet<B256> = executable.iter().map(|tx| tx.hash).collect();
            for hash in nonces.values() {
                let tx = self.by_hash[hash].clone();
                if pending.contains(hash) {
                    content.pending.push(tx);
                } else {
                    content.queued.push(tx);
                }
            }
        }
        content
    }

    /// Drops what block building refused, reporting each: a `warn` line naming the hash and
    /// the reason, and the `dropped_invalid` counter. The sender's later nonces stay pooled
    /// (as queued, behind the gap), as geth keeps them: the sender can fill the gap with a
    /// valid transaction at the freed nonce and the rest runs. Returns how many were dropped.
    pub fn drop_invalid(&mut self, invalid: &[InvalidTx]) -> usize {
        let mut dropped = 0;
        for InvalidTx { hash, reason } in invalid {
            let Some(tx) = self.remove(hash) else { continue };
            dropped += 1;
            tracing::warn!(
                target: "actors::mempool",
                %hash,
                sender = %tx.sender,
                nonce = tx.tx.nonce(),
                %reason,
                "block building refused an admitted transaction; dropped it from the pool"
            );
        }
        self.dropped_invalid += dropped as u64;
        dropped
    }

    /// Admitted transactions dropped because block building refused them, since start.
    pub const fn dropped_invalid(&self) -> u64 {
        self.dropped_invalid
    }

    /// Drops mined transactions, and any whose nonce the chain has passed.
    pub fn remove_mined(&mut self, db: &ChainDb, hashes: impl IntoIterator<Item = B256>) {
        for hash in hashes {
            if let Some(mined) = self.remove(&hash) {
                self.kept.keep(hash, mined.tx);
            }
        }
        let head = db.head_number().unwrap_or_default();
        let mut stale = Vec::new();
        for (sender, nonces) in &self.by_sender {
            let state_nonce = db.account(sender, head).ok().flatten().map_or(0, |a| a.nonce);
            stale.extend(nonces.range(..state_nonce).map(|(_, hash)| (*hash, state_nonce)));
        }
        for (hash, state_nonce) in stale {
            // A dev patch (anvil_setNonce) is what moves a nonce past a pooled one.
            if let Some(tx) = self.remove(&hash) {
                tracing::info!(
                    target: "actors::mempool",
                    %hash,
                    sender = %tx.sender,
                    nonce = tx.tx.nonce(),
                    state_nonce,
                    "dropped a pooled transaction whose nonce the chain has passed"
                );
            }
        }
    }

    /// The blobs `query` names: of a pooled transaction, else of a mined one still kept.
    pub fn blobs(&self, query: &GetBlobs) -> Option<Vec<Blob>> {
        match query {
            GetBlobs::Transaction(hash) => {
                let tx = self.by_hash.get(hash).map(|p| p.tx.as_ref());
                let blobs = blobs_of(tx.or_else(|| self.kept.mined_tx(hash))?);
                (!blobs.is_empty()).then(|| blobs.to_vec())
            }
            GetBlobs::Versioned(versioned) => {
                let pooled = self.by_hash.values().find_map(|p| blob_in(&p.tx, versioned));
                let blob = pooled.or_else(|| blob_in(self.kept.holding(versioned)?, versioned))?;
                Some(vec![blob])
            }
        }
    }

    /// Blob transaction `hash` (pooled, else kept after mining), with its sidecar.
    pub fn blob_tx_by_hash(&self, hash: &B256) -> Option<std::sync::Arc<TxEnvelope>> {
        let pooled = self.by_hash.get(hash).map(|p| std::sync::Arc::clone(&p.tx));
        pooled.or_else(|| self.kept.mined_shared(hash)).filter(|tx| !blobs_of(tx).is_empty())
    }

    /// The transaction (pooled, else kept after mining) holding the blob `versioned`.
    pub fn blob_tx(&self, versioned: &B256) -> Option<std::sync::Arc<TxEnvelope>> {
        let holds = |tx: &TxEnvelope| {
            tx.blob_versioned_hashes().is_some_and(|hashes| hashes.contains(versioned))
                && blobs_of(tx).len() == tx.blob_versioned_hashes().map_or(0, <[B256]>::len)
        };
        let pooled =
            self.by_hash.values().find(|p| holds(&p.tx)).map(|p| std::sync::Arc::clone(&p.tx));
        pooled.or_else(|| self.kept.holding_shared(versioned))
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

    /// `sender`'s pooled transaction with `nonce`, from the sender index.
    pub fn by_nonce(&self, sender: &Address, nonce: u64) -> Option<&PooledTx> {
        self.by_sender.get(sender)?.get(&nonce).and_then(|hash| self.by_hash.get(hash))
    }

    /// Number of pooled transactions.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Encoded bytes of the pooled transactions.
    pub const fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{SignableTransaction, TxEip1559};
    use alloy_primitives::{Bytes, TxKind};
    use alloy_signer::SignerSync;
    use alloy_signer_local::PrivateKeySigner;

    use super::*;
    use crate::state::{GenesisSpec, init_genesis};

    const GWEI: u128 = 1_000_000_000;

    fn signers(n: u8) -> Vec<PrivateKeySigner> {
        (1..=n).map(|i| PrivateKeySigner::from_bytes(&B256::repeat_byte(i)).unwrap()).collect()
    }

    fn chain(funded: &[PrivateKeySigner]) -> ChainDb {
        let db = hearth_storage::ChainWriter::in_memory().unwrap();
        let alloc = funded.iter().map(|s| (s.address(), U256::from(10u128.pow(20)))).collect();
        init_genesis(&db, &GenesisSpec { alloc, gas_limit: 30_000_000, base_fee: 1, timestamp: 1 })
            .unwrap();
        db.reader()
    }

    fn tx(signer: &PrivateKeySigner, nonce: u64, max_fee: u128) -> TxEnvelope {
        let tx = TxEip1559 {
            chain_id: 1,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: max_fee / 2,
            to: TxKind::Call(Address::ZERO),
            value: U256::ZERO,
            access_list: Default::default(),
            input: Bytes::new(),
        };
        let signature = signer.sign_hash_sync(&tx.signature_hash()).unwrap();
        tx.into_signed(signature).into()
    }

    fn pool(max_count: usize) -> Pool {
        Pool::new(MempoolConfig {
            chain_id: ChainId::new(1),
            spec: SpecId::PRAGUE,
            blob_params: BlobParams::prague(),
            block_gas_limit: 30_000_000,
            code_size_limit: None,
            max_count,
            max_bytes: usize::MAX,
            order: TxOrder::Fees,
            auto_impersonate: false,
            recover_threads: 2,
        })
    }

    #[test]
    fn bytes_follow_every_insert_replacement_eviction_and_removal() {
        let keys = signers(3);
        let db = chain(&keys);
        let mut pool = pool(2);
        let size = |t: &TxEnvelope| t.encode_2718_len();
        let (a0, a1) = (tx(&keys[0], 0, 2 * GWEI), tx(&keys[0], 1, 2 * GWEI));
        let answers = pool.admit_batch(&db, vec![a0.clone(), a1.clone()]).unwrap();
        assert!(answers.iter().all(Result::is_ok));
        assert_eq!(pool.bytes(), size(&a0) + size(&a1));

        // A replacement swaps sizes; a batch over the count changes nothing.
        let a0_bumped = tx(&keys[0], 0, 3 * GWEI);
        pool.admit(&db, a0_bumped.clone()).unwrap();
        assert_eq!(pool.bytes(), size(&a0_bumped) + size(&a1));
        let over = vec![tx(&keys[1], 0, 9 * GWEI), tx(&keys[2], 0, 9 * GWEI)];
        assert_eq!(pool.admit_batch(&db, over), Err(TxError::PoolFull));
        assert_eq!((pool.len(), pool.bytes()), (2, size(&a0_bumped) + size(&a1)));

        // A richer single transaction evicts the cheapest (a1, the higher nonce at 2 gwei).
        let b0 = tx(&keys[1], 0, 9 * GWEI);
        pool.admit(&db, b0.clone()).unwrap();
        assert!(pool.get(a1.tx_hash()).is_none());
        assert_eq!(pool.bytes(), size(&a0_bumped) + size(&b0));

        assert!(pool.drop_tx(b0.tx_hash()));
        pool.remove_mined(&db, [*a0_bumped.tx_hash()]);
        assert_eq!((pool.len(), pool.bytes()), (0, 0));
    }

    #[test]
    fn a_rebuilt_pool_holds_what_is_still_valid() {
        let keys = signers(2);
        let db = chain(&keys);
        let mut pool = pool(10);
        let txs = [tx(&keys[0], 0, 2 * GWEI), tx(&keys[0], 1, 2 * GWEI), tx(&keys[1], 0, GWEI)];
        for t in &txs {
            pool.admit(&db, t.clone()).unwrap();
        }
        pool.set_impersonated(keys[1].address(), true);
        let rebuilt = pool.rebuilt(&db);
        assert_eq!((rebuilt.len(), rebuilt.bytes()), (pool.len(), pool.bytes()));
        assert!(txs.iter().all(|t| rebuilt.get(t.tx_hash()).is_some()));
        assert!(rebuilt.is_impersonated(&keys[1].address()));
        assert_eq!(
            rebuilt.pending(&db, 30_000_000, usize::MAX, 0).len(),
            pool.pending(&db, 30_000_000, usize::MAX, 0).len()
        );
    }

    #[test]
    fn a_batch_may_not_overdraw_a_sender_either() {
        let keys = signers(1);
        let db = chain(&keys);
        let mut pool = pool(10);
        // 10^20 wei each: two transfers of 0.6 * 10^20 cannot both be paid.
        let spend = |nonce| {
            let tx = TxEip1559 {
                chain_id: 1,
                nonce,
                gas_limit: 21_000,
                max_fee_per_gas: 2 * GWEI,
                max_priority_fee_per_gas: GWEI,
                to: TxKind::Call(Address::ZERO),
                value: U256::from(6 * 10u128.pow(19)),
                access_list: Default::default(),
                input: Bytes::new(),
            };
            let signature = keys[0].sign_hash_sync(&tx.signature_hash()).unwrap();
            TxEnvelope::from(tx.into_signed(signature))
        };
        let answers = pool.admit_batch(&db, vec![spend(0), spend(1)]).unwrap();
        assert!(answers[0].is_ok());
        assert!(matches!(answers[1], Err(TxError::Overdraft { .. })), "{answers:?}");
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn a_batch_recovered_on_threads_answers_as_on_one() {
        let keys = signers(40);
        let db = chain(&keys);
        let mut txs: Vec<_> = keys.iter().map(|k| tx(k, 0, 2 * GWEI)).collect();
        // An `r` of zero recovers to no key: item 23 fails alone, at its own index.
        let TxEnvelope::Eip1559(signed) = &txs[23] else { unreachable!() };
        let bad = alloy_primitives::Signature::new(U256::ZERO, signed.signature().s(), false);
        txs[23] = signed.tx().clone().into_signed(bad).into();
        let answers = |threads| {
            let mut pool =
                Pool::new(MempoolConfig { recover_threads: threads, ..pool(100).config });
            let answers = pool.admit_batch(&db, txs.clone()).unwrap();
            let senders: Vec<_> =
                txs.iter().map(|t| pool.get(t.tx_hash()).map(|pooled| pooled.sender)).collect();
            (answers, senders)
        };
        let (one, four) = (answers(1), answers(4));
        assert_eq!(one, four);
        let failed: Vec<_> = four.0.iter().enumerate().filter(|(_, a)| a.is_err()).collect();
        assert_eq!(failed, vec![(23, &Err(TxError::InvalidSignature))]);
        let expected: Vec<_> =
            keys.iter().enumerate().map(|(i, k)| (i != 23).then(|| k.address())).collect();
        assert_eq!(four.1, expected);
    }

    #[test]
    fn duplicates_inside_a_batch_fail_alone() {
        let keys = signers(1);
        let db = chain(&keys);
        let mut pool = pool(10);
        let t = tx(&keys[0], 0, 2 * GWEI);
        let answers = pool.admit_batch(&db, vec![t.clone(), t.clone()]).unwrap();
        assert_eq!(answers[0], Ok(*t.tx_hash()));
        assert_eq!(answers[1], Err(TxError::AlreadyKnown));
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn equal_tips_go_into_blocks_in_the_order_they_were_admitted() {
        // 40 senders at the same price: the block must list them as they were sent, whatever
        // order the pool's per-sender map iterates in.
        let keys = signers(40);
        let db = chain(&keys);
        let mut pool = pool(100);
        let txs: Vec<_> = keys.iter().rev().map(|k| tx(k, 0, 3 * GWEI)).collect();
        for t in &txs {
            pool.admit(&db, t.clone()).unwrap();
        }
        let taken = pool.pending(&db, u64::MAX, usize::MAX, 1);
        let hashes: Vec<B256> = taken.iter().map(|p| p.hash).collect();
        let sent: Vec<B256> = txs.iter().map(|t| *t.tx_hash()).collect();
        assert_eq!(hashes, sent);
    }

    #[test]
    fn blocks_take_the_highest_tip_first_or_the_first_admitted_under_fifo() {
        let keys = signers(3);
        let db = chain(&keys);
        // Admitted cheapest first: a (2 gwei), b (9 gwei), then a's next nonce and c (5 gwei).
        let txs = [
            tx(&keys[0], 0, 2 * GWEI),
            tx(&keys[1], 0, 9 * GWEI),
            tx(&keys[0], 1, 20 * GWEI),
            tx(&keys[2], 0, 5 * GWEI),
        ];
        let order_of = |order, rebuild: bool| {
            let mut pool = Pool::new(MempoolConfig { order, ..pool(10).config });
            for t in &txs {
                pool.admit(&db, t.clone()).unwrap();
            }
            if rebuild {
                pool = pool.rebuilt(&db);
            }
            let taken = pool.pending(&db, u64::MAX, usize::MAX, 1);
            let index = |h: &B256| txs.iter().position(|t| t.tx_hash() == h).unwrap();
            taken.iter().map(|p| index(&p.hash)).collect::<Vec<_>>()
        };
        // By tip: b (4.5 gwei), c (2.5), then a's 0 (1) unlocks a's 1 (10).
        assert_eq!(order_of(TxOrder::Fees, false), [1, 3, 0, 2]);
        assert_eq!(order_of(TxOrder::Fifo, false), [0, 1, 2, 3]);
        // A pool rebuilt after a panic keeps the admission order.
        assert_eq!(order_of(TxOrder::Fifo, true), [0, 1, 2, 3]);
        // A full block ends each sender's turn where its next nonce does not fit.
        let mut pool = Pool::new(MempoolConfig { order: TxOrder::Fifo, ..pool(10).config });
        for t in &txs {
            pool.admit(&db, t.clone()).unwrap();
        }
        assert_eq!(pool.pending(&db, 42_000, usize::MAX, 1).len(), 2);
    }

    #[test]
    fn auto_impersonate_starts_on_when_configured() {
        let someone = Address::repeat_byte(7);
        assert!(!pool(1).is_impersonated(&someone));
        let pool = Pool::new(MempoolConfig { auto_impersonate: true, ..pool(1).config });
        assert!(pool.is_impersonated(&someone));
    }
    /// A blob transaction from `signer` in network form, carrying `sidecar` (blob fee cap
    /// `blob_fee`).
    fn blob_tx(
        signer: &PrivateKeySigner,
        nonce: u64,
        max_fee: u128,
        blob_fee: u128,
        sidecar: &alloy_eips::eip4844::BlobTransactionSidecar,
    ) -> TxEnvelope {
        let tx = alloy_consensus::TxEip4844 {
            chain_id: 1,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: max_fee / 2,
            to: Address::repeat_byte(0xb0),
            value: U256::ZERO,
            access_list: Default::default(),
            blob_versioned_hashes: sidecar.versioned_hashes().collect(),
            max_fee_per_blob_gas: blob_fee,
            input: Bytes::new(),
        };
        let signature = signer.sign_hash_sync(&tx.signature_hash()).unwrap();
        let hash = *tx.clone().into_signed(signature).hash();
        let with: alloy_consensus::TxEip4844Variant = tx.with_sidecar(sidecar.clone()).into();
        TxEnvelope::Eip4844(alloy_consensus::Signed::new_unchecked(with, signature, hash))
    }

    fn one_blob() -> alloy_eips::eip4844::BlobTransactionSidecar {
        alloy_consensus::SidecarBuilder::<alloy_consensus::SimpleCoder>::from_slice(b"blob")
            .build()
            .unwrap()
    }

    #[test]
    fn blob_sidecars_count_against_the_byte_budget_and_stay_out_of_blocks() {
        let keys = signers(6);
        let db = chain(&keys);
        let sidecar = one_blob();
        let network = blob_tx(&keys[0], 0, 10 * GWEI, 1, &sidecar).encode_2718_len();
        // Room for three blob transactions with their sidecars, not four.
        let mut pool =
            Pool::new(MempoolConfig { max_bytes: 3 * network + 100, ..pool(100).config });
        for key in &keys[..3] {
            pool.admit(&db, blob_tx(key, 0, 10 * GWEI, 1, &sidecar)).unwrap();
        }
        assert_eq!(pool.bytes(), 3 * network);
        assert!(network > 131_072, "a blob is 128 KiB: {network}");
        // A fourth at the same price evicts nothing and is refused; the pool did not grow.
        let err = pool.admit(&db, blob_tx(&keys[3], 0, 10 * GWEI, 1, &sidecar)).unwrap_err();
        assert_eq!(err, TxError::PoolFull);
        assert_eq!((pool.len(), pool.bytes()), (3, 3 * network));
        // One paying more evicts the cheapest; the byte count stays within the budget.
        pool.admit(&db, blob_tx(&keys[4], 0, 20 * GWEI, 1, &sidecar)).unwrap();
        assert_eq!((pool.len(), pool.bytes()), (3, 3 * network));

        // Block building gets the canonical form: same hash, no sidecar, a few hundred bytes.
        let pending = pool.pending(&db, 30_000_000, usize::MAX, 1);
        assert_eq!(pending.len(), 3);
        for tx in &pending {
            assert!(blobs::sidecar(&tx.tx).is_none());
            assert!(tx.tx.encode_2718_len() < 300, "{}", tx.tx.encode_2718_len());
            assert_eq!(pool.get(&tx.hash).map(|p| blobs::sidecar(&p.tx).is_some()), Some(true));
        }
        // The pooled copy keeps its sidecar until mined.
        pool.remove_mined(&db, pending.iter().map(|p| p.hash));
        assert_eq!((pool.len(), pool.bytes()), (0, 0));
    }

    #[test]
    fn blob_replacements_raise_the_blob_fee_too_and_costs_count_blob_gas() {
        let keys = signers(1);
        let db = chain(&keys);
        let sidecar = one_blob();
        let mut pool = pool(10);
        let first = pool.admit(&db, blob_tx(&keys[0], 0, 10 * GWEI, 100, &sidecar)).unwrap();
        // The blob fee cap counts in the sender's spend: 131,072 blob gas at 100 wei.
        let spent = pool.spent[&keys[0].address()];
        assert_eq!(spent, U256::from(21_000 * 10 * GWEI + 131_072 * 100));
        let same_blob_fee = blob_tx(&keys[0], 0, 20 * GWEI, 100, &sidecar);
        assert_eq!(pool.admit(&db, same_blob_fee), Err(TxError::ReplacementUnderpriced));
        let bumped = pool.admit(&db, blob_tx(&keys[0], 0, 20 * GWEI, 110, &sidecar)).unwrap();
        assert_ne!(first, bumped);
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn bad_blob_transactions_leave_the_pool_as_it_was() {
        let keys = signers(1);
        let db = chain(&keys);
        let sidecar = one_blob();
        let mut pool = pool(10);
        let mut wrong_proof = sidecar.clone();
        wrong_proof.proofs[0] = wrong_proof.commitments[0];
        let canonical = blobs::without_sidecar(&blob_tx(&keys[0], 0, 10 * GWEI, 1, &sidecar));
        type Expect = fn(&TxError) -> bool;
        let cases: Vec<(TxEnvelope, Expect)> = vec![
            (canonical, |e| *e == TxError::BlobSidecarMissing),
            (blob_tx(&keys[0], 0, 10 * GWEI, 1, &wrong_proof), |e| {
                matches!(e, TxError::InvalidBlobProof(_))
            }),
            // Below the next block's blob base fee (1 wei at zero excess blob gas).
            (blob_tx(&keys[0], 0, 10 * GWEI, 0, &sidecar), |e| {
                matches!(e, TxError::BlobFeeTooLow { cap: 0, blob_base_fee: 1 })
            }),
        ];
        for (tx, expected) in cases {
            let err = pool.admit(&db, tx).unwrap_err();
            assert!(expected(&err), "{err}");
            assert_eq!((pool.len(), pool.bytes()), (0, 0));
        }
    }
}
