//! The compiled-database cache: short-lived processes (a `memframe hook` call) load the
//! serialized database instead of compiling the rule set again (~0.5–1 s).
//!
//! One file per database, `<dir>/<key>.hsdb`, where the key is a sha256 of the database
//! patterns and flags, the library's version and build, and the CPU features it compiles for:
//! another rule set, library or CPU never reads a foreign file. A file is a JSON header line
//! (key, which rules the database holds, what the library rejected, sha256 and length of the
//! payload) and the library's serialized bytes. It is used only when it is a regular file owned
//! by this user and writable by nobody else, and every check passes; otherwise the database is
//! compiled again and the file replaced. Writes are atomic (a private temporary file renamed
//! over the old one); directories are created private, existing ones are left as they are.

use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::hs::{self, Database, HsError};
use crate::scan::Compiled;

const FORMAT: u32 = 2;
/// Larger files are not ours (the default rule set's database is well under 1 MiB).
const MAX_FILE: u64 = 256 << 20;

#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    key: String,
    signals: Vec<usize>,
    flags: Vec<u32>,
    rejected: Vec<(usize, String)>,
    sha256: String,
    length: usize,
}

extern "C" {
    fn geteuid() -> u32;
}

/// Why the cache was not used: the file could not be loaded (the database is then compiled),
/// or the compiled database could not be stored. Never an error of the scanner: it is reported
/// in [`crate::scan::CacheOutcome`].
#[derive(Debug)]
#[non_exhaustive]
pub enum CacheError {
    /// There is no cache file for this key (or it cannot be looked up).
    Missing(io::Error),
    /// The cache entry is a symlink, directory or other non-file.
    NotRegularFile,
    /// Opening, inspecting or reading the file failed.
    Unreadable(io::Error),
    /// The path names another file after opening than before (a race or an attack).
    Changed,
    /// The file belongs to another user or others may write it.
    NotPrivate,
    /// The file is larger than any database of ours.
    TooLarge,
    /// The file has no header line.
    NoHeader,
    /// The header line is not ours.
    DamagedHeader(serde_json::Error),
    /// The file is for another rule set, library or format.
    Foreign,
    /// The payload does not match the header's length and sha256.
    Checksum,
    /// The header names rule indices beyond the rule set.
    UnknownRules,
    /// The library would not deserialize the payload.
    Refused(HsError),
    /// The library would not serialize the compiled database.
    Serialize(HsError),
    /// The header could not be encoded.
    EncodeHeader(serde_json::Error),
    /// The cache directory could not be created.
    CreateDir { dir: PathBuf, source: io::Error },
    /// The file could not be written or renamed into place.
    Write { dir: PathBuf, source: io::Error },
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing(e) => write!(f, "no cache file ({e})"),
            Self::NotRegularFile => f.write_str("the cache entry is not a regular file"),
            Self::Unreadable(e) => write!(f, "cache file unreadable ({e})"),
            Self::Changed => f.write_str("the cache file changed while it was opened"),
            Self::NotPrivate => f.write_str("the cache file is not this user's private file"),
            Self::TooLarge => f.write_str("the cache file is too large"),
            Self::NoHeader => f.write_str("the cache file has no header"),
            Self::DamagedHeader(e) => write!(f, "the cache file's header is damaged ({e})"),
            Self::Foreign => f.write_str("the cache file belongs to another rule set or library"),
            Self::Checksum => f.write_str("the cache file is damaged (checksum)"),
            Self::UnknownRules => f.write_str("the cache file names rules that do not exist"),
            Self::Refused(_) => f.write_str("the library refused the cached database"),
            Self::Serialize(_) => f.write_str("the library could not serialize the database"),
            Self::EncodeHeader(e) => write!(f, "{e}"),
            Self::CreateDir { dir, source } => {
                write!(f, "cannot create {}: {source}", dir.display())
            }
            Self::Write { dir, source } => write!(
                f,
                "cannot write the cache file in {}: {source}",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for CacheError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Missing(e)
            | Self::Unreadable(e)
            | Self::CreateDir { source: e, .. }
            | Self::Write { source: e, .. } => Some(e),
            Self::DamagedHeader(e) | Self::EncodeHeader(e) => Some(e),
            Self::Refused(e) | Self::Serialize(e) => Some(e),
            _ => None,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// The cache key of `(rule index, pattern, flags)` entries on this library and CPU.
pub(crate) fn key(entries: &[(usize, Vec<u8>, u32)]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(format!(
        "memframe-hsdb {FORMAT}\n{}\n{}\n",
        hs::version(),
        hs::SOURCE
    ));
    if let Some(platform) = hs::host_platform() {
        hasher.update(format!("{} {}\n", platform.tune, platform.cpu_features));
    }
    for (index, pattern, flags) in entries {
        hasher.update(format!("{index} {flags} {}\n", pattern.len()));
        hasher.update(pattern);
    }
    hex(&hasher.finalize())
}

fn path_for(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.hsdb"))
}

/// The cached database for `key`, or why there is none usable.
pub(crate) fn load(dir: &Path, key: &str, rule_count: usize) -> Result<Compiled, CacheError> {
    let path = path_for(dir, key);
    let link = fs::symlink_metadata(&path).map_err(CacheError::Missing)?;
    if !link.file_type().is_file() {
        return Err(CacheError::NotRegularFile);
    }
    let mut file = File::open(&path).map_err(CacheError::Unreadable)?;
    let meta = file.metadata().map_err(CacheError::Unreadable)?;
    if meta.ino() != link.ino() || meta.dev() != link.dev() {
        return Err(CacheError::Changed);
    }
    // SAFETY: geteuid has no preconditions.
    if meta.uid() != unsafe { geteuid() } || meta.mode() & 0o022 != 0 {
        return Err(CacheError::NotPrivate);
    }
    if meta.len() > MAX_FILE {
        return Err(CacheError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(CacheError::Unreadable)?;
    let newline = memchr::memchr(b'\n', &bytes).ok_or(CacheError::NoHeader)?;
    let header: Header =
        serde_json::from_slice(&bytes[..newline]).map_err(CacheError::DamagedHeader)?;
    let payload = &bytes[newline + 1..];
    if header.format != FORMAT || header.key != key {
        return Err(CacheError::Foreign);
    }
    if header.length != payload.len() || header.sha256 != hex(&Sha256::digest(payload)) {
        return Err(CacheError::Checksum);
    }
    if header
        .signals
        .iter()
        .chain(header.rejected.iter().map(|r| &r.0))
        .any(|&i| i >= rule_count)
    {
        return Err(CacheError::UnknownRules);
    }
    let database = Database::deserialize(payload).map_err(CacheError::Refused)?;
    Ok(Compiled {
        database: Some(database),
        signals: header.signals,
        flags: header.flags,
        rejected: header.rejected,
        error: None,
    })
}

/// Write `compiled` as the cache file for `key` (atomic, private).
pub(crate) fn store(
    dir: &Path,
    key: &str,
    compiled: &Compiled,
    database: &Database,
) -> Result<(), CacheError> {
    let payload = database.serialize().map_err(CacheError::Serialize)?;
    let header = Header {
        format: FORMAT,
        key: key.to_owned(),
        signals: compiled.signals.clone(),
        flags: compiled.flags.clone(),
        rejected: compiled.rejected.clone(),
        sha256: hex(&Sha256::digest(&payload)),
        length: payload.len(),
    };
    let mut content = serde_json::to_vec(&header).map_err(CacheError::EncodeHeader)?;
    content.push(b'\n');
    content.extend_from_slice(&payload);
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| CacheError::CreateDir {
            dir: dir.to_owned(),
            source,
        })?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let temporary = dir.join(format!(".{key}.{}.{nanos}.tmp", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(&content)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temporary, path_for(dir, key)));
    written.map_err(|source| {
        let _ = fs::remove_file(&temporary);
        CacheError::Write {
            dir: dir.to_owned(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{CacheOutcome, Scanner};
    use std::os::unix::fs::PermissionsExt;

    const RULES: &str = r#"{"rules": [
        {"id": "aws", "regex": "\\b((?:AKIA|ASIA)[A-Z2-7]{16})\\b", "keywords": ["akia"]},
        {"id": "lookbehind", "regex": "(?i)token\\s*=\\s*([a-z0-9]{8})", "keywords": ["token"]}
    ]}"#;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("memframe-dbcache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn only_file(dir: &Path) -> PathBuf {
        let files: Vec<PathBuf> = fs::read_dir(dir)
            .expect("cache dir")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    #[test]
    fn stores_then_hits_and_finds_the_same() {
        let dir = scratch_dir("hit");
        let first = Scanner::from_json_cached(RULES, Some(&dir)).expect("compiles");
        assert!(matches!(first.report().cache, CacheOutcome::Stored));
        let file = only_file(&dir);
        assert_eq!(
            fs::metadata(&file).expect("meta").permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(&dir).expect("meta").permissions().mode() & 0o777,
            0o700
        );
        let second = Scanner::from_json_cached(RULES, Some(&dir)).expect("loads");
        assert!(matches!(second.report().cache, CacheOutcome::Hit));
        let text = b"x AKIAQWERTYUIOPASDFGH token = abcd1234";
        assert_eq!(first.find(text), second.find(text));
        assert_eq!(second.find(text).len(), 2);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_damaged_or_foreign_file_is_rebuilt() {
        let dir = scratch_dir("damaged");
        Scanner::from_json_cached(RULES, Some(&dir)).expect("compiles");
        let file = only_file(&dir);
        let mut bytes = fs::read(&file).expect("read");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&file, &bytes).expect("damage");
        let scanner = Scanner::from_json_cached(RULES, Some(&dir)).expect("rebuilds");
        assert!(
            matches!(&scanner.report().cache, CacheOutcome::Stored),
            "{:?}",
            scanner.report()
        );
        assert_eq!(scanner.find(b"AKIAQWERTYUIOPASDFGH").len(), 1);
        // group-writable: not trusted, compiled again
        fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).expect("chmod");
        let scanner = Scanner::from_json_cached(RULES, Some(&dir)).expect("rebuilds");
        assert!(!matches!(scanner.report().cache, CacheOutcome::Hit));
        // a symlink is never followed
        fs::remove_file(&file).expect("rm");
        std::os::unix::fs::symlink("/dev/null", &file).expect("symlink");
        let scanner = Scanner::from_json_cached(RULES, Some(&dir)).expect("rebuilds");
        assert!(!matches!(scanner.report().cache, CacheOutcome::Hit));
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn another_rule_set_gets_another_file() {
        let dir = scratch_dir("keys");
        Scanner::from_json_cached(RULES, Some(&dir)).expect("compiles");
        let other = RULES.replace("{16}", "{17}");
        let scanner = Scanner::from_json_cached(&other, Some(&dir)).expect("compiles");
        assert!(matches!(scanner.report().cache, CacheOutcome::Stored));
        assert_eq!(fs::read_dir(&dir).expect("dir").count(), 2);
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
