//! Test data: item names, the items a MADD really added, and a seeded pseudo random generator.

use super::resp::Value;

/// `n` distinct item names with a prefix.
pub fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{}:{}", prefix, i)).collect()
}

/// Items whose MADD reply was 1 (genuinely added).
pub fn added(items: &[String], replies: &[Value]) -> Vec<String> {
    items
        .iter()
        .zip(replies)
        .filter(|(_, r)| matches!(r, Value::Int(1) | Value::Bool(true)))
        .map(|(i, _)| i.clone())
        .collect()
}

/// Deterministic pseudo random numbers (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A file of the repository (a document a test compares with the server), as text.
pub fn repo_file(name: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}
