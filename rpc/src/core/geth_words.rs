//! revm's refusals in geth's words. The executor reports why it refused a transaction as a
//! type ([`ExecError::Rejected`], [`SimulateError::InvalidCall`]); the words are made here, at
//! the RPC edge, because client libraries tell errors apart by their text (ethers and viem look
//! for "insufficient funds", "nonce too low", "intrinsic gas too low", ...): geth's
//! core/error.go, and for eth_simulateV1 its state transition's messages and codes.

use alloy_primitives::Address;
use hearth_messages::InvalidTransaction;
use hearth_messages::simulate::SimulateError;
use hearth_messages::{ExecError, MineError, TxError};

/// revm's reason for refusing a call or transaction before running it, in geth's words
/// (core/error.go); revm's own text for the rest.
pub(crate) fn geth_message(error: &InvalidTransaction) -> String {
    use InvalidTransaction as E;
    match error {
        E::LackOfFundForMaxFee { fee, balance } => {
            format!("insufficient funds for gas * price + value: have {balance} want {fee}")
        }
        E::NonceTooLow { tx, state } => format!("nonce too low: next nonce {state}, tx nonce {tx}"),
        E::NonceTooHigh { tx, state } => {
            format!("nonce too high: next nonce {state}, tx nonce {tx}")
        }
        E::CallGasCostMoreThanGasLimit { initial_gas, gas_limit } => {
            format!("intrinsic gas too low: have {gas_limit}, want {initial_gas}")
        }
        E::GasFloorMoreThanGasLimit { gas_floor, gas_limit } => {
            format!("insufficient gas for floor data gas cost: have {gas_limit}, want {gas_floor}")
        }
        E::GasPriceLessThanBasefee => "max fee per gas less than block base fee".to_owned(),
        // The pool's refusal for the same rule, so an estimate and a send of one transaction
        // say the same thing.
        E::BlobGasPriceGreaterThanMax { block_blob_gas_price, tx_max_fee_per_blob_gas } => {
            TxError::BlobFeeTooLow {
                cap: *tx_max_fee_per_blob_gas,
                blob_base_fee: *block_blob_gas_price,
            }
            .to_string()
        }
        E::PriorityFeeGreaterThanMaxFee => {
            "max priority fee per gas higher than max fee per gas".to_owned()
        }
        E::CallerGasLimitMoreThanBlock => "exceeds block gas limit".to_owned(),
        E::RejectCallerWithCode => "sender not an eoa".to_owned(),
        E::CreateInitCodeSizeLimit => "max initcode size exceeded".to_owned(),
        // anvil's words (geth's: "chainId does not match node's").
        E::InvalidChainId => "invalid chain id for signer".to_owned(),
        E::TxGasLimitGreaterThanCap { gas_limit, cap } => {
            format!("transaction gas limit too high (cap: {cap}, tx: {gas_limit})")
        }
        other => other.to_string(),
    }
}

/// An executor error's message: a refusal in geth's words, the rest as they display.
pub(crate) fn exec_message(error: &ExecError) -> String {
    match error {
        ExecError::Rejected(reason) => geth_message(reason),
        other => other.to_string(),
    }
}

/// A miner error's message, with an executor refusal in geth's words.
pub(crate) fn mine_message(error: &MineError) -> String {
    match error {
        MineError::Exec(error) => exec_message(error),
        other => other.to_string(),
    }
}

/// A simulation error's message: an invalid call as geth's eth_simulateV1 says it (its nonce
/// checks name the sender), an executor error as for eth_call.
pub(crate) fn simulate_message(error: &SimulateError) -> String {
    match error {
        SimulateError::InvalidCall { reason, sender, gas } => {
            format!("err: {} (supplied gas {gas})", invalid_call_message(reason, *sender))
        }
        SimulateError::Exec(error) => exec_message(error),
        other => other.to_string(),
    }
}

/// Why a simulated call is invalid: geth's state-transition words for the nonce checks it makes
/// first, core/error.go's for the rest.
fn invalid_call_message(reason: &InvalidTransaction, sender: Address) -> String {
    match reason {
        InvalidTransaction::NonceTooHigh { tx, state } => {
            format!("nonce too high: address {sender}, tx: {tx} state: {state}")
        }
        InvalidTransaction::NonceTooLow { tx, state } => {
            format!("nonce too low: address {sender}, tx: {tx} state: {state}")
        }
        InvalidTransaction::NonceOverflowInTransaction => {
            format!("nonce has max value: address {sender}, nonce: {}", u64::MAX)
        }
        other => geth_message(other),
    }
}

/// The JSON-RPC code of an invalid simulated call: each rule has its own (execution-apis'
/// -38xxx), a tip above the fee cap is bad params, anything else internal.
pub(crate) const fn invalid_call_code(reason: &InvalidTransaction) -> i32 {
    use InvalidTransaction as E;
    match reason {
        E::NonceTooLow { .. } => -38010,
        E::NonceTooHigh { .. } => -38011,
        E::GasPriceLessThanBasefee => -38012,
        E::CallGasCostMoreThanGasLimit { .. } => -38013,
        E::LackOfFundForMaxFee { .. } | E::OverflowPaymentInTransaction => -38014,
        E::RejectCallerWithCode => -38024,
        E::CreateInitCodeSizeLimit => -38025,
        E::PriorityFeeGreaterThanMaxFee => -32602,
        _ => -32603,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_low_blob_fee_cap_reads_as_the_pools_refusal() {
        let low = InvalidTransaction::BlobGasPriceGreaterThanMax {
            block_blob_gas_price: 2,
            tx_max_fee_per_blob_gas: 1,
        };
        let pool = TxError::BlobFeeTooLow { cap: 1, blob_base_fee: 2 };
        assert_eq!(geth_message(&low), pool.to_string());
        assert_eq!(
            geth_message(&low),
            "max fee per blob gas less than block blob gas fee: maxFeePerBlobGas 1, blob base fee 2"
        );
    }

    #[test]
    fn refusals_are_worded_at_the_edge_and_coded_by_rule() {
        let low = InvalidTransaction::NonceTooLow { tx: 1, state: 2 };
        let refused = ExecError::Rejected(low.clone());
        assert_eq!(exec_message(&refused), "nonce too low: next nonce 2, tx nonce 1");
        let sender = Address::repeat_byte(9);
        let call = SimulateError::InvalidCall { reason: low, sender, gas: 21_000 };
        assert_eq!(
            simulate_message(&call),
            format!("err: nonce too low: address {sender}, tx: 1 state: 2 (supplied gas 21000)")
        );
        let over = InvalidTransaction::NonceOverflowInTransaction;
        assert_eq!(invalid_call_code(&over), -32603);
        assert_eq!(invalid_call_code(&InvalidTransaction::RejectCallerWithCode), -38024);
    }
}
