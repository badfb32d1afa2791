//! eth_createAccessList: the request an executor answers with the access list a call needs.

use actix::Message;
use alloy_eips::eip2930::AccessList;

use crate::ExecError;
use crate::request::CallRequest;

/// Finds the accounts and storage slots `request` touches, running it again with what it
/// found until the list stops growing (geth's algorithm). Serves `eth_createAccessList`.
#[derive(Debug, Clone)]
pub struct CreateAccessList {
    /// The call; its `access_list` seeds the search.
    pub request: CallRequest,
    /// The block whose post-state and header the call sees.
    pub block: u64,
}

/// What eth_createAccessList answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessListOutcome {
    /// Every account and slot the call touches, except its sender, its recipient (or created
    /// address) and the precompiles, sorted.
    pub access_list: AccessList,
    /// Gas the call uses with that access list.
    pub gas_used: u64,
    /// Why the call failed with it (it reverted or halted), in geth's words.
    pub error: Option<String>,
}

impl Message for CreateAccessList {
    type Result = Result<AccessListOutcome, ExecError>;
}
