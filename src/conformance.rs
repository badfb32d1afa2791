//! Conformance runners: `hearth statetest` and `hearth blocktest` run the Ethereum Foundation
//! state and blockchain test vectors (see `shared/conformance/README.md` sections 4 and 5)
//! through Hearth's own execution path ([`hearth_actors::ExecutorActor::build_block`]) and
//! storage (`write_block` / `import_block`, our trie), never through a separate EVM harness.
//!
//! Shared here: finding the JSON files, the `revme_skips` list from `index.json` (skipped only
//! with `--skip-known`: the executor detects EIP-7610 collisions itself), running files
//! on all cores with a progress line on stderr, and the summary
//! (`N passed, M failed, K skipped`).

pub mod blocktest;
pub mod enginetest;
pub(crate) mod fixture;
pub mod statetest;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

/// A fixture could not be read or has an unexpected shape.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}; check the path and permissions")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not JSON.
    #[error("{path} is not valid JSON: {source}; is it a test fixture?")]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A field is missing or malformed.
    #[error(
        "fixture field is not a valid {what}: {value}; the fixture format is not the one expected (see conformance/README.md)"
    )]
    Field {
        /// What was expected.
        what: &'static str,
        /// What was found (truncated).
        value: String,
    },
}

impl FixtureError {
    pub(crate) fn field(what: &'static str, value: &Value) -> Self {
        let mut value = value.to_string();
        value.truncate(80);
        Self::Field { what, value }
    }
}

/// Options shared by both runners.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Only run this fork (state tests) or network (blockchain tests).
    pub fork: Option<String>,
    /// Worker threads (default: available cores).
    pub threads: Option<usize>,
    /// Print progress on stderr.
    pub progress: bool,
    /// Skip the files `index.json` flags `revme_skips` (they run by default).
    pub skip_known: bool,
    /// How blocks execute (`--exec.parallel always` runs every block through the parallel
    /// path, which must give the same results).
    pub parallel: hearth_actors::ParallelConfig,
}

/// The outcome of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed (each has a line in `failures`).
    pub failed: usize,
    /// Cases skipped (filtered out by `--fork` are not counted; `--skip-known` files are).
    pub skipped: usize,
    /// One line per failure.
    pub failures: Vec<String>,
    /// Files skipped as known revm limitations.
    pub skipped_files: Vec<PathBuf>,
}

impl Summary {
    fn merge(&mut self, other: Self) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
        self.failures.extend(other.failures);
        self.skipped_files.extend(other.skipped_files);
    }

    /// Records a failure line.
    pub(crate) fn fail(&mut self, line: String) {
        self.failed += 1;
        self.failures.push(line);
    }

    /// The closing line: `N passed, M failed, K skipped`.
    pub fn line(&self) -> String {
        format!("{} passed, {} failed, {} skipped", self.passed, self.failed, self.skipped)
    }
}

/// Every `*.json` under `paths` (files are taken as given), sorted, without `index.json`.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, FixtureError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), FixtureError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|source| FixtureError::Io { path: dir.to_owned(), source })?;
        for entry in entries {
            let path =
                entry.map_err(|source| FixtureError::Io { path: dir.to_owned(), source })?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "json")
                && path.file_name().is_some_and(|n| n != "index.json")
            {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut out)?;
        } else {
            out.push(path.clone());
        }
    }
    out.sort();
    Ok(out)
}

/// The files `index.json` flags `revme_skips` (revm alone misses their EIP-7610 storage
/// collisions), as absolute paths. Looks for `index.json` in the ancestors of `paths`.
pub fn known_skips(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(root) = paths.iter().find_map(|p| {
        let abs = std::fs::canonicalize(p).ok()?;
        abs.ancestors().find(|a| a.join("index.json").is_file()).map(Path::to_path_buf)
    }) else {
        return out;
    };
    let Ok(text) = std::fs::read_to_string(root.join("index.json")) else { return out };
    let Ok(index) = serde_json::from_str::<Value>(&text) else { return out };
    for file in index.get("files").and_then(Value::as_array).into_iter().flatten() {
        if file.get("revme_skips").and_then(Value::as_bool) == Some(true)
            && let Some(path) = file.get("path").and_then(Value::as_str)
        {
            out.push(root.join(path));
        }
    }
    out
}

/// The blockchain test cases of a file that `options` select (by `--fork`, the network), each
/// with its name and network.
pub(crate) fn selected_cases<'a>(
    cases: &'a serde_json::Map<String, Value>,
    options: &'a RunOptions,
) -> impl Iterator<Item = (&'a String, &'a Value, &'a str)> {
    cases.iter().filter_map(move |(name, case)| {
        let network = case.get("network").and_then(Value::as_str).unwrap_or_default();
        options.fork.as_deref().is_none_or(|fork| fork == network).then_some((name, case, network))
    })
}

/// Reads one fixture file as a JSON object of test cases.
pub(crate) fn read_cases(path: &Path) -> Result<serde_json::Map<String, Value>, FixtureError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| FixtureError::Io { path: path.to_owned(), source })?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(FixtureError::field("object of test cases", &other)),
        Err(source) => Err(FixtureError::Json { path: path.to_owned(), source }),
    }
}

/// Reads each file's cases and runs `run_cases` over them on worker threads (a file that cannot
/// be read counts as one failure), printing failures on stdout as they come
/// and a progress line on stderr every few seconds.
pub(crate) fn run_files(
    kind: &str,
    paths: &[PathBuf],
    options: &RunOptions,
    run_cases: fn(&serde_json::Map<String, Value>, &RunOptions) -> Summary,
) -> Result<Summary, FixtureError> {
    let files = collect_files(paths)?;
    let skips: Vec<PathBuf> = if options.skip_known { known_skips(paths) } else { Vec::new() };
    let threads = options
        .threads
        .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
        .unwrap_or(1)
        .max(1);
    let next = AtomicUsize::new(0);
    let total = Mutex::new(Summary::default());
    let started = Instant::now();
    let last_report = Mutex::new(Instant::now());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let canonical = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
                    let summary = if skips.contains(&canonical) {
                        let cases = read_cases(file).map(|c| c.len()).unwrap_or(1);
                        Summary {
                            skipped: cases,
                            skipped_files: vec![file.clone()],
                            ..Summary::default()
                        }
                    } else {
                        match read_cases(file) {
                            Ok(cases) => run_cases(&cases, options),
                            Err(e) => {
                                let mut failed = Summary::default();
                                failed.fail(format!("{}: {e}", file.display()));
                                failed
                            }
                        }
                    };
                    for line in &summary.failures {
                        println!("{line}");
                    }
                    let mut total = total.lock().expect("no worker panics while holding it");
                    total.merge(summary);
                    let mut last = last_report.lock().expect("no worker panics while holding it");
                    if options.progress && last.elapsed().as_secs() >= 5 {
                        *last = Instant::now();
                        let done = i + 1;
                        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
                        eprintln!(
                            "[{kind}] {done}/{} files, {}, {rate:.1} files/s",
                            files.len(),
                            total.line()
                        );
                    }
                }
            });
        }
    });
    let total = total.into_inner().expect("workers have finished");
    Ok(total)
}

/// Prints the skipped files and the summary line; returns whether everything passed.
pub fn report(summary: &Summary) -> bool {
    for file in &summary.skipped_files {
        println!(
            "skipped (--skip-known: revm alone misses EIP-7610 storage collisions): {}",
            file.display()
        );
    }
    println!("{}", summary.line());
    summary.failed == 0
}
