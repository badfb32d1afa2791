//! The geth error mapping of the executor: revm's refusals and halts in geth's words
//! (core/error.go, core/vm/errors.go), since client libraries tell errors apart by their text,
//! and a finished run as a [`CallOutcome`].

use hearth_messages::ExecError;
use hearth_messages::executor::{CallOutcome, HaltReason as Halt};
use revm::context::result::{EVMError, ExecutionResult, HaltReason, InvalidTransaction, Output};

/// A revm error as the executor reports it: storage failures as they are, refusals in geth's
/// words.
pub(crate) fn exec_error(error: EVMError<hearth_storage::StorageError>) -> ExecError {
    match error {
        EVMError::Database(e) => ExecError::Storage(e),
        EVMError::Transaction(e) => ExecError::Invalid(geth_message(&e)),
        other => ExecError::Invalid(other.to_string()),
    }
}

/// revm's reason for refusing a call or transaction before running it, in geth's words
/// (core/error.go): client libraries tell these errors apart by their text (ethers and viem
/// look for "insufficient funds", "nonce too low", "intrinsic gas too low", ...). revm's own
/// text for the rest.
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
            hearth_messages::TxError::BlobFeeTooLow {
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
        E::TxGasLimitGreaterThanCap { gas_limit, cap } => {
            format!("transaction gas limit too high (cap: {cap}, tx: {gas_limit})")
        }
        other => other.to_string(),
    }
}

/// A finished run as eth_call reports it: a revert or a halt is an outcome, not an error.
pub(crate) fn outcome(result: ExecutionResult) -> CallOutcome {
    let gas_used = result.tx_gas_used();
    match result {
        ExecutionResult::Success { output, .. } => {
            let output = match output {
                Output::Call(bytes) | Output::Create(bytes, _) => bytes,
            };
            CallOutcome::Success { output, gas_used }
        }
        ExecutionResult::Revert { output, .. } => CallOutcome::Revert { output, gas_used },
        ExecutionResult::Halt { reason, .. } => {
            CallOutcome::Halt { reason: halt_reason(&reason), gas_used }
        }
    }
}

/// revm's halt as the typed reason the RPC front matches on; it displays in geth's words for
/// the common halts, so clients that match on messages keep working.
pub(crate) fn halt_reason(reason: &HaltReason) -> Halt {
    match reason {
        HaltReason::OutOfGas(_) => Halt::OutOfGas,
        HaltReason::OpcodeNotFound | HaltReason::InvalidFEOpcode => Halt::InvalidOpcode,
        HaltReason::StackUnderflow => Halt::StackUnderflow,
        HaltReason::StackOverflow => Halt::StackOverflow,
        HaltReason::InvalidJump => Halt::InvalidJump,
        HaltReason::StateChangeDuringStaticCall => Halt::WriteProtection,
        HaltReason::CallTooDeep => Halt::CallTooDeep,
        HaltReason::OutOfFunds => Halt::InsufficientBalance,
        HaltReason::CreateContractSizeLimit => Halt::CodeSizeLimit,
        HaltReason::CreateCollision => Halt::AddressCollision,
        other => Halt::Unmapped(format!("{other:?}")),
    }
}

/// [`halt_reason`] in words, where a message (not a type) is what is reported.
pub(crate) fn halt_message(reason: &HaltReason) -> String {
    halt_reason(reason).to_string()
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
        let pool = hearth_messages::TxError::BlobFeeTooLow { cap: 1, blob_base_fee: 2 };
        assert_eq!(geth_message(&low), pool.to_string());
        assert_eq!(
            geth_message(&low),
            "max fee per blob gas less than block blob gas fee: maxFeePerBlobGas 1, blob base fee 2"
        );
    }
}
