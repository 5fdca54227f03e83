//! The checked configuration each command runs with (ripgrep's raw-args →
//! checked-config split): built from the raw flags of `cli.rs` here and nowhere
//! else — URLs checked, headers parsed, durations bounded, conflicts rejected with a
//! message naming the flag. Errors here are usage errors (exit 2).
//!
//! What a measurement takes is its own module's plain type ([`LoadPlan`],
//! [`DiskOptions`], [`LabOptions`], [`WatchSpec`], `net`'s request and client
//! settings); this module builds those and bundles them with what the command
//! itself decides (where the result goes, `--out`, `--watch`) into one config per
//! command: [`LoadConfig`], [`DiskConfig`], [`LabConfig`], [`DiagnoseConfig`],
//! [`OutConfig`]. It may import `cli` and the measuring modules; nothing below
//! `commands/` imports `cli`, and this module never imports `commands`, `store`,
//! `report` or `diagnose`.
//!
//! [`LoadPlan`]: crate::load::LoadPlan
//! [`DiskOptions`]: crate::disk::DiskOptions
//! [`LabOptions`]: crate::lab::LabOptions
//! [`WatchSpec`]: crate::watch::WatchSpec

pub mod diagnose;
pub mod disk;
pub mod http;
pub mod lab;
pub mod load;
pub mod out;
pub mod page;
pub mod probe;
pub mod serve;

pub use diagnose::{DiagnoseConfig, DiagnoseRun, RampPlan};
pub use disk::DiskConfig;
pub use lab::LabConfig;
pub use load::LoadConfig;
pub use out::{OutConfig, OutRun, OutputConfig};
