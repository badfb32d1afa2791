//! Dev accounts: keys derived from a mnemonic, as anvil and Hardhat derive them.

use alloy_signer_local::{
    LocalSignerError, MnemonicBuilder, PrivateKeySigner, coins_bip39::English,
};

/// The mnemonic every dev tool defaults to.
pub const DEFAULT_MNEMONIC: &str = "test test test test test test test test test test test junk";

/// The derivation path dev accounts are derived under; account `i` is this path followed by
/// `i` (anvil's `--derivation-path` default).
pub const DEFAULT_DERIVATION_PATH: &str = "m/44'/60'/0'/0/";

/// The first `count` accounts of `mnemonic` at m/44'/60'/0'/0/i.
pub fn dev_signers(mnemonic: &str, count: u32) -> Result<Vec<PrivateKeySigner>, LocalSignerError> {
    dev_signers_at(mnemonic, DEFAULT_DERIVATION_PATH, count)
}

/// The first `count` accounts of `mnemonic` under `path`: account `i` at `path` with `i`
/// written right after it, as anvil does (so a path should end with `/`).
///
/// The mnemonic's seed (2,048 rounds of HMAC-SHA512) is made once and each account derived from
/// the common parent key, when `path` ends with `/` (account `i` is then the parent's child `i`):
/// made again for every account, it cost about 1 ms each, a second of start for `--accounts
/// 1000`. Another path (the index then extends its last component) takes the long way.
pub fn dev_signers_at(
    mnemonic: &str,
    path: &str,
    count: u32,
) -> Result<Vec<PrivateKeySigner>, LocalSignerError> {
    let builder = |i: u32| {
        MnemonicBuilder::<English>::default().phrase(mnemonic).derivation_path(format!("{path}{i}"))
    };
    // From 2^31 on an index would be a hardened child: the full path refuses it.
    if count == 0 || count > 1 << 31 || !path.ends_with('/') {
        return (0..count).map(|i| builder(i)?.build()).collect();
    }
    let parent = builder(0)?.build_parent_key()?;
    (0..count).map(|i| Ok(parent.child(i)?.signer())).collect()
}

/// Checks that `path` followed by every index below `count` is a usable derivation path,
/// without deriving any key (the first and last index are the ones that can fail: a path that
/// does not parse, or an index that overflows the last component).
pub fn check_derivation_path(path: &str, count: u32) -> Result<(), LocalSignerError> {
    for index in [0, count.saturating_sub(1)] {
        let _parsed =
            MnemonicBuilder::<English>::default().derivation_path(format!("{path}{index}"))?;
    }
    Ok(())
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

    /// Deriving from the parent key made once gives what deriving each account's full path
    /// from the mnemonic gives.
    #[test]
    fn accounts_from_the_parent_key_are_each_full_paths_account() {
        for path in [DEFAULT_DERIVATION_PATH, "m/44'/60'/1'/", "m/44'/60'/0'/0/1"] {
            let fast = dev_signers_at(DEFAULT_MNEMONIC, path, 12).expect("valid");
            for (i, signer) in fast.iter().enumerate() {
                let slow = MnemonicBuilder::<English>::default()
                    .phrase(DEFAULT_MNEMONIC)
                    .derivation_path(format!("{path}{i}"))
                    .and_then(|b| b.build())
                    .expect("valid");
                assert_eq!(signer.address(), slow.address(), "{path}{i}");
            }
        }
        assert!(
            dev_signers_at(DEFAULT_MNEMONIC, DEFAULT_DERIVATION_PATH, 0).expect("ok").is_empty()
        );
    }

    #[test]
    fn another_path_gives_anvils_accounts_for_it() {
        // anvil --derivation-path "m/44'/60'/1'/0/" prints these two first.
        let signers = dev_signers_at(DEFAULT_MNEMONIC, "m/44'/60'/1'/0/", 2).expect("valid");
        assert_eq!(signers[0].address().to_string(), "0x8C8d35429F74ec245F8Ef2f4Fd1e551cFF97d650");
        assert_eq!(signers[1].address().to_string(), "0x40FBBE484b8Ee6139Af08446950B088e10b2306A");
        assert!(check_derivation_path("m/44'/60'/1'/0/", 10).is_ok());
        assert!(check_derivation_path("m/44'/x/", 1).is_err());
        assert!(check_derivation_path("m/44'/60'/0'/0/214748364", 10).is_err(), "index overflows");
    }
}
