//! `latscope load`.

use crate::cli::LoadArgs;

/// Runs `latscope load`.
pub fn run(_args: LoadArgs) -> anyhow::Result<u8> {
    anyhow::bail!("latscope load is not built yet")
}
