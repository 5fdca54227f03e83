//! `latscope disk`.

use crate::cli::DiskArgs;

/// Runs `latscope disk`.
pub fn run(_args: DiskArgs) -> anyhow::Result<u8> {
    anyhow::bail!("latscope disk is not built yet")
}
