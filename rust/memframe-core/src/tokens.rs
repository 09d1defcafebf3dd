//! Token estimation. This first estimator is the byte-length rule (`ceil(bytes / 4)`) that the
//! Python fallback mirrors exactly; the fitted byte-class model replaces it with the native
//! hot-paths work.

/// Estimated number of model tokens in UTF-8 `text`.
pub fn count_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_has_no_tokens() {
        assert_eq!(count_tokens(""), 0);
    }

    #[test]
    fn partial_groups_round_up() {
        assert_eq!(count_tokens("abcde"), 2);
        assert_eq!(count_tokens("abcd"), 1);
    }

    #[test]
    fn multibyte_text_counts_bytes() {
        assert_eq!(count_tokens("記憶"), 2);
    }
}
