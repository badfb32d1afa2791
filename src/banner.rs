//! What the node says about itself at startup, in anvil's forms: the banner on stdout (the dev
//! accounts with balances and private keys, the wallet, chain id, base fee, gas limit, genesis
//! timestamp and number, hard fork, where it listens) and the JSON of `--config-out`, which
//! tools read instead of the banner.
//!
//! Everything comes from the running node, so an existing chain reports what it runs: its
//! chain id and rules, its genesis, and the dev accounts' balances at its head.

use std::fmt::Write as _;
use std::net::SocketAddr;

use alloy_primitives::{Address, U256, hex};
use hearth_storage::StorageError;
use serde::Serialize;

use crate::config::StorageMode;
use crate::node::{Node, fork_name};

/// One ether in wei.
const ETHER: u128 = 1_000_000_000_000_000_000;

/// What the banner and `--config-out` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupInfo {
    /// Dev accounts: address, private key, balance at the head (wei).
    pub accounts: Vec<(Address, [u8; 32], U256)>,
    /// Mnemonic of the dev accounts.
    pub mnemonic: String,
    /// Their derivation path (account i is this followed by i).
    pub derivation_path: String,
    /// Chain id the node runs.
    pub chain_id: u64,
    /// Base fee of the genesis block.
    pub base_fee: u64,
    /// The fixed gas price of `--gas-price`, when given.
    pub fixed_gas_price: Option<u128>,
    /// What eth_gasPrice answers now.
    pub gas_price: u128,
    /// Block gas limit; `None` when `--disable-block-gas-limit` lifted it.
    pub gas_limit: Option<u64>,
    /// The gas limit as `--gas-limit` gave it (anvil's `--config-out` reports only that).
    pub gas_limit_given: Option<u64>,
    /// Timestamp of the genesis block.
    pub genesis_timestamp: u64,
    /// Number of the genesis block.
    pub genesis_number: u64,
    /// The hard fork, as `--hardfork` spells it.
    pub hardfork: String,
    /// A new chain or an existing one, and where: one line.
    pub chain: String,
    /// The bound JSON-RPC address.
    pub listening: SocketAddr,
    /// The further addresses it listens on, on the same port.
    pub also: Vec<std::net::IpAddr>,
}

impl StartupInfo {
    /// Reads what `node`, listening on `listening`, runs.
    pub fn of(node: &Node, listening: SocketAddr) -> Result<Self, StorageError> {
        let config = node.config();
        let head = node.chain.head_number().unwrap_or_default();
        // A fork's first block is the upstream's fork block.
        let first = node.fork.as_ref().map_or(0, |fork| fork.block);
        let genesis = node.chain.header(first)?.ok_or(StorageError::Corrupt { what: "genesis" })?;
        let head_header = node.chain.header(head)?.ok_or(StorageError::Corrupt { what: "head" })?;
        let mut accounts = Vec::with_capacity(node.signers.len());
        for signer in node.signers.iter() {
            let address = signer.address();
            let balance = node.chain.account(&address, head)?.map_or(U256::ZERO, |a| a.balance);
            accounts.push((address, signer.credential().to_bytes().into(), balance));
        }
        let place = match &config.storage {
            StorageMode::Disk(path) => format!("in {}", path.display()),
            StorageMode::Ephemeral => "in memory".to_owned(),
        };
        let chain = if node.new_chain {
            format!("new chain {place}")
        } else {
            format!("existing chain {place}, head block {head}")
        };
        let latest_base_fee = u128::from(head_header.base_fee_per_gas.unwrap_or(0));
        Ok(Self {
            accounts,
            mnemonic: config.mnemonic.clone(),
            derivation_path: config.derivation_path.clone(),
            chain_id: config.chain_id,
            base_fee: genesis.base_fee_per_gas.unwrap_or(0),
            fixed_gas_price: config.gas_price,
            gas_price: config.gas_price.unwrap_or(latest_base_fee + hearth_rpc::SUGGESTED_TIP),
            gas_limit: (!config.block_gas_limit_disabled).then_some(config.gas_limit),
            gas_limit_given: config.given.gas_limit.then_some(config.gas_limit),
            genesis_timestamp: genesis.timestamp,
            genesis_number: genesis.number,
            hardfork: fork_name(config.spec),
            chain,
            listening,
            also: node.config().more_http_ips.clone(),
        })
    }

    /// The banner, in anvil's layout (without its logo), ending with the newline after
    /// "Listening on ADDR".
    pub fn banner(&self) -> String {
        let mut s = String::new();
        let section = |s: &mut String, title: &str, body: &str| {
            let _ = write!(s, "\n{title}\n==================\n\n{body}\n");
        };
        let accounts: Vec<String> = self
            .accounts
            .iter()
            .enumerate()
            .map(|(i, (address, _, balance))| format!("({i}) {address} ({} ETH)", ether(*balance)))
            .collect();
        let keys: Vec<String> = self
            .accounts
            .iter()
            .enumerate()
            .map(|(i, (_, key, _))| format!("({i}) {}", hex::encode_prefixed(key)))
            .collect();
        section(&mut s, "Available Accounts", &accounts.join("\n"));
        section(&mut s, "Private Keys", &keys.join("\n"));
        let _ = write!(
            s,
            "\nWallet\n==================\nMnemonic:          {}\nDerivation path:   {}\n\n",
            self.mnemonic, self.derivation_path
        );
        section(&mut s, "Chain ID", &self.chain_id.to_string());
        section(&mut s, "Base Fee", &self.base_fee.to_string());
        if let Some(price) = self.fixed_gas_price {
            section(&mut s, "Gas Price", &price.to_string());
        }
        let gas_limit = self.gas_limit.map_or_else(|| "Disabled".to_owned(), |l| l.to_string());
        section(&mut s, "Gas Limit", &gas_limit);
        section(&mut s, "Genesis Timestamp", &self.genesis_timestamp.to_string());
        section(&mut s, "Genesis Number", &self.genesis_number.to_string());
        section(&mut s, "Hardfork", &self.hardfork);
        section(&mut s, "Chain", &self.chain);
        // Every address, as anvil lists its --host addresses.
        let _ = write!(s, "\nListening on {}", self.listening);
        for ip in &self.also {
            let _ = write!(s, ", {}", std::net::SocketAddr::new(*ip, self.listening.port()));
        }
        let _ = writeln!(s);
        s
    }

    /// The `--config-out` document: anvil's keys, in anvil's order and types (numbers as
    /// decimal strings, addresses in lowercase hex, `gas_limit` null unless `--gas-limit` or
    /// `--disable-block-gas-limit` was given).
    pub fn config_out(&self) -> ConfigOut {
        let gas_limit = match (self.gas_limit, self.gas_limit_given) {
            (None, _) => Some(u64::MAX.to_string()),
            (Some(_), given) => given.map(|l| l.to_string()),
        };
        ConfigOut {
            available_accounts: self.accounts.iter().map(|(a, _, _)| format!("{a:#x}")).collect(),
            private_keys: self
                .accounts
                .iter()
                .map(|(_, key, _)| hex::encode_prefixed(key))
                .collect(),
            wallet: Wallet {
                derivation_path: self.derivation_path.clone(),
                mnemonic: self.mnemonic.clone(),
            },
            base_fee: self.base_fee.to_string(),
            gas_price: self.gas_price.to_string(),
            gas_limit,
            genesis_timestamp: self.genesis_timestamp.to_string(),
        }
    }
}

/// anvil's `--config-out` JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigOut {
    /// Dev account addresses.
    pub available_accounts: Vec<String>,
    /// Their private keys.
    pub private_keys: Vec<String>,
    /// Where they come from.
    pub wallet: Wallet,
    /// Genesis base fee, decimal.
    pub base_fee: String,
    /// Gas price, decimal.
    pub gas_price: String,
    /// Block gas limit as given, decimal, or null.
    pub gas_limit: Option<String>,
    /// Genesis timestamp, decimal.
    pub genesis_timestamp: String,
}

/// The `wallet` object of [`ConfigOut`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wallet {
    /// Derivation path.
    pub derivation_path: String,
    /// Mnemonic.
    pub mnemonic: String,
}

/// `wei` in ether with all 18 decimals, as anvil prints balances.
fn ether(wei: U256) -> String {
    let unit = U256::from(ETHER);
    format!("{}.{:0>18}", wei / unit, (wei % unit).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> StartupInfo {
        StartupInfo {
            accounts: vec![(
                "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".parse().unwrap(),
                [0xac; 32],
                U256::from(10_000u64) * U256::from(ETHER),
            )],
            mnemonic: "test test test test test test test test test test test junk".into(),
            derivation_path: "m/44'/60'/0'/0/".into(),
            chain_id: 31337,
            base_fee: 1_000_000_000,
            fixed_gas_price: None,
            gas_price: 2_000_000_000,
            gas_limit: Some(30_000_000),
            gas_limit_given: None,
            genesis_timestamp: 1_700_000_000,
            genesis_number: 0,
            hardfork: "prague".into(),
            chain: "new chain in memory".into(),
            listening: "127.0.0.1:8545".parse().unwrap(),
            also: Vec::new(),
        }
    }

    #[test]
    fn the_banner_has_anvils_sections() {
        let banner = info().banner();
        let expected = [
            "\nAvailable Accounts\n==================\n\n(0) 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 (10000.000000000000000000 ETH)\n",
            "\nPrivate Keys\n==================\n\n(0) 0xacacacacacacacacacacacacacacacacacacacacacacacacacacacacacacacac\n",
            "\nWallet\n==================\nMnemonic:          test test test test test test test test test test test junk\nDerivation path:   m/44'/60'/0'/0/\n",
            "\nChain ID\n==================\n\n31337\n",
            "\nBase Fee\n==================\n\n1000000000\n",
            "\nGas Limit\n==================\n\n30000000\n",
            "\nGenesis Timestamp\n==================\n\n1700000000\n",
            "\nGenesis Number\n==================\n\n0\n",
            "\nHardfork\n==================\n\nprague\n",
            "\nListening on 127.0.0.1:8545\n",
        ];
        let mut rest = banner.as_str();
        for part in expected {
            let at = rest.find(part).unwrap_or_else(|| panic!("{part:?} in order in {banner}"));
            rest = &rest[at + part.len()..];
        }
        assert!(rest.is_empty(), "the listening line ends the banner: {rest:?}");
        assert!(!banner.contains("Gas Price"), "shown only for a fixed price");
        let mut disabled = info();
        disabled.gas_limit = None;
        disabled.fixed_gas_price = Some(7);
        let banner = disabled.banner();
        assert!(banner.contains("Gas Limit\n==================\n\nDisabled\n"), "{banner}");
        assert!(banner.contains("Gas Price\n==================\n\n7\n"), "{banner}");
    }

    #[test]
    fn config_out_has_anvils_shape() {
        let json = serde_json::to_value(info().config_out()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "available_accounts": ["0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"],
                "private_keys": [format!("0x{}", "ac".repeat(32))],
                "wallet": {
                    "derivation_path": "m/44'/60'/0'/0/",
                    "mnemonic": "test test test test test test test test test test test junk"
                },
                "base_fee": "1000000000",
                "gas_price": "2000000000",
                "gas_limit": null,
                "genesis_timestamp": "1700000000"
            })
        );
        let mut given = info();
        given.gas_limit_given = Some(30_000_000);
        assert_eq!(given.config_out().gas_limit.as_deref(), Some("30000000"));
        given.gas_limit = None;
        assert_eq!(given.config_out().gas_limit.as_deref(), Some("18446744073709551615"));
    }

    #[test]
    fn balances_print_all_eighteen_decimals() {
        assert_eq!(ether(U256::from(5u64)), "0.000000000000000005");
        assert_eq!(
            ether(U256::from(ETHER) * U256::from(3u64) / U256::from(2u64)),
            "1.500000000000000000"
        );
    }
}
