//! Calls run on the caller's own thread (the RPC worker's), before the pool.
//!
//! A cheap eth_call (a balance, a getter) spends more on its trip to an executor thread and
//! back (two wake-ups, a context switch each way) than in the EVM. The node may give the pool's
//! client an [`InlineCalls`] runner: every call an HTTP connection sends on its own (not in a
//! batch, not over a WebSocket) is first tried there with a short time budget,
//! and only a call that is not done within it goes to the pool, where it runs again from the
//! start (a call is read-only and deterministic, so the second run answers what the first
//! would have). The runner itself is the executors' code (`actors::executor::inline`).
//!
//! The same runner builds small blocks on the miner's thread ([`InlineCalls::try_build`]): an
//! automined block of a few transactions took longer to reach an executor thread and come back
//! than to execute, and the executor threads' lower priority made that trip longest on a busy
//! machine.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Call, CallOutcome};
use crate::ExecError;
use crate::block_build::{BuildBlock, BuiltBlock};

/// Runs calls on the calling thread within a time budget.
pub trait InlineCalls: Send + Sync {
    /// The call's outcome, or `None` when it must go to the pool: it did not finish within the
    /// budget, or it is of a kind this runner leaves to the pool (a fork's reads may wait on
    /// the upstream, which no RPC worker may do).
    fn try_call(&self, call: &Call) -> Option<Result<CallOutcome, ExecError>>;

    /// The block built on the calling thread, or `build` handed back for the pool: a runner
    /// builds only blocks small enough to hold its caller's thread briefly, and never a
    /// fork's (its reads may wait on the upstream). A block build is read-only until its
    /// commit, so where it runs changes nothing in what it makes.
    fn try_build(&self, build: BuildBlock) -> BuildHere {
        BuildHere::HandedBack(build)
    }
}

/// What [`InlineCalls::try_build`] did with a block.
#[derive(Debug)]
pub enum BuildHere {
    /// Built it on the calling thread (or failed to, as the pool would have).
    Built(Result<BuiltBlock, ExecError>),
    /// Left it to the pool, whole.
    HandedBack(BuildBlock),
}

/// A runner and what it did, for `/metrics`.
pub(super) struct Inline {
    runner: Box<dyn InlineCalls>,
    answered: AtomicU64,
    handed_on: AtomicU64,
    built: AtomicU64,
    handed_back: AtomicU64,
}

impl Inline {
    pub(super) fn new(runner: Box<dyn InlineCalls>) -> Self {
        Self {
            runner,
            answered: AtomicU64::new(0),
            handed_on: AtomicU64::new(0),
            built: AtomicU64::new(0),
            handed_back: AtomicU64::new(0),
        }
    }

    /// The call's outcome from the runner, counted, or `None` (counted too): send it to the pool.
    pub(super) fn try_call(&self, call: &Call) -> Option<Result<CallOutcome, ExecError>> {
        let outcome = self.runner.try_call(call);
        let counter = if outcome.is_some() { &self.answered } else { &self.handed_on };
        counter.fetch_add(1, Relaxed);
        outcome
    }

    /// The block built by the runner, or `build` back for the pool; counted either way.
    pub(super) fn try_build(&self, build: BuildBlock) -> BuildHere {
        let here = self.runner.try_build(build);
        let counter = match &here {
            BuildHere::Built(_) => &self.built,
            BuildHere::HandedBack(_) => &self.handed_back,
        };
        counter.fetch_add(1, Relaxed);
        here
    }

    /// Blocks built on the caller's thread, and blocks handed back to the pool.
    pub(super) fn block_counts(&self) -> [u64; 2] {
        [self.built.load(Relaxed), self.handed_back.load(Relaxed)]
    }

    /// Calls answered inline, and calls handed on to the pool.
    pub(super) fn counts(&self) -> [u64; 2] {
        [self.answered.load(Relaxed), self.handed_on.load(Relaxed)]
    }
}

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inline").field("counts", &self.counts()).finish_non_exhaustive()
    }
}
