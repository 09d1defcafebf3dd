//! The few Hyperscan functions memframe needs, declared here and linked against whichever
//! library the build found (see `build.rs`): Debian's Intel Hyperscan (`libhs.a`, fat runtime,
//! linked statically so the extension needs no shared library at run time) or a Vectorscan
//! compiled from source by `vectorscan-rs-sys` (the `vendored` feature). Both export the same
//! C API (`hs.h`, 5.x).

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr, CString};
use std::fmt;
use std::ptr::{self, NonNull};

#[cfg(feature = "vendored")]
use vectorscan_rs_sys as _; // links the Vectorscan it compiles

pub const FLAG_CASELESS: c_uint = 1;
pub const FLAG_SINGLEMATCH: c_uint = 8;
const MODE_BLOCK: c_uint = 1;
const SUCCESS: c_int = 0;
const SCAN_TERMINATED: c_int = -3;
/// `HS_UNKNOWN_ERROR`: what a call that reported success without its result counts as.
const NO_RESULT: c_int = -13;

#[repr(C)]
struct RawDatabase {
    _private: [u8; 0],
}

#[repr(C)]
struct RawScratch {
    _private: [u8; 0],
}

#[repr(C)]
struct CompileError {
    message: *mut c_char,
    expression: c_int,
}

/// `hs_platform_info_t`: what the compiler targets (tuning and CPU features).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Platform {
    pub tune: c_uint,
    pub cpu_features: c_ulonglong,
    reserved1: c_uint,
    reserved2: c_uint,
}

type MatchHandler = unsafe extern "C" fn(
    id: c_uint,
    from: c_ulonglong,
    to: c_ulonglong,
    flags: c_uint,
    context: *mut c_void,
) -> c_int;

extern "C" {
    fn hs_version() -> *const c_char;
    fn hs_valid_platform() -> c_int;
    fn hs_populate_platform(platform: *mut Platform) -> c_int;
    fn hs_compile_multi(
        expressions: *const *const c_char,
        flags: *const c_uint,
        ids: *const c_uint,
        elements: c_uint,
        mode: c_uint,
        platform: *const Platform,
        db: *mut *mut RawDatabase,
        error: *mut *mut CompileError,
    ) -> c_int;
    fn hs_free_compile_error(error: *mut CompileError) -> c_int;
    fn hs_free_database(db: *mut RawDatabase) -> c_int;
    fn hs_serialize_database(
        db: *const RawDatabase,
        bytes: *mut *mut c_char,
        length: *mut usize,
    ) -> c_int;
    fn hs_deserialize_database(
        bytes: *const c_char,
        length: usize,
        db: *mut *mut RawDatabase,
    ) -> c_int;
    fn hs_alloc_scratch(db: *const RawDatabase, scratch: *mut *mut RawScratch) -> c_int;
    fn hs_free_scratch(scratch: *mut RawScratch) -> c_int;
    fn hs_scan(
        db: *const RawDatabase,
        data: *const c_char,
        length: c_uint,
        flags: c_uint,
        scratch: *mut RawScratch,
        on_event: Option<MatchHandler>,
        context: *mut c_void,
    ) -> c_int;
}

extern "C" {
    fn free(pointer: *mut c_void);
}

/// Which library this build links: `"hyperscan 5.4.0 2023-…"` as `hs_version()` reports it.
pub fn version() -> String {
    // SAFETY: hs_version returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(hs_version()) }
        .to_string_lossy()
        .into_owned()
}

/// Where the linked library came from (`build.rs` decides).
pub const SOURCE: &str = env!("MEMFRAME_HS_SOURCE");

/// Whether this CPU can run the library at all (SSSE3 for Hyperscan 5.x).
pub fn valid_platform() -> bool {
    // SAFETY: no arguments.
    unsafe { hs_valid_platform() == SUCCESS }
}

/// The platform the library would compile for on this machine.
pub fn host_platform() -> Option<Platform> {
    let mut platform = Platform::default();
    // SAFETY: writes one plain struct.
    (unsafe { hs_populate_platform(&mut platform) } == SUCCESS).then_some(platform)
}

/// One pattern of a multi-pattern database.
pub struct Expression {
    pub pattern: Vec<u8>,
    pub flags: c_uint,
    pub id: c_uint,
}

/// Why a multi-pattern compile failed: the library's message and, when it names one, the index
/// of the expression it rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileFailure {
    pub message: String,
    pub expression: Option<usize>,
}

impl fmt::Display for CompileFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.expression {
            Some(index) => write!(f, "expression {index}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for CompileFailure {}

/// A failed library call other than a compile: the `hs_error_t` it returned, or a block too
/// long for its `unsigned int` length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HsError {
    /// The library returned this (negative) status.
    Status(c_int),
    /// A block of this many bytes cannot be scanned in one call.
    TooLong(usize),
}

impl HsError {
    fn check(status: c_int) -> Result<(), Self> {
        if status == SUCCESS {
            Ok(())
        } else {
            Err(Self::Status(status))
        }
    }
}

impl fmt::Display for HsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match *self {
            Self::TooLong(length) => {
                return write!(f, "a block of {length} bytes is too long to scan at once")
            }
            Self::Status(status) => status,
        };
        // the `HS_*` codes of hs_common.h
        let name = match status {
            -1 => "HS_INVALID",
            -2 => "HS_NOMEM",
            -3 => "HS_SCAN_TERMINATED",
            -4 => "HS_COMPILER_ERROR",
            -5 => "HS_DB_VERSION_ERROR",
            -6 => "HS_DB_PLATFORM_ERROR",
            -7 => "HS_DB_MODE_ERROR",
            -8 => "HS_BAD_ALIGN",
            -9 => "HS_BAD_ALLOC",
            -10 => "HS_SCRATCH_IN_USE",
            -11 => "HS_ARCH_ERROR",
            -12 => "HS_INSUFFICIENT_SPACE",
            _ => "HS_UNKNOWN_ERROR",
        };
        write!(f, "the scanning library failed: {name} ({status})")
    }
}

impl std::error::Error for HsError {}

/// A compiled block-mode database. Immutable once built, so shared freely between threads.
pub struct Database {
    raw: NonNull<RawDatabase>,
}

// SAFETY: a Hyperscan database is read-only after compilation; the library documents it as
// safe to use from many threads at once (each with its own scratch).
unsafe impl Send for Database {}
// SAFETY: see above.
unsafe impl Sync for Database {}

impl Drop for Database {
    fn drop(&mut self) {
        // SAFETY: we own the pointer; freed once.
        unsafe { hs_free_database(self.raw.as_ptr()) };
    }
}

impl Database {
    /// Compile `expressions` into one block-mode database for this machine.
    pub fn compile(expressions: &[Expression]) -> Result<Self, CompileFailure> {
        let failure = |message: &str| CompileFailure {
            message: message.to_owned(),
            expression: None,
        };
        let patterns = expressions
            .iter()
            .map(|e| CString::new(e.pattern.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| failure("a pattern contains a NUL byte"))?;
        let pointers: Vec<*const c_char> = patterns.iter().map(|p| p.as_ptr()).collect();
        let flags: Vec<c_uint> = expressions.iter().map(|e| e.flags).collect();
        let ids: Vec<c_uint> = expressions.iter().map(|e| e.id).collect();
        let count =
            c_uint::try_from(expressions.len()).map_err(|_| failure("too many patterns"))?;
        let mut raw = ptr::null_mut();
        let mut error = ptr::null_mut();
        // SAFETY: the arrays hold `count` elements and outlive the call; out-pointers are valid.
        let status = unsafe {
            hs_compile_multi(
                pointers.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                count,
                MODE_BLOCK,
                ptr::null(),
                &mut raw,
                &mut error,
            )
        };
        if status != SUCCESS || raw.is_null() {
            let mut result = failure(&format!("hs_compile_multi failed ({status})"));
            if !error.is_null() {
                // SAFETY: the library filled a valid compile error; freed right after reading.
                unsafe {
                    let e: &CompileError = &*error;
                    if !e.message.is_null() {
                        result.message = CStr::from_ptr(e.message).to_string_lossy().into_owned();
                    }
                    result.expression = usize::try_from(e.expression).ok();
                    hs_free_compile_error(error);
                }
            }
            return Err(result);
        }
        NonNull::new(raw)
            .map(|raw| Self { raw })
            .ok_or_else(|| failure("no database"))
    }

    /// The database in the library's serialized form (for the on-disk cache).
    pub fn serialize(&self) -> Result<Vec<u8>, HsError> {
        let mut bytes: *mut c_char = ptr::null_mut();
        let mut length = 0usize;
        // SAFETY: out-pointers are valid; the buffer comes from the library's allocator (malloc
        // by default) and is copied, then freed.
        unsafe {
            HsError::check(hs_serialize_database(
                self.raw.as_ptr(),
                &mut bytes,
                &mut length,
            ))?;
            if bytes.is_null() {
                return Err(HsError::Status(NO_RESULT));
            }
            let copy = std::slice::from_raw_parts(bytes.cast::<u8>(), length).to_vec();
            free(bytes.cast::<c_void>());
            Ok(copy)
        }
    }

    /// A database from `serialize`'s bytes; Err when the library refuses them (another
    /// version or platform, or damaged bytes).
    pub fn deserialize(bytes: &[u8]) -> Result<Self, HsError> {
        let mut raw = ptr::null_mut();
        // SAFETY: the slice is valid for its length; the library validates the header.
        HsError::check(unsafe {
            hs_deserialize_database(bytes.as_ptr().cast::<c_char>(), bytes.len(), &mut raw)
        })?;
        NonNull::new(raw)
            .map(|raw| Self { raw })
            .ok_or(HsError::Status(NO_RESULT))
    }

    /// Scratch space for scanning this database from one thread.
    pub fn scratch(&self) -> Result<Scratch, HsError> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid database and out-pointer.
        HsError::check(unsafe { hs_alloc_scratch(self.raw.as_ptr(), &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Scratch { raw })
            .ok_or(HsError::Status(NO_RESULT))
    }

    /// Scan `data` (at most `u32::MAX` bytes), calling `on_match(id, end)` for every report
    /// (databases are compiled without start-of-match, so there is no start to give).
    pub fn scan<F: FnMut(u32, u64)>(
        &self,
        data: &[u8],
        scratch: &mut Scratch,
        mut on_match: F,
    ) -> Result<(), HsError> {
        unsafe extern "C" fn trampoline<F: FnMut(u32, u64)>(
            id: c_uint,
            _from: c_ulonglong,
            to: c_ulonglong,
            _flags: c_uint,
            context: *mut c_void,
        ) -> c_int {
            // SAFETY: context is the `&mut F` passed below, alive for the whole scan.
            let callback = unsafe { &mut *context.cast::<F>() };
            callback(id, to);
            0
        }
        let length = c_uint::try_from(data.len()).map_err(|_| HsError::TooLong(data.len()))?;
        // SAFETY: the data, scratch (allocated for this database, used by one thread at a time
        // through `&mut`) and callback context are valid for the call.
        let status = unsafe {
            hs_scan(
                self.raw.as_ptr(),
                data.as_ptr().cast::<c_char>(),
                length,
                0,
                scratch.raw.as_ptr(),
                Some(trampoline::<F>),
                ptr::from_mut(&mut on_match).cast::<c_void>(),
            )
        };
        if status == SCAN_TERMINATED {
            Ok(())
        } else {
            HsError::check(status)
        }
    }
}

/// Per-thread scratch space for one database.
pub struct Scratch {
    raw: NonNull<RawScratch>,
}

// SAFETY: a scratch space may move between threads; `&mut` access keeps it to one at a time.
unsafe impl Send for Scratch {}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: we own the pointer; freed once.
        unsafe { hs_free_scratch(self.raw.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expression(pattern: &str, id: u32) -> Expression {
        Expression {
            pattern: pattern.as_bytes().to_vec(),
            flags: 0,
            id,
        }
    }

    #[test]
    fn compiles_scans_and_round_trips() {
        let db =
            Database::compile(&[expression("abc", 7), expression("x+y", 9)]).expect("compiles");
        let mut scratch = db.scratch().expect("scratch");
        let mut hits = Vec::new();
        db.scan(b"..abc..xxy", &mut scratch, |id, end| hits.push((id, end)))
            .expect("scan");
        assert_eq!(hits, vec![(7, 5), (9, 10)]);
        let bytes = db.serialize().expect("serializes");
        let again = Database::deserialize(&bytes).expect("deserializes");
        let mut scratch = again.scratch().expect("scratch");
        let mut hits2 = Vec::new();
        again
            .scan(b"..abc..xxy", &mut scratch, |id, end| hits2.push((id, end)))
            .expect("scan");
        assert_eq!(hits, hits2);
        let mut damaged = bytes.clone();
        damaged.truncate(bytes.len() / 2);
        assert!(Database::deserialize(&damaged).is_err());
        let refused = Database::deserialize(b"not a database")
            .err()
            .expect("refused");
        assert!(
            matches!(refused, HsError::Status(status) if status < 0),
            "{refused}"
        );
        assert!(refused
            .to_string()
            .starts_with("the scanning library failed: HS_"));
    }

    #[test]
    fn compile_errors_name_the_expression() {
        let err = Database::compile(&[expression("ok", 0), expression("a(?<=b)\\1", 1)])
            .err()
            .expect("rejected");
        assert_eq!(err.expression, Some(1), "{err:?}");
        assert!(!err.message.is_empty());
        assert_eq!(err.to_string(), format!("expression 1: {}", err.message));
    }

    #[test]
    fn reports_version_and_platform() {
        assert!(version().starts_with('5'), "{}", version());
        assert!(valid_platform());
        assert!(host_platform().is_some());
        assert!(SOURCE.starts_with("system") || SOURCE == "vendored");
    }
}
