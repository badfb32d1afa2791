//! Trie performance: incremental state roots through `write_block` against a from-scratch
//! root, and heap allocations on the trie's hot paths.
//!
//! A plain `harness = false` binary that prints tables (no Criterion: one long setup, a few
//! measurements, and STACK.md prefers small dependencies).
//!
//! 1. Builds a state of `--accounts` accounts (default 1,000,000) in a sled-backed `ChainDb` in
//!    a temporary directory under the system temp dir (removed at the end), `--batch` accounts
//!    per block through `write_block`. Then times `--blocks` blocks that each change
//!    `--changes` random accounts (balance and nonce) through `write_block` (trie update, root,
//!    one journaled batch), alternating with as many blocks written on one thread
//!    (`BlockWriter::set_threads(1)`; the others use `--threads`, default the cores, and
//!    `--per-lane`) for a side-by-side figure, and, in the same run, recomputes
//!    the root from scratch over every account with alloy-trie's `HashBuilder`; the two roots
//!    must be equal.
//! 2. Counts heap allocations (a counting wrapper around the system allocator) per trie update,
//!    per node loaded, per node emitted, per proof and per store read, on that state.
//!
//! Flags may also come from the environment (`HEARTH_BENCH_ACCOUNTS`, ...), so CI can run a
//! small version: `HEARTH_BENCH_ACCOUNTS=20000 cargo bench -p hearth-storage --bench
//! trie_commit`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy_consensus::Header;
use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_trie::{HashBuilder, Nibbles, TrieAccount};
use hearth_storage::trie::{MemoryNodes, NodeSource, Trie};
use hearth_storage::{
    AccountChange, AccountFields, BlockDraft, BlockWriter, ChainWriter, DEFAULT_NODE_CACHE_BYTES,
    DEFAULT_PAGE_CACHE_BYTES, EMPTY_CODE_HASH, StateDiff, StorageError, StoredBody, WriteTimings,
    account_trie_key,
};

// The counting allocator (storage/benches/counting_alloc.rs, shared with benches/call_allocs.rs).
mod counting_alloc;
use counting_alloc::allocated;

/// Runs `f` and returns its result with the allocations this thread made meanwhile.
fn counting<T>(f: impl FnOnce() -> T) -> (T, u64, u64) {
    let (a0, b0) = allocated();
    let out = f();
    let (a1, b1) = allocated();
    (out, a1 - a0, b1 - b0)
}

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/// What to run, from `--name value` flags or `HEARTH_BENCH_NAME` variables.
struct Settings {
    accounts: usize,
    batch: usize,
    blocks: usize,
    changes: usize,
    samples: usize,
    cache_mb: usize,
    sled_cache_mb: usize,
    /// Threads of the default blocks (`BlockWriter::set_threads`; default: the cores).
    threads: usize,
    /// `BlockWriter::set_min_accounts_per_lane` (0, the default: the writer's own).
    per_lane: usize,
}

impl Settings {
    fn from_env_and_args() -> Self {
        let args: Vec<String> = std::env::args().collect();
        let get = |name: &str, default: usize| -> usize {
            let flag = format!("--{name}");
            let from_args = args.windows(2).find(|w| w[0] == flag).map(|w| w[1].clone());
            let env = format!("HEARTH_BENCH_{}", name.to_uppercase());
            match from_args.or_else(|| std::env::var(&env).ok()) {
                Some(v) => v.replace('_', "").parse().unwrap_or_else(|_| {
                    eprintln!("{flag} / {env}: not a number: {v}");
                    std::process::exit(2)
                }),
                None => default,
            }
        };
        let settings = Self {
            accounts: get("accounts", 1_000_000),
            batch: get("batch", 10_000),
            blocks: get("blocks", 20),
            changes: get("changes", 1_000),
            samples: get("samples", 200),
            cache_mb: get("cache-mb", DEFAULT_NODE_CACHE_BYTES / (1024 * 1024)),
            // What the node opens its store with.
            sled_cache_mb: get(
                "sled-cache-mb",
                (DEFAULT_PAGE_CACHE_BYTES / (1024 * 1024)).try_into().expect("fits"),
            ),
            threads: get("threads", std::thread::available_parallelism().map_or(1, usize::from)),
            per_lane: get("per-lane", 0),
        };
        if settings.accounts == 0 || settings.batch == 0 || settings.blocks == 0 {
            eprintln!("--accounts, --batch and --blocks must be at least 1");
            std::process::exit(2);
        }
        settings
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// xorshift64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn address(&mut self) -> Address {
        let mut bytes = [0u8; 20];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes()[..chunk.len()]);
        }
        Address::from(bytes)
    }
}

/// A directory under the system temp dir, removed on drop (also when the bench panics).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("hearth-bench-trie-{}", std::process::id()));
        std::fs::create_dir_all(&path).expect("the temp dir is writable");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover directory under /tmp is harmless and says where it is.
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("could not remove {}: {e}", self.0.display());
        }
    }
}

/// One account as the bench tracks it.
#[derive(Clone, Copy)]
struct Account {
    address: Address,
    nonce: u64,
    balance: U256,
}

impl Account {
    fn change(&self) -> AccountChange {
        AccountChange {
            info: Some(AccountFields {
                nonce: self.nonce,
                balance: self.balance,
                code_hash: EMPTY_CODE_HASH,
            }),
            storage_wiped: false,
            storage: BTreeMap::new(),
        }
    }
}

/// Writes block `number` changing `accounts` and returns its state root.
fn write(
    writer: &mut BlockWriter,
    number: u64,
    accounts: impl IntoIterator<Item = Account>,
) -> B256 {
    let mut diff = StateDiff::default();
    for account in accounts {
        diff.accounts.insert(account.address, account.change());
    }
    let draft = BlockDraft {
        header: Header { number, timestamp: number, ..Header::default() },
        body: StoredBody { transactions: Vec::new(), senders: Vec::new() },
        receipts: Vec::new(),
        touched: Vec::new(),
    };
    writer.write(draft, &diff).expect("the block is written").header.state_root
}

/// The state root from scratch: alloy-trie's `HashBuilder` over every account's leaf, sorted
/// by hashed address, with the account encoded by alloy (independently of Hearth's code).
fn root_from_scratch(accounts: &[Account]) -> (B256, Duration, Duration) {
    let start = Instant::now();
    let mut leaves: Vec<(B256, Vec<u8>)> = accounts
        .iter()
        .map(|a| {
            let value =
                TrieAccount { nonce: a.nonce, balance: a.balance, ..TrieAccount::default() };
            (keccak256(a.address), alloy_rlp::encode(value))
        })
        .collect();
    leaves.sort_unstable_by_key(|leaf| leaf.0);
    let prepared = start.elapsed();
    let mut builder = HashBuilder::default();
    for (key, value) in &leaves {
        builder.add_leaf(Nibbles::unpack(key), value);
    }
    let root = builder.root();
    (root, prepared, start.elapsed())
}

/// The measured blocks of one mode: wall and on-CPU times and the writer's breakdown.
struct Measured {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
    /// State (wall), account reads, tries (both summed over threads), apply, flush.
    parts: [Vec<Duration>; 5],
}

impl Measured {
    fn new(blocks: usize) -> Self {
        Self {
            wall: Vec::with_capacity(blocks),
            cpu: Vec::with_capacity(blocks),
            parts: Default::default(),
        }
    }

    fn push(&mut self, wall: Duration, cpu: Duration, timings: &WriteTimings) {
        self.wall.push(wall);
        self.cpu.push(cpu);
        for (part, value) in self.parts.iter_mut().zip([
            timings.state,
            timings.account_reads,
            timings.tries,
            timings.apply,
            timings.flush,
        ]) {
            part.push(value);
        }
    }

    fn sort(&mut self) {
        self.wall.sort();
        self.cpu.sort();
        for part in &mut self.parts {
            part.sort();
        }
    }

    /// "median / p90 ms wall (median on-CPU)" and the medians of the parts.
    fn summary(&self) -> String {
        let p = |v: &[Duration]| ms(percentile(v, 50));
        format!(
            "{:.1} / {:.1} ms wall ({:.1} ms on-CPU); state {:.1} ms (reads {:.1}, tries {:.1} \
             summed over threads), apply {:.1} ms, journal {:.1} ms",
            p(&self.wall),
            ms(percentile(&self.wall, 90)),
            p(&self.cpu),
            p(&self.parts[0]),
            p(&self.parts[1]),
            p(&self.parts[2]),
            p(&self.parts[3]),
            p(&self.parts[4]),
        )
    }
}

/// The from-scratch root's timings.
struct Scratch {
    prepare: Duration,
    hash_builder: Duration,
    cpu: Duration,
}

/// Time this thread has spent on a CPU, from Linux's `/proc/thread-self/schedstat` (zero
/// elsewhere). On a shared machine wall time includes waiting for a core; this does not (nor
/// does it include waiting for the disk).
fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `p`-th percentile (0..=100) of sorted samples, nearest rank.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// A node source that counts the nodes read through it.
struct CountingSource<'a> {
    inner: &'a dyn NodeSource,
    reads: std::cell::Cell<u64>,
}

impl NodeSource for CountingSource<'_> {
    fn node_into(&self, hash: &B256, out: &mut Vec<u8>) -> Result<bool, StorageError> {
        self.reads.set(self.reads.get() + 1);
        self.inner.node_into(hash, out)
    }
}

// ---------------------------------------------------------------------------------------------
// The bench
// ---------------------------------------------------------------------------------------------

fn main() {
    let s = Settings::from_env_and_args();
    let dir = TempDir::new();
    let db = ChainWriter::open_with_cache(&dir.0, s.sled_cache_mb as u64 * 1024 * 1024)
        .expect("the store opens");
    let mut writer = BlockWriter::new(db.clone(), s.cache_mb * 1024 * 1024);
    if s.per_lane > 0 {
        writer.set_min_accounts_per_lane(s.per_lane);
    }
    println!(
        "trie_commit: {} accounts in blocks of {}, then {} blocks of {} changes; node cache {} MiB; \
         sled cache {} MiB; {} threads (per lane: {}); store in {}",
        s.accounts,
        s.batch,
        s.blocks,
        s.changes,
        s.cache_mb,
        s.sled_cache_mb,
        s.threads,
        if s.per_lane > 0 { s.per_lane.to_string() } else { "default".into() },
        dir.0.display()
    );

    // ---- build ----
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut accounts: Vec<Account> = Vec::with_capacity(s.accounts);
    let build_start = Instant::now();
    let mut number = 0u64;
    let mut root = B256::ZERO;
    while accounts.len() < s.accounts {
        let count = s.batch.min(s.accounts - accounts.len());
        let fresh: Vec<Account> = (0..count)
            .map(|_| Account {
                address: rng.address(),
                nonce: 0,
                balance: U256::from(1_000_000_000u64 + rng.next() % 1_000_000_000),
            })
            .collect();
        root = write(&mut writer, number, fresh.iter().copied());
        accounts.extend(fresh);
        let elapsed = build_start.elapsed().as_secs_f64();
        println!(
            "  build: block {number:>4}, {:>9} accounts, {elapsed:>7.1} s ({:.0} accounts/s)",
            accounts.len(),
            accounts.len() as f64 / elapsed
        );
        number += 1;
    }
    let build_time = build_start.elapsed();

    // ---- incremental blocks vs from scratch ----
    // Blocks alternate between `--threads` (by default the cores: a large block split into that
    // many lanes) and one thread, so what the other threads save is measured side by side,
    // under the same load and cache state; the headline figures are the default's.
    let mut default_mode = Measured::new(s.blocks);
    let mut one_thread = Measured::new(s.blocks);
    for i in 0..2 * s.blocks {
        let mut changed = BTreeMap::new();
        while changed.len() < s.changes.min(accounts.len()) {
            let index = rng.below(accounts.len());
            let account = &mut accounts[index];
            account.nonce += 1;
            account.balance -= U256::from(21_000u64 + rng.next() % 1_000);
            changed.insert(index, *account);
        }
        let single = i % 2 == 1;
        writer.set_threads(if single { 1 } else { s.threads });
        let (cpu0, start) = (thread_cpu_time(), Instant::now());
        root = write(&mut writer, number, changed.into_values());
        let (took, took_cpu) = (start.elapsed(), thread_cpu_time() - cpu0);
        let timings = writer.last_timings();
        let mode = if single { &mut one_thread } else { &mut default_mode };
        mode.push(took, took_cpu, &timings);
        println!(
            "  block {number} ({}): {} changed accounts, {:.1} ms wall, {:.1} ms on-CPU ({}/{}); \
             state {:.1} ms (reads {:.1} ms, tries {:.1} ms, {} nodes from sled), apply {:.1} ms, \
             journal {:.1} ms",
            if single { "one thread" } else { "default" },
            s.changes,
            ms(took),
            ms(took_cpu),
            i + 1,
            2 * s.blocks,
            ms(timings.state),
            ms(timings.account_reads),
            ms(timings.tries),
            timings.node_store_reads,
            ms(timings.apply),
            ms(timings.flush),
        );
        number += 1;
    }
    default_mode.sort();
    one_thread.sort();
    let Measured { wall, cpu, parts } = &default_mode;
    println!("  recomputing the root from scratch over {} accounts (3 runs)", accounts.len());
    let mut scratch_runs: Vec<Scratch> = (0..3)
        .map(|run| {
            let cpu0 = thread_cpu_time();
            let (scratch_root, prepare, total) = root_from_scratch(&accounts);
            let cpu = thread_cpu_time() - cpu0;
            assert_eq!(scratch_root, root, "incremental root differs from the from-scratch root");
            println!("    run {}: {:.0} ms wall, {:.0} ms on-CPU", run + 1, ms(total), ms(cpu));
            Scratch { prepare, hash_builder: total - prepare, cpu }
        })
        .collect();
    scratch_runs.sort_by_key(|r| r.hash_builder);
    let scratch = &scratch_runs[1];
    let (median, p90) = (percentile(wall, 50), percentile(wall, 90));
    let (cpu_median, cpu_p90) = (percentile(cpu, 50), percentile(cpu, 90));

    // ---- allocations ----
    let alloc = allocation_report(&db, root, &accounts, &mut rng, s.samples);

    let disk = dir_size(&dir.0);
    println!();
    println!(
        "## Incremental state root ({} accounts, {} blocks of {} changes in each mode, node cache \
         {} MiB, sled cache {} MiB)",
        accounts.len(),
        s.blocks,
        s.changes,
        s.cache_mb,
        s.sled_cache_mb
    );
    println!();
    println!("| measurement | wall | on-CPU (this thread) |");
    println!("|---|---|---|");
    println!(
        "| build: {} accounts in {} blocks through write_block | {:.1} s ({:.0} accounts/s) | |",
        accounts.len(),
        number as usize - 2 * s.blocks,
        build_time.as_secs_f64(),
        accounts.len() as f64 / build_time.as_secs_f64()
    );
    println!(
        "| write_block, {} changed accounts: median | {:.1} ms | {:.1} ms |",
        s.changes,
        ms(median),
        ms(cpu_median)
    );
    println!(
        "| write_block, {} changed accounts: p90 | {:.1} ms | {:.1} ms |",
        s.changes,
        ms(p90),
        ms(cpu_p90)
    );
    for (what, part) in [
        "of which: state (account reads, tries, staging; wall, on up to 2 threads)",
        "of which, summed over threads: reading the previous account versions",
        "of which, summed over threads: trie updates, root and staging",
        "of which: applying it to sled",
        "of which: making it durable (journal write; sled flush at a checkpoint)",
    ]
    .iter()
    .zip(parts)
    {
        println!("| {what}: median | {:.1} ms | |", ms(percentile(part, 50)));
    }
    println!(
        "| root from scratch: HashBuilder over {} sorted leaves (median of 3) | {:.0} ms | |",
        accounts.len(),
        ms(scratch.hash_builder)
    );
    println!(
        "| root from scratch: hashing, encoding and sorting the leaves first | {:.0} ms | |",
        ms(scratch.prepare)
    );
    println!(
        "| root from scratch: both | {:.0} ms | {:.0} ms |",
        ms(scratch.prepare + scratch.hash_builder),
        ms(scratch.cpu)
    );
    println!(
        "| speed-up: HashBuilder alone / incremental block (median) | {:.1}x | {:.1}x |",
        scratch.hash_builder.as_secs_f64() / median.as_secs_f64(),
        scratch.cpu.as_secs_f64()
            * (scratch.hash_builder.as_secs_f64()
                / (scratch.prepare + scratch.hash_builder).as_secs_f64())
            / cpu_median.as_secs_f64()
    );
    println!(
        "| speed-up: whole from-scratch root / incremental block (median) | {:.1}x | {:.1}x |",
        (scratch.prepare + scratch.hash_builder).as_secs_f64() / median.as_secs_f64(),
        scratch.cpu.as_secs_f64() / cpu_median.as_secs_f64()
    );
    println!("| store size on disk | {:.0} MB | |", disk as f64 / 1e6);
    println!();
    println!("Side by side in this run (blocks alternating), median / p90:");
    println!(
        "- default (--threads {}: lanes for a large block): {}",
        s.threads,
        default_mode.summary()
    );
    println!("- one thread (BlockWriter::set_threads(1)): {}", one_thread.summary());
    println!();
    println!("roots equal: yes (checked on every from-scratch run)");
    println!();
    println!(
        "## Allocations (minimum over {} samples each; state of {} accounts)",
        s.samples,
        accounts.len()
    );
    println!();
    println!("| operation | allocations | bytes | per |");
    println!("|---|---|---|---|");
    for row in alloc {
        println!("| {} | {:.1} | {:.0} | {} |", row.what, row.allocs, row.bytes, row.per);
    }
    drop(db);
}

/// One row of the allocation table.
struct AllocRow {
    what: &'static str,
    allocs: f64,
    bytes: f64,
    per: String,
}

/// Measures `samples` times and keeps the run with the fewest allocations: the first runs
/// grow buffers that later ones reuse, and the minimum is the steady state.
fn min_of(samples: usize, mut f: impl FnMut(usize) -> (u64, u64, f64)) -> (f64, f64, f64) {
    let mut best: Option<(u64, u64, f64)> = None;
    for i in 0..samples {
        let run = f(i);
        if best.is_none_or(|b| run.0 < b.0) {
            best = Some(run);
        }
    }
    let (allocs, bytes, units) = best.expect("at least one sample");
    (allocs as f64, bytes as f64, units)
}

fn allocation_report(
    db: &hearth_storage::ChainDb,
    root: B256,
    accounts: &[Account],
    rng: &mut Rng,
    samples: usize,
) -> Vec<AllocRow> {
    let keys: Vec<B256> = (0..samples)
        .map(|_| account_trie_key(&accounts[rng.below(accounts.len())].address))
        .collect();
    let new_value = alloy_rlp::encode(TrieAccount { nonce: 7, ..TrieAccount::default() });
    // The same paths held in memory: what the trie itself allocates, without sled's reads
    // (this is also what a node cache hit costs the block writer).
    let mut memory = MemoryNodes::new();
    for key in &keys {
        for node in Trie::at_root(root).proof(db, key.as_slice()).expect("proof") {
            memory.insert(keccak256(&node), node);
        }
    }
    let mut rows = Vec::new();

    // A store read on its own: what every node load from sled pays.
    let mut buf = Vec::new();
    let (allocs, bytes, _) = min_of(samples, |_| {
        let ((), a, b) = counting(|| {
            assert!(db.node_into(&root, &mut buf).expect("read"), "the root node is stored");
        });
        (a, b, 1.0)
    });
    rows.push(AllocRow {
        what: "ChainDb::node_into (one sled read into a reused buffer)",
        allocs,
        bytes,
        per: "node read".into(),
    });

    // Update = one insert into the trie at `root` (path loaded from the source) + commit.
    let sources: [(&str, &dyn NodeSource, bool); 3] = [
        ("trie update (insert one key + commit), fresh Trie, nodes from sled", db, false),
        ("trie update, long-lived Trie (set_root), nodes from sled", db, true),
        ("trie update, long-lived Trie, nodes from memory (steady state)", &memory, true),
    ];
    for (what, inner, long_lived) in sources {
        let mut trie = Trie::at_root(root);
        let mut loaded = 0;
        let (allocs, bytes, _) = min_of(samples, |i| {
            let src = CountingSource { inner, reads: std::cell::Cell::new(0) };
            if long_lived {
                trie.set_root(root);
            } else {
                trie = Trie::at_root(root);
            }
            // The value is the caller's allocation, made before the count starts.
            let value = new_value.clone();
            let ((), a, b) = counting(|| {
                trie.insert(&src, keys[i].as_slice(), value).expect("insert");
                trie.commit(&mut |_, _| {});
            });
            loaded = src.reads.get();
            (a, b, 1.0)
        });
        rows.push(AllocRow { what, allocs, bytes, per: format!("update ({loaded} nodes loaded)") });
    }

    // Decode: a no-op insert loads and decodes the path, then puts the hash references back.
    let mut trie = Trie::at_root(root);
    let (allocs, bytes, per) = min_of(samples, |i| {
        let src = CountingSource { inner: &memory, reads: std::cell::Cell::new(0) };
        trie.set_root(root);
        let key = keys[i];
        let current = trie.get(&memory, key.as_slice()).expect("get").expect("present");
        let ((), a, b) = counting(|| trie.insert(&src, key.as_slice(), current).expect("insert"));
        (a, b, src.reads.get().max(1) as f64)
    });
    rows.push(AllocRow {
        what: "load + decode (no-op insert), long-lived Trie, from memory",
        allocs: allocs / per,
        bytes: bytes / per,
        per: "node loaded".into(),
    });

    // Encode + hash: committing a dirty path, per node emitted.
    let mut trie = Trie::at_root(root);
    let (allocs, bytes, per) = min_of(samples, |i| {
        trie.set_root(root);
        trie.insert(&memory, keys[i].as_slice(), new_value.clone()).expect("insert");
        let mut emitted = 0u32;
        let ((), a, b) = counting(|| {
            trie.commit(&mut |_, _| emitted += 1);
        });
        (a, b, f64::from(emitted.max(1)))
    });
    rows.push(AllocRow {
        what: "encode + hash + emit (commit of a dirty path)",
        allocs: allocs / per,
        bytes: bytes / per,
        per: "node emitted".into(),
    });

    // Proof and read of one account, from sled.
    let mut proof_nodes = 0;
    let (allocs, bytes, _) = min_of(samples, |i| {
        let trie = Trie::at_root(root);
        let (proof, a, b) = counting(|| trie.proof(db, keys[i].as_slice()).expect("proof"));
        proof_nodes = proof.len();
        (a, b, 1.0)
    });
    rows.push(AllocRow {
        what: "proof of one account, from sled",
        allocs,
        bytes,
        per: format!("proof ({proof_nodes} nodes)"),
    });
    let (allocs, bytes, _) = min_of(samples, |i| {
        let trie = Trie::at_root(root);
        let (value, a, b) = counting(|| trie.get(db, keys[i].as_slice()).expect("get"));
        drop(value);
        (a, b, 1.0)
    });
    rows.push(AllocRow {
        what: "get of one account, from sled",
        allocs,
        bytes,
        per: "read".into(),
    });
    rows
}

/// Bytes used by the files under `path`.
fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
