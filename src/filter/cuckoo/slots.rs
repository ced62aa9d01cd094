//! The slot array of a sub-filter: fingerprints of type `F`, stored in the core's zeroed word
//! allocation ([`Words`]: `calloc`, so a fresh filter is lazily zeroed pages; huge pages for
//! large arrays; a refused allocation is an error, never an abort; movable by active
//! defragmentation).
//!
//! [`Slots`] is only the allocation (16 bytes): its slot count is derived from the filter's
//! shape (buckets × bucket size), which the filter passes in, so a one-sub-filter filter stores
//! no per-sub-filter field but the pointer.
//!
//! The stored byte order is each slot little-endian, slot after slot: on a little-endian
//! machine that is the memory itself, which is what `CF.SCANDUMP` chunks and RDB strings hold
//! (RedisBloom's 8-bit slots are bytes, so its order is the same).

use std::borrow::Cow;
use std::marker::PhantomData;

use super::fingerprint::Fingerprint;
use crate::filter::FilterError;
use crate::filter::mem::{self, Words};

/// The allocation of a sub-filter's slots, zeroed at creation; the owner knows its length.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Slots<F> {
    /// At least `len × F::BYTES` bytes (rounded up to whole words).
    words: Words,
    _f: PhantomData<F>,
}

impl<F> std::fmt::Debug for Slots<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slots({} words)", self.words.len())
    }
}

impl<F: Fingerprint> Slots<F> {
    /// `len` empty slots; `TooLarge` if the size does not fit the address space,
    /// `OutOfMemory` if the allocator refuses.
    pub fn zeroed(len: u64) -> Result<Self, FilterError> {
        let bytes = len.checked_mul(F::BYTES as u64).ok_or(FilterError::TooLarge)?;
        let _ = usize::try_from(len).map_err(|_| FilterError::TooLarge)?;
        let _ = isize::try_from(bytes).map_err(|_| FilterError::TooLarge)?;
        let words = Words::zeroed(bytes.div_ceil(8))?;
        Ok(Self { words, _f: PhantomData })
    }

    /// Whether the allocation holds `len` slots.
    #[inline(always)]
    pub fn holds(&self, len: usize) -> bool {
        len.checked_mul(F::BYTES).is_some_and(|b| b <= self.words.len() * 8)
    }

    /// The first `len` slots. Panics if the allocation holds fewer (the filter's shape and its
    /// allocations disagree: a bug, never data).
    #[inline(always)]
    pub fn as_slice(&self, len: usize) -> &[F] {
        assert!(self.holds(len), "cuckoo slots: {len} slots asked of {} words", self.words.len());
        // SAFETY: `words` owns at least `len × size_of::<F>()` initialised bytes (checked just
        // above). `F` is u8, u16 or u32 (the trait is sealed): no padding, every bit pattern is
        // a valid value, and its alignment (≤ 4) divides u64's, so the words' pointer is
        // aligned for `F`. The slice borrows `self`, so the memory outlives it and is not
        // written meanwhile.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<F>(), len) }
    }

    /// The first `len` slots, unchecked: the hot paths of a filter whose construction checked
    /// that each allocation holds its sub-filter's slots.
    ///
    /// # Safety
    /// The allocation holds at least `len` slots ([`Slots::holds`]).
    #[inline(always)]
    pub unsafe fn as_slice_unchecked(&self, len: usize) -> &[F] {
        debug_assert!(self.holds(len));
        // SAFETY: the caller's contract gives `len × size_of::<F>()` owned initialised bytes;
        // the rest as in `as_slice`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<F>(), len) }
    }

    /// The first `len` slots, mutably, unchecked.
    ///
    /// # Safety
    /// As for [`Slots::as_slice_unchecked`].
    #[inline(always)]
    pub unsafe fn as_mut_slice_unchecked(&mut self, len: usize) -> &mut [F] {
        debug_assert!(self.holds(len));
        // SAFETY: as in `as_slice_unchecked`; the slice borrows `self` mutably, so it is the
        // only access to the words while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<F>(), len) }
    }

    /// The first `len` slots, mutably. Panics as [`Slots::as_slice`] does.
    #[inline(always)]
    pub fn as_mut_slice(&mut self, len: usize) -> &mut [F] {
        assert!(self.holds(len), "cuckoo slots: {len} slots asked of {} words", self.words.len());
        // SAFETY: as in `as_slice`; the slice borrows `self` mutably, so it is the only access
        // to the words while it lives, and any `F` value written is a valid u64 bit pattern.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<F>(), len) }
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

/// Bytes of `slots` in the stored format.
#[inline]
pub fn byte_len<F: Fingerprint>(slots: &[F]) -> u64 {
    slots.len() as u64 * F::BYTES as u64
}

/// The slots' memory as bytes: on a little-endian target, the stored format itself.
#[inline(always)]
pub(super) fn as_bytes<F: Fingerprint>(slots: &[F]) -> &[u8] {
    // SAFETY: the slice's `len × BYTES` bytes are initialised integers without padding (the
    // trait is sealed to u8/u16/u32), u8 needs no alignment, and the result borrows `slots`.
    unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<u8>(), std::mem::size_of_val(slots)) }
}

/// The slots' memory as bytes, mutably.
#[inline]
fn as_mut_bytes<F: Fingerprint>(slots: &mut [F]) -> &mut [u8] {
    let n = std::mem::size_of_val(slots);
    // SAFETY: as in `as_bytes`; the result borrows `slots` mutably (the only access while it
    // lives), and any bytes written make valid slots (every bit pattern of u8/u16/u32 is).
    unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast::<u8>(), n) }
}

/// Bytes `[offset, offset + len)` of the stored format of `slots`; the range must lie inside.
pub fn read_bytes<F: Fingerprint>(slots: &[F], offset: u64, len: u64) -> Cow<'_, [u8]> {
    let (start, end) = (offset as usize, (offset + len) as usize);
    if F::BYTES == 1 || cfg!(target_endian = "little") {
        return Cow::Borrowed(&as_bytes(slots)[start..end]);
    }
    let mut out = Vec::with_capacity(end - start);
    let mut buf = [0u8; 4];
    for byte in start..end {
        slots[byte / F::BYTES].write_le(&mut buf[..F::BYTES]);
        out.push(buf[byte % F::BYTES]);
    }
    Cow::Owned(out)
}

/// All the bytes of the stored format of `slots`.
pub fn bytes<F: Fingerprint>(slots: &[F]) -> Cow<'_, [u8]> {
    read_bytes(slots, 0, byte_len(slots))
}

/// Writes `data` at byte `offset` of the stored format of `slots`; refuses (changing nothing)
/// a range that does not lie inside.
pub fn write_bytes<F: Fingerprint>(
    slots: &mut [F],
    offset: u64,
    data: &[u8],
) -> Result<(), FilterError> {
    let end = offset.checked_add(data.len() as u64).ok_or(FilterError::ChunkTooBig)?;
    if end > byte_len(slots) {
        return Err(FilterError::ChunkTooBig);
    }
    let start = offset as usize;
    if F::BYTES == 1 || cfg!(target_endian = "little") {
        as_mut_bytes(slots)[start..start + data.len()].copy_from_slice(data);
        return Ok(());
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_start_empty_and_round_trip_bytes() {
        let mut a = Slots::<u16>::zeroed(5).unwrap();
        let s = a.as_mut_slice(5);
        assert_eq!(s, &[0; 5]);
        s[1] = 0x0201;
        s[4] = 0xfffe;
        assert_eq!(&*bytes(s), &[0, 0, 1, 2, 0, 0, 0, 0, 0xfe, 0xff]);
        let mut b = Slots::<u16>::zeroed(5).unwrap();
        let t = b.as_mut_slice(5);
        write_bytes(t, 3, &[2, 0, 0]).unwrap();
        write_bytes(t, 2, &[1]).unwrap();
        write_bytes(t, 8, &[0xfe, 0xff]).unwrap();
        assert_eq!(a.as_slice(5), b.as_slice(5));
        let t = b.as_mut_slice(5);
        assert_eq!(write_bytes(t, 9, &[0, 0]), Err(FilterError::ChunkTooBig));
        assert_eq!(write_bytes(t, u64::MAX, &[0]), Err(FilterError::ChunkTooBig));
        assert_eq!(&*read_bytes(t, 2, 2), &[1, 2]);
    }

    #[test]
    fn byte_slots_are_their_bytes() {
        let mut a = Slots::<u8>::zeroed(3).unwrap();
        let s = a.as_mut_slice(3);
        write_bytes(s, 0, &[7, 8, 9]).unwrap();
        assert_eq!(s, &[7, 8, 9]);
        assert_eq!(&*bytes(&*s), &[7, 8, 9]);
        assert!(Slots::<u32>::zeroed(u64::MAX).is_err());
    }

    #[test]
    #[should_panic(expected = "cuckoo slots")]
    fn asking_more_slots_than_allocated_panics() {
        let a = Slots::<u16>::zeroed(4).unwrap();
        let _ = a.as_slice(5);
    }
}
