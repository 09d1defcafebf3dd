//! pyo3 glue: exposes memframe-core as `memframe._native`. No logic lives here. Inputs are
//! borrowed from the Python objects (str as its cached UTF-8, bytes as they are) and bulk calls
//! release the GIL while the core works.
//!
//! Errors: the core's typed [`Error`]s become `ValueError` (bad input: a rule set, a `threads`
//! count) or `RuntimeError` (the machine failed: worker threads could not start), with the
//! core's message. Nothing here panics on input from Python.

use std::path::PathBuf;
use std::sync::Arc;

use memframe_core::scan::{Finding, Scanner};
use memframe_core::{checksum, hs, parallel, tokens, Error, ErrorKind};
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// The Python exception for a core error.
fn to_py(error: Error) -> PyErr {
    match error.kind() {
        ErrorKind::InvalidInput => PyValueError::new_err(error.to_string()),
        ErrorKind::Engine => PyRuntimeError::new_err(error.to_string()),
    }
}

/// A batch's `threads` argument: None (all cores) or an int in `1..=MAX_THREADS`. Any other
/// int (0, negative, huge beyond any Rust integer) is a ValueError naming the range; a non-int
/// stays the TypeError of int conversion. Checked before any work or GIL release.
fn threads_arg(threads: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(value) = threads else {
        return Ok(None);
    };
    match value.extract::<usize>() {
        Ok(n) => parallel::check_threads(Some(n)).map(Some).map_err(to_py),
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => {
            Err(to_py(Error::invalid_threads(value.str()?)))
        }
        Err(e) => Err(e),
    }
}

/// Borrow a str's UTF-8 or a bytes object's buffer.
fn as_bytes<'a>(data: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(text) = data.cast::<PyString>() {
        // A str with lone surrogates raises UnicodeEncodeError, like str.encode("utf-8").
        return text.to_str().map(str::as_bytes);
    }
    if let Ok(bytes) = data.cast::<PyBytes>() {
        return Ok(bytes.as_bytes());
    }
    Err(PyTypeError::new_err(format!(
        "expected str or bytes, got {}",
        data.get_type().name()?
    )))
}

fn all_bytes<'a>(items: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<&'a [u8]>> {
    items.iter().map(as_bytes).collect()
}

/// `"sha256:<hex>"` of the UTF-8 encoding of a str, or of bytes.
#[pyfunction]
fn sha256(data: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(checksum::sha256_tagged(as_bytes(data)?))
}

/// xxh3-64 (seed 0) of a str's UTF-8 encoding or of bytes.
#[pyfunction]
fn xxh3_64(data: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(checksum::xxh3_64(as_bytes(data)?))
}

/// xxh3-128 (seed 0) of a str's UTF-8 encoding or of bytes.
#[pyfunction]
fn xxh3_128(data: &Bound<'_, PyAny>) -> PyResult<u128> {
    Ok(checksum::xxh3_128(as_bytes(data)?))
}

/// Scans of less input than this keep the GIL. Releasing it costs little alone, but under
/// load another Python thread (the team server's committer) takes it and the caller then
/// waits to get it back, which cost a small PUT's gate far more than the scan itself. A scan
/// of this size takes about 10 µs, at worst (text dense with near misses) under 0.5 ms.
const DETACH_MIN_BYTES: usize = 32 * 1024;

/// `f()` with the GIL released when `size` bytes are worth it, else with the GIL held.
fn scan_detached<T: Send>(py: Python<'_>, size: usize, f: impl FnOnce() -> T + Send) -> T {
    if size < DETACH_MIN_BYTES {
        f()
    } else {
        py.detach(f)
    }
}

fn batch<T: Send>(
    py: Python<'_>,
    items: Vec<Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    f: impl Fn(&[u8]) -> T + Sync + Send,
) -> PyResult<Vec<T>> {
    let threads = threads_arg(threads)?;
    let slices = all_bytes(&items)?;
    py.detach(|| parallel::map_items(threads, &slices, 1, |s| f(s)))
        .map_err(to_py)
}

/// `sha256` of every entry, in parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (items, threads=None))]
fn sha256_many(
    py: Python<'_>,
    items: Vec<Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<String>> {
    batch(py, items, threads, checksum::sha256_tagged)
}

/// `xxh3_64` of every entry, in parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (items, threads=None))]
fn xxh3_64_many(
    py: Python<'_>,
    items: Vec<Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u64>> {
    batch(py, items, threads, checksum::xxh3_64)
}

/// `xxh3_128` of every entry, in parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (items, threads=None))]
fn xxh3_128_many(
    py: Python<'_>,
    items: Vec<Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u128>> {
    batch(py, items, threads, checksum::xxh3_128)
}

/// Estimated token count of `text`. Lone surrogates count as their `surrogatepass` bytes, as in
/// the Python engine.
#[pyfunction]
fn count_tokens(text: &Bound<'_, PyAny>) -> PyResult<u64> {
    let Ok(string) = text.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "expected str, got {}",
            text.get_type().name()?
        )));
    };
    if let Ok(utf8) = string.to_str() {
        return Ok(tokens::count_tokens(utf8));
    }
    let encoded = string.call_method1("encode", ("utf-8", "surrogatepass"))?;
    Ok(tokens::count_tokens_bytes(
        encoded.cast::<PyBytes>()?.as_bytes(),
    ))
}

/// `count_tokens` of every entry, in parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (texts, threads=None))]
fn count_tokens_many(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u64>> {
    let threads = threads_arg(threads)?;
    // Borrow each str's UTF-8; a str with lone surrogates is encoded with surrogatepass.
    let mut encoded: Vec<Bound<'_, PyAny>> = Vec::new();
    let mut owners: Vec<(Option<usize>, &Bound<'_, PyAny>)> = Vec::with_capacity(texts.len());
    for text in &texts {
        let Ok(string) = text.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "expected str, got {}",
                text.get_type().name()?
            )));
        };
        if string.to_str().is_ok() {
            owners.push((None, text));
        } else {
            encoded.push(string.call_method1("encode", ("utf-8", "surrogatepass"))?);
            owners.push((Some(encoded.len() - 1), text));
        }
    }
    let slices = owners
        .iter()
        .map(|(index, text)| match index {
            Some(i) => Ok(encoded[*i].cast::<PyBytes>()?.as_bytes()),
            None => as_bytes(text),
        })
        .collect::<PyResult<Vec<&[u8]>>>()?;
    py.detach(|| parallel::map_items(threads, &slices, 1, |s| tokens::count_tokens_bytes(s)))
        .map_err(to_py)
}

/// Why the linked Hyperscan/Vectorscan cannot compile a rule regex, or None when it can.
#[pyfunction]
fn pattern_error(regex: &str) -> Option<String> {
    memframe_core::scan::pattern_error(regex).map(|failure| failure.message)
}

type FindingTuple = (usize, usize, usize, usize, usize, usize);

fn finding_tuple(f: &Finding) -> FindingTuple {
    (f.rule, f.start, f.end, f.secret_start, f.secret_end, f.line)
}

/// A compiled rule set: one Vectorscan database plus one regex per rule.
#[pyclass(frozen, name = "Scanner", module = "memframe._native")]
struct PyScanner {
    inner: Arc<Scanner>,
}

#[pymethods]
impl PyScanner {
    /// Compile `rules_json`; with `cache_dir`, the compiled database is loaded from / stored in
    /// that directory (keyed by rule set, library and CPU; see memframe-core's dbcache).
    #[new]
    #[pyo3(signature = (rules_json, cache_dir=None))]
    fn new(py: Python<'_>, rules_json: &str, cache_dir: Option<PathBuf>) -> PyResult<Self> {
        let json = rules_json.to_owned();
        let scanner = py
            .detach(move || Scanner::from_json_cached(&json, cache_dir.as_deref()))
            .map_err(to_py)?;
        Ok(Self {
            inner: Arc::new(scanner),
        })
    }

    #[getter]
    fn rule_count(&self) -> usize {
        self.inner.rule_count()
    }

    /// `(rule index, message)` for each rule the engine left out of its database.
    #[getter]
    fn rejected(&self) -> Vec<(usize, String)> {
        self.inner.report().rejected.clone()
    }

    /// Why no database could be built at all, or None.
    #[getter]
    fn database_error(&self) -> Option<String> {
        self.inner
            .report()
            .database_error
            .as_ref()
            .map(|failure| failure.message.clone())
    }

    /// `"off"`, `"hit"`, `"stored"` or `"compiled: <why the cache was not used>"`.
    #[getter]
    fn cache(&self) -> String {
        self.inner.report().cache.describe()
    }

    /// Scans whose database pass failed (confirmed by the regexes alone instead).
    #[getter]
    fn scan_failures(&self) -> usize {
        self.inner.scan_failures()
    }

    /// Every finding as `(rule, start, end, secret_start, secret_end, line)`.
    fn find(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Vec<FindingTuple>> {
        let data = as_bytes(text)?;
        let scanner = &self.inner;
        Ok(scan_detached(py, data.len(), || {
            scanner.find(data).iter().map(finding_tuple).collect()
        }))
    }

    /// Indices of the rules with a finding, in rule order.
    fn scan(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let data = as_bytes(text)?;
        let scanner = &self.inner;
        Ok(scan_detached(py, data.len(), || scanner.scan(data)))
    }

    #[pyo3(signature = (texts, threads=None))]
    fn find_many(
        &self,
        py: Python<'_>,
        texts: Vec<Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Vec<FindingTuple>>> {
        let threads = threads_arg(threads)?;
        let slices = all_bytes(&texts)?;
        let scanner = &self.inner;
        let size = slices.iter().map(|s| s.len()).sum();
        scan_detached(py, size, || {
            let found = scanner.find_many(&slices, threads)?;
            Ok(found
                .iter()
                .map(|found| found.iter().map(finding_tuple).collect())
                .collect())
        })
        .map_err(to_py)
    }

    #[pyo3(signature = (texts, threads=None))]
    fn scan_many(
        &self,
        py: Python<'_>,
        texts: Vec<Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Vec<usize>>> {
        let threads = threads_arg(threads)?;
        let slices = all_bytes(&texts)?;
        let scanner = &self.inner;
        let size = slices.iter().map(|s| s.len()).sum();
        scan_detached(py, size, || scanner.scan_many(&slices, threads)).map_err(to_py)
    }

    /// The database pass alone (no confirmation): reports per text. For the benches.
    #[pyo3(signature = (texts, threads=None))]
    fn database_pass_many(
        &self,
        py: Python<'_>,
        texts: Vec<Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<usize>> {
        let threads = threads_arg(threads)?;
        let slices = all_bytes(&texts)?;
        let scanner = &self.inner;
        py.detach(|| scanner.database_pass_many(&slices, threads))
            .map_err(to_py)
    }

    /// Per path: `(findings, None)` or `([], error message)`.
    #[pyo3(signature = (paths, threads=None))]
    fn find_files(
        &self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<(Vec<FindingTuple>, Option<String>)>> {
        let threads = threads_arg(threads)?;
        let scanner = &self.inner;
        py.detach(|| {
            let results = scanner.find_files(&paths, threads)?;
            Ok(results
                .into_iter()
                .map(|result| match result {
                    Ok(found) => (found.iter().map(finding_tuple).collect(), None),
                    Err(error) => (Vec::new(), Some(error.to_string())),
                })
                .collect())
        })
        .map_err(to_py)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CORE_VERSION", memframe_core::VERSION)?;
    m.add(
        "BUILD_PROFILE",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    )?;
    m.add("HS_VERSION", hs::version())?;
    m.add("HS_SOURCE", hs::SOURCE)?;
    m.add("SCAN_DETACH_MIN_BYTES", DETACH_MIN_BYTES)?;
    m.add_function(wrap_pyfunction!(sha256, m)?)?;
    m.add_function(wrap_pyfunction!(sha256_many, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_64, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_64_many, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_128, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_128_many, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens_many, m)?)?;
    m.add_function(wrap_pyfunction!(pattern_error, m)?)?;
    m.add_class::<PyScanner>()?;
    Ok(())
}
