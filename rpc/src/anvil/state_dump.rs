//! anvil's state dump: anvil_dumpState / anvil_loadState (a `0x` hex string of gzip-compressed
//! JSON) and the files of `--dump-state` / `--load-state` (the same JSON, plain).
//!
//! The JSON is anvil 1.7.1's, as measured from its own dumps (scripts/dumpstate-compare.sh):
//! `block` (the head's block environment), `accounts` (address -> `nonce`, `balance`, `code`,
//! `storage`), `best_block_number`, `blocks`, `transactions`, `historical_states`. Hearth writes
//! every account of its head state, the head's block environment and number, and in `blocks`
//! the head block's header alone (anvil needs its best block there to load a dump; anvil writes
//! every block with its transactions), `transactions` empty and `historical_states` `null`.
//! Reading, it takes the accounts and checks `block` and `best_block_number`, which anvil
//! requires; the rest must be well-formed JSON and is not used: Hearth's head keeps its own
//! number and history.
//!
//! Input is bounded as it is parsed: reading stops past [`MAX_STATE_JSON_BYTES`] of JSON (a
//! gzip bomb costs that much inflating, never that much memory: the JSON is parsed as it is
//! inflated, not buffered), and every value is range-checked as it is read (a nonce below 2^64, a balance and
//! storage within 256 bits, code within the node's code size limit). Anything wrong refuses the
//! whole input: nothing is loaded until all of it has been read and checked.

use std::collections::BTreeMap;
use std::io::Read;

use alloy_consensus::Header;
use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::MineError;
use hearth_messages::miner::BetweenBlocks;
use hearth_messages::state::{DumpState, HeadState, LoadState};
use hearth_messages::storage::WholeAccount;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::core::ChainForks;
use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;

/// Bounds a state load is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateLimits {
    /// Most JSON bytes, decompressed.
    pub max_json_bytes: usize,
    /// Largest code of one account (the node's code size limit).
    pub max_code_bytes: usize,
}

/// A state dump that cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// Past the size bound.
    #[error("the state is larger than {max_json_bytes} bytes of JSON, the most Hearth loads")]
    TooLarge {
        /// The bound.
        max_json_bytes: usize,
    },
    /// Gzip data that does not inflate.
    #[error("corrupt or truncated gzip data: {0}")]
    Gzip(String),
    /// Not the JSON of a state dump.
    #[error("not an anvil state dump (gzip-compressed or plain JSON): {0}")]
    Json(serde_json::Error),
    /// An account's code is over the code size limit.
    #[error(
        "account {address}: code of {len} bytes is over the code size limit of {max} bytes \
         (--code-size-limit, --disable-code-size-limit)"
    )]
    CodeTooLarge {
        /// The account.
        address: Address,
        /// Its code's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A block field over 64 bits.
    #[error("block.{field} {value} is over 64 bits")]
    BlockField {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: U256,
    },
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
}

/// A state dump read and checked, ready to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedState {
    /// Every account, ordered by address.
    pub accounts: Vec<WholeAccount>,
    /// The dump's `best_block_number` (checked, not applied).
    pub best_block_number: Option<u64>,
}

/// Reads a state dump: gzip-compressed JSON (what anvil_dumpState's hex holds) or plain JSON
/// (what anvil's `--dump-state` file holds, and what anvil_loadState also takes).
pub fn decode(bytes: &[u8], limits: StateLimits) -> Result<LoadedState, StateFileError> {
    read(bytes, limits)
}

/// Reads a state dump file (gzip-compressed or plain JSON), reading at most the bound.
pub fn read_file(
    path: &std::path::Path,
    limits: StateLimits,
) -> Result<LoadedState, StateFileError> {
    let file = std::fs::File::open(path).map_err(StateFileError::Io)?;
    read(std::io::BufReader::new(file), limits)
}

fn read(mut input: impl Read, limits: StateLimits) -> Result<LoadedState, StateFileError> {
    // One byte past the bound is read, to tell "at the bound" from "past it".
    let cap = u64::try_from(limits.max_json_bytes).unwrap_or(u64::MAX).saturating_add(1);
    let mut magic = [0u8; 2];
    let got = read_up_to(&mut input, &mut magic).map_err(StateFileError::Io)?;
    let start = std::io::Cursor::new(magic[..got].to_vec());
    let gzip = magic[..got] == [0x1f, 0x8b];
    let (parsed, left) = if gzip {
        parse(flate2::read::GzDecoder::new(start.chain(input)).take(cap))
    } else {
        parse(start.chain(input).take(cap))
    };
    if left == 0 {
        return Err(StateFileError::TooLarge { max_json_bytes: limits.max_json_bytes });
    }
    let dump = parsed.map_err(|e| match e {
        // The reader failed: inflating (gzip) or reading the file.
        e if e.is_io() && gzip => StateFileError::Gzip(e.to_string()),
        e if e.is_io() => StateFileError::Io(std::io::Error::other(e.to_string())),
        e => StateFileError::Json(e),
    })?;
    dump.check(limits)
}

/// Fills `buf` as far as the input goes.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Parses the JSON as it is read (to its end: only whitespace may follow); answers with what
/// was left of the cap, 0 when reading reached it.
fn parse<R: Read>(mut input: std::io::Take<R>) -> (Result<DumpIn, serde_json::Error>, u64) {
    let result = {
        let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(&mut input));
        DumpIn::deserialize(&mut de).and_then(|dump| de.end().map(|()| dump))
    };
    (result, input.limit())
}

/// A required key whose value may be `null` (anvil's `block` and `best_block_number`).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// What a load reads of a dump. Other keys (`blocks`, `transactions`, `historical_states`) are
/// read past without being kept.
#[derive(Deserialize)]
struct DumpIn {
    #[serde(deserialize_with = "nullable")]
    block: Option<BlockEnvJson>,
    accounts: BTreeMap<Address, AccountIn>,
    #[serde(deserialize_with = "nullable")]
    best_block_number: Option<u64>,
}

#[derive(Deserialize)]
struct AccountIn {
    nonce: u64,
    balance: Quantity,
    code: Bytes,
    storage: BTreeMap<B256, Quantity>,
}

/// A 256-bit value as anvil reads one: a `0x` hex string of 1 to 64 digits, or a JSON integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Quantity(U256);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Quantity;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a 0x hex quantity of at most 256 bits, or a non-negative integer")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity(U256::from(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                let digits = v
                    .strip_prefix("0x")
                    .or_else(|| v.strip_prefix("0X"))
                    .filter(|d| !d.is_empty() && d.len() <= 64)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))?;
                U256::from_str_radix(digits, 16)
                    .map(Quantity)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The block environment, in anvil's (revm's `BlockEnv`) shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct BlockEnvJson {
    number: U256,
    beneficiary: Address,
    timestamp: U256,
    gas_limit: u64,
    basefee: u64,
    #[serde(default)]
    difficulty: U256,
    #[serde(default)]
    prevrandao: Option<B256>,
    #[serde(default)]
    blob_excess_gas_and_price: Option<BlobPrice>,
    #[serde(default)]
    slot_num: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct BlobPrice {
    excess_blob_gas: u64,
    blob_gasprice: u128,
}

impl DumpIn {
    /// Checks what the types did not (block numbers in 64 bits, code size) and takes the
    /// accounts.
    fn check(self, limits: StateLimits) -> Result<LoadedState, StateFileError> {
        if let Some(block) = &self.block {
            for (field, value) in [("number", block.number), ("timestamp", block.timestamp)] {
                if value > U256::from(u64::MAX) {
                    return Err(StateFileError::BlockField { field, value });
                }
            }
        }
        let mut accounts = Vec::with_capacity(self.accounts.len());
        for (address, account) in self.accounts {
            if account.code.len() > limits.max_code_bytes {
                return Err(StateFileError::CodeTooLarge {
                    address,
                    len: account.code.len(),
                    max: limits.max_code_bytes,
                });
            }
            accounts.push(WholeAccount {
                address,
                nonce: account.nonce,
                balance: account.balance.0,
                code: account.code,
                storage: account
                    .storage
                    .into_iter()
                    .map(|(slot, value)| (U256::from_be_bytes(slot.0), value.0))
                    .collect(),
            });
        }
        Ok(LoadedState { accounts, best_block_number: self.best_block_number })
    }
}

/// What a dump writes, in anvil's key order.
#[derive(Serialize)]
struct DumpOut<'a> {
    block: BlockEnvJson,
    accounts: BTreeMap<Address, AccountOut<'a>>,
    best_block_number: u64,
    blocks: [BlockOut<'a>; 1],
    transactions: [(); 0],
    historical_states: Option<()>,
}

#[derive(Serialize)]
struct AccountOut<'a> {
    nonce: u64,
    balance: U256,
    code: &'a Bytes,
    storage: BTreeMap<B256, B256>,
}

/// A block as anvil stores one; Hearth writes the head's header with no transactions.
#[derive(Serialize)]
struct BlockOut<'a> {
    header: &'a Header,
    transactions: [(); 0],
    ommers: [(); 0],
    withdrawals: Option<()>,
}

/// The JSON of `state` as anvil writes a dump (`forks` prices the head's blob gas).
pub fn document(state: &HeadState, forks: &ChainForks) -> Result<Vec<u8>, serde_json::Error> {
    let header = &state.header;
    let block = BlockEnvJson {
        number: U256::from(header.number),
        beneficiary: header.beneficiary,
        timestamp: U256::from(header.timestamp),
        gas_limit: header.gas_limit,
        basefee: header.base_fee_per_gas.unwrap_or_default(),
        difficulty: header.difficulty,
        prevrandao: Some(header.mix_hash),
        blob_excess_gas_and_price: header.excess_blob_gas.map(|excess_blob_gas| BlobPrice {
            excess_blob_gas,
            blob_gasprice: crate::eth::fees::block_blob_fee(header, forks),
        }),
        slot_num: 0,
    };
    let accounts = state
        .accounts
        .iter()
        .map(|a| {
            let storage = a
                .storage
                .iter()
                .map(|(slot, value)| (B256::from(*slot), B256::from(*value)))
                .collect();
            (a.address, AccountOut { nonce: a.nonce, balance: a.balance, code: &a.code, storage })
        })
        .collect();
    serde_json::to_vec(&DumpOut {
        block,
        accounts,
        best_block_number: header.number,
        blocks: [BlockOut { header, transactions: [], ommers: [], withdrawals: None }],
        transactions: [],
        historical_states: None,
    })
}

/// `json` gzip-compressed, as a `0x` hex string: what anvil_dumpState answers.
pub fn to_hex_gzip(json: &[u8]) -> String {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let compressed = encoder.write_all(json).and_then(|()| encoder.finish()).unwrap_or_default();
    alloy_primitives::hex::encode_prefixed(compressed)
}

/// anvil_dumpState: `[preserveHistoricalStates?]`; the head state as anvil's hex string of
/// gzip-compressed JSON. Hearth keeps no per-block state snapshots to add (its history is in
/// the store), so the flag is read and changes nothing: `historical_states` is `null`.
pub(crate) async fn dump_state(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let _preserve: Option<bool> = params.optional(0)?;
    refuse_on_fork(ctx, "anvil_dumpState")?;
    let state = ctx
        .state
        .dump_state(DumpState { max_json_bytes: ctx.limits.max_state_json_bytes })
        .await?
        .map_err(MineError::from)?;
    let forks = std::sync::Arc::clone(&ctx.forks);
    // Encoding and compressing a large state takes a while: off the worker thread.
    let hex = tokio::task::spawn_blocking(move || {
        document(&state, &forks).map(|json| to_hex_gzip(&json))
    })
    .await
    .map_err(|e| RpcError::Panicked(e.to_string()))??;
    Ok(Value::String(hex))
}

/// A forked chain's state is mostly the upstream's, which the node has only partly fetched: a
/// dump of what is local would silently miss the rest.
fn refuse_on_fork(ctx: &RpcContext, method: &str) -> Result<(), RpcError> {
    if ctx.chain.fork().is_some() {
        return Err(RpcError::Unsupported(format!(
            "{method} is not available on a forked chain: its state is the upstream's, which \
             the node holds only in part"
        )));
    }
    Ok(())
}

/// anvil_loadState: `[hex]` (gzip-compressed JSON, or plain JSON, as anvil takes); sets every
/// account of the dump in the head state, in one patch, and answers `true`. A dump that cannot
/// be read is -32602 and loads nothing.
pub(crate) async fn load_state(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(1)?;
    let bytes: Bytes = params.required(0)?;
    let limits = StateLimits {
        max_json_bytes: ctx.limits.max_state_json_bytes,
        max_code_bytes: ctx.limits.max_code_bytes,
    };
    // Inflating and parsing up to the bound takes a while: off the worker thread.
    let loaded = tokio::task::spawn_blocking(move || decode(&bytes, limits))
        .await
        .map_err(|e| RpcError::Panicked(e.to_string()))?
        .map_err(|e| RpcError::InvalidParams(format!("invalid argument 0: {e}")))?;
    ctx.miner.load_state(BetweenBlocks(LoadState { accounts: loaded.accounts })).await??;
    // New nonces and balances may make pooled transactions stale.
    crate::anvil::dev::revalidate(ctx).await?;
    Ok(Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use serde_json::json;

    use super::*;
    use crate::core::EIP170_CODE_BYTES;

    const LIMITS: StateLimits =
        StateLimits { max_json_bytes: 1 << 20, max_code_bytes: EIP170_CODE_BYTES };

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).expect("write");
        encoder.finish().expect("finish")
    }

    fn account(byte: u8) -> WholeAccount {
        WholeAccount {
            address: Address::repeat_byte(byte),
            nonce: u64::from(byte),
            balance: U256::MAX - U256::from(byte),
            code: Bytes::from(vec![byte; usize::from(byte)]),
            storage: vec![(U256::from(byte), U256::MAX), (U256::MAX, U256::from(1))],
        }
    }

    fn state() -> HeadState {
        HeadState {
            header: Header {
                number: 7,
                timestamp: 1_700_000_000,
                gas_limit: 30_000_000,
                base_fee_per_gas: Some(875_175_000),
                excess_blob_gas: Some(0),
                mix_hash: B256::repeat_byte(0xfe),
                ..Header::default()
            },
            accounts: vec![account(1), account(2), account(0xf3)],
        }
    }

    fn forks() -> ChainForks {
        ChainForks::default()
    }

    /// A dump reads back to the accounts it was made of, compressed (the RPC's form) or plain
    /// (the file's), and it has anvil's keys and forms.
    #[test]
    fn a_dump_reads_back_equal_in_both_forms() {
        let state = state();
        let json = document(&state, &forks()).expect("encode");
        let expected = LoadedState { accounts: state.accounts, best_block_number: Some(7) };
        assert_eq!(decode(&json, LIMITS).expect("plain"), expected);
        let hex = to_hex_gzip(&json);
        let bytes = alloy_primitives::hex::decode(&hex).expect("hex");
        assert_eq!(bytes[..2], [0x1f, 0x8b], "gzip");
        assert_eq!(decode(&bytes, LIMITS).expect("gzip"), expected);

        let value: Value = serde_json::from_slice(&json).expect("json");
        let mut keys: Vec<&String> = value.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "accounts",
                "best_block_number",
                "block",
                "blocks",
                "historical_states",
                "transactions"
            ]
        );
        assert_eq!(value["block"]["number"], json!("0x7"));
        assert_eq!(value["block"]["basefee"], json!(875_175_000));
        assert_eq!(value["block"]["blob_excess_gas_and_price"]["blob_gasprice"], json!(1));
        assert_eq!(value["best_block_number"], json!(7));
        let one = &value["accounts"]["0x0101010101010101010101010101010101010101"];
        assert_eq!(one["nonce"], json!(1));
        assert_eq!(one["balance"], json!(format!("0x{}e", "f".repeat(63))));
        assert_eq!(one["code"], json!("0x01"));
        assert_eq!(one["storage"][format!("0x{:064x}", 1)], json!(format!("0x{}", "f".repeat(64))));
        assert!(value["accounts"]["0xf3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3"].is_object());
        assert_eq!(value["blocks"][0]["header"]["number"], json!("0x7"));
        assert_eq!(value["blocks"][0]["transactions"], json!([]));
        assert_eq!(
            (&value["transactions"], &value["historical_states"]),
            (&json!([]), &json!(null))
        );
    }

    /// anvil's own dump (1.7.1, two transactions and a contract with two slots) reads, with its
    /// blocks and traces read past; and the forms anvil accepts beside its own.
    #[test]
    fn anvil_dumps_and_forms_read() {
        let dump = json!({
            "block": {"number": "0x2", "beneficiary": "0x0000000000000000000000000000000000000000",
                "timestamp": "0x6b0f1891", "gas_limit": 30000000, "basefee": 875175000,
                "difficulty": "0x0", "prevrandao": format!("0x{}", "fe".repeat(32)),
                "blob_excess_gas_and_price": {"excess_blob_gas": 0, "blob_gasprice": 1},
                "slot_num": 0},
            "accounts": {
                "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512": {"nonce": 1, "balance": "0x0",
                    "code": "0x60005460005260206000f3", "storage": {
                        format!("0x{:064x}", 0): format!("0x{:064x}", 0x2a),
                        format!("0x{:064x}", 1): "0x99"}},
                "0xF39FD6E51AAD88F6F4CE6AB8827279CFFFB92266": {"nonce": 2,
                    "balance": 12345, "code": "0x", "storage": {}}},
            "best_block_number": 2,
            "blocks": [{"header": {"number": "0x2"}, "transactions": [{"transaction": {}}]}],
            "transactions": [{"info": {"traces": [{"trace": {"steps": []}}]}}],
            "historical_states": null,
            "something_newer": {"a": [1, 2]}
        });
        let loaded = decode(&gzip(dump.to_string().as_bytes()), LIMITS).expect("anvil's dump");
        assert_eq!(loaded.best_block_number, Some(2));
        assert_eq!(loaded.accounts.len(), 2);
        let contract = &loaded.accounts[0];
        assert_eq!(
            contract.storage,
            vec![(U256::ZERO, U256::from(0x2a)), (U256::from(1), U256::from(0x99))]
        );
        assert_eq!(loaded.accounts[1].balance, U256::from(12345));
        assert_eq!(loaded.accounts[1].nonce, 2);

        // anvil's required-but-nullable keys.
        let minimal = json!({"block": null, "accounts": {}, "best_block_number": null});
        assert_eq!(decode(minimal.to_string().as_bytes(), LIMITS).expect("nulls").accounts, vec![]);
    }

    fn refused(bytes: &[u8]) -> String {
        decode(bytes, LIMITS).expect_err("refused").to_string()
    }

    /// Every kind of bad input is refused with what is wrong.
    #[test]
    fn bad_dumps_are_refused_with_what_is_wrong() {
        let good = document(&state(), &forks()).expect("encode");
        let packed = gzip(&good);

        let mut truncated = packed.clone();
        truncated.truncate(packed.len() / 2);
        assert!(refused(&truncated).contains("gzip"), "{}", refused(&truncated));
        let mut no_trailer = packed.clone();
        no_trailer.truncate(packed.len() - 4);
        assert!(refused(&no_trailer).contains("gzip"), "{}", refused(&no_trailer));
        // A flipped bit in the compressed data: inflating fails, or yields bytes that are not
        // the JSON (then the CRC would fail at the end, but the parse stops first).
        let mut flipped = packed.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x55;
        let message = refused(&flipped);
        assert!(
            message.contains("gzip") || message.contains("not an anvil state dump"),
            "{message}"
        );
        let mut bad_crc = packed;
        let crc = bad_crc.len() - 8;
        bad_crc[crc] ^= 1;
        assert!(refused(&bad_crc).contains("gzip"), "{}", refused(&bad_crc));

        assert!(refused(&good[..good.len() - 10]).contains("not an anvil state dump"));
        assert!(refused(b"").contains("not an anvil state dump"));
        assert!(refused(&[0x00, 0x01, 0x02]).contains("not an anvil state dump"));
        assert!(refused(b"[]").contains("not an anvil state dump"));
        let mut trailing = good;
        trailing.extend_from_slice(b" x");
        assert!(refused(&trailing).contains("trailing"), "{}", refused(&trailing));

        let with = |account: Value| {
            let dump = json!({"block": null, "best_block_number": null,
                "accounts": {"0x00000000000000000000000000000000000c0ffe": account}});
            refused(dump.to_string().as_bytes())
        };
        let ok = json!({"nonce": 1, "balance": "0x1", "code": "0x", "storage": {}});
        let but = |key: &str, value: Value| {
            let mut account = ok.clone();
            account[key] = value;
            account
        };
        let over = r#"{"block": null, "best_block_number": null, "accounts":
            {"0x00000000000000000000000000000000000c0ffe": {"nonce": 18446744073709551616,
            "balance": "0x1", "code": "0x", "storage": {}}}}"#;
        assert!(refused(over.as_bytes()).contains("u64"), "{}", refused(over.as_bytes()));
        for (account, says) in [
            (but("nonce", json!(-1)), "u64"),
            (but("nonce", json!("0x1")), "u64"),
            (but("balance", json!(format!("0x1{}", "0".repeat(64)))), "256 bits"),
            (but("balance", json!("100")), "256 bits"),
            (but("balance", json!("0x")), "256 bits"),
            (but("balance", json!("0xzz")), "256 bits"),
            (but("balance", json!(-5)), "256 bits"),
            (but("code", json!("0x123")), "hex string"),
            (
                but("code", json!(format!("0x{}", "00".repeat(EIP170_CODE_BYTES + 1)))),
                "code size limit",
            ),
            (but("storage", json!({"0x1": "0x2"})), "not an anvil state dump"),
            (
                but("storage", json!({format!("0x{:064x}", 1): format!("0x1{}", "0".repeat(64))})),
                "256 bits",
            ),
            (json!({"nonce": 1, "balance": "0x1", "code": "0x"}), "missing field `storage`"),
        ] {
            let message = with(account.clone());
            assert!(message.contains(says), "{account}: {message}");
        }
        let bad_address = json!({"block": null, "best_block_number": null,
            "accounts": {"0x1234": ok}});
        assert!(refused(bad_address.to_string().as_bytes()).contains("not an anvil state dump"));
        for missing in ["block", "accounts", "best_block_number"] {
            let mut dump = json!({"block": null, "accounts": {}, "best_block_number": null});
            dump.as_object_mut().expect("object").remove(missing);
            let message = refused(dump.to_string().as_bytes());
            assert!(message.contains(&format!("missing field `{missing}`")), "{message}");
        }
        let far = json!({"block": {"number": format!("0x1{}", "0".repeat(16)),
            "beneficiary": "0x0000000000000000000000000000000000000000", "timestamp": "0x1",
            "gas_limit": 1, "basefee": 1}, "accounts": {}, "best_block_number": 1});
        assert!(refused(far.to_string().as_bytes()).contains("block.number"));
    }

    /// Input past the bound is refused at the bound, compressed (a gzip bomb: a few KiB that
    /// inflate to far more than the bound) or plain; input just under it is read.
    #[test]
    fn input_past_the_bound_is_refused_there() {
        let padded = |spaces: usize| {
            let mut json = b"{\"block\":null,\"accounts\":{},\"best_block_number\":null}".to_vec();
            json.resize(json.len() + spaces, b' ');
            json
        };
        let small = StateLimits { max_json_bytes: 4096, ..LIMITS };
        assert!(decode(&padded(4000), small).is_ok());
        assert!(decode(&gzip(&padded(4000)), small).is_ok());
        assert!(refused_with(&padded(4096), small).contains("larger than 4096"));
        assert!(refused_with(&gzip(&padded(4096)), small).contains("larger than 4096"));

        // 64 MiB of JSON whitespace, or of one code string, in about 64 KiB each: refused
        // once 1 MiB + 1 byte has been inflated.
        let spaces = gzip(&padded(64 << 20));
        assert!(spaces.len() < 1 << 20);
        assert!(refused(&spaces).contains("larger than 1048576"), "{}", refused(&spaces));
        let mut code = b"{\"block\":null,\"best_block_number\":null,\"accounts\":{\"0x00000000000000000000000000000000000c0ffe\":{\"nonce\":1,\"balance\":\"0x1\",\"code\":\"0x".to_vec();
        code.resize(code.len() + (64 << 20), b'0');
        assert!(refused(&gzip(&code)).contains("larger than 1048576"));
        // Zeros are not JSON: refused at the first byte.
        assert!(refused(&gzip(&vec![0u8; 1 << 20])).contains("not an anvil state dump"));
    }

    fn refused_with(bytes: &[u8], limits: StateLimits) -> String {
        decode(bytes, limits).expect_err("refused").to_string()
    }
}
