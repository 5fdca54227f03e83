//! The checked configuration of `latscope disk`: the run's [`DiskOptions`] from the
//! flags (a bad value is a usage error naming the flag) and where its result goes.

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
    let pattern = a.pattern;
    if a.bs == 0 {
        return Err("--bs must be at least 1 byte".into());
    }
    if a.bs > MAX_BS {
        return Err(format!(
            "--bs {} is too large (at most {})",
            fmt_bytes(a.bs),
            fmt_bytes(MAX_BS)
        ));
    }
    if a.duration.is_zero() {
        return Err("--duration must be longer than 0".into());
    }
    if let Some(size) = a.size {
        if size < a.bs {
            return Err(format!(
                "--size {} is smaller than one block (--bs {})",
                fmt_bytes(size),
                fmt_bytes(a.bs)
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
        bs: a.bs,
        iodepth: a.iodepth.max(1),
        size: a.size,
        duration: a.duration,
        direct,
        fsync: a.fsync,
        precondition: a.precondition,
        allow_write: a.write,
        engine: a.engine,
    })
}
