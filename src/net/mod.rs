//! The timed connection: target parsing, DNS, TCP (with the kernel's `TCP_INFO`), TLS
//! (rustls), and HTTP/1.1 and HTTP/2 exchanges (hyper) with every phase timed.
//!
//! Nothing here prints or keeps statistics; callers (`probe`, `load`) do.

pub mod target;
pub mod tcp;
pub mod tls;

pub use target::{Scheme, Target};
