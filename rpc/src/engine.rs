//! The `engine_` namespace, served only on the Engine API's authenticated port
//! (`--authrpc.*`, see `core::surface`): what a consensus client or a rollup sequencer drives
//! the execution layer with. Every method here is real; a method the spec has that Hearth does
//! not answer yet is -32601 there, and `engine_exchangeCapabilities` lists only what is served.

pub(crate) mod capabilities;
