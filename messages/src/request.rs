//! The transaction request a call-like executor message carries (eth_call, eth_estimateGas,
//! eth_createAccessList, eth_simulateV1's state overrides, a call's trace) and the state and
//! block overrides it may bring.
//!
//! A leaf: the executor's messages and the modules of the executor's other requests
//! (`access_list`, `simulate`, `trace`) import it, and it imports none of them.

use std::sync::Arc;

use alloy_eips::eip2930::AccessList;
use alloy_eips::eip7702::SignedAuthorization;
use alloy_primitives::{Address, B256, Bytes, U256};

/// A transaction request, already validated: the one shape every call-like request takes
/// (eth_call, eth_estimateGas, eth_createAccessList, debug_traceCall, trace_call, and each call
/// of an eth_simulateV1 block, [`SimCall`](crate::simulate::SimCall)). Absent fields take the
/// consumer's default: a call runs with the gas cap and an unchecked nonce, a simulated call
/// with what is left of its block's gas and the sender's nonce. The overrides are a call's
/// own; a simulated block carries its own instead, and its calls leave them `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallRequest {
    /// Sender; zero address when absent.
    pub from: Option<Address>,
    /// Callee; `None` runs `input` as init code.
    pub to: Option<Address>,
    /// Gas limit; the consumer's default when absent.
    pub gas: Option<u64>,
    /// Legacy gas price.
    pub gas_price: Option<u128>,
    /// EIP-1559 fee cap.
    pub max_fee_per_gas: Option<u128>,
    /// EIP-1559 tip cap.
    pub max_priority_fee_per_gas: Option<u128>,
    /// Wei sent along.
    pub value: Option<U256>,
    /// Calldata.
    pub input: Bytes,
    /// Nonce to check; the consumer's default when absent.
    pub nonce: Option<u64>,
    /// EIP-2930 access list.
    pub access_list: Option<AccessList>,
    /// Chain id; a simulated call must name the chain's when it names one. eth_call and the
    /// other calls do not check it (as before this field existed; geth refuses a mismatch,
    /// which is not yet compared with the peers: issue 37).
    pub chain_id: Option<u64>,
    /// EIP-7702 authorizations, as signed (makes it a type-4 transaction). One whose
    /// signature does not recover, or whose chain id or nonce does not match, is skipped as
    /// block execution skips it; the call still runs.
    pub authorization_list: Option<Vec<SignedAuthorization>>,
    /// EIP-4844 blob versioned hashes (makes it a blob transaction: BLOBHASH reads them).
    pub blob_versioned_hashes: Option<Vec<B256>>,
    /// EIP-4844 blob fee cap.
    pub max_fee_per_blob_gas: Option<u128>,
    /// Account state to pretend for this call only (geth's state override set).
    pub state_overrides: Option<Arc<StateOverrides>>,
    /// Block fields to pretend for this call only.
    pub block_overrides: Option<BlockOverrides>,
}

/// Per-account overrides for one call, by address.
pub type StateOverrides = std::collections::BTreeMap<Address, AccountOverride>;

/// What to pretend about one account during a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountOverride {
    /// Replaces the balance.
    pub balance: Option<U256>,
    /// Replaces the nonce.
    pub nonce: Option<u64>,
    /// Replaces the code.
    pub code: Option<Bytes>,
    /// Replaces the whole storage: slots not listed read as zero.
    pub state: Option<std::collections::BTreeMap<U256, U256>>,
    /// Replaces only the listed slots.
    pub state_diff: Option<std::collections::BTreeMap<U256, U256>>,
    /// Moves the precompile at this address to another address (geth's
    /// `movePrecompileToAddress`); this address then runs its code, if any.
    pub move_precompile_to: Option<Address>,
}

/// Block fields to pretend during a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockOverrides {
    /// NUMBER.
    pub number: Option<u64>,
    /// TIMESTAMP.
    pub timestamp: Option<u64>,
    /// GASLIMIT.
    pub gas_limit: Option<u64>,
    /// BASEFEE.
    pub base_fee: Option<u64>,
    /// COINBASE.
    pub coinbase: Option<Address>,
    /// PREVRANDAO.
    pub prevrandao: Option<B256>,
}
