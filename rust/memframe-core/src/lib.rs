//! memframe-core: the hot paths of memframe in pure Rust (no Python types).
//!
//! The Python package reaches these functions through the thin `memframe-py` glue crate;
//! `memframe/_fallback` holds a pure-Python twin that must return identical results.

pub mod checksum;
mod dbcache;
pub mod hs;
pub mod parallel;
pub mod scan;
pub mod tokens;

/// Version of the core crate; the glue crate reports it so Python can check it matches the package.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
