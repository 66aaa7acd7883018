//! The check on every journal record: CRC-32 from a small table, not a
//! dependency.

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it), fed in parts:
/// start from `!0`, and the CRC is the complement of the last state.
pub(super) fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    static TABLE: [u32; 256] = table();
    for &byte in bytes {
        crc = TABLE[((crc ^ u32::from(byte)) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

const fn table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(!crc32_update(!0, b"123456789"), 0xCBF4_3926);
    }
}
