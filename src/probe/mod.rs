//! The probe: N rounds of a request over a fresh connection (on TLS a full handshake)
//! followed by one over the same, now reused connection, so the two series share
//! every moment's drift; then on TLS N over new connections that resume a session
//! (when the server resumes), every phase timed; plus the kernel's view of the
//! connections (DESIGN.md, Measurements) and the client's own noise per sample
//! (`noise`). `sampler` takes more rounds until the caller's verdicts are settled and
//! interleaves the rounds of the URL and its origin. With `--http3` the series run
//! over QUIC (`run_h3`). `tcp://host:port` is a TCP-connect ping. Nothing here
//! prints; `report::probe` renders a [`ProbeResult`].

pub mod audit;
pub mod dns;
pub mod noise;
pub mod peek;
pub mod redirect;
mod result;
mod run;
mod run_h3;
pub mod sample;
pub mod sampler;
pub mod stop;
pub mod trips;

pub use result::{DownloadSummary, PhysicalFloor, ProbeResult, QuicSummary, TcpSummary};
pub use run::{probe, ProbeConfig, REUSED_PER_ROUND};
pub use sample::{PhaseStats, PhaseSummary, PhasesMs, Sample, Series, SeriesSummary, PHASES};
pub use sampler::{sample, Sampling, SamplingReport};
pub use stop::Stop;
pub use trips::HandshakeTrips;
