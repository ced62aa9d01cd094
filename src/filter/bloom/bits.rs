//! A fixed-size bit array stored as power-of-two segments of `u64` words.
//!
//! Why segments: one multi-GiB allocation is rounded up by jemalloc to its next size class
//! (1.004 GiB becomes 1.25 GiB, and `maxmemory` counts the rounded size), and it has to be
//! found in one piece. Segments of [`SEGMENT_BYTES`] are themselves a size class, so only the
//! last, shorter segment can waste anything, and a bit position maps to (segment, word, bit)
//! with shifts and masks. A filter smaller than one segment is a single allocation of exactly
//! its size.
//!
//! Bit `p` lives in word `p / 64` at mask `1 << (p % 64)`; serialized, words are little-endian,
//! so bit `p` is in byte `p / 8` at mask `1 << (p % 8)` — the same byte order RedisBloom uses.
//!
//! The merge loops (`BitArray::union_ones`, `BitArray::merge_from`: bits OR-ed, counters added
//! saturating) live in the child module `merge`.

mod merge;

use super::probe::WordArray;
use crate::filter::FilterError;
use crate::filter::mem::{Words, le_bytes, replace_counting, set_from_le_bytes};

/// log2 of the words in one full segment: 2^23 words = 64 MiB.
pub const SEGMENT_WORDS_SHIFT: u32 = 23;
/// Words in one full segment.
pub const SEGMENT_WORDS: u64 = 1 << SEGMENT_WORDS_SHIFT;
/// Bytes in one full segment (64 MiB). Also the largest piece any serialized form writes at once.
pub const SEGMENT_BYTES: u64 = SEGMENT_WORDS * 8;

/// A bit array of a fixed length (a multiple of 64 bits).
///
/// Its length is not stored: every segment but the last is full, so the words of the last and
/// the number of segments give it. This struct is part of every filter's fixed overhead, so it
/// stays at 16 bytes (a [`Words`] handle, whose huge-page job is kept apart) and an array of one segment (up to 64 MiB, nearly every filter) has no
/// separate segment table.
#[derive(Clone, PartialEq, Eq)]
pub struct BitArray {
    segments: Segments,
}

// A one-segment array is its one allocation's address and length, nothing more.
const _: () = assert!(std::mem::size_of::<BitArray>() == 16);

/// The segments of a [`BitArray`]: one held directly, or a table of exactly as many slots as
/// segments (a boxed slice, not a `Vec` with spare capacity).
#[derive(Clone, PartialEq, Eq)]
enum Segments {
    One(Words),
    /// Boxed: the table's own handle would not fit beside the niche of `One`'s address, and
    /// the array handle would grow to 24 bytes for every filter.
    Many(Box<SegmentTable>),
}

/// The segments of an array of more than one: every segment but the last has exactly
/// [`SEGMENT_WORDS`] words, the last 1 to [`SEGMENT_WORDS`]. `SegmentTable::new` checks
/// that; it is what lets the probe kernels address word `w` as word `w % SEGMENT_WORDS` of
/// segment `w / SEGMENT_WORDS` without bounds checks.
#[derive(Clone, PartialEq, Eq)]
pub struct SegmentTable(Box<[Words]>);

impl SegmentTable {
    /// The table of `segments`. Panics if the shape above does not hold: callers build the
    /// segments from [`segment_lengths`], so that would be a bug here, never bad input.
    fn new(segments: Vec<Words>) -> Self {
        let n = segments.len();
        assert!(
            n >= 2
                && segments[..n - 1].iter().all(|s| s.len() as u64 == SEGMENT_WORDS)
                && (1..=SEGMENT_WORDS).contains(&(segments[n - 1].len() as u64)),
            "segment table of the wrong shape"
        );
        Self(segments.into_boxed_slice())
    }

    /// Block `b` of a blocked layer: words `8b` to `8b + 7`, all in one segment (segments are
    /// multiples of 8 words but the last, and an array of whole blocks makes the last one a
    /// multiple of 8 too).
    ///
    /// # Safety
    /// The array's bits are a multiple of 512 and `b < bits / 512`.
    #[inline(always)]
    pub(super) unsafe fn block(&self, b: u64) -> &[u64; 8] {
        let w = b * 8;
        debug_assert!(w + 8 <= super::probe::WordArray::bits(self) / 64);
        // SAFETY: by the table's shape (`new`), word `w` is word `w % S` of segment `w / S`,
        // which exists (`w < bits / 64`); `S` and, for whole blocks, the last segment's length
        // are multiples of 8, and `w` is one, so words `w..w + 8` are in that segment.
        unsafe {
            let segment = self.0.get_unchecked((w >> SEGMENT_WORDS_SHIFT) as usize);
            &*segment.as_ptr().add((w & (SEGMENT_WORDS - 1)) as usize).cast::<[u64; 8]>()
        }
    }

    /// [`SegmentTable::block`], writable.
    ///
    /// # Safety
    /// As for [`SegmentTable::block`].
    #[inline(always)]
    pub(super) unsafe fn block_mut(&mut self, b: u64) -> &mut [u64; 8] {
        let w = b * 8;
        debug_assert!(w + 8 <= super::probe::WordArray::bits(self) / 64);
        // SAFETY: as in `block`, from the unique borrow of the table.
        unsafe {
            let segment = self.0.get_unchecked_mut((w >> SEGMENT_WORDS_SHIFT) as usize);
            &mut *segment.as_mut_ptr().add((w & (SEGMENT_WORDS - 1)) as usize).cast::<[u64; 8]>()
        }
    }
}

// SAFETY: `bits` is 64 per word. For `w < bits / 64 = (n - 1) · S + last` (S = SEGMENT_WORDS,
// n segments, the last of `last` ≤ S words, as `SegmentTable::new` checked): the segment
// `i = w / S` is below n (as `w < n · S`), and the word `w % S` is below the segment's length
// (S for i < n − 1; for i = n − 1 it is `w − (n − 1) · S < last`).
unsafe impl WordArray for SegmentTable {
    #[inline(always)]
    fn bits(&self) -> u64 {
        bits_of(&self.0)
    }
    #[inline(always)]
    unsafe fn word(&self, w: u64) -> &u64 {
        debug_assert!(w < self.bits() / 64);
        // SAFETY: the caller's `w < bits / 64`, and the proof above.
        unsafe {
            self.0
                .get_unchecked((w >> SEGMENT_WORDS_SHIFT) as usize)
                .get_unchecked((w & (SEGMENT_WORDS - 1)) as usize)
        }
    }
    #[inline(always)]
    unsafe fn word_mut(&mut self, w: u64) -> &mut u64 {
        debug_assert!(w < self.bits() / 64);
        // SAFETY: as in `word`.
        unsafe {
            self.0
                .get_unchecked_mut((w >> SEGMENT_WORDS_SHIFT) as usize)
                .get_unchecked_mut((w & (SEGMENT_WORDS - 1)) as usize)
        }
    }
}

/// How the probe kernels see a [`BitArray`]: one slice, or a [`SegmentTable`].
pub enum View<'a> {
    /// An array of one segment (up to 64 MiB: nearly every layer).
    One(&'a [u64]),
    /// A larger array.
    Many(&'a SegmentTable),
}

/// [`View`], writable.
pub enum ViewMut<'a> {
    /// An array of one segment.
    One(&'a mut [u64]),
    /// A larger array.
    Many(&'a mut SegmentTable),
}

impl std::fmt::Debug for BitArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BitArray").field("bits", &self.len_bits()).finish()
    }
}

/// The bits of an array held as `segs`, every segment but the last full.
#[inline(always)]
fn bits_of(segs: &[Words]) -> u64 {
    let last = segs.last().map_or(0, |s| s.len() as u64);
    ((segs.len() as u64).saturating_sub(1) * SEGMENT_WORDS + last) * 64
}

/// The word count of each segment of an array of `words` words, in order.
fn segment_lengths(words: u64) -> impl Iterator<Item = u64> {
    let full = words >> SEGMENT_WORDS_SHIFT;
    let rest = words & (SEGMENT_WORDS - 1);
    (0..full).map(|_| SEGMENT_WORDS).chain((rest > 0).then_some(rest))
}

impl BitArray {
    /// Lets `mv` move the array's memory (active defragmentation). Only a one-segment array
    /// (up to 64 MiB, nearly every filter) is offered; a segmented one is made of 64 MiB
    /// allocations, which defragmentation does not move.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        if let Segments::One(words) = &mut self.segments {
            // SAFETY: the caller's contract on `mv`.
            unsafe { words.relocate(mv) }
        }
    }

    /// A zeroed array of `bits` bits. `bits` must be a positive multiple of 64.
    pub fn new(bits: u64) -> Result<Self, FilterError> {
        if bits == 0 || bits % 64 != 0 {
            return Err(FilterError::BadData);
        }
        if bits / 64 <= SEGMENT_WORDS {
            // One segment (nearly every filter): no table to build and drop on the way.
            return Ok(Self { segments: Segments::One(Words::zeroed(bits / 64)?) });
        }
        let segments =
            segment_lengths(bits / 64).map(Words::zeroed).collect::<Result<Vec<_>, _>>()?;
        Ok(Self::from_vec(segments))
    }

    /// The array of these segments (at least one; all but the last full).
    fn from_vec(mut segments: Vec<Words>) -> Self {
        let segments = if segments.len() == 1 {
            Segments::One(segments.pop().unwrap_or_default())
        } else {
            Segments::Many(Box::new(SegmentTable::new(segments)))
        };
        Self { segments }
    }

    /// The segments as a slice, whichever way they are held.
    #[inline]
    fn segs(&self) -> &[Words] {
        match &self.segments {
            Segments::One(s) => std::slice::from_ref(s),
            Segments::Many(s) => &s.0,
        }
    }

    /// [`BitArray::segs`], writable.
    #[inline]
    fn segs_mut(&mut self) -> &mut [Words] {
        match &mut self.segments {
            Segments::One(s) => std::slice::from_mut(s),
            Segments::Many(s) => &mut s.0,
        }
    }

    /// Number of bits.
    #[inline]
    pub fn len_bits(&self) -> u64 {
        bits_of(self.segs())
    }

    /// Number of bytes (bits / 8).
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        self.len_bits() / 8
    }

    /// Sets bit `pos` and returns whether it was already set. `pos < len_bits()`.
    #[inline]
    pub fn set(&mut self, pos: u64) -> bool {
        let (seg, word, mask) = Self::locate(pos);
        let w = &mut self.segs_mut()[seg][word];
        let was = *w & mask != 0;
        *w |= mask;
        was
    }

    /// Whether bit `pos` is set. `pos < len_bits()`.
    #[inline]
    pub fn get(&self, pos: u64) -> bool {
        let (seg, word, mask) = Self::locate(pos);
        self.segs()[seg][word] & mask != 0
    }

    /// Counter `index` of `width` bits (4 or 8): bits `[index·width, (index+1)·width)`, inside
    /// one word (`width` divides 64). `(index + 1) · width ≤ len_bits()`.
    #[inline]
    pub fn counter(&self, index: u64, width: u8) -> u64 {
        let pos = index * u64::from(width);
        let (seg, word, _) = Self::locate(pos);
        (self.segs()[seg][word] >> (pos & 63)) & ((1u64 << width) - 1)
    }

    /// Sets counter `index` of `width` bits to `value` (below `2^width`).
    #[inline]
    pub fn set_counter(&mut self, index: u64, width: u8, value: u64) {
        let pos = index * u64::from(width);
        let (seg, word, _) = Self::locate(pos);
        let mask = ((1u64 << width) - 1) << (pos & 63);
        let w = &mut self.segs_mut()[seg][word];
        *w = (*w & !mask) | ((value << (pos & 63)) & mask);
    }

    /// Starts loading the cache line of bit `pos`.
    #[inline]
    pub fn prefetch(&self, pos: u64) {
        let (seg, word, _) = Self::locate(pos);
        if let Some(w) = self.segs().get(seg).and_then(|s| s.get(word)) {
            crate::filter::mem::prefetch(w);
        }
    }

    /// (segment index, word index inside it, bit mask) of bit `pos`.
    #[inline]
    fn locate(pos: u64) -> (usize, usize, u64) {
        let word = pos >> 6;
        (
            (word >> SEGMENT_WORDS_SHIFT) as usize,
            (word & (SEGMENT_WORDS - 1)) as usize,
            1u64 << (pos & 63),
        )
    }

    /// The array as the probe kernels see it.
    #[inline]
    pub fn view(&self) -> View<'_> {
        match &self.segments {
            Segments::One(only) => View::One(only),
            Segments::Many(table) => View::Many(table),
        }
    }

    /// [`BitArray::view`], writable.
    #[inline]
    pub fn view_mut(&mut self) -> ViewMut<'_> {
        match &mut self.segments {
            Segments::One(only) => ViewMut::One(only),
            Segments::Many(table) => ViewMut::Many(table),
        }
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.segs().iter().map(|s| crate::filter::mem::count_ones_bytes(&le_bytes(s))).sum()
    }

    /// The segments' sizes in bytes, in order; they add up to `len_bytes()`.
    pub fn segment_byte_lengths(&self) -> impl Iterator<Item = u64> + '_ {
        self.segs().iter().map(|s| s.len() as u64 * 8)
    }

    /// Calls `f` with the bytes at `[offset, offset + len)` in little-endian order, one piece
    /// per segment the range touches (no copy on little-endian targets).
    pub fn read_bytes(
        &self,
        offset: u64,
        len: u64,
        mut f: impl FnMut(&[u8]),
    ) -> Result<(), FilterError> {
        let end = offset.checked_add(len).ok_or(FilterError::BadData)?;
        if end > self.len_bytes() {
            return Err(FilterError::BadData);
        }
        let mut pos = offset;
        while pos < end {
            let seg = (pos / SEGMENT_BYTES) as usize;
            let words = &self.segs()[seg];
            let from = (pos - seg as u64 * SEGMENT_BYTES) as usize;
            let take = (end - pos).min((words.len() * 8 - from) as u64) as usize;
            // The words that cover [from, from + take), then the bytes within them.
            let (first, last) = (from / 8, (from + take).div_ceil(8));
            let bytes = le_bytes(&words[first..last]);
            let skip = from - first * 8;
            f(&bytes[skip..skip + take]);
            pos += take as u64;
        }
        Ok(())
    }

    /// Maps the pages under bytes `[offset, offset + len)` writable now, in one call per
    /// segment ([`populate_for_write`](crate::filter::mem::populate_for_write)): before a
    /// chunk's old bytes are read and replaced. Whole words around the range; out-of-range
    /// parts are ignored. Changes no bit.
    pub fn prefault_bytes(&mut self, offset: u64, len: u64) {
        let end = offset.saturating_add(len).min(self.len_bytes());
        let mut pos = offset / 8 * 8;
        while pos < end {
            let (seg, word, _) = Self::locate(pos * 8);
            let words = &mut self.segs_mut()[seg];
            let n = (end.div_ceil(8) - pos / 8).min((words.len() - word) as u64) as usize;
            crate::filter::mem::populate_for_write(&mut words[word..word + n]);
            pos += n as u64 * 8;
        }
    }

    /// [`BitArray::write_bytes`], counting the set bits of the words it writes to before and
    /// after (whole words, so bits outside the range count in both): `(before, after)`.
    pub fn replace_bytes(&mut self, offset: u64, data: &[u8]) -> Result<(u64, u64), FilterError> {
        let (mut before, mut after) = (0u64, 0u64);
        self.write_words(offset, data, |words, bytes| {
            let (b, a) = replace_counting(words, bytes).ok_or(FilterError::BadData)?;
            (before, after) = (before + b, after + a);
            Ok(())
        })?;
        Ok((before, after))
    }

    /// Overwrites the bytes at `[offset, offset + data.len())` with `data` (little-endian order):
    /// whole words in one copy per segment, merged bytes only in the words at either end.
    pub fn write_bytes(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        self.write_words(offset, data, |words, bytes| {
            set_from_le_bytes(words, bytes).then_some(()).ok_or(FilterError::BadData)
        })
    }

    /// The walk under [`BitArray::write_bytes`] and [`BitArray::replace_bytes`]: calls
    /// `put(words, bytes)` with runs of whole words and their new little-endian bytes (`bytes`
    /// is `8 * words.len()` long), one run per segment; a partial word at either end of the
    /// range comes as one word with its old bytes outside the range kept.
    fn write_words(
        &mut self,
        offset: u64,
        data: &[u8],
        mut put: impl FnMut(&mut [u64], &[u8]) -> Result<(), FilterError>,
    ) -> Result<(), FilterError> {
        let end = offset.checked_add(data.len() as u64).ok_or(FilterError::BadData)?;
        if end > self.len_bytes() {
            return Err(FilterError::BadData);
        }
        let mut pos = offset;
        let mut data = data;
        while !data.is_empty() {
            let (seg, word, _) = Self::locate(pos * 8);
            let in_word = (pos % 8) as usize;
            let words = &mut self.segs_mut()[seg];
            let take = if in_word == 0 && data.len() >= 8 {
                // Whole words, up to the segment's end: the common case (chunks start at a
                // layer or at a whole word).
                let n = (data.len() / 8).min(words.len() - word);
                put(&mut words[word..word + n], &data[..n * 8])?;
                n * 8
            } else {
                // A partial word at either end of the range: merge its bytes.
                let mut bytes = words[word].to_le_bytes();
                let take = (8 - in_word).min(data.len());
                bytes[in_word..in_word + take].copy_from_slice(&data[..take]);
                put(&mut words[word..word + 1], &bytes)?;
                take
            };
            data = &data[take..];
            pos += take as u64;
        }
        Ok(())
    }

    /// Calls `f` with each segment's bytes in little-endian order (no copy on little-endian
    /// targets).
    pub fn for_each_segment_bytes(&self, mut f: impl FnMut(&[u8])) {
        for seg in self.segs() {
            f(&le_bytes(seg));
        }
    }

    /// Builds an array of `bits` bits from its segments, each asked of `next_segment` with the
    /// number of words the layout requires there and checked to have exactly that many.
    pub fn from_segments(
        bits: u64,
        mut next_segment: impl FnMut(u64) -> Result<Words, FilterError>,
    ) -> Result<Self, FilterError> {
        if bits == 0 || bits % 64 != 0 {
            return Err(FilterError::BadData);
        }
        let mut segments = Vec::new();
        for words in segment_lengths(bits / 64) {
            let seg = next_segment(words)?;
            if seg.len() as u64 != words {
                return Err(FilterError::BadData);
            }
            segments.push(seg);
        }
        Ok(Self::from_vec(segments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_then_get() {
        let mut b = BitArray::new(128).unwrap();
        assert!(!b.get(5));
        assert!(!b.set(5));
        assert!(b.get(5));
        assert!(b.set(5));
        assert!(!b.get(127));
        b.set(127);
        assert_eq!(b.count_ones(), 2);
    }

    #[test]
    fn rejects_bad_lengths() {
        assert!(BitArray::new(0).is_err());
        assert!(BitArray::new(65).is_err());
    }

    #[test]
    fn bytes_are_little_endian_bit_order() {
        let mut b = BitArray::new(64).unwrap();
        b.set(9); // byte 1, mask 0b10
        let mut out = Vec::new();
        b.read_bytes(0, 8, |s| out.extend_from_slice(s)).unwrap();
        assert_eq!(out, vec![0, 2, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn write_then_read_round_trips_unaligned_ranges() {
        let mut b = BitArray::new(256).unwrap();
        let data: Vec<u8> = (1..=13).collect();
        b.write_bytes(3, &data).unwrap();
        let mut out = Vec::new();
        b.read_bytes(3, 13, |s| out.extend_from_slice(s)).unwrap();
        assert_eq!(out, data);
        assert!(b.write_bytes(30, &data).is_err());
        assert!(b.read_bytes(u64::MAX, 2, |_| {}).is_err());
    }

    #[test]
    fn replace_counts_the_whole_words_it_touches_before_and_after() {
        let mut b = BitArray::new(256).unwrap();
        b.write_bytes(0, &[0xff; 32]).unwrap();
        // Bytes 3..16 lie in words 0 and 1 (16 bytes, all ones before).
        let (before, after) = b.replace_bytes(3, &[0x01; 13]).unwrap();
        assert_eq!((before, after), (128, 3 * 8 + 13));
        let mut out = Vec::new();
        b.read_bytes(0, 18, |s| out.extend_from_slice(s)).unwrap();
        assert_eq!(out[..3], [0xff; 3]);
        assert_eq!(out[3..16], [0x01; 13]);
        assert_eq!(out[16..], [0xff; 2]);
        assert!(b.replace_bytes(u64::MAX, &[0]).is_err());
        assert!(b.replace_bytes(31, &[0, 0]).is_err());
    }

    #[test]
    fn segment_lengths_cover_the_array() {
        let words = SEGMENT_WORDS * 2 + 5;
        let v: Vec<u64> = segment_lengths(words).collect();
        assert_eq!(v, vec![SEGMENT_WORDS, SEGMENT_WORDS, 5]);
        assert_eq!(segment_lengths(SEGMENT_WORDS).count(), 1);
    }

    #[test]
    fn from_segments_checks_each_length() {
        let ok = BitArray::from_segments(128, Words::zeroed).unwrap();
        assert_eq!(ok.len_bits(), 128);
        assert!(BitArray::from_segments(128, |n| Words::zeroed(n - 1)).is_err());
        assert!(BitArray::from_segments(128, |n| Words::zeroed(n + 1)).is_err());
    }
}
