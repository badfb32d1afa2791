//! Ethereum Foundation TransactionTests (`transaction/` in the conformance data, see
//! `shared/conformance/README.md` section 3) through the pool's own decoder and stateless
//! validator: `hearth_messages::mempool::decode_tx` (what eth_sendRawTransaction decodes with)
//! and `hearth_actors::mempool::check_stateless` (what admission runs before it reads state),
//! under each fork the file has a result for. A valid result must match the sender, the hash
//! (keccak256 of the raw bytes) and the intrinsic gas; an `exception` must be refused, by the
//! decoder or the validator. Every case passes but the ones [`KNOWN_FAILURES`] lists, each
//! with why (a known failure that starts passing fails the test, so the list stays true).

use std::path::{Path, PathBuf};

use alloy_primitives::{Address, hex, keccak256};
use hearth_actors::mempool::{TxRules, check_stateless};
use hearth_messages::mempool::decode_tx;
use revm::primitives::hardfork::SpecId;
use serde_json::Value;

use crate::conformance::shared_dir;

/// Why `TransactionWithHighGasPrice` cannot pass: its gas price is a 31-byte integer. geth
/// keeps fees as big integers; alloy's transaction types and revm's `TxEnv` hold them as
/// `u128`, so the decoder refuses it. Such a transaction would cost over 2^142 wei.
const FEE_OVER_128_BITS: &str = "gas price above 2^128: alloy and revm hold fees as u128";

/// (test name, fork, why) of cases that cannot pass.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[
    ("TransactionWithHighGasPrice", "Frontier", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Homestead", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "EIP150", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "EIP158", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Byzantium", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Constantinople", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "ConstantinopleFix", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Istanbul", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Berlin", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "London", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Paris", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Shanghai", FEE_OVER_128_BITS),
    ("TransactionWithHighGasPrice", "Cancun", FEE_OVER_128_BITS),
];

/// The chain id the tests sign for.
const CHAIN_ID: u64 = 1;

/// revm's fork for a fork key of the fixtures.
fn spec_of(fork: &str) -> SpecId {
    match fork {
        "Frontier" => SpecId::FRONTIER,
        "Homestead" => SpecId::HOMESTEAD,
        "EIP150" => SpecId::TANGERINE,
        "EIP158" => SpecId::SPURIOUS_DRAGON,
        "Byzantium" => SpecId::BYZANTIUM,
        // revm has no pre-fix Constantinople; the two differ only in SSTORE gas (EIP-1283),
        // nothing a transaction's validity depends on.
        "Constantinople" | "ConstantinopleFix" => SpecId::PETERSBURG,
        "Istanbul" => SpecId::ISTANBUL,
        "Berlin" => SpecId::BERLIN,
        "London" => SpecId::LONDON,
        "Paris" | "Merge" => SpecId::MERGE,
        "Shanghai" => SpecId::SHANGHAI,
        "Cancun" => SpecId::CANCUN,
        "Prague" => SpecId::PRAGUE,
        "Osaka" => SpecId::OSAKA,
        other => panic!("unknown fork {other}"),
    }
}

/// Every `.json` file under `dir`, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn hex_u64(value: &Value) -> u64 {
    let s = value.as_str().unwrap_or_else(|| panic!("not a hex string: {value}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Checks one (case, fork) result; `Err` says how it differs.
fn check(raw: &[u8], spec: SpecId, expected: &Value) -> Result<(), String> {
    // No block in these tests: no block gas limit applies.
    let rules =
        TxRules { spec, chain_id: CHAIN_ID, block_gas_limit: u64::MAX, code_size_limit: None };
    let outcome = decode_tx(raw)
        .map_err(|e| format!("decode: {e}"))
        .and_then(|tx| check_stateless(tx, None, &rules).map_err(|e| format!("validate: {e}")));
    match (expected.get("exception"), outcome) {
        (Some(exception), Ok(_)) => Err(format!("accepted, expected {exception}")),
        (Some(_), Err(_)) => Ok(()),
        (None, Err(refusal)) => Err(format!("refused a valid transaction: {refusal}")),
        (None, Ok(valid)) => {
            let want_sender: Address =
                expected["sender"].as_str().and_then(|s| s.parse().ok()).ok_or("bad sender")?;
            let want_hash = expected["hash"].as_str().ok_or("no hash")?;
            let want_gas = hex_u64(&expected["intrinsicGas"]);
            let got_hash = keccak256(raw);
            if valid.pooled.sender != want_sender {
                return Err(format!("sender {} != {want_sender}", valid.pooled.sender));
            }
            if got_hash.to_string() != want_hash.to_lowercase() || valid.pooled.hash != got_hash {
                return Err(format!(
                    "hash: keccak(raw) {got_hash}, decoded {}, want {want_hash}",
                    valid.pooled.hash
                ));
            }
            if valid.intrinsic_gas != want_gas {
                return Err(format!("intrinsic gas {} != {want_gas}", valid.intrinsic_gas));
            }
            Ok(())
        }
    }
}

#[test]
fn conformance_transaction_tests() {
    or_skip!(crate::conformance::conformance_dir());
    let dir = shared_dir().join("transaction");
    let mut ran = 0;
    let mut failures = Vec::new();
    for path in json_files(&dir) {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let cases: serde_json::Map<String, Value> = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not a JSON object: {e}", path.display()));
        for (name, case) in &cases {
            let txbytes = case["txbytes"].as_str().unwrap_or_else(|| panic!("{name}: no txbytes"));
            let raw = hex::decode(txbytes.trim_start_matches("0x"))
                .unwrap_or_else(|e| panic!("{name}: bad txbytes: {e}"));
            let results = case["result"].as_object().unwrap_or_else(|| panic!("{name}: no result"));
            for (fork, expected) in results {
                ran += 1;
                let known = KNOWN_FAILURES.iter().any(|(n, f, _)| n == name && f == fork);
                match (check(&raw, spec_of(fork), expected), known) {
                    (Ok(()), false) | (Err(_), true) => {}
                    (Err(why), false) => failures.push(format!("{name} [{fork}]: {why}")),
                    (Ok(()), true) => failures
                        .push(format!("{name} [{fork}]: listed as a known failure but passes")),
                }
            }
        }
    }
    assert!(ran > 0, "no transaction test ran under {}", dir.display());
    assert!(failures.is_empty(), "{} of {ran} failed:\n{}", failures.len(), failures.join("\n"));
}
