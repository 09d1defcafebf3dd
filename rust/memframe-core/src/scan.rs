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

use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use vectorscan_rs::{BlockDatabase, BlockScanner, Flag, Pattern, Scan};

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

struct Allow {
    stopwords: Vec<Vec<u8>>,
    regexes: Vec<Regex>,
}

impl Allow {
    fn compile(spec: &AllowSpec, owner: &str) -> Result<Self, String> {
        let regexes = spec
            .regexes
            .iter()
            .map(|p| build_regex(p).map_err(|e| format!("{owner}: allowlist regex {p:?}: {e}")))
            .collect::<Result<_, _>>()?;
        let stopwords = spec
            .stopwords
            .iter()
            .map(|w| w.to_ascii_lowercase().into_bytes())
            .collect();
        Ok(Self { stopwords, regexes })
    }

    fn allows(&self, secret: &[u8]) -> bool {
        if !self.stopwords.is_empty() {
            let lowered = secret.to_ascii_lowercase();
            if self
                .stopwords
                .iter()
                .any(|w| memchr::memmem::find(&lowered, w).is_some())
            {
                return true;
            }
        }
        self.regexes.iter().any(|r| r.is_match(secret))
    }
}

struct Rule {
    regex: Regex,
    secret_group: usize,
    entropy: Option<f64>,
    allow: Allow,
    /// lower-case keywords; empty means the rule is evaluated on every text
    keywords: Vec<Vec<u8>>,
    /// false when Vectorscan could not compile the pattern: confirmed by regex alone
    in_database: bool,
    /// longest possible match in bytes; `None` for unbounded patterns
    max_len: Option<usize>,
}

/// Scratch space for one thread's scans; `'static` because the database is leaked on purpose
/// (one compiled database per rule set per process, never freed).
type Scratch = BlockScanner<'static>;

thread_local! {
    /// (database address, scratch) for every database this thread has scanned with.
    static SCRATCH: std::cell::RefCell<Vec<(usize, Scratch)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A compiled rule set, safe to share between threads.
pub struct Scanner {
    rules: Vec<Rule>,
    global: Allow,
    database: Option<&'static BlockDatabase>,
    /// database pattern id -> rule index
    signals: Vec<usize>,
}

fn build_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(64 << 20)
        .dfa_size_limit(64 << 20)
        .build()
}

/// A regex pattern (our subset) as Vectorscan wants it: a leading `(?i)` becomes a flag.
/// `every_end`: report every match end (bounded rules, whose ends locate the confirmation
/// windows) instead of the first one only.
fn database_pattern(regex: &str, every_end: bool) -> (Vec<u8>, Flag) {
    let single = if every_end { Flag::empty() } else { Flag::SINGLEMATCH };
    match regex.strip_prefix("(?i)") {
        Some(rest) => (rest.as_bytes().to_vec(), Flag::CASELESS | single),
        None => (regex.as_bytes().to_vec(), single),
    }
}

/// The longest match a pattern can produce, in bytes (`None` when unbounded).
fn maximum_len(pattern: &str) -> Option<usize> {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?
        .properties()
        .maximum_len()
}

/// What the Vectorscan pass says about one rule for one text.
enum Candidate {
    /// the pattern cannot match: nothing to confirm
    Skip,
    /// confirm over the whole text
    Full,
    /// the pattern's match ends (sorted): confirm only in the windows before them
    Ends(Vec<usize>),
}

impl Scanner {
    /// Compile a rule set given as JSON (`{"rules": [...], "allowlist": {...}}`).
    pub fn from_json(json: &str) -> Result<Self, String> {
        let spec: RuleSetSpec =
            serde_json::from_str(json).map_err(|e| format!("invalid rule set JSON: {e}"))?;
        Self::new(&spec)
    }

    pub fn new(spec: &RuleSetSpec) -> Result<Self, String> {
        let mut rules = Vec::with_capacity(spec.rules.len());
        for rule in &spec.rules {
            let regex = build_regex(&rule.regex).map_err(|e| format!("rule {}: {e}", rule.id))?;
            if rule.secret_group >= regex.captures_len() {
                return Err(format!(
                    "rule {}: secret group {} does not exist",
                    rule.id, rule.secret_group
                ));
            }
            if let Some(k) = rule.keywords.iter().find(|k| !k.is_ascii()) {
                return Err(format!("rule {}: keyword {k:?} is not ASCII", rule.id));
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
                max_len: maximum_len(&rule.regex),
            });
        }
        let global = Allow::compile(&spec.allowlist, "global")?;
        let mut scanner = Self {
            rules,
            global,
            database: None,
            signals: Vec::new(),
        };
        scanner.build_database(spec);
        Ok(scanner)
    }

    /// One database with every rule pattern (single-match, no start-of-match): the same work as
    /// a bare Vectorscan pass. Keywords are checked afterwards, only for rules whose pattern hit.
    /// A rule whose pattern Vectorscan rejects is left out and confirmed by the regex alone.
    fn build_database(&mut self, spec: &RuleSetSpec) {
        let mut patterns = Vec::new();
        let mut signals = Vec::new();
        for (index, rule) in spec.rules.iter().enumerate() {
            let every_end = self.rules[index].max_len.is_some();
            let (expression, flags) = database_pattern(&rule.regex, every_end);
            if BlockDatabase::new(vec![Pattern::new(expression.clone(), flags, Some(0))]).is_err() {
                continue;
            }
            let id = u32::try_from(signals.len()).unwrap_or(u32::MAX);
            patterns.push(Pattern::new(expression, flags, Some(id)));
            signals.push(index);
            self.rules[index].in_database = true;
        }
        if patterns.is_empty() {
            return;
        }
        match BlockDatabase::new(patterns) {
            Ok(database) => {
                self.database = Some(Box::leak(Box::new(database)));
                self.signals = signals;
            }
            Err(_) => {
                for rule in &mut self.rules {
                    rule.in_database = false;
                }
            }
        }
    }

    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// What to confirm per rule. Near misses (pattern hit, no finding) are common, so the
    /// keyword check comes later, only for rules that produced a finding.
    fn candidates(&self, data: &[u8]) -> Vec<Candidate> {
        if let Some(database) = self.database {
            // Block scans take a u32 length; larger inputs are confirmed over the whole text.
            if u32::try_from(data.len()).is_ok() {
                if let Some(mut ends) = self.pattern_ends(database, data) {
                    ends.sort_unstable();
                    ends.dedup();
                    let mut cursor = 0;
                    return (0..self.rules.len())
                        .map(|index| {
                            let first = cursor;
                            while cursor < ends.len() && ends[cursor].0 == index {
                                cursor += 1;
                            }
                            let rule = &self.rules[index];
                            if !rule.in_database {
                                Candidate::Full
                            } else if first == cursor {
                                Candidate::Skip
                            } else if rule.max_len.is_some() {
                                Candidate::Ends(ends[first..cursor].iter().map(|e| e.1).collect())
                            } else {
                                Candidate::Full
                            }
                        })
                        .collect();
                }
            }
        }
        (0..self.rules.len()).map(|_| Candidate::Full).collect()
    }

    /// Findings of every candidate rule whose keyword occurs in the text, as raw byte tuples.
    fn raw_findings(&self, data: &[u8], first_only: bool) -> Vec<[usize; 5]> {
        let candidates = self.candidates(data);
        let mut raw = Vec::new();
        let mut lowered: Option<Vec<u8>> = None;
        let mut found = Vec::new();
        for (index, candidate) in candidates.iter().enumerate() {
            let ends = match candidate {
                Candidate::Skip => continue,
                Candidate::Full => None,
                Candidate::Ends(ends) => Some(ends.as_slice()),
            };
            found.clear();
            self.rule_findings(index, data, first_only, ends, &mut found);
            if found.is_empty() {
                continue;
            }
            let keywords = &self.rules[index].keywords;
            if !keywords.is_empty() {
                let text = lowered.get_or_insert_with(|| data.to_ascii_lowercase());
                if !keywords.iter().any(|k| memchr::memmem::find(text, k).is_some()) {
                    continue;
                }
            }
            raw.append(&mut found);
        }
        raw
    }

    /// (rule, match end) for every match Vectorscan reports (the first only, for unbounded rules).
    fn pattern_ends(
        &self,
        database: &'static BlockDatabase,
        data: &[u8],
    ) -> Option<Vec<(usize, usize)>> {
        let mut ends = Vec::new();
        let signals = &self.signals;
        // Scratch space lives per thread and per database, so parallel scans never contend.
        let key = std::ptr::from_ref(database) as usize;
        SCRATCH.with(|cell| {
            let mut scratches = cell.borrow_mut();
            let position = match scratches.iter().position(|(k, _)| *k == key) {
                Some(position) => position,
                None => {
                    scratches.push((key, database.create_scanner().ok()?));
                    scratches.len() - 1
                }
            };
            let scanner = &mut scratches[position].1;
            scanner
                .scan(data, |id, _from, to, _flags| {
                    if let Some(&rule) = signals.get(id as usize) {
                        ends.push((rule, usize::try_from(to).unwrap_or(usize::MAX)));
                    }
                    Scan::Continue
                })
                .ok()
        })?;
        Some(ends)
    }

    fn keep(&self, rule: &Rule, secret: &[u8]) -> bool {
        if let Some(floor) = rule.entropy {
            if shannon_entropy(secret) < floor {
                return false;
            }
        }
        !(self.global.allows(secret) || rule.allow.allows(secret))
    }

    /// Byte-offset findings of one rule, in match order; `first_only` stops at the first.
    ///
    /// With `ends` (every end of a match, from Vectorscan) the regex only searches from just
    /// before the next end: a match ending at `e` starts at or after `e - max_len`, and no match
    /// starts between the current position and there (it would end before the next end). The
    /// matches found are exactly the leftmost-first, non-overlapping ones of a full scan.
    fn rule_findings(
        &self,
        index: usize,
        data: &[u8],
        first_only: bool,
        ends: Option<&[usize]>,
        out: &mut Vec<[usize; 5]>,
    ) {
        let rule = &self.rules[index];
        let (Some(ends), Some(max_len)) = (ends, rule.max_len) else {
            for caps in rule.regex.captures_iter(data) {
                if self.record(index, &caps, out) && first_only {
                    return;
                }
            }
            return;
        };
        let mut position = 0;
        let mut next = 0;
        loop {
            while next < ends.len() && ends[next] <= position {
                next += 1;
            }
            let Some(&end) = ends.get(next) else { return };
            let start = position.max(end.saturating_sub(max_len));
            let Some(caps) = rule.regex.captures_at(data, start) else {
                return;
            };
            let Some(whole) = caps.get(0) else { return };
            position = if whole.end() > whole.start() { whole.end() } else { whole.end() + 1 };
            if self.record(index, &caps, out) && first_only {
                return;
            }
        }
    }

    /// Push the finding of one match if it survives the filters; true when pushed.
    fn record(&self, index: usize, caps: &regex::bytes::Captures<'_>, out: &mut Vec<[usize; 5]>) -> bool {
        let rule = &self.rules[index];
        let (Some(whole), Some(secret)) = (caps.get(0), caps.get(rule.secret_group)) else {
            return false;
        };
        if !self.keep(rule, secret.as_bytes()) {
            return false;
        }
        out.push([whole.start(), index, whole.end(), secret.start(), secret.end()]);
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

impl Scanner {
    /// `find` over many texts in parallel (`threads`: None = all cores).
    pub fn find_many(&self, texts: &[&[u8]], threads: Option<usize>) -> Vec<Vec<Finding>> {
        crate::parallel::map_items(threads, texts, 8, |t| self.find(t))
    }

    /// `scan` over many texts in parallel.
    pub fn scan_many(&self, texts: &[&[u8]], threads: Option<usize>) -> Vec<Vec<usize>> {
        crate::parallel::map_items(threads, texts, 8, |t| self.scan(t))
    }

    /// `find` over files, memory-mapped, in parallel; an unreadable file gives its error text.
    pub fn find_files<P: AsRef<Path> + Sync>(
        &self,
        paths: &[P],
        threads: Option<usize>,
    ) -> Vec<Result<Vec<Finding>, String>> {
        crate::parallel::map_items(threads, paths, 1, |path| self.find_file(path.as_ref()))
    }

    fn find_file(&self, path: &Path) -> Result<Vec<Finding>, String> {
        let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        if len == 0 {
            return Ok(Vec::new());
        }
        if len <= READ_LIMIT {
            // Small files: one read into a per-thread buffer beats setting up a mapping.
            return READ_BUFFER.with(|buffer| {
                let mut buffer = buffer.borrow_mut();
                buffer.clear();
                std::io::Read::read_to_end(&mut file, &mut buffer).map_err(|e| e.to_string())?;
                Ok(self.find(&buffer))
            });
        }
        // SAFETY: the map is read-only and dropped before returning; a file truncated by
        // another process meanwhile can raise SIGBUS, the documented risk of scanning live
        // files through mmap (the same as ripgrep's).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        Ok(self.find(&map))
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
    let mut offsets: Vec<usize> = raw
        .iter()
        .flat_map(|f| [f[0], f[2], f[3], f[4]])
        .collect();
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
        assert_eq!(found[0].secret_start, 6, "é is one character, not two bytes");
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
        assert!(s.find(b"AKIAEXAMPLEEXAMPLEEX").is_empty(), "global allowlist");
        assert!(s.find(b"token = deadbeef").is_empty(), "rule stopword");
        assert!(
            s.find(b"ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").is_empty(),
            "entropy floor"
        );
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
        let many = s.find_many(&texts, Some(2));
        for (text, found) in texts.iter().zip(&many) {
            assert_eq!(&s.find(text), found);
        }
        assert_eq!(s.scan_many(&texts, Some(1)), vec![vec![0], vec![], vec![3]]);
    }

    #[test]
    fn entropy_of_uniform_bytes() {
        assert_eq!(shannon_entropy(b""), 0.0);
        assert_eq!(shannon_entropy(b"aaaa"), 0.0);
        assert!((shannon_entropy(b"abcd") - 2.0).abs() < 1e-12);
    }

    #[test]
    fn bad_rules_are_reported_with_their_id() {
        let err = Scanner::from_json(r#"{"rules": [{"id": "broken", "regex": "(", "keywords": []}]}"#)
            .err()
            .expect("must fail");
        assert!(err.contains("broken"), "{err}");
        let err = Scanner::from_json(r#"{"rules": [{"id": "nogroup", "regex": "abc", "keywords": []}]}"#)
            .err()
            .expect("must fail");
        assert!(err.contains("secret group"), "{err}");
    }
}
