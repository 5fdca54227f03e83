//! latscope finds out where a web service's latency goes — network round trips,
//! TCP/TLS handshakes, a CDN or proxy in the path, caching, server time, behaviour
//! under load, the disk underneath — and says so in findings with evidence.
//!
//! Data flows one way: `net` → (`probe` | `load` | `disk`) → `stats` → `diagnose` →
//! `store` / `report`. Measurement code never prints; presentation code never
//! measures. The binary (`src/main.rs`) only parses flags and calls [`run`].

pub mod cache;
pub mod cleanup;
pub mod cli;
pub mod commands;
pub mod config;
pub mod diagnose;
pub mod disk;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod input;
pub mod k8s;
pub mod lab;
pub mod load;
pub mod net;
pub mod observe;
pub mod output;
pub mod page;
pub mod pipeline;
pub mod probe;
pub mod record;
pub mod redact;
pub mod report;
pub mod schema;
pub mod serve;
pub mod stats;
pub mod store;
pub mod units;
pub mod uring;
pub mod visible;
pub mod watch;

pub use commands::run;
