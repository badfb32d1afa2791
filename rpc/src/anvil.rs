//! The dev namespaces (`anvil_`, `hardhat_`, `evm_`): mining and the dev clock, state patches,
//! impersonation, snapshots and rewinds, reset, state dumps, ERC-20 slots and what the node
//! says about itself. A handler that serves several dialects is given the caller's
//! [`Dialect`](crate::methods::Dialect) by the method table, never the method's name.

pub(crate) mod blobs;
pub(crate) mod dev;
pub(crate) mod erc20;
pub(crate) mod mined;
pub(crate) mod node_info;
pub(crate) mod reset;
pub(crate) mod rewind;
pub(crate) mod state_dump;
