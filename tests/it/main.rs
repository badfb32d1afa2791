//! Hearth's integration tests: one binary. `support` holds `TestNode`, `Probe` and fixtures;
//! each other module covers one area (actors by messages, RPC methods, persistence, conformance).

mod actors;
mod admission;
mod anvil;
mod blocktest;
mod chain_methods;
mod cli;
mod conformance;
mod dev;
mod filters;
mod fuzz;
mod history;
mod hostile;
mod metrics;
mod mining;
mod origin;
mod persistence;
mod pool;
mod process;
mod proof;
mod rpc;
mod rpc_compat;
mod simulate;
mod statetest;
mod subscriptions;
mod support;
mod txtest;
