//! Timed connections: DNS, TCP (with the kernel's `TCP_INFO`), TLS (rustls) and
//! HTTP/1.1 or HTTP/2 exchanges (hyper), HTTP/3 over QUIC (quinn + h3), each phase measured on a monotonic clock.
//! Nothing here prints.

pub mod alt_svc;
pub mod client;
pub mod conn;
pub mod dns;
pub mod error;
pub mod http;
pub mod options;
pub mod quic;
pub mod request;
pub mod stream;
pub mod svcb;
pub mod target;
pub mod tcp;
pub mod timed_io;
pub mod tls;
pub mod verify;

pub use dns::ResolveOverride;
pub use error::NetError;
pub use options::{ClientOptions, HttpVersionPref};
pub use request::{RequestHead, RequestSpec, DEFAULT_HEADERS};
pub use target::{Scheme, Target};
