//! Why a transaction reverted, in words: Solidity's `Error(string)` as its message,
//! `Panic(uint256)` with the panic code's meaning, a custom error by name and arguments when
//! its ABI is known (`--artifacts`), else as anvil shows what it cannot name.

use std::collections::HashMap;
use std::fmt::Write as _;

use alloy_dyn_abi::{DynSolValue, JsonAbiExt as _};
use alloy_json_abi::{Error, JsonAbi};
use alloy_sol_types::{Panic, Revert, SolError, SolValue};

/// Custom errors known by selector, from the developer's build output.
#[derive(Debug, Default, Clone)]
pub struct KnownErrors {
    by_selector: HashMap<[u8; 4], Vec<Error>>,
}

impl KnownErrors {
    /// Adds the custom errors `abi` declares.
    pub fn add_abi(&mut self, abi: &JsonAbi) {
        for error in abi.errors() {
            let list = self.by_selector.entry(error.selector().0).or_default();
            if !list.contains(error) {
                list.push(error.clone());
            }
        }
    }

    /// How many custom errors are known.
    pub fn len(&self) -> usize {
        self.by_selector.values().map(Vec::len).sum()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.by_selector.is_empty()
    }

    /// `Name(arg, ...)` when `data` is one of the known errors.
    fn name(&self, data: &[u8]) -> Option<String> {
        let (selector, args) = data.split_first_chunk::<4>()?;
        self.by_selector.get(selector)?.iter().find_map(|error| {
            let values = error.abi_decode_input(args).ok()?;
            let args: Vec<String> = values.iter().map(token).collect();
            Some(format!("{}({})", error.name, args.join(", ")))
        })
    }
}

/// The reason `data` (a reverted call's output) gives, as a person reads it.
pub fn revert_reason(data: &[u8], known: &KnownErrors) -> String {
    if let Ok(revert) = Revert::abi_decode(data) {
        return revert.reason;
    }
    if let Ok(panic) = Panic::abi_decode(data) {
        return panic.to_string();
    }
    if let Some(named) = known.name(data) {
        return named;
    }
    if let Ok(text) = String::abi_decode(data)
        && !text.is_empty()
    {
        return text;
    }
    if !data.is_empty() && data.is_ascii() {
        return String::from_utf8_lossy(data).into_owned();
    }
    match data.split_first_chunk::<4>() {
        Some((selector, rest)) => {
            let mut out =
                format!("custom error {}", alloy_primitives::hex::encode_prefixed(selector));
            if !rest.is_empty() {
                out.push_str(": ");
                match std::str::from_utf8(rest) {
                    Ok(text) => out.push_str(text),
                    Err(_) => out.push_str(&alloy_primitives::hex::encode(rest)),
                }
            }
            out
        }
        None if data.is_empty() => "empty revert data".to_owned(),
        None => format!("custom error bytes {}", alloy_primitives::hex::encode_prefixed(data)),
    }
}

/// One decoded argument as a person reads it: numbers in decimal, addresses checksummed,
/// strings quoted, bytes in hex, lists and tuples bracketed.
pub(crate) fn token(value: &DynSolValue) -> String {
    match value {
        DynSolValue::Bool(b) => b.to_string(),
        DynSolValue::Int(n, _) => n.to_string(),
        DynSolValue::Uint(n, _) => n.to_string(),
        DynSolValue::Address(a) => a.to_checksum(None),
        DynSolValue::Function(f) => alloy_primitives::hex::encode_prefixed(f.as_slice()),
        DynSolValue::FixedBytes(word, size) => {
            alloy_primitives::hex::encode_prefixed(&word[..*size])
        }
        DynSolValue::Bytes(b) => alloy_primitives::hex::encode_prefixed(b),
        DynSolValue::String(s) => format!("{s:?}"),
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) => list('[', items, ']'),
        DynSolValue::Tuple(items) => list('(', items, ')'),
        #[allow(unreachable_patterns)]
        _ => String::from("?"),
    }
}

fn list(open: char, items: &[DynSolValue], close: char) -> String {
    let mut out = String::new();
    out.push(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}", token(item));
    }
    out.push(close);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{U256, hex};

    #[test]
    fn reasons_read_as_a_person_reads_them() {
        let known = KnownErrors::default();
        let error = Revert::from("insufficient balance").abi_encode();
        assert_eq!(revert_reason(&error, &known), "insufficient balance");
        let panic = Panic { code: U256::from(0x12) }.abi_encode();
        assert_eq!(revert_reason(&panic, &known), "panic: division or modulo by zero (0x12)");
        assert_eq!(revert_reason(&hex!("deadbeef"), &known), "custom error 0xdeadbeef");
        assert_eq!(revert_reason(&[], &known), "empty revert data");
    }

    #[test]
    fn a_known_custom_error_is_named_with_its_arguments() {
        let abi: JsonAbi = serde_json::from_str(
            r#"[{"type":"error","name":"TooLow","inputs":[{"name":"have","type":"uint256"},{"name":"who","type":"address"}]}]"#,
        )
        .unwrap();
        let mut known = KnownErrors::default();
        known.add_abi(&abi);
        let error = &abi.errors().next().unwrap();
        let mut data = error.selector().to_vec();
        data.extend(
            DynSolValue::Tuple(vec![
                DynSolValue::Uint(U256::from(5), 256),
                DynSolValue::Address(alloy_primitives::Address::repeat_byte(0xab)),
            ])
            .abi_encode_params(),
        );
        assert_eq!(
            revert_reason(&data, &known),
            "TooLow(5, 0xABaBaBaBABabABabAbAbABAbABabababaBaBABaB)"
        );
    }
}
