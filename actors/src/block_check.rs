//! The consensus checks on a received block that need no state: its header against its
//! parent's, and, after execution, each header field execution derives against the block's own.
//! Shared by block import (`hearth import`, the conformance runners) and the Engine API's
//! `engine_newPayload`, so a block is judged by one set of rules wherever it comes from.

use alloy_consensus::Header;
use alloy_eips::eip1559::INITIAL_BASE_FEE;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::U256;
use revm::primitives::hardfork::SpecId;

/// The chain rules a block is imported under: its fork and blob schedule, and the chain id.
#[derive(Debug, Clone, Copy)]
pub struct ForkRules {
    /// EVM rules.
    pub spec: SpecId,
    /// Blob schedule in force.
    pub blob_params: BlobParams,
    /// Chain id.
    pub chain_id: u64,
}

/// A header field execution derives that differs from the block's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} in the header is {header}, execution gives {computed}")]
pub struct Mismatch {
    /// Which field.
    pub field: &'static str,
    /// The header's value.
    pub header: String,
    /// The value execution gives.
    pub computed: String,
}

/// Compares each header field that execution derives with the block's own (`computed` is the
/// header execution built).
pub fn check_derived_fields(header: &Header, computed: &Header) -> Result<(), Mismatch> {
    let compare = |field: &'static str, header: String, computed: String| {
        if header == computed { Ok(()) } else { Err(Mismatch { field, header, computed }) }
    };
    compare("gas used", header.gas_used.to_string(), computed.gas_used.to_string())?;
    compare(
        "transactions root",
        header.transactions_root.to_string(),
        computed.transactions_root.to_string(),
    )?;
    compare("receipts root", header.receipts_root.to_string(), computed.receipts_root.to_string())?;
    compare("logs bloom", header.logs_bloom.to_string(), computed.logs_bloom.to_string())?;
    compare("ommers hash", header.ommers_hash.to_string(), computed.ommers_hash.to_string())?;
    compare(
        "withdrawals root",
        format!("{:?}", header.withdrawals_root),
        format!("{:?}", computed.withdrawals_root),
    )?;
    compare(
        "blob gas used",
        format!("{:?}", header.blob_gas_used),
        format!("{:?}", computed.blob_gas_used),
    )?;
    compare(
        "requests hash",
        format!("{:?}", header.requests_hash),
        format!("{:?}", computed.requests_hash),
    )
}

/// How a block's timestamp must follow its parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Succession {
    /// Strictly later (the consensus rule).
    Later,
    /// Later or the same second: a rollup sequencer (ev-node) makes several blocks a second
    /// (`--engine.same-second-blocks`).
    SameSecondAllowed,
}

/// The consensus rules on a header that need only its parent (no execution); `Err` says
/// which rule it breaks.
pub fn validate_header(
    parent: &Header,
    header: &Header,
    ommers: usize,
    has_withdrawals: bool,
    rules: &ForkRules,
) -> Result<(), String> {
    validate_header_with(parent, header, (ommers, has_withdrawals), rules, Succession::Later)
}

/// [`validate_header`] with the timestamp rule `succession`; `body` is the number of ommers
/// and whether a withdrawals list came with the block.
pub fn validate_header_with(
    parent: &Header,
    header: &Header,
    body: (usize, bool),
    rules: &ForkRules,
    succession: Succession,
) -> Result<(), String> {
    let (ommers, has_withdrawals) = body;
    check_sequence(parent, header, succession)
        .and_then(|()| check_gas_limit(parent, header, rules.spec))
        .and_then(|()| check_fork_fields(header, has_withdrawals, rules.spec))
        .and_then(|()| check_base_fee(parent, header))
        .and_then(|()| check_blobs_and_ommers(parent, header, ommers, rules))
}

/// The rules on a header a dev chain's leader made, as its read replica checks it: what the
/// leader's dev methods choose is the leader's (the base fee `anvil_setNextBlockBaseFeePerGas`
/// sets, the gas limit `evm_setBlockGasLimit` sets, a timestamp in the parent's second), and
/// every other rule holds; everything execution derives is checked after it, as always.
pub fn validate_dev_header(
    parent: &Header,
    header: &Header,
    body: (usize, bool),
    rules: &ForkRules,
) -> Result<(), String> {
    let (ommers, has_withdrawals) = body;
    check_sequence(parent, header, Succession::SameSecondAllowed)
        .and_then(|()| check_fork_fields(header, has_withdrawals, rules.spec))
        .and_then(|()| check_blobs_and_ommers(parent, header, ommers, rules))
}

/// The header follows its parent: the next number, a later timestamp, short extra data, and
/// no more gas used than its limit.
fn check_sequence(parent: &Header, header: &Header, succession: Succession) -> Result<(), String> {
    let number = header.number;
    if number != parent.number + 1 {
        return Err(format!("number {number} does not follow the parent's {}", parent.number));
    }
    let same_second_ok = succession == Succession::SameSecondAllowed;
    if header.timestamp < parent.timestamp
        || (header.timestamp == parent.timestamp && !same_second_ok)
    {
        return Err(format!(
            "timestamp {} is not after the parent's {}",
            header.timestamp, parent.timestamp
        ));
    }
    if header.extra_data.len() > 32 {
        return Err(format!("extra data is {} bytes, at most 32", header.extra_data.len()));
    }
    if header.gas_used > header.gas_limit {
        return Err(format!("gas used {} above gas limit {}", header.gas_used, header.gas_limit));
    }
    Ok(())
}

/// The gas limit moves less than 1/1024 of the parent's, and stays at least 5000.
fn check_gas_limit(parent: &Header, header: &Header, spec: SpecId) -> Result<(), String> {
    // EIP-1559: the first London block doubles the parent's limit into the elastic target.
    let london = spec.is_enabled_in(SpecId::LONDON);
    let parent_limit = if london && parent.base_fee_per_gas.is_none() {
        parent.gas_limit * 2
    } else {
        parent.gas_limit
    };
    if header.gas_limit.abs_diff(parent_limit) >= parent_limit / 1024 || header.gas_limit < 5000 {
        return Err(format!(
            "gas limit {} is out of bounds for the parent's {parent_limit}",
            header.gas_limit
        ));
    }
    Ok(())
}

/// Each field a fork added is present exactly when the fork is active.
fn check_fork_fields(header: &Header, has_withdrawals: bool, spec: SpecId) -> Result<(), String> {
    let presence = |field: &str, present: bool, active: bool| {
        if present == active {
            Ok(())
        } else {
            Err(format!(
                "{field} is {} but the fork {} it",
                if present { "present" } else { "absent" },
                if active { "requires" } else { "forbids" }
            ))
        }
    };
    presence("base fee", header.base_fee_per_gas.is_some(), spec.is_enabled_in(SpecId::LONDON))?;
    let shanghai = spec.is_enabled_in(SpecId::SHANGHAI);
    presence("withdrawals root", header.withdrawals_root.is_some(), shanghai)?;
    presence("withdrawals list", has_withdrawals, shanghai)?;
    let cancun = spec.is_enabled_in(SpecId::CANCUN);
    presence("blob gas used", header.blob_gas_used.is_some(), cancun)?;
    presence("excess blob gas", header.excess_blob_gas.is_some(), cancun)?;
    presence("parent beacon block root", header.parent_beacon_block_root.is_some(), cancun)?;
    presence("requests hash", header.requests_hash.is_some(), spec.is_enabled_in(SpecId::PRAGUE))
}

/// The base fee follows from the parent's (EIP-1559).
fn check_base_fee(parent: &Header, header: &Header) -> Result<(), String> {
    if let Some(base_fee) = header.base_fee_per_gas {
        let expected = hearth_messages::base_fee::next_base_fee(parent).unwrap_or(INITIAL_BASE_FEE);
        if base_fee != expected {
            return Err(format!("base fee {base_fee}, expected {expected}"));
        }
    }
    Ok(())
}

/// The excess blob gas follows from the parent; the blob gas is under the block maximum;
/// before the merge at most 2 ommers, after it no difficulty, nonce or ommers.
fn check_blobs_and_ommers(
    parent: &Header,
    header: &Header,
    ommers: usize,
    rules: &ForkRules,
) -> Result<(), String> {
    let spec = rules.spec;
    if spec.is_enabled_in(SpecId::MERGE) {
        if header.difficulty != U256::ZERO || !header.nonce.is_zero() || ommers != 0 {
            return Err("a post-merge block has difficulty, nonce or ommers".to_owned());
        }
    } else if ommers > 2 {
        return Err(format!("{ommers} ommers, at most 2"));
    }
    if let Some(excess) = header.excess_blob_gas {
        let expected = next_excess_blob_gas(parent, &rules.blob_params, spec);
        if excess != expected {
            return Err(format!("excess blob gas {excess}, expected {expected}"));
        }
    }
    if let Some(used) = header.blob_gas_used
        && used > rules.blob_params.max_blob_gas_per_block()
    {
        return Err(format!("blob gas used {used} above the block maximum"));
    }
    Ok(())
}

/// EIP-4844 (and EIP-7918 from Osaka): the excess blob gas a child of `parent` must carry.
/// A parent from before Cancun counts as zero excess and zero use.
fn next_excess_blob_gas(parent: &Header, params: &BlobParams, spec: SpecId) -> u64 {
    let excess = parent.excess_blob_gas.unwrap_or_default();
    let used = parent.blob_gas_used.unwrap_or_default();
    if spec.is_enabled_in(SpecId::OSAKA) {
        params.next_block_excess_blob_gas_osaka(
            excess,
            used,
            parent.base_fee_per_gas.unwrap_or_default(),
        )
    } else {
        (excess + used).saturating_sub(params.target_blob_gas_per_block())
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::B256;

    use super::*;

    fn rules(spec: SpecId) -> ForkRules {
        ForkRules { spec, blob_params: crate::exec::default_blob_params(spec), chain_id: 1 }
    }

    fn parent() -> Header {
        Header {
            number: 7,
            timestamp: 100,
            gas_limit: 30_000_000,
            gas_used: 15_000_000,
            base_fee_per_gas: Some(1_000_000_000),
            withdrawals_root: Some(B256::ZERO),
            ..Default::default()
        }
    }

    fn child() -> Header {
        Header { number: 8, timestamp: 112, ..parent() }
    }

    #[test]
    fn a_well_formed_shanghai_child_passes() {
        validate_header(&parent(), &child(), 0, true, &rules(SpecId::SHANGHAI)).expect("valid");
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases: Vec<(Header, &str)> = vec![
            (Header { base_fee_per_gas: Some(1), ..child() }, "base fee"),
            (Header { timestamp: 100, ..child() }, "timestamp"),
            (Header { number: 9, ..child() }, "number"),
            (Header { gas_limit: 40_000_000, ..child() }, "gas limit"),
            (Header { withdrawals_root: None, ..child() }, "withdrawals root"),
            (Header { difficulty: U256::from(1), ..child() }, "post-merge"),
        ];
        for (header, word) in cases {
            let err = validate_header(&parent(), &header, 0, true, &rules(SpecId::SHANGHAI))
                .expect_err("must be rejected");
            assert!(err.to_string().contains(word), "{err} should mention {word}");
        }
    }
}
