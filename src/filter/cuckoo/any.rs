//! [`CuckooFilter`]: a filter of any fingerprint width, what the Redis glue stores. Each
//! method matches the width once and runs the monomorphic code of [`FixedWidthCuckoo<F>`]; batches are
//! dispatched once per batch, so no probe asks which width it is in.

use std::borrow::Cow;

use super::codec::{Header, RDB_ENCODING_VERSION, REDISBLOOM_ENCODING_VERSION, ScanStep};
use super::filter::{CuckooStats, FixedWidthCuckoo, Info, Insert, InsertSink};
use super::fingerprint::FingerprintWidth;
use super::params::CuckooParams;
use crate::filter::FilterError;
use crate::filter::fields::{FieldReader, FieldWriter};
use crate::filter::guard::AllocGuard;

/// A cuckoo filter with 8-, 16- or 32-bit fingerprints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CuckooFilter {
    /// 8-bit fingerprints: RedisBloom's.
    W8(FixedWidthCuckoo<u8>),
    /// 16-bit fingerprints.
    W16(FixedWidthCuckoo<u16>),
    /// 32-bit fingerprints.
    W32(FixedWidthCuckoo<u32>),
}

/// Runs `$body` with `$c` bound to the inner `FixedWidthCuckoo<F>` of whichever width `$self` is.
macro_rules! each {
    ($self:expr, $c:ident => $body:expr) => {
        match $self {
            CuckooFilter::W8($c) => $body,
            CuckooFilter::W16($c) => $body,
            CuckooFilter::W32($c) => $body,
        }
    };
}

impl CuckooFilter {
    /// `CF.RESERVE` (and the auto-creation of `CF.ADD`/`CF.INSERT`): one empty sub-filter,
    /// after `guard` admitted its size.
    pub fn new(
        params: &CuckooParams,
        width: FingerprintWidth,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        Ok(match width {
            FingerprintWidth::W8 => Self::W8(FixedWidthCuckoo::new(params, guard)?),
            FingerprintWidth::W16 => Self::W16(FixedWidthCuckoo::new(params, guard)?),
            FingerprintWidth::W32 => Self::W32(FixedWidthCuckoo::new(params, guard)?),
        })
    }

    /// The fingerprint width.
    pub fn width(&self) -> FingerprintWidth {
        match self {
            Self::W8(_) => FingerprintWidth::W8,
            Self::W16(_) => FingerprintWidth::W16,
            Self::W32(_) => FingerprintWidth::W32,
        }
    }

    /// `CF.ADD` / `CF.ADDNX` (`nx`) of one item. `MaxExpansions` when the filter already has
    /// `max_filters` sub-filters (checked first, as RedisBloom does).
    pub fn add(
        &mut self,
        item: &[u8],
        nx: bool,
        max_filters: u16,
        guard: &dyn AllocGuard,
    ) -> Result<Insert, FilterError> {
        each!(self, c => c.add(item, nx, max_filters, guard))
    }

    /// `CF.INSERT` / `CF.INSERTNX` (`nx`): see [`FixedWidthCuckoo::insert_many`].
    pub fn insert_many<T: AsRef<[u8]>, S: InsertSink>(
        &mut self,
        items: &[T],
        nx: bool,
        max_filters: u16,
        guard: &dyn AllocGuard,
        out: &mut S,
    ) -> Result<(), FilterError> {
        each!(self, c => c.insert_many(items, nx, max_filters, guard, out))
    }

    /// `CF.EXISTS`.
    pub fn contains(&self, item: &[u8]) -> bool {
        each!(self, c => c.contains(item))
    }

    /// `CF.MEXISTS`: appends each answer to `out`.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        each!(self, c => c.contains_many(items, out))
    }

    /// `CF.COUNT`.
    pub fn count(&self, item: &[u8]) -> u64 {
        each!(self, c => c.count(item))
    }

    /// `CF.DEL`: whether a copy of the item's fingerprint was removed.
    pub fn delete(&mut self, item: &[u8]) -> bool {
        each!(self, c => c.delete(item))
    }

    /// `CF.COMPACT` (`cont` true, as RedisBloom's command calls it).
    pub fn compact(&mut self, cont: bool) {
        each!(self, c => c.compact(cont))
    }

    /// `CF.INFO`.
    pub fn info(&self) -> Info {
        each!(self, c => c.info())
    }

    /// `CF.STATS`: see [`FixedWidthCuckoo::stats`].
    pub fn stats(&self, max_filters: u16, guard: &dyn AllocGuard) -> CuckooStats {
        each!(self, c => c.stats(max_filters, guard))
    }

    /// `CF.DEBUG`.
    pub fn debug_string(&self) -> String {
        each!(self, c => c.debug_string())
    }

    /// `MEMORY USAGE` (and `CF.INFO Size`).
    pub fn memory_usage(&self) -> u64 {
        each!(self, c => c.memory_usage())
    }

    /// Fingerprints stored.
    pub fn items(&self) -> u64 {
        each!(self, c => c.items())
    }

    /// The owner's mark ([`FixedWidthCuckoo::marked`]).
    pub fn marked(&self) -> bool {
        each!(self, c => c.marked())
    }

    /// Sets the owner's mark.
    pub fn set_mark(&mut self, mark: bool) {
        each!(self, c => c.set_mark(mark))
    }

    /// The `CF.SCANDUMP key 0` header.
    pub fn header(&self) -> Header {
        each!(self, c => c.header())
    }

    /// `CF.SCANDUMP key it`.
    pub fn scandump(&self, it: u64) -> ScanStep<'_> {
        each!(self, c => c.scandump(it))
    }

    /// The chunk at iterator `it` ≥ 1, whatever the item count (the AOF rewrite: header, then
    /// chunks from iterator 1 until `None`).
    pub fn chunk(&self, it: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        each!(self, c => c.chunk(it))
    }

    /// `CF.LOADCHUNK key it data` for `it ≥ 2` (iterator 1 is the header: [`Header::parse`]).
    pub fn load_chunk(&mut self, it: u64, data: &[u8]) -> Result<(), FilterError> {
        each!(self, c => c.load_chunk(it, data))
    }

    /// `DEBUG DIGEST-VALUE`: feeds every byte that makes the filter.
    pub fn digest(&self, feed: impl FnMut(&[u8])) {
        each!(self, c => c.digest(feed))
    }

    /// Writes this module's RDB fields (encoding version
    /// [`RDB_ENCODING_VERSION`]).
    pub fn write_rdb(&self, w: &mut impl FieldWriter) {
        each!(self, c => c.write_rdb(w))
    }

    /// Lets `mv` move every allocation of the filter (active defragmentation). The filter is unchanged: the
    /// same slots at new addresses.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`, which `FixedWidthCuckoo::relocate` requires.
        each!(self, c => unsafe { c.relocate(mv) })
    }

    /// Writes RedisBloom's RDB fields (encoding version 4); 8-bit fingerprints only.
    pub fn write_rdb_redisbloom(&self, w: &mut impl FieldWriter) -> Result<(), FilterError> {
        each!(self, c => c.write_rdb_redisbloom(w))
    }
}

impl CuckooFilter {
    /// Reads an RDB value of `MBbloomCF` written with encoding version `encver`: RedisBloom's
    /// 4 or this module's [`RDB_ENCODING_VERSION`]. Nothing is allocated before the fields
    /// that size it are validated and `guard` admitted the size.
    pub fn read_rdb(
        r: &mut impl FieldReader,
        encver: i32,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        Self::read_rdb_capped(r, encver, guard, super::params::MAX_FILTERS)
    }

    /// [`read_rdb`](Self::read_rdb), refusing a value of more than `max_filters` sub-filters
    /// with `MaxExpansions` before anything is allocated (a client's `RESTORE` is capped by
    /// `cf-max-expansions`, as a `CF.LOADCHUNK` header is: 65,535 tiny sub-filters would make
    /// every later compaction quadratic in their number).
    pub fn read_rdb_capped(
        r: &mut impl FieldReader,
        encver: i32,
        guard: &dyn AllocGuard,
        max_filters: u16,
    ) -> Result<Self, FilterError> {
        let m = max_filters;
        match encver {
            REDISBLOOM_ENCODING_VERSION => {
                Ok(Self::W8(FixedWidthCuckoo::read_fields(r, guard, false, m)?))
            }
            RDB_ENCODING_VERSION => {
                let width = FingerprintWidth::from_bits(r.u64()?).ok_or(FilterError::BadData)?;
                Ok(match width {
                    FingerprintWidth::W8 => {
                        Self::W8(FixedWidthCuckoo::read_fields(r, guard, true, m)?)
                    }
                    FingerprintWidth::W16 => {
                        Self::W16(FixedWidthCuckoo::read_fields(r, guard, true, m)?)
                    }
                    FingerprintWidth::W32 => {
                        Self::W32(FixedWidthCuckoo::read_fields(r, guard, true, m)?)
                    }
                })
            }
            _ => Err(FilterError::UnsupportedEncoding(encver)),
        }
    }

    /// Parses a `CF.LOADCHUNK key 1` header (either format).
    pub fn parse_header(data: &[u8]) -> Result<Header, FilterError> {
        Header::parse(data)
    }
}

impl Header {
    /// The empty filter the header describes, after `guard` admitted its size.
    pub fn allocate(&self, guard: &dyn AllocGuard) -> Result<CuckooFilter, FilterError> {
        Ok(match self.width {
            FingerprintWidth::W8 => {
                CuckooFilter::W8(FixedWidthCuckoo::allocate(&self.shape, guard)?)
            }
            FingerprintWidth::W16 => {
                CuckooFilter::W16(FixedWidthCuckoo::allocate(&self.shape, guard)?)
            }
            FingerprintWidth::W32 => {
                CuckooFilter::W32(FixedWidthCuckoo::allocate(&self.shape, guard)?)
            }
        })
    }
}
