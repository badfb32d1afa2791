//! testing_buildBlockV1: the request an executor answers with a whole block built on the head
//! and sealed, without committing it.

use actix::Message;
use alloy_primitives::{Bytes, U256};
use hearth_storage::SealedBlock;

use crate::ExecError;
use crate::block_build::BuildBlock;

/// Builds the block `BuildBlock` describes and seals it with its state root, writing nothing.
/// Serves `testing_buildBlockV1`.
#[derive(Debug, Clone)]
pub struct BuildPayload(pub BuildBlock);

/// A sealed block that was built and not committed, with what an execution payload reports
/// besides the block.
#[derive(Debug, Clone)]
pub struct BuiltPayload {
    /// The block, its header complete (state root, hash).
    pub block: SealedBlock,
    /// Its EIP-7685 requests, type byte first, empty ones left out.
    pub requests: Vec<Bytes>,
    /// What its transactions pay the fee recipient (priority fees), in wei.
    pub fees: U256,
}

impl Message for BuildPayload {
    type Result = Result<BuiltPayload, ExecError>;
}
