//! The `debug_` namespace: raw encodings (headers, blocks, receipts, transactions), storage
//! ranges, geth's tracers (`debug_trace*`) and `debug_setHead`.

pub(crate) mod head;
pub(crate) mod patches;
pub(crate) mod raw;
pub(crate) mod storage_range;
pub(crate) mod trace;
