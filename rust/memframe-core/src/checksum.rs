//! Checksums: sha256 in the team-sync wire format, and xxh3 for local change detection.

use sha2::{Digest, Sha256};

/// `"sha256:<lower-case hex>"` of the bytes, the format of `entryChecksums` on the sync wire.
pub fn sha256_tagged(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push(hex_digit(byte >> 4));
        out.push(hex_digit(byte & 0x0f));
    }
    out
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble)])
}

/// 64-bit xxh3 with seed 0, equal to `xxhash.xxh3_64_intdigest`.
pub fn xxh3_64(data: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(data)
}

/// 128-bit xxh3 with seed 0, equal to `xxhash.xxh3_128_intdigest`.
pub fn xxh3_128(data: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input_matches_the_published_digest() {
        assert_eq!(
            sha256_tagged(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn sha256_of_abc_matches_the_fips_vector() {
        assert_eq!(
            sha256_tagged(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn xxh3_of_empty_input_matches_the_reference() {
        assert_eq!(xxh3_64(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(xxh3_128(b""), 0x99AA_06D3_0147_98D8_6001_C324_468D_497F);
    }
}
