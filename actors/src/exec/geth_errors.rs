//! The executor's error mapping: revm's refusals as typed [`ExecError::Rejected`] reasons
//! (the RPC front words them as geth does), halts as typed reasons that display in geth's words
//! (core/vm/errors.go), and a finished run as a [`CallOutcome`].

use hearth_messages::ExecError;
use hearth_messages::executor::{CallOutcome, HaltReason as Halt};
use revm::context::result::{EVMError, ExecutionResult, HaltReason, Output};

/// A revm error as the executor reports it: storage failures as they are, refusals in geth's
/// words.
pub(crate) fn exec_error(error: EVMError<hearth_storage::StorageError>) -> ExecError {
    match error {
        EVMError::Database(e) => ExecError::Storage(e),
        EVMError::Transaction(e) => ExecError::Rejected(e),
        other => ExecError::Invalid(other.to_string()),
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
