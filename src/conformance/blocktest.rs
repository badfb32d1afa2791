//! placeholder
use std::path::PathBuf;
use super::{FixtureError, RunOptions, Summary};
/// Runs blockchain tests.
pub fn run(_paths: &[PathBuf], _options: &RunOptions) -> Result<Summary, FixtureError> { Ok(Summary::default()) }
