//! Compatibility path: the cache-status detector moved to [`crate::cache::status`].

pub use crate::cache::status::{
    cache_status, edge, proxy_header, CacheLayer, CacheState, CacheStatus,
};
