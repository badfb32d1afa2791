//! The console's selectors: every `log(...)` overload console.sol (Hardhat) and forge-std's
//! console / console2 send, with the argument types each decodes to. Built once, from the
//! overloads' rules rather than a list: `log()`; one argument of any console type; two to four
//! of the four common ones; forge-std's `log(string,int256)`; and each of those spelled with
//! `uint` / `int` as Hardhat's older console.sol hashed them (the same arguments, another
//! selector).

use std::collections::HashMap;
use std::sync::LazyLock;

use alloy_dyn_abi::DynSolType;
use alloy_primitives::keccak256;

/// Selector → the argument types of the overload it names.
static TABLE: LazyLock<HashMap<[u8; 4], Vec<DynSolType>>> = LazyLock::new(build);

/// The argument types of the console overload `selector` names, if it is one.
pub(super) fn arguments(selector: [u8; 4]) -> Option<&'static [DynSolType]> {
    TABLE.get(&selector).map(Vec::as_slice)
}

/// The four types the two- to four-argument overloads combine.
const COMMON: [&str; 4] = ["uint256", "string", "bool", "address"];

fn build() -> HashMap<[u8; 4], Vec<DynSolType>> {
    let mut signatures: Vec<Vec<String>> = vec![vec![]];
    let single = ["uint256", "int256", "string", "bool", "address", "bytes"];
    signatures.extend(single.iter().map(|t| vec![(*t).to_owned()]));
    signatures.extend((1..=32).map(|n| vec![format!("bytes{n}")]));
    signatures.push(vec!["string".to_owned(), "int256".to_owned()]);
    for arity in 2..=4u32 {
        for mut n in 0..4usize.pow(arity) {
            let mut types = Vec::new();
            for _ in 0..arity {
                types.push(COMMON[n % 4].to_owned());
                n /= 4;
            }
            signatures.push(types);
        }
    }
    let mut table = HashMap::new();
    for types in signatures {
        let parsed: Vec<DynSolType> =
            types.iter().map(|t| t.parse().expect("a console type parses")).collect();
        let old: Vec<String> = types.iter().map(|t| old_spelling(t).to_owned()).collect();
        for spelling in [&types, &old] {
            let signature = format!("log({})", spelling.join(","));
            table.insert(selector(&signature), parsed.clone());
        }
    }
    table
}

/// How Hardhat's older console.sol spelled a type in the signature it hashed.
fn old_spelling(ty: &str) -> &str {
    match ty {
        "uint256" => "uint",
        "int256" => "int",
        other => other,
    }
}

fn selector(signature: &str) -> [u8; 4] {
    let hash = keccak256(signature.as_bytes());
    [hash[0], hash[1], hash[2], hash[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_overload_and_both_spellings() {
        // 1 + 6 + 32 + 1 + 16 + 64 + 256 overloads, and the ones with uint256/int256 again.
        let with_int = 1 + 1 + 1 + 7 + 37 + 175;
        assert_eq!(TABLE.len(), 376 + with_int);
        // Selectors from solc's method identifiers.
        for (signature, hex) in [
            ("log()", "51973ec9"),
            ("log(string)", "41304fac"),
            ("log(uint256)", "f82c50f1"),
            ("log(uint)", "f5b1bba9"),
            ("log(int)", "4e0c1d1d"),
            ("log(string,uint256)", "b60e72cc"),
            ("log(address,address,address,address)", "665bf134"),
            ("log(bytes32)", "27b7cf85"),
        ] {
            assert_eq!(alloy_primitives::hex::encode(selector(signature)), hex, "{signature}");
            assert!(TABLE.contains_key(&selector(signature)), "{signature}");
        }
    }
}
