//! The benches' one random generator, included by `peers/mod.rs` and, by
//! path, by the benches that need nothing else from `peers`.

/// splitmix64: a tiny, fast, deterministic generator, good enough to pick
/// delays and indices. One fixed seed per input stream, so every peer (and
/// every run) sees the same sequence.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) const fn new(seed: u64) -> Self {
        Rng(seed)
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by multiply-high (Lemire); the bias is below 2⁻⁴⁰
    /// for the `n` used here.
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}
