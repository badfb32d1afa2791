//! The EIP-1559 base fee rule, in one place for every crate that needs it: the miner's next
//! block, the pool's pending view, eth_feeHistory and friends, eth_simulateV1 and block import.

use alloy_consensus::Header;
use alloy_eips::eip1559::{BaseFeeParams, calc_next_block_base_fee};

/// The base fee of the block after `parent` by EIP-1559 with Ethereum's parameters; `None`
/// after a parent without one (pre-London), where the caller says what applies (0 for a
/// dev-chain view, the initial base fee for the first London block).
pub fn next_base_fee(parent: &Header) -> Option<u64> {
    let base_fee = parent.base_fee_per_gas?;
    Some(calc_next_block_base_fee(
        parent.gas_used,
        parent.gas_limit,
        base_fee,
        BaseFeeParams::ethereum(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of gas limit 30 (target 15) with base fee 1000 that used `gas_used`.
    fn parent(gas_used: u64) -> Header {
        Header { base_fee_per_gas: Some(1_000), gas_used, gas_limit: 30, ..Default::default() }
    }

    #[test]
    fn next_base_fee_follows_eip1559() {
        // A full block raises the base fee by 1/8: 1000 + 1000 * (30 - 15) / 15 / 8.
        assert_eq!(next_base_fee(&parent(30)), Some(1_125));
        assert_eq!(next_base_fee(&parent(15)), Some(1_000), "at the target it stays");
        assert_eq!(next_base_fee(&parent(0)), Some(875), "an empty block lowers it by 1/8");
        assert_eq!(next_base_fee(&Header::default()), None, "no base fee before London");
    }
}
