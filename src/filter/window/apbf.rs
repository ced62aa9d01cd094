//! The row kernels of the blocked APBF layout ([`WindowLayout::Blocked`](super::WindowLayout)):
//! the item's bit in each slice's word of its row, gathered (AVX2 where the CPU has it) into a
//! mask of ages, and the search for a run of `k` hits in it.

/// Six bits of each of eight slices' positions: a mix (splitmix64's finalizer) of the item's
/// second hash and the group `g` of eight physical slices. Independent from group to group (a
/// linear step such as `h2 + p·c` would make two items that agree in one slice agree in all).
#[inline]
pub(super) fn group_mix(h2: u64, g: usize) -> u64 {
    let z = h2 ^ (g as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Slices per [`group_mix`] (eight groups make the 64 slices of one mask word).
pub(super) const GROUP: usize = 8;

/// The bit an item has in the word of physical slice `p` of its row (blocked layout).
#[inline]
pub(super) fn row_bit(h2: u64, p: usize) -> u64 {
    let z = group_mix(h2, p / GROUP) >> (6 * (p % GROUP));
    1u64 << (z & 63)
}

/// A set of ages (at most 256: `k + l ≤ 200`), one bit each.
pub(super) type AgeMask = [u64; 4];

/// The item's bit of each slice of a group (up to eight slices; `z` the group's
/// [`group_mix`]), as up to eight bits.
#[inline(always)]
pub(super) fn group_bits(group: &[u64], z: u64) -> u64 {
    let mut bits = 0u64;
    for (j, &w) in group.iter().enumerate() {
        bits |= ((w >> ((z >> (6 * j)) & 63)) & 1) << j;
    }
    bits
}

/// Bit `p` of the result is whether physical slice `p` holds the item's bit in its row
/// (`slots`: the row's slice words by physical index). No branch on the data: every slice is
/// read, eight positions per mix. The scalar model of [`phys_bits_avx2`].
#[inline]
pub(super) fn phys_bits_scalar(slots: &[u64], h2: u64) -> AgeMask {
    let mut phys = [0u64; 4];
    for (g, group) in slots.chunks(GROUP).enumerate() {
        phys[g / 8] |= group_bits(group, group_mix(h2, g)) << ((g % 8) * GROUP);
    }
    phys
}

/// [`phys_bits_scalar`] four slices per instruction: the four 6-bit positions of a half group
/// are spread into lanes (a variable shift of the mix), each slice word is shifted so that the
/// item's bit lands in bit 63 of its lane, and the lanes' sign bits are gathered (movemask).
/// The last partial group goes through the scalar path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn phys_bits_avx2(slots: &[u64], h2: u64) -> AgeMask {
    use std::arch::x86_64::*;
    // Group g's eight bits are byte g of the little-endian mask: one byte store per group
    // (k + l ≤ 200 slices make at most 25 groups).
    let mut bytes = [0u8; 32];
    let lo_shifts = _mm256_setr_epi64x(0, 6, 12, 18);
    let hi_shifts = _mm256_setr_epi64x(24, 30, 36, 42);
    let six = _mm256_set1_epi64x(63);
    let mut groups = slots.chunks_exact(GROUP);
    for (g, group) in (&mut groups).enumerate() {
        let z = _mm256_set1_epi64x(group_mix(h2, g) as i64);
        // 63 − pos: the item's bit of each word shifted up into the lane's sign bit.
        let lo_up = _mm256_xor_si256(_mm256_and_si256(_mm256_srlv_epi64(z, lo_shifts), six), six);
        let hi_up = _mm256_xor_si256(_mm256_and_si256(_mm256_srlv_epi64(z, hi_shifts), six), six);
        // SAFETY: `group` is 8 words; each unaligned 256-bit load reads 4 of them.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(group.as_ptr().cast()),
                _mm256_loadu_si256(group.as_ptr().add(4).cast()),
            )
        };
        let lo_bits = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_sllv_epi64(lo, lo_up)));
        let hi_bits = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_sllv_epi64(hi, hi_up)));
        bytes[g] = (lo_bits | hi_bits << 4) as u8;
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        bytes[slots.len() / GROUP] = group_bits(rest, group_mix(h2, slots.len() / GROUP)) as u8;
    }
    std::array::from_fn(|i| {
        u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("eight bytes"))
    })
}

/// [`phys_bits_scalar`], by AVX2 where the CPU has it.
#[inline]
pub(super) fn phys_bits(slots: &[u64], h2: u64) -> AgeMask {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { phys_bits_avx2(slots, h2) };
    }
    phys_bits_scalar(slots, h2)
}

/// Bit `age` of the result is whether the slice of that age holds the item's bit in its row
/// (`slots`: the row's slice words by physical index; `head`: physical index of age 0): the
/// slices' bits gathered in physical order ([`phys_bits`]) and then rotated into age order.
#[inline]
pub(super) fn age_mask(slots: &[u64], h2: u64, head: usize) -> AgeMask {
    let phys = phys_bits(slots, h2);
    if head == 0 {
        return phys;
    }
    // Age a is physical (a + head) mod n; bits past n are ignored by `has_run`'s range.
    let (low, high) = (shr(phys, head), shl(phys, slots.len() - head));
    [low[0] | high[0], low[1] | high[1], low[2] | high[2], low[3] | high[3]]
}

/// `m` shifted towards higher ages by `s` (< 256): bit `i + s` of the result is bit `i` of `m`.
#[inline]
pub(super) fn shl(m: AgeMask, s: usize) -> AgeMask {
    let (words, bits) = (s / 64, s % 64);
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate().skip(words) {
        let lo = m[i - words];
        let below = if i > words { m[i - words - 1] } else { 0 };
        *o = if bits == 0 { lo } else { (lo << bits) | (below >> (64 - bits)) };
    }
    out
}

/// `m` shifted towards lower ages by `s` (< 256): bit `i` of the result is bit `i + s` of `m`.
#[inline]
pub(super) fn shr(m: AgeMask, s: usize) -> AgeMask {
    let (words, bits) = (s / 64, s % 64);
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let lo = m.get(i + words).copied().unwrap_or(0);
        let hi = m.get(i + words + 1).copied().unwrap_or(0);
        *o = if bits == 0 { lo } else { (lo >> bits) | (hi << (64 - bits)) };
    }
    out
}

/// Whether `m` holds `k` consecutive ages within `lo..hi`.
#[inline]
pub(super) fn has_run(m: AgeMask, k: usize, lo: usize, hi: usize) -> bool {
    let mut y = [0u64; 4];
    for (i, w) in y.iter_mut().enumerate() {
        let (a, b) = (i * 64, i * 64 + 64);
        let from = lo.clamp(a, b) - a;
        let to = hi.clamp(a, b) - a;
        let keep = if to <= from { 0 } else { (u64::MAX >> (64 - (to - from))) << from };
        *w = m[i] & keep;
    }
    // After each step, bit i of y says that ages i..i + len all hit.
    let mut len = 1;
    while len * 2 <= k {
        let t = shr(y, len);
        for (w, t) in y.iter_mut().zip(t) {
            *w &= t;
        }
        len *= 2;
    }
    if len < k {
        let t = shr(y, k - len);
        for (w, t) in y.iter_mut().zip(t) {
            *w &= t;
        }
    }
    y.iter().any(|&w| w != 0)
}

/// Whether `k` consecutive ages among `lo..hi` hit.
///
/// Every run of `k` ages contains an age `i` with `i ≡ lo + k − 1 (mod k)` past the last miss,
/// so only those are probed first (the paper's skipping query): a miss at `i` rules out every
/// run through `i`, and the next candidate is `i + k`; a hit is grown left and right into its
/// maximal run, and after the miss `r` that ends it the next candidate is `r + k`. An absent
/// item costs about `2(k + l)/k` probes instead of `k + l`.
#[inline]
pub(super) fn found(k: usize, lo: usize, hi: usize, hit: impl Fn(usize) -> bool) -> bool {
    let mut i = lo + k - 1;
    while i < hi {
        if !hit(i) {
            i += k;
            continue;
        }
        let mut run = 1;
        let mut left = i;
        while run < k && left > lo && hit(left - 1) {
            left -= 1;
            run += 1;
        }
        let mut right = i + 1;
        while run < k && right < hi && hit(right) {
            right += 1;
            run += 1;
        }
        if run >= k {
            return true;
        }
        // `right` is a miss (or the end): the next run lies wholly after it.
        i = right + k;
    }
    false
}
