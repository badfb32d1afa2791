//! `hearth import` and `hearth export`: chains as concatenated RLP blocks (geth's export
//! format, no separators).
//!
//! Import writes the genesis of a geth-style `genesis.json` as block 0 into an empty datadir
//! (or checks that the stored genesis is the same), stores the chain configuration so that a
//! node started later runs the chain's chain id and fork rules, then decodes the files one block
//! at a time and imports each through [`crate::import::import`]: header checks, execution on the
//! miner's path, one atomic batch per block. A block already stored (same hash) is skipped, so
//! re-running is idempotent; the first bad block stops the import, and the datadir stays at the
//! last good block. Export writes the canonical blocks back exactly as they were received.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alloy_consensus::{Block, BlockBody, Header, TxEnvelope};
use alloy_eips::eip4895::Withdrawals;
use alloy_primitives::B256;
use alloy_rlp::{Decodable, Encodable};
use hearth_actors::{ExecConfig, ExecutorActor};
use hearth_storage::{BlockDraft, ChainDb, ChainWriter, StorageError, import_block};

use crate::genesis::{ChainConfig, Genesis, GenesisError};
use crate::import::{ImportError, empty_body, import};

/// Why an import or export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ChainFileError {
    /// The genesis file is unusable.
    #[error(transparent)]
    Genesis(#[from] GenesisError),
    /// The stored chain configuration is unreadable.
    #[error("the chain configuration stored in the datadir is unreadable: {0}")]
    StoredConfig(GenesisError),
    /// The datadir holds another chain.
    #[error(
        "the datadir holds a chain with genesis {stored}, but the genesis file gives {computed}; use another --datadir"
    )]
    GenesisMismatch {
        /// The stored genesis hash.
        stored: B256,
        /// The genesis file's.
        computed: B256,
    },
    /// A chain file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A chain file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A chain file does not decode.
    #[error(
        "{path}: the block at byte offset {offset} (block {index} of the file) does not decode: {source}; is it a chain export (concatenated RLP blocks)?"
    )]
    Decode {
        /// The file.
        path: PathBuf,
        /// Where the bad block starts.
        offset: usize,
        /// Its position in the file, from 0.
        index: usize,
        /// Why.
        source: alloy_rlp::Error,
    },
    /// A block was rejected; everything before it is stored.
    #[error("block {number} ({hash}) rejected, the datadir stays at block {head}: {source}")]
    Block {
        /// The block's number.
        number: u64,
        /// Its hash.
        hash: B256,
        /// The last good block.
        head: u64,
        /// Why (boxed: it is large, and this path is taken once per import).
        source: Box<ImportError>,
    },
    /// The datadir has no genesis document to export.
    #[error(
        "the datadir keeps no genesis document: it was created by an older Hearth; export its blocks without --genesis-out"
    )]
    NoGenesisDocument,
    /// There is nothing to export.
    #[error("the datadir holds no chain; import one first (hearth import)")]
    Empty,
    /// The requested range is not stored.
    #[error("--from {from} --to {to} is not a range of the stored chain 0..={head}")]
    Range {
        /// First block.
        from: u64,
        /// Last block.
        to: u64,
        /// The head.
        head: u64,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// Blocks imported.
    pub imported: u64,
    /// Blocks skipped because they were already stored.
    pub skipped: u64,
    /// The head afterwards.
    pub head: u64,
    /// Its hash.
    pub head_hash: B256,
}

/// Writes `genesis` as block 0 of an empty `db` (its document first, for `hearth export
/// --genesis-out`), or checks that `db` starts with it. Returns the genesis hash.
pub fn write_genesis(db: &ChainWriter, genesis: &Genesis) -> Result<B256, ChainFileError> {
    let header = genesis.header(db)?;
    let computed = header.hash_slow();
    match db.block_hash(0)? {
        Some(stored) if stored != computed => {
            return Err(ChainFileError::GenesisMismatch { stored, computed });
        }
        Some(_) => {}
        None => {
            db.set_genesis_document(genesis.document().to_string().as_bytes())?;
            let draft =
                BlockDraft { header, body: empty_body(), receipts: vec![], touched: Vec::new() };
            import_block(db, draft, &genesis.diff())?;
        }
    }
    Ok(computed)
}

/// [`write_genesis`], then stores the chain configuration an imported chain runs under.
/// Returns the genesis hash.
pub fn init_chain(db: &ChainWriter, genesis: &Genesis) -> Result<B256, ChainFileError> {
    let computed = write_genesis(db, genesis)?;
    // Written after genesis: a crash in between leaves a datadir that the next import run
    // (same genesis) completes, while the node would refuse nothing but run dev defaults.
    db.set_chain_config(&genesis.config.to_bytes())?;
    Ok(computed)
}

/// Writes the genesis document `db`'s block 0 was made from to `out` (pretty-printed JSON),
/// so that `hearth import --genesis out` re-creates the same chain.
pub fn export_genesis(db: &ChainDb, out: &Path) -> Result<(), ChainFileError> {
    let document = db.genesis_document()?.ok_or(ChainFileError::NoGenesisDocument)?;
    let value: serde_json::Value = serde_json::from_slice(&document)
        .map_err(|_| StorageError::Corrupt { what: "stored genesis document" })?;
    let mut text = serde_json::to_string_pretty(&value)
        .map_err(|_| StorageError::Corrupt { what: "stored genesis document" })?;
    text.push('\n');
    std::fs::write(out, text)
        .map_err(|source| ChainFileError::Write { path: out.to_path_buf(), source })
}

/// The chain configuration stored in `db` by an import, if any.
pub fn stored_config(db: &ChainDb) -> Result<Option<ChainConfig>, ChainFileError> {
    db.chain_config()?
        .map(|bytes| ChainConfig::from_bytes(&bytes).map_err(ChainFileError::StoredConfig))
        .transpose()
}

/// Imports `genesis` and then every block of `files` into `db`; `progress` prints a progress
/// line on stderr.
pub fn import_chain(
    db: &ChainWriter,
    genesis: &Genesis,
    files: &[PathBuf],
    progress: bool,
) -> Result<ImportSummary, ChainFileError> {
    import_chain_with(db, genesis, files, progress, hearth_actors::ParallelConfig::default())
}

/// `import_chain` with blocks executed under `parallel` (`hearth import --exec.parallel`).
pub fn import_chain_with(
    db: &ChainWriter,
    genesis: &Genesis,
    files: &[PathBuf],
    progress: bool,
    parallel: hearth_actors::ParallelConfig,
) -> Result<ImportSummary, ChainFileError> {
    init_chain(db, genesis)?;
    let config = &genesis.config;
    let exec = ExecConfig {
        chain_id: hearth_messages::ChainId::new(config.chain_id),
        spec: config.spec_at(0, 0),
        gas_cap: u64::MAX,
        evm_timeout: None,
        blob_params: None,
        code_size_limit: None,
        parallel,
        show: hearth_actors::Show::default(),
    };
    let mut executor = ExecutorActor::new(db.reader(), exec, None);
    let mut meter = Meter::new(progress);
    let (mut imported, mut skipped) = (0, 0);
    for path in files {
        let data = std::fs::read(path)
            .map_err(|source| ChainFileError::Read { path: path.clone(), source })?;
        let mut rest = data.as_slice();
        let mut index = 0;
        while !rest.is_empty() {
            let offset = data.len() - rest.len();
            let block = Block::<TxEnvelope, Header>::decode(&mut rest).map_err(|source| {
                ChainFileError::Decode { path: path.clone(), offset, index, source }
            })?;
            index += 1;
            let (number, hash) = (block.header.number, block.header.hash_slow());
            if db.block_number(&hash)?.is_some() {
                skipped += 1;
                continue;
            }
            let rules = config.rules_for(&block.header);
            import(db, &mut executor, block, &rules).map_err(|source| ChainFileError::Block {
                number,
                hash,
                head: db.head_number().unwrap_or_default(),
                source: Box::new(source),
            })?;
            imported += 1;
            meter.tick(number, imported);
        }
    }
    meter.finish();
    let head = db.head_number().unwrap_or_default();
    let head_hash = db.block_hash(head)?.unwrap_or_default();
    Ok(ImportSummary { imported, skipped, head, head_hash })
}

/// Writes canonical blocks `from..=to` (default: 1 to the head; genesis comes from the genesis
/// file) of `db` to `out` as concatenated RLP; returns how many were written.
pub fn export_chain(
    db: &ChainDb,
    from: Option<u64>,
    to: Option<u64>,
    out: &Path,
) -> Result<u64, ChainFileError> {
    let head = db.head_number().ok_or(ChainFileError::Empty)?;
    let (from, to) = (from.unwrap_or(1.min(head)), to.unwrap_or(head));
    if from > to || to > head {
        return Err(ChainFileError::Range { from, to, head });
    }
    let write_err = |source| ChainFileError::Write { path: out.to_path_buf(), source };
    let file = std::fs::File::create(out).map_err(write_err)?;
    let mut writer = std::io::BufWriter::new(file);
    let mut buf = Vec::new();
    let corrupt = |what| StorageError::Corrupt { what };
    for number in from..=to {
        let header = db.header(number)?.ok_or(corrupt("header of a block below the head"))?;
        let body = db.body(number)?.ok_or(corrupt("body of a block below the head"))?;
        let extras = db.extras(number)?;
        // A withdrawals list is part of the block exactly when the header commits to one.
        let withdrawals = header.withdrawals_root.map(|_| Withdrawals::new(extras.withdrawals));
        let block = Block {
            header,
            body: BlockBody { transactions: body.transactions, ommers: extras.ommers, withdrawals },
        };
        buf.clear();
        block.encode(&mut buf);
        writer.write_all(&buf).map_err(write_err)?;
    }
    writer.flush().map_err(write_err)?;
    Ok(to - from + 1)
}

/// The progress line: rewritten on stderr at most every quarter second.
struct Meter {
    enabled: bool,
    printed: bool,
    started: Instant,
    last: Instant,
}

impl Meter {
    fn new(enabled: bool) -> Self {
        let now = Instant::now();
        Self { enabled, printed: false, started: now, last: now }
    }

    fn tick(&mut self, number: u64, imported: u64) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last = Instant::now();
        self.printed = true;
        let rate = imported as f64 / self.started.elapsed().as_secs_f64().max(1e-3);
        eprint!("\rimporting: block #{number}, {imported} imported, {rate:.0} blocks/s   ");
    }

    fn finish(&self) {
        // The summary goes on its own line, below the last progress line.
        if self.printed {
            eprintln!();
        }
    }
}
