//! `hearth blocktest`: runs Ethereum Foundation blockchain tests through Hearth's block import
//! path ([`crate::import::import`]).
//!
//! Per test: `pre` and the header decoded from `genesisRLP` are written as block 0 (our trie's
//! root must equal the header's state root, and the header's hash the fixture's hash), then
//! every `blocks[i].rlp` is decoded and imported; blocks marked `expectException` must be
//! rejected. Finally the head hash must equal `lastblockhash` and the stored accounts
//! `postState`.

use std::path::PathBuf;

use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_rlp::Decodable;
use hearth_actors::ExecutorActor;
use hearth_storage::{BlockDraft, ChainWriter, import_block};
use serde_json::Value;

use super::fixture::{self, Schedule};
use super::{FixtureError, RunOptions, Summary};
use crate::import::{ForkRules, empty_body, import};

/// Runs every blockchain test in `paths` (files or directories); failures go to stdout.
pub fn run(paths: &[PathBuf], options: &RunOptions) -> Result<Summary, FixtureError> {
    super::run_files("blocktest", paths, options, run_cases)
}

/// Runs the cases of one file.
fn run_cases(cases: &serde_json::Map<String, Value>, options: &RunOptions) -> Summary {
    let mut summary = Summary::default();
    for (name, case, network) in super::selected_cases(cases, options) {
        match run_case(case, network, options.parallel) {
            Ok(None) => summary.passed += 1,
            Ok(Some(why)) => summary.fail(format!("FAIL {name} network={network}: {why}")),
            Err(e) => summary.fail(format!("FAIL {name} network={network}: {e}")),
        }
    }
    summary
}

/// Why a case could not be set up.
#[derive(Debug, thiserror::Error)]
pub(super) enum CaseError {
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    #[error("storage: {0}")]
    Storage(#[from] hearth_storage::StorageError),
    #[error("unknown network {0}; add it to the fork table in conformance/fixture.rs")]
    Network(String),
}

/// Runs one test; `Ok(Some(reason))` is a failure.
fn run_case(
    case: &Value,
    network: &str,
    parallel: hearth_actors::ParallelConfig,
) -> Result<Option<String>, CaseError> {
    let config = case.get("config");
    let schedule = Schedule::new(network, config.and_then(|c| c.get("blobSchedule")))
        .ok_or_else(|| CaseError::Network(network.to_owned()))?;
    let chain_id =
        config.and_then(|c| c.get("chainid")).map(fixture::u64_of).transpose()?.unwrap_or(1);

    let db = ChainWriter::in_memory()?;
    if let Some(why) = write_genesis(&db, case)? {
        return Ok(Some(why));
    }
    let (_, first_spec) = schedule.at(0);
    let mut executor = super::statetest::executor(&db, chain_id, first_spec, parallel);
    if let Some(why) = import_blocks(&db, &mut executor, case, &schedule, chain_id)? {
        return Ok(Some(why));
    }
    check_head(&db, case)
}

/// Writes `pre` and the genesis header as block 0, checking the header against its RLP form,
/// `pre` against its state root and its hash against the fixture's; `Ok(Some(reason))` is a
/// failure.
pub(super) fn write_genesis(db: &ChainWriter, case: &Value) -> Result<Option<String>, CaseError> {
    // The genesis header is built from its JSON fields (every fork field the fixture has), so
    // the hash check exercises our header encoding; the RLP form must agree with it.
    let header = fixture::header(&case["genesisBlockHeader"])?;
    let genesis_rlp = fixture::bytes(&case["genesisRLP"])?;
    match Block::<TxEnvelope>::decode(&mut genesis_rlp.as_ref()) {
        Ok(block) if block.header == header => {}
        Ok(_) => return Ok(Some("genesisRLP and genesisBlockHeader disagree".to_owned())),
        Err(e) => return Ok(Some(format!("genesisRLP does not decode as a block: {e}"))),
    }
    let pre = fixture::alloc(&case["pre"])?;
    let draft = BlockDraft { header, body: empty_body(), receipts: vec![], touched: Vec::new() };
    // `import_block` checks that our trie's root of `pre` is the header's state root.
    let genesis = match import_block(db, draft, &fixture::alloc_diff(&pre)) {
        Ok(block) => block,
        Err(e) => return Ok(Some(format!("genesis: {e}"))),
    };
    let want_genesis = fixture::b256(&case["genesisBlockHeader"]["hash"])?;
    if genesis.hash != want_genesis {
        return Ok(Some(format!("genesis hash expected {want_genesis} got {}", genesis.hash)));
    }
    Ok(None)
}

/// Imports every block of the case in order, each under the rules of its timestamp; a block
/// marked `expectException` must be rejected. `Ok(Some(reason))` is a failure.
fn import_blocks(
    db: &ChainWriter,
    executor: &mut ExecutorActor,
    case: &Value,
    schedule: &Schedule,
    chain_id: u64,
) -> Result<Option<String>, CaseError> {
    for (i, block) in case["blocks"].as_array().into_iter().flatten().enumerate() {
        let expect_exception = block.get("expectException").and_then(Value::as_str);
        let rlp = fixture::bytes(&block["rlp"])?;
        let result = match Block::<TxEnvelope, Header>::decode(&mut rlp.as_ref()) {
            Ok(decoded) => {
                let timestamp = decoded.header.timestamp;
                let (_, spec) = schedule.at(timestamp);
                let rules =
                    ForkRules { spec, blob_params: schedule.blob_params(timestamp)?, chain_id };
                import(db, executor, decoded, &rules).map(|_| ()).map_err(|e| e.to_string())
            }
            Err(e) => Err(format!("block RLP does not decode: {e}")),
        };
        match (result, expect_exception) {
            (Ok(()), None) | (Err(_), Some(_)) => {}
            (Ok(()), Some(exception)) => {
                return Ok(Some(format!("block {i} was accepted, expected {exception}")));
            }
            (Err(e), None) => return Ok(Some(format!("block {i} rejected: {e}"))),
        }
    }
    Ok(None)
}

/// Compares the head's hash with `lastblockhash` and its state with `postState`;
/// `Ok(Some(reason))` is a failure.
fn check_head(db: &ChainWriter, case: &Value) -> Result<Option<String>, CaseError> {
    let head = db.head_number().unwrap_or_default();
    let head_hash = db.block_hash(head)?.unwrap_or_default();
    let want_head = fixture::b256(&case["lastblockhash"])?;
    if head_hash != want_head {
        return Ok(Some(format!("head hash expected {want_head} got {head_hash} (head {head})")));
    }
    if let Some(post) = case.get("postState") {
        let post = fixture::alloc(post)?;
        if let Some(diff) = fixture::first_difference(&db.state_at(head), &post)? {
            return Ok(Some(format!("post state: {diff}")));
        }
    }
    Ok(None)
}
