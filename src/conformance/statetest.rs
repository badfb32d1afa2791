//! `hearth statetest`: runs Ethereum Foundation state tests (one transaction on a `pre`
//! state) through Hearth's block execution and storage.
//!
//! Per post entry: `pre` is written as block 0 of a fresh in-memory store, `txbytes` is decoded
//! (EIP-2718) and its recovered sender checked, the transaction runs as block 1 through
//! [`ExecutorActor::build_block`] in import mode with only the transaction rules (no rewards,
//! system calls or withdrawals, as the format says), and the result is written with
//! `write_block`, so the state root compared with `hash` comes from Hearth's trie.

use std::path::PathBuf;
use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, Sealed, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{Log, keccak256};
use hearth_actors::{ExecConfig, ExecutorActor};
use hearth_messages::ChainId;
use hearth_messages::executor::{BlockEnvSpec, BlockRules, BuildBlock, BuildMode, PooledTx};
use hearth_storage::{BlockDraft, ChainDb, ChainWriter, StoredBody, write_block};
use serde_json::Value;

use super::fixture::{self, AllocAccount};
use super::{FixtureError, RunOptions, Summary};

/// Runs every state test in `paths` (files or directories); failures go to stdout.
pub fn run(paths: &[PathBuf], options: &RunOptions) -> Result<Summary, FixtureError> {
    super::run_files("statetest", paths, options, run_cases)
}

/// Runs the cases of one file.
fn run_cases(cases: &serde_json::Map<String, Value>, options: &RunOptions) -> Summary {
    let mut summary = Summary::default();
    for (name, case) in cases {
        let Some(post) = case.get("post").and_then(Value::as_object) else {
            summary.fail(format!("{name}: no post section"));
            continue;
        };
        for (fork, entries) in post {
            if options.fork.as_ref().is_some_and(|f| f != fork) {
                continue;
            }
            for (index, entry) in entries.as_array().into_iter().flatten().enumerate() {
                match run_entry(case, fork, entry, options.parallel) {
                    Ok(None) => summary.passed += 1,
                    Ok(Some(why)) => {
                        summary.fail(format!("FAIL {name} fork={fork} index={index}: {why}"))
                    }
                    Err(e) => summary.fail(format!("FAIL {name} fork={fork} index={index}: {e}")),
                }
            }
        }
    }
    summary
}

/// Why an entry could not even be set up.
#[derive(Debug, thiserror::Error)]
enum EntryError {
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    #[error("storage: {0}")]
    Storage(#[from] hearth_storage::StorageError),
    #[error("unknown fork {0}; add it to the fork table in conformance/fixture.rs")]
    Fork(String),
}

/// Runs one post entry; `Ok(Some(reason))` is a failure.
fn run_entry(
    case: &Value,
    fork: &str,
    entry: &Value,
    parallel: hearth_actors::ParallelConfig,
) -> Result<Option<String>, EntryError> {
    let spec = fixture::spec_of(fork).ok_or_else(|| EntryError::Fork(fork.to_owned()))?;
    let env = &case["env"];
    let config = case.get("config");
    let chain_id =
        config.and_then(|c| c.get("chainid")).map(fixture::u64_of).transpose()?.unwrap_or(1);
    let blob_params =
        fixture::blob_params_for(config.and_then(|c| c.get("blobSchedule")), fork, spec)?;
    let (db, genesis) = write_pre(case)?;

    let expect_exception = entry.get("expectException").and_then(Value::as_str);
    let expected_root = fixture::b256(&entry["hash"])?;
    let expected_logs = fixture::b256(&entry["logs"])?;
    let raw = fixture::bytes(&entry["txbytes"])?;
    let decoded = TxEnvelope::decode_2718(&mut raw.as_ref())
        .ok()
        .and_then(|tx| tx.recover_signer().ok().map(|sender| (tx, sender)));
    let Some((tx, sender)) = decoded else {
        return Ok(match expect_exception {
            // An undecodable transaction is a rejected one: the state stays `pre`.
            Some(_) => check_root(genesis.state_root, expected_root, &db, 0, entry),
            None => Some("txbytes do not decode to a signed transaction".to_owned()),
        });
    };
    let want_sender = fixture::address(case["transaction"]["sender"].as_str().unwrap_or_default())?;
    if sender != want_sender {
        return Ok(Some(format!("recovered sender {sender}, fixture says {want_sender}")));
    }

    let block_env = block_env(env, spec, chain_id, blob_params)?;
    let hash = *tx.tx_hash();
    let pooled = PooledTx { tx: Arc::new(tx), sender, hash };
    let built = executor(&db, chain_id, spec, parallel).build_block(BuildBlock {
        parent: Sealed::new(genesis.clone()),
        env: block_env,
        txs: vec![pooled],
        mode: BuildMode::Import,
    });
    let built = match (built, expect_exception) {
        (Err(_), Some(_)) => {
            return Ok(check_root(genesis.state_root, expected_root, &db, 0, entry));
        }
        (Err(e), None) => return Ok(Some(format!("transaction rejected: {e}"))),
        (Ok(_), Some(exception)) => {
            return Ok(Some(format!("transaction accepted, expected {exception}")));
        }
        (Ok(built), None) => built,
    };
    write_and_check(&db, built, expected_root, expected_logs, entry)
}

/// A fresh store with the case's `pre` written as block 0; returns the store and block 0's
/// header.
fn write_pre(case: &Value) -> Result<(ChainWriter, Header), EntryError> {
    let pre = fixture::alloc(&case["pre"])?;
    let db = ChainWriter::in_memory()?;
    let genesis = Header {
        number: 0,
        gas_limit: fixture::u64_of(&case["env"]["currentGasLimit"])?,
        ..Default::default()
    };
    let genesis = write_block(
        &db,
        BlockDraft { header: genesis, body: empty_body(), receipts: vec![], touched: Vec::new() },
        &fixture::alloc_diff(&pre),
    )?
    .header;
    Ok((db, genesis))
}

/// The block the transaction runs in, from the case's `env`, under the transaction rules only.
fn block_env(
    env: &Value,
    spec: revm::primitives::hardfork::SpecId,
    chain_id: u64,
    blob_params: alloy_eips::eip7840::BlobParams,
) -> Result<BlockEnvSpec, EntryError> {
    Ok(BlockEnvSpec {
        number: fixture::u64_of(&env["currentNumber"])?,
        timestamp: fixture::u64_of(&env["currentTimestamp"])?,
        coinbase: fixture::address(env["currentCoinbase"].as_str().unwrap_or_default())?,
        gas_limit: fixture::u64_of(&env["currentGasLimit"])?,
        base_fee: env.get("currentBaseFee").map(fixture::u64_of).transpose()?.unwrap_or_default(),
        prevrandao: env.get("currentRandom").map(fixture::b256).transpose()?.unwrap_or_default(),
        difficulty: fixture::u256(&env["currentDifficulty"])?,
        spec: Some(spec),
        chain_id: Some(chain_id),
        excess_blob_gas: env.get("currentExcessBlobGas").map(fixture::u64_of).transpose()?,
        blob_params: Some(blob_params),
        parent_beacon_block_root: None,
        withdrawals: Vec::new(),
        ommers: Vec::new(),
        extra_data: Default::default(),
        rules: BlockRules::TransactionsOnly,
    })
}

/// An executor on `db` with no gas cap, timeout or code size limit beside the fork's: what the
/// state and blockchain test runners execute with.
pub(super) fn executor(
    db: &ChainWriter,
    chain_id: u64,
    spec: revm::primitives::hardfork::SpecId,
    parallel: hearth_actors::ParallelConfig,
) -> ExecutorActor {
    ExecutorActor::new(
        db.reader(),
        ExecConfig {
            chain_id: ChainId::new(chain_id),
            spec,
            gas_cap: u64::MAX,
            evm_timeout: None,
            code_size_limit: None,
            blob_params: None,
            parallel,
            show: hearth_actors::Show::default(),
        },
        None,
    )
}

/// Writes the block the transaction ran in as block 1 and compares its state root and logs
/// hash with the entry's.
fn write_and_check(
    db: &ChainWriter,
    built: hearth_messages::executor::BuiltBlock,
    expected_root: alloy_primitives::B256,
    expected_logs: alloy_primitives::B256,
    entry: &Value,
) -> Result<Option<String>, EntryError> {
    let logs: Vec<Log> =
        built.draft.receipts.iter().flat_map(|r| r.logs().iter().cloned()).collect();
    let mut draft = built.draft;
    // The store numbers blocks consecutively; the EVM already saw the fixture's number.
    draft.header.number = 1;
    let block = write_block(db, draft, &built.diff)?;
    if let Some(why) = check_root(block.header.state_root, expected_root, db, 1, entry) {
        return Ok(Some(why));
    }
    let logs_hash = keccak256(alloy_rlp::encode(&logs));
    if logs_hash != expected_logs {
        return Ok(Some(format!("logs hash expected {expected_logs} got {logs_hash}")));
    }
    Ok(None)
}

fn empty_body() -> StoredBody {
    StoredBody { transactions: vec![], senders: vec![] }
}

/// Compares the state root and, when it differs, names the first differing account or slot.
fn check_root(
    got: alloy_primitives::B256,
    expected: alloy_primitives::B256,
    db: &ChainDb,
    number: u64,
    entry: &Value,
) -> Option<String> {
    if got == expected {
        return None;
    }
    let detail = entry
        .get("state")
        .and_then(|s| fixture::alloc(s).ok())
        .and_then(|want: std::collections::BTreeMap<_, AllocAccount>| {
            fixture::first_difference(&db.state_at(number), &want).ok().flatten()
        })
        .unwrap_or_else(|| "listed accounts match; an extra account or slot differs".to_owned());
    Some(format!("state root expected {expected} got {got}; {detail}"))
}
