//! `AccountCache`: the newest version of the accounts written recently, so that reads of them
//! at the head skip sled's reverse range scan.
//!
//! An account read is "the newest version at or before block N": a reverse range scan, which
//! in sled copies a whole leaf node and often seeks its predecessor. After 50,000 blocks that
//! was ~36 µs of every sequential transfer (the pool's nonce check, the executor's three
//! reads, the block writer's previous versions), nearly all of it for accounts the previous
//! block had just written. So every commit records here what it writes: the newest version of
//! an account is block `v`'s, and a read at any N ≥ v is answered from memory. Reads at older
//! blocks, and of accounts not written since the store was opened, go to the store.
//!
//! It stays exact because a commit forgets the accounts it writes until its batch is visible,
//! then records their new versions in commit order, a commit that removes a version (a revert)
//! evicts the account, and a read fills it only when it read at or after the head
//! while no commit ran (a sequence count, odd while a commit runs, is the same before and
//! after the read): then the version it found is the newest of all. Bounded by two
//! generations, as `NodeCache`.

use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::Address;
use alloy_primitives::map::AddressMap;
use alloy_rlp::Decodable;

use crate::journal::WriteBatch;
use crate::layout;
use crate::records::StoredAccount;

/// Accounts per generation: at most twice this many are kept (~200 bytes each).
const GENERATION_ENTRIES: usize = 16 * 1024;

/// The newest version of an account: written at `block`; `None` when it was deleted.
#[derive(Debug, Clone)]
struct Newest {
    block: u64,
    account: Option<StoredAccount>,
}

#[derive(Debug, Default)]
struct Generations {
    hot: AddressMap<Newest>,
    cold: AddressMap<Newest>,
}

/// Shared by every clone of a `ChainDb`.
#[derive(Debug, Default)]
pub(crate) struct AccountCache {
    generations: RwLock<Generations>,
    /// Commits begun plus commits ended: odd while one runs.
    commits: AtomicU64,
}

/// Marks a commit as running until dropped.
pub(crate) struct Writing<'a>(&'a AtomicU64);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl AccountCache {
    /// A cache that stays empty (tests: a handle that reads the store itself). Its commit
    /// count starts odd, as if a commit never ended, so reads never fill it.
    #[cfg(test)]
    pub(crate) fn never_filled() -> Self {
        Self { commits: AtomicU64::new(1), ..Self::default() }
    }

    /// Marks a commit as running (from before it records its versions until after the head
    /// moved) for as long as the guard lives.
    pub(crate) fn writing(&self) -> Writing<'_> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        Writing(&self.commits)
    }

    /// The commit count when no commit runs: take it before reading the head, and pass it to
    /// [`Self::fill`].
    pub(crate) fn stable(&self) -> Option<u64> {
        let count = self.commits.load(Ordering::SeqCst);
        count.is_multiple_of(2).then_some(count)
    }

    /// Keeps what a read at or after the head found (`block`: the version's block, 0 when
    /// there was none), unless a commit began since `stable` said `count`.
    pub(crate) fn fill(
        &self,
        address: &Address,
        count: u64,
        block: u64,
        account: Option<StoredAccount>,
    ) {
        let Ok(mut generations) = self.generations.write() else { return };
        // Under the lock: a commit that begins now records after this, and wins.
        if self.commits.load(Ordering::SeqCst) == count {
            generations.keep(*address, Newest { block, account });
        }
    }

    /// The account as of block `number`, when its newest version is known and not after
    /// `number` (`Some(None)`: it does not exist); `None` when the store must be asked.
    pub(crate) fn get(&self, address: &Address, number: u64) -> Option<Option<StoredAccount>> {
        let generations = self.generations.read().ok()?;
        let newest = generations.hot.get(address).or_else(|| generations.cold.get(address))?;
        (newest.block <= number).then(|| newest.account.clone())
    }

    /// Forgets everything (after a commit that failed half-way).
    pub(crate) fn clear(&self) {
        if let Ok(mut generations) = self.generations.write() {
            *generations = Generations::default();
        }
    }

    /// Forgets every account `changes` touches: call before the commit's batch becomes
    /// visible, so that meanwhile reads ask the store.
    pub(crate) fn forget(&self, changes: &AccountChanges) {
        let Ok(mut generations) = self.generations.write() else { return };
        for (address, _) in &changes.0 {
            generations.hot.remove(address);
            generations.cold.remove(address);
        }
    }

    /// Records the versions `changes` wrote, in order (an account a remove touched stays
    /// forgotten): call once the commit's batch is visible, before the head moves.
    pub(crate) fn record(&self, changes: AccountChanges) {
        let Ok(mut generations) = self.generations.write() else { return };
        for (address, change) in changes.0 {
            match change {
                Some(newest) => generations.keep(address, newest),
                // Removed (or unreadable): the store knows which version is newest now.
                None => {
                    generations.hot.remove(&address);
                    generations.cold.remove(&address);
                }
            }
        }
    }
}

/// The account-version operations of one commit's batch, in order: each account with the
/// version written (`None`: a version removed, or a value that does not decode).
#[derive(Debug, Default)]
pub(crate) struct AccountChanges(Vec<(Address, Option<Newest>)>);

impl AccountChanges {
    pub(crate) fn of(batch: &WriteBatch) -> Self {
        let changes = batch
            .account_ops()
            .filter_map(|(key, value)| {
                let (address, block) = layout::account_key_parts(key)?;
                let newest = match value {
                    Some([]) => Some(Newest { block, account: None }),
                    Some(mut value) => StoredAccount::decode(&mut value)
                        .ok()
                        .map(|account| Newest { block, account: Some(account) }),
                    None => None,
                };
                Some((address, newest))
            })
            .collect();
        Self(changes)
    }
}

impl Generations {
    fn keep(&mut self, address: Address, newest: Newest) {
        if self.hot.len() >= GENERATION_ENTRIES && !self.hot.contains_key(&address) {
            self.cold = std::mem::take(&mut self.hot);
        }
        self.hot.insert(address, newest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    fn account(nonce: u64) -> StoredAccount {
        StoredAccount::new(nonce, U256::from(nonce * 10), 0)
    }

    #[test]
    fn answers_reads_at_or_after_the_newest_version_and_forgets_removed_ones() {
        let cache = AccountCache::default();
        let a = Address::repeat_byte(1);
        assert!(cache.get(&a, 5).is_none(), "never written: ask the store");

        let mut block = WriteBatch::default();
        block.insert(layout::account_key(&a, 3), alloy_rlp::encode(account(1)));
        block.insert(layout::account_key(&a, 4), alloy_rlp::encode(account(2)));
        cache.record(AccountChanges::of(&block));
        assert_eq!(cache.get(&a, 4), Some(Some(account(2))));
        assert_eq!(cache.get(&a, 9), Some(Some(account(2))));
        assert!(cache.get(&a, 3).is_none(), "older blocks: ask the store");

        let mut deleted = WriteBatch::default();
        deleted.insert(layout::account_key(&a, 6), []);
        cache.record(AccountChanges::of(&deleted));
        assert_eq!(cache.get(&a, 6), Some(None));

        let mut revert = WriteBatch::default();
        revert.remove(layout::account_key(&a, 6));
        cache.record(AccountChanges::of(&revert));
        assert!(cache.get(&a, 6).is_none(), "a removed version: ask the store");
    }

    #[test]
    fn a_read_fills_only_when_no_commit_ran_meanwhile() {
        let cache = AccountCache::default();
        let a = Address::repeat_byte(2);
        let count = cache.stable().expect("no commit runs");
        cache.fill(&a, count, 0, None);
        assert_eq!(cache.get(&a, 7), Some(None), "absent: no version at all");

        let b = Address::repeat_byte(3);
        let count = cache.stable().unwrap();
        {
            let _writing = cache.writing();
            assert!(cache.stable().is_none(), "a commit runs");
            let mut block = WriteBatch::default();
            block.insert(layout::account_key(&b, 8), alloy_rlp::encode(account(1)));
            cache.record(AccountChanges::of(&block));
        }
        // What a read from before that commit found must not replace what it wrote.
        cache.fill(&b, count, 0, None);
        assert_eq!(cache.get(&b, 8), Some(Some(account(1))));
    }

    #[test]
    fn stays_within_two_generations() {
        let cache = AccountCache::default();
        for i in 0..(3 * GENERATION_ENTRIES as u64) {
            let mut batch = WriteBatch::default();
            let address = Address::left_padding_from(&i.to_be_bytes());
            batch.insert(layout::account_key(&address, i), alloy_rlp::encode(account(i)));
            cache.record(AccountChanges::of(&batch));
        }
        let generations = cache.generations.read().unwrap();
        assert!(generations.hot.len() + generations.cold.len() <= 2 * GENERATION_ENTRIES);
        let newest = Address::left_padding_from(&(3 * GENERATION_ENTRIES as u64 - 1).to_be_bytes());
        assert!(generations.hot.contains_key(&newest));
    }
}
