//! The random inputs of the crate's property tests: xorshift64 from a fixed seed, so every run
//! draws the same cases and a failure repeats.

/// A xorshift64 generator; its state must not start at zero (it would stay there).
pub(crate) struct Xorshift(pub u64);

impl Xorshift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One of `items`, which must not be empty.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}
