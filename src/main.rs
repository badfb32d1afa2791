//! `hearth`: starts a dev chain and serves JSON-RPC until interrupted.
//!
//! Exit codes: 0 after a clean shutdown, 2 for an unusable flag (before anything starts),
//! 1 when storage cannot be opened or the port cannot be bound.

use std::process::ExitCode;

use clap::Parser;
use hearth::cli::Cli;
use hearth::config::NodeConfig;
use hearth::node::Node;
use hearth_rpc::Extensions;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
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
