//! geth-style `genesis.json`: the chain configuration (chain id, fork block numbers and
//! timestamps, blob schedule) and the genesis block (alloc and header fields).
//!
//! [`ChainConfig`] answers "which rules apply to block N at time T" for the importer and the
//! node. It is stored in the datadir as the `config` object of the genesis file, verbatim, so a
//! node started later on that datadir re-reads exactly what the import used.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_consensus::Header;
use alloy_consensus::constants::EMPTY_OMMER_ROOT_HASH;
use alloy_eips::eip1559::INITIAL_BASE_FEE;
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B64, B256, Bloom, Bytes, U256, address, hex};
use hearth_actors::exec::default_blob_params;
use hearth_storage::trie::EMPTY_ROOT;
use hearth_storage::{ChainDb, StorageError, state_root_after};
use revm::primitives::hardfork::SpecId;
use serde_json::Value;

use crate::conformance::fixture::{AllocAccount, alloc_diff};
use crate::import::ForkRules;

/// A genesis file or stored chain configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GenesisError {
    /// The file could not be read.
    #[error("cannot read the genesis file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("the genesis file is not valid JSON: {0}; pass a geth-style genesis.json")]
    Json(#[from] serde_json::Error),
    /// A field is missing or malformed.
    #[error("genesis field {field} is missing or malformed ({value}); fix the genesis file")]
    Field {
        /// Which field.
        field: String,
        /// What was there.
        value: String,
    },
}

impl GenesisError {
    fn field(field: impl Into<String>, value: &Value) -> Self {
        Self::Field { field: field.into(), value: value.to_string() }
    }
}

/// Block-numbered forks of a geth config, in activation order, with the rules they bring.
/// `constantinopleBlock` maps to Petersburg: revm has no separate Constantinople (EIP-1283 was
/// removed before it ever ran on mainnet), and chains schedule both together in practice.
const BLOCK_FORKS: &[(&str, SpecId)] = &[
    ("homesteadBlock", SpecId::HOMESTEAD),
    ("eip150Block", SpecId::TANGERINE),
    ("eip155Block", SpecId::SPURIOUS_DRAGON),
    ("eip158Block", SpecId::SPURIOUS_DRAGON),
    ("byzantiumBlock", SpecId::BYZANTIUM),
    ("constantinopleBlock", SpecId::PETERSBURG),
    ("petersburgBlock", SpecId::PETERSBURG),
    ("istanbulBlock", SpecId::ISTANBUL),
    ("muirGlacierBlock", SpecId::ISTANBUL),
    ("berlinBlock", SpecId::BERLIN),
    ("londonBlock", SpecId::LONDON),
    ("arrowGlacierBlock", SpecId::LONDON),
    ("grayGlacierBlock", SpecId::LONDON),
    ("mergeNetsplitBlock", SpecId::MERGE),
];

/// Timestamped forks: config key, blob schedule key, rules. Blob-parameter-only forks (BPO)
/// keep the EVM rules of Osaka and change only the blob schedule.
const TIME_FORKS: &[(&str, &str, SpecId)] = &[
    ("shanghaiTime", "shanghai", SpecId::SHANGHAI),
    ("cancunTime", "cancun", SpecId::CANCUN),
    ("pragueTime", "prague", SpecId::PRAGUE),
    ("osakaTime", "osaka", SpecId::OSAKA),
    ("bpo1Time", "bpo1", SpecId::OSAKA),
    ("bpo2Time", "bpo2", SpecId::OSAKA),
    ("bpo3Time", "bpo3", SpecId::OSAKA),
    ("bpo4Time", "bpo4", SpecId::OSAKA),
    ("bpo5Time", "bpo5", SpecId::OSAKA),
];

/// The rules of a chain: chain id, fork schedule and blob schedule.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// Chain id.
    pub chain_id: u64,
    /// (activation block, rules), as listed in the config.
    block_forks: Vec<(u64, SpecId)>,
    /// (activation time, blob schedule key, rules).
    time_forks: Vec<(u64, &'static str, SpecId)>,
    /// Whether the chain merges by total difficulty (a pre-merge block with difficulty 0 is
    /// then the first Paris block, even without `mergeNetsplitBlock`).
    has_ttd: bool,
    /// Blob schedule entries by lowercase fork name: (target, max, update fraction).
    blob_schedule: BTreeMap<String, (u64, u64, u64)>,
    /// The config object as given; what is stored in the datadir.
    raw: Value,
}

impl ChainConfig {
    /// Reads the `config` object of a genesis file.
    pub fn from_json(config: &Value) -> Result<Self, GenesisError> {
        let chain_id = config
            .get("chainId")
            .ok_or_else(|| GenesisError::field("config.chainId", &Value::Null))
            .and_then(|v| quantity_u64("config.chainId", v))?;
        let mut block_forks = Vec::new();
        for (key, spec) in BLOCK_FORKS {
            if let Some(v) = config.get(*key).filter(|v| !v.is_null()) {
                block_forks.push((quantity_u64(&format!("config.{key}"), v)?, *spec));
            }
        }
        let mut time_forks = Vec::new();
        for (key, name, spec) in TIME_FORKS {
            if let Some(v) = config.get(*key).filter(|v| !v.is_null()) {
                time_forks.push((quantity_u64(&format!("config.{key}"), v)?, *name, *spec));
            }
        }
        let mut blob_schedule = BTreeMap::new();
        if let Some(entries) = config.get("blobSchedule").and_then(Value::as_object) {
            for (name, entry) in entries {
                let get = |k: &str| {
                    let field = format!("config.blobSchedule.{name}.{k}");
                    entry
                        .get(k)
                        .ok_or_else(|| GenesisError::field(&field, entry))
                        .and_then(|v| quantity_u64(&field, v))
                };
                blob_schedule.insert(
                    name.to_lowercase(),
                    (get("target")?, get("max")?, get("baseFeeUpdateFraction")?),
                );
            }
        }
        let has_ttd = config.get("terminalTotalDifficulty").is_some_and(|v| !v.is_null());
        Ok(Self { chain_id, block_forks, time_forks, has_ttd, blob_schedule, raw: config.clone() })
    }

    /// Reads a configuration stored with [`ChainConfig::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, GenesisError> {
        Self::from_json(&serde_json::from_slice(bytes)?)
    }

    /// The configuration as stored in the datadir (the genesis `config` object).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.raw.to_string().into_bytes()
    }

    /// The rules of block `number` at `timestamp`.
    pub fn spec_at(&self, number: u64, timestamp: u64) -> SpecId {
        let mut spec = SpecId::FRONTIER;
        for (block, fork) in &self.block_forks {
            if number >= *block && *fork > spec {
                spec = *fork;
            }
        }
        for (time, _, fork) in &self.time_forks {
            if timestamp >= *time && *fork > spec {
                spec = *fork;
            }
        }
        spec
    }

    /// The rules a received `header` is imported under: [`ChainConfig::spec_at`], and Paris
    /// from the first London block with difficulty 0 on a chain that merges by total
    /// difficulty (there is no total difficulty to compare without a PoW verifier).
    pub fn rules_for(&self, header: &Header) -> ForkRules {
        let mut spec = self.spec_at(header.number, header.timestamp);
        if self.has_ttd
            && spec.is_enabled_in(SpecId::LONDON)
            && !spec.is_enabled_in(SpecId::MERGE)
            && header.difficulty.is_zero()
        {
            spec = SpecId::MERGE;
        }
        ForkRules {
            spec,
            blob_params: self.blob_params_at(spec, header.timestamp),
            chain_id: self.chain_id,
        }
    }

    /// The blob parameters at `timestamp`: the fork's defaults, overridden by the schedule
    /// entry of the latest timestamped fork in force, when it has one.
    pub fn blob_params_at(&self, spec: SpecId, timestamp: u64) -> BlobParams {
        let mut params = default_blob_params(spec);
        let entry = self
            .time_forks
            .iter()
            .filter(|(time, _, _)| timestamp >= *time)
            .max_by_key(|(time, _, _)| *time)
            .and_then(|(_, name, _)| self.blob_schedule.get(*name).copied());
        if let Some((target, max, fraction)) = entry {
            params.target_blob_count = target;
            params.max_blob_count = max;
            params.update_fraction = u128::from(fraction);
            if !spec.is_enabled_in(SpecId::OSAKA) {
                // Before EIP-7594 a transaction may carry as many blobs as a block.
                params.max_blobs_per_tx = max;
            }
        }
        params
    }
}

/// Forks whose blob schedule entry applies from them on; the others (Shanghai, Osaka, ...)
/// keep the one before them (geth's `BlobConfig` walk, which eth_config reports).
const BLOB_SCHEDULE_FORKS: [&str; 7] = ["cancun", "prague", "bpo1", "bpo2", "bpo3", "bpo4", "bpo5"];

impl ChainConfig {
    /// The forks as eth_config (EIP-7910) reports them: every block-numbered fork the
    /// configuration lists (for the EIP-2124 fork id), and each timestamped fork with its blob
    /// schedule, precompiles and system contracts.
    pub fn forks(&self) -> hearth_rpc::ChainForks {
        let block_forks = self
            .raw
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| key.ends_with("Block"))
            .filter_map(|(_, value)| value.as_u64())
            .collect();
        let deposit_contract = self
            .raw
            .get("depositContractAddress")
            .and_then(|v| serde_json::from_value::<Address>(v.clone()).ok())
            .unwrap_or_default();
        let mut blob_schedule = None;
        let time_forks = self
            .time_forks
            .iter()
            .map(|(time, name, spec)| {
                if BLOB_SCHEDULE_FORKS.contains(name)
                    && let Some(entry) = self.blob_schedule.get(*name)
                {
                    let (target, max, fraction) = *entry;
                    let mut params = default_blob_params(*spec);
                    params.target_blob_count = target;
                    params.max_blob_count = max;
                    params.update_fraction = u128::from(fraction);
                    blob_schedule = Some(params);
                }
                let precompiles = revm::precompile::Precompiles::new(
                    revm::precompile::PrecompileSpecId::from_spec_id(*spec),
                )
                .inner()
                .iter()
                .map(|(address, precompile)| (precompile.id().name().to_owned(), *address))
                .collect();
                hearth_rpc::TimeFork {
                    name: (*name).to_owned(),
                    time: *time,
                    blob_schedule: blob_schedule.filter(|_| spec.is_enabled_in(SpecId::CANCUN)),
                    precompiles,
                    system_contracts: system_contract_names(*spec, deposit_contract),
                }
            })
            .collect();
        hearth_rpc::ChainForks { block_forks, time_forks }
    }
}

/// The system contracts in force under `spec`, by EIP-7910 name.
fn system_contract_names(spec: SpecId, deposit_contract: Address) -> BTreeMap<String, Address> {
    use alloy_eips::{eip2935, eip4788, eip7002, eip7251};
    let mut contracts = BTreeMap::new();
    if spec.is_enabled_in(SpecId::CANCUN) {
        contracts.insert("BEACON_ROOTS_ADDRESS".to_owned(), eip4788::BEACON_ROOTS_ADDRESS);
    }
    if spec.is_enabled_in(SpecId::PRAGUE) {
        let consolidation = eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS;
        contracts.insert("CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS".to_owned(), consolidation);
        contracts.insert("DEPOSIT_CONTRACT_ADDRESS".to_owned(), deposit_contract);
        contracts.insert("HISTORY_STORAGE_ADDRESS".to_owned(), eip2935::HISTORY_STORAGE_ADDRESS);
        let withdrawal = eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS;
        contracts.insert("WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS".to_owned(), withdrawal);
    }
    contracts
}

/// Trace replays on an imported chain run each block under the rules its import used.
impl hearth_messages::trace::ForkSchedule for ChainConfig {
    fn rules_for(&self, header: &Header) -> hearth_messages::trace::BlockForkRules {
        let rules = Self::rules_for(self, header);
        hearth_messages::trace::BlockForkRules { spec: rules.spec, blob_params: rules.blob_params }
    }
}

/// Address of the deterministic deployment proxy ("CREATE2 deployer") that anvil puts in
/// every dev genesis; deployment scripts (forge's among them) send salted creations to it.
pub const CREATE2_DEPLOYER: Address = address!("4e59b44847b379578588920ca78fbf26c0b4956c");

/// The proxy's runtime code, as anvil serves it from `eth_getCode`. Calldata is a 32-byte salt
/// followed by initcode; it runs CREATE2 with the call's value, reverts when the creation
/// fails, and returns the new contract's 20-byte address.
pub const CREATE2_DEPLOYER_CODE: [u8; 69] = hex!(
    "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe0"
    "3601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3"
);

/// What a dev chain's genesis is made of: the node's flags (and a `--init` file's accounts).
#[derive(Debug, Clone)]
pub struct DevGenesis {
    /// Chain id.
    pub chain_id: u64,
    /// The rules every block runs under; every fork up to it is active at block 0.
    pub spec: SpecId,
    /// Funded accounts.
    pub accounts: Vec<(Address, U256)>,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Base fee of block 0.
    pub base_fee: u64,
    /// Timestamp of block 0 (seconds).
    pub timestamp: u64,
    /// Fee recipient of block 0.
    pub coinbase: Address,
    /// Whether the CREATE2 deployer is deployed (anvil's default).
    pub create2_deployer: bool,
    /// Accounts of a `--init` genesis file, as written there (balance, nonce, code, storage):
    /// set last, so they replace a dev account or contract at the same address.
    pub alloc: BTreeMap<Address, Value>,
}

impl DevGenesis {
    /// The dev chain's genesis as a geth-style genesis.json document, which is what makes the
    /// chain: the node writes block 0 from it exactly as `hearth import --genesis` would, and
    /// stores it, so an exported dev chain imports back to the same hashes.
    ///
    /// Beside the funded accounts it deploys the system contracts of `system_contracts` (with
    /// nonce 1, as their deployment transactions leave them): from Prague, EIP-2935's block
    /// hashes and the EIP-7002 / EIP-7251 request queues. Without the request contracts a
    /// Prague block is invalid, so a dev chain without them could not be re-imported. And, unless
    /// turned off, the CREATE2 deployer at [`CREATE2_DEPLOYER`] (nonce 0, as anvil has it).
    pub fn document(&self) -> Value {
        let mut config = serde_json::Map::new();
        config.insert("chainId".into(), self.chain_id.into());
        for (key, fork) in BLOCK_FORKS {
            if self.spec.is_enabled_in(*fork) {
                config.insert((*key).into(), 0.into());
            }
        }
        if self.spec.is_enabled_in(SpecId::MERGE) {
            config.insert("terminalTotalDifficulty".into(), 0.into());
        }
        let mut blob_schedule = serde_json::Map::new();
        for (key, name, fork) in TIME_FORKS {
            // Blob-parameter-only forks are not rules of their own: a dev chain has none.
            if name.starts_with("bpo") || !self.spec.is_enabled_in(*fork) {
                continue;
            }
            config.insert((*key).into(), 0.into());
            if fork.is_enabled_in(SpecId::CANCUN) {
                let params = default_blob_params(*fork);
                blob_schedule.insert(
                    (*name).into(),
                    serde_json::json!({
                        "target": params.target_blob_count,
                        "max": params.max_blob_count,
                        "baseFeeUpdateFraction": u64::try_from(params.update_fraction)
                            .unwrap_or(u64::MAX),
                    }),
                );
            }
        }
        if !blob_schedule.is_empty() {
            config.insert("blobSchedule".into(), blob_schedule.into());
        }
        let mut alloc = serde_json::Map::new();
        for (address, balance) in &self.accounts {
            alloc
                .insert(address.to_string(), serde_json::json!({ "balance": balance.to_string() }));
        }
        for (address, code, fork) in system_contracts() {
            if self.spec.is_enabled_in(fork) {
                alloc.insert(
                    address.to_string(),
                    serde_json::json!({ "balance": "0x0", "nonce": "0x1", "code": code.to_string() }),
                );
            }
        }
        if self.create2_deployer {
            alloc.insert(
                CREATE2_DEPLOYER.to_string(),
                serde_json::json!({ "balance": "0x0", "code": hex::encode_prefixed(CREATE2_DEPLOYER_CODE) }),
            );
        }
        for (address, account) in &self.alloc {
            alloc.insert(address.to_string(), account.clone());
        }
        serde_json::json!({
            "config": config,
            "nonce": "0x0",
            "timestamp": format!("{:#x}", self.timestamp),
            "extraData": "0x",
            "gasLimit": format!("{:#x}", self.gas_limit),
            "difficulty": "0x0",
            "mixHash": B256::ZERO.to_string(),
            "coinbase": self.coinbase.to_string(),
            "baseFeePerGas": format!("{:#x}", self.base_fee),
            "alloc": alloc,
        })
    }
}

/// The system contracts a dev genesis deploys: address, runtime code and the fork that calls
/// into them. Prague's request queues (EIP-7002, EIP-7251) must exist, or its blocks are
/// invalid; EIP-2935's block hashes serve BLOCKHASH history to contracts, as anvil deploys it.
/// EIP-4788's beacon roots are left out, as anvil leaves them: a dev block has no beacon root
/// to record (it would store zero every block), the EIPs make the call a no-op without the
/// contract, and its two storage writes a block cost 13% of one sender's mined rate
/// (BENCHMARKS.md). Put it back with `--init` or `anvil_setCode` where a contract reads it.
fn system_contracts() -> [(Address, &'static Bytes, SpecId); 3] {
    use alloy_eips::{eip2935, eip7002, eip7251};
    [
        (eip2935::HISTORY_STORAGE_ADDRESS, &eip2935::HISTORY_STORAGE_CODE, SpecId::PRAGUE),
        (
            eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
            &eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_CODE,
            SpecId::PRAGUE,
        ),
        (
            eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
            &eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_CODE,
            SpecId::PRAGUE,
        ),
    ]
}

/// What a dev chain takes from a genesis file given with `--init`, as anvil takes it: the
/// chain id, timestamp, base fee, coinbase and block number of the header, and the accounts.
/// The file's gas limit, fork schedule and other header fields are not used (the flags set
/// those, as in anvil).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitGenesis {
    /// `config.chainId`.
    pub chain_id: u64,
    /// `timestamp` (0 when absent).
    pub timestamp: u64,
    /// `baseFeePerGas`, when given.
    pub base_fee: Option<u64>,
    /// `coinbase` (zero when absent).
    pub coinbase: Address,
    /// `number` (0 when absent).
    pub number: u64,
    /// `alloc`, each account as written (it was checked to parse).
    pub alloc: BTreeMap<Address, Value>,
}

impl InitGenesis {
    /// Reads and checks a genesis file as `hearth import` does, then takes what a dev chain
    /// uses from it.
    pub fn read(path: &Path) -> Result<Self, GenesisError> {
        let genesis = Genesis::read(path)?;
        let doc = genesis.document();
        let opt = |key: &str| doc.get(key).filter(|x| !x.is_null());
        let mut alloc = BTreeMap::new();
        if let Some(accounts) = doc.get("alloc").and_then(Value::as_object) {
            for (key, account) in accounts {
                let address: Address = key
                    .parse()
                    .map_err(|_| GenesisError::field(format!("alloc key {key}"), account))?;
                alloc.insert(address, account.clone());
            }
        }
        Ok(Self {
            chain_id: genesis.config.chain_id,
            timestamp: genesis.header.timestamp,
            base_fee: opt("baseFeePerGas").map(|x| quantity_u64("baseFeePerGas", x)).transpose()?,
            coinbase: genesis.header.beneficiary,
            number: opt("number").map_or(Ok(0), |x| quantity_u64("number", x))?,
            alloc,
        })
    }
}

/// A parsed genesis file: the chain's rules, its alloc and its block 0.
#[derive(Debug, Clone)]
pub struct Genesis {
    /// The chain's rules.
    pub config: ChainConfig,
    /// The accounts of block 0.
    alloc: BTreeMap<Address, AllocAccount>,
    /// Block 0's header without its state root (computed from `alloc`).
    header: Header,
    /// The document as given: what the datadir keeps, and `hearth export --genesis-out` writes.
    document: Value,
}

impl Genesis {
    /// Reads a genesis file.
    pub fn read(path: &Path) -> Result<Self, GenesisError> {
        let text = std::fs::read(path)
            .map_err(|source| GenesisError::Read { path: path.display().to_string(), source })?;
        Self::from_json(&serde_json::from_slice(&text)?)
    }

    /// Parses a genesis JSON document.
    pub fn from_json(v: &Value) -> Result<Self, GenesisError> {
        let config = ChainConfig::from_json(
            v.get("config").ok_or_else(|| GenesisError::field("config", &Value::Null))?,
        )?;
        let alloc = parse_alloc(v.get("alloc").unwrap_or(&Value::Null))?;
        let opt = |key: &str| v.get(key).filter(|x| !x.is_null());
        let u64_or =
            |key: &str, default: u64| opt(key).map_or(Ok(default), |x| quantity_u64(key, x));
        let b256_or_zero = |key: &str| -> Result<B256, GenesisError> {
            opt(key).map_or(Ok(B256::ZERO), |x| {
                let b = hex_bytes(key, x)?;
                (b.len() == 32)
                    .then(|| B256::from_slice(&b))
                    .ok_or_else(|| GenesisError::field(key, x))
            })
        };
        let timestamp = u64_or("timestamp", 0)?;
        let spec = config.spec_at(0, timestamp);
        let cancun = spec.is_enabled_in(SpecId::CANCUN);
        let beneficiary = match opt("coinbase") {
            Some(x) => x
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| GenesisError::field("coinbase", x))?,
            None => Address::ZERO,
        };
        // geth writes the nonce as a quantity; the header holds it as 8 big-endian bytes.
        let nonce = B64::from(u64_or("nonce", 0)?.to_be_bytes());
        let header = Header {
            parent_hash: b256_or_zero("parentHash")?,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary,
            state_root: B256::ZERO,
            transactions_root: EMPTY_ROOT,
            receipts_root: EMPTY_ROOT,
            logs_bloom: Bloom::ZERO,
            difficulty: opt("difficulty").map_or(Ok(U256::ZERO), |x| quantity("difficulty", x))?,
            number: 0,
            gas_limit: u64_or("gasLimit", 0)?,
            gas_used: 0,
            timestamp,
            extra_data: opt("extraData").map_or(Ok(Bytes::new()), |x| hex_bytes("extraData", x))?,
            mix_hash: b256_or_zero("mixHash")?,
            nonce,
            // Each fork field is present exactly when the fork is active at genesis, with the
            // value geth would put there when the file leaves it out.
            base_fee_per_gas: spec
                .is_enabled_in(SpecId::LONDON)
                .then(|| u64_or("baseFeePerGas", INITIAL_BASE_FEE))
                .transpose()?,
            withdrawals_root: spec.is_enabled_in(SpecId::SHANGHAI).then_some(EMPTY_ROOT),
            blob_gas_used: cancun.then(|| u64_or("blobGasUsed", 0)).transpose()?,
            excess_blob_gas: cancun.then(|| u64_or("excessBlobGas", 0)).transpose()?,
            parent_beacon_block_root: cancun
                .then(|| b256_or_zero("parentBeaconBlockRoot"))
                .transpose()?,
            requests_hash: spec.is_enabled_in(SpecId::PRAGUE).then_some(EMPTY_REQUESTS_HASH),
            ..Default::default()
        };
        Ok(Self { config, alloc, header, document: v.clone() })
    }

    /// The genesis document, as given.
    pub const fn document(&self) -> &Value {
        &self.document
    }

    /// Block 0's header, with the state root of the alloc (computed by our trie, nothing
    /// written).
    pub fn header(&self, db: &ChainDb) -> Result<Header, StorageError> {
        let mut header = self.header.clone();
        header.state_root = state_root_after(db, 0, &alloc_diff(&self.alloc))?;
        Ok(header)
    }

    /// The state diff that creates the alloc.
    pub fn diff(&self) -> hearth_storage::StateDiff {
        alloc_diff(&self.alloc)
    }
}

fn parse_alloc(v: &Value) -> Result<BTreeMap<Address, AllocAccount>, GenesisError> {
    let Some(map) = v.as_object() else {
        return Err(GenesisError::field("alloc", v));
    };
    let mut out = BTreeMap::new();
    for (key, account) in map {
        let field = |name: &str| format!("alloc.{key}.{name}");
        let address: Address =
            key.parse().map_err(|_| GenesisError::field(format!("alloc key {key}"), account))?;
        let mut storage = BTreeMap::new();
        if let Some(slots) = account.get("storage").and_then(Value::as_object) {
            for (slot, value) in slots {
                let slot_value = Value::String(slot.clone());
                storage.insert(
                    quantity(&field("storage key"), &slot_value)?,
                    quantity(&field("storage"), value)?,
                );
            }
        }
        let get = |name: &str| account.get(name).filter(|x| !x.is_null());
        out.insert(
            address,
            AllocAccount {
                nonce: get("nonce").map_or(Ok(0), |x| quantity_u64(&field("nonce"), x))?,
                balance: get("balance")
                    .map_or(Ok(U256::ZERO), |x| quantity(&field("balance"), x))?,
                code: get("code").map_or(Ok(Bytes::new()), |x| hex_bytes(&field("code"), x))?,
                storage,
            },
        );
    }
    Ok(out)
}

/// A quantity written as a JSON number, a hex string (`"0x1f"`, leading zeros allowed) or a
/// decimal string, as geth accepts.
fn quantity(field: &str, v: &Value) -> Result<U256, GenesisError> {
    let bad = || GenesisError::field(field, v);
    match v {
        Value::Number(n) => n.as_u64().map(U256::from).ok_or_else(bad),
        Value::String(s) => match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some("") => Ok(U256::ZERO),
            Some(hex) => U256::from_str_radix(hex, 16).map_err(|_| bad()),
            None => U256::from_str_radix(s, 10).map_err(|_| bad()),
        },
        _ => Err(bad()),
    }
}

fn quantity_u64(field: &str, v: &Value) -> Result<u64, GenesisError> {
    u64::try_from(quantity(field, v)?).map_err(|_| GenesisError::field(field, v))
}

fn hex_bytes(field: &str, v: &Value) -> Result<Bytes, GenesisError> {
    v.as_str()
        .and_then(|s| alloy_primitives::hex::decode(s).ok())
        .map(Bytes::from)
        .ok_or_else(|| GenesisError::field(field, v))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hive_config() -> ChainConfig {
        ChainConfig::from_json(&json!({
            "chainId": 3503995874084926u64, "homesteadBlock": 0, "eip150Block": 3,
            "byzantiumBlock": 9, "londonBlock": 27, "mergeNetsplitBlock": 36,
            "terminalTotalDifficulty": 4732736, "shanghaiTime": 390, "cancunTime": 420,
            "pragueTime": 450, "osakaTime": 480, "bpo1Time": 510,
            "blobSchedule": {
                "cancun": {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477},
                "bpo1": {"target": 10, "max": 15, "baseFeeUpdateFraction": 8346193}
            }
        }))
        .expect("valid config")
    }

    #[test]
    fn forks_follow_block_numbers_then_timestamps() {
        let config = hive_config();
        assert_eq!(config.spec_at(0, 0), SpecId::HOMESTEAD);
        assert_eq!(config.spec_at(3, 30), SpecId::TANGERINE);
        assert_eq!(config.spec_at(27, 270), SpecId::LONDON);
        assert_eq!(config.spec_at(36, 360), SpecId::MERGE);
        assert_eq!(config.spec_at(39, 390), SpecId::SHANGHAI);
        assert_eq!(config.spec_at(45, 450), SpecId::PRAGUE);
        assert_eq!(config.spec_at(51, 510), SpecId::OSAKA);
    }

    #[test]
    fn blob_schedule_follows_the_latest_fork_with_an_entry() {
        let config = hive_config();
        let cancun = config.blob_params_at(SpecId::CANCUN, 420);
        assert_eq!((cancun.target_blob_count, cancun.max_blob_count), (3, 6));
        // Prague has no entry here, so its defaults apply.
        let prague = config.blob_params_at(SpecId::PRAGUE, 450);
        assert_eq!(prague.max_blob_count, BlobParams::prague().max_blob_count);
        let bpo1 = config.blob_params_at(SpecId::OSAKA, 510);
        assert_eq!((bpo1.max_blob_count, bpo1.update_fraction), (15, 8346193));
    }

    fn dev(spec: SpecId) -> DevGenesis {
        DevGenesis {
            chain_id: 31337,
            spec,
            accounts: vec![(Address::repeat_byte(1), U256::from(5))],
            gas_limit: 30_000_000,
            base_fee: 7,
            timestamp: 1000,
            coinbase: Address::ZERO,
            create2_deployer: true,
            alloc: BTreeMap::new(),
        }
    }

    /// The addresses with code in `doc`'s alloc.
    fn contracts(doc: &Value) -> Vec<Address> {
        let alloc = doc["alloc"].as_object().expect("alloc");
        let mut out: Vec<Address> = alloc
            .iter()
            .filter(|(_, account)| account.get("code").is_some())
            .map(|(key, _)| key.parse().expect("address"))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_system_contracts_follow_the_hardfork() {
        use alloy_eips::{eip2935, eip7002, eip7251};
        let prague_set = {
            let mut all = vec![
                CREATE2_DEPLOYER,
                eip2935::HISTORY_STORAGE_ADDRESS,
                eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
                eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
            ];
            all.sort();
            all
        };
        let cancun_set = vec![CREATE2_DEPLOYER];
        let cases = [
            (SpecId::SHANGHAI, vec![CREATE2_DEPLOYER], "shanghaiTime", "cancunTime"),
            (SpecId::CANCUN, cancun_set, "cancunTime", "pragueTime"),
            (SpecId::PRAGUE, prague_set.clone(), "pragueTime", "osakaTime"),
            (SpecId::OSAKA, prague_set, "osakaTime", "bpo1Time"),
        ];
        for (spec, expected, active, inactive) in cases {
            let doc = dev(spec).document();
            assert_eq!(contracts(&doc), expected, "{spec:?}");
            assert_eq!(doc["config"][active], 0, "{spec:?}");
            assert!(doc["config"].get(inactive).is_none(), "{spec:?}");
            // The document is a genesis the importer reads back under the same rules.
            let genesis = Genesis::from_json(&doc).expect("valid genesis");
            assert_eq!(genesis.config.spec_at(0, 1000), spec);
            assert_eq!(genesis.header.requests_hash.is_some(), spec >= SpecId::PRAGUE);
            assert_eq!(genesis.header.parent_beacon_block_root.is_some(), spec >= SpecId::CANCUN);
        }
    }

    #[test]
    fn the_create2_deployer_can_be_left_out_and_init_accounts_win() {
        let mut without = dev(SpecId::PRAGUE);
        without.create2_deployer = false;
        assert!(!contracts(&without.document()).contains(&CREATE2_DEPLOYER));
        let doc = dev(SpecId::PRAGUE).document();
        let deployer = &doc["alloc"][CREATE2_DEPLOYER.to_string()];
        assert_eq!(deployer["code"], format!("0x{}", hex::encode(CREATE2_DEPLOYER_CODE)));
        assert!(deployer.get("nonce").is_none(), "nonce 0, as anvil has it");

        let mut init = dev(SpecId::PRAGUE);
        let funded = Address::repeat_byte(1);
        init.alloc.insert(funded, json!({"balance": "0x10", "nonce": "0x3"}));
        init.alloc.insert(Address::repeat_byte(2), json!({"balance": "0x20"}));
        init.coinbase = Address::repeat_byte(0xaa);
        let doc = init.document();
        assert_eq!(doc["alloc"][funded.to_string()]["balance"], "0x10", "the file's account wins");
        assert_eq!(doc["alloc"][Address::repeat_byte(2).to_string()]["balance"], "0x20");
        assert_eq!(doc["coinbase"], Address::repeat_byte(0xaa).to_string());
        assert_eq!(doc["baseFeePerGas"], "0x7");
        assert_eq!(doc["timestamp"], "0x3e8");
    }

    #[test]
    fn init_reads_what_a_dev_chain_uses() {
        let dir = std::env::temp_dir().join(format!("hearth-init-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("genesis.json");
        let file = json!({
            "config": {"chainId": 777, "londonBlock": 0},
            "timestamp": "0x1000", "gasLimit": "0x2000000", "baseFeePerGas": "0x7",
            "coinbase": "0x00000000000000000000000000000000000000aa", "number": "0x0",
            "alloc": {"1111111111111111111111111111111111111111": {"balance": "0x10"}}
        });
        std::fs::write(&path, file.to_string()).expect("write");
        let init = InitGenesis::read(&path).expect("valid");
        assert_eq!(
            (init.chain_id, init.timestamp, init.base_fee, init.number),
            (777, 4096, Some(7), 0)
        );
        assert_eq!(init.coinbase, Address::with_last_byte(0xaa));
        assert_eq!(init.alloc[&Address::repeat_byte(0x11)], json!({"balance": "0x10"}));
        std::fs::write(&path, json!({"config": {"chainId": 1}, "alloc": {"xyz": {}}}).to_string())
            .expect("write");
        let err = InitGenesis::read(&path).expect_err("bad key");
        assert!(err.to_string().contains("alloc key xyz"), "{err}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn bad_fields_are_named() {
        let err = ChainConfig::from_json(&json!({"chainId": "x"})).expect_err("bad chain id");
        assert!(err.to_string().contains("config.chainId"), "{err}");
        let err = ChainConfig::from_json(&json!({"chainId": 1, "londonBlock": []}))
            .expect_err("bad fork");
        assert!(err.to_string().contains("config.londonBlock"), "{err}");
    }
}
