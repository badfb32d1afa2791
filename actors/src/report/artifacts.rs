//! The developer's build output (`--artifacts DIR`, repeatable): Foundry's `out/` and
//! Hardhat's `artifacts/` layouts, read once at startup into names for what the node prints:
//! functions by selector, events by topic, custom errors by selector, and each contract's
//! deployed code to recognise it at an address. Plus a few standard interfaces (ERC-20, 721,
//! 1155, Ownable, proxies), so common calls read by name without artifacts. No network look-ups.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use alloy_json_abi::{Event, Function, JsonAbi};
use alloy_primitives::B256;

use super::revert::KnownErrors;

/// Artifact files read at most (a directory tree bigger than any project's build output is a
/// wrong path).
pub const MAX_ARTIFACT_FILES: usize = 20_000;

/// Bytes one artifact file may have (Foundry's largest carry ASTs of a few MB).
const MAX_ARTIFACT_BYTES: u64 = 64 * 1024 * 1024;

/// The standard interfaces known without artifacts, in Solidity's human-readable form.
const STANDARD: &[&str] = &[
    // ERC-20
    "function totalSupply() view returns (uint256)",
    "function balanceOf(address account) view returns (uint256)",
    "function transfer(address to, uint256 value) returns (bool)",
    "function allowance(address owner, address spender) view returns (uint256)",
    "function approve(address spender, uint256 value) returns (bool)",
    "function transferFrom(address from, address to, uint256 value) returns (bool)",
    "function name() view returns (string)",
    "function symbol() view returns (string)",
    "function decimals() view returns (uint8)",
    "event Transfer(address indexed from, address indexed to, uint256 value)",
    "event Approval(address indexed owner, address indexed spender, uint256 value)",
    // ERC-721
    "function ownerOf(uint256 tokenId) view returns (address)",
    "function safeTransferFrom(address from, address to, uint256 tokenId)",
    "function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)",
    "function setApprovalForAll(address operator, bool approved)",
    "function getApproved(uint256 tokenId) view returns (address)",
    "function isApprovedForAll(address owner, address operator) view returns (bool)",
    "function tokenURI(uint256 tokenId) view returns (string)",
    "event ApprovalForAll(address indexed owner, address indexed operator, bool approved)",
    // ERC-1155
    "function balanceOfBatch(address[] accounts, uint256[] ids) view returns (uint256[])",
    "function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] values, bytes data)",
    "function uri(uint256 id) view returns (string)",
    "event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)",
    "event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)",
    "event URI(string value, uint256 indexed id)",
    // ERC-165, Ownable, proxies (ERC-1967)
    "function supportsInterface(bytes4 interfaceId) view returns (bool)",
    "function owner() view returns (address)",
    "function transferOwnership(address newOwner)",
    "function renounceOwnership()",
    "event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)",
    "function upgradeToAndCall(address newImplementation, bytes data) payable",
    "function upgradeTo(address newImplementation)",
    "function implementation() view returns (address)",
    "event Upgraded(address indexed implementation)",
    "event AdminChanged(address previousAdmin, address newAdmin)",
];

/// One contract of the build output.
#[derive(Debug)]
pub struct Contract {
    /// Its name.
    pub name: String,
    /// Its ABI.
    pub abi: JsonAbi,
    /// Its deployed code without the metadata trailer; immutables and library addresses are
    /// zeros, as solc leaves them.
    code: Vec<u8>,
}

/// Names for what ran: the contracts, functions, events and errors known.
#[derive(Debug, Default)]
pub struct Artifacts {
    contracts: Vec<Contract>,
    functions: HashMap<[u8; 4], Vec<Function>>,
    events: HashMap<B256, Vec<Event>>,
    /// Custom errors, for revert reasons.
    pub errors: KnownErrors,
    /// Deployed code length → the contracts of that length, for matching code at an address.
    by_len: HashMap<usize, Vec<usize>>,
}

/// What reading `--artifacts` found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Contracts with a deployed code.
    pub contracts: usize,
    /// Files read that were not artifacts (build info, debug files, anything else).
    pub skipped: usize,
}

/// Why `--artifacts` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactsError {
    /// The path is not a readable directory.
    #[error(
        "--artifacts {path}: {source} (give the build output directory: Foundry's out/ or Hardhat's artifacts/)"
    )]
    Unreadable {
        /// The path given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Too many files under it.
    #[error(
        "--artifacts {path}: more than {MAX_ARTIFACT_FILES} files; give the build output directory, not a parent of it"
    )]
    TooMany {
        /// The path given.
        path: PathBuf,
    },
}

impl Artifacts {
    /// The standard interfaces only.
    pub fn standard() -> Self {
        let mut artifacts = Self::default();
        let abi = JsonAbi::parse(STANDARD.iter().copied()).expect("the standard interfaces parse");
        artifacts.add_names(&abi);
        artifacts
    }

    /// Reads every artifact under `dir` (recursively), calling `progress` with each count of
    /// files read so far (every few hundred files), so a person waiting sees it move.
    pub fn load_dir(
        &mut self,
        dir: &Path,
        mut progress: impl FnMut(usize),
    ) -> Result<Loaded, ArtifactsError> {
        let unreadable = |source| ArtifactsError::Unreadable { path: dir.to_owned(), source };
        let mut files = Vec::new();
        let mut pending = vec![dir.to_owned()];
        while let Some(at) = pending.pop() {
            for entry in std::fs::read_dir(&at).map_err(unreadable)? {
                let path = entry.map_err(unreadable)?.path();
                if path.is_dir() {
                    // Hardhat's compiler inputs and outputs, not artifacts.
                    if path.file_name().is_some_and(|n| n == "build-info") {
                        continue;
                    }
                    pending.push(path);
                } else if path.extension().is_some_and(|e| e == "json") {
                    if files.len() == MAX_ARTIFACT_FILES {
                        return Err(ArtifactsError::TooMany { path: dir.to_owned() });
                    }
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut loaded = Loaded::default();
        for (i, path) in files.iter().enumerate() {
            if i > 0 && i % 250 == 0 {
                progress(i);
            }
            match read_artifact(path) {
                Some(contract) => {
                    self.add(contract);
                    loaded.contracts += 1;
                }
                None => loaded.skipped += 1,
            }
        }
        progress(files.len());
        Ok(loaded)
    }

    /// Adds one contract: its names, and its code for matching.
    pub fn add(&mut self, contract: Contract) {
        self.add_names(&contract.abi);
        if !contract.code.is_empty() {
            self.by_len.entry(contract.code.len()).or_default().push(self.contracts.len());
            self.contracts.push(contract);
        }
    }

    fn add_names(&mut self, abi: &JsonAbi) {
        for function in abi.functions() {
            let list = self.functions.entry(function.selector().0).or_default();
            if !list.contains(function) {
                list.push(function.clone());
            }
        }
        for event in abi.events() {
            let list = self.events.entry(event.selector()).or_default();
            if !list.contains(event) {
                list.push(event.clone());
            }
        }
        self.errors.add_abi(abi);
    }

    /// The contract whose deployed code `code` is, ignoring the metadata trailer, immutables
    /// and linked library addresses (where the artifact has zeros).
    pub fn contract_of(&self, code: &[u8]) -> Option<&Contract> {
        let code = strip_metadata(code);
        let candidates = self.by_len.get(&code.len())?;
        candidates
            .iter()
            .map(|&i| &self.contracts[i])
            .find(|c| c.code.iter().zip(code).all(|(want, have)| want == have || *want == 0))
    }

    /// The functions `selector` names, the ones of `preferred` first.
    pub fn functions<'a>(
        &'a self,
        selector: [u8; 4],
        preferred: Option<&'a Contract>,
    ) -> impl Iterator<Item = &'a Function> {
        let own = preferred
            .into_iter()
            .flat_map(move |c| c.abi.functions().filter(move |f| f.selector().0 == selector));
        own.chain(self.functions.get(&selector).into_iter().flatten())
    }

    /// The events `topic` names, the ones of `preferred` first.
    pub fn events<'a>(
        &'a self,
        topic: B256,
        preferred: Option<&'a Contract>,
    ) -> impl Iterator<Item = &'a Event> {
        let own = preferred
            .into_iter()
            .flat_map(move |c| c.abi.events().filter(move |e| e.selector() == topic));
        own.chain(self.events.get(&topic).into_iter().flatten())
    }

    /// How many contracts can be recognised by their code.
    pub fn contracts(&self) -> usize {
        self.contracts.len()
    }
}

/// One artifact file as a contract: Foundry's (`abi`, `deployedBytecode.object`) or Hardhat's
/// (`contractName`, `abi`, `deployedBytecode` as a string). `None` for anything else.
fn read_artifact(path: &Path) -> Option<Contract> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".dbg.json") || std::fs::metadata(path).ok()?.len() > MAX_ARTIFACT_BYTES {
        return None;
    }
    let text = std::fs::read(path).ok()?;
    let json: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let abi: JsonAbi = serde_json::from_value(json.get("abi")?.clone()).ok()?;
    let deployed = json.get("deployedBytecode")?;
    let hex = deployed.as_str().or_else(|| deployed.get("object")?.as_str())?;
    let name = json
        .get("contractName")
        .and_then(|n| n.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| name.trim_end_matches(".json").to_owned());
    Some(Contract { name, abi, code: strip_metadata(&unlinked_hex(hex)?).to_vec() })
}

/// Decodes an artifact's hex code, its library placeholders (`__$…$__`, 40 characters) as
/// zeros.
fn unlinked_hex(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.strip_prefix("0x").unwrap_or(hex);
    let mut bytes = Vec::with_capacity(hex.len() / 2);
    let mut rest = hex;
    while !rest.is_empty() {
        if rest.starts_with("__") {
            let placeholder = rest.get(..40)?;
            bytes.extend([0u8; 20]);
            rest = &rest[placeholder.len()..];
            continue;
        }
        let next = rest.find("__").unwrap_or(rest.len());
        bytes.extend(alloy_primitives::hex::decode(&rest[..next]).ok()?);
        rest = &rest[next..];
    }
    Some(bytes)
}

/// Code without solc's CBOR metadata trailer (its length is the code's last two bytes), which
/// differs between builds of the same source.
fn strip_metadata(code: &[u8]) -> &[u8] {
    let Some((rest, len)) = code.split_last_chunk::<2>() else { return code };
    let len = usize::from(u16::from_be_bytes(*len));
    // The trailer is a CBOR map (0xa1..0xa7); anything else is no trailer.
    match rest.len().checked_sub(len) {
        Some(start) if len > 0 && (0xa1..=0xa7).contains(&rest[start]) => &rest[..start],
        _ => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_matches_whatever_its_metadata_and_immutables() {
        // Code, then a 3-byte immutable slot, then a CBOR trailer of 4 bytes and its length.
        let artifact =
            [&[0x60, 0x01, 0x00, 0x00, 0x00, 0x56][..], &[0xa1, 0x01, 0x02, 0x03], &[0x00, 0x04]]
                .concat();
        let deployed =
            [&[0x60, 0x01, 0xaa, 0xbb, 0xcc, 0x56][..], &[0xa1, 0x09, 0x09, 0x09], &[0x00, 0x04]]
                .concat();
        let mut artifacts = Artifacts::standard();
        artifacts.add(Contract {
            name: "Thing".into(),
            abi: JsonAbi::new(),
            code: strip_metadata(&artifact).to_vec(),
        });
        assert_eq!(artifacts.contract_of(&deployed).map(|c| c.name.as_str()), Some("Thing"));
        let other =
            [&[0x60, 0x02, 0xaa, 0xbb, 0xcc, 0x56][..], &[0xa1, 0x09, 0x09, 0x09], &[0x00, 0x04]]
                .concat();
        assert!(artifacts.contract_of(&other).is_none());
    }

    #[test]
    fn library_placeholders_read_as_zeros() {
        let hex = format!("0x6001{}56", "__$abcdefabcdefabcdefabcdefabcdefabcd$__");
        assert_eq!(unlinked_hex(&hex).unwrap(), [&[0x60, 0x01][..], &[0; 20], &[0x56]].concat());
    }

    #[test]
    fn foundry_and_hardhat_layouts_both_read() {
        let dir = std::env::temp_dir().join(format!("hearth-artifacts-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("Foo.sol")).unwrap();
        std::fs::create_dir_all(dir.join("build-info")).unwrap();
        let abi = r#"[{"type":"function","name":"poke","inputs":[],"outputs":[],"stateMutability":"nonpayable"}]"#;
        std::fs::write(
            dir.join("Foo.sol/Foo.json"),
            format!(r#"{{"abi":{abi},"deployedBytecode":{{"object":"0x600156"}}}}"#),
        )
        .unwrap();
        std::fs::write(
            dir.join("Foo.sol/Bar.json"),
            format!(r#"{{"_format":"hh-sol-artifact-1","contractName":"Bar","abi":{abi},"deployedBytecode":"0x600256"}}"#),
        )
        .unwrap();
        std::fs::write(dir.join("Foo.sol/Bar.dbg.json"), "{}").unwrap();
        std::fs::write(dir.join("build-info/x.json"), "{}").unwrap();
        let mut artifacts = Artifacts::standard();
        let loaded = artifacts.load_dir(&dir, |_| {}).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(loaded, Loaded { contracts: 2, skipped: 1 });
        assert_eq!(artifacts.contract_of(&[0x60, 0x01, 0x56]).unwrap().name, "Foo");
        assert_eq!(artifacts.contract_of(&[0x60, 0x02, 0x56]).unwrap().name, "Bar");
        let transfer = alloy_primitives::hex!("a9059cbb");
        assert_eq!(artifacts.functions(transfer, None).next().unwrap().name, "transfer");
    }
}
