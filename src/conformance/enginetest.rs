//! `hearth enginetest`: the Ethereum Foundation blockchain tests replayed through a running
//! node's Engine API, as a consensus client would feed it, instead of through the import path.
//!
//! Per test (post-merge networks; a pre-merge block has no payload form): the genesis and the
//! fixture's fork schedule are written to an in-memory store, a node is started on it with the
//! Engine API port on loopback (its own actix system, stopped after the test), and each block
//! goes over HTTP with a JWT as `engine_newPayloadV<n>` (the version of its fork), then, when
//! VALID, `engine_forkchoiceUpdatedV<n>` to it. A block the fixture expects to fail must be
//! INVALID (or refused as a malformed payload, -32602); every other must be VALID and become
//! the head. Finally the head's hash must be `lastblockhash`.
//!
//! A block does not carry its EIP-7685 requests and a Prague payload call does: they are taken
//! from an import of the same blocks first (`import_with_requests`). A wrong request list
//! would change the block hash and be refused, so this cannot make a bad block pass.

use std::path::PathBuf;
use std::sync::Arc;

use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::{B256, Bytes};
use alloy_rlp::Decodable;
use alloy_rpc_types_engine::JwtSecret;
use hearth_storage::ChainWriter;
use serde_json::{Value, json};

use super::blocktest::{CaseError, write_genesis};
use super::fixture::{self, Schedule};
use super::{FixtureError, RunOptions, Summary};
use crate::config::{AuthRpc, NodeConfig};
use crate::engine_api::{EngineApi, EngineCallError};
use crate::import::{ForkRules, import_with_requests};
use crate::node::Node;

/// Runs every blockchain test in `paths` through the Engine API; failures go to stdout.
pub fn run(paths: &[PathBuf], options: &RunOptions) -> Result<Summary, FixtureError> {
    super::run_files("enginetest", paths, options, run_cases)
}

fn run_cases(cases: &serde_json::Map<String, Value>, options: &RunOptions) -> Summary {
    let mut summary = Summary::default();
    for (name, case, network) in super::selected_cases(cases, options) {
        let runner = actix::System::new();
        let outcome = runner.block_on(async {
            let outcome = run_case(case, network).await;
            actix::System::current().stop();
            outcome
        });
        match outcome {
            Ok(Verdict::Passed) => summary.passed += 1,
            Ok(Verdict::NotPayloads) => summary.skipped += 1,
            Ok(Verdict::Failed(why)) => {
                summary.fail(format!("FAIL {name} network={network}: {why}"));
            }
            Err(e) => summary.fail(format!("FAIL {name} network={network}: {e}")),
        }
    }
    summary
}

/// How one test went.
enum Verdict {
    Passed,
    /// A pre-merge network: its blocks cannot be payloads.
    NotPayloads,
    Failed(String),
}

/// Why a test could not be run.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Case(#[from] CaseError),
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    #[error("storage: {0}")]
    Storage(#[from] hearth_storage::StorageError),
    #[error("the node did not start: {0}")]
    Node(#[from] crate::node::NodeError),
    #[error("the secret file: {0}")]
    Secret(#[from] std::io::Error),
}

/// One fixture block: decoded (or why not), what the fixture expects, its requests.
struct FixtureBlock {
    block: Result<Block<TxEnvelope>, String>,
    expect_exception: bool,
    requests: Vec<Bytes>,
}

async fn run_case(case: &Value, network: &str) -> Result<Verdict, RunError> {
    let config = case.get("config");
    let schedule = Schedule::new(network, config.and_then(|c| c.get("blobSchedule")))
        .ok_or_else(|| CaseError::Network(network.to_owned()))?;
    if !schedule.after_merge() {
        return Ok(Verdict::NotPayloads);
    }
    let chain_id =
        config.and_then(|c| c.get("chainid")).map(fixture::u64_of).transpose()?.unwrap_or(1);
    let Some(blocks) = reference_blocks(case, &schedule, chain_id)? else {
        return Ok(Verdict::Failed("the genesis does not import".into()));
    };
    let db = ChainWriter::in_memory()?;
    if let Some(why) = write_genesis(&db, case)? {
        return Ok(Verdict::Failed(why));
    }
    db.set_chain_config(schedule.geth_config(chain_id).to_string().as_bytes())?;
    let secret = JwtSecret::random();
    let secret_file = SecretFile::write(&secret)?;
    let mut node_config = NodeConfig::for_tests();
    node_config.automine = false;
    node_config.authrpc = Some(AuthRpc {
        addr: "127.0.0.1:0".parse().map_err(|_| CaseError::Network("loopback".into()))?,
        jwt_secret: secret_file.0.clone(),
        same_second_blocks: false,
    });
    let node = Node::start_on(db, node_config, Arc::new(|| 0))?;
    let Some((server, addr)) = node.serve_engine()? else {
        return Ok(Verdict::Failed("the Engine API port did not start".into()));
    };
    let handle = server.handle();
    actix_rt::spawn(server);
    let api = EngineApi::new(format!("http://{addr}"), secret);
    let verdict = replay(&api, blocks, case).await;
    handle.stop(false).await;
    Ok(verdict)
}

/// The fixture's blocks, each with its requests from an import of the chain (`None`: the
/// genesis itself does not import, which the blockchain test reports).
fn reference_blocks(
    case: &Value,
    schedule: &Schedule,
    chain_id: u64,
) -> Result<Option<Vec<FixtureBlock>>, RunError> {
    let db = ChainWriter::in_memory()?;
    if write_genesis(&db, case)?.is_some() {
        return Ok(None);
    }
    let mut executor = super::statetest::executor(
        &db,
        chain_id,
        schedule.at(0).1,
        hearth_actors::ParallelConfig::default(),
    );
    let mut out = Vec::new();
    for block in case["blocks"].as_array().into_iter().flatten() {
        let expect_exception = block.get("expectException").is_some();
        let rlp = fixture::bytes(&block["rlp"])?;
        let decoded = Block::<TxEnvelope, Header>::decode(&mut rlp.as_ref())
            .map_err(|e| format!("block RLP does not decode: {e}"));
        let mut requests = Vec::new();
        if let Ok(decoded) = &decoded {
            let timestamp = decoded.header.timestamp;
            let rules = ForkRules {
                spec: schedule.at(timestamp).1,
                blob_params: schedule.blob_params(timestamp)?,
                chain_id,
            };
            if let Ok((_, found)) =
                import_with_requests(&db, &mut executor, decoded.clone(), &rules)
            {
                requests = found;
            }
        }
        out.push(FixtureBlock { block: decoded, expect_exception, requests });
    }
    Ok(Some(out))
}

/// Sends every block as a payload and checks each verdict, then the head.
async fn replay(api: &EngineApi, blocks: Vec<FixtureBlock>, case: &Value) -> Verdict {
    for (i, FixtureBlock { block, expect_exception, requests }) in blocks.into_iter().enumerate() {
        let block = match (block, expect_exception) {
            (Ok(block), _) => block,
            (Err(_), true) => continue,
            (Err(why), false) => return Verdict::Failed(format!("block {i}: {why}")),
        };
        let accepted = match api.new_payload(&block, &requests).await {
            Ok(status) if status["status"] == "VALID" => true,
            Ok(status) if status["status"] == "INVALID" => false,
            Ok(status) => {
                return Verdict::Failed(format!("block {i}: newPayload answered {status}"));
            }
            // A payload the version's structure refuses is a block refused.
            Err(EngineCallError::Rpc { code: -32602 | -38005, .. }) if expect_exception => false,
            Err(e) => return Verdict::Failed(format!("block {i}: {e}")),
        };
        match (accepted, expect_exception) {
            (true, true) => {
                return Verdict::Failed(format!("block {i} was VALID, expected invalid"));
            }
            (false, false) => return Verdict::Failed(format!("block {i} was INVALID")),
            (false, true) => continue,
            (true, false) => {}
        }
        let version = crate::engine_api::forkchoice_version(&block.header);
        let hash = block.header.hash_slow();
        match api.forkchoice(version, hash, B256::ZERO, B256::ZERO).await {
            Ok(status) if status["status"] == "VALID" => {}
            Ok(status) => {
                return Verdict::Failed(format!("block {i}: forkchoice answered {status}"));
            }
            Err(e) => return Verdict::Failed(format!("block {i}: forkchoice: {e}")),
        }
    }
    let head = match api.call("eth_getBlockByNumber", json!(["latest", false])).await {
        Ok(head) => head,
        Err(e) => return Verdict::Failed(format!("eth_getBlockByNumber: {e}")),
    };
    let want = case["lastblockhash"].as_str().unwrap_or_default().to_lowercase();
    match head["hash"].as_str() {
        Some(hash) if hash == want => Verdict::Passed,
        other => Verdict::Failed(format!("head hash expected {want} got {other:?}")),
    }
}

/// A JWT secret written to a file of its own for the node to read, removed when dropped.
struct SecretFile(PathBuf);

impl SecretFile {
    fn write(secret: &JwtSecret) -> std::io::Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("hearth-enginetest-{}-{n}.hex", std::process::id()));
        std::fs::write(&path, alloy_primitives::hex::encode(secret.as_bytes()))?;
        Ok(Self(path))
    }
}

impl Drop for SecretFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
