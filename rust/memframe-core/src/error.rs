//! The errors the core returns to its callers, typed so that bindings can map each onto their
//! own exception types without parsing messages (the Python glue: [`ErrorKind::InvalidInput`]
//! is a `ValueError`, [`ErrorKind::Engine`] a `RuntimeError`).
//!
//! The `Display` text of every variant is the message the user sees; it names the rule (or the
//! argument) at fault.

use std::fmt;

use crate::parallel::MAX_THREADS;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The caller's input is wrong: a rule set, a rule, an argument.
    InvalidInput,
    /// The machine or the engine failed on valid input (worker threads could not start).
    Engine,
}

/// An error of the core's public API.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The rule set is not JSON of the expected shape.
    RuleSetJson(serde_json::Error),
    /// A rule's regex does not compile.
    RuleRegex { rule: String, source: regex::Error },
    /// A rule's secret group is not a group of its regex.
    SecretGroup { rule: String, group: usize },
    /// A rule's keyword is not ASCII (keywords are matched ASCII-caseless).
    KeywordNotAscii { rule: String, keyword: String },
    /// An allowlist regex (`owner` is the rule id, or `global`) does not compile.
    AllowlistRegex {
        owner: String,
        pattern: String,
        source: regex::Error,
    },
    /// The stopwords of an allowlist could not be compiled into one automaton.
    Stopwords { owner: String, message: String },
    /// A thread count outside `1..=MAX_THREADS`; `given` is the value as the caller wrote it
    /// (a Python int may not fit any Rust integer).
    InvalidThreads { given: String },
    /// The worker threads of a batch could not be started.
    ThreadPool {
        threads: usize,
        source: rayon::ThreadPoolBuildError,
    },
}

impl Error {
    /// Whether the caller or the machine is at fault.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::RuleSetJson(_)
            | Self::RuleRegex { .. }
            | Self::SecretGroup { .. }
            | Self::KeywordNotAscii { .. }
            | Self::AllowlistRegex { .. }
            | Self::Stopwords { .. }
            | Self::InvalidThreads { .. } => ErrorKind::InvalidInput,
            Self::ThreadPool { .. } => ErrorKind::Engine,
        }
    }

    /// A thread count the batch functions refuse (see [`crate::parallel::check_threads`]).
    pub fn invalid_threads(given: impl fmt::Display) -> Self {
        Self::InvalidThreads {
            given: given.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RuleSetJson(e) => write!(f, "invalid rule set JSON: {e}"),
            Self::RuleRegex { rule, source } => write!(f, "rule {rule}: {source}"),
            Self::SecretGroup { rule, group } => {
                write!(f, "rule {rule}: secret group {group} does not exist")
            }
            Self::KeywordNotAscii { rule, keyword } => {
                write!(f, "rule {rule}: keyword {keyword:?} is not ASCII")
            }
            Self::AllowlistRegex {
                owner,
                pattern,
                source,
            } => write!(f, "{owner}: allowlist regex {pattern:?}: {source}"),
            Self::Stopwords { owner, message } => {
                write!(f, "{owner}: allowlist stopwords: {message}")
            }
            Self::InvalidThreads { given } => write!(
                f,
                "threads must be between 1 and {MAX_THREADS} (or None for all cores), got {given}"
            ),
            Self::ThreadPool { threads, source } => {
                write!(f, "could not start {threads} worker threads: {source}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::RuleSetJson(e) => Some(e),
            Self::RuleRegex { source, .. } | Self::AllowlistRegex { source, .. } => Some(source),
            Self::ThreadPool { source, .. } => Some(source),
            Self::SecretGroup { .. }
            | Self::KeywordNotAscii { .. }
            | Self::Stopwords { .. }
            | Self::InvalidThreads { .. } => None,
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Self::RuleSetJson(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_messages() {
        let threads = Error::invalid_threads(0);
        assert_eq!(threads.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            threads.to_string(),
            format!("threads must be between 1 and {MAX_THREADS} (or None for all cores), got 0")
        );
        let group = Error::SecretGroup {
            rule: "r".into(),
            group: 2,
        };
        assert_eq!(group.to_string(), "rule r: secret group 2 does not exist");
        let json = serde_json::from_str::<serde_json::Value>("{").map_err(Error::from);
        let json = json.expect_err("invalid JSON");
        assert!(
            json.to_string().starts_with("invalid rule set JSON: "),
            "{json}"
        );
        assert!(std::error::Error::source(&json).is_some());
    }
}
