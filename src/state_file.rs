//! `--dump-state`: the head state written as anvil's state dump when the node stops, and with
//! `--state-interval` every so often while it runs.
//! (`--load-state` is read in `config` and loaded in `node`, before any actor starts.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use hearth_actors::StateActor;
use hearth_messages::state::DumpState;
use hearth_rpc::ChainForks;

use crate::node::NodeError;

/// Writes the head state to `path` as anvil's state dump (plain JSON), through a temporary
/// file beside it that is renamed over `path`, so a reader never sees half a dump and a failed
/// write leaves the previous file. Returns how many accounts it holds.
pub async fn write(
    state: &Addr<StateActor>,
    forks: &ChainForks,
    path: &Path,
) -> Result<usize, NodeError> {
    let failed = |reason: String| NodeError::DumpState { path: path.to_path_buf(), reason };
    let state = state
        .send(DumpState { max_json_bytes: hearth_rpc::MAX_STATE_JSON_BYTES })
        .await
        .map_err(|e| failed(format!("the state owner is gone: {e}")))?
        .map_err(|e| failed(e.to_string()))?;
    let json = hearth_rpc::state_document(&state, forks).map_err(|e| failed(e.to_string()))?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    std::fs::write(&temporary, &json).and_then(|()| std::fs::rename(&temporary, path)).map_err(
        |e| {
            let _ = std::fs::remove_file(&temporary);
            failed(e.to_string())
        },
    )?;
    Ok(state.accounts.len())
}

/// `--state-interval`: writes the state file every `every` on the current runtime (the first
/// after one interval), as [`write()`] does, until the node stops; a failed write is logged and
/// the next one tried.
pub fn write_every(
    state: Addr<StateActor>,
    forks: Arc<ChainForks>,
    path: PathBuf,
    every: Duration,
) {
    actix_rt::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match write(&state, &forks, &path).await {
                Ok(accounts) => {
                    tracing::debug!(target: "node", path = %path.display(), accounts, "state written (--state-interval)");
                }
                Err(error) => {
                    tracing::warn!(target: "node", %error, "state not written (--state-interval); trying again at the next interval");
                }
            }
        }
    });
}
