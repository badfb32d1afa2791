//! The `debug_` namespace: raw encodings (headers, blocks, receipts, transactions), storage
//! ranges, and geth's tracers (`debug_trace*`).

pub(crate) mod raw;
pub(crate) mod storage_range;
pub(crate) mod trace;
