//! The slot array of a sub-filter: `len` fingerprints of type `F`, stored in the core's
//! zeroed word allocation ([`Words`]: `calloc`, so a fresh filter is lazily zeroed pages;
//! huge pages for large arrays; a refused allocation is an error, never an abort; movable by
//! active defragmentation).
//!
//! The stored byte order is each slot little-endian, slot after slot: on a little-endian
//! machine that is the memory itself, which is what `CF.SCANDUMP` chunks and RDB strings hold
//! (RedisBloom's 8-bit slots are bytes, so its order is the same).

use std::borrow::Cow;
use std::marker::PhantomData;

use super::super::mem::{self, Words};
use super::CuckooError;
use super::fingerprint::Fingerprint;

/// `len` slots of `F`, zeroed at creation.
#[derive(Clone, PartialEq, Eq)]
pub struct Slots<F> {
    /// At least `len × F::BYTES` bytes (rounded up to whole words).
    words: Words,
    len: usize,
    _f: PhantomData<F>,
}

impl<F> std::fmt::Debug for Slots<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slots({})", self.len)
    }
}

impl<F: Fingerprint> Slots<F> {
    /// `len` empty slots; `TooLarge` if the size does not fit the address space,
    /// `OutOfMemory` if the allocator refuses.
    pub fn zeroed(len: u64) -> Result<Self, CuckooError> {
        let bytes = len.checked_mul(F::BYTES as u64).ok_or(CuckooError::TooLarge)?;
        let len = usize::try_from(len).map_err(|_| CuckooError::TooLarge)?;
        let _ = isize::try_from(bytes).map_err(|_| CuckooError::TooLarge)?;
        let words = Words::zeroed(bytes.div_ceil(8)).map_err(CuckooError::from)?;
        Ok(Self { words, len, _f: PhantomData })
    }

    /// Number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no slots (never, for a constructed filter).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the slots in the stored format.
    pub fn byte_len(&self) -> u64 {
        self.len as u64 * F::BYTES as u64
    }

    /// The slots.
    #[inline(always)]
    pub fn as_slice(&self) -> &[F] {
        // SAFETY: `words` owns at least `len × size_of::<F>()` initialised bytes (`zeroed`
        // allocated `ceil(len × BYTES / 8)` words and `len` never changes). `F` is u8, u16 or
        // u32 (the trait is sealed): no padding, every bit pattern is a valid value, and its
        // alignment (≤ 4) divides u64's, so the words' pointer is aligned for `F`. The slice
        // borrows `self`, so the memory outlives it and is not written meanwhile.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<F>(), self.len) }
    }

    /// The slots, mutably.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [F] {
        // SAFETY: as in `as_slice`; the slice borrows `self` mutably, so it is the only access
        // to the words while it lives, and any `F` value written is a valid u64 bit pattern.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<F>(), self.len) }
    }

    /// The word holding byte `byte` of the array (for prefetching its cache line).
    #[inline(always)]
    pub fn word_of_byte(&self, byte: usize) -> &u64 {
        let w = &self.words;
        &w[(byte / 8).min(w.len().saturating_sub(1))]
    }

    /// Hints the CPU to load the cache line of slot `index`.
    #[inline(always)]
    pub fn prefetch(&self, index: usize) {
        if !self.words.is_empty() {
            mem::prefetch(self.word_of_byte(index * F::BYTES));
        }
    }

    /// The slots' memory as bytes: on a little-endian target, the stored format itself.
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: the words own at least `len × BYTES` initialised bytes (see `as_slice`), u8
        // needs no alignment, and the slice borrows `self` immutably.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len * F::BYTES) }
    }

    /// The slots' memory as bytes, mutably.
    #[inline]
    fn as_mut_bytes(&mut self) -> &mut [u8] {
        let n = self.len * F::BYTES;
        // SAFETY: as in `as_bytes`; the slice borrows `self` mutably (the only access while it
        // lives), and any bytes written make valid slots (every bit pattern of u8/u16/u32 is).
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), n) }
    }

    /// Bytes `[offset, offset + len)` of the stored format; the range must lie inside.
    pub fn read_bytes(&self, offset: u64, len: u64) -> Cow<'_, [u8]> {
        let (start, end) = (offset as usize, (offset + len) as usize);
        if F::BYTES == 1 || cfg!(target_endian = "little") {
            return Cow::Borrowed(&self.as_bytes()[start..end]);
        }
        let mut out = Vec::with_capacity(end - start);
        let mut buf = [0u8; 4];
        for byte in start..end {
            self.as_slice()[byte / F::BYTES].write_le(&mut buf[..F::BYTES]);
            out.push(buf[byte % F::BYTES]);
        }
        Cow::Owned(out)
    }

    /// All the bytes of the stored format.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        self.read_bytes(0, self.byte_len())
    }

    /// Writes `data` at byte `offset` of the stored format; refuses (changing nothing) a range
    /// that does not lie inside.
    pub fn write_bytes(&mut self, offset: u64, data: &[u8]) -> Result<(), CuckooError> {
        let end = offset.checked_add(data.len() as u64).ok_or(CuckooError::ChunkTooBig)?;
        if end > self.byte_len() {
            return Err(CuckooError::ChunkTooBig);
        }
        let start = offset as usize;
        if F::BYTES == 1 || cfg!(target_endian = "little") {
            self.as_mut_bytes()[start..start + data.len()].copy_from_slice(data);
            return Ok(());
        }
        let slots = self.as_mut_slice();
        let mut buf = [0u8; 4];
        for (i, &b) in data.iter().enumerate() {
            let byte = start + i;
            let slot = &mut slots[byte / F::BYTES];
            slot.write_le(&mut buf[..F::BYTES]);
            buf[byte % F::BYTES] = b;
            *slot = F::read_le(&buf[..F::BYTES]);
        }
        Ok(())
    }

    /// Lets `mv` move the array (active defragmentation).
    ///
    /// # Safety
    /// `mv` must keep the contract of [`mem::Mover`].
    pub unsafe fn relocate(&mut self, mv: &mut mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`.
        unsafe { self.words.relocate(mv) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_start_empty_and_round_trip_bytes() {
        let mut s = Slots::<u16>::zeroed(5).unwrap();
        assert_eq!(s.as_slice(), &[0; 5]);
        s.as_mut_slice()[1] = 0x0201;
        s.as_mut_slice()[4] = 0xfffe;
        assert_eq!(&*s.bytes(), &[0, 0, 1, 2, 0, 0, 0, 0, 0xfe, 0xff]);
        let mut t = Slots::<u16>::zeroed(5).unwrap();
        t.write_bytes(3, &[2, 0, 0]).unwrap();
        t.write_bytes(2, &[1]).unwrap();
        t.write_bytes(8, &[0xfe, 0xff]).unwrap();
        assert_eq!(s, t);
        assert_eq!(t.write_bytes(9, &[0, 0]), Err(CuckooError::ChunkTooBig));
        assert_eq!(t.write_bytes(u64::MAX, &[0]), Err(CuckooError::ChunkTooBig));
        assert_eq!(&*t.read_bytes(2, 2), &[1, 2]);
    }

    #[test]
    fn byte_slots_are_their_bytes() {
        let mut s = Slots::<u8>::zeroed(3).unwrap();
        s.write_bytes(0, &[7, 8, 9]).unwrap();
        assert_eq!(s.as_slice(), &[7, 8, 9]);
        assert_eq!(&*s.bytes(), &[7, 8, 9]);
        assert!(Slots::<u32>::zeroed(u64::MAX).is_err());
    }
}
