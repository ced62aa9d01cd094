//! Typed fields: the one vocabulary every byte format is read and written in. An RDB file
//! (Redis' typed calls, `module/types/io.rs`) and a byte buffer (little-endian, this file) are
//! both a [`FieldWriter`] and a [`FieldReader`], so each format (`codec.rs`, `redisbloom/`) is
//! written once for both. Depends on nothing but the core's error and word types.

use super::mem::Words;
use crate::filter::FilterError;

/// A sink for typed fields (an RDB file, or a byte buffer).
pub trait FieldWriter {
    /// Writes an unsigned integer.
    fn u64(&mut self, v: u64);
    /// Writes a double.
    fn f64(&mut self, v: f64);
    /// Writes a length-delimited byte string.
    fn bytes(&mut self, b: &[u8]);
}

/// A source of typed fields. Every read can fail (short or corrupt input).
pub trait FieldReader {
    /// A byte string read from the source.
    type Bytes: AsRef<[u8]>;
    /// Reads an unsigned integer.
    fn u64(&mut self) -> Result<u64, FilterError>;
    /// Reads a double.
    fn f64(&mut self) -> Result<f64, FilterError>;
    /// Reads a length-delimited byte string.
    fn bytes(&mut self) -> Result<Self::Bytes, FilterError>;

    /// Reads a byte string of exactly `n` little-endian words (a bit-array segment) as words.
    /// The default copies; a reader whose buffers can be kept as they are (the RDB loader)
    /// overrides it to hand its buffer over without a copy.
    fn words(&mut self, n: u64) -> Result<Words, FilterError> {
        let bytes = self.bytes()?;
        if bytes.as_ref().len() as u64 != n.checked_mul(8).ok_or(FilterError::BadData)? {
            return Err(FilterError::BadData);
        }
        Words::from_le_bytes(bytes.as_ref())
    }
}

/// Little-endian fields in a byte buffer; `bytes` are prefixed with a u64 length.
impl FieldWriter for Vec<u8> {
    fn u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.extend_from_slice(b);
    }
}

/// Reads the little-endian fields of [`FieldWriter for Vec<u8>`] from a slice.
#[derive(Debug)]
pub struct SliceReader<'a> {
    rest: &'a [u8],
}

impl<'a> SliceReader<'a> {
    /// Reads from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { rest: data }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FilterError> {
        if self.rest.len() < n {
            return Err(FilterError::BadData);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
}

impl<'a> FieldReader for SliceReader<'a> {
    type Bytes = &'a [u8];
    fn u64(&mut self) -> Result<u64, FilterError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| FilterError::BadData)?))
    }
    fn f64(&mut self) -> Result<f64, FilterError> {
        self.u64().map(f64::from_bits)
    }
    fn bytes(&mut self) -> Result<&'a [u8], FilterError> {
        let len = usize::try_from(self.u64()?).map_err(|_| FilterError::BadData)?;
        self.take(len)
    }
}
