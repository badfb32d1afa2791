//! Dev accounts: keys derived from a mnemonic, as anvil and Hardhat derive them.

use alloy_signer_local::{
    LocalSignerError, MnemonicBuilder, PrivateKeySigner, coins_bip39::English,
};

/// The mnemonic every dev tool defaults to.
pub const DEFAULT_MNEMONIC: &str = "test test test test test test test test test test test junk";

/// The first `count` accounts of `mnemonic` at m/44'/60'/0'/0/i.
pub fn dev_signers(mnemonic: &str, count: u32) -> Result<Vec<PrivateKeySigner>, LocalSignerError> {
    (0..count)
        .map(|i| MnemonicBuilder::<English>::default().phrase(mnemonic).index(i)?.build())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_mnemonic_gives_the_well_known_accounts() {
        let signers = dev_signers(DEFAULT_MNEMONIC, 2).expect("valid mnemonic");
        assert_eq!(signers[0].address().to_string(), "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
        assert_eq!(signers[1].address().to_string(), "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    }
}
