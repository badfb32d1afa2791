//! The `hearth` node: command line, configuration and wiring of the actors.
//!
//! `main.rs` parses flags ([`cli::Cli`]), validates them into a [`config::NodeConfig`], and
//! starts a [`node::Node`] inside an actix `System`. Tests and examples start a `Node` the same
//! way, on in-memory storage.

pub mod address_index;
pub mod banner;
pub mod chainfile;
pub mod cli;
pub mod config;
pub mod conformance;
pub mod engine_api;
pub mod follow;
pub mod fork;
pub mod genesis;
pub mod import;
pub mod jwt;
pub mod node;
pub mod os;
pub mod parallel_kit;
pub mod replica;
pub mod reset;
pub mod shutdown;
pub mod state_file;
