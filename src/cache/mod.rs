//! HTTP cache semantics, below probe and load (DESIGN.md, layout): RFC 9111
//! storability and freshness ([`rfc`]), what common caches do by default
//! ([`defaults`]: Varnish's built-in VCL, Apache mod_cache, nginx proxy_cache), and
//! the one detector of "a cache answered" ([`status`]) that the cache audit and the
//! load engine share. Pure functions over headers: nothing here measures or prints.

pub mod control;
pub mod cookies;
pub mod defaults;
pub mod edge;
pub mod headers;
pub mod rfc;
pub mod status;
pub mod vocab;

pub use control::CacheControl;
pub use headers::Headers;
pub use status::{cache_status, CacheKind, CacheState, CacheStatus, Detector, Tally};
