//! Token estimation: a linear model over byte-class and byte-class-pair counts with fixed-point
//! integer weights, identical to `memframe/_fallback/tokens.py` (see `docs/tokens.md`).
//!
//! Every byte of the UTF-8 text falls in one of 14 classes; every feature counts the positions
//! whose (previous class, class) pair lies in a set, `START` being the "previous class" of the
//! first byte. The model is therefore one table `PAIR_WEIGHTS[prev * 16 + cur]`:
//!
//! ```text
//! raw    = sum over bytes i of PAIR_WEIGHTS[class(i - 1) * 16 + class(i)]
//! tokens = max(1, (raw + HALF) >> SHIFT)      (0 for the empty text)
//! ```
//!
//! The scalar path walks that table (texts under 64 bytes, the tail, non-x86 targets). On
//! x86-64 the bulk is counted feature by feature, 64 bytes at a time: SIMD compares turn each
//! class into a 64-bit mask, the previous byte's class is the mask shifted by one, a feature is
//! an AND of masks and its count a `popcnt`; the counts are dotted with the same integer
//! weights, so the result is the same integer. The kernel is picked at run time: AVX2 +
//! POPCNT, else SSE2 + POPCNT, else plain SSE2 (the x86-64 baseline). The weights are printed
//! by `scripts/fit_tokens.py`.

/// Fixed-point scale of the weights: one token is `1 << SHIFT` units.
pub const SHIFT: u32 = 9;
const HALF: i64 = 1 << (SHIFT - 1);

/// Number of features (the length of [`WEIGHTS`]).
pub const FEATURES: usize = 21;

/// Fixed-point weights, in the order of the feature list in [`member`]; printed by
/// `scripts/fit_tokens.py` (the same numbers as `WEIGHTS` in the Python twin).
const WEIGHTS: [i64; FEATURES] = [
    191, 29, 182, 67, 61, 57, 883, 269, 132, 220, 690, 833, 182, -202, 61, 148, -57, 276, 119,
    1056, 669,
];

// Byte classes (class 0 is never a byte's class: it is the previous class of the first byte).
const START: u8 = 0;
const LOWER: u8 = 1; // a-z
const UPPER: u8 = 2; // A-Z
const DIGIT: u8 = 3; // 0-9
const SPACE: u8 = 4; // space, tab
const NEWLINE: u8 = 5; // \n \v \f \r
const PUNCT: u8 = 6; // every other ASCII byte: punctuation, symbols, control characters
const BACKSLASH: u8 = 7; // \
const CONT: u8 = 8; // UTF-8 continuation byte 80-BF
const LEAD2: u8 = 9; // lead of a 2-byte character C0-DF
const LEAD3: u8 = 10; // lead E0, E1, EE, EF
const LEAD_E2: u8 = 11; // lead E2: U+2000-2FFF (punctuation, arrows, box drawing)
const LEAD_CJK: u8 = 12; // lead E3-E9: U+3000-9FFF (CJK punctuation, kana, ideographs)
const LEAD_HANGUL: u8 = 13; // lead EA-ED: U+A000-DFFF (Hangul syllables)
const LEAD4: u8 = 14; // lead F0-FF: 4-byte characters (emoji, ...)

const fn byte_class(b: u8) -> u8 {
    match b {
        b'a'..=b'z' => LOWER,
        b'A'..=b'Z' => UPPER,
        b'0'..=b'9' => DIGIT,
        b' ' | b'\t' => SPACE,
        0x0A..=0x0D => NEWLINE,
        b'\\' => BACKSLASH,
        0x00..=0x7F => PUNCT,
        0x80..=0xBF => CONT,
        0xC0..=0xDF => LEAD2,
        0xE2 => LEAD_E2,
        0xE3..=0xE9 => LEAD_CJK,
        0xEA..=0xED => LEAD_HANGUL,
        0xE0..=0xEF => LEAD3,
        0xF0..=0xFF => LEAD4,
    }
}

const fn is_letter(c: u8) -> bool {
    c == LOWER || c == UPPER
}

const fn is_symbol(c: u8) -> bool {
    c == PUNCT || c == BACKSLASH
}

const fn is_non_ascii(c: u8) -> bool {
    c >= CONT
}

/// Whether the pair (`prev`, `cur`) counts for `feature` — the feature list, in weight order.
const fn member(feature: usize, prev: u8, cur: u8) -> bool {
    match feature {
        0 => prev == START,                             // text: 1 for any non-empty text
        1 => true,                                      // bytes
        2 => is_letter(cur) && !is_letter(prev),        // words: runs of ASCII letters
        3 => prev == LOWER && cur == UPPER,             // camel: camelCase humps
        4 => cur == UPPER,                              // upper
        5 => cur == DIGIT,                              // digits
        6 => cur == DIGIT && prev != DIGIT,             // numbers: runs of digits
        7 => prev == SPACE && cur == DIGIT,             // space_digit: " 42" is 2 tokens
        8 => is_symbol(cur),                            // symbols
        9 => is_symbol(prev) && is_letter(cur),         // symbol_word: ".foo", "(bar"
        10 => prev == BACKSLASH && is_letter(cur),      // escape_word: "\n" in JSON
        11 => cur == NEWLINE && prev != NEWLINE,        // lines: runs of line breaks
        12 => cur == SPACE,                             // spaces
        13 => prev == SPACE && cur == SPACE,            // space_run
        14 => cur == LEAD2,                             // lead2
        15 => cur == LEAD3,                             // lead3
        16 => cur == LEAD_E2,                           // lead_e2
        17 => cur == LEAD_CJK,                          // lead_cjk
        18 => cur == LEAD_HANGUL,                       // lead_hangul
        19 => cur == LEAD4,                             // lead4
        20 => is_non_ascii(cur) && !is_non_ascii(prev), // non_ascii_runs
        _ => false,
    }
}

const BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = byte_class(b as u8);
        b += 1;
    }
    table
};

/// `PAIR_WEIGHTS[prev * 16 + cur]`: the summed weight of every feature the pair belongs to.
const PAIR_WEIGHTS: [i64; 256] = {
    let mut table = [0i64; 256];
    let mut prev = 0;
    while prev < 16 {
        let mut cur = 1;
        while cur < 15 {
            let mut feature = 0;
            while feature < FEATURES {
                if member(feature, prev as u8, cur as u8) {
                    table[prev * 16 + cur] += WEIGHTS[feature];
                }
                feature += 1;
            }
            cur += 1;
        }
        prev += 1;
    }
    table
};

/// Estimated number of model tokens in UTF-8 `text`: 0 for `""`, at least 1 otherwise.
pub fn count_tokens(text: &str) -> u64 {
    count_tokens_bytes(text.as_bytes())
}

/// [`count_tokens`] over raw bytes (e.g. a Python str with lone surrogates encoded with
/// `surrogatepass`, which is not valid UTF-8).
pub fn count_tokens_bytes(bytes: &[u8]) -> u64 {
    if bytes.is_empty() {
        return 0;
    }
    let tokens = (raw_score(bytes) + HALF) >> SHIFT;
    tokens.max(1) as u64
}

/// [`count_tokens`] of every text, in order.
pub fn count_tokens_many(texts: &[&str]) -> Vec<u64> {
    texts.iter().map(|text| count_tokens(text)).collect()
}

/// The fixed-point model sum over `bytes` (before rounding); any bytes, not only UTF-8.
pub fn raw_score(bytes: &[u8]) -> i64 {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= simd::BLOCK {
        let (raw, end) = simd::raw_score(bytes);
        return raw + scalar(&bytes[end..], BYTE_CLASS[usize::from(bytes[end - 1])]);
    }
    scalar(bytes, START)
}

fn pair_weight(prev: u8, cur: u8) -> i64 {
    PAIR_WEIGHTS[usize::from(prev) << 4 | usize::from(cur)]
}

/// The table walk over `bytes`, the byte before them being of class `prev`.
fn scalar(bytes: &[u8], mut prev: u8) -> i64 {
    let mut raw = 0;
    for &b in bytes {
        let cur = BYTE_CLASS[usize::from(b)];
        raw += pair_weight(prev, cur);
        prev = cur;
    }
    raw
}

#[cfg(target_arch = "x86_64")]
mod simd {
    //! The features counted 64 bytes at a time. Vector compares give, per class, one bit per
    //! byte (`movemask`), assembled into a `u64` per 64-byte block; the previous byte's bit is
    //! the mask shifted by one, carrying the last bit of the block before (the first block
    //! carries nothing: `START` is in no class). A feature is an AND of such masks and its
    //! count a `popcnt`. AVX2 (two vectors per block) or SSE2 (four), chosen at run time;
    //! SSE2 is part of the x86-64 baseline, `popcnt` is used when the CPU has it.

    use super::{FEATURES, WEIGHTS};
    use std::arch::x86_64::*;

    /// Bytes per block; shorter texts take the table walk.
    pub(super) const BLOCK: usize = 64;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) enum Kernel {
        Avx2,
        Sse2Popcnt,
        Sse2,
    }

    impl Kernel {
        /// Whether this CPU has every feature the kernel is compiled for.
        pub(super) fn is_supported(self) -> bool {
            match self {
                Self::Avx2 => {
                    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt")
                }
                Self::Sse2Popcnt => std::is_x86_feature_detected!("popcnt"),
                // SSE2 is part of the x86-64 baseline
                Self::Sse2 => true,
            }
        }
    }

    /// The fastest kernel this CPU supports (the features are detected once, then cached by
    /// `std`).
    pub(super) fn best_kernel() -> Kernel {
        [Kernel::Avx2, Kernel::Sse2Popcnt]
            .into_iter()
            .find(|kernel| kernel.is_supported())
            .unwrap_or(Kernel::Sse2)
    }

    /// `(raw score of bytes[..end], end)` with `end` a multiple of [`BLOCK`], START pair
    /// included; the caller walks the tail.
    pub(super) fn raw_score(bytes: &[u8]) -> (i64, usize) {
        // SAFETY: `best_kernel` returns a kernel the CPU supports.
        unsafe { raw_score_with(bytes, best_kernel()) }
    }

    /// [`raw_score`] with a given kernel.
    ///
    /// # Safety
    ///
    /// The CPU must support `kernel`'s features ([`Kernel::is_supported`]): its code uses
    /// instructions other CPUs do not have.
    pub(super) unsafe fn raw_score_with(bytes: &[u8], kernel: Kernel) -> (i64, usize) {
        debug_assert!(
            kernel.is_supported(),
            "{kernel:?} on a CPU without its features"
        );
        let end = bytes.len() / BLOCK * BLOCK;
        let blocks = &bytes[..end];
        // SAFETY: the caller guarantees the CPU has the kernel's features (see above).
        let counts = unsafe {
            match kernel {
                Kernel::Avx2 => count_avx2(blocks),
                Kernel::Sse2Popcnt => count_sse2_popcnt(blocks),
                Kernel::Sse2 => count_sse2(blocks),
            }
        };
        let mut raw = 0;
        for (&n, w) in counts.iter().zip(WEIGHTS) {
            raw += n as i64 * w;
        }
        (raw, end)
    }

    /// The `popcnt` instruction, as inline assembly: LLVM would otherwise turn a row of
    /// `count_ones` into vector shuffles, which are slower here.
    ///
    /// # Safety
    ///
    /// The CPU must have POPCNT (`is_x86_feature_detected!("popcnt")`); only the kernels
    /// compiled for it call this.
    #[inline(always)]
    unsafe fn popcnt(x: u64) -> u64 {
        let n: u64;
        // SAFETY: the caller guarantees POPCNT (see above); the instruction touches no memory.
        unsafe {
            std::arch::asm!("popcnt {n}, {x}", x = in(reg) x, n = lateout(reg) n,
                            options(pure, nomem, nostack));
        }
        n
    }

    /// Bit count without the `popcnt` instruction (baseline x86-64).
    #[inline(always)]
    fn swar_popcount(x: u64) -> u64 {
        u64::from(x.count_ones())
    }

    /// Defines `$name(blocks) -> counts`: the feature counts over `blocks` (a multiple of 64
    /// bytes), reading `$width`-byte vectors.
    macro_rules! kernel {
        ($name:ident, $features:literal, $pop:ident, $vector:ty, $width:literal, $loadu:ident,
         $set1:ident, $add8:ident, $gt8:ident, $eq8:ident, $or:ident, $movemask:ident) => {
            #[doc = concat!("The feature counts over `blocks`, compiled for `", $features, "`.")]
            ///
            /// # Safety
            ///
            /// The CPU must have every feature the kernel is compiled for (checked with
            /// `is_x86_feature_detected!`, see [`Kernel::is_supported`]).
            #[target_feature(enable = $features)]
            unsafe fn $name(blocks: &[u8]) -> [u64; FEATURES] {
                debug_assert!(blocks.len() % BLOCK == 0);
                // 0xFF in every lane where lo <= byte < lo + width (unsigned).
                macro_rules! within {
                    ($v:expr, $lo:expr, $w:expr) => {
                        $gt8(
                            $set1((0x80u8.wrapping_add($w)) as i8),
                            $add8($v, $set1((0x80u8.wrapping_sub($lo)) as i8)),
                        )
                    };
                }
                macro_rules! is {
                    ($v:expr, $b:expr) => {
                        $eq8($v, $set1(($b as u8) as i8))
                    };
                }
                // One bit per byte of the block: bits `at .. at + $width` from this vector.
                macro_rules! bits {
                    ($mask:expr, $at:expr) => {
                        u64::from($movemask($mask) as u32) << $at
                    };
                }
                let mut counts = [0u64; FEATURES];
                counts[0] = u64::from(!blocks.is_empty()); // text
                counts[1] = blocks.len() as u64; // bytes
                                                 // The previous block's masks (bit 63 is the byte before this block).
                let (mut l0, mut lower0, mut d0, mut s0) = (0u64, 0u64, 0u64, 0u64);
                let (mut n0, mut b0, mut sym0, mut high0) = (0u64, 0u64, 0u64, 0u64);
                for block in blocks.chunks_exact(BLOCK) {
                    let at = block.as_ptr();
                    let (mut letter, mut upper, mut digit, mut space) = (0u64, 0u64, 0u64, 0u64);
                    let (mut newline, mut backslash, mut high) = (0u64, 0u64, 0u64);
                    let mut part = 0;
                    while part < BLOCK {
                        let v = $loadu(at.add(part) as *const $vector);
                        letter |= bits!(within!($or(v, $set1(0x20)), b'a', 26), part);
                        upper |= bits!(within!(v, b'A', 26), part);
                        digit |= bits!(within!(v, b'0', 10), part);
                        space |= bits!($or(is!(v, b' '), is!(v, b'\t')), part);
                        newline |= bits!(within!(v, 0x0A, 4), part);
                        backslash |= bits!(is!(v, b'\\'), part);
                        high |= bits!(v, part);
                        part += $width;
                    }
                    let lower = letter & !upper;
                    let symbol = !(letter | digit | space | newline | high);
                    // previous byte's class bits
                    let p_letter = letter << 1 | l0 >> 63;
                    let p_lower = lower << 1 | lower0 >> 63;
                    let p_digit = digit << 1 | d0 >> 63;
                    let p_space = space << 1 | s0 >> 63;
                    let p_newline = newline << 1 | n0 >> 63;
                    let p_backslash = backslash << 1 | b0 >> 63;
                    let p_symbol = symbol << 1 | sym0 >> 63;
                    let p_high = high << 1 | high0 >> 63;
                    (l0, lower0, d0, s0) = (letter, lower, digit, space);
                    (n0, b0, sym0, high0) = (newline, backslash, symbol, high);
                    // Scalar popcounts; kept out of LLVM's reach so it does not vectorise
                    // them (its shuffle-based popcount is slower than `popcnt` here).
                    counts[2] += $pop(letter & !p_letter);
                    counts[3] += $pop(p_lower & upper);
                    counts[4] += $pop(upper);
                    counts[5] += $pop(digit);
                    counts[6] += $pop(digit & !p_digit);
                    counts[7] += $pop(p_space & digit);
                    counts[8] += $pop(symbol);
                    counts[9] += $pop(p_symbol & letter);
                    counts[10] += $pop(p_backslash & letter);
                    counts[11] += $pop(newline & !p_newline);
                    counts[12] += $pop(space);
                    counts[13] += $pop(p_space & space);
                    if high != 0 {
                        // the non-ASCII features
                        let (mut lead2, mut e0_ef, mut e2) = (0u64, 0u64, 0u64);
                        let (mut cjk, mut hangul, mut lead4) = (0u64, 0u64, 0u64);
                        let mut part = 0;
                        while part < BLOCK {
                            let v = $loadu(at.add(part) as *const $vector);
                            lead2 |= bits!(within!(v, 0xC0, 32), part);
                            e0_ef |= bits!(within!(v, 0xE0, 16), part);
                            e2 |= bits!(is!(v, 0xE2), part);
                            cjk |= bits!(within!(v, 0xE3, 7), part);
                            hangul |= bits!(within!(v, 0xEA, 4), part);
                            lead4 |= bits!(within!(v, 0xF0, 16), part);
                            part += $width;
                        }
                        counts[14] += $pop(lead2);
                        counts[15] += $pop(e0_ef & !(e2 | cjk | hangul));
                        counts[16] += $pop(e2);
                        counts[17] += $pop(cjk);
                        counts[18] += $pop(hangul);
                        counts[19] += $pop(lead4);
                        counts[20] += $pop(high & !p_high);
                    }
                }
                counts
            }
        };
    }

    kernel!(
        count_avx2,
        "avx2,popcnt",
        popcnt,
        __m256i,
        32,
        _mm256_loadu_si256,
        _mm256_set1_epi8,
        _mm256_add_epi8,
        _mm256_cmpgt_epi8,
        _mm256_cmpeq_epi8,
        _mm256_or_si256,
        _mm256_movemask_epi8
    );
    kernel!(
        count_sse2_popcnt,
        "sse2,popcnt",
        popcnt,
        __m128i,
        16,
        _mm_loadu_si128,
        _mm_set1_epi8,
        _mm_add_epi8,
        _mm_cmpgt_epi8,
        _mm_cmpeq_epi8,
        _mm_or_si128,
        _mm_movemask_epi8
    );
    kernel!(
        count_sse2,
        "sse2",
        swar_popcount,
        __m128i,
        16,
        _mm_loadu_si128,
        _mm_set1_epi8,
        _mm_add_epi8,
        _mm_cmpgt_epi8,
        _mm_cmpeq_epi8,
        _mm_or_si128,
        _mm_movemask_epi8
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar_raw(bytes: &[u8]) -> i64 {
        scalar(bytes, START)
    }

    /// Every ordered pair of byte values, each pair once as neighbours: 0,0,0,1,0,2,...
    fn all_byte_pairs() -> Vec<u8> {
        let mut out = Vec::with_capacity(2 * 65536 + 1);
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                out.push(a);
                out.push(b);
            }
        }
        out
    }

    #[test]
    fn empty_text_has_no_tokens() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(raw_score(b""), 0);
    }

    #[test]
    fn any_text_has_at_least_one_token() {
        for text in [" ", "\n", "a", "\u{0}", "  ", "\u{e9}"] {
            assert!(count_tokens(text) >= 1, "{text:?}");
        }
    }

    fn tokens_of(raw: i64) -> u64 {
        ((raw + HALF) >> SHIFT).max(1) as u64
    }

    #[test]
    fn hand_checked_counts() {
        let w = WEIGHTS;
        // text + bytes + one word
        let hello = w[0] + 5 * w[1] + w[2];
        assert_eq!(raw_score(b"hello"), hello);
        // a second word, and the space before it
        assert_eq!(
            raw_score(b"hello world"),
            w[0] + 11 * w[1] + 2 * w[2] + w[12]
        );
        // one run of five digits
        assert_eq!(raw_score(b"12345"), w[0] + 5 * w[1] + 5 * w[5] + w[6]);
        // one letter run with two camelCase humps and two capitals
        let camel = w[0] + 11 * w[1] + w[2] + 2 * w[3] + 2 * w[4];
        assert_eq!(raw_score(b"getUserName"), camel);
        // two CJK characters: two leads, four continuation bytes, one non-ASCII run
        let cjk = w[0] + 6 * w[1] + 2 * w[17] + w[20];
        assert_eq!(raw_score("\u{8bb0}\u{5fc6}".as_bytes()), cjk);
        // four spaces: three of them continue the run
        assert_eq!(raw_score(b"    "), w[0] + 4 * w[1] + 4 * w[12] + 3 * w[13]);
        for (text, raw) in [
            ("hello", hello),
            ("getUserName", camel),
            ("\u{8bb0}\u{5fc6}", cjk),
        ] {
            assert_eq!(count_tokens(text), tokens_of(raw), "{text}");
        }
        assert_eq!(count_tokens("hello"), 1);
        assert_eq!(count_tokens("hello world"), 2);
    }

    #[test]
    fn classes_follow_their_comments() {
        assert_eq!(byte_class(b'q'), LOWER);
        assert_eq!(byte_class(b'Q'), UPPER);
        assert_eq!(byte_class(b'7'), DIGIT);
        assert_eq!(byte_class(b'\t'), SPACE);
        assert_eq!(byte_class(b'\r'), NEWLINE);
        assert_eq!(byte_class(0x7F), PUNCT);
        assert_eq!(byte_class(0x00), PUNCT);
        assert_eq!(byte_class(b'\\'), BACKSLASH);
        assert_eq!(byte_class(0xBF), CONT);
        assert_eq!(byte_class(0xC3), LEAD2);
        assert_eq!(byte_class(0xE1), LEAD3);
        assert_eq!(byte_class(0xEF), LEAD3);
        assert_eq!(byte_class(0xE2), LEAD_E2);
        assert_eq!(byte_class(0xE4), LEAD_CJK);
        assert_eq!(byte_class(0xED), LEAD_HANGUL);
        assert_eq!(byte_class(0xF0), LEAD4);
    }

    /// The kernels this CPU supports.
    #[cfg(target_arch = "x86_64")]
    fn kernels() -> Vec<simd::Kernel> {
        [
            simd::Kernel::Sse2,
            simd::Kernel::Sse2Popcnt,
            simd::Kernel::Avx2,
        ]
        .into_iter()
        .filter(|kernel| kernel.is_supported())
        .collect()
    }

    #[test]
    fn vector_paths_equal_the_table_walk_on_every_byte_pair() {
        let bytes = all_byte_pairs();
        let expected = scalar_raw(&bytes);
        assert_eq!(raw_score(&bytes), expected);
        #[cfg(target_arch = "x86_64")]
        for kernel in kernels() {
            for offset in 0..70 {
                let slice = &bytes[offset..];
                // SAFETY: `kernels` lists only kernels this CPU supports.
                let (vector, end) = unsafe { simd::raw_score_with(slice, kernel) };
                let tail = scalar(&slice[end..], BYTE_CLASS[usize::from(slice[end - 1])]);
                assert_eq!(vector + tail, scalar_raw(slice), "{kernel:?} {offset}");
            }
        }
    }

    #[test]
    fn every_length_agrees_with_the_table_walk() {
        let text =
            "fn main() {\n    let x = \"caf\u{e9} \u{8bb0}\u{5fc6} \u{2192} \u{1f600}\\n\";\n}\n"
                .repeat(8);
        let bytes = text.as_bytes();
        for end in 0..bytes.len() {
            assert_eq!(raw_score(&bytes[..end]), scalar_raw(&bytes[..end]), "{end}");
        }
    }

    #[test]
    fn long_runs_flush_the_lane_counters() {
        // > 255 vectors of the same class: the u8 lane counters must be folded in time.
        for text in [
            "a".repeat(40_000),
            "1".repeat(40_000),
            "\u{4e2d}".repeat(9_000),
        ] {
            assert_eq!(raw_score(text.as_bytes()), scalar_raw(text.as_bytes()));
        }
    }

    #[test]
    fn appending_text_never_lowers_the_estimate() {
        let pieces = [
            "",
            "a",
            "Zz",
            " ",
            "  x",
            "\n\n",
            "\\n",
            "--",
            "12",
            "\u{e9}",
            "\u{8bb0}",
            "\u{2192}",
            "\u{1f600}",
            "\t",
            "\u{0}",
            "\u{d55c}",
        ];
        for a in pieces {
            for b in pieces {
                let joined = format!("{a}{b}");
                assert!(count_tokens(&joined) >= count_tokens(a), "{a:?} + {b:?}");
            }
        }
    }

    #[test]
    fn batch_equals_one_by_one() {
        let texts = ["", "one", "two words", "\u{4e2d}\u{6587}"];
        let expected: Vec<u64> = texts.iter().map(|t| count_tokens(t)).collect();
        assert_eq!(count_tokens_many(&texts), expected);
    }

    /// Throughput of every kernel on this machine (not a test of correctness):
    /// `cargo test -p memframe-core --release -- --ignored --nocapture kernel_throughput`.
    #[test]
    #[ignore]
    fn kernel_throughput() {
        let prose = "The quick brown fox, it said, jumps over 13 lazy dogs. ".repeat(20_000);
        let code = "    def getUserName(self, key: str) -> str:\n        return self._names[key]\n"
            .repeat(12_000);
        let cjk = "\u{8bb0}\u{5fc6}\u{7cfb}\u{7edf}\u{ff0c}Claude Code \u{5b9e}\u{73b0}\u{3002}\n"
            .repeat(30_000);
        for (name, text) in [("prose", &prose), ("code", &code), ("cjk", &cjk)] {
            let bytes = text.as_bytes();
            let time = |f: &dyn Fn() -> i64| {
                let mut best = f64::MAX;
                for _ in 0..30 {
                    let start = std::time::Instant::now();
                    std::hint::black_box(f());
                    best = best.min(start.elapsed().as_secs_f64());
                }
                bytes.len() as f64 / best / 1e9
            };
            println!(
                "{name:6} table walk {:5.2} GB/s",
                time(&|| scalar_raw(bytes))
            );
            #[cfg(target_arch = "x86_64")]
            for kernel in kernels() {
                // SAFETY: `kernels` lists only kernels this CPU supports.
                let rate = time(&|| unsafe { simd::raw_score_with(bytes, kernel) }.0);
                println!("{name:6} {kernel:?} {rate:5.2} GB/s");
            }
        }
    }
}
