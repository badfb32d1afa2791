//! Strict decoding of JSON-RPC params into typed values.
//!
//! We follow geth's rules (execution-apis): quantities are `0x`-prefixed hex without leading
//! zeros, data is `0x`-prefixed hex of even length, addresses are exactly 20 bytes, hashes
//! exactly 32. A value that breaks a rule is a `-32602` naming the argument and the problem,
//! never a silent zero. Each method reads its positional arguments through [`Params`], and every
//! argument type implements [`FromParam`], which decodes one `serde_json::Value` by hand so the
//! error says exactly what is wrong.

use alloy_eips::eip2930::AccessList;
use alloy_eips::eip7702::SignedAuthorization;
use alloy_primitives::{Address, B128, B256, Bytes, U256, hex};
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag, Filter, FilterBlockOption, FilterSet, Topic};
use hearth_messages::executor::{AccountOverride, BlockOverrides, CallRequest, StateOverrides};
use serde_json::{Map, Value};

use crate::core::RpcError;

/// The arguments of one request. Core methods take positional arguments only; by-name
/// arguments are kept as given so extension methods can read them.
#[derive(Debug, Clone)]
pub enum Params {
    /// `params` was an array (or absent, or `null`: no arguments).
    Positional(Vec<Value>),
    /// `params` was an object.
    ByName(Map<String, Value>),
}

impl Params {
    /// Takes the request's `params` member, which the envelope checked is absent, `null`, an
    /// array or an object.
    pub(crate) fn new(raw: Option<Value>) -> Self {
        match raw {
            Some(Value::Array(values)) => Self::Positional(values),
            Some(Value::Object(map)) => Self::ByName(map),
            // Absent or null; scalars never get here (the envelope answers -32600).
            _ => Self::Positional(Vec::new()),
        }
    }

    /// The positional arguments; by-name params are valid JSON-RPC but no core method defines
    /// names for its arguments (geth answers the same).
    fn positional(&self) -> Result<&[Value], RpcError> {
        match self {
            Self::Positional(values) => Ok(values),
            Self::ByName(_) => Err(RpcError::InvalidParams(
                "non-array args: params must be an array of positional arguments".into(),
            )),
        }
    }

    /// Fails when more than `max` arguments were given.
    pub(crate) fn at_most(&self, max: usize) -> Result<(), RpcError> {
        if self.positional()?.len() > max {
            return Err(RpcError::InvalidParams(format!("too many arguments, want at most {max}")));
        }
        Ok(())
    }

    /// Argument `index`, which must be present and not `null`.
    pub(crate) fn required<T: FromParam>(&self, index: usize) -> Result<T, RpcError> {
        self.optional(index)?.ok_or_else(|| {
            RpcError::InvalidParams(format!("missing value for required argument {index}"))
        })
    }

    /// Argument `index`, or `None` when it is absent or `null`.
    pub(crate) fn optional<T: FromParam>(&self, index: usize) -> Result<Option<T>, RpcError> {
        match self.positional()?.get(index) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::from_param(value).map(Some).map_err(|reason| {
                RpcError::InvalidParams(format!("invalid argument {index}: {reason}"))
            }),
        }
    }

    /// The arguments as given, for extension methods (an empty array when there were none).
    pub(crate) fn into_value(self) -> Value {
        match self {
            Self::Positional(values) => Value::Array(values),
            Self::ByName(map) => Value::Object(map),
        }
    }
}

/// A type that can be decoded from one JSON-RPC argument (or one field of an object argument).
pub trait FromParam: Sized {
    /// Decodes `value`, or says what is wrong with it.
    fn from_param(value: &Value) -> Result<Self, String>;
}

/// One positional argument of a method's typed params: `T` is required, `Option<T>` may be
/// absent or `null`.
pub trait Arg: Sized {
    /// Argument `index` of `params`.
    fn arg(params: &Params, index: usize) -> Result<Self, RpcError>;
}

impl<T: FromParam> Arg for T {
    fn arg(params: &Params, index: usize) -> Result<Self, RpcError> {
        params.required(index)
    }
}

impl<T: FromParam> Arg for Option<T> {
    fn arg(params: &Params, index: usize) -> Result<Self, RpcError> {
        params.optional(index)
    }
}

/// A method's params decoded at once, as a tuple of [`Arg`]s: `(Address, Option<BlockId>)`
/// takes one or two arguments, refuses a third ("too many arguments, want at most 2"), and
/// names the argument that does not decode, with the standard -32602.
pub trait FromParams: Sized {
    /// Decodes `params`.
    fn from_params(params: &Params) -> Result<Self, RpcError>;
}

macro_rules! tuple_params {
    ($count:literal; $($arg:ident $index:tt),*) => {
        impl<$($arg: Arg),*> FromParams for ($($arg,)*) {
            #[allow(unused_variables)]
            fn from_params(params: &Params) -> Result<Self, RpcError> {
                params.at_most($count)?;
                Ok(($($arg::arg(params, $index)?,)*))
            }
        }
    };
}

tuple_params!(0;);
tuple_params!(1; A 0);
tuple_params!(2; A 0, B 1);
tuple_params!(3; A 0, B 1, C 2);
tuple_params!(4; A 0, B 1, C 2, D 3);

impl Params {
    /// The params as the handler's typed arguments ([`FromParams`]).
    pub(crate) fn decode<T: FromParams>(&self) -> Result<T, RpcError> {
        T::from_params(self)
    }
}

// ---- scalars -------------------------------------------------------------------------------

/// The string inside `value`, or an error naming what the JSON was instead.
fn expect_str<'a>(value: &'a Value, expected: &str) -> Result<&'a str, String> {
    value.as_str().ok_or_else(|| format!("expected {expected}, got {}", json_kind(value)))
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The hex digits after a mandatory `0x` (or `0X`, as geth also accepts).
fn strip_hex_prefix(s: &str) -> Result<&str, String> {
    s.strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .ok_or_else(|| "hex string without 0x prefix".to_owned())
}

/// A quantity: `0x` then 1 to 64 hex digits, no leading zero unless the value is `0x0`.
pub(crate) fn parse_quantity(s: &str) -> Result<U256, String> {
    let digits = strip_hex_prefix(s)?;
    if digits.is_empty() {
        return Err("hex string \"0x\" has no digits".to_owned());
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err("hex number with leading zero digits".to_owned());
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("invalid hex string".to_owned());
    }
    if digits.len() > 64 {
        return Err("hex number > 256 bits".to_owned());
    }
    U256::from_str_radix(digits, 16).map_err(|e| format!("invalid hex number: {e}"))
}

/// Data: `0x` then an even number of hex digits (possibly none).
pub(crate) fn parse_data(s: &str) -> Result<Bytes, String> {
    let digits = strip_hex_prefix(s)?;
    if digits.len() % 2 != 0 {
        return Err("hex string of odd length".to_owned());
    }
    hex::decode(digits).map(Bytes::from).map_err(|_| "invalid hex string".to_owned())
}

/// Exactly `N` bytes of data; `what` names the type in the error.
fn parse_fixed<const N: usize>(s: &str, what: &str) -> Result<[u8; N], String> {
    let digits = strip_hex_prefix(s)?;
    if digits.len() != 2 * N {
        return Err(format!("hex string has length {}, want {} for {what}", digits.len(), 2 * N));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).map_err(|_| "invalid hex string".to_owned())?;
    Ok(out)
}

impl FromParam for U256 {
    fn from_param(value: &Value) -> Result<Self, String> {
        parse_quantity(expect_str(value, "a hex quantity string")?)
    }
}

impl FromParam for u64 {
    fn from_param(value: &Value) -> Result<Self, String> {
        let n = U256::from_param(value)?;
        Self::try_from(n).map_err(|_| "hex number > 64 bits".to_owned())
    }
}

impl FromParam for u128 {
    fn from_param(value: &Value) -> Result<Self, String> {
        let n = U256::from_param(value)?;
        Self::try_from(n).map_err(|_| "hex number > 128 bits".to_owned())
    }
}

impl FromParam for Address {
    fn from_param(value: &Value) -> Result<Self, String> {
        parse_fixed::<20>(expect_str(value, "an address string")?, "address").map(Self::from)
    }
}

impl FromParam for B256 {
    fn from_param(value: &Value) -> Result<Self, String> {
        parse_fixed::<32>(expect_str(value, "a 32-byte hash string")?, "hash").map(Self::from)
    }
}

impl FromParam for alloy_primitives::B64 {
    fn from_param(value: &Value) -> Result<Self, String> {
        parse_fixed::<8>(expect_str(value, "an 8-byte payload id string")?, "payload id")
            .map(Self::from)
    }
}

impl FromParam for B128 {
    fn from_param(value: &Value) -> Result<Self, String> {
        parse_fixed::<16>(expect_str(value, "a 16-byte subscription id string")?, "subscription id")
            .map(Self::from)
    }
}

impl FromParam for String {
    fn from_param(value: &Value) -> Result<Self, String> {
        expect_str(value, "a string").map(str::to_owned)
    }
}

impl FromParam for Bytes {
    fn from_param(value: &Value) -> Result<Self, String> {
        parse_data(expect_str(value, "a hex data string")?)
    }
}

impl FromParam for Value {
    fn from_param(value: &Value) -> Result<Self, String> {
        Ok(value.clone())
    }
}

impl FromParam for bool {
    fn from_param(value: &Value) -> Result<Self, String> {
        value.as_bool().ok_or_else(|| format!("expected a boolean, got {}", json_kind(value)))
    }
}

impl FromParam for AccessList {
    fn from_param(value: &Value) -> Result<Self, String> {
        serde_json::from_value(value.clone()).map_err(|e| format!("invalid access list: {e}"))
    }
}

/// A storage slot for eth_getStorageAt: a quantity or 32-byte data. Like geth we accept any
/// 1 to 64 hex digits, leading zeros included, and read them as a big-endian number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StorageSlot(pub(crate) U256);

impl FromParam for StorageSlot {
    fn from_param(value: &Value) -> Result<Self, String> {
        let digits = strip_hex_prefix(expect_str(value, "a hex storage slot")?)?;
        if digits.is_empty() || digits.len() > 64 {
            return Err(format!("hex string has length {}, want 1 to 64 for a slot", digits.len()));
        }
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("invalid hex string".to_owned());
        }
        U256::from_str_radix(digits, 16).map(Self).map_err(|e| format!("invalid slot: {e}"))
    }
}

/// A count that geth reads as "hex or decimal" (eth_feeHistory blockCount, evm_mine): a JSON
/// integer, a decimal string, or a strict hex quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HexOrDecimal(pub(crate) u64);

impl FromParam for HexOrDecimal {
    fn from_param(value: &Value) -> Result<Self, String> {
        match value {
            Value::Number(n) => n
                .as_u64()
                .map(Self)
                .ok_or_else(|| format!("expected a non-negative integer, got {n}")),
            Value::String(s) if s.starts_with("0x") || s.starts_with("0X") => {
                u64::from_param(value).map(Self)
            }
            Value::String(s) => s.parse().map(Self).map_err(|_| format!("invalid number {s:?}")),
            other => Err(format!("expected a number, got {}", json_kind(other))),
        }
    }
}

/// A JSON array of one kind of argument.
impl<T: FromParam> FromParam for Vec<T> {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items = value
            .as_array()
            .ok_or_else(|| format!("expected an array, got {}", json_kind(value)))?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| T::from_param(item).map_err(|e| format!("item {i}: {e}")))
            .collect()
    }
}

// ---- blocks --------------------------------------------------------------------------------

/// A block number or tag: "latest" | "earliest" | "pending" | "safe" | "finalized" | quantity.
/// A block number or tag; a plain JSON integer is taken as a number too, as anvil takes it
/// (clients that pass a JS number, `eth_getBlockByNumber(5, false)`, work against it).
impl FromParam for BlockNumberOrTag {
    fn from_param(value: &Value) -> Result<Self, String> {
        if let Value::Number(n) = value {
            return n.as_u64().map(Self::Number).ok_or_else(|| {
                format!("expected a block number or tag, got the number {n} (not a u64)")
            });
        }
        let s = expect_str(value, "a block number or tag")?;
        Ok(match s {
            "latest" => Self::Latest,
            "earliest" => Self::Earliest,
            "pending" => Self::Pending,
            "safe" => Self::Safe,
            "finalized" => Self::Finalized,
            _ => Self::Number(parse_block_number(s)?),
        })
    }
}

/// A block number as anvil and Hardhat take it: a hex quantity, leading zeros allowed (`0x08`:
/// test suites written against them send such numbers; geth refuses them, and so do Hearth's
/// other quantities).
fn parse_block_number(s: &str) -> Result<u64, String> {
    let digits = strip_hex_prefix(s)?;
    if digits.is_empty() {
        return Err("hex string \"0x\" has no digits".to_owned());
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("invalid hex string".to_owned());
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 16 {
        return Err("hex number > 64 bits".to_owned());
    }
    if significant.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(significant, 16).map_err(|e| format!("invalid hex number: {e}"))
}

/// A block for a state query: a number or tag, a bare 32-byte hash (geth accepts it), or an
/// EIP-1898 object `{"blockNumber": ..}` / `{"blockHash": .., "requireCanonical": ..}`.
impl FromParam for BlockId {
    fn from_param(value: &Value) -> Result<Self, String> {
        match value {
            // 0x + 64 digits is a hash; no block number is that long.
            Value::String(s) if s.len() == 66 => B256::from_param(value).map(Self::hash),
            Value::String(_) | Value::Number(_) => {
                BlockNumberOrTag::from_param(value).map(Self::Number)
            }
            Value::Object(map) => {
                let fields = Fields(map);
                let number: Option<BlockNumberOrTag> = fields.get("blockNumber")?;
                let hash: Option<B256> = fields.get("blockHash")?;
                let require_canonical: Option<bool> = fields.get("requireCanonical")?;
                match (number, hash) {
                    (Some(_), Some(_)) => Err("cannot specify both blockHash and blockNumber, \
                                               choose one or the other"
                        .to_owned()),
                    (Some(number), None) => Ok(Self::Number(number)),
                    (None, Some(hash)) => Ok(Self::Hash(alloy_eips::RpcBlockHash {
                        block_hash: hash,
                        require_canonical,
                    })),
                    (None, None) => Err("either blockHash or blockNumber must be given".to_owned()),
                }
            }
            other => Err(format!("expected a block number, tag or hash, got {}", json_kind(other))),
        }
    }
}

// ---- objects -------------------------------------------------------------------------------

/// The members of an object argument, decoded one by one so errors name the field.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    /// Field `name`, `None` when absent or `null`.
    fn get<T: FromParam>(&self, name: &str) -> Result<Option<T>, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::from_param(value).map(Some).map_err(|e| format!("field {name}: {e}")),
        }
    }
}

fn expect_object<'a>(value: &'a Value, what: &str) -> Result<Fields<'a>, String> {
    value
        .as_object()
        .map(Fields)
        .ok_or_else(|| format!("expected {what}, got {}", json_kind(value)))
}

/// A transaction object for eth_call, eth_estimateGas, eth_sendTransaction and the methods
/// built on them (execution-apis' `GenericTransaction`).
///
/// We decode it ourselves rather than through `TransactionRequest`'s serde so that every field
/// gets the strict hex rules above (serde's quantity decoding accepts leading zeros), and a
/// member we do not know is an error naming it rather than dropped: a misspelt `maxFeePerGas`
/// silently ignored would run a different transaction than the caller meant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TxObject {
    /// `from`.
    pub(crate) from: Option<Address>,
    /// `to`; absent or `null` creates a contract.
    pub(crate) to: Option<Address>,
    /// `gas`.
    pub(crate) gas: Option<u64>,
    /// `gasPrice` (legacy and EIP-2930).
    pub(crate) gas_price: Option<u128>,
    /// `maxFeePerGas` (EIP-1559).
    pub(crate) max_fee_per_gas: Option<u128>,
    /// `maxPriorityFeePerGas` (EIP-1559).
    pub(crate) max_priority_fee_per_gas: Option<u128>,
    /// `value`.
    pub(crate) value: Option<U256>,
    /// `input`, or its older name `data`.
    pub(crate) input: Option<Bytes>,
    /// `nonce`.
    pub(crate) nonce: Option<u64>,
    /// `accessList`.
    pub(crate) access_list: Option<AccessList>,
    /// `chainId`.
    pub(crate) chain_id: Option<u64>,
    /// `authorizationList` (EIP-7702): signed authorizations; makes a type-4 transaction.
    pub(crate) authorization_list: Option<Vec<SignedAuthorization>>,
    /// `blobVersionedHashes` (EIP-4844): makes a blob transaction.
    pub(crate) blob_versioned_hashes: Option<Vec<B256>>,
    /// `maxFeePerBlobGas` (EIP-4844).
    pub(crate) max_fee_per_blob_gas: Option<u128>,
    /// `blobs`: only decoded, so that a request carrying them is understood; no method here
    /// builds a blob transaction from blobs (see [`TxObject::refuse_blobs`]).
    pub(crate) blobs: Option<Vec<Bytes>>,
}

/// The members a transaction object may have: execution-apis' `GenericTransaction` (with
/// `data`, the older name of `input`), which is also what viem's and ethers' request
/// formatters send. `type` must be a quantity (or a plain JSON integer, which web3.py sends and
/// anvil takes), and is otherwise a hint, as in geth: the type
/// follows from the fee, blob and authorization fields (hive's Prague snapshot estimates a blob
/// call sent with `"type": "0x5"`, which geth answers).
pub(crate) const TX_OBJECT_FIELDS: [&str; 17] = [
    "type",
    "nonce",
    "to",
    "from",
    "gas",
    "value",
    "input",
    "data",
    "gasPrice",
    "maxPriorityFeePerGas",
    "maxFeePerGas",
    "maxFeePerBlobGas",
    "accessList",
    "blobVersionedHashes",
    "blobs",
    "chainId",
    "authorizationList",
];

impl FromParam for TxObject {
    fn from_param(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("expected a transaction object, got {}", json_kind(value)))?;
        // One walk over the members, each put in its slot of `TX_OBJECT_FIELDS`: a lookup per
        // known field would hash all 17 names into the object's map for every eth_call (about
        // 4,000 instructions of a balanceOf call's 100,000; BENCHMARKS.md). The fields are
        // then decoded in the fixed order below, so the first error reported does not depend
        // on the order the caller wrote them in.
        let slots = tx_object_slots(object)?;
        // The member named `name` (one of `TX_OBJECT_FIELDS`), `None` when absent or `null`.
        let get = |name: &str| -> Option<&Value> {
            let index = TX_OBJECT_FIELDS.iter().position(|known| *known == name);
            index.and_then(|index| slots[index]).filter(|member| !member.is_null())
        };
        fn decode<T: FromParam>(name: &str, member: Option<&Value>) -> Result<Option<T>, String> {
            member
                .map(|member| T::from_param(member).map_err(|e| format!("field {name}: {e}")))
                .transpose()
        }
        // A JSON integer too: web3.py's `build_transaction` sends `"type": 1` to estimate an
        // EIP-2930 transaction, which anvil takes (and geth ignores).
        let _hint: Option<u64> = match get("type") {
            Some(Value::Number(n)) => Some(n.as_u64().ok_or_else(|| {
                format!("field type: expected a transaction type, got the number {n}")
            })?),
            other => decode("type", other)?,
        };
        let input: Option<Bytes> = decode("input", get("input"))?;
        let data: Option<Bytes> = decode("data", get("data"))?;
        let input = match (input, data) {
            (Some(input), Some(data)) if input != data => {
                return Err("both \"data\" and \"input\" are set and not equal. \
                            Please use \"input\" to pass transaction call data"
                    .to_owned());
            }
            (input, data) => input.or(data),
        };
        let object = Self {
            from: decode("from", get("from"))?,
            to: decode("to", get("to"))?,
            gas: decode("gas", get("gas"))?,
            gas_price: decode("gasPrice", get("gasPrice"))?,
            max_fee_per_gas: decode("maxFeePerGas", get("maxFeePerGas"))?,
            max_priority_fee_per_gas: decode("maxPriorityFeePerGas", get("maxPriorityFeePerGas"))?,
            value: decode("value", get("value"))?,
            input,
            nonce: decode("nonce", get("nonce"))?,
            access_list: decode("accessList", get("accessList"))?,
            chain_id: decode("chainId", get("chainId"))?,
            authorization_list: decode::<Vec<Authorization>>(
                "authorizationList",
                get("authorizationList"),
            )?
            .map(|list| list.into_iter().map(|a| a.0).collect()),
            blob_versioned_hashes: decode("blobVersionedHashes", get("blobVersionedHashes"))?,
            max_fee_per_blob_gas: decode("maxFeePerBlobGas", get("maxFeePerBlobGas"))?,
            blobs: decode("blobs", get("blobs"))?,
        };
        object.check_fields_agree()?;
        Ok(object)
    }
}

/// The members of a transaction object, each in its slot of `TX_OBJECT_FIELDS`; an unknown
/// member is an error naming it.
fn tx_object_slots(
    object: &serde_json::Map<String, Value>,
) -> Result<[Option<&Value>; TX_OBJECT_FIELDS.len()], String> {
    let mut slots: [Option<&Value>; TX_OBJECT_FIELDS.len()] = [None; TX_OBJECT_FIELDS.len()];
    for (key, member) in object {
        let Some(index) = TX_OBJECT_FIELDS.iter().position(|known| *known == key.as_str()) else {
            return Err(format!(
                "unknown field {key:?} in the transaction object; known fields: {}",
                TX_OBJECT_FIELDS.join(", ")
            ));
        };
        slots[index] = Some(member);
    }
    Ok(slots)
}

impl TxObject {
    /// Refuses fields that contradict each other (two fee kinds, blobs with authorizations, a
    /// blob or set-code transaction creating a contract, blobs without their hashes).
    fn check_fields_agree(&self) -> Result<(), String> {
        let object = self;
        let has_1559_fee =
            object.max_fee_per_gas.is_some() || object.max_priority_fee_per_gas.is_some();
        if object.gas_price.is_some() && has_1559_fee {
            return Err(
                "both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified".to_owned()
            );
        }
        if object.authorization_list.is_some() {
            if object.blob_versioned_hashes.is_some() {
                return Err("a transaction cannot carry both authorizationList and \
                            blobVersionedHashes"
                    .to_owned());
            }
            if object.to.is_none() {
                return Err("authorizationList needs a \"to\": a type-4 transaction cannot \
                            create a contract"
                    .to_owned());
            }
        }
        if object.blobs.is_some() && object.blob_versioned_hashes.is_none() {
            // Execution reads only the versioned hashes: blobs without them would be dropped.
            return Err(
                "blobs without blobVersionedHashes: give the blobs' versioned hashes".to_owned()
            );
        }
        if object.blob_versioned_hashes.is_some() {
            if object.gas_price.is_some() {
                return Err("blobVersionedHashes makes a blob transaction, which pays with \
                            maxFeePerGas and maxPriorityFeePerGas, not gasPrice"
                    .to_owned());
            }
            if object.to.is_none() {
                return Err("blobVersionedHashes needs a \"to\": a blob transaction cannot \
                            create a contract"
                    .to_owned());
            }
        }
        Ok(())
    }
}

impl TxObject {
    /// The executor's request, with `gas` defaulting to and capped at `gas_cap`.
    pub(crate) fn into_call_request(self, gas_cap: u64) -> CallRequest {
        CallRequest {
            from: self.from,
            to: self.to,
            gas: Some(self.gas.map_or(gas_cap, |gas| gas.min(gas_cap))),
            gas_price: self.gas_price,
            max_fee_per_gas: self.max_fee_per_gas,
            max_priority_fee_per_gas: self.max_priority_fee_per_gas,
            value: self.value,
            input: self.input.unwrap_or_default(),
            nonce: self.nonce,
            access_list: self.access_list,
            chain_id: self.chain_id,
            authorization_list: self.authorization_list,
            blob_versioned_hashes: self.blob_versioned_hashes,
            max_fee_per_blob_gas: self.max_fee_per_blob_gas,
            state_overrides: None,
            block_overrides: None,
        }
    }

    /// Refuses the blob fields for a method that builds a transaction to sign: the node holds
    /// no sidecar to send with one, so it could only make a transaction no pool accepts.
    pub(crate) fn refuse_blobs(&self, method: &str) -> Result<(), RpcError> {
        let field = if self.blobs.is_some() {
            "blobs"
        } else if self.blob_versioned_hashes.is_some() {
            "blobVersionedHashes"
        } else if self.max_fee_per_blob_gas.is_some() {
            "maxFeePerBlobGas"
        } else {
            return Ok(());
        };
        Err(RpcError::InvalidParams(format!(
            "field {field}: {method} does not build blob transactions; sign one with its \
             sidecar and send it with eth_sendRawTransaction"
        )))
    }
}

/// One signed EIP-7702 authorization as a transaction object carries it: `chainId`,
/// `address`, `nonce`, `yParity` (or viem's `v`: 0, 1, 27 or 28), `r`, `s`. `r` and `s` are
/// quantities as execution-apis spells them; 32-byte data with leading zeros is taken too,
/// as signatures are often written so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Authorization(pub(crate) SignedAuthorization);

/// The members of an authorization.
const AUTHORIZATION_FIELDS: [&str; 7] = ["chainId", "address", "nonce", "yParity", "v", "r", "s"];

impl FromParam for Authorization {
    fn from_param(value: &Value) -> Result<Self, String> {
        let fields = expect_object(value, "an authorization object")?;
        if let Some(unknown) = fields.0.keys().find(|k| !AUTHORIZATION_FIELDS.contains(&k.as_str()))
        {
            return Err(format!("unknown field {unknown:?} in an authorization"));
        }
        let required = |name: &str| format!("authorization without {name}");
        let chain_id: U256 = fields.get("chainId")?.ok_or_else(|| required("chainId"))?;
        let address: Address = fields.get("address")?.ok_or_else(|| required("address"))?;
        let nonce: u64 = fields.get("nonce")?.ok_or_else(|| required("nonce"))?;
        let y_parity = match (fields.get::<u64>("yParity")?, fields.get::<u64>("v")?) {
            (Some(y), _) if y <= 1 => y as u8,
            (Some(y), _) => return Err(format!("field yParity: {y} is not 0 or 1")),
            (None, Some(v @ (0 | 1))) => v as u8,
            (None, Some(v @ (27 | 28))) => (v - 27) as u8,
            (None, Some(v)) => return Err(format!("field v: {v} is not 0, 1, 27 or 28")),
            (None, None) => return Err(required("yParity")),
        };
        let r: StorageSlot = fields.get("r")?.ok_or_else(|| required("r"))?;
        let s: StorageSlot = fields.get("s")?.ok_or_else(|| required("s"))?;
        let inner = alloy_eips::eip7702::Authorization { chain_id, address, nonce };
        Ok(Self(SignedAuthorization::new_unchecked(inner, y_parity, r.0, s.0)))
    }
}

/// A slot map of a state override (`state` / `stateDiff`): 32-byte keys and values.
fn slot_map(value: &Value) -> Result<std::collections::BTreeMap<U256, U256>, String> {
    let object =
        value.as_object().ok_or_else(|| format!("expected an object, got {}", json_kind(value)))?;
    object
        .iter()
        .map(|(key, value)| {
            let key = B256::from_param(&Value::String(key.clone()))
                .map_err(|e| format!("slot {key}: {e}"))?;
            let value = B256::from_param(value).map_err(|e| format!("slot {key} value: {e}"))?;
            Ok((U256::from_be_bytes(key.0), U256::from_be_bytes(value.0)))
        })
        .collect()
}

/// The fields of one account's state override, as execution-apis spells them.
const ACCOUNT_OVERRIDE_FIELDS: [&str; 6] =
    ["balance", "nonce", "code", "state", "stateDiff", "movePrecompileToAddress"];

/// geth's state override set: `{address: {balance, nonce, code, state | stateDiff}}`.
impl FromParam for StateOverrides {
    fn from_param(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("expected a state override object, got {}", json_kind(value)))?;
        let mut overrides = Self::new();
        for (address, account) in object {
            let address = Address::from_param(&Value::String(address.clone()))?;
            // geth decodes these names case-insensitively (Go's encoding/json), and clients
            // send them so: hive's Prague snapshot spells `MovePrecompileToAddress`. An unknown
            // name is an error, never dropped.
            let given = expect_object(account, "an account override")?;
            let mut canonical = serde_json::Map::new();
            for (name, value) in given.0 {
                let Some(known) =
                    ACCOUNT_OVERRIDE_FIELDS.iter().find(|f| f.eq_ignore_ascii_case(name))
                else {
                    return Err(format!("account {address}: unsupported override field {name}"));
                };
                if canonical.insert((*known).to_owned(), value.clone()).is_some() {
                    return Err(format!("account {address}: override field {known} given twice"));
                }
            }
            let fields = Fields(&canonical);
            let slots = |name: &str| match fields.0.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => {
                    slot_map(v).map(Some).map_err(|e| format!("account {address} {name}: {e}"))
                }
            };
            let (state, state_diff) = (slots("state")?, slots("stateDiff")?);
            if state.is_some() && state_diff.is_some() {
                return Err(format!("account {address} has both 'state' and 'stateDiff'"));
            }
            overrides.insert(
                address,
                AccountOverride {
                    balance: fields.get("balance")?,
                    nonce: fields.get("nonce")?,
                    code: fields.get("code")?,
                    state,
                    state_diff,
                    move_precompile_to: fields.get("movePrecompileToAddress")?,
                },
            );
        }
        Ok(overrides)
    }
}

/// Block overrides for eth_call: number, time, gasLimit, baseFeePerGas, feeRecipient (or
/// coinbase), prevRandao.
impl FromParam for BlockOverrides {
    fn from_param(value: &Value) -> Result<Self, String> {
        let fields = expect_object(value, "a block override object")?;
        Ok(Self {
            number: fields.get("number")?,
            timestamp: fields.get("time")?,
            gas_limit: fields.get("gasLimit")?,
            base_fee: match fields.get("baseFeePerGas")? {
                Some(fee) => Some(fee),
                None => fields.get("baseFee")?,
            },
            coinbase: match fields.get("feeRecipient")? {
                Some(a) => Some(a),
                None => fields.get("coinbase")?,
            },
            prevrandao: fields.get("prevRandao")?,
        })
    }
}

/// geth's bound on topic positions in a log filter.
const MAX_TOPICS: usize = 4;

/// An eth_getLogs filter object, decoded into alloy's `Filter` (whose matching we reuse).
/// `fromBlock`/`toBlock` stay as tags here; `logs.rs` resolves them against the head.
impl FromParam for Filter {
    fn from_param(value: &Value) -> Result<Self, String> {
        let fields = expect_object(value, "a filter object")?;
        let block_hash: Option<B256> = fields.get("blockHash")?;
        let from_block: Option<BlockNumberOrTag> = fields.get("fromBlock")?;
        let to_block: Option<BlockNumberOrTag> = fields.get("toBlock")?;
        let block_option = match block_hash {
            Some(_) if from_block.is_some() || to_block.is_some() => {
                return Err("cannot specify both blockHash and fromBlock/toBlock, \
                            choose one or the other"
                    .to_owned());
            }
            Some(hash) => FilterBlockOption::AtBlockHash(hash),
            None => FilterBlockOption::Range { from_block, to_block },
        };
        let address = match fields.0.get("address") {
            None | Some(Value::Null) => FilterSet::default(),
            Some(Value::Array(items)) => items
                .iter()
                .map(Address::from_param)
                .collect::<Result<FilterSet<Address>, _>>()
                .map_err(|e| format!("field address: {e}"))?,
            Some(single) => FilterSet::from(
                Address::from_param(single).map_err(|e| format!("field address: {e}"))?,
            ),
        };
        let topics = match fields.0.get("topics") {
            None | Some(Value::Null) => Default::default(),
            Some(Value::Array(positions)) => parse_topics(positions)?,
            Some(other) => {
                return Err(format!("field topics: expected an array, got {}", json_kind(other)));
            }
        };
        Ok(Self { block_option, address, topics })
    }
}

/// Topic positions: each `null` (any), a hash, or an array of hashes (any of them; a `null`
/// inside the array also means any, as in geth).
fn parse_topics(positions: &[Value]) -> Result<[Topic; MAX_TOPICS], String> {
    if positions.len() > MAX_TOPICS {
        return Err(format!("field topics: too many topics, at most {MAX_TOPICS}"));
    }
    let mut topics: [Topic; MAX_TOPICS] = Default::default();
    for (position, value) in positions.iter().enumerate() {
        let name = format!("field topics[{position}]");
        topics[position] = match value {
            Value::Null => Topic::default(),
            Value::Array(alternatives) => {
                let mut set = Vec::with_capacity(alternatives.len());
                for alternative in alternatives {
                    if alternative.is_null() {
                        // An "or null" matches anything: the whole position is a wildcard.
                        set.clear();
                        break;
                    }
                    set.push(B256::from_param(alternative).map_err(|e| format!("{name}: {e}"))?);
                }
                Topic::from(set)
            }
            single => Topic::from(B256::from_param(single).map_err(|e| format!("{name}: {e}"))?),
        };
    }
    Ok(topics)
}

/// eth_feeHistory reward percentiles: increasing numbers between 0 and 100.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Percentiles(pub(crate) Vec<f64>);

impl FromParam for Percentiles {
    fn from_param(value: &Value) -> Result<Self, String> {
        let items = value
            .as_array()
            .ok_or_else(|| format!("expected an array of percentiles, got {}", json_kind(value)))?;
        let mut percentiles = Vec::with_capacity(items.len());
        for item in items {
            let p = item.as_f64().ok_or_else(|| format!("invalid reward percentile: {item}"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("invalid reward percentile: {p}"));
            }
            if percentiles.last().is_some_and(|last| *last > p) {
                return Err(format!("invalid reward percentile: {p} is below the one before it"));
            }
            percentiles.push(p);
        }
        Ok(Self(percentiles))
    }
}

/// evm_mine's optional argument: a timestamp, or `{ "timestamp": .., "blocks": .. }` (anvil).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MineOptions {
    /// Timestamp of the first block mined.
    pub(crate) timestamp: Option<u64>,
    /// How many blocks; one when absent.
    pub(crate) blocks: Option<u64>,
}

impl FromParam for MineOptions {
    fn from_param(value: &Value) -> Result<Self, String> {
        if let Value::Object(map) = value {
            let fields = Fields(map);
            let timestamp: Option<HexOrDecimal> = fields.get("timestamp")?;
            let blocks: Option<HexOrDecimal> = fields.get("blocks")?;
            return Ok(Self { timestamp: timestamp.map(|t| t.0), blocks: blocks.map(|b| b.0) });
        }
        let timestamp = HexOrDecimal::from_param(value)?;
        Ok(Self { timestamp: Some(timestamp.0), blocks: None })
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::address;
    use serde_json::json;

    use super::*;

    fn decode<T: FromParam>(value: Value) -> Result<T, String> {
        T::from_param(&value)
    }

    #[test]
    fn override_members_match_as_geth_decodes_them() {
        let a = "0x0000000000000000000000000000000000000001";
        let given: StateOverrides =
            decode(json!({ a: { "MovePrecompileToAddress": "0x00000000000000000000000000000000000000ff", "BALANCE": "0x2" } }))
                .expect("any case");
        let account = &given[&address!("0000000000000000000000000000000000000001")];
        assert_eq!(account.balance, Some(U256::from(2)));
        assert_eq!(account.move_precompile_to, Some(Address::with_last_byte(0xff)));
        let twice = decode::<StateOverrides>(json!({ a: { "balance": "0x1", "Balance": "0x2" } }));
        assert!(twice.unwrap_err().contains("given twice"));
        let unknown = decode::<StateOverrides>(json!({ a: { "balanse": "0x1" } }));
        assert!(unknown.unwrap_err().contains("unsupported override field balanse"));
    }

    #[test]
    fn quantities_are_strict() {
        assert_eq!(decode::<u64>(json!("0x0")), Ok(0));
        assert_eq!(decode::<u64>(json!("0x1f")), Ok(31));
        assert_eq!(decode::<u64>(json!("0X1F")), Ok(31));
        assert_eq!(decode::<u64>(json!("0x01")), Err("hex number with leading zero digits".into()));
        assert_eq!(decode::<u64>(json!("0x")), Err("hex string \"0x\" has no digits".into()));
        assert_eq!(decode::<u64>(json!("1f")), Err("hex string without 0x prefix".into()));
        assert_eq!(decode::<u64>(json!("0xzz")), Err("invalid hex string".into()));
        assert_eq!(decode::<u64>(json!("0x10000000000000000")), Err("hex number > 64 bits".into()));
        assert_eq!(
            decode::<u64>(json!(5)),
            Err("expected a hex quantity string, got a number".into())
        );
        assert_eq!(
            decode::<U256>(json!(format!("0x1{}", "0".repeat(64)))),
            Err("hex number > 256 bits".into())
        );
        assert_eq!(decode::<U256>(json!(format!("0x{}", "f".repeat(64)))), Ok(U256::MAX));
    }

    #[test]
    fn addresses_hashes_and_data_are_strict() {
        let a = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
        assert_eq!(
            decode::<Address>(json!(a)),
            Ok(address!("f39fd6e51aad88f6f4ce6ab8827279cfffb92266"))
        );
        assert_eq!(
            decode::<Address>(json!("0xf39fd6e51aad88f6f4ce6ab8827279cfffb922")),
            Err("hex string has length 38, want 40 for address".into())
        );
        assert_eq!(
            decode::<Address>(json!("f39fd6e51aad88f6f4ce6ab8827279cfffb92266")),
            Err("hex string without 0x prefix".into())
        );
        assert_eq!(
            decode::<B256>(json!("0x00")),
            Err("hex string has length 2, want 64 for hash".into())
        );
        assert_eq!(decode::<Bytes>(json!("0x")), Ok(Bytes::new()));
        assert_eq!(decode::<Bytes>(json!("0xabc")), Err("hex string of odd length".into()));
        assert_eq!(decode::<Bytes>(json!("0xgg")), Err("invalid hex string".into()));
        assert_eq!(decode::<Bytes>(json!("0x00ff")), Ok(Bytes::from_static(&[0, 0xff])));
    }

    #[test]
    fn storage_slots_take_quantities_or_words() {
        assert_eq!(decode::<StorageSlot>(json!("0x0")), Ok(StorageSlot(U256::ZERO)));
        assert_eq!(
            decode::<StorageSlot>(json!(format!("0x{:064x}", 5))),
            Ok(StorageSlot(U256::from(5)))
        );
        assert!(decode::<StorageSlot>(json!(format!("0x{}", "0".repeat(65)))).is_err());
        assert!(decode::<StorageSlot>(json!("5")).is_err());
    }

    #[test]
    fn block_params() {
        assert_eq!(decode::<BlockNumberOrTag>(json!("latest")), Ok(BlockNumberOrTag::Latest));
        assert_eq!(decode::<BlockNumberOrTag>(json!("finalized")), Ok(BlockNumberOrTag::Finalized));
        assert_eq!(decode::<BlockNumberOrTag>(json!("0x10")), Ok(BlockNumberOrTag::Number(16)));
        assert!(decode::<BlockNumberOrTag>(json!("Latest")).is_err());
        assert_eq!(decode::<BlockNumberOrTag>(json!("0x010")), Ok(BlockNumberOrTag::Number(16)));
        // A plain JSON integer, as anvil takes it (geth does not); never a negative or a
        // fraction.
        assert_eq!(decode::<BlockNumberOrTag>(json!(16)), Ok(BlockNumberOrTag::Number(16)));
        assert_eq!(decode::<BlockId>(json!(16)), Ok(BlockId::number(16)));
        assert!(decode::<BlockNumberOrTag>(json!(-1)).is_err());
        assert!(decode::<BlockNumberOrTag>(json!(1.5)).is_err());

        let hash = B256::repeat_byte(0xab);
        assert_eq!(decode::<BlockId>(json!(hash.to_string())), Ok(BlockId::hash(hash)));
        assert_eq!(
            decode::<BlockId>(json!("pending")),
            Ok(BlockId::Number(BlockNumberOrTag::Pending))
        );
        assert_eq!(decode::<BlockId>(json!({"blockNumber": "0x2"})), Ok(BlockId::number(2)));
        assert_eq!(
            decode::<BlockId>(json!({"blockHash": hash, "requireCanonical": true})),
            Ok(BlockId::Hash(alloy_eips::RpcBlockHash {
                block_hash: hash,
                require_canonical: Some(true)
            }))
        );
        assert!(decode::<BlockId>(json!({"blockHash": hash, "blockNumber": "0x1"})).is_err());
        assert!(decode::<BlockId>(json!({})).is_err());
        // Block numbers take leading zeros, as anvil and Hardhat do (geth refuses them).
        assert_eq!(decode::<BlockId>(json!({"blockNumber": "0x01"})), Ok(BlockId::number(1)));
        assert_eq!(decode::<BlockId>(json!("0x08")), Ok(BlockId::number(8)));
        assert_eq!(decode::<BlockNumberOrTag>(json!("0x000")), Ok(BlockNumberOrTag::Number(0)));
        let long = format!("0x{}{}", "0".repeat(40), "ff");
        assert_eq!(decode::<BlockNumberOrTag>(json!(long)), Ok(BlockNumberOrTag::Number(255)));
        assert!(decode::<BlockNumberOrTag>(json!("0x1ffffffffffffffff")).is_err(), "past u64");
        assert!(decode::<BlockNumberOrTag>(json!("0x")).is_err());
        assert!(decode::<BlockNumberOrTag>(json!("0xg1")).is_err());
        assert!(decode::<BlockNumberOrTag>(json!("12")).is_err(), "no 0x");
    }

    #[test]
    fn a_transaction_type_may_be_a_json_integer_as_web3_py_sends_it() {
        let to = Address::ZERO;
        assert!(decode::<TxObject>(json!({"to": to, "type": 1})).is_ok());
        assert!(decode::<TxObject>(json!({"to": to, "type": "0x1"})).is_ok());
        // Other quantities stay strict (geth's), and a type that is no u64 is refused.
        assert!(decode::<TxObject>(json!({"to": to, "type": -1})).is_err());
        assert!(decode::<TxObject>(json!({"to": to, "gas": 21000})).is_err());
    }

    #[test]
    fn tx_objects_name_unknown_members_and_decode_authorizations() {
        let err = decode::<TxObject>(json!({"to": Address::ZERO, "gasLimit": "0x1"})).unwrap_err();
        assert!(err.contains("unknown field \"gasLimit\""), "{err}");
        let auth = json!({"chainId": "0x1", "address": Address::ZERO, "nonce": "0x0",
                          "yParity": "0x1", "r": "0x01", "s": format!("0x{}", "00".repeat(31) + "02")});
        let tx: TxObject =
            decode(json!({"to": Address::ZERO, "authorizationList": [auth]})).unwrap();
        let list = tx.authorization_list.expect("decoded");
        assert_eq!(
            (list[0].y_parity(), list[0].r(), list[0].s()),
            (1, U256::from(1), U256::from(2))
        );
        // viem's `v` form, 27 or 28, for yParity.
        let mut with_v = auth.clone();
        with_v.as_object_mut().unwrap().remove("yParity");
        with_v["v"] = json!("0x1b");
        let tx: TxObject =
            decode(json!({"to": Address::ZERO, "authorizationList": [with_v]})).unwrap();
        assert_eq!(tx.authorization_list.unwrap()[0].y_parity(), 0);
        let mut extra = auth.clone();
        extra["sig"] = json!("0x");
        let err = decode::<TxObject>(json!({"to": Address::ZERO, "authorizationList": [extra]}))
            .unwrap_err();
        assert!(err.contains("\"sig\""), "{err}");
        let mut bad_parity = auth;
        bad_parity["yParity"] = json!("0x2");
        assert!(
            decode::<TxObject>(json!({"to": Address::ZERO, "authorizationList": [bad_parity]}))
                .is_err()
        );
        // Blobs alone cannot run: execution reads the versioned hashes.
        let err = decode::<TxObject>(json!({"to": Address::ZERO, "blobs": ["0x00"]})).unwrap_err();
        assert!(err.contains("blobVersionedHashes"), "{err}");
    }

    #[test]
    fn tx_object_accepts_input_or_data_but_not_both_different() {
        let tx: TxObject = decode(json!({"to": Address::ZERO, "data": "0x01"})).unwrap();
        assert_eq!(tx.input, Some(Bytes::from_static(&[1])));
        let tx: TxObject = decode(json!({"input": "0x01", "data": "0x01"})).unwrap();
        assert_eq!(tx.input, Some(Bytes::from_static(&[1])));
        let err = decode::<TxObject>(json!({"input": "0x01", "data": "0x02"})).unwrap_err();
        assert!(err.starts_with("both \"data\" and \"input\" are set and not equal"), "{err}");
    }

    #[test]
    fn tx_object_errors_name_the_field() {
        assert_eq!(
            decode::<TxObject>(json!({"to": "0x1234"})),
            Err("field to: hex string has length 4, want 40 for address".into())
        );
        assert_eq!(
            decode::<TxObject>(json!({"gas": "0x0100"})),
            Err("field gas: hex number with leading zero digits".into())
        );
        assert!(decode::<TxObject>(json!({"gasPrice": "0x1", "maxFeePerGas": "0x1"})).is_err());
        assert!(decode::<TxObject>(json!("0x")).is_err());
    }

    #[test]
    fn call_request_gas_defaults_to_and_is_capped_by_the_cap() {
        let none: TxObject = decode(json!({})).unwrap();
        assert_eq!(none.into_call_request(1_000).gas, Some(1_000));
        let high: TxObject = decode(json!({"gas": "0xffffff"})).unwrap();
        assert_eq!(high.into_call_request(1_000).gas, Some(1_000));
        let low: TxObject = decode(json!({"gas": "0x10"})).unwrap();
        assert_eq!(low.into_call_request(1_000).gas, Some(16));
    }

    #[test]
    fn params_positions_and_counts() {
        let params = Params::new(Some(json!(["0x1", null])));
        assert_eq!(params.required::<u64>(0).unwrap(), 1);
        assert!(params.optional::<u64>(1).unwrap().is_none());
        let missing = params.required::<u64>(1).unwrap_err();
        assert_eq!(missing.to_string(), "missing value for required argument 1");
        assert_eq!(missing.code(), -32602);
        assert!(params.at_most(2).is_ok());
        assert_eq!(
            params.at_most(1).unwrap_err().to_string(),
            "too many arguments, want at most 1"
        );
        let bad = params.required::<Address>(0).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "invalid argument 0: hex string has length 1, want 40 for address"
        );
        assert!(Params::new(None).at_most(0).is_ok());
        let by_name = Params::new(Some(json!({"a": 1})));
        assert_eq!(by_name.at_most(1).unwrap_err().code(), -32602);
        assert_eq!(by_name.into_value(), json!({"a": 1}));
    }

    #[test]
    fn filter_objects() {
        let a = Address::repeat_byte(1);
        let t = B256::repeat_byte(2);
        let filter: Filter = decode(json!({
            "fromBlock": "0x1", "address": [a], "topics": [t, null, [t, null]]
        }))
        .unwrap();
        assert_eq!(
            filter.block_option,
            FilterBlockOption::Range {
                from_block: Some(BlockNumberOrTag::Number(1)),
                to_block: None
            }
        );
        assert!(filter.address.contains(&a));
        assert!(filter.topics[0].contains(&t));
        assert!(filter.topics[1].is_empty() && filter.topics[2].is_empty());

        let single: Filter = decode(json!({"address": a, "topics": [[t]]})).unwrap();
        assert!(single.address.contains(&a) && single.topics[0].contains(&t));

        assert!(decode::<Filter>(json!({"blockHash": t, "fromBlock": "0x1"})).is_err());
        assert!(decode::<Filter>(json!({"topics": [null, null, null, null, null]})).is_err());
        assert!(decode::<Filter>(json!({"address": "0x12"})).is_err());
        assert!(decode::<Filter>(json!({"topics": ["0x12"]})).is_err());
    }

    #[test]
    fn percentiles_and_counts() {
        assert_eq!(
            decode::<Percentiles>(json!([10, 50.5, 90])),
            Ok(Percentiles(vec![10.0, 50.5, 90.0]))
        );
        assert!(decode::<Percentiles>(json!([50, 10])).is_err());
        assert!(decode::<Percentiles>(json!([101])).is_err());
        assert_eq!(decode::<HexOrDecimal>(json!(4)), Ok(HexOrDecimal(4)));
        assert_eq!(decode::<HexOrDecimal>(json!("4")), Ok(HexOrDecimal(4)));
        assert_eq!(decode::<HexOrDecimal>(json!("0x4")), Ok(HexOrDecimal(4)));
        assert!(decode::<HexOrDecimal>(json!(-1)).is_err());
        assert_eq!(
            decode::<MineOptions>(json!({"timestamp": "0x10", "blocks": 3})),
            Ok(MineOptions { timestamp: Some(16), blocks: Some(3) })
        );
        assert_eq!(
            decode::<MineOptions>(json!(100)),
            Ok(MineOptions { timestamp: Some(100), blocks: None })
        );
    }
}
