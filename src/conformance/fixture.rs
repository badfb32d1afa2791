//! Reading the JSON of the Ethereum Foundation fixtures: hex quantities, allocs (`pre`,
//! `post.state`, `postState`), fork names and blob schedules, and comparing an expected alloc
//! with what Hearth stored.

use std::collections::BTreeMap;

use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use hearth_actors::exec::default_blob_params;
use hearth_storage::{AccountChange, AccountFields, EMPTY_CODE_HASH, StateDiff, StateView};
use revm::primitives::hardfork::SpecId;
use serde_json::Value;

use super::FixtureError;

/// A hex quantity (`"0x0a"`, leading zeros allowed, `"0x"` is zero) as U256.
pub(crate) fn u256(v: &Value) -> Result<U256, FixtureError> {
    let s = v.as_str().ok_or_else(|| FixtureError::field("quantity", v))?;
    let digits = s.strip_prefix("0x").unwrap_or(s);
    if digits.is_empty() {
        return Ok(U256::ZERO);
    }
    U256::from_str_radix(digits, 16).map_err(|_| FixtureError::field("quantity", v))
}

/// A hex quantity that fits 64 bits.
pub(crate) fn u64_of(v: &Value) -> Result<u64, FixtureError> {
    u64::try_from(u256(v)?).map_err(|_| FixtureError::field("u64 quantity", v))
}

/// Hex bytes (`"0x…"`).
pub(crate) fn bytes(v: &Value) -> Result<Bytes, FixtureError> {
    let s = v.as_str().ok_or_else(|| FixtureError::field("hex bytes", v))?;
    alloy_primitives::hex::decode(s)
        .map(Bytes::from)
        .map_err(|_| FixtureError::field("hex bytes", v))
}

/// A 32-byte hash.
pub(crate) fn b256(v: &Value) -> Result<B256, FixtureError> {
    let b = bytes(v)?;
    (b.len() == 32).then(|| B256::from_slice(&b)).ok_or_else(|| FixtureError::field("hash", v))
}

/// A 20-byte address (also accepts the key of an alloc map).
pub(crate) fn address(s: &str) -> Result<Address, FixtureError> {
    s.parse().map_err(|_| FixtureError::field("address", &Value::String(s.to_owned())))
}

/// One account of an alloc.
#[derive(Debug, Clone)]
pub(crate) struct AllocAccount {
    pub(crate) nonce: u64,
    pub(crate) balance: U256,
    pub(crate) code: Bytes,
    pub(crate) storage: BTreeMap<U256, U256>,
}

/// An alloc map (`pre`, `post[..].state`, `postState`).
pub(crate) fn alloc(v: &Value) -> Result<BTreeMap<Address, AllocAccount>, FixtureError> {
    let map = v.as_object().ok_or_else(|| FixtureError::field("alloc", v))?;
    let mut out = BTreeMap::new();
    for (key, account) in map {
        let mut storage = BTreeMap::new();
        if let Some(slots) = account.get("storage").and_then(Value::as_object) {
            for (slot, value) in slots {
                storage.insert(u256(&Value::String(slot.clone()))?, u256(value)?);
            }
        }
        out.insert(
            address(key)?,
            AllocAccount {
                nonce: account.get("nonce").map(u64_of).transpose()?.unwrap_or_default(),
                balance: account.get("balance").map(u256).transpose()?.unwrap_or_default(),
                code: account.get("code").map(bytes).transpose()?.unwrap_or_default(),
                storage,
            },
        );
    }
    Ok(out)
}

/// The state diff that writes `alloc` into an empty state (genesis).
pub(crate) fn alloc_diff(alloc: &BTreeMap<Address, AllocAccount>) -> StateDiff {
    let mut diff = StateDiff::default();
    for (address, account) in alloc {
        let code_hash =
            if account.code.is_empty() { EMPTY_CODE_HASH } else { keccak256(&account.code) };
        if code_hash != EMPTY_CODE_HASH {
            diff.codes.insert(code_hash, account.code.clone());
        }
        diff.accounts.insert(
            *address,
            AccountChange {
                info: Some(AccountFields {
                    nonce: account.nonce,
                    balance: account.balance,
                    code_hash,
                }),
                storage_wiped: false,
                storage: account
                    .storage
                    .iter()
                    .filter(|(_, v)| !v.is_zero())
                    .map(|(k, v)| (*k, *v))
                    .collect(),
            },
        );
    }
    diff
}

/// The first difference between `expected` and the state in `view`, if any.
pub(crate) fn first_difference(
    view: &StateView,
    expected: &BTreeMap<Address, AllocAccount>,
) -> Result<Option<String>, hearth_storage::StorageError> {
    for (address, want) in expected {
        let Some(got) = view.account(address)? else {
            return Ok(Some(format!("account {address} is missing")));
        };
        if got.nonce != want.nonce {
            return Ok(Some(format!(
                "account {address} nonce: expected {} got {}",
                want.nonce, got.nonce
            )));
        }
        if got.balance != want.balance {
            return Ok(Some(format!(
                "account {address} balance: expected {} got {}",
                want.balance, got.balance
            )));
        }
        let code = view.code_of(address)?;
        if code != want.code {
            return Ok(Some(format!(
                "account {address} code: expected {} bytes got {} bytes",
                want.code.len(),
                code.len()
            )));
        }
        for (slot, value) in &want.storage {
            let have = view.storage(address, slot)?;
            if have != *value {
                return Ok(Some(format!(
                    "account {address} slot {slot:#x}: expected {value:#x} got {have:#x}"
                )));
            }
        }
    }
    Ok(None)
}

/// revm's spec for a fixture fork name (not the transition networks).
pub(crate) fn spec_of(fork: &str) -> Option<SpecId> {
    Some(match fork {
        "Frontier" => SpecId::FRONTIER,
        "Homestead" => SpecId::HOMESTEAD,
        "EIP150" | "Tangerine" => SpecId::TANGERINE,
        "EIP158" | "SpuriousDragon" => SpecId::SPURIOUS_DRAGON,
        "Byzantium" => SpecId::BYZANTIUM,
        "ConstantinopleFix" | "Petersburg" => SpecId::PETERSBURG,
        "Istanbul" => SpecId::ISTANBUL,
        "Berlin" => SpecId::BERLIN,
        "London" => SpecId::LONDON,
        "Paris" | "Merge" => SpecId::MERGE,
        "Shanghai" => SpecId::SHANGHAI,
        "Cancun" => SpecId::CANCUN,
        "Prague" => SpecId::PRAGUE,
        "Osaka" => SpecId::OSAKA,
        _ => return None,
    })
}

/// A fork schedule: one fork, or a transition network (second fork from timestamp 15000).
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    before: (String, SpecId),
    after: Option<(String, SpecId)>,
    blob_schedule: Option<Value>,
}

/// When the second fork of a transition network starts.
const TRANSITION_TIME: u64 = 15_000;

impl Schedule {
    /// The schedule of `network`, with the fixture's `config.blobSchedule`.
    pub(crate) fn new(network: &str, blob_schedule: Option<&Value>) -> Option<Self> {
        let named = |name: &str| -> Option<(String, SpecId)> {
            // Blob-parameter-only forks keep the EVM rules of the fork before them.
            let spec = if name.starts_with("BPO") { SpecId::OSAKA } else { spec_of(name)? };
            Some((name.to_owned(), spec))
        };
        let (before, after) = match network.split_once("To") {
            Some((a, rest)) => {
                let b = rest.strip_suffix("AtTime15k")?;
                (named(a)?, Some(named(b)?))
            }
            None => (named(network)?, None),
        };
        Some(Self { before, after, blob_schedule: blob_schedule.cloned() })
    }

    /// The fork name and spec in force at `timestamp`.
    pub(crate) fn at(&self, timestamp: u64) -> (&str, SpecId) {
        match &self.after {
            Some((name, spec)) if timestamp >= TRANSITION_TIME => (name, *spec),
            _ => (&self.before.0, self.before.1),
        }
    }

    /// Whether every block of this schedule is after the merge (a payload can carry it).
    pub(crate) fn after_merge(&self) -> bool {
        self.before.1.is_enabled_in(SpecId::MERGE)
    }

    /// The schedule as a geth genesis `config` object (chain id, every block fork at 0, the
    /// merge at 0, the timestamped forks at 0 and at the transition time), so a node started
    /// on the fixture's genesis runs under the fixture's rules. Post-merge schedules only.
    pub(crate) fn geth_config(&self, chain_id: u64) -> Value {
        /// Timestamped forks in order, as fixtures and genesis configurations name them.
        const TIMED: [(&str, &str); 9] = [
            ("Shanghai", "shanghaiTime"),
            ("Cancun", "cancunTime"),
            ("Prague", "pragueTime"),
            ("Osaka", "osakaTime"),
            ("BPO1", "bpo1Time"),
            ("BPO2", "bpo2Time"),
            ("BPO3", "bpo3Time"),
            ("BPO4", "bpo4Time"),
            ("BPO5", "bpo5Time"),
        ];
        let rank = |name: &str| TIMED.iter().position(|(fork, _)| *fork == name);
        let mut config = serde_json::json!({
            "chainId": chain_id,
            "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0, "eip158Block": 0,
            "byzantiumBlock": 0, "constantinopleBlock": 0, "petersburgBlock": 0,
            "istanbulBlock": 0, "berlinBlock": 0, "londonBlock": 0,
            "mergeNetsplitBlock": 0, "terminalTotalDifficulty": 0,
        });
        let before = rank(&self.before.0);
        let after = self.after.as_ref().and_then(|(name, _)| rank(name));
        for (i, (_, key)) in TIMED.iter().enumerate() {
            let time = match (before, after) {
                (Some(b), _) if i <= b => 0,
                (_, Some(a)) if i <= a => TRANSITION_TIME,
                _ => continue,
            };
            config[*key] = serde_json::json!(time);
        }
        if let Some(schedule) = &self.blob_schedule {
            config["blobSchedule"] = schedule.clone();
        }
        config
    }

    /// The blob parameters in force at `timestamp`: the fixture's schedule entry for the fork,
    /// on top of the fork's defaults (max blobs per tx, blob base cost).
    pub(crate) fn blob_params(&self, timestamp: u64) -> Result<BlobParams, FixtureError> {
        let (name, spec) = self.at(timestamp);
        blob_params_for(self.blob_schedule.as_ref(), name, spec)
    }
}

/// The blob parameters of fork `name` from a `config.blobSchedule`.
pub(crate) fn blob_params_for(
    schedule: Option<&Value>,
    name: &str,
    spec: SpecId,
) -> Result<BlobParams, FixtureError> {
    let mut params = default_blob_params(spec);
    if let Some(entry) = schedule.and_then(|s| s.get(name)) {
        if let Some(v) = entry.get("target") {
            params.target_blob_count = u64_of(v)?;
        }
        if let Some(v) = entry.get("max") {
            params.max_blob_count = u64_of(v)?;
            if !spec.is_enabled_in(SpecId::OSAKA) {
                // Before EIP-7594 a transaction may carry as many blobs as a block.
                params.max_blobs_per_tx = params.max_blob_count;
            }
        }
        if let Some(v) = entry.get("baseFeeUpdateFraction") {
            params.update_fraction = u128::from(u64_of(v)?);
        }
    }
    Ok(params)
}

/// A header from its JSON form (`genesisBlockHeader`, `blockHeader`), with every fork field the
/// JSON has; absent fork fields stay `None`.
pub(crate) fn header(v: &Value) -> Result<alloy_consensus::Header, FixtureError> {
    let opt_u64 = |key: &str| v.get(key).map(u64_of).transpose();
    let opt_b256 = |key: &str| v.get(key).map(b256).transpose();
    let bloom = bytes(&v["bloom"])?;
    let nonce = bytes(&v["nonce"])?;
    Ok(alloy_consensus::Header {
        parent_hash: b256(&v["parentHash"])?,
        ommers_hash: b256(&v["uncleHash"])?,
        beneficiary: address(v["coinbase"].as_str().unwrap_or_default())?,
        state_root: b256(&v["stateRoot"])?,
        transactions_root: b256(&v["transactionsTrie"])?,
        receipts_root: b256(&v["receiptTrie"])?,
        logs_bloom: alloy_primitives::Bloom::try_from(bloom.as_ref())
            .map_err(|_| FixtureError::field("bloom", &v["bloom"]))?,
        difficulty: u256(&v["difficulty"])?,
        number: u64_of(&v["number"])?,
        gas_limit: u64_of(&v["gasLimit"])?,
        gas_used: u64_of(&v["gasUsed"])?,
        timestamp: u64_of(&v["timestamp"])?,
        extra_data: bytes(&v["extraData"])?,
        mix_hash: b256(&v["mixHash"])?,
        nonce: alloy_primitives::B64::try_from(nonce.as_ref())
            .map_err(|_| FixtureError::field("nonce", &v["nonce"]))?,
        base_fee_per_gas: opt_u64("baseFeePerGas")?,
        withdrawals_root: opt_b256("withdrawalsRoot")?,
        blob_gas_used: opt_u64("blobGasUsed")?,
        excess_blob_gas: opt_u64("excessBlobGas")?,
        parent_beacon_block_root: opt_b256("parentBeaconBlockRoot")?,
        requests_hash: opt_b256("requestsHash")?,
        ..Default::default()
    })
}
