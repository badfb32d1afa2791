//! The block-level rules of a fork that block execution, eth_simulateV1 and trace replays all
//! apply: the blob schedule and excess blob gas, the pre-merge reward, the withdrawals root and
//! EIP-6110's deposit requests.

use alloy_consensus::Header;
use alloy_eips::eip4895::Withdrawal;
use alloy_eips::eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{B256, Bytes, Log, U256, keccak256};
use hearth_messages::ExecError;
use hearth_storage::trie::{EMPTY_ROOT, ordered_root};
use revm::primitives::hardfork::SpecId;

/// One ether in wei.
const ETHER: u128 = 1_000_000_000_000_000_000;

/// The blob schedule a fork uses when the caller gives none.
pub fn default_blob_params(spec: SpecId) -> BlobParams {
    if spec.is_enabled_in(SpecId::OSAKA) {
        BlobParams::osaka()
    } else if spec.is_enabled_in(SpecId::PRAGUE) {
        BlobParams::prague()
    } else {
        BlobParams::cancun()
    }
}

/// The pre-merge block reward of a fork (none from the Merge on).
pub fn block_reward(spec: SpecId) -> U256 {
    let ether = if spec.is_enabled_in(SpecId::MERGE) {
        0
    } else if spec.is_enabled_in(SpecId::PETERSBURG) {
        2
    } else if spec.is_enabled_in(SpecId::BYZANTIUM) {
        3
    } else {
        5
    };
    U256::from(ether * ETHER)
}

/// The excess blob gas of a block after `parent`, under `params` (the block's): EIP-4844, with
/// EIP-7918's reserve price from Osaka on (alloy's formula; before Osaka `blob_base_cost` is
/// zero and it is EIP-4844's).
pub(crate) fn excess_blob_gas(parent: &Header, params: &BlobParams) -> u64 {
    params.next_block_excess_blob_gas_osaka(
        parent.excess_blob_gas.unwrap_or_default(),
        parent.blob_gas_used.unwrap_or_default(),
        parent.base_fee_per_gas.unwrap_or_default(),
    )
}

/// The blob base fee update fraction as revm takes it.
pub(crate) fn blob_fraction(params: &BlobParams) -> u64 {
    u64::try_from(params.update_fraction).unwrap_or(u64::MAX)
}

/// The withdrawals root: our trie over (rlp(index), rlp(withdrawal)).
pub(crate) fn withdrawals_root(withdrawals: &[Withdrawal]) -> B256 {
    if withdrawals.is_empty() {
        return EMPTY_ROOT;
    }
    ordered_root(
        withdrawals.iter().enumerate().map(|(i, w)| (alloy_rlp::encode(i), alloy_rlp::encode(w))),
    )
}

/// EIP-6110: the deposit requests in the block's logs, each the concatenation of the five
/// fields of a `DepositEvent` of the deposit contract. A malformed event makes the block
/// invalid, as the consensus specs say.
pub(crate) fn deposit_requests(logs: &[Log]) -> Result<Bytes, ExecError> {
    let event = keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)");
    // (offset word position, expected offset, expected length) of pubkey, withdrawal
    // credentials, amount, signature and index in the ABI encoding.
    const FIELDS: [(usize, usize); 5] = [(160, 48), (256, 32), (320, 8), (384, 96), (512, 8)];
    let mut out = Vec::new();
    for log in logs {
        if log.address != MAINNET_DEPOSIT_CONTRACT_ADDRESS
            || log.data.topics().first() != Some(&event)
        {
            continue;
        }
        let data = log.data.data.as_ref();
        if data.len() != 576 {
            return Err(ExecError::Invalid(format!(
                "deposit event data is {} bytes, expected 576",
                data.len()
            )));
        }
        let word = |at: usize| U256::from_be_slice(&data[at..at + 32]);
        for (i, (offset, length)) in FIELDS.iter().enumerate() {
            if word(i * 32) != U256::from(*offset) || word(*offset) != U256::from(*length) {
                return Err(ExecError::Invalid(format!(
                    "deposit event field {i} has a bad ABI offset or length"
                )));
            }
            out.extend_from_slice(&data[offset + 32..offset + 32 + length]);
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use alloy_primitives::LogData;

    use super::*;

    #[test]
    fn block_reward_follows_the_fork() {
        assert_eq!(block_reward(SpecId::FRONTIER), U256::from(5 * ETHER));
        assert_eq!(block_reward(SpecId::BYZANTIUM), U256::from(3 * ETHER));
        assert_eq!(block_reward(SpecId::PETERSBURG), U256::from(2 * ETHER));
        assert_eq!(block_reward(SpecId::LONDON), U256::from(2 * ETHER));
        assert_eq!(block_reward(SpecId::MERGE), U256::ZERO);
    }

    fn deposit_log(data: Vec<u8>) -> Log {
        let event = keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)");
        Log {
            address: MAINNET_DEPOSIT_CONTRACT_ADDRESS,
            data: LogData::new_unchecked(vec![event], data.into()),
        }
    }

    /// A well-formed DepositEvent payload whose field bytes are 1, 2, 3, 4, 5.
    fn valid_payload() -> Vec<u8> {
        let mut data = vec![0u8; 576];
        for (i, (offset, length)) in
            [(160, 48), (256, 32), (320, 8), (384, 96), (512, 8)].into_iter().enumerate()
        {
            data[i * 32 + 31] = u8::try_from(offset % 256).expect("fits");
            data[i * 32 + 30] = u8::try_from(offset / 256).expect("fits");
            data[offset + 31] = u8::try_from(length).expect("fits");
            data[offset + 32..offset + 32 + length].fill(u8::try_from(i + 1).expect("fits"));
        }
        data
    }

    #[test]
    fn deposit_requests_concatenate_the_fields() {
        let request = deposit_requests(&[deposit_log(valid_payload())]).expect("valid");
        assert_eq!(request.len(), 48 + 32 + 8 + 96 + 8);
        assert_eq!(request[0], 1);
        assert_eq!(request[48], 2);
        assert_eq!(request[request.len() - 1], 5);
    }

    #[test]
    fn malformed_deposit_events_invalidate_the_block() {
        let mut bad_offset = valid_payload();
        bad_offset[31] = 0;
        assert!(deposit_requests(&[deposit_log(bad_offset)]).is_err());
        assert!(deposit_requests(&[deposit_log(vec![0u8; 575])]).is_err());
    }
}
