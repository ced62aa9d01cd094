//! MurmurHash64A and the 32-bit MurmurHash2, exactly as RedisBloom compiles them: the hashes of
//! RedisBloom's Bloom schemes (2 and 3, [`HashScheme`](super::HashScheme)) and of its cuckoo
//! fingerprints.

/// RedisBloom's seed of the first MurmurHash64A (`bloom_calc_hash64`). In RDB encoding version 2
/// (no release) it is 0.
pub const MURMUR64_SEED: u64 = 0xc6a4_a793_5bd1_e995;
/// RedisBloom's seed of the first 32-bit MurmurHash2 (`bloom_calc_hash`).
pub const MURMUR32_SEED: u32 = 0x9747_b28c;

/// Austin Appleby's MurmurHash64A, exactly as RedisBloom compiles it (`MurmurHash64A_Bloom` in
/// `deps/murmur2/MurmurHash2.c`): 8-byte little-endian blocks (RedisBloom reads them with a
/// native load on little-endian machines), then the tail bytes.
#[inline(always)]
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    // C's `int len` times a `uint64_t`: the length as a 64-bit value (items are < 2^31 bytes).
    let h = seed ^ (key.len() as u64).wrapping_mul(MURMUR_M);
    let len = key.len();
    let h = if len.wrapping_sub(9) < 7 {
        // 9..=15 bytes (the most common item lengths) tested first, with one compare: block
        // 0, then the tail, the top `len − 8` bytes of the last 8 read as one little-endian
        // word (the same steps as `murmur64a_short`'s).
        match (key.first_chunk::<8>(), key.last_chunk::<8>()) {
            (Some(first), Some(last)) => murmur64a_tail(
                murmur64a_block(h, u64::from_le_bytes(*first)),
                u64::from_le_bytes(*last) >> (8 * (16 - len)),
            ),
            // Not reached: 9..=15 bytes hold both chunks.
            _ => murmur64a_short(key, h),
        }
    } else if len <= 16 {
        murmur64a_short(key, h)
    } else {
        murmur64a_long(key, h)
    };
    murmur64a_finish(h)
}

/// MurmurHash64A's multiplier.
const MURMUR_M: u64 = 0xc6a4_a793_5bd1_e995;
/// MurmurHash64A's shift.
const MURMUR_R: u32 = 47;

/// One 8-byte block mixed into `h`.
#[inline(always)]
fn murmur64a_block(h: u64, k: u64) -> u64 {
    let mut k = k.wrapping_mul(MURMUR_M);
    k ^= k >> MURMUR_R;
    k = k.wrapping_mul(MURMUR_M);
    (h ^ k).wrapping_mul(MURMUR_M)
}

/// The tail (1..=7 bytes, as one little-endian value) mixed into `h`.
#[inline(always)]
fn murmur64a_tail(h: u64, tail: u64) -> u64 {
    (h ^ tail).wrapping_mul(MURMUR_M)
}

#[inline(always)]
fn murmur64a_finish(mut h: u64) -> u64 {
    h ^= h >> MURMUR_R;
    h = h.wrapping_mul(MURMUR_M);
    h ^ (h >> MURMUR_R)
}

/// Keys of at most 16 bytes (most items), straight-line: the blocks and the tail read with at
/// most two (overlapping) loads, no loop. The same value as [`murmur64a_long`]'s steps.
#[inline(always)]
fn murmur64a_short(key: &[u8], h: u64) -> u64 {
    let len = key.len();
    if let (Some(first), Some(last)) = (key.first_chunk::<8>(), key.last_chunk::<8>()) {
        // 8..=16 bytes: block 0, then block 1 (16 bytes) or the tail, which is the top
        // `len − 8` bytes of the last 8, read as one little-endian word.
        let h = murmur64a_block(h, u64::from_le_bytes(*first));
        let last = u64::from_le_bytes(*last);
        return match len {
            8 => h,
            16 => murmur64a_block(h, last),
            _ => murmur64a_tail(h, last >> (8 * (16 - len))),
        };
    }
    if let (Some(lo), Some(hi)) = (key.first_chunk::<4>(), key.last_chunk::<4>()) {
        // 4..=7 bytes: bytes 0..4 and bytes len−4..len, placed where they belong (the
        // overlapping bytes are the same in both, so OR is exact).
        let lo = u64::from(u32::from_le_bytes(*lo));
        let hi = u64::from(u32::from_le_bytes(*hi));
        return murmur64a_tail(h, lo | hi << (8 * (len - 4)));
    }
    match key {
        [] => h,
        // 1..=3 bytes: the first, the middle and the last (some the same byte).
        [b0, ..] => {
            let mid = len / 2;
            let tail = u64::from(*b0)
                | u64::from(key[mid]) << (8 * mid)
                | u64::from(key[len - 1]) << (8 * (len - 1));
            murmur64a_tail(h, tail)
        }
    }
}

/// Keys longer than 16 bytes: 8-byte little-endian blocks (RedisBloom reads them with a
/// native load on little-endian machines), then the tail bytes.
fn murmur64a_long(key: &[u8], mut h: u64) -> u64 {
    let mut blocks = key.chunks_exact(8);
    for block in &mut blocks {
        // chunks_exact(8) yields 8-byte slices only.
        h = murmur64a_block(h, u64::from_le_bytes(block.try_into().expect("8-byte block")));
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // The tail bytes are the top ones of the key's last 8 (the key is longer than 8), read
        // as one little-endian word: the same value as C's byte loop, in one load.
        let last: [u8; 8] = key[key.len() - 8..].try_into().expect("8 bytes");
        h = murmur64a_tail(h, u64::from_le_bytes(last) >> (8 * (8 - tail.len())));
    }
    h
}

/// Austin Appleby's 32-bit MurmurHash2, as in RedisBloom's `deps/murmur2/MurmurHash2.c`.
pub fn murmur2(key: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    // C's `seed ^ len` with `int len` converted to `uint32_t`.
    let mut h = seed ^ key.len() as u32;
    let mut blocks = key.chunks_exact(4);
    for block in &mut blocks {
        // chunks_exact(4) yields 4-byte slices only.
        let mut k = u32::from_le_bytes(block.try_into().expect("4-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference MurmurHash64A, tail read byte by byte as in the C source.
    fn murmur64a_bytewise(key: &[u8], seed: u64) -> u64 {
        const M: u64 = 0xc6a4_a793_5bd1_e995;
        let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
        let blocks = key.len() / 8;
        for i in 0..blocks {
            let mut k = u64::from_le_bytes(key[8 * i..8 * i + 8].try_into().unwrap());
            k = k.wrapping_mul(M);
            k ^= k >> 47;
            k = k.wrapping_mul(M);
            h ^= k;
            h = h.wrapping_mul(M);
        }
        let tail = &key[8 * blocks..];
        if !tail.is_empty() {
            for (i, &b) in tail.iter().enumerate() {
                h ^= u64::from(b) << (8 * i);
            }
            h = h.wrapping_mul(M);
        }
        h ^= h >> 47;
        h = h.wrapping_mul(M);
        h ^ (h >> 47)
    }

    #[test]
    fn murmur64a_word_tail_matches_the_bytewise_tail_at_every_length() {
        let key: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37).wrapping_add(0x9b)).collect();
        for len in 0..=key.len() {
            for seed in [0, MURMUR64_SEED] {
                assert_eq!(
                    murmur64a(&key[..len], seed),
                    murmur64a_bytewise(&key[..len], seed),
                    "len {len}"
                );
            }
        }
    }
}
