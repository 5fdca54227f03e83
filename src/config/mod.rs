//! Validated configuration built from the raw flags of `cli.rs`: URLs checked,
//! headers parsed, conflicts rejected with a message naming the flag. Errors here are
//! usage errors (exit 2).
pub mod http;
