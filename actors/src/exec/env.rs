//! The revm environment a request runs in: the block environment of a stored header (with
//! eth_call's block overrides) or of a block to execute, and the transaction environment of a
//! call request or of a signed, pooled transaction.

use alloy_consensus::{Header, Transaction};
use alloy_eips::Typed2718;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, TxKind, U256};
use hearth_messages::executor::{BlockEnvSpec, BlockOverrides, CallRequest, PooledTx};
use revm::context::{BlockEnv, TxEnv};
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::either::Either;
use revm::primitives::hardfork::SpecId;

use hearth_messages::trace::BlockForkRules;
use revm::context::CfgEnv;

use super::config::ExecConfig;
use super::rules::blob_fraction;

/// Applies an eth_call's block overrides to the environment it runs in.
pub(crate) fn apply_block_overrides(env: &mut BlockEnv, o: &BlockOverrides) {
    if let Some(number) = o.number {
        env.number = U256::from(number);
    }
    if let Some(timestamp) = o.timestamp {
        env.timestamp = U256::from(timestamp);
    }
    if let Some(gas_limit) = o.gas_limit {
        env.gas_limit = gas_limit;
    }
    if let Some(base_fee) = o.base_fee {
        env.basefee = base_fee;
    }
    if let Some(coinbase) = o.coinbase {
        env.beneficiary = coinbase;
    }
    if let Some(prevrandao) = o.prevrandao {
        env.prevrandao = Some(prevrandao);
    }
}

/// The block environment a call at stored block `header` sees: that block's own header, with
/// its blob gas price under `blob_params` (the block's own fork's schedule).
pub(crate) fn block_env_of(header: &Header, blob_params: &BlobParams) -> BlockEnv {
    BlockEnv {
        number: U256::from(header.number),
        beneficiary: header.beneficiary,
        timestamp: U256::from(header.timestamp),
        gas_limit: header.gas_limit,
        basefee: header.base_fee_per_gas.unwrap_or_default(),
        difficulty: header.difficulty,
        prevrandao: Some(header.mix_hash),
        blob_excess_gas_and_price: Some(BlobExcessGasAndPrice::new(
            header.excess_blob_gas.unwrap_or_default(),
            blob_fraction(blob_params),
        )),
        ..Default::default()
    }
}

/// The revm transaction eth_call runs for `request`. Its type follows from the fields given,
/// as geth's `ToMessage` decides: authorizations make a type-4 transaction, blob hashes a
/// type-3 one (both with dynamic fees), a fee cap a type-2 one, an access list a type-1 one.
pub(crate) fn call_tx_env(request: &CallRequest, gas: u64, chain_id: u64) -> TxEnv {
    // A gas price given for a dynamic-fee type is both its caps, as geth runs such a call.
    let dynamic = Some(request.max_priority_fee_per_gas.or(request.gas_price).unwrap_or(0));
    let max_fee = request.max_fee_per_gas.or(request.gas_price).unwrap_or(0);
    let legacy_type = if request.access_list.is_some() { 1 } else { 0 };
    let (tx_type, gas_price, priority) = if request.authorization_list.is_some() {
        (4, max_fee, dynamic)
    } else if request.blob_versioned_hashes.is_some() {
        (3, max_fee, dynamic)
    } else {
        match (request.max_fee_per_gas, request.gas_price) {
            (Some(max_fee), _) => (2, max_fee, dynamic),
            (None, Some(price)) => (legacy_type, price, None),
            (None, None) => (legacy_type, 0, None),
        }
    };
    TxEnv {
        tx_type,
        caller: request.from.unwrap_or(Address::ZERO),
        gas_limit: gas,
        gas_price,
        kind: request.to.map_or(TxKind::Create, TxKind::Call),
        value: request.value.unwrap_or_default(),
        data: request.input.clone(),
        nonce: request.nonce.unwrap_or_default(),
        // The call's own chainId when it names one (a mismatch is refused, as geth and anvil
        // refuse it), else the node's.
        chain_id: Some(request.chain_id.unwrap_or(chain_id)),
        access_list: request.access_list.clone().unwrap_or_default(),
        gas_priority_fee: priority,
        blob_hashes: request.blob_versioned_hashes.clone().unwrap_or_default(),
        max_fee_per_blob_gas: request.max_fee_per_blob_gas.unwrap_or_default(),
        authorization_list: request
            .authorization_list
            .iter()
            .flatten()
            .cloned()
            .map(Either::Left)
            .collect(),
    }
}

/// The revm transaction for a signed, pooled transaction.
pub(crate) fn tx_env(pooled: &PooledTx) -> TxEnv {
    let tx = pooled.tx.as_ref();
    TxEnv {
        tx_type: tx.ty(),
        caller: pooled.sender,
        gas_limit: tx.gas_limit(),
        gas_price: tx.max_fee_per_gas(),
        kind: tx.kind(),
        value: tx.value(),
        data: tx.input().clone(),
        nonce: tx.nonce(),
        chain_id: tx.chain_id(),
        access_list: tx.access_list().cloned().unwrap_or_default(),
        gas_priority_fee: tx.max_priority_fee_per_gas(),
        blob_hashes: tx.blob_versioned_hashes().map(<[B256]>::to_vec).unwrap_or_default(),
        max_fee_per_blob_gas: tx.max_fee_per_blob_gas().unwrap_or_default(),
        authorization_list: tx
            .authorization_list()
            .map(|list| list.iter().cloned().map(Either::Left).collect())
            .unwrap_or_default(),
    }
}

/// revm's block environment for `env` under `spec`.
pub(crate) fn block_env(env: &BlockEnvSpec, spec: SpecId, params: &BlobParams) -> BlockEnv {
    let merged = spec.is_enabled_in(SpecId::MERGE);
    BlockEnv {
        number: U256::from(env.number),
        beneficiary: env.coinbase,
        timestamp: U256::from(env.timestamp),
        gas_limit: env.gas_limit,
        basefee: if spec.is_enabled_in(SpecId::LONDON) { env.base_fee } else { 0 },
        difficulty: env.difficulty,
        prevrandao: merged.then_some(env.prevrandao),
        blob_excess_gas_and_price: spec.is_enabled_in(SpecId::CANCUN).then(|| {
            BlobExcessGasAndPrice::new(
                env.excess_blob_gas.unwrap_or_default(),
                blob_fraction(params),
            )
        }),
        ..Default::default()
    }
}

/// The EVM configuration under `rules`: the fork, its blob schedule, the chain id and the code
/// size limit.
pub(crate) fn cfg_under(config: &ExecConfig, rules: &BlockForkRules) -> CfgEnv {
    let mut cfg = CfgEnv::new_with_spec(rules.spec);
    cfg.chain_id = config.chain_id.get();
    cfg.limit_contract_code_size = config.code_size_limit;
    if rules.spec.is_enabled_in(SpecId::CANCUN) {
        cfg.max_blobs_per_tx = Some(rules.blob_params.max_blobs_per_tx);
        cfg.blob_base_fee_update_fraction = Some(blob_fraction(&rules.blob_params));
    }
    cfg
}

/// The configuration, block environment and transaction eth_call runs `request` with (`gas`
/// already capped) at block `header` under `rules`.
pub(crate) fn call_env_under(
    config: &ExecConfig,
    rules: &BlockForkRules,
    request: &CallRequest,
    header: &Header,
    gas: u64,
) -> (CfgEnv, BlockEnv, TxEnv) {
    let mut cfg = cfg_under(config, rules);
    // eth_call semantics, as geth: no fee unless a price is given, no nonce check unless a
    // nonce is given, calls may come from contract addresses, and the gas cap (not the block's
    // gas limit) bounds the call.
    let priced = request.gas_price.is_some() || request.max_fee_per_gas.is_some();
    cfg.disable_base_fee = !priced;
    cfg.disable_nonce_check = request.nonce.is_none();
    cfg.disable_eip3607 = true;
    cfg.disable_block_gas_limit = true;
    // A call that names a chainId must name this chain's (geth, anvil); one that names none
    // runs as this chain's.
    cfg.tx_chain_id_check = request.chain_id.is_some();
    let tx = call_tx_env(request, gas, cfg.chain_id);
    let mut block_env = block_env_of(header, &rules.blob_params);
    if !priced {
        // geth runs an unpriced call with a zero base fee, so BASEFEE reads 0 there.
        block_env.basefee = 0;
    }
    if let Some(o) = &request.block_overrides {
        apply_block_overrides(&mut block_env, o);
    }
    (cfg, block_env, tx)
}
