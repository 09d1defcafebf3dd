//! memframe-core: the hot paths of memframe in pure Rust (no Python types).
//!
//! The Python package reaches these functions through the thin `memframe-py` glue crate;
//! `memframe/_fallback` holds a pure-Python twin that must return identical results.

pub mod checksum;
pub mod dbcache;
pub mod error;
pub mod hs;
pub mod parallel;
pub mod scan;
pub mod tokens;

pub use error::{Error, ErrorKind};

/// Version of the core crate; the glue crate reports it so Python can check it matches the package.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
