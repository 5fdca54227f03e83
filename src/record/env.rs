//! The environment a run was made in: host, CPU, cores, kernel — so runs from
//! different machines are told apart when compared.

use serde::{Deserialize, Serialize};

/// Where a run was made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub os: String,
}

impl Environment {
    /// Reads the environment of this machine (best effort: unknown fields stay empty).
    pub fn capture() -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        Environment {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu_model,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            kernel: read("/proc/sys/kernel/osrelease"),
            os: std::env::consts::OS.to_string(),
        }
    }
}
