//! The probe: N sequential requests over a fresh connection each (on TLS a full
//! handshake each), then N over one reused connection, then on TLS N over new
//! connections that resume a session (when the server resumes), every phase timed; plus the kernel's view of the connection
//! (DESIGN.md, Measurements); with `--http3` the same series over QUIC (`run_h3`). `tcp://host:port` is a TCP-connect ping. Nothing here
//! prints; `report::probe` renders a [`ProbeResult`].

pub mod audit;
pub mod peek;
pub mod redirect;
mod result;
mod run;
mod run_h3;
pub mod sample;
pub mod stop;

pub use result::{DownloadSummary, PhysicalFloor, ProbeResult, QuicSummary, TcpSummary};
pub use run::{probe, ProbeConfig};
pub use sample::{PhaseStats, PhaseSummary, PhasesMs, Sample, Series, SeriesSummary, PHASES};
pub use stop::Stop;
