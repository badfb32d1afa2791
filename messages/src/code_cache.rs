//! Messages to the `CodeCacheActor`, the shared L2 of analysed bytecode.

use actix::Message;
use alloy_primitives::B256;
use revm::bytecode::Bytecode;

/// Looks up analysed code by hash.
#[derive(Debug, Clone, Copy)]
pub struct GetCode(pub B256);

impl Message for GetCode {
    type Result = Option<Bytecode>;
}

/// Offers analysed code to the cache.
#[derive(Debug, Clone)]
pub struct InsertCode(pub B256, pub Bytecode);

impl Message for InsertCode {
    type Result = ();
}

/// Hit, miss and eviction counts.
#[derive(Debug, Clone, Copy)]
pub struct GetCodeCacheStats;

/// Counters of the code cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodeCacheStats {
    /// Lookups that found the code.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries dropped to stay within the bound.
    pub evictions: u64,
    /// Entries held now.
    pub entries: u64,
}

impl Message for GetCodeCacheStats {
    type Result = CodeCacheStats;
}

crate::actor_client! {
    /// The `CodeCacheActor`'s client as `GET /metrics` uses it.
    pub struct CodeCacheClient for "code cache" {
        /// Its counters.
        ask stats: GetCodeCacheStats,
    }
}
