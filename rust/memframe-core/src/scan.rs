//! The secret scanner: Vectorscan finds which rules can match in one pass, the `regex` crate
//! confirms them and extracts the secret group, then entropy floors and allowlists filter.
//!
//! Semantics (shared with the Python engines, see `memframe/_fallback/scan.py`):
//! - a rule is evaluated only when the ASCII-lower-cased text contains one of its keywords
//!   (a rule without keywords is always evaluated);
//! - its findings are the leftmost-first, non-overlapping matches of its regex over the whole
//!   text (ASCII classes, bytes mode);
//! - a finding is dropped when its secret's Shannon entropy is below the rule's floor, or when
//!   an allowlist (global or the rule's) matches the secret.
//!
//! Offsets are reported in characters of the text decoded as UTF-8 where every byte of an
//! invalid sequence counts as one character (Python's `surrogateescape`).

use std::path::Path;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use aho_corasick::AhoCorasick;
use regex::bytes::{CaptureLocations, Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use regex_automata::hybrid::dfa::{Cache as HybridCache, DFA as HybridDfa};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};
use serde::Deserialize;

use crate::dbcache::{self, CacheError};
use crate::error::Error;
use crate::hs::{self, Database, Expression, Scratch};

/// One rule as the Python rule loader hands it over (JSON).
#[derive(Debug, Clone, Deserialize)]
pub struct RuleSpec {
    pub id: String,
    pub regex: String,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default = "one")]
    pub secret_group: usize,
    #[serde(default)]
    pub entropy: Option<f64>,
    #[serde(default)]
    pub allowlist: AllowSpec,
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AllowSpec {
    #[serde(default)]
    pub stopwords: Vec<String>,
    #[serde(default)]
    pub regexes: Vec<String>,
    /// regexes searched in the whole match rather than the secret (gitleaks' `regexTarget`)
    #[serde(default)]
    pub match_regexes: Vec<String>,
}

/// The whole rule set: rules in order plus the global allowlist.
#[derive(Debug, Clone, Deserialize)]
pub struct RuleSetSpec {
    pub rules: Vec<RuleSpec>,
    #[serde(default)]
    pub allowlist: AllowSpec,
}

/// A confirmed secret. Offsets are characters (see the module docs); `line` is 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub rule: usize,
    pub start: usize,
    pub end: usize,
    pub secret_start: usize,
    pub secret_end: usize,
    pub line: usize,
}

/// An allowlist compiled for one-pass checks: every stopword in one ASCII-case-insensitive
/// automaton, the secret's regexes in one set and the whole match's in another (a finding is
/// allowed when any of them matches).
struct Allow {
    stopwords: Option<AhoCorasick>,
    regexes: Option<RegexSet>,
    match_regexes: Option<RegexSet>,
}

/// One set of allowlist regexes; `None` when there are none.
fn regex_set(patterns: &[String], owner: &str) -> Result<Option<RegexSet>, Error> {
    for pattern in patterns {
        build_regex(pattern).map_err(|source| Error::AllowlistRegex {
            owner: owner.to_owned(),
            pattern: pattern.clone(),
            source,
        })?;
    }
    if patterns.is_empty() {
        return Ok(None);
    }
    RegexSetBuilder::new(patterns)
        .unicode(false)
        .size_limit(64 << 20)
        .dfa_size_limit(64 << 20)
        .build()
        .map(Some)
        .map_err(|source| Error::AllowlistRegex {
            owner: owner.to_owned(),
            pattern: patterns.join(" | "),
            source,
        })
}

impl Allow {
    fn compile(spec: &AllowSpec, owner: &str) -> Result<Self, Error> {
        let regexes = regex_set(&spec.regexes, owner)?;
        let match_regexes = regex_set(&spec.match_regexes, owner)?;
        let words: Vec<&str> = spec
            .stopwords
            .iter()
            .map(String::as_str)
            .filter(|w| !w.is_empty())
            .collect();
        let stopwords = if spec.stopwords.is_empty() {
            None
        } else if words.len() < spec.stopwords.len() {
            // the empty word occurs in every secret: everything is allowed
            Some(
                AhoCorasick::builder()
                    .build([""])
                    .map_err(|e| Error::Stopwords {
                        owner: owner.to_owned(),
                        message: e.to_string(),
                    })?,
            )
        } else {
            Some(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(&words)
                    .map_err(|e| Error::Stopwords {
                        owner: owner.to_owned(),
                        message: e.to_string(),
                    })?,
            )
        };
        Ok(Self {
            stopwords,
            regexes,
            match_regexes,
        })
    }

    /// Whether the finding with `secret`, found in the whole match `whole`, is allowed.
    fn allows(&self, secret: &[u8], whole: &[u8]) -> bool {
        if let Some(words) = &self.stopwords {
            if words.is_match(secret) {
                return true;
            }
        }
        self.regexes
            .as_ref()
            .is_some_and(|set| set.is_match(secret))
            || self
                .match_regexes
                .as_ref()
                .is_some_and(|set| set.is_match(whole))
    }
}

struct Rule {
    regex: LazyRegex,
    secret_group: usize,
    entropy: Option<f64>,
    allow: Allow,
    /// lower-case keywords; empty means the rule is evaluated on every text
    keywords: Vec<Vec<u8>>,
    /// false when Vectorscan could not compile the pattern: confirmed by regex alone
    in_database: bool,
    /// what the database holds for this rule and how far back from its reported ends a match
    /// can start (see `Signal`)
    signal: Signal,
}

/// A compiled rule set, safe to share between threads.
pub struct Scanner {
    rules: Vec<Rule>,
    global: Allow,
    database: Option<Database>,
    /// database pattern id -> rule index
    signals: Vec<usize>,
    /// rules outside the database (rejected by the library), in rule order
    outside: Vec<usize>,
    /// scratch spaces not in use: one per thread scanning at once, reused
    scratches: Mutex<Vec<Scratch>>,
    report: EngineReport,
    /// scans whose database pass failed (scratch or scan error) and fell back to regex alone
    scan_failures: AtomicUsize,
}

/// How the rule set reached the engine: what Vectorscan/Hyperscan left out and why, and
/// whether the database came from the on-disk cache. A rule left out is still confirmed, by its
/// regex over the whole text: right, but slower.
#[derive(Debug, Default)]
pub struct EngineReport {
    /// (rule index, the library's message) for every rule the library rejected
    pub rejected: Vec<(usize, String)>,
    /// why no database could be built at all (every rule is then confirmed by regex alone)
    pub database_error: Option<hs::CompileFailure>,
    pub cache: CacheOutcome,
}

/// What the database cache did for this scanner.
#[derive(Debug, Default)]
pub enum CacheOutcome {
    /// no cache directory was given
    #[default]
    Off,
    /// loaded from the cache
    Hit,
    /// compiled and written to the cache
    Stored,
    /// compiled: the cache file was missing or unusable (why), and no database was built to
    /// store in its place
    Compiled(CacheError),
    /// compiled; writing the cache file failed (why)
    NotStored(CacheError),
}

impl CacheOutcome {
    /// `off`, `hit`, `stored` or `compiled: <why the cache file was not used>`.
    pub fn describe(&self) -> String {
        match self {
            Self::Off => "off".to_owned(),
            Self::Hit => "hit".to_owned(),
            Self::Stored => "stored".to_owned(),
            Self::Compiled(why) => format!("compiled: {why}"),
            Self::NotStored(why) => format!("compiled: not cached: {why}"),
        }
    }
}

fn build_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(64 << 20)
        .dfa_size_limit(64 << 20)
        .build()
}

/// A rule's regex, checked when the scanner is built and compiled when a text first needs it.
///
/// Compiling every rule's regex is most of the cost of building a scanner from a cached
/// database (a short-lived process such as an agent hook scans one small text, and confirms
/// only the few rules whose signal hit). Building checks what can make a pattern invalid — its
/// syntax and its group count — by parsing it; compiling later can then fail only on the size
/// limits, and then compiles again without them, so a rule is never dropped.
struct LazyRegex {
    pattern: String,
    compiled: OnceLock<Regex>,
}

impl LazyRegex {
    /// Parse `pattern` as `build_regex` would; `(regex, capture group count incl. group 0)`.
    fn new(pattern: &str) -> Result<(Self, usize), regex::Error> {
        let parsed = regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(pattern);
        let hir = match parsed {
            Ok(hir) => hir,
            // the regex crate's own error (the same parser): compiling reports it
            Err(_) => return Err(build_regex(pattern).err().unwrap_or_else(size_error)),
        };
        let groups = hir.properties().explicit_captures_len() + 1;
        let lazy = Self {
            pattern: pattern.to_owned(),
            compiled: OnceLock::new(),
        };
        Ok((lazy, groups))
    }

    fn get(&self) -> &Regex {
        self.compiled
            .get_or_init(|| compile_within(&self.pattern, 64 << 20))
    }
}

/// `pattern` compiled with `limit` as its size limits, or without limits when they refuse it
/// (only a pattern that parsed comes here: nothing but the limits can refuse it).
fn compile_within(pattern: &str, limit: usize) -> Regex {
    let build = |limit: usize| {
        RegexBuilder::new(pattern)
            .unicode(false)
            .size_limit(limit)
            .dfa_size_limit(limit)
            .build()
    };
    build(limit)
        .or_else(|_| build(usize::MAX))
        .unwrap_or_else(|e| unreachable!("rule regex {pattern:?} parsed but does not compile: {e}"))
}

/// The error of a pattern the parser refused but the regex crate accepted (cannot happen: both
/// run the same parser); reported as the size-limit error of an empty limit.
fn size_error() -> regex::Error {
    RegexBuilder::new("a")
        .size_limit(0)
        .build()
        .err()
        .unwrap_or_else(|| unreachable!("a size limit of 0 refuses every pattern"))
}

/// A regex pattern (our subset) as Vectorscan wants it: a leading `(?i)` becomes a flag, added
/// to `flags` (see `Signal::flags`).
fn database_pattern(regex: &str, flags: u32) -> (Vec<u8>, u32) {
    match regex.strip_prefix("(?i)") {
        Some(rest) => (rest.as_bytes().to_vec(), hs::FLAG_CASELESS | flags),
        None => (regex.as_bytes().to_vec(), flags),
    }
}

/// Why the engine's library cannot compile a rule's `regex` (as the scanner would give it), or
/// `None` when it can. Rule files are validated with this.
pub fn pattern_error(regex: &str) -> Option<hs::CompileFailure> {
    let signal = Signal::of(regex);
    for (pattern, flags) in [
        (regex, hs::FLAG_SINGLEMATCH),
        (signal.pattern.as_str(), signal.flags()),
    ] {
        let (pattern, flags) = database_pattern(pattern, flags);
        if let Err(failure) = Database::compile(&[Expression {
            pattern,
            flags,
            id: 0,
        }]) {
            return Some(failure);
        }
    }
    None
}

fn properties(pattern: &str) -> Option<regex_syntax::hir::Properties> {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()
        .map(|hir| hir.properties().clone())
}

/// The longest match a pattern can produce, in bytes (`None` when unbounded).
fn maximum_len(pattern: &str) -> Option<usize> {
    properties(pattern)?.maximum_len()
}

/// The shortest match a pattern can produce, in bytes.
fn minimum_len(pattern: &str) -> Option<usize> {
    properties(pattern)?.minimum_len()
}

/// What the database holds for a rule, and how far back from a reported end a match can start.
///
/// A bounded rule (its longest match is `n` bytes) is in the database as it is: a match ending
/// at `e` starts at or after `e - n`. A rule that ends in a trailing group, `P(?:…+|\z)` with
/// `P` never empty (the common "then a boundary" tail), is in the database as `P` alone: every
/// match of the rule begins with a match of `P` starting where it starts, so the `P`-end `m`
/// bounds its start (`>= m - maxlen(P)`), and no `P`-match means no match. Where the signal is
/// unbounded (`[ \t]*` between a name and its value, a PEM body) the bound of each reported end
/// is found by running the signal backwards from it (a reverse lazy DFA, leftmost start). Every
/// signal reports every end, so each rule is confirmed only in windows before its ends.
struct Signal {
    pattern: String,
    /// `Some(n)`: a match ending at `e` starts at or after `e - n`; `None`: see `reverse`
    window: Option<usize>,
    /// the signal run backwards, for unbounded signals (`None` when it could not be built: the
    /// rule is then confirmed over the whole text)
    reverse: Option<Reverse>,
}

/// A signal compiled to run backwards from an end, with a cache per concurrent scan.
struct Reverse {
    dfa: HybridDfa,
    caches: Mutex<Vec<HybridCache>>,
}

impl Reverse {
    fn build(pattern: &str) -> Option<Self> {
        let dfa = HybridDfa::builder()
            .configure(HybridDfa::config().match_kind(MatchKind::All))
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .thompson(thompson::Config::new().reverse(true))
            .build(pattern)
            .ok()?;
        Some(Self {
            dfa,
            caches: Mutex::new(Vec::new()),
        })
    }

    /// The leftmost start of a match of the signal ending exactly at each of `ends` (sorted),
    /// or `None` when one has none (the engines disagree: confirm over the whole text) or
    /// the runs back add up to more than `budget` bytes (keeps the work linear).
    fn starts(&self, data: &[u8], ends: &[usize], budget: usize) -> Option<Vec<usize>> {
        let pooled = self.caches.lock().ok().and_then(|mut pool| pool.pop());
        let mut cache = pooled.unwrap_or_else(|| self.dfa.create_cache());
        let mut starts = Vec::with_capacity(ends.len());
        let mut spent = 0usize;
        for &end in ends {
            let input = Input::new(data).range(..end).anchored(Anchored::Yes);
            match self.dfa.try_search_rev(&mut cache, &input) {
                Ok(Some(found)) => {
                    let start = found.offset();
                    spent += end - start;
                    if spent > budget {
                        starts.clear();
                        break;
                    }
                    starts.push(start);
                }
                _ => {
                    starts.clear();
                    break;
                }
            }
        }
        if let Ok(mut pool) = self.caches.lock() {
            pool.push(cache);
        }
        (starts.len() == ends.len()).then_some(starts)
    }
}

impl Signal {
    fn of(regex: &str) -> Self {
        if let Some(window) = maximum_len(regex) {
            return Self {
                pattern: regex.to_owned(),
                window: Some(window),
                reverse: None,
            };
        }
        let pattern = match bounded_prefix(regex) {
            Some(prefix) if minimum_len(&prefix).is_some_and(|shortest| shortest > 0) => prefix,
            _ => regex.to_owned(),
        };
        if let Some(window) = maximum_len(&pattern) {
            return Self {
                pattern,
                window: Some(window),
                reverse: None,
            };
        }
        let reverse = Reverse::build(&pattern);
        Self {
            pattern,
            window: None,
            reverse,
        }
    }

    /// Every end for windowed signals, the first match only for those confirmed over the
    /// whole text.
    fn flags(&self) -> u32 {
        if self.window.is_some() || self.reverse.is_some() {
            0
        } else {
            hs::FLAG_SINGLEMATCH
        }
    }
}

/// The pattern without its trailing top-level group: `P` of `P(...)` when the regex is a plain
/// concatenation at the top level (no top-level `|`) ending in a group with no quantifier after
/// it. A leading `(?i)` stays on `P`. `None` when the pattern has no such shape.
fn bounded_prefix(regex: &str) -> Option<String> {
    let (flag, body) = match regex.strip_prefix("(?i)") {
        Some(rest) => ("(?i)", rest),
        None => ("", regex),
    };
    let (open, close) = last_top_level_group(body.as_bytes())?;
    // the group must be the last element: its `)` is the pattern's last byte
    if open == 0 || close + 1 != body.len() {
        return None;
    }
    let prefix = format!("{flag}{}", &body[..open]);
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(&prefix)
        .ok()?;
    Some(prefix)
}

/// `(open, close)` of the last group at depth 0 of a pattern, skipping escapes and classes
/// (a `]` right after `[` or `[^` is a literal); `None` when there is none, the parentheses do
/// not balance, or a `|` splits the top level.
fn last_top_level_group(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut in_class = false;
    let mut last = None;
    let mut open = 0;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'\\' {
            index += 2;
            continue;
        }
        if in_class {
            in_class = byte != b']';
        } else {
            match byte {
                b'[' => {
                    in_class = true;
                    if bytes.get(index + 1) == Some(&b'^') {
                        index += 1;
                    }
                    if bytes.get(index + 1) == Some(&b']') {
                        index += 1;
                    }
                }
                b'(' => {
                    if depth == 0 {
                        open = index;
                    }
                    depth += 1;
                }
                b')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        last = Some((open, index));
                    }
                }
                b'|' if depth == 0 => return None,
                _ => {}
            }
        }
        index += 1;
    }
    if depth != 0 || in_class {
        return None;
    }
    last
}

/// What the database pass says about one rule that may match a text.
enum Candidate {
    /// confirm over the whole text
    Full,
    /// the signal's ends (sorted) and, for each, the earliest start of a match of the rule
    /// that reaches it or a later end (suffix minima): confirm only from there
    Ends(Vec<usize>, Vec<usize>),
}

impl Candidate {
    /// Windows for a rule's signal ends (sorted, deduplicated).
    fn windows(signal: &Signal, data: &[u8], ends: Vec<usize>) -> Self {
        let starts = match (signal.window, &signal.reverse) {
            (Some(window), _) => ends.iter().map(|e| e.saturating_sub(window)).collect(),
            (None, Some(reverse)) => match reverse.starts(data, &ends, 2 * data.len() + 4096) {
                Some(starts) => starts,
                None => return Self::Full,
            },
            (None, None) => return Self::Full,
        };
        let mut bounds: Vec<usize> = starts;
        for i in (0..bounds.len().saturating_sub(1)).rev() {
            bounds[i] = bounds[i].min(bounds[i + 1]);
        }
        Self::Ends(ends, bounds)
    }
}

impl Scanner {
    /// Compile a rule set given as JSON (`{"rules": [...], "allowlist": {...}}`).
    pub fn from_json(json: &str) -> Result<Self, Error> {
        Self::from_json_cached(json, None)
    }

    /// Like `from_json`, keeping the compiled database in `cache_dir` (see `dbcache`).
    pub fn from_json_cached(json: &str, cache_dir: Option<&Path>) -> Result<Self, Error> {
        let spec: RuleSetSpec = serde_json::from_str(json)?;
        Self::new_cached(&spec, cache_dir)
    }

    pub fn new(spec: &RuleSetSpec) -> Result<Self, Error> {
        Self::new_cached(spec, None)
    }

    pub fn new_cached(spec: &RuleSetSpec, cache_dir: Option<&Path>) -> Result<Self, Error> {
        let mut rules = Vec::with_capacity(spec.rules.len());
        for rule in &spec.rules {
            let (regex, groups) =
                LazyRegex::new(&rule.regex).map_err(|source| Error::RuleRegex {
                    rule: rule.id.clone(),
                    source,
                })?;
            if rule.secret_group >= groups {
                return Err(Error::SecretGroup {
                    rule: rule.id.clone(),
                    group: rule.secret_group,
                });
            }
            if let Some(k) = rule.keywords.iter().find(|k| !k.is_ascii()) {
                return Err(Error::KeywordNotAscii {
                    rule: rule.id.clone(),
                    keyword: k.clone(),
                });
            }
            rules.push(Rule {
                regex,
                secret_group: rule.secret_group,
                entropy: rule.entropy,
                allow: Allow::compile(&rule.allowlist, &rule.id)?,
                keywords: rule
                    .keywords
                    .iter()
                    .map(|k| k.to_ascii_lowercase().into_bytes())
                    .collect(),
                in_database: false,
                signal: Signal::of(&rule.regex),
            });
        }
        let global = Allow::compile(&spec.allowlist, "global")?;
        let mut scanner = Self {
            rules,
            global,
            database: None,
            signals: Vec::new(),
            outside: Vec::new(),
            scratches: Mutex::new(Vec::new()),
            report: EngineReport::default(),
            scan_failures: AtomicUsize::new(0),
        };
        scanner.build_database(spec, cache_dir);
        Ok(scanner)
    }

    /// One database with every rule pattern (no start-of-match): the same work as a bare
    /// Vectorscan pass. Keywords are checked afterwards, only for rules whose pattern hit.
    /// A rule whose pattern the library rejects is left out (and reported) and confirmed by its
    /// regex alone; the rest are compiled again without it.
    fn build_database(&mut self, spec: &RuleSetSpec, cache_dir: Option<&Path>) {
        let entries: Vec<(usize, Vec<u8>, u32)> = spec
            .rules
            .iter()
            .enumerate()
            .map(|(index, _)| {
                let signal = &self.rules[index].signal;
                let (expression, flags) = database_pattern(&signal.pattern, signal.flags());
                (index, expression, flags)
            })
            .collect();
        let key = dbcache::key(&entries);
        let built = match cache_dir {
            None => None,
            Some(dir) => match dbcache::load(dir, &key, self.rules.len()) {
                Ok(cached) => {
                    self.report.cache = CacheOutcome::Hit;
                    Some(cached)
                }
                Err(why) => {
                    self.report.cache = CacheOutcome::Compiled(why);
                    None
                }
            },
        };
        let built = built.unwrap_or_else(|| {
            let compiled = compile_entries(entries);
            if let (Some(dir), Some(database)) = (cache_dir, &compiled.database) {
                self.report.cache = match dbcache::store(dir, &key, &compiled, database) {
                    Ok(()) => CacheOutcome::Stored,
                    Err(why) => CacheOutcome::NotStored(why),
                };
            }
            compiled
        });
        for &index in &built.signals {
            self.rules[index].in_database = true;
        }
        self.outside = (0..self.rules.len())
            .filter(|&index| !self.rules[index].in_database)
            .collect();
        self.report.rejected = built.rejected;
        self.report.database_error = built.error;
        self.database = built.database;
        self.signals = built.signals;
    }

    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// What the engine left out, and where its database came from.
    pub fn report(&self) -> &EngineReport {
        &self.report
    }

    /// Scans whose database pass failed and were confirmed by the regexes alone.
    pub fn scan_failures(&self) -> usize {
        self.scan_failures.load(Ordering::Relaxed)
    }

    /// The rules to confirm, in rule order, with how: rules outside the database always (over
    /// the whole text), the others only when their pattern hit. Rules that cannot match are
    /// left out, so a text without reports costs nothing more than the database pass. Near
    /// misses (pattern hit, no finding) are common, so the keyword check comes later, only for
    /// rules that produced a finding.
    fn candidates(&self, data: &[u8]) -> Vec<(usize, Candidate)> {
        let everything = || {
            (0..self.rules.len())
                .map(|i| (i, Candidate::Full))
                .collect()
        };
        let Some(database) = &self.database else {
            return everything();
        };
        // Block scans take a u32 length; larger inputs are confirmed over the whole text.
        if u32::try_from(data.len()).is_err() {
            return everything();
        }
        let Some(mut ends) = self.pattern_ends(database, data) else {
            return everything();
        };
        if ends.is_empty() && self.outside.is_empty() {
            return Vec::new();
        }
        ends.sort_unstable();
        ends.dedup();
        let mut out = Vec::new();
        let mut outside = self.outside.iter().copied().peekable();
        let mut cursor = 0;
        while cursor < ends.len() {
            let index = ends[cursor].0;
            let first = cursor;
            while cursor < ends.len() && ends[cursor].0 == index {
                cursor += 1;
            }
            while let Some(before) = outside.next_if(|&o| o < index) {
                out.push((before, Candidate::Full));
            }
            let signal = &self.rules[index].signal;
            let candidate = if signal.flags() & hs::FLAG_SINGLEMATCH != 0 {
                Candidate::Full
            } else {
                let rule_ends = ends[first..cursor].iter().map(|e| e.1).collect();
                Candidate::windows(signal, data, rule_ends)
            };
            out.push((index, candidate));
        }
        out.extend(outside.map(|o| (o, Candidate::Full)));
        out
    }

    /// Findings of every candidate rule whose keyword occurs in the text, as raw byte tuples.
    fn raw_findings(&self, data: &[u8], first_only: bool) -> Vec<[usize; 5]> {
        let candidates = self.candidates(data);
        let mut raw = Vec::new();
        if candidates.is_empty() {
            return raw;
        }
        let mut lowered: Option<Vec<u8>> = None;
        let mut found = Vec::new();
        for &(index, ref candidate) in &candidates {
            let ends = match candidate {
                Candidate::Full => None,
                Candidate::Ends(ends, starts) => Some((ends.as_slice(), starts.as_slice())),
            };
            found.clear();
            self.rule_findings(index, data, first_only, ends, &mut found);
            if found.is_empty() {
                continue;
            }
            let keywords = &self.rules[index].keywords;
            if !keywords.is_empty() {
                let text = lowered.get_or_insert_with(|| data.to_ascii_lowercase());
                if !keywords
                    .iter()
                    .any(|k| memchr::memmem::find(text, k).is_some())
                {
                    continue;
                }
            }
            raw.append(&mut found);
        }
        raw
    }

    /// (rule, match end) for every match the database reports (the first only, for unwindowed
    /// rules).
    fn pattern_ends(&self, database: &Database, data: &[u8]) -> Option<Vec<(usize, usize)>> {
        let mut ends = Vec::new();
        let signals = &self.signals;
        // A scratch per concurrent scan, taken from the pool and put back: no contention
        // beyond one short lock per text.
        let pooled = self.scratches.lock().ok().and_then(|mut pool| pool.pop());
        let mut scratch = match pooled {
            Some(scratch) => scratch,
            None => match database.scratch() {
                Ok(scratch) => scratch,
                Err(_) => {
                    self.scan_failures.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            },
        };
        let outcome = database.scan(data, &mut scratch, |id, to| {
            if let Some(&rule) = signals.get(id as usize) {
                ends.push((rule, usize::try_from(to).unwrap_or(usize::MAX)));
            }
        });
        if let Ok(mut pool) = self.scratches.lock() {
            pool.push(scratch);
        }
        if outcome.is_err() {
            self.scan_failures.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(ends)
    }

    fn keep(&self, rule: &Rule, secret: &[u8], whole: &[u8]) -> bool {
        if let Some(floor) = rule.entropy {
            if shannon_entropy(secret) < floor {
                return false;
            }
        }
        !(self.global.allows(secret, whole) || rule.allow.allows(secret, whole))
    }

    /// Byte-offset findings of one rule, in match order; `first_only` stops at the first.
    ///
    /// With `ends` (every signal end from the database, sorted, and for each the earliest start
    /// of a match reaching it or a later end; see `Signal`) the regex only searches from that
    /// start for the next end past the current position: a match starting at or after the
    /// position has its signal end past it, so it cannot start earlier. The matches found are
    /// exactly the leftmost-first, non-overlapping ones of a full scan.
    fn rule_findings(
        &self,
        index: usize,
        data: &[u8],
        first_only: bool,
        ends: Option<(&[usize], &[usize])>,
        out: &mut Vec<[usize; 5]>,
    ) {
        let rule = &self.rules[index];
        let regex = rule.regex.get();
        // one set of capture slots for every match of this rule in this text
        let mut slots = regex.capture_locations();
        let mut position = 0;
        let mut next = 0;
        loop {
            let start = match ends {
                None => position,
                Some((ends, starts)) => {
                    while next < ends.len() && ends[next] <= position {
                        next += 1;
                    }
                    let Some(&earliest) = starts.get(next) else {
                        return;
                    };
                    position.max(earliest)
                }
            };
            if start > data.len() {
                return;
            }
            let Some(whole) = regex.captures_read_at(&mut slots, data, start) else {
                return;
            };
            position = if whole.end() > whole.start() {
                whole.end()
            } else {
                whole.end() + 1
            };
            if self.record(index, data, &slots, out) && first_only {
                return;
            }
        }
    }

    /// Push the finding of one match if it survives the filters; true when pushed.
    fn record(
        &self,
        index: usize,
        data: &[u8],
        slots: &CaptureLocations,
        out: &mut Vec<[usize; 5]>,
    ) -> bool {
        let rule = &self.rules[index];
        let (Some((start, end)), Some((secret_start, secret_end))) =
            (slots.get(0), slots.get(rule.secret_group))
        else {
            return false;
        };
        if !self.keep(rule, &data[secret_start..secret_end], &data[start..end]) {
            return false;
        }
        out.push([start, index, end, secret_start, secret_end]);
        true
    }

    /// Every finding, ordered by (start, rule order).
    pub fn find(&self, data: &[u8]) -> Vec<Finding> {
        let mut raw = self.raw_findings(data, false);
        if raw.is_empty() {
            return Vec::new();
        }
        raw.sort_unstable();
        to_char_findings(data, &raw)
    }

    /// Indices of the rules with at least one finding, in rule order.
    pub fn scan(&self, data: &[u8]) -> Vec<usize> {
        // raw tuples are [start, rule, ...]; with first_only each rule appears at most once
        self.raw_findings(data, true).iter().map(|f| f[1]).collect()
    }
}

/// The batch forms: `threads` is None for all cores, else `1..=MAX_THREADS`
/// (`crate::parallel::check_threads`); Err for a count out of range or worker threads that
/// cannot start.
impl Scanner {
    /// `find` over many texts in parallel.
    pub fn find_many(
        &self,
        texts: &[&[u8]],
        threads: Option<usize>,
    ) -> Result<Vec<Vec<Finding>>, Error> {
        crate::parallel::map_items(threads, texts, 8, |t| self.find(t))
    }

    /// `scan` over many texts in parallel.
    pub fn scan_many(
        &self,
        texts: &[&[u8]],
        threads: Option<usize>,
    ) -> Result<Vec<Vec<usize>>, Error> {
        crate::parallel::map_items(threads, texts, 8, |t| self.scan(t))
    }

    /// The database pass alone over many texts (no confirmation): the number of reports per
    /// text. What the linked engine costs by itself, for the benches.
    pub fn database_pass_many(
        &self,
        texts: &[&[u8]],
        threads: Option<usize>,
    ) -> Result<Vec<usize>, Error> {
        crate::parallel::map_items(threads, texts, 8, |t| match &self.database {
            Some(database) => self.pattern_ends(database, t).map_or(0, |ends| ends.len()),
            None => 0,
        })
    }

    /// `find` over files, memory-mapped, in parallel; an unreadable file gives its I/O error.
    pub fn find_files<P: AsRef<Path> + Sync>(
        &self,
        paths: &[P],
        threads: Option<usize>,
    ) -> Result<Vec<std::io::Result<Vec<Finding>>>, Error> {
        crate::parallel::map_items(threads, paths, 1, |path| self.find_file(path.as_ref()))
    }

    fn find_file(&self, path: &Path) -> std::io::Result<Vec<Finding>> {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(Vec::new());
        }
        if len <= READ_LIMIT {
            // Small files: one read into a per-thread buffer beats setting up a mapping.
            return READ_BUFFER.with(|buffer| {
                let mut buffer = buffer.borrow_mut();
                buffer.clear();
                std::io::Read::read_to_end(&mut file, &mut buffer)?;
                Ok(self.find(&buffer))
            });
        }
        // SAFETY: the map is read-only and dropped before returning; a file truncated by
        // another process meanwhile can raise SIGBUS, the documented risk of scanning live
        // files through mmap (the same as ripgrep's).
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        Ok(self.find(&map))
    }
}

/// The outcome of compiling a rule set's patterns: the database, which rules it holds, and
/// which the library rejected.
pub(crate) struct Compiled {
    pub database: Option<Database>,
    /// database pattern id -> rule index
    pub signals: Vec<usize>,
    /// database pattern id -> the flags it was compiled with
    pub flags: Vec<u32>,
    pub rejected: Vec<(usize, String)>,
    pub error: Option<hs::CompileFailure>,
}

/// Compile `(rule, pattern, flags)` entries, leaving out each expression the library rejects
/// (it names one per attempt) until the rest compile.
fn compile_entries(mut entries: Vec<(usize, Vec<u8>, u32)>) -> Compiled {
    let mut rejected = Vec::new();
    loop {
        if entries.is_empty() {
            return Compiled {
                database: None,
                signals: Vec::new(),
                flags: Vec::new(),
                rejected,
                error: None,
            };
        }
        let expressions: Vec<Expression> = entries
            .iter()
            .enumerate()
            .map(|(id, (_, pattern, flags))| Expression {
                pattern: pattern.clone(),
                flags: *flags,
                id: u32::try_from(id).unwrap_or(u32::MAX),
            })
            .collect();
        match Database::compile(&expressions) {
            Ok(database) => {
                return Compiled {
                    database: Some(database),
                    signals: entries.iter().map(|e| e.0).collect(),
                    flags: entries.iter().map(|e| e.2).collect(),
                    rejected,
                    error: None,
                }
            }
            Err(failure) => match failure.expression {
                Some(at) if at < entries.len() => {
                    rejected.push((entries.remove(at).0, failure.message));
                }
                _ => {
                    return Compiled {
                        database: None,
                        signals: Vec::new(),
                        flags: Vec::new(),
                        rejected,
                        error: Some(failure),
                    }
                }
            },
        }
    }
}

/// Files up to this size are read into memory; larger ones are memory-mapped.
const READ_LIMIT: u64 = 8 << 20;

thread_local! {
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Shannon entropy in bits per byte, summed over byte values in ascending order (the Python
/// engine sums in the same order so both give the same float).
pub fn shannon_entropy(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for &byte in data {
        counts[usize::from(byte)] += 1;
    }
    let total = data.len() as f64;
    let mut entropy = 0.0;
    for &count in &counts {
        if count > 0 {
            let p = count as f64 / total;
            entropy -= p * p.log2();
        }
    }
    entropy
}

/// Convert sorted `[start, rule, end, secret_start, secret_end]` byte findings to characters.
fn to_char_findings(data: &[u8], raw: &[[usize; 5]]) -> Vec<Finding> {
    let mut offsets: Vec<usize> = raw.iter().flat_map(|f| [f[0], f[2], f[3], f[4]]).collect();
    offsets.sort_unstable();
    offsets.dedup();
    let mut counter = CharCounter::new(data);
    let mut chars = Vec::with_capacity(offsets.len());
    let mut lines = Vec::with_capacity(offsets.len());
    for &offset in &offsets {
        let (c, l) = counter.advance_to(offset);
        chars.push(c);
        lines.push(l);
    }
    let lookup = |offset: usize| -> (usize, usize) {
        let i = offsets.binary_search(&offset).unwrap_or(0);
        (chars[i], lines[i])
    };
    raw.iter()
        .map(|f| {
            let (secret_start, line) = lookup(f[3]);
            Finding {
                rule: f[1],
                start: lookup(f[0]).0,
                end: lookup(f[2]).0,
                secret_start,
                secret_end: lookup(f[4]).0,
                line: line + 1,
            }
        })
        .collect()
}

/// Counts characters and newlines from the start of the data up to increasing byte offsets.
struct CharCounter<'a> {
    data: &'a [u8],
    byte: usize,
    chars: usize,
    newlines: usize,
}

impl<'a> CharCounter<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            byte: 0,
            chars: 0,
            newlines: 0,
        }
    }

    fn advance_to(&mut self, offset: usize) -> (usize, usize) {
        let segment = &self.data[self.byte..offset];
        self.newlines += memchr::memchr_iter(b'\n', segment).count();
        self.chars += count_chars(segment);
        self.byte = offset;
        (self.chars, self.newlines)
    }
}

/// Characters in a byte range that starts and ends on match boundaries: valid UTF-8 sequences
/// count one each, every byte of an invalid sequence counts one.
pub fn count_chars(bytes: &[u8]) -> usize {
    bytes
        .utf8_chunks()
        .map(|chunk| chunk.valid().chars().count() + chunk.invalid().len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner() -> Scanner {
        Scanner::from_json(
            r#"{
              "rules": [
                {"id": "aws", "regex": "\\b((?:AKIA|ASIA)[A-Z2-7]{16})\\b", "keywords": ["akia", "asia"]},
                {"id": "gh", "regex": "\\b(ghp_[A-Za-z0-9]{36})\\b", "keywords": ["ghp_"], "entropy": 3.0},
                {"id": "pem", "regex": "(-----BEGIN[ A-Z]{0,20}PRIVATE KEY-----[A-Za-z0-9+/=\\s]{8,}?-----END[ A-Z]{0,20}PRIVATE KEY-----)", "keywords": ["-----begin"]},
                {"id": "ctx", "regex": "(?i)token\\s*=\\s*([a-z0-9]{8})", "keywords": ["token"], "allowlist": {"stopwords": ["deadbeef"]}}
              ],
              "allowlist": {"regexes": ["EXAMPLE"]}
            }"#,
        )
        .expect("test rules compile")
    }

    #[test]
    fn finds_each_rule_with_character_offsets() {
        let text = "é key AKIAQWERTYUIOPASDFGH and ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
        let found = scanner().find(text.as_bytes());
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].rule, 0);
        assert_eq!(
            found[0].secret_start, 6,
            "é is one character, not two bytes"
        );
        assert_eq!(found[0].secret_end, 26);
        assert_eq!(found[1].rule, 1);
        assert_eq!(found[0].line, 1);
    }

    #[test]
    fn keyword_absent_means_no_finding() {
        // matches the ctx pattern only case-insensitively; the keyword check is ASCII caseless
        let found = scanner().find(b"TOKEN = abcd1234");
        assert_eq!(found.len(), 1);
        assert!(scanner().find(b"tokxn = abcd1234").is_empty());
    }

    #[test]
    fn allowlists_and_entropy_filter() {
        let s = scanner();
        assert!(
            s.find(b"AKIAEXAMPLEEXAMPLEEX").is_empty(),
            "global allowlist"
        );
        assert!(s.find(b"token = deadbeef").is_empty(), "rule stopword");
        assert!(
            s.find(b"ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
                .is_empty(),
            "entropy floor"
        );
    }

    #[test]
    fn match_allowlists_search_the_whole_match() {
        let s = Scanner::from_json(
            r#"{"rules": [{"id": "t", "regex": "(?i)(?:csrf[_-]?)?token=([a-z0-9]{8})",
                "keywords": ["token"],
                "allowlist": {"match_regexes": ["(?i)\\Acsrf"], "regexes": ["\\A0"]}}]}"#,
        )
        .unwrap();
        assert_eq!(s.find(b"token=a1b2c3d4").len(), 1);
        // the name is in the match, not the secret: only a match allowlist sees it
        assert!(s.find(b"CSRF-token=a1b2c3d4").is_empty());
        // the secret allowlist still applies to the secret alone
        assert!(s.find(b"token=0a1b2c3d").is_empty());
        // a match allowlist anchored at the start does not see what precedes the match
        assert_eq!(s.find(b"csrf token=a1b2c3d4").len(), 1);
    }

    #[test]
    fn private_key_spans_lines_and_reports_its_line() {
        let text = b"notes\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nqwertyuiop==\n-----END RSA PRIVATE KEY-----\n";
        let found = scanner().find(text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, 2);
        assert_eq!(found[0].line, 2);
    }

    #[test]
    fn scan_reports_each_rule_once_in_rule_order() {
        let text = b"token=abcd1234 ASIAQWERTYUIOPASDFGH AKIAQWERTYUIOPASDFGH";
        assert_eq!(scanner().scan(text), vec![0, 3]);
    }

    #[test]
    fn invalid_utf8_bytes_count_one_character_each() {
        let mut text = vec![0xff, 0xfe, b' '];
        text.extend_from_slice(b"AKIAQWERTYUIOPASDFGH");
        let found = scanner().find(&text);
        assert_eq!(found[0].secret_start, 3);
        assert_eq!(count_chars(&[0xe2, 0x82, b'A']), 3);
    }

    #[test]
    fn batch_forms_match_single_calls() {
        let s = scanner();
        let texts: Vec<&[u8]> = vec![b"AKIAQWERTYUIOPASDFGH", b"nothing", b"token=abcd1234"];
        let many = s.find_many(&texts, Some(2)).expect("two threads");
        for (text, found) in texts.iter().zip(&many) {
            assert_eq!(&s.find(text), found);
        }
        assert_eq!(
            s.scan_many(&texts, Some(1)).expect("one thread"),
            vec![vec![0], vec![], vec![3]]
        );
        for bad in [0, crate::parallel::MAX_THREADS + 1] {
            let err = s.find_many(&texts, Some(bad)).expect_err("refused");
            assert_eq!(err.kind(), crate::error::ErrorKind::InvalidInput, "{err}");
        }
    }

    #[test]
    fn trailing_unbounded_groups_give_a_bounded_signal() {
        let tail = r"\b(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]+|\z)";
        assert_eq!(
            bounded_prefix(tail).as_deref(),
            Some(r"\b(AIza[A-Za-z0-9_-]{35})")
        );
        let signal = Signal::of(tail);
        assert_eq!(signal.window, Some(4 + 35));
        let caseless = r"(?i)key\s?=\s?([a-z]{8})(?:[^a-z]+|\z)";
        assert_eq!(
            bounded_prefix(caseless).as_deref(),
            Some(r"(?i)key\s?=\s?([a-z]{8})")
        );
        // classes and escapes holding brackets and bars do not confuse the split
        assert_eq!(
            bounded_prefix(r"x[)|(\]]{3}\((?:y+)").as_deref(),
            Some(r"x[)|(\]]{3}\(")
        );
        // shapes without a plain trailing group, or whose prefix can be empty: the whole
        // pattern, bounded backwards from each end
        for regex in [
            r"a|b(c+)",
            r"(a+)",
            r"ab(c)+",
            r"ab(c+)d",
            r"(x*)(y+)",
            r"a?(?:b+)",
        ] {
            let signal = Signal::of(regex);
            assert_eq!(signal.pattern, regex);
            assert!(
                signal.window.is_none() && signal.reverse.is_some(),
                "{regex}"
            );
            assert_eq!(signal.flags(), 0, "{regex}");
        }
        // an unbounded prefix stays the signal, bounded backwards
        let spaced = r"(?i)key[ \t]*=[ \t]*([a-z]{8})(?:[^a-z]+|\z)";
        let signal = Signal::of(spaced);
        assert_eq!(signal.pattern, r"(?i)key[ \t]*=[ \t]*([a-z]{8})");
        assert!(signal.window.is_none() && signal.reverse.is_some());
    }

    /// Findings of a one-rule scanner equal the regex's own leftmost-first matches.
    fn agrees_with_full_scan(regex: &str, text: &[u8]) -> usize {
        let json = serde_json::json!({"rules": [{"id": "t", "regex": regex}]}).to_string();
        let scanner = Scanner::from_json(&json).expect("compiles");
        let got: Vec<(usize, usize)> = scanner
            .find(text)
            .iter()
            .map(|f| (f.start, f.end))
            .collect();
        let full = build_regex(regex).expect("regex");
        let expected: Vec<(usize, usize)> = full
            .find_iter(text)
            .map(|m| {
                // all-ASCII texts here: byte offsets are character offsets
                (m.start(), m.end())
            })
            .collect();
        assert_eq!(got, expected, "{regex}");
        got.len()
    }

    #[test]
    fn rule_regexes_are_checked_when_built_and_compiled_when_first_needed() {
        let json = serde_json::json!({"rules": [
            {"id": "a", "regex": r"\b(AKIA[A-Z0-9]{16})\b", "keywords": ["akia"]},
            {"id": "b", "regex": r"\b(zz[0-9]{8})\b", "keywords": ["zz"]},
        ]})
        .to_string();
        let scanner = Scanner::from_json(&json).expect("compiles");
        assert!(scanner
            .rules
            .iter()
            .all(|r| r.regex.compiled.get().is_none()));
        let found = scanner.find(b"key AKIAABCDEFGHIJKLMNOP here");
        assert_eq!(found.len(), 1);
        // only the rule whose signal hit was compiled
        assert!(scanner.rules[0].regex.compiled.get().is_some());
        assert!(scanner.rules[1].regex.compiled.get().is_none());
        // syntax and groups are still refused up front
        let unclosed = serde_json::json!({"rules": [{"id": "u", "regex": "(ab"}]}).to_string();
        assert!(matches!(
            Scanner::from_json(&unclosed),
            Err(Error::RuleRegex { rule, .. }) if rule == "u"
        ));
        let group = serde_json::json!({"rules": [{"id": "g", "regex": "(ab)", "secret_group": 2}]})
            .to_string();
        assert!(matches!(
            Scanner::from_json(&group),
            Err(Error::SecretGroup { rule, group: 2 }) if rule == "g"
        ));
        // a pattern over the size limits still compiles (without them): no rule is dropped
        let regex = compile_within(r"\b(tok_[a-z]{32})", 16);
        assert!(regex.is_match(b"tok_abcdefghijklmnopqrstuvwxyzabcdef"));
    }

    #[test]
    fn unbounded_signals_are_confirmed_in_windows_from_their_ends() {
        let spaced = r"(?i)key[ \t]*=[ \t]*([a-z]{8})(?:[^a-z]+|\z)";
        let mut text = b"KEY = abcdefgh; key=abcdefghij key\t\t=\tzzzzzzzz,".to_vec();
        text.extend(std::iter::repeat_n(b' ', 10_000));
        text.extend(b"=qwertyui key");
        text.extend(std::iter::repeat_n(b' ', 10_000));
        text.extend(b"=asdfghjk");
        assert_eq!(agrees_with_full_scan(spaced, &text), 3);
        // a whole-pattern signal with a long run: the bounds exceed the budget, and the rule is
        // confirmed over the whole text instead, with the same findings
        let run = r"\b(tok-[a-z]{4}[a-z]*)";
        let mut long = b"tok-abcd tok-".to_vec();
        long.extend(std::iter::repeat_n(b'q', 50_000));
        long.extend(b" tok-zz tok-wxyz");
        assert_eq!(agrees_with_full_scan(run, &long), 3);
        let pem =
            r"(-----BEGIN KEY-----[A-Za-z0-9+/=\r\n]{16}[A-Za-z0-9+/=\r\n]*-----END KEY-----)";
        let mut body = b"x -----BEGIN KEY-----\n".to_vec();
        body.extend(std::iter::repeat_n(b'A', 5_000));
        body.extend(b"\n-----END KEY----- and -----BEGIN KEY-----short-----END KEY-----");
        assert_eq!(agrees_with_full_scan(pem, &body), 1);
    }

    #[test]
    fn prefix_signals_find_what_a_full_scan_finds() {
        let s = Scanner::from_json(
            r#"{"rules": [{"id": "t", "regex": "\\b(tok_[a-z0-9]{6})(?:[^a-z0-9]+|\\z)", "keywords": ["tok_"]}]}"#,
        )
        .expect("compiles");
        let text = b"tok_abc123!!! tok_abcdefg tok_zz9zz9, tok_zz9zz9";
        let found = s.find(text);
        let full = build_regex(r"\b(tok_[a-z0-9]{6})(?:[^a-z0-9]+|\z)").expect("regex");
        let expected: Vec<(usize, usize)> =
            full.find_iter(text).map(|m| (m.start(), m.end())).collect();
        let got: Vec<(usize, usize)> = found.iter().map(|f| (f.start, f.end)).collect();
        assert_eq!(got, expected);
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn entropy_of_uniform_bytes() {
        assert_eq!(shannon_entropy(b""), 0.0);
        assert_eq!(shannon_entropy(b"aaaa"), 0.0);
        assert!((shannon_entropy(b"abcd") - 2.0).abs() < 1e-12);
    }

    #[test]
    fn bad_rules_are_reported_with_their_id() {
        let err =
            Scanner::from_json(r#"{"rules": [{"id": "broken", "regex": "(", "keywords": []}]}"#)
                .err()
                .expect("must fail");
        assert!(
            matches!(&err, Error::RuleRegex { rule, .. } if rule == "broken"),
            "{err}"
        );
        assert!(err.to_string().starts_with("rule broken: "), "{err}");
        let err =
            Scanner::from_json(r#"{"rules": [{"id": "nogroup", "regex": "abc", "keywords": []}]}"#)
                .err()
                .expect("must fail");
        assert_eq!(
            err.to_string(),
            "rule nogroup: secret group 1 does not exist"
        );
        let err = Scanner::from_json(
            r#"{"rules": [{"id": "k", "regex": "(a)", "keywords": ["é"]}], "allowlist": {}}"#,
        )
        .err()
        .expect("must fail");
        assert_eq!(err.to_string(), r#"rule k: keyword "é" is not ASCII"#);
        let err = Scanner::from_json(r#"{"rules": [], "allowlist": {"regexes": ["("]}}"#)
            .err()
            .expect("must fail");
        assert!(
            err.to_string()
                .starts_with(r#"global: allowlist regex "(": "#),
            "{err}"
        );
        let err = Scanner::from_json("[").err().expect("must fail");
        assert!(matches!(err, Error::RuleSetJson(_)), "{err}");
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidInput);
    }
}
