//! `CodeL1`: an executor thread's private cache of analysed code, in front of the shared L2
//! (`CodeCacheActor`, `code_cache.rs`), which it reaches through the L2's recipients
//! ([`CodeL2`]) only: the kernel's database reads code through it without knowing the actor.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use actix::Recipient;
use alloy_primitives::B256;
// Keyed by code hash: alloy's seeded map for 32-byte keys (std's default was SipHash).
use alloy_primitives::map::B256Map;
use hearth_messages::code_cache::{GetCode, InsertCode};
use revm::bytecode::Bytecode;

/// The L2's recipients, as an executor holds them.
#[derive(Debug, Clone)]
pub struct CodeL2 {
    /// Lookups, asked without waiting: a full L2 mailbox is a miss, never a parked executor.
    pub get: Recipient<hearth_messages::ask::Ask<GetCode>>,
    /// Inserts.
    pub insert: Recipient<InsertCode>,
}

/// Entries an executor thread keeps in its own L1 (a few hot contracts; the L2 has the rest).
pub const CODE_L1_ENTRIES: usize = 64;

/// An executor thread's private L1 in front of the shared L2.
#[derive(Debug)]
pub struct CodeL1 {
    entries: B256Map<Bytecode>,
    l2: Option<CodeL2>,
}

impl CodeL1 {
    /// An empty L1, backed by `l2` when given.
    pub fn new(l2: Option<CodeL2>) -> Self {
        Self { entries: B256Map::with_capacity_and_hasher(CODE_L1_ENTRIES, Default::default()), l2 }
    }

    /// Forgets every entry (the L2 stays).
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    /// The analysed code for `hash` if this L1 holds it.
    pub(crate) fn peek(&self, hash: &B256) -> Option<Bytecode> {
        self.entries.get(hash).cloned()
    }

    /// Keeps `code` (found elsewhere: a parallel block's published code) in this L1, without
    /// offering it to the L2. Code is keyed by its hash, so an entry is never stale.
    pub(crate) fn keep(&mut self, hash: B256, code: Bytecode) {
        self.make_room();
        self.entries.insert(hash, code);
    }

    fn make_room(&mut self) {
        if self.entries.len() >= CODE_L1_ENTRIES {
            // Small and per-thread: dropping an arbitrary entry is enough, the L2 keeps LRU.
            if let Some(victim) = self.entries.keys().next().copied() {
                self.entries.remove(&victim);
            }
        }
    }

    /// The analysed code for `hash`: from L1, else L2, else `load` (then offered to both).
    #[inline]
    pub(crate) fn get_or_load<E>(
        &mut self,
        hash: B256,
        load: impl FnOnce() -> Result<Bytecode, E>,
    ) -> Result<Bytecode, E> {
        if let Some(code) = self.entries.get(&hash) {
            return Ok(code.clone());
        }
        let from_l2 = self.l2.as_ref().and_then(|l2| {
            block_on(hearth_messages::ask::ask(&l2.get, GetCode(hash))).ok().flatten()
        });
        let code = match from_l2 {
            Some(code) => code,
            None => {
                let code = load()?;
                if let Some(l2) = &self.l2 {
                    // A full L2 mailbox only costs a future miss: never wait for it.
                    let _ = l2.insert.try_send(InsertCode(hash, code.clone()));
                }
                code
            }
        };
        self.make_room();
        self.entries.insert(hash, code.clone());
        Ok(code)
    }
}

/// Runs a future to completion on the current thread by parking it. An executor's arbiter
/// runs nothing but that executor, whose handlers are synchronous, so parking its thread holds
/// up nothing else; the only futures awaited here are other actors' replies.
///
/// The future runs outside tokio's cooperative budget (`unconstrained`). The handler calling
/// this runs inside one poll of the arbiter's task, and each reply received spends that task's
/// budget (128 units): once spent, tokio answers `Pending` and defers the wake-up to its
/// scheduler, which never runs while this thread is parked here. A call that read more than
/// about 128 distinct contracts' code through the L2 then hung for good, and so did its executor.
fn block_on<F: Future>(future: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    let mut future = pin!(tokio::task::unconstrained(future));
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}
