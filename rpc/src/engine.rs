//! The `engine_` namespace, served only on the Engine API's authenticated port
//! (`--authrpc.*`, see `core::surface`): what a consensus client or a rollup sequencer drives
//! the execution layer with. The call's shape (version, structure, fork) is checked here;
//! what needs the chain is the engine actor's (`hearth_actors::engine`).

pub(crate) mod blobs;
pub(crate) mod bodies;
pub(crate) mod capabilities;
mod era;
pub(crate) mod forkchoice;
pub(crate) mod payload;
mod port;
