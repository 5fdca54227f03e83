//! The checked configuration of `latscope disk`: the run's [`DiskOptions`] from the
//! flags (a bad value is a usage error naming the flag) and where its result goes.

use std::time::Duration;

use crate::cli::DiskArgs;
use crate::config::out::OutputConfig;
use crate::disk::options::MAX_BS;
use crate::disk::{DirectMode, DiskOptions, Pattern};
use crate::error::UsageError;
use crate::units::fmt_bytes;

/// Everything `latscope disk` runs with.
#[derive(Debug, Clone)]
pub struct DiskConfig {
    pub options: DiskOptions,
    /// `--json`, `--label`, `--db`, `--no-save`, `--no-tui`.
    pub output: OutputConfig,
}

impl DiskConfig {
    /// Checks the flags; the error is a usage message naming the flag.
    pub fn from_args(a: &DiskArgs) -> Result<DiskConfig, UsageError> {
        Ok(DiskConfig {
            options: options(a).map_err(UsageError::new)?,
            output: OutputConfig::from(&a.output),
        })
    }
}

/// The disk run the flags ask for.
fn options(a: &DiskArgs) -> Result<DiskOptions, String> {
    // No workload flag: the database suite (crate::disk::suite).
    let suite = a.pattern.is_none()
        && a.bs.is_none()
        && a.iodepth.is_none()
        && a.duration.is_none()
        && !a.fsync;
    let pattern = a.pattern.unwrap_or(Pattern::RandRw);
    let bs = a.bs.unwrap_or(4096);
    let duration = a.duration.unwrap_or(Duration::from_secs(30));
    if bs == 0 {
        return Err("--bs must be at least 1 byte".into());
    }
    if bs > MAX_BS {
        return Err(format!(
            "--bs {} is too large (at most {})",
            fmt_bytes(bs),
            fmt_bytes(MAX_BS)
        ));
    }
    if duration.is_zero() {
        return Err("--duration must be longer than 0".into());
    }
    if let Some(size) = a.size {
        if size < bs {
            return Err(format!(
                "--size {} is smaller than one block (--bs {})",
                fmt_bytes(size),
                fmt_bytes(bs)
            ));
        }
    }
    if a.fsync && !pattern.writes() {
        return Err(format!(
            "--fsync needs a pattern that writes (randwrite, randrw, write), not {}",
            pattern.name()
        ));
    }
    let read_pct = match pattern {
        Pattern::RandRead | Pattern::Read => 100,
        Pattern::RandWrite | Pattern::Write => 0,
        Pattern::RandRw => a.mix,
    };
    let direct = if a.buffered && !a.direct {
        DirectMode::Off
    } else if a.direct {
        DirectMode::Required
    } else {
        DirectMode::Preferred
    };
    Ok(DiskOptions {
        path: a.path.clone(),
        pattern,
        read_pct,
        bs,
        iodepth: a.iodepth.unwrap_or(1).max(1),
        size: a.size,
        duration,
        direct,
        fsync: a.fsync,
        precondition: a.precondition,
        allow_write: a.write,
        engine: a.engine,
        suite,
        layout_budget: None,
    })
}
