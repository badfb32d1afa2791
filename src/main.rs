//! `hearth`: starts a dev chain and serves JSON-RPC until interrupted, or runs a conformance
//! tool (`hearth statetest PATH...`, `hearth blocktest PATH...`).
//!
//! Exit codes: 0 after a clean shutdown, 2 for an unusable flag (before anything starts),
//! 1 when storage cannot be opened or the port cannot be bound.

use std::process::ExitCode;

use clap::Parser;
use hearth::cli::{Cli, Command};
use hearth::config::NodeConfig;
use hearth::node::Node;
use hearth_rpc::Extensions;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
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
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();

    let system = actix_rt::System::new();
    let result = system.block_on(async move {
        let node = Node::start(config)?;
        let (server, addr) = node.serve_rpc(Extensions::default())?;
        let accounts: Vec<String> = node.signers.iter().map(|s| s.address().to_string()).collect();
        tracing::info!(target: "node", %addr, chain_id = node.config().chain_id, ?accounts, "JSON-RPC listening on http://{addr}");
        // Runs until SIGINT/SIGTERM; actix-web stops gracefully on either.
        server.await.map_err(|source| hearth::node::NodeError::Bind { addr, source })?;
        Ok::<_, hearth::node::NodeError>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Runs a conformance tool; exit 0 when every case passed, 1 when any failed, 2 when the
/// fixtures could not be read.
fn run_tool(command: Command) -> ExitCode {
    use hearth::conformance::{RunOptions, blocktest, report, statetest};
    let (args, run): (_, fn(&[std::path::PathBuf], &RunOptions) -> _) = match command {
        Command::Statetest(args) => (args, statetest::run),
        Command::Blocktest(args) => (args, blocktest::run),
    };
    let options = RunOptions {
        fork: args.fork,
        threads: args.threads,
        progress: true,
        skip_known: args.skip_known,
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
