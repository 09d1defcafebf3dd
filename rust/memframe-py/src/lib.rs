//! pyo3 glue: exposes memframe-core as `memframe._native`. No logic lives here; bulk calls
//! copy their inputs to Rust-owned memory and release the GIL while the core works.

use memframe_core::{checksum, tokens};
use pyo3::prelude::*;

/// `"sha256:<hex>"` of the UTF-8 encoding of `text` (a str) or of `data` (bytes).
#[pyfunction]
fn sha256(data: &Bound<'_, PyAny>) -> PyResult<String> {
    with_bytes(data, checksum::sha256_tagged)
}

/// xxh3-64 (seed 0) of a str's UTF-8 encoding or of bytes.
#[pyfunction]
fn xxh3_64(data: &Bound<'_, PyAny>) -> PyResult<u64> {
    with_bytes(data, checksum::xxh3_64)
}

/// xxh3-128 (seed 0) of a str's UTF-8 encoding or of bytes.
#[pyfunction]
fn xxh3_128(data: &Bound<'_, PyAny>) -> PyResult<u128> {
    with_bytes(data, checksum::xxh3_128)
}

/// `sha256` of every entry, computed with the GIL released.
#[pyfunction]
fn sha256_many(py: Python<'_>, texts: Vec<String>) -> Vec<String> {
    py.detach(|| {
        texts
            .iter()
            .map(|t| checksum::sha256_tagged(t.as_bytes()))
            .collect()
    })
}

/// Estimated token count of `text`.
#[pyfunction]
fn count_tokens(text: &str) -> u64 {
    tokens::count_tokens(text)
}

fn with_bytes<T>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    if let Ok(text) = data.cast::<pyo3::types::PyString>() {
        return Ok(f(text.to_str()?.as_bytes()));
    }
    if let Ok(bytes) = data.cast::<pyo3::types::PyBytes>() {
        return Ok(f(bytes.as_bytes()));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected str or bytes, got {}",
        data.get_type().name()?
    )))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CORE_VERSION", memframe_core::VERSION)?;
    m.add(
        "BUILD_PROFILE",
        if cfg!(debug_assertions) { "debug" } else { "release" },
    )?;
    m.add_function(wrap_pyfunction!(sha256, m)?)?;
    m.add_function(wrap_pyfunction!(sha256_many, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_64, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_128, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    Ok(())
}
