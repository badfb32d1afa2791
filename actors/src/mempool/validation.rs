//! The validity rules a transaction must pass before the pool admits it: the rules block
//! execution applies, run by the same code, so that nothing admitted is later dropped by the
//! miner for a rule the pool did not check.
//!
//! [`check_stateless`] needs no state. It runs revm's own `validate_tx_env` (the fork's
//! transaction types, chain id, the EIP-7825 gas cap, fee cap >= tip, the block gas limit,
//! EIP-3860 initcode size, a non-empty EIP-7702 authorization list, the EIP-2681 nonce bound)
//! and `validate_initial_tx_gas` (intrinsic gas and the EIP-7623 floor) on the `TxEnv` the
//! executor builds from the transaction, under the configuration block execution uses; then
//! what revm leaves to the node: the signature (low `s` from Homestead, EIP-155 chain ids
//! from Spurious Dragon). The conformance runner calls it per fork on the EF
//! TransactionTests.
//!
//! [`check_against_state`] checks the head state as revm's pre-execution does: the sender has
//! no code other than an EIP-7702 delegation (EIP-3607), the nonce is not used yet, and the
//! balance covers the most the transaction can cost, `gas * fee cap + value` computed with
//! revm's checked arithmetic (an overflow is an unaffordable transaction, as in geth). The
//! pool adds geth's overdraft rule on top (the sender's other pooled transactions count
//! against the same balance).

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction as _, TxEnvelope, Typed2718};
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::TxError;
use hearth_messages::executor::PooledTx;
use revm::bytecode::Bytecode;
use revm::context::result::InvalidTransaction;
use revm::context::{BlockEnv, CfgEnv, Context, TxEnv};
use revm::context_interface::cfg::gas_params::Eip2780TxInfo;
use revm::context_interface::{Cfg, ContextTr, Transaction as _};
use revm::handler::MainContext;
use revm::handler::pre_execution::validate_account_nonce_and_code;
use revm::handler::validation::{validate_initial_tx_gas_with_gas_params, validate_tx_env};
use revm::primitives::KECCAK_EMPTY;
use revm::primitives::hardfork::SpecId;
use revm::state::AccountInfo;

use crate::exec::tx_env;

/// The chain rules a transaction is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxRules {
    /// The hard fork.
    pub spec: SpecId,
    /// The chain id transactions must carry (a legacy transaction may carry none).
    pub chain_id: u64,
    /// No transaction may ask for more gas than a block holds.
    pub block_gas_limit: u64,
    /// Contract code size limit (`None`: the fork's, EIP-170); initcode may be twice it.
    pub code_size_limit: Option<usize>,
}

/// A transaction that passed every rule that needs no state.
#[derive(Debug, Clone)]
pub struct Valid {
    /// The transaction with its sender and hash.
    pub pooled: PooledTx,
    /// Its intrinsic gas (without the EIP-7623 floor, as the EF tests state it).
    pub intrinsic_gas: u64,
    /// The most it can take from the sender: `gas_limit * max_fee + value` (plus the blob fee
    /// cap of a blob transaction), as revm computes it; `None` when that overflows, which no
    /// balance covers (a state rule, so the EF tests count such a transaction valid).
    pub max_cost: Option<U256>,
}

/// The sender's account at the head, as [`check_against_state`] needs it.
#[derive(Debug, Clone, Default)]
pub struct SenderState {
    /// Its nonce.
    pub nonce: u64,
    /// Its balance.
    pub balance: U256,
    /// Its code hash (`KECCAK_EMPTY`, or zero, for none).
    pub code_hash: B256,
    /// Its code, when it has any.
    pub code: Option<Bytes>,
}

/// Checks every rule of `rules` that needs no state. `sender` is given only for
/// transactions the node built itself (a dev key's, or an impersonated account's with a
/// placeholder signature); otherwise the signature must recover to one under the fork's rules.
pub fn check_stateless(
    tx: TxEnvelope,
    sender: Option<Address>,
    rules: &TxRules,
) -> Result<Valid, TxError> {
    let signer = sender.map_or(Signer::Recover, Signer::Node);
    check_stateless_signed(tx, signer, rules)
}

/// Where admission gets a transaction's sender from.
#[derive(Debug, Clone)]
pub(crate) enum Signer {
    /// The node built it (a dev key's, or an impersonated account's): admitted as this sender.
    Node(Address),
    /// Its signature, recovered here under the fork's rules.
    Recover,
    /// Its signature, already recovered by [`recover_sender`] (a batch's, on several threads).
    Recovered(Result<Address, TxError>),
}

/// [`check_stateless`] with the sender given as a [`Signer`]; a failed recovery is reported at
/// the same point in the checks whether it was done here or ahead.
pub(crate) fn check_stateless_signed(
    tx: TxEnvelope,
    signer: Signer,
    rules: &TxRules,
) -> Result<Valid, TxError> {
    if let Some(fork) = type_fork(tx.ty())
        && !rules.spec.is_enabled_in(fork.0)
    {
        return Err(TxError::TypeNotActive { ty: tx.ty(), fork: fork.1 });
    }
    let sender = match signer {
        Signer::Node(sender) => sender,
        Signer::Recover => recover_sender(&tx, rules.spec)?,
        Signer::Recovered(recovered) => recovered?,
    };
    let hash = *tx.tx_hash();
    let pooled = PooledTx { tx: std::sync::Arc::new(tx), sender, hash };
    let env = tx_env(&pooled);
    let cfg = cfg(rules);
    let max_initcode = cfg.max_initcode_size();
    let block = BlockEnv { gas_limit: rules.block_gas_limit, basefee: 0, ..Default::default() };
    let mut ctx = Context::mainnet().with_cfg(cfg).with_block(block).with_tx(env);
    let refuse = |e| revm_refusal(e, &pooled, rules, max_initcode);
    validate_tx_env(&mut ctx, rules.spec).map_err(refuse)?;
    let gas = initial_gas(&ctx).map_err(refuse)?;
    let max_cost = ctx.tx().max_balance_spending().ok();
    Ok(Valid { pooled, intrinsic_gas: gas, max_cost })
}

/// Checks `valid` against its sender's account at the head, as revm's pre-execution does
/// (apart from a nonce above the account's, which waits in the pool). `sealed_by_node`: the
/// node built it for an impersonated account (or a dev key), which may have code: blocks the
/// node packs let it send, as anvil does (EIP-3607 is checked only for signed transactions).
pub fn check_against_state(
    valid: &Valid,
    account: &SenderState,
    sealed_by_node: bool,
) -> Result<(), TxError> {
    let tx = &valid.pooled.tx;
    let no_code = account.code_hash == KECCAK_EMPTY || account.code_hash == B256::ZERO;
    let code = match (&account.code, no_code) {
        (Some(code), false) => Bytecode::new_raw(code.clone()),
        _ => Bytecode::default(),
    };
    let info = AccountInfo::new(account.balance, account.nonce, account.code_hash, code);
    // The nonce check is the pool's own (a later nonce waits); EIP-3607 is revm's.
    validate_account_nonce_and_code(&info, tx.nonce(), sealed_by_node, true).map_err(|_| {
        TxError::SenderNotEoa { sender: valid.pooled.sender, code_hash: account.code_hash }
    })?;
    if tx.nonce() < account.nonce {
        return Err(TxError::NonceTooLow { expected: account.nonce, got: tx.nonce() });
    }
    let sender = valid.pooled.sender;
    let Some(cost) = valid.max_cost else {
        // revm multiplies gas by the fee cap in 128 bits and adds the value in 256; in 256
        // bits the product (under 2^192) cannot overflow, only the sum can.
        let gas_cost = U256::from(tx.gas_limit()).saturating_mul(U256::from(tx.max_fee_per_gas()));
        let bits = if gas_cost.checked_add(tx.value()).is_none() { 256 } else { 128 };
        return Err(TxError::CostOverflow { sender, bits });
    };
    if cost > account.balance {
        return Err(TxError::InsufficientFunds { sender, balance: account.balance, cost });
    }
    Ok(())
}

/// The sender `tx`'s signature recovers to under `spec`: `s` may be in the upper half of the
/// curve order only before Homestead (EIP-2), and a legacy transaction may carry a chain id
/// in `v` only from Spurious Dragon (EIP-155).
pub fn recover_sender(tx: &TxEnvelope, spec: SpecId) -> Result<Address, TxError> {
    if let TxEnvelope::Legacy(legacy) = tx
        && legacy.tx().chain_id.is_some()
        && !spec.is_enabled_in(SpecId::SPURIOUS_DRAGON)
    {
        return Err(TxError::InvalidSignature);
    }
    let recovered = if spec.is_enabled_in(SpecId::HOMESTEAD) {
        tx.recover_signer()
    } else {
        tx.recover_signer_unchecked()
    };
    recovered.map_err(|_| TxError::InvalidSignature)
}

/// The fork that introduces EIP-2718 type `ty`, with geth's name for it.
fn type_fork(ty: u8) -> Option<(SpecId, &'static str)> {
    match ty {
        1 => Some((SpecId::BERLIN, "Berlin")),
        2 => Some((SpecId::LONDON, "London")),
        3 => Some((SpecId::CANCUN, "Cancun")),
        4 => Some((SpecId::PRAGUE, "Prague")),
        _ => None,
    }
}

/// The configuration block execution runs transactions under (`block_exec::execute_block`):
/// every check on, the chain's id.
fn cfg(rules: &TxRules) -> CfgEnv {
    let mut cfg = CfgEnv::new_with_spec(rules.spec);
    cfg.chain_id = rules.chain_id;
    cfg.limit_contract_code_size = rules.code_size_limit;
    cfg
}

/// Intrinsic gas as revm's handler computes and checks it (`Handler::validate_initial_tx_gas`).
fn initial_gas<C: ContextTr<Cfg = CfgEnv, Tx = TxEnv>>(ctx: &C) -> Result<u64, InvalidTransaction> {
    let (cfg, tx) = (ctx.cfg(), ctx.tx());
    let eip2780 = cfg.is_amsterdam_eip2780_enabled().then(|| Eip2780TxInfo {
        value: tx.value(),
        is_self_transfer: tx.kind().to() == Some(&tx.caller()),
    });
    let gas = validate_initial_tx_gas_with_gas_params(
        tx,
        *cfg.spec(),
        cfg.gas_params(),
        cfg.is_eip7623_disabled(),
        cfg.is_amsterdam_eip8037_enabled(),
        cfg.tx_gas_limit_cap(),
        eip2780,
    )?;
    Ok(gas.initial_total_gas())
}

/// revm's refusal in geth's words where geth has them.
fn revm_refusal(
    error: InvalidTransaction,
    pooled: &PooledTx,
    rules: &TxRules,
    max_initcode: usize,
) -> TxError {
    let tx = &pooled.tx;
    match error {
        InvalidTransaction::PriorityFeeGreaterThanMaxFee => TxError::TipAboveFeeCap,
        InvalidTransaction::CallerGasLimitMoreThanBlock => {
            TxError::GasLimitTooHigh { gas: tx.gas_limit(), block_limit: rules.block_gas_limit }
        }
        InvalidTransaction::CallGasCostMoreThanGasLimit { initial_gas, gas_limit } => {
            TxError::IntrinsicGasTooLow { gas: gas_limit, intrinsic: initial_gas }
        }
        InvalidTransaction::GasFloorMoreThanGasLimit { gas_floor, gas_limit } => {
            TxError::FloorDataGas { gas: gas_limit, floor: gas_floor }
        }
        InvalidTransaction::TxGasLimitGreaterThanCap { gas_limit, cap } => {
            TxError::GasLimitAboveCap { gas: gas_limit, cap }
        }
        InvalidTransaction::NonceOverflowInTransaction => TxError::NonceMax,
        InvalidTransaction::CreateInitCodeSizeLimit => {
            TxError::InitCodeTooLarge { size: tx.input().len(), limit: max_initcode }
        }
        InvalidTransaction::InvalidChainId => TxError::WrongChainId {
            expected: rules.chain_id,
            got: tx.chain_id().unwrap_or_default(),
        },
        InvalidTransaction::EmptyAuthorizationList => TxError::EmptyAuthList,
        InvalidTransaction::Eip2930NotSupported
        | InvalidTransaction::Eip1559NotSupported
        | InvalidTransaction::Eip4844NotSupported
        | InvalidTransaction::Eip7702NotSupported => match type_fork(tx.ty()) {
            Some((_, fork)) => TxError::TypeNotActive { ty: tx.ty(), fork },
            None => TxError::UnsupportedType,
        },
        other => TxError::Rejected(other),
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEip7702, TxLegacy};
    use alloy_primitives::{Signature, TxKind};
    use alloy_signer::SignerSync;
    use alloy_signer_local::PrivateKeySigner;

    use super::*;

    const PRAGUE: TxRules = TxRules {
        spec: SpecId::PRAGUE,
        chain_id: 1,
        block_gas_limit: 30_000_000,
        code_size_limit: None,
    };

    fn key() -> PrivateKeySigner {
        PrivateKeySigner::from_bytes(&B256::repeat_byte(7)).expect("valid key")
    }

    fn eip1559(edit: impl FnOnce(&mut TxEip1559)) -> TxEnvelope {
        let mut tx = TxEip1559 {
            chain_id: 1,
            nonce: 0,
            gas_limit: 21_000,
            max_fee_per_gas: 10,
            max_priority_fee_per_gas: 1,
            to: TxKind::Call(Address::repeat_byte(0xb0)),
            value: U256::from(1),
            access_list: Default::default(),
            input: Bytes::new(),
        };
        edit(&mut tx);
        let signature = key().sign_hash_sync(&tx.signature_hash()).expect("signs");
        tx.into_signed(signature).into()
    }

    fn check(tx: TxEnvelope) -> Result<Valid, TxError> {
        check_stateless(tx, None, &PRAGUE)
    }

    #[test]
    fn a_plain_transfer_passes_with_its_sender_and_cost() {
        let valid = check(eip1559(|_| {})).expect("valid");
        assert_eq!(valid.pooled.sender, key().address());
        assert_eq!(valid.intrinsic_gas, 21_000);
        assert_eq!(valid.max_cost, Some(U256::from(21_000 * 10 + 1)));
    }

    #[test]
    fn the_reported_holes_are_refused_in_geths_words() {
        let initcode = check(eip1559(|tx| {
            tx.to = TxKind::Create;
            tx.gas_limit = 10_000_000;
            tx.input = vec![0u8; 49_153].into();
        }));
        assert_eq!(
            initcode.unwrap_err().to_string(),
            "max initcode size exceeded: code size 49153 limit 49152"
        );
        // A raised code size limit raises the initcode limit to twice it, as block execution.
        let raised = TxRules { code_size_limit: Some(40_000), ..PRAGUE };
        let big = |len: usize| {
            eip1559(|tx| {
                tx.to = TxKind::Create;
                tx.gas_limit = 10_000_000;
                tx.input = vec![0u8; len].into();
            })
        };
        assert!(check_stateless(big(49_153), None, &raised).is_ok());
        assert_eq!(
            check_stateless(big(80_001), None, &raised).unwrap_err().to_string(),
            "max initcode size exceeded: code size 80001 limit 80000"
        );

        // Statically valid (the EF tests say so), but no balance can pay for it.
        let value = check(eip1559(|tx| tx.value = U256::MAX)).expect("statically valid");
        assert_eq!(value.max_cost, None);
        let rich =
            SenderState { balance: U256::MAX, code_hash: KECCAK_EMPTY, ..Default::default() };
        let err = check_against_state(&value, &rich, false).unwrap_err();
        assert_eq!(err, TxError::CostOverflow { sender: key().address(), bits: 256 });
        assert!(err.to_string().starts_with("insufficient funds for gas * price + value"));

        let nonce = check(eip1559(|tx| tx.nonce = u64::MAX)).unwrap_err();
        assert_eq!(nonce.to_string(), "nonce has max value");

        let tx = TxEip7702 {
            chain_id: 1,
            nonce: 0,
            gas_limit: 100_000,
            max_fee_per_gas: 10,
            max_priority_fee_per_gas: 1,
            to: Address::repeat_byte(0xb0),
            value: U256::ZERO,
            access_list: Default::default(),
            authorization_list: vec![],
            input: Bytes::new(),
        };
        let signature = key().sign_hash_sync(&tx.signature_hash()).expect("signs");
        let empty = check(tx.into_signed(signature).into()).unwrap_err();
        assert_eq!(empty.to_string(), "EIP-7702 transaction with empty auth list");
    }

    #[test]
    fn types_follow_the_fork() {
        let london = TxRules { spec: SpecId::BERLIN, ..PRAGUE };
        let err = check_stateless(eip1559(|_| {}), None, &london).unwrap_err();
        assert_eq!(
            err.to_string(),
            "transaction type not supported: type 2 rejected, pool not yet in London"
        );
        assert!(
            check_stateless(eip1559(|_| {}), None, &TxRules { spec: SpecId::LONDON, ..PRAGUE })
                .is_ok()
        );
    }

    #[test]
    fn gas_rules_come_from_revm() {
        let low = check(eip1559(|tx| tx.gas_limit = 20_999)).unwrap_err();
        assert_eq!(low, TxError::IntrinsicGasTooLow { gas: 20_999, intrinsic: 21_000 });
        // 1,000 non-zero bytes: intrinsic 21,000 + 16,000, floor 21,000 + 40,000 (EIP-7623).
        let floor = check(eip1559(|tx| {
            tx.gas_limit = 50_000;
            tx.input = vec![1u8; 1_000].into();
        }))
        .unwrap_err();
        assert_eq!(floor, TxError::FloorDataGas { gas: 50_000, floor: 61_000 });
        let block = check(eip1559(|tx| tx.gas_limit = 30_000_001)).unwrap_err();
        assert_eq!(block, TxError::GasLimitTooHigh { gas: 30_000_001, block_limit: 30_000_000 });
        let osaka = TxRules { spec: SpecId::OSAKA, ..PRAGUE };
        let capped = check_stateless(eip1559(|tx| tx.gas_limit = 20_000_000), None, &osaka);
        assert_eq!(
            capped.unwrap_err(),
            TxError::GasLimitAboveCap { gas: 20_000_000, cap: 1 << 24 }
        );
        let tip = check(eip1559(|tx| tx.max_priority_fee_per_gas = 11)).unwrap_err();
        assert_eq!(tip, TxError::TipAboveFeeCap);
        let chain = check(eip1559(|tx| tx.chain_id = 5)).unwrap_err();
        assert_eq!(chain, TxError::WrongChainId { expected: 1, got: 5 });
    }

    #[test]
    fn a_gas_cost_over_128_bits_is_refused_as_revm_would() {
        // 30M gas at 2^110 wei: fits 256 bits, but revm computes gas * price in 128, so even
        // the largest balance is refused.
        let valid = check(eip1559(|tx| {
            tx.gas_limit = 30_000_000;
            tx.max_fee_per_gas = 1 << 110;
            tx.max_priority_fee_per_gas = 0;
        }))
        .expect("statically valid");
        let rich =
            SenderState { balance: U256::MAX, code_hash: KECCAK_EMPTY, ..Default::default() };
        let err = check_against_state(&valid, &rich, false).unwrap_err();
        assert_eq!(err, TxError::CostOverflow { sender: key().address(), bits: 128 });
    }

    fn legacy(chain_id: Option<u64>, high_s: bool) -> TxEnvelope {
        let tx = TxLegacy {
            chain_id,
            nonce: 0,
            gas_price: 10,
            gas_limit: 21_000,
            to: TxKind::Call(Address::repeat_byte(0xb0)),
            value: U256::ZERO,
            input: Bytes::new(),
        };
        let mut signature = key().sign_hash_sync(&tx.signature_hash()).expect("signs");
        if high_s {
            // (r, n - s) with the parity flipped is the same signature, `s` in the upper half.
            let n = U256::from_be_slice(&alloy_primitives::hex!(
                "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
            ));
            signature = Signature::new(signature.r(), n - signature.s(), !signature.v());
        }
        tx.into_signed(signature).into()
    }

    #[test]
    fn signature_rules_follow_the_fork() {
        let at = |spec| TxRules { spec, ..PRAGUE };
        let high_s = legacy(None, true);
        assert!(check_stateless(high_s.clone(), None, &at(SpecId::FRONTIER)).is_ok());
        let err = check_stateless(high_s, None, &at(SpecId::HOMESTEAD)).unwrap_err();
        assert_eq!(err, TxError::InvalidSignature);
        let eip155 = legacy(Some(1), false);
        let err = check_stateless(eip155.clone(), None, &at(SpecId::TANGERINE)).unwrap_err();
        assert_eq!(err, TxError::InvalidSignature);
        assert!(check_stateless(eip155, None, &at(SpecId::SPURIOUS_DRAGON)).is_ok());
    }

    #[test]
    fn state_rules_follow_revm() {
        let valid = check(eip1559(|_| {})).expect("valid");
        let cost = valid.max_cost.expect("fits");
        let funded = SenderState { nonce: 0, balance: cost, code_hash: KECCAK_EMPTY, code: None };
        assert_eq!(check_against_state(&valid, &funded, false), Ok(()));
        let poor = SenderState { balance: cost - U256::from(1), ..funded.clone() };
        assert!(matches!(
            check_against_state(&valid, &poor, false),
            Err(TxError::InsufficientFunds { .. })
        ));
        let used = SenderState { nonce: 1, ..funded.clone() };
        assert_eq!(
            check_against_state(&valid, &used, false),
            Err(TxError::NonceTooLow { expected: 1, got: 0 })
        );
        let code = Bytes::from_static(&[0x60, 0x00, 0x00]);
        let contract = SenderState {
            code_hash: alloy_primitives::keccak256(&code),
            code: Some(code),
            ..funded
        };
        assert!(matches!(
            check_against_state(&valid, &contract, false),
            Err(TxError::SenderNotEoa { .. })
        ));
        // The node's own (impersonated) transaction may come from code, as in anvil.
        assert_eq!(check_against_state(&valid, &contract, true), Ok(()));
        // An EIP-7702 delegation is not code that stops the account from sending.
        let mut designation = vec![0xef, 0x01, 0x00];
        designation.extend_from_slice(&[0x11; 20]);
        let delegated = SenderState {
            code_hash: alloy_primitives::keccak256(&designation),
            code: Some(designation.into()),
            ..funded
        };
        assert_eq!(check_against_state(&valid, &delegated, false), Ok(()));
    }
}
