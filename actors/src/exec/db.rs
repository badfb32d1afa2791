//! `ExecDb`: the database revm runs against inside one executor thread.
//!
//! It reads through three layers: what the current block already changed (`BlockChanges`),
//! the per-thread code L1 / shared code L2, and the immutable `StateView` of the parent block.
//! `commit` records each transaction's changes so the next transaction of the block sees them,
//! and at the end the changes become the block's `StateDiff`.

use std::collections::BTreeMap;

// foldhash maps: the block's changes are looked up on every read and commit of every
// transaction, where SipHash showed in profiles. Keys of fixed bytes (addresses, hashes,
// slots) use alloy's maps for them, seeded foldhash fed word by word: hashing an address as a
// byte slice took foldhash's path for long inputs, 11% of a transfer block's committer.
use alloy_primitives::map::{AddressMap, AddressSet, B256Map, HashMap, U256Map};

use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_storage::{
    AccountChange, AccountFields, EMPTY_CODE_HASH, StateDiff, StateView, StorageError,
};
use revm::bytecode::{Bytecode, JumpTable};
use revm::database_interface::{Database, DatabaseCommit, DatabaseRef};
use revm::state::{Account, AccountInfo, EvmState};

use super::code::CodeL1;
use super::published::{Publish, PublishedValues, ReadLog, SlotRead};
use super::time_cap::TimeCap;

/// What the transactions of a block executed so far have changed.
#[derive(Debug, Default, Clone)]
pub(crate) struct BlockChanges {
    /// `None`: deleted.
    accounts: AddressMap<Option<AccountInfo>>,
    storage: AddressMap<U256Map<U256>>,
    wiped: AddressSet,
    codes: B256Map<Bytecode>,
}

impl BlockChanges {
    /// Room for a block of `txs` transactions, each touching about two accounts (its sender
    /// and recipient) and a slot or two, so that a big block's maps are sized once instead of
    /// rehashed (copied) at every doubling on the block's sequential path.
    pub(crate) fn reserve(&mut self, txs: usize) {
        self.accounts.reserve(txs.saturating_mul(2));
        self.storage.reserve(txs);
    }

    /// The block's changes as a diff for the state owner. The accounts are sorted by address
    /// first (a sort of small records) and the ordered map is then built from the sorted run,
    /// which takes it in one pass: inserted key by key into a map of ten thousand accounts,
    /// each insert searched and split nodes apart from the others, a tenth of the sequential
    /// part of a big block in `perf`.
    pub(crate) fn into_diff(mut self) -> StateDiff {
        let mut accounts: Vec<(Address, Option<AccountInfo>)> = self.accounts.into_iter().collect();
        accounts.sort_unstable_by_key(|(address, _)| *address);
        let wiped = self.wiped;
        let accounts = accounts
            .into_iter()
            .map(|(address, info)| {
                let storage: BTreeMap<U256, U256> =
                    self.storage.remove(&address).unwrap_or_default().into_iter().collect();
                let change = AccountChange {
                    info: info.map(|i| AccountFields {
                        nonce: i.nonce,
                        balance: i.balance,
                        code_hash: i.code_hash,
                    }),
                    storage_wiped: wiped.contains(&address),
                    storage,
                };
                (address, change)
            })
            .collect();
        let codes =
            self.codes.into_iter().map(|(hash, code)| (hash, code.original_bytes())).collect();
        StateDiff { accounts, codes }
    }
}

/// Most entries (accounts plus slots) an executor thread's read cache keeps; it is emptied
/// when full. About 150 bytes an entry, so at most ~10 MB per executor thread.
pub const READ_CACHE_ENTRIES: usize = 65_536;

/// An executor thread's cache of snapshot reads (accounts and slots), for eth_call and
/// eth_estimateGas. Keyed by the state root the reads were made under: a root identifies the
/// state's content exactly, so the cache stays correct across new blocks, dev patches and
/// reverts (a different root empties it) without anyone invalidating it. Within one chain:
/// after anvil_reset the chain's generation differs, and two forks can share a local root.
#[derive(Debug, Default)]
pub struct ReadCache {
    root: B256,
    generation: u64,
    accounts: AddressMap<Option<hearth_storage::StoredAccount>>,
    slots: HashMap<(Address, U256), U256>,
}

impl ReadCache {
    /// Empties the cache unless it holds reads made under `root` of chain `generation`.
    pub(crate) fn use_root(&mut self, root: B256, generation: u64) {
        if (self.root, self.generation) != (root, generation) {
            self.accounts.clear();
            self.slots.clear();
            self.root = root;
            self.generation = generation;
        }
    }

    /// Forgets every read (a run read stand-ins for fork state it missed: `fork::misses`).
    pub(crate) fn clear(&mut self) {
        self.accounts.clear();
        self.slots.clear();
    }

    fn make_room(&mut self) {
        if self.accounts.len() + self.slots.len() >= READ_CACHE_ENTRIES {
            self.accounts.clear();
            self.slots.clear();
        }
    }

    // Inlined into `ExecDb`'s reads, as it was when both lived in one module (BENCHMARKS.md,
    // session 12: a call's instructions).
    #[inline]
    fn account(
        &mut self,
        view: &StateView,
        address: &Address,
    ) -> Result<Option<hearth_storage::StoredAccount>, StorageError> {
        if let Some(account) = self.accounts.get(address) {
            return Ok(account.clone());
        }
        let account = view.account(address)?;
        self.make_room();
        self.accounts.insert(*address, account.clone());
        Ok(account)
    }

    #[inline]
    fn slot(
        &mut self,
        view: &StateView,
        address: Address,
        slot: U256,
    ) -> Result<U256, StorageError> {
        if let Some(value) = self.slots.get(&(address, slot)) {
            return Ok(*value);
        }
        // Read through the snapshot, not the cached account: the storage incarnation is a detail
        // of how the state was written, which the state root does not pin down.
        let value = view.storage(&address, &slot)?;
        self.make_room();
        self.slots.insert((address, slot), value);
        Ok(value)
    }
}

/// revm's database for one call or one block. `P`: what a parallel block's other threads
/// publish for it to read before the store (`()`: nothing, any database but a parallel
/// block's).
#[derive(Debug)]
pub(crate) struct ExecDb<'a, P: PublishedValues = ()> {
    base: StateView,
    codes: &'a mut CodeL1,
    changes: BlockChanges,
    /// EIP-161 (Spurious Dragon on): touched accounts left empty are deleted. Before it, an
    /// empty account that was touched stays in the state.
    clear_empty: bool,
    /// The thread's read cache, when reads go through it (calls; `use_root` already called).
    reads: Option<&'a mut ReadCache>,
    /// Hashes of blocks after the snapshot's (simulated blocks), which BLOCKHASH sees before
    /// the store's.
    block_hashes: BTreeMap<u64, B256>,
    /// What revm read, when recording (a speculative transaction of a parallel block).
    log: Option<ReadLog>,
    /// The deepest call frame a call or create instruction opened (0: the top frame only),
    /// when the EVM notes it (a block's: `block_evm::instrument`; a call's:
    /// `capped_instructions`).
    max_call_depth: usize,
    /// The EVM time cap of a call, kept by its capped instructions (`capped_instructions`);
    /// never reached in a block's database.
    time_cap: TimeCap,
    /// A parallel block's committed values, read before `changes` (a helper's database, whose
    /// `changes` stay the block's start).
    published: Option<&'a P>,
    /// Snapshot accounts read so far, without a read cache (blocks): the snapshot does not
    /// change under this database, and a transaction reads an account more than once (its
    /// fields, then whether it has storage: the EIP-7610 marker), and the coinbase in every
    /// transaction. Emptied at `BASE_ACCOUNTS_KEPT` entries.
    base_accounts: AddressMap<Option<hearth_storage::StoredAccount>>,
    /// A parallel block's accounts read ahead by its helpers, and the index of the
    /// transaction executing: read before the store.
    read_ahead: Option<(&'a P, usize)>,
    /// The accounts the commits since `take_touched` touched, in commit order, and the
    /// accounts call instructions named (`note_called`: a DELEGATECALL's code too, and calls
    /// in frames that reverted): a block's transaction's, for the address index
    /// (`hearth_storage::BlockDraft::touched`).
    touched: Vec<Address>,
}

/// How long the list of accounts a transaction named grows before it is made unique (and
/// again at each doubling).
const TOUCHED_COMPACT_AT: usize = 1024;

/// Most snapshot accounts one block database keeps (about 150 bytes each).
const BASE_ACCOUNTS_KEPT: usize = 65_536;

impl<'a, P: PublishedValues> ExecDb<'a, P> {
    pub(crate) fn new(base: StateView, codes: &'a mut CodeL1) -> Self {
        Self {
            base,
            codes,
            changes: BlockChanges::default(),
            clear_empty: true,
            reads: None,
            block_hashes: BTreeMap::new(),
            log: None,
            max_call_depth: 0,
            time_cap: TimeCap::default(),
            published: None,
            base_accounts: AddressMap::default(),
            read_ahead: None,
            touched: Vec::new(),
        }
    }

    /// The accounts committed as touched or named by a call instruction since the last
    /// `take_touched` (a block's transaction's: the block loop takes them after each one, and
    /// drops what the system calls touched).
    pub(crate) fn take_touched(&mut self) -> Vec<Address> {
        std::mem::take(&mut self.touched)
    }

    /// Notes the account whose code a call instruction's new frame runs (its callee, or a
    /// DELEGATECALL's library).
    /// A loop calling one contract notes it once; past [`TOUCHED_COMPACT_AT`] entries the
    /// list is made unique, so a transaction of a million calls keeps one entry per account.
    pub(crate) fn note_called(&mut self, address: Address) {
        if self.touched.last() == Some(&address) {
            return;
        }
        if self.touched.len() >= TOUCHED_COMPACT_AT && self.touched.len().is_power_of_two() {
            self.touched.sort_unstable();
            self.touched.dedup();
        }
        self.touched.push(address);
    }

    /// Adds what another database noted for the transaction this one commits (a parallel
    /// block's helper ran it).
    pub(crate) fn put_touched(&mut self, noted: Vec<Address>) {
        self.touched.extend(noted);
    }

    /// Reads the snapshot accounts that `ahead` holds for transaction `index` (about to
    /// execute) before the store.
    pub(crate) const fn read_ahead(&mut self, ahead: &'a P, index: usize) {
        self.read_ahead = Some((ahead, index));
    }

    /// Reads what a parallel block's committer published before this database's own changes.
    pub(crate) fn read_published(&mut self, published: &'a P) {
        self.published = Some(published);
    }

    /// Commits `state` (transaction `writer`'s) and publishes each account as this database
    /// then holds it, for a parallel block's helpers: one pass over the state, which a helper
    /// made on the other core (each pass over it is cache misses on the committer's path).
    ///
    /// The `coinbase`'s account fields, whose balance every transaction changes, are not
    /// published unless its storage changed or it was created, destroyed or emptied: helpers
    /// read it as of its last such change (a stale nonce or code too, when it sends or is
    /// delegated, which only costs those runs a re-execution), and the committer compares
    /// every read of the coinbase by value (`Committer::validate`). Publishing it cost every
    /// commit an insert into the one shard every helper's run also reads.
    pub(crate) fn commit_publishing(
        &mut self,
        writer: usize,
        state: &EvmState,
        published: &impl Publish,
        coinbase: &Address,
    ) {
        for (address, account) in state {
            let Some(committed) = self.commit_account(*address, account) else { continue };
            // Code new to the block is published whoever brought it (the unpublished coinbase
            // too: an EIP-7702 delegation of it and of another account to one new target);
            // code the block had before is published already, or in the helpers' start state.
            if committed.new_code
                && let Some(info) = &committed.info
                && let Some(code) = self.changes.codes.get_mut(&info.code_hash)
            {
                // The code may be a helper's (its run brought it): keep a copy of our own, so
                // that the executions of each thread do not count references on one line.
                *code = own_copy(code);
                published.put_code(info.code_hash, code.clone());
            }
            let unpublished_coinbase = address == coinbase
                && !account.is_created()
                && !account.is_selfdestructed()
                && !account.info.is_empty()
                && account.changed_storage_slots().next().is_none();
            if !unpublished_coinbase {
                self.publish_account(writer, address, account, committed, published);
            }
        }
    }

    /// Publishes `account` as its commit left it in this database (`committed`).
    fn publish_account(
        &self,
        writer: usize,
        address: &Address,
        account: &Account,
        Committed { info: committed, changed, .. }: Committed,
        published: &impl Publish,
    ) {
        // Conservatively, an account left empty may have lost its storage (EIP-161).
        let reset = account.is_created() || account.is_selfdestructed() || account.info.is_empty();
        if committed.is_some() {
            for (slot, value) in account.changed_storage_slots() {
                published.put_slot(writer, *address, *slot, value.present_value);
            }
        }
        // A contract whose slots changed but not its fields (a token at every transfer) is
        // published as it was: its fields already read the same through the published map
        // or the start state, and each insert takes the shard's line from the helpers reading
        // the contract at every run. (Validation does not read published versions.)
        if changed || reset {
            published.put_account(writer, *address, committed, reset);
        }
    }

    /// Commits `state` without taking it (a parallel block's committer hands it back to the
    /// helper that made it, which frees it).
    pub(crate) fn commit_ref(&mut self, state: &EvmState) {
        for (address, account) in state {
            self.commit_account(*address, account);
        }
    }

    /// Notes that a call or create instruction opens frame `depth` (0 is the top frame).
    pub(crate) fn note_call_depth(&mut self, depth: usize) {
        self.max_call_depth = self.max_call_depth.max(depth);
    }

    /// The deepest frame noted so far.
    pub(crate) const fn max_call_depth(&self) -> usize {
        self.max_call_depth
    }

    /// Runs the call over this database under `cap` (its instructions capped by
    /// `capped_instructions`).
    pub(crate) fn with_time_cap(mut self, cap: TimeCap) -> Self {
        self.time_cap = cap;
        self
    }

    /// The call's time cap, which its capped instructions count on.
    pub(crate) fn time_cap(&mut self) -> &mut TimeCap {
        &mut self.time_cap
    }

    /// Whether the call's time cap stopped it.
    pub(crate) const fn time_cap_expired(&self) -> bool {
        self.time_cap.expired()
    }

    /// Starts this database from `changes` (a copy of another block database's changes so
    /// far): a parallel block's workers start from the state after the pre-block system calls.
    pub(crate) fn set_changes(&mut self, changes: BlockChanges) {
        self.changes = changes;
    }

    /// A copy of the changes so far.
    pub(crate) fn changes(&self) -> &BlockChanges {
        &self.changes
    }

    /// Records every account and slot revm reads from now on, until `take_log`, into `log`
    /// (emptied, its vectors' capacity kept: a parallel block's helper reuses the logs of its
    /// runs the committer is done with).
    pub(crate) fn start_log(&mut self, mut log: ReadLog) {
        log.accounts.clear();
        log.slots.clear();
        self.log = Some(log);
    }

    /// What was read since `start_log`, and stops recording.
    pub(crate) fn take_log(&mut self) -> ReadLog {
        self.log.take().unwrap_or_default()
    }

    /// Reads the snapshot through `reads`, which must hold reads of this snapshot's root.
    pub(crate) fn with_read_cache(mut self, reads: &'a mut ReadCache) -> Self {
        self.reads = Some(reads);
        self
    }

    /// The snapshot's account at `address` (through the read cache when there is one).
    fn base_account(
        &mut self,
        address: &Address,
    ) -> Result<Option<hearth_storage::StoredAccount>, StorageError> {
        if let Some(reads) = self.reads.as_deref_mut() {
            return reads.account(&self.base, address);
        }
        if let Some(account) = self.base_accounts.get(address) {
            return Ok(account.clone());
        }
        let ahead =
            self.read_ahead.and_then(|(ahead, index)| ahead.snapshot_account(index, address));
        let account = match ahead {
            Some(account) => account,
            None => self.base.account(address)?,
        };
        if self.base_accounts.len() >= BASE_ACCOUNTS_KEPT {
            self.base_accounts.clear();
        }
        self.base_accounts.insert(*address, account.clone());
        Ok(account)
    }

    /// Pretends `overrides`: they go into the change overlay, which every read consults before
    /// the snapshot, so nothing is written anywhere. Fields not overridden keep their current
    /// values (the snapshot's, or what earlier simulated blocks left).
    pub(crate) fn apply_overrides(
        &mut self,
        overrides: &hearth_messages::executor::StateOverrides,
    ) -> Result<(), StorageError> {
        for (address, o) in overrides {
            let sets_state = o.balance.is_some()
                || o.nonce.is_some()
                || o.code.is_some()
                || o.state.is_some()
                || o.state_diff.is_some();
            if !sets_state {
                // Only moves a precompile: the account itself is untouched (not created).
                continue;
            }
            let mut info = self.basic(*address)?.unwrap_or_default();
            if info.code_hash == B256::ZERO {
                // The EIP-7610 marker (see `basic`): no code.
                info.code_hash = EMPTY_CODE_HASH;
            }
            if let Some(balance) = o.balance {
                info.balance = balance;
            }
            if let Some(nonce) = o.nonce {
                info.nonce = nonce;
            }
            if let Some(code) = &o.code {
                let bytecode = Bytecode::new_raw(code.clone());
                info.code_hash = bytecode.hash_slow();
                self.changes.codes.insert(info.code_hash, bytecode);
            }
            info.code = None;
            self.changes.accounts.insert(*address, Some(info));
            if let Some(state) = &o.state {
                // The whole storage is replaced: every slot not listed reads as zero.
                self.changes.wiped.insert(*address);
                self.changes
                    .storage
                    .insert(*address, state.iter().map(|(k, v)| (*k, *v)).collect());
            }
            if let Some(diff) = &o.state_diff {
                self.changes
                    .storage
                    .entry(*address)
                    .or_default()
                    .extend(diff.iter().map(|(k, v)| (*k, *v)));
            }
        }
        Ok(())
    }

    /// Makes BLOCKHASH of `number` (a simulated block after the snapshot) answer `hash`.
    pub(crate) fn set_block_hash(&mut self, number: u64, hash: B256) {
        self.block_hashes.insert(number, hash);
    }

    /// Sets an account's nonce outside any transaction (geth's wrapping nonce increment, which
    /// revm saturates).
    pub(crate) fn set_nonce(&mut self, address: Address, nonce: u64) -> Result<(), StorageError> {
        let mut info = self.basic(address)?.unwrap_or_default();
        if info.code_hash == B256::ZERO {
            info.code_hash = EMPTY_CODE_HASH;
        }
        info.nonce = nonce;
        info.code = None;
        self.changes.accounts.insert(address, Some(info));
        Ok(())
    }

    /// Sets whether touched empty accounts are deleted from now on (EIP-161), for a run whose
    /// blocks cross Spurious Dragon (eth_simulateV1).
    pub(crate) const fn set_clear_empty(&mut self, clear_empty: bool) {
        self.clear_empty = clear_empty;
    }

    /// Sets whether touched empty accounts are deleted (EIP-161).
    pub(crate) const fn with_clear_empty(mut self, clear_empty: bool) -> Self {
        self.clear_empty = clear_empty;
        self
    }

    /// `address`'s account as a read of it here gives it, for a parallel block's committer to
    /// compare a run's read with: `Snapshot` when the block changed neither the account nor
    /// its storage (on which `basic`'s EIP-7610 marker depends), so that a helper read it from
    /// the same snapshot; `Read` when only `basic` can say (the marker may apply).
    pub(crate) fn account_now(&self, address: &Address) -> AccountNow {
        match self.changes.accounts.get(address) {
            Some(None) => AccountNow::Known(None),
            Some(Some(info)) if info.nonce != 0 || info.code_hash != EMPTY_CODE_HASH => {
                AccountNow::Known(Some(info.clone()))
            }
            Some(Some(_)) => AccountNow::Read,
            None if self.changes.storage.contains_key(address)
                || self.changes.wiped.contains(address) =>
            {
                AccountNow::Read
            }
            None => AccountNow::Snapshot,
        }
    }

    /// A slot's value as a read of it here gives it, `None` when the block neither wrote it
    /// nor wiped or deleted its account (a helper read it from the same snapshot):
    /// `storage_now`'s order.
    pub(crate) fn slot_now(&self, address: &Address, slot: &U256) -> Option<U256> {
        if let Some(value) = self.changes.storage.get(address).and_then(|slots| slots.get(slot)) {
            return Some(*value);
        }
        (self.changes.wiped.contains(address)
            || matches!(self.changes.accounts.get(address), Some(None)))
        .then_some(U256::ZERO)
    }

    /// Sizes the block's change maps for `txs` transactions ([`BlockChanges::reserve`]).
    pub(crate) fn reserve_changes(&mut self, txs: usize) {
        self.changes.reserve(txs);
    }

    pub(crate) fn into_changes(self) -> BlockChanges {
        self.changes
    }

    /// The changes so far as a diff, leaving them in place (pre-Byzantium receipts need the
    /// state root after every transaction).
    pub(crate) fn diff_so_far(&self) -> StateDiff {
        self.changes.clone().into_diff()
    }

    /// Adds `amount` wei to `address` outside any transaction (withdrawals, block rewards).
    /// A zero credit still touches the account, as the consensus rules say.
    pub(crate) fn credit(&mut self, address: Address, amount: U256) -> Result<(), StorageError> {
        let current = self.basic(address)?;
        if current.is_none() && amount.is_zero() {
            // A zero credit to an absent account creates nothing.
            return Ok(());
        }
        let mut info = current.unwrap_or_default();
        if info.code_hash == B256::ZERO {
            // The EIP-7610 marker (see `basic`): no code.
            info.code_hash = EMPTY_CODE_HASH;
        }
        info.balance = info.balance.saturating_add(amount);
        if self.clear_empty && info.is_empty() {
            self.changes.accounts.insert(address, None);
            self.changes.storage.remove(&address);
            return Ok(());
        }
        self.changes.accounts.insert(address, Some(info));
        Ok(())
    }

    /// Whether `address` has code (system contracts run only when they are deployed).
    pub(crate) fn has_code(&mut self, address: Address) -> Result<bool, StorageError> {
        Ok(self
            .basic(address)?
            .is_some_and(|info| info.code_hash != EMPTY_CODE_HASH && info.code_hash != B256::ZERO))
    }

    /// Whether `address` has any non-zero storage slot as of now in the block.
    fn has_storage(&mut self, address: Address) -> Result<bool, StorageError> {
        if self.changes.storage.get(&address).is_some_and(|s| s.values().any(|v| !v.is_zero())) {
            return Ok(true);
        }
        if self.changes.wiped.contains(&address) {
            return Ok(false);
        }
        // The parent's storage root; slots this block zeroed are not subtracted (a block that
        // empties a storage-only account and then creates a contract there is not handled).
        Ok(self
            .base_account(&address)?
            .is_some_and(|a| a.storage_root != hearth_storage::trie::EMPTY_ROOT))
    }

    /// A slot's value as of now in the block.
    fn storage_now(&mut self, address: Address, index: U256) -> Result<U256, StorageError> {
        if let Some(SlotRead::Value(value)) = self.published.map(|p| p.slot(&address, &index)) {
            return Ok(value);
        }
        if let Some(value) = self.changes.storage.get(&address).and_then(|s| s.get(&index)) {
            return Ok(*value);
        }
        if self.changes.wiped.contains(&address)
            || matches!(self.changes.accounts.get(&address), Some(None))
        {
            return Ok(U256::ZERO);
        }
        match self.reads.as_deref_mut() {
            Some(reads) => reads.slot(&self.base, address, index),
            None => self.base.storage_ref(address, index),
        }
    }

    /// Records `account`'s changes and says what they left (`None`: the account was not
    /// touched, nothing changed), for a parallel block's committer to publish without
    /// looking it up again.
    fn commit_account(&mut self, address: Address, account: &Account) -> Option<Committed> {
        if !account.is_touched() {
            return None;
        }
        self.touched.push(address);
        if account.is_selfdestructed() {
            self.changes.accounts.insert(address, None);
            self.changes.wiped.insert(address);
            self.changes.storage.remove(&address);
            return Some(Committed { info: None, new_code: false, changed: true });
        }
        if account.is_created() {
            self.changes.wiped.insert(address);
            self.changes.storage.remove(&address);
        }
        // The fields without the code, which is kept once per hash in `codes`.
        let mut info = account.info.copy_without_code();
        if info.code_hash == B256::ZERO {
            // The EIP-7610 marker set in `basic`: the account has no code.
            info.code_hash = EMPTY_CODE_HASH;
        }
        // Only the first commit of a code hash copies the code: a contract used all block long
        // is not cloned at every commit (its reference count is shared with the helper that
        // ran it).
        let mut new_code = false;
        if info.code_hash != EMPTY_CODE_HASH
            && !self.changes.codes.contains_key(&info.code_hash)
            && let Some(code) = &account.info.code
        {
            self.changes.codes.insert(info.code_hash, code.clone());
            new_code = true;
        }
        // EIP-161: a touched account left empty is removed from the state.
        if self.clear_empty
            && info.nonce == 0
            && info.balance.is_zero()
            && info.code_hash == EMPTY_CODE_HASH
        {
            // Its storage goes with it: an account with slots but no nonce, balance or code
            // (only from before EIP-161) reads as empty from here, on every path, and the diff
            // wipes its storage.
            self.changes.accounts.insert(address, None);
            self.changes.wiped.insert(address);
            self.changes.storage.remove(&address);
            return Some(Committed { info: None, new_code, changed: true });
        }
        // Most accounts a block touches (senders, recipients) change no slot: they get no
        // storage map.
        let mut changed = account.changed_storage_slots().peekable();
        if changed.peek().is_some() {
            let slots = self.changes.storage.entry(address).or_default();
            for (slot, value) in changed {
                slots.insert(*slot, value.present_value);
            }
        }
        let before = self.changes.accounts.insert(address, Some(info.clone()));
        let changed = !matches!(&before, Some(Some(was)) if *was == info);
        Some(Committed { info: Some(info), new_code, changed })
    }
}

thread_local! {
    static EMPTY_CODE: Bytecode = new_empty_code();
}

/// This thread's empty code. revm's (`Bytecode::default`) is one reference-counted value for
/// the whole process, and every execution counts references on it (each account without
/// code that a transaction loads, its sender's at least): threads executing at once would take
/// its counter's cache line from each other at every transaction.
fn empty_code() -> Bytecode {
    EMPTY_CODE.with(Clone::clone)
}

#[allow(unsafe_code)]
fn new_empty_code() -> Bytecode {
    // SAFETY: the parts of revm's own empty code (`Bytecode::new`): one STOP byte of padding,
    // an original length of zero and an empty jump table, which `new_analyzed` checks too.
    unsafe { Bytecode::new_analyzed(Bytes::from_static(&[0x00]), 0, JumpTable::default()) }
}

/// A copy of `code` that shares nothing with it. Code is reference-counted, and every
/// execution counts a reference on it (the journal's account holds one): two threads of a
/// parallel block executing one contract's code each take the counter's cache line from the
/// other at every transaction. Each thread keeps its own copy instead, made once per block.
fn own_copy(code: &Bytecode) -> Bytecode {
    Bytecode::new_raw_checked(Bytes::copy_from_slice(code.original_byte_slice()))
        .unwrap_or_else(|_| code.clone())
}

/// An account as a parallel block's committer holds it now ([`ExecDb::account_now`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AccountNow {
    /// The block never changed it: every thread reads it from the snapshot.
    Snapshot,
    /// What `basic` returns for it (`None`: deleted).
    Known(Option<AccountInfo>),
    /// Only `basic` can say.
    Read,
}

/// What committing one account left in the block's changes.
#[derive(Debug)]
struct Committed {
    /// The account now (`None`: deleted).
    info: Option<AccountInfo>,
    /// Its code entered the block's changes with this commit (a deployment, or a contract's
    /// first transaction in the block).
    new_code: bool,
    /// Its fields differ from what the block's changes held before (or it is the account's
    /// first commit in the block, or it was deleted).
    changed: bool,
}

impl<P: PublishedValues> Database for ExecDb<'_, P> {
    type Error = StorageError;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let published = self.published.and_then(|p| p.account(&address));
        let mut info = match published.as_ref().or_else(|| self.changes.accounts.get(&address)) {
            Some(info) => info.clone(),
            None => self.base_account(&address)?.map(|a| AccountInfo {
                balance: a.balance,
                nonce: a.nonce,
                code_hash: a.code_hash,
                account_id: None,
                code: None,
            }),
        };
        // An account without code carries this thread's empty code, which revm would otherwise
        // take from its one process-wide copy ([`empty_code`]).
        if let Some(account) = info.as_mut()
            && account.code.is_none()
            && account.code_hash == EMPTY_CODE_HASH
        {
            account.code = Some(empty_code());
        }
        // EIP-7610: creating a contract where an account already has storage must fail as a
        // collision, but revm only looks at nonce and code hash. Such accounts (no code, zero
        // nonce, non-empty storage) exist only from before EIP-161; revm reads a zero code hash
        // as "no code" everywhere except in its collision check, so that marker makes revm
        // reject the creation. `commit_account` turns the marker back into the empty hash.
        if let Some(account) = info.as_mut()
            && account.nonce == 0
            && account.code_hash == EMPTY_CODE_HASH
            && self.has_storage(address)?
        {
            account.code_hash = B256::ZERO;
        }
        if let Some(log) = self.log.as_mut() {
            log.accounts.push((address, info.clone()));
        }
        Ok(info)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if code_hash == EMPTY_CODE_HASH || code_hash == B256::ZERO {
            return Ok(empty_code());
        }
        if let Some(code) = self.changes.codes.get(&code_hash) {
            return Ok(code.clone());
        }
        // A helper's own cache first: a contract used all block long is published (its first
        // commit brings its code), and taking it from there at every transaction would lock
        // the shared map and count references on the committer's copy.
        if self.published.is_some()
            && let Some(code) = self.codes.peek(&code_hash)
        {
            return Ok(code);
        }
        if let Some(code) = self.published.and_then(|p| p.code(&code_hash)) {
            // The committer's copy: this helper makes its own, kept for the rest of the block.
            let code = own_copy(&code);
            self.codes.keep(code_hash, code.clone());
            return Ok(code);
        }
        let base = &self.base;
        self.codes.get_or_load(code_hash, || base.code_by_hash_ref(code_hash))
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, Self::Error> {
        let value = self.storage_now(address, index)?;
        if let Some(log) = self.log.as_mut() {
            log.slots.push((address, index, value));
        }
        Ok(value)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Self::Error> {
        match self.block_hashes.get(&number) {
            Some(hash) => Ok(*hash),
            None => self.base.block_hash_ref(number),
        }
    }
}

impl<P: PublishedValues> DatabaseCommit for ExecDb<'_, P> {
    fn commit(&mut self, changes: AddressMap<Account>) {
        for (address, account) in &changes {
            self.commit_account(*address, account);
        }
    }
}

/// Reads without recording anything: what the tracers' builders use to look at the state
/// before a traced transaction (prestate, state diffs). The block's changes so far, then the
/// snapshot; code the block did not deploy comes from the snapshot (the L1 needs `&mut`).
impl<P: PublishedValues> DatabaseRef for ExecDb<'_, P> {
    type Error = StorageError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        match self.changes.accounts.get(&address) {
            Some(info) => Ok(info.clone().map(|mut info| {
                if info.code_hash == B256::ZERO {
                    info.code_hash = EMPTY_CODE_HASH;
                }
                info
            })),
            None => self.base.basic_ref(address),
        }
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if code_hash == EMPTY_CODE_HASH || code_hash == B256::ZERO {
            return Ok(empty_code());
        }
        match self.changes.codes.get(&code_hash) {
            Some(code) => Ok(code.clone()),
            None => self.base.code_by_hash_ref(code_hash),
        }
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        if let Some(value) = self.changes.storage.get(&address).and_then(|s| s.get(&index)) {
            return Ok(*value);
        }
        if self.changes.wiped.contains(&address)
            || matches!(self.changes.accounts.get(&address), Some(None))
        {
            return Ok(U256::ZERO);
        }
        self.base.storage_ref(address, index)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        self.base.block_hash_ref(number)
    }
}

#[cfg(test)]
mod tests {
    use hearth_storage::{BlockDraft, ChainWriter, StoredBody, write_block};
    use revm::state::{EvmStorageSlot, TransactionId};

    use super::*;

    /// This thread's empty code is revm's empty code in every part the EVM reads: the bytes
    /// executed (one STOP), the original length, the jump table and the hash.
    #[test]
    fn a_threads_empty_code_is_revms_empty_code() {
        let ours = empty_code();
        let revms = Bytecode::default();
        assert_eq!(ours.kind(), revms.kind());
        assert_eq!(ours.bytes_slice(), revms.bytes_slice());
        assert_eq!(ours.original_byte_slice(), revms.original_byte_slice());
        assert_eq!(ours.legacy_jump_table(), revms.legacy_jump_table());
        assert_eq!(ours.hash_slow(), EMPTY_CODE_HASH);
        // Another thread's is equal too (and its own value).
        let other = std::thread::spawn(|| empty_code().bytes_slice().to_vec()).join();
        assert_eq!(other.ok().as_deref(), Some(revms.bytes_slice()));
    }

    /// A copy is the same code: legacy code with its jump table, and an EIP-7702 delegation.
    #[test]
    fn an_own_copy_of_code_is_the_same_code() {
        // PUSH1 4 JUMP INVALID JUMPDEST STOP: one valid jump destination.
        let legacy = Bytecode::new_raw(Bytes::from_static(&[0x60, 0x04, 0x56, 0xfe, 0x5b, 0x00]));
        let delegation = Bytecode::new_eip7702(Address::repeat_byte(7));
        for code in [legacy, delegation] {
            let copy = own_copy(&code);
            assert_eq!(copy.kind(), code.kind());
            assert_eq!(copy.bytes_slice(), code.bytes_slice());
            assert_eq!(copy.original_byte_slice(), code.original_byte_slice());
            assert_eq!(copy.legacy_jump_table(), code.legacy_jump_table());
            assert_eq!(copy.hash_slow(), code.hash_slow());
        }
    }

    fn touched(info: AccountInfo, slots: &[(u8, u8)]) -> Account {
        let mut account = Account::default();
        account.info = info;
        for &(slot, value) in slots {
            let slot_value =
                EvmStorageSlot::new_changed(U256::ZERO, U256::from(value), TransactionId::ZERO);
            account.storage.insert(U256::from(slot), slot_value);
        }
        account.mark_touch();
        account
    }

    /// What a parallel block's committer compares by value: a read of a key the block wrote
    /// (or whose account's storage it wiped or deleted); every other key reads from the
    /// snapshot on every thread.
    #[test]
    fn a_key_reads_from_the_snapshot_until_the_block_writes_it() {
        let store = ChainWriter::in_memory().expect("store");
        let body = StoredBody { transactions: vec![], senders: vec![] };
        let draft =
            BlockDraft { header: Default::default(), body, receipts: vec![], touched: Vec::new() };
        write_block(&store, draft, &StateDiff::default()).expect("genesis");
        let mut codes = CodeL1::new(None);
        let mut db = ExecDb::new(store.state_at(0), &mut codes);
        let [paid, token, emptied] = [1u8, 2, 3].map(Address::with_last_byte);
        let slot = |n: u8| U256::from(n);
        let from_snapshot =
            |db: &ExecDb<'_>, address: &Address| db.account_now(address) == AccountNow::Snapshot;
        assert!(from_snapshot(&db, &paid) && db.slot_now(&paid, &slot(1)).is_none());

        let funded = AccountInfo { balance: U256::from(5u8), ..Default::default() };
        let contract = AccountInfo { nonce: 1, ..Default::default() };
        let mut state = EvmState::default();
        state.insert(paid, touched(funded, &[]));
        state.insert(token, touched(contract, &[(1, 7)]));
        // Touched and left empty: deleted (EIP-161), its storage with it.
        state.insert(emptied, touched(AccountInfo::default(), &[]));
        db.commit(state);

        // Nonce 0 and no code: only `basic` knows whether the EIP-7610 marker applies.
        assert_eq!(db.account_now(&paid), AccountNow::Read);
        assert!(db.slot_now(&paid, &slot(1)).is_none(), "its storage was not written");
        assert!(matches!(db.account_now(&token), AccountNow::Known(Some(info)) if info.nonce == 1));
        assert_eq!(db.slot_now(&token, &slot(1)), Some(U256::from(7u8)));
        assert!(db.slot_now(&token, &slot(2)).is_none(), "another slot of the same account");
        assert_eq!(db.account_now(&emptied), AccountNow::Known(None));
        assert_eq!(db.slot_now(&emptied, &slot(9)), Some(U256::ZERO), "a deleted account's slots");
        assert!(from_snapshot(&db, &Address::with_last_byte(4)));

        // Funded again after its deletion: its old storage stays gone (EIP-161 wiped it).
        let mut state = EvmState::default();
        let funded = AccountInfo { balance: U256::from(1u8), ..Default::default() };
        state.insert(emptied, touched(funded, &[]));
        db.commit(state);
        assert_eq!(db.slot_now(&emptied, &slot(9)), Some(U256::ZERO));
        assert_eq!(db.storage(emptied, slot(9)).expect("read"), U256::ZERO);
        assert!(db.into_changes().into_diff().accounts[&emptied].storage_wiped);
    }
}
