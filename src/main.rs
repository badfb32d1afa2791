//! `hearth`: starts a dev chain (or an imported one) and serves JSON-RPC until interrupted, or
//! runs a tool (`hearth statetest PATH...`, `hearth blocktest PATH...`,
//! `hearth import --genesis G FILE...`, `hearth export OUT`).
//!
//! Exit codes: 0 after a clean shutdown, 2 for an unusable flag (before anything starts: a
//! `--load-state` dump that cannot be loaded among them), 1 when storage cannot be opened, the
//! port cannot be bound or the `--dump-state` file cannot be written at shutdown.

use std::process::ExitCode;

use clap::Parser;
use std::path::PathBuf;

use hearth::banner::StartupInfo;
use hearth::chainfile;
use hearth::cli::{Cli, Command, ExportArgs, ImportArgs, LogFormat};
use hearth::config::NodeConfig;
use hearth::genesis::Genesis;
use hearth::node::Node;
use hearth_rpc::Extensions;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

fn main() -> ExitCode {
    hearth::os::tune_malloc();
    let mut cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    if let Some(command) = cli.command.take() {
        return run_tool(command);
    }
    let config = match NodeConfig::try_from(cli) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // anvil_setLoggingEnabled turns lines below `warn` off and on through this switch.
    let logging = hearth_rpc::LogSwitch::default();
    init_logging(config.log_format, config.quiet, &logging);

    let system = actix_rt::System::new();
    let result = system.block_on(async move {
        let mut node = hearth::replica::start(config).await?;
        node.logging = logging;
        let (server, addr) = node.serve_rpc(Extensions::default())?;
        if let (Some(every), Some(path)) =
            (node.config().state_interval, node.config().dump_state.clone())
        {
            let (state, forks) = (node.state.clone(), std::sync::Arc::clone(&node.fork_table));
            hearth::state_file::write_every(state, forks, path, every);
        }
        if let Some(path) = &node.config().ipc {
            hearth_rpc::serve_ipc(path, node.rpc_context(Extensions::default()))
                .map_err(|source| hearth::node::NodeError::Ipc { path: path.clone(), source })?;
        }
        // The Engine API port (`--authrpc.*`): stopped with the JSON-RPC server.
        let engine = spawn_engine(&node)?;
        announce(&node, addr)?;
        let accounts: Vec<String> = node.signers.iter().map(|s| s.address().to_string()).collect();
        tracing::info!(target: "node", %addr, chain_id = node.config().chain_id, ?accounts, "JSON-RPC listening on http://{addr} and ws://{addr}");
        // Until SIGINT/SIGTERM; then the clean stop (src/shutdown.rs): WebSockets closed, queued
        // calls answered, the miner's block committed, the server stopped, the state dumped
        // (--dump-state) and the journal checkpointed.
        hearth::shutdown::serve_until_signal(&node, server, &engine).await?;
        Ok::<_, hearth::node::NodeError>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            // A flag that contradicts the existing chain is a usage error, like any bad flag.
            let code = match e {
                hearth::node::NodeError::Mismatch { .. }
                | hearth::node::NodeError::OtherChain { .. } => 2,
                _ => 1,
            };
            // Exit here: actors started before the failure would otherwise be torn down with
            // the runtime already gone (a panic instead of the exit code). Every block written
            // so far was journaled before it was acknowledged and is replayed at the next open,
            // so nothing is lost.
            std::process::exit(code)
        }
    }
}

/// Starts the Engine API port when `--authrpc.*` asks for it; the handles to stop it with.
fn spawn_engine(node: &Node) -> Result<Vec<actix_web::dev::ServerHandle>, hearth::node::NodeError> {
    Ok(match node.serve_engine()? {
        Some((server, _)) => {
            let handle = server.handle();
            actix_rt::spawn(server);
            vec![handle]
        }
        None => Vec::new(),
    })
}

/// Log lines go to stderr (stdout carries the banner, which scripts read), as text or, with
/// `--log.format json`, one JSON object per line. `RUST_LOG` filters them (default `info`,
/// `warn` with `-q`), and so does `switch` (anvil_setLoggingEnabled) for lines below `warn`:
/// turning it off reloads the filter with `warn`, turning it on reloads the directives it
/// started with. A reload rebuilds tracing's per-call-site cache, so between changes a
/// disabled line costs nothing.
fn init_logging(format: LogFormat, quiet: bool, switch: &hearth_rpc::LogSwitch) {
    use tracing_subscriber::reload;

    let directives = std::env::var("RUST_LOG").ok().filter(|d| EnvFilter::try_new(d).is_ok());
    // `-q`: warnings and errors only, unless RUST_LOG says otherwise.
    let directives = directives.unwrap_or_else(|| if quiet { "warn" } else { "info" }.to_owned());
    let (filter, handle) = reload::Layer::new(EnvFilter::new(&directives));
    switch.on_change(move |on| {
        let filter = if on { EnvFilter::new(&directives) } else { EnvFilter::new("warn") };
        if let Err(error) = handle.reload(filter) {
            tracing::warn!(target: "node", %error, "the log filter could not be changed");
        }
    });
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
            tracing_subscriber::registry().with(filter).with(layer.with_ansi(ansi)).init();
        }
        LogFormat::Json => {
            tracing_subscriber::registry().with(filter).with(layer.json()).init();
        }
    }
}

/// Writes `--config-out` and prints the banner on stdout (unless `--quiet`), as anvil does once
/// it listens.
fn announce(node: &Node, addr: std::net::SocketAddr) -> Result<(), hearth::node::NodeError> {
    use hearth::node::NodeError;
    let info = StartupInfo::of(node, addr).map_err(NodeError::Read)?;
    if let Some(path) = &node.config().config_out {
        let mut text = serde_json::to_string_pretty(&info.config_out())
            .map_err(|e| NodeError::ConfigOut { path: path.clone(), source: e.into() })?;
        text.push('\n');
        std::fs::write(path, text)
            .map_err(|source| NodeError::ConfigOut { path: path.clone(), source })?;
    }
    if !node.config().quiet {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        // A closed stdout (the reader went away) must not stop the node: the banner is a
        // courtesy, the RPC port is the service.
        let _ = out.write_all(info.banner().as_bytes()).and_then(|()| out.flush());
    }
    Ok(())
}

/// Opens the datadir of `hearth import` / `hearth export`.
fn open_datadir(datadir: Option<PathBuf>) -> Result<hearth_storage::ChainWriter, String> {
    let path = match datadir {
        Some(path) => path,
        None => hearth::config::default_datadir().map_err(|e| e.to_string())?,
    };
    hearth_storage::ChainWriter::open(&path).map_err(|e| {
        format!(
            "cannot open the chain in {} (set with --datadir; is a node running on it?): {e}",
            path.display()
        )
    })
}

/// Runs `hearth import`: exit 0 when every block was imported or already there, 1 otherwise.
fn run_import(args: ImportArgs) -> ExitCode {
    let started = std::time::Instant::now();
    let result = open_datadir(args.datadir).and_then(|db| {
        let genesis = Genesis::read(&args.genesis).map_err(|e| e.to_string())?;
        let threads = args
            .exec_threads
            .unwrap_or_else(|| hearth::config::default_exec_threads(hearth::config::cores()));
        let parallel = hearth::config::parallel_config(args.exec_parallel, threads)
            .map_err(|e| e.to_string())?;
        chainfile::import_chain_with(&db, &genesis, &args.files, true, parallel)
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(s) => {
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "imported {} blocks ({} already present) in {secs:.1} s ({:.0} blocks/s); head #{} {}",
                s.imported,
                s.skipped,
                s.imported as f64 / secs.max(1e-3),
                s.head,
                s.head_hash
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("\nerror: {e}");
            ExitCode::from(1)
        }
    }
}

/// Runs `hearth export`.
fn run_export(args: ExportArgs) -> ExitCode {
    let result = open_datadir(args.datadir).and_then(|db| {
        if let Some(path) = &args.genesis_out {
            chainfile::export_genesis(&db, path).map_err(|e| e.to_string())?;
        }
        let n = chainfile::export_chain(&db, args.from, args.to, &args.out)
            .map_err(|e| e.to_string())?;
        let last = args.to.or_else(|| db.head_number()).unwrap_or_default();
        let hash = db.block_hash(last).map_err(|e| e.to_string())?.unwrap_or_default();
        Ok((n, last, hash))
    });
    match result {
        Ok((n, last, hash)) => {
            eprintln!("exported {n} blocks to {}; last #{last} {hash}", args.out.display());
            if let Some(path) = &args.genesis_out {
                eprintln!("wrote the genesis to {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `hearth drive`: follows the leader until stopped (or `--until`); exit 1 on an error.
fn run_drive(args: hearth::cli::DriveArgs) -> ExitCode {
    let secret =
        match std::fs::read_to_string(&args.jwt_secret).map_err(|e| e.to_string()).and_then(|hex| {
            alloy_rpc_types_engine::JwtSecret::from_hex(hex.trim()).map_err(|e| e.to_string())
        }) {
            Ok(secret) => secret,
            Err(e) => {
                eprintln!("error: the JWT secret {}: {e}", args.jwt_secret.display());
                return ExitCode::from(2);
            }
        };
    let settings = hearth::follow::DriveSettings {
        leader: args.leader,
        engine: hearth::engine_api::EngineApi::new(args.engine, secret),
        poll: std::time::Duration::from_millis(args.poll_ms),
        until: args.until,
    };
    match actix::System::new().block_on(hearth::follow::drive(settings)) {
        Ok(head) => {
            eprintln!("the driven node's head is block {head}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Runs a conformance tool; exit 0 when every case passed, 1 when any failed, 2 when the
/// fixtures could not be read.
fn run_tool(command: Command) -> ExitCode {
    use hearth::conformance::{RunOptions, blocktest, enginetest, report, statetest};
    let (args, run): (_, fn(&[std::path::PathBuf], &RunOptions) -> _) = match command {
        Command::Statetest(args) => (args, statetest::run),
        Command::Blocktest(args) => (args, blocktest::run),
        Command::Enginetest(args) => (args, enginetest::run),
        Command::Import(args) => return run_import(args),
        Command::Drive(args) => return run_drive(args),
        Command::Export(args) => return run_export(args),
        Command::Completions { shell } => {
            let mut command = <hearth::cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "hearth", &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
    };
    let options = RunOptions {
        fork: args.fork,
        threads: args.threads,
        progress: true,
        skip_known: args.skip_known,
        parallel: match hearth::config::parallel_config(
            args.exec_parallel,
            args.exec_threads
                .unwrap_or_else(|| hearth::config::default_exec_threads(hearth::config::cores())),
        ) {
            Ok(parallel) => parallel,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let started = std::time::Instant::now();
    match run(&args.paths, &options) {
        Ok(summary) => {
            let ok = report(&summary);
            eprintln!("finished in {:.1} s", started.elapsed().as_secs_f64());
            if ok { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
