//! Compatibility path: the cache logic moved to [`crate::cache`] (RFC 9111 in
//! `cache::rfc`, Cache-Control parsing in `cache::control`).

pub use crate::cache::control::CacheControl;
#[allow(unused_imports)]
pub(crate) use crate::cache::control::{split_list, unquote};
pub use crate::cache::rfc::{
    has_validators, shared_freshness, Freshness, FreshnessSource, Unstorable,
};
