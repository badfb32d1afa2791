//! The shared cache of analysed bytecode: `CodeCacheActor` (the L2 behind every executor
//! thread's `CodeL1`, which the execution kernel owns: `exec/code.rs`).
//!
//! `CodeCacheActor`:
//! - **Owns:** the L2 map code hash -> analysed `Bytecode`, bounded to `capacity` entries
//!   (`--cache.code-entries`) with least-recently-used eviction, and its hit/miss counters.
//! - **Takes:** `GetCode` and `GetCodeCacheStats` (also as `Ask`, from executor threads and
//!   `GET /metrics`), `InsertCode` (`try_send` from executor threads).
//! - **Sends:** nothing.
//! - **Mailbox:** `--actors.mailbox` (default 1024); a full one makes an executor skip the L2
//!   (a miss it analyses itself), never wait.
//! - **Restart:** `Restart` (`supervise`): a panic in a handler fails that request and empties
//!   the cache; it holds only a cache, so losing it costs misses, never correctness.
//!
//! Analysing code (the jump table) costs ~29 µs for 24 KiB; a clone of analysed code is a
//! reference-count bump, so sharing analysed code between threads saves that work per call.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use actix::{Actor, Addr, Context, Handler};
use alloy_primitives::B256;
// Keyed by code hash: alloy's seeded map for 32-byte keys (std's default was SipHash).
use alloy_primitives::map::B256Map;
use hearth_messages::code_cache::{CodeCacheStats, GetCode, GetCodeCacheStats, InsertCode};
use revm::bytecode::Bytecode;

use crate::supervise::{Restart, RestartCounter, contain};

/// The L2 core: an LRU map with hit/miss/eviction counts. No actix types, tested directly.
#[derive(Debug)]
pub struct CodeCache {
    entries: B256Map<(Bytecode, u64)>,
    /// last-use tick -> hash, oldest first.
    recency: BTreeMap<u64, B256>,
    capacity: usize,
    tick: u64,
    stats: CodeCacheStats,
}

impl CodeCache {
    /// An empty cache holding at most `capacity` entries.
    pub fn new(capacity: NonZeroUsize) -> Self {
        Self {
            entries: B256Map::default(),
            recency: BTreeMap::new(),
            capacity: capacity.get(),
            tick: 0,
            stats: CodeCacheStats::default(),
        }
    }

    /// Looks up `hash`, marking it recently used.
    pub fn get(&mut self, hash: &B256) -> Option<Bytecode> {
        self.tick += 1;
        let tick = self.tick;
        match self.entries.get_mut(hash) {
            Some((code, used)) => {
                self.recency.remove(used);
                *used = tick;
                self.recency.insert(tick, *hash);
                self.stats.hits += 1;
                Some(code.clone())
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Inserts `code`, evicting the least recently used entry when full.
    pub fn insert(&mut self, hash: B256, code: Bytecode) {
        self.tick += 1;
        if let Some((_, used)) = self.entries.insert(hash, (code, self.tick)) {
            self.recency.remove(&used);
        }
        self.recency.insert(self.tick, hash);
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.recency.pop_first() else { break };
            self.entries.remove(&oldest);
            self.stats.evictions += 1;
        }
    }

    /// Counters and size.
    pub fn stats(&self) -> CodeCacheStats {
        CodeCacheStats { entries: self.entries.len() as u64, ..self.stats }
    }
}

/// The shared L2 code cache actor.
#[derive(Debug)]
pub struct CodeCacheActor {
    cache: CodeCache,
    restarts: RestartCounter,
}

impl CodeCacheActor {
    /// A cache of `capacity` entries.
    pub fn new(capacity: NonZeroUsize) -> Self {
        Self { cache: CodeCache::new(capacity), restarts: RestartCounter::default() }
    }

    /// How many times the actor restarted after a panic (for `/metrics`).
    pub fn restart_counter(&self) -> RestartCounter {
        self.restarts.clone()
    }

    /// Starts the actor with its mailbox bounded from the first message on.
    pub fn start_bounded(self, mailbox: NonZeroUsize) -> Addr<Self> {
        crate::bounded::start_here(self, mailbox)
    }
}

impl Actor for CodeCacheActor {
    type Context = Context<Self>;
}

impl Restart for CodeCacheActor {
    const NAME: &'static str = "code_cache";

    /// A cache can always start empty: every entry is analysed again from the store on demand.
    fn restart(&mut self) {
        self.cache =
            CodeCache::new(NonZeroUsize::new(self.cache.capacity).unwrap_or(NonZeroUsize::MIN));
    }

    fn restarts(&self) -> &RestartCounter {
        &self.restarts
    }
}

impl Handler<GetCode> for CodeCacheActor {
    type Result = Option<Bytecode>;

    /// After a panic the answer is a miss: the executor then analyses the code itself.
    fn handle(&mut self, msg: GetCode, _ctx: &mut Self::Context) -> Self::Result {
        contain(self, |act| act.cache.get(&msg.0)).unwrap_or(None)
    }
}

impl Handler<InsertCode> for CodeCacheActor {
    type Result = ();

    fn handle(&mut self, msg: InsertCode, _ctx: &mut Self::Context) -> Self::Result {
        let _ = contain(self, |act| act.cache.insert(msg.0, msg.1));
    }
}

impl Handler<GetCodeCacheStats> for CodeCacheActor {
    type Result = actix::MessageResult<GetCodeCacheStats>;

    fn handle(&mut self, _msg: GetCodeCacheStats, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(self.cache.stats())
    }
}

// `GET /metrics` asks for the counters without waiting on a busy cache.
hearth_messages::answer_asks!(CodeCacheActor: GetCodeCacheStats, GetCode);

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Bytes;

    fn code(n: u8) -> (B256, Bytecode) {
        (B256::repeat_byte(n), Bytecode::new_raw(Bytes::from(vec![0x60, n, 0x00])))
    }

    #[test]
    fn hot_entry_survives_churn() {
        let mut cache = CodeCache::new(NonZeroUsize::new(4).expect("4 is non-zero"));
        let (hot, hot_code) = code(0);
        cache.insert(hot, hot_code);
        for n in 1..=50u8 {
            let (h, c) = code(n);
            cache.insert(h, c);
            assert!(cache.get(&hot).is_some(), "hot entry evicted after {n} inserts");
        }
        let stats = cache.stats();
        assert_eq!(stats.entries, 4);
        assert_eq!(stats.evictions, 47);
        assert_eq!(stats.hits, 50);
    }

    #[test]
    fn miss_is_counted() {
        let mut cache = CodeCache::new(NonZeroUsize::new(2).expect("2 is non-zero"));
        assert!(cache.get(&B256::ZERO).is_none());
        assert_eq!(cache.stats().misses, 1);
    }
}
