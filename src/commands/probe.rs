//! `latscope probe`.

use crate::cli::ProbeArgs;

/// Runs `latscope probe`.
pub fn run(_args: ProbeArgs) -> anyhow::Result<u8> {
    anyhow::bail!("latscope probe is not built yet")
}
