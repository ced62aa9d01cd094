//! The unit tests' pseudo-random words: xorshift64 (Marsaglia 2003), seeded, so a test sees the
//! same sequence in every run.

/// xorshift64 with its state: [`XorShift::next_u64`] gives the next word of the seed's
/// sequence (a seed of 0 stays 0).
pub struct XorShift(pub u64);

impl Default for XorShift {
    /// The seed most tests use (2^64 / φ).
    fn default() -> Self {
        Self(0x9e37_79b9_7f4a_7c15)
    }
}

impl XorShift {
    /// The next word.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}
