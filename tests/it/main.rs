//! Hearth's integration tests: one binary. `support` holds `TestNode`, `Probe` and fixtures;
//! each other module covers one area (actors by messages, RPC methods, persistence, conformance).

mod actors;
mod conformance;
mod history;
mod persistence;
mod process;
mod proof;
mod rpc;
mod support;
