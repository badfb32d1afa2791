//! `--dump-state`: the head state written as anvil's state dump when the node stops.
//! (`--load-state` is read in `config` and loaded in `node`, before any actor starts.)

use std::path::Path;

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
