//! Hearth's integration tests: one binary. `support` holds `TestNode`, `Probe` and fixtures;
//! each other module covers one area (actors by messages, RPC methods, persistence, conformance).

/// The value of `$e` (an `Option`), or the end of the test when it is `None`: data the test
/// needs is not beside the checkout, and [`conformance::conformance_dir`] has said so.
macro_rules! or_skip {
    ($e:expr) => {
        match $e {
            Some(value) => value,
            None => return,
        }
    };
}

mod actors;
mod admission;
mod anvil;
mod blobs;
mod blocktest;
mod chain_methods;
mod cli;
mod conformance;
mod dev;
mod dumpstate;
mod engine;
mod engine_driver;
mod filters;
mod fork;
mod forks;
mod fuzz;
mod history;
mod hostile;
mod metrics;
mod mining;
mod origin;
mod ots;
mod parallel;
mod persistence;
mod pool;
mod process;
mod proof;
mod readme;
mod replica;
mod reset;
mod rpc;
mod rpc_compat;
mod shutdown;
mod signing;
mod simulate;
mod statetest;
mod subscriptions;
mod support;
mod trace;
mod txtest;
