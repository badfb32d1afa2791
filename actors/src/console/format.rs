//! Formatting a console call the way Hardhat's console and anvil print it: a first string
//! argument is a format string (`%s %d %i %o %x %e %<n>e`, `%%` a percent sign) consuming
//! the arguments after it, and arguments left over are appended, space-separated; without a
//! string first, the arguments are printed space-separated. Numbers print in decimal,
//! addresses checksummed, bytes as 0x-hex; a number spec on a non-number prints `NaN`.

use alloy_dyn_abi::{DynSolType, DynSolValue};
use alloy_primitives::{I256, U256};

use super::signatures::arguments;

/// The text of one console call (`None`: not a console call the table knows, or arguments
/// that do not decode as its overload's).
pub fn format_call(payload: &[u8]) -> Option<String> {
    let (_, values) = decode_call(payload)?;
    Some(match values.split_first() {
        Some((DynSolValue::String(spec), rest)) => format_with(spec, rest),
        _ => format_with("", &values),
    })
}

/// A console call's overload (`log(string,uint256)`) and arguments (`None`: not a console
/// call the table knows, or arguments that do not decode as its overload's).
pub fn decode_call(payload: &[u8]) -> Option<(String, Vec<DynSolValue>)> {
    let (selector, data) = payload.split_first_chunk::<4>()?;
    let types = arguments(*selector)?;
    let values = match DynSolType::Tuple(types.to_vec()).abi_decode_params(data).ok()? {
        DynSolValue::Tuple(values) => values,
        _ => return None,
    };
    let names: Vec<String> = types.iter().map(DynSolType::sol_type_name).map(Into::into).collect();
    Some((format!("log({})", names.join(",")), values))
}

/// The most decimal places `%<n>e` takes: a 256-bit number has at most 78 digits.
const MAX_PLACES: usize = 80;

/// How one argument is asked to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spec {
    /// `%s`
    Text,
    /// `%d`
    Number,
    /// `%i`
    Integer,
    /// `%o`
    Object,
    /// `%x`
    Hex,
    /// `%e` (`None`) or `%<n>e`: a number as a decimal fraction of 10^n.
    Exponent(Option<usize>),
}

impl Spec {
    /// The specifier as written, for one that has no argument left.
    fn written(self) -> String {
        match self {
            Self::Text => "%s".into(),
            Self::Number => "%d".into(),
            Self::Integer => "%i".into(),
            Self::Object => "%o".into(),
            Self::Hex => "%x".into(),
            Self::Exponent(None) => "%e".into(),
            Self::Exponent(Some(n)) => format!("%{n}e"),
        }
    }
}

/// `spec` with its specifiers replaced by `values` in order, then the values left appended.
fn format_with(spec: &str, values: &[DynSolValue]) -> String {
    let mut out = String::with_capacity(spec.len());
    let mut values = values.iter();
    let mut rest = spec;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match parse_spec(after) {
            Some((Some(spec), used)) => {
                match values.next() {
                    Some(value) => out.push_str(&show(value, spec)),
                    None => out.push_str(&spec.written()),
                }
                rest = &after[used..];
            }
            // `%%`: one percent sign.
            Some((None, used)) => {
                out.push('%');
                rest = &after[used..];
            }
            // Not a specifier: the `%` is text.
            None => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let mut first = spec.is_empty();
    for value in values {
        if !first {
            out.push(' ');
        }
        first = false;
        out.push_str(&show(value, Spec::Text));
    }
    out
}

/// The specifier at the start of `s` (what follows a `%`) and its length; `Some((None, 1))`
/// for `%%`; `None` when none starts there.
fn parse_spec(s: &str) -> Option<(Option<Spec>, usize)> {
    let spec = match s.chars().next()? {
        's' => Spec::Text,
        'd' => Spec::Number,
        'i' => Spec::Integer,
        'o' => Spec::Object,
        'x' => Spec::Hex,
        'e' => Spec::Exponent(None),
        '%' => return Some((None, 1)),
        c if c.is_ascii_digit() => {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            if s.as_bytes().get(digits) != Some(&b'e') {
                return None;
            }
            // A precision past any 256-bit number's digits is text, not a specifier: the
            // contract chooses it, and `%99999999999e` would otherwise pad a line with that
            // many zeros.
            let places = s[..digits].parse::<usize>().ok().filter(|p| *p <= MAX_PLACES)?;
            return Some((Some(Spec::Exponent(Some(places))), digits + 1));
        }
        _ => return None,
    };
    Some((Some(spec), 1))
}

/// One argument under `spec`.
fn show(value: &DynSolValue, spec: Spec) -> String {
    const NAN: &str = "NaN";
    match value {
        DynSolValue::String(s) => match spec {
            Spec::Text => s.clone(),
            Spec::Object => format!("'{s}'"),
            _ => NAN.into(),
        },
        DynSolValue::Bool(b) => match spec {
            Spec::Text => b.to_string(),
            Spec::Object => format!("'{b}'"),
            Spec::Number => u8::from(*b).to_string(),
            _ => NAN.into(),
        },
        DynSolValue::Uint(n, _) => unsigned(*n, spec),
        DynSolValue::Int(n, _) => signed(*n, spec),
        DynSolValue::Address(a) => match spec {
            Spec::Text | Spec::Hex => a.to_checksum(None),
            Spec::Object => format!("'{}'", a.to_checksum(None)),
            _ => NAN.into(),
        },
        DynSolValue::Bytes(b) => bytes(b, spec),
        DynSolValue::FixedBytes(word, size) => bytes(&word[..*size], spec),
        // The console's overloads take no other type.
        _ => NAN.into(),
    }
}

fn bytes(b: &[u8], spec: Spec) -> String {
    match spec {
        Spec::Text | Spec::Hex => alloy_primitives::hex::encode_prefixed(b),
        Spec::Object => format!("'{}'", alloy_primitives::hex::encode_prefixed(b)),
        _ => "NaN".into(),
    }
}

fn unsigned(n: U256, spec: Spec) -> String {
    match spec {
        Spec::Hex => format!("0x{}", format!("{n:x}").trim_start_matches('0')),
        Spec::Exponent(places) => decimal_fraction("", n, places),
        _ => n.to_string(),
    }
}

fn signed(n: I256, spec: Spec) -> String {
    match spec {
        Spec::Hex => format!("0x{}", format!("{n:x}").trim_start_matches('0')),
        Spec::Exponent(places) => {
            let sign = if n.is_negative() { "-" } else { "" };
            decimal_fraction(sign, n.unsigned_abs(), places)
        }
        _ => n.to_string(),
    }
}

/// `magnitude` as `<int>.<fraction>` of 10^`places` (trailing zeros dropped, no point when
/// none is left); with no places given, in scientific form `<d>.<digits>e<exponent>`.
fn decimal_fraction(sign: &str, magnitude: U256, places: Option<usize>) -> String {
    let digits = magnitude.to_string();
    let (places, suffix) = match places {
        Some(places) => (places, String::new()),
        None => (digits.len() - 1, format!("e{}", digits.len() - 1)),
    };
    let (int, fraction) = if places >= digits.len() {
        ("0".to_owned(), format!("{digits:0>places$}"))
    } else {
        let (int, fraction) = digits.split_at(digits.len() - places);
        (int.to_owned(), fraction.to_owned())
    };
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{sign}{int}{suffix}")
    } else {
        format!("{sign}{int}.{fraction}{suffix}")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use alloy_dyn_abi::DynSolValue as V;
    use alloy_primitives::{Address, keccak256};

    /// The calldata console.sol sends for `log(string)`.
    pub(crate) fn encode_string_call(text: &str) -> alloy_primitives::Bytes {
        call("log(string)", &[V::String(text.into())])
    }

    fn call(signature: &str, args: &[V]) -> alloy_primitives::Bytes {
        let mut data = keccak256(signature.as_bytes())[..4].to_vec();
        data.extend(V::Tuple(args.to_vec()).abi_encode_params());
        data.into()
    }

    fn uint(n: u64) -> V {
        V::Uint(U256::from(n), 256)
    }

    #[test]
    fn format_strings_take_the_arguments_after_them() {
        let cases: Vec<(&str, Vec<V>, &str)> = vec![
            ("log(string,uint256)", vec![V::String("n=%d".into()), uint(7)], "n=7"),
            ("log(string,uint256)", vec![V::String("%s%%".into()), uint(50)], "50%"),
            ("log(string,uint256)", vec![V::String("%x".into()), uint(255)], "0xff"),
            ("log(string,uint256)", vec![V::String("%x".into()), uint(0)], "0x"),
            ("log(string,uint256)", vec![V::String("%o".into()), uint(3)], "3"),
            ("log(string,uint256)", vec![V::String("%e".into()), uint(1500)], "1.5e3"),
            ("log(string,uint256)", vec![V::String("%e".into()), uint(0)], "0e0"),
            (
                "log(string,uint256)",
                vec![V::String("%18e".into()), uint(1_500_000_000_000_000_000)],
                "1.5",
            ),
            ("log(string,uint256)", vec![V::String("%3e".into()), uint(5)], "0.005"),
            // A precision no number needs is text (it would pad with billions of zeros).
            (
                "log(string,uint256)",
                vec![V::String("%99999999999e".into()), uint(5)],
                "%99999999999e 5",
            ),
            ("log(string,uint256)", vec![V::String("%81e".into()), uint(5)], "%81e 5"),
            ("log(string,uint256)", vec![V::String("no spec".into()), uint(1)], "no spec 1"),
            ("log(string,uint256)", vec![V::String("".into()), uint(1)], "1"),
            ("log(string,uint256)", vec![V::String("%s %s".into()), uint(1)], "1 %s"),
            ("log(string,uint256)", vec![V::String("%5x %".into()), uint(1)], "%5x % 1"),
            ("log(string,string)", vec![V::String("%d".into()), V::String("a".into())], "NaN"),
            ("log(string,string)", vec![V::String("%o".into()), V::String("a".into())], "'a'"),
            ("log(string,bool)", vec![V::String("%d".into()), V::Bool(true)], "1"),
            ("log(string,bool)", vec![V::String("%i".into()), V::Bool(true)], "NaN"),
            ("log(uint256,bool)", vec![uint(1), V::Bool(false)], "1 false"),
            ("log(bool)", vec![V::Bool(true)], "true"),
            ("log()", vec![], ""),
        ];
        for (signature, args, expected) in cases {
            let got = format_call(&call(signature, &args)).expect("decodes");
            assert_eq!(got, expected, "{signature} {args:?}");
        }
    }

    #[test]
    fn values_print_as_the_console_prints_them() {
        let address: Address = "0x5fbdb2315678afecb367f032d93f642f64180aa3".parse().unwrap();
        assert_eq!(
            format_call(&call("log(address)", &[V::Address(address)])).unwrap(),
            "0x5FbDB2315678afecb367f032d93F642f64180aa3"
        );
        assert_eq!(
            format_call(&call("log(int256)", &[V::Int(I256::try_from(-1500).unwrap(), 256)]))
                .unwrap(),
            "-1500"
        );
        assert_eq!(
            format_call(&call(
                "log(string,int256)",
                &[V::String("%e".into()), V::Int(I256::try_from(-1500).unwrap(), 256)]
            ))
            .unwrap(),
            "-1.5e3"
        );
        let word = alloy_primitives::B256::with_last_byte(0xab);
        assert_eq!(format_call(&call("log(bytes2)", &[V::FixedBytes(word, 2)])).unwrap().len(), 6);
        assert_eq!(format_call(&call("log(bytes)", &[V::Bytes(vec![1, 2])])).unwrap(), "0x0102");
        // Hardhat's older spelling decodes the same arguments.
        assert_eq!(format_call(&call("log(uint)", &[uint(5)])).unwrap(), "5");
    }

    #[test]
    fn what_is_not_a_console_call_prints_nothing() {
        assert_eq!(format_call(&[]), None);
        assert_eq!(format_call(&[1, 2, 3, 4]), None);
        // log(string) with a truncated argument.
        let mut short = encode_string_call("hello").to_vec();
        short.truncate(40);
        assert_eq!(format_call(&short), None);
    }
}
