//! The few Hyperscan functions memframe needs, declared here and linked against whichever
//! library the build found (see `build.rs`): Debian's Intel Hyperscan (`libhs.a`, fat runtime,
//! linked statically so the extension needs no shared library at run time) or a Vectorscan
//! compiled from source by `vectorscan-rs-sys` (the `vendored` feature). Both export the same
//! C API (`hs.h`, 5.x).

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr, CString};
use std::ptr::{self, NonNull};

#[cfg(feature = "vendored")]
use vectorscan_rs_sys as _; // links the Vectorscan it compiles

pub const FLAG_CASELESS: c_uint = 1;
pub const FLAG_SINGLEMATCH: c_uint = 8;
const MODE_BLOCK: c_uint = 1;
const SUCCESS: c_int = 0;
const SCAN_TERMINATED: c_int = -3;

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
#[derive(Debug, Clone)]
pub struct CompileFailure {
    pub message: String,
    pub expression: Option<usize>,
}

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
    pub fn serialize(&self) -> Option<Vec<u8>> {
        let mut bytes: *mut c_char = ptr::null_mut();
        let mut length = 0usize;
        // SAFETY: out-pointers are valid; the buffer comes from the library's allocator (malloc
        // by default) and is copied, then freed.
        unsafe {
            if hs_serialize_database(self.raw.as_ptr(), &mut bytes, &mut length) != SUCCESS
                || bytes.is_null()
            {
                return None;
            }
            let copy = std::slice::from_raw_parts(bytes.cast::<u8>(), length).to_vec();
            free(bytes.cast::<c_void>());
            Some(copy)
        }
    }

    /// A database from `serialize`'s bytes; `None` when the library refuses them (another
    /// version or platform, or damaged bytes).
    pub fn deserialize(bytes: &[u8]) -> Option<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: the slice is valid for its length; the library validates the header.
        let status = unsafe {
            hs_deserialize_database(bytes.as_ptr().cast::<c_char>(), bytes.len(), &mut raw)
        };
        if status != SUCCESS {
            return None;
        }
        NonNull::new(raw).map(|raw| Self { raw })
    }

    /// Scratch space for scanning this database from one thread.
    pub fn scratch(&self) -> Result<Scratch, c_int> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid database and out-pointer.
        let status = unsafe { hs_alloc_scratch(self.raw.as_ptr(), &mut raw) };
        match NonNull::new(raw) {
            Some(raw) if status == SUCCESS => Ok(Scratch { raw }),
            _ => Err(status),
        }
    }

    /// Scan `data` (at most `u32::MAX` bytes), calling `on_match(id, end)` for every report
    /// (databases are compiled without start-of-match, so there is no start to give).
    /// Err carries the library's status code.
    pub fn scan<F: FnMut(u32, u64)>(
        &self,
        data: &[u8],
        scratch: &mut Scratch,
        mut on_match: F,
    ) -> Result<(), c_int> {
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
        let length = c_uint::try_from(data.len()).map_err(|_| -1)?;
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
        if status == SUCCESS || status == SCAN_TERMINATED {
            Ok(())
        } else {
            Err(status)
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
        assert!(Database::deserialize(&damaged).is_none());
        assert!(Database::deserialize(b"not a database").is_none());
    }

    #[test]
    fn compile_errors_name_the_expression() {
        let err = Database::compile(&[expression("ok", 0), expression("a(?<=b)\\1", 1)])
            .err()
            .expect("rejected");
        assert_eq!(err.expression, Some(1), "{err:?}");
        assert!(!err.message.is_empty());
    }

    #[test]
    fn reports_version_and_platform() {
        assert!(version().starts_with('5'), "{}", version());
        assert!(valid_platform());
        assert!(host_platform().is_some());
        assert!(SOURCE.starts_with("system") || SOURCE == "vendored");
    }
}
