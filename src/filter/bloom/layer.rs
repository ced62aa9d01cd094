//! One Bloom layer: a bit array sized for `capacity` items at one error rate, and the number of
//! items added to it. A counting layer has a counter of 4 or 8 bits where a plain layer has a
//! bit ([`Rule::Counting`], [`super::counting`]).

use super::bits::BitArray;
use super::counters::{self, Width};
use super::params::{LayerSize, RbLayerSize, layer_size};
use crate::filter::FilterError;
use crate::filter::masks::BLOCK_BITS;

/// How a layer turns an item's hash into bit positions: part of the data, like the hash scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Native layers: the chain's probe sequence (scheme 1's enhanced double hashing or scheme
    /// 5's curved one), multiply-shift into `[0, bits)` ([`ItemHash::probes_in`](crate::filter::hash::ItemHash::probes_in)).
    Reduce,
    /// RedisBloom layers sized without rounding (`NOROUND`): `(a + i·b) mod bits`. RedisBloom
    /// 2.2.0–2.2.14 rounded such layers up to whole bytes, not 64-bit words: the array here is
    /// rounded up to a word, and the payload is how many bytes of it are padding (0–7), which
    /// are not part of the layer (its [`Layer::len_bits`] and [`Layer::bytes`] leave them out).
    Modulo(u8),
    /// RedisBloom layers sized to a power of two: `(a + i·b) mod 2^n2`, `2^n2 ≤ bits` (below 64
    /// bits RedisBloom still allocates 8 bytes; positions stay below `2^n2`).
    Pow2(u8),
    /// Native counting layers: the positions of [`Rule::Reduce`], each a counter of this many
    /// bits (4 or 8) in an array that many times larger ([`super::counting`]).
    Counting(Width),
    /// Native blocked layers ([`Layout::Blocked`](super::params::Layout::Blocked)): an item's
    /// hash picks one block of 512 bits (64 bytes, 8 words, never across a segment), and every
    /// one of its probes is a bit of that block ([`super::kernel::Blocked`]).
    Blocked,
}

impl Rule {
    /// The modulus of positions for a layer of `bits` bits (as [`Layer::len_bits`] counts).
    #[inline]
    pub fn modulus(self, bits: u64) -> u64 {
        match self {
            Rule::Pow2(n2) => 1u64 << n2,
            Rule::Reduce | Rule::Modulo(_) | Rule::Counting(_) | Rule::Blocked => bits,
        }
    }

    /// RedisBloom's `n2` field for a layer with this rule.
    pub fn n2(self) -> u8 {
        match self {
            Rule::Pow2(n2) => n2,
            Rule::Reduce | Rule::Modulo(_) | Rule::Counting(_) | Rule::Blocked => 0,
        }
    }
}

/// What a bit array handed to a layer holds, so its set-bit counts are known without a scan
/// where they can be: a fresh array (just allocated, all zero) counts 0; a loaded one is
/// counted, unless its counts follow in the stream. Counting a fresh array would read (and
/// fault in) every page of it: a LOADCHUNK header of a 1 GiB filter would touch 1 GiB before
/// the first chunk arrives; counting an RDB value whose counts were saved would read the
/// whole filter once more after the load (about 0.1 s per GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    /// Bits from outside (RDB, RESTORE, a test) without their counts: counted.
    Loaded,
    /// A zeroed array straight from `BitArray::new`: nothing set.
    Fresh,
    /// Bits from outside whose counts the loader reads next and sets with
    /// [`Chain::set_loaded_counts`](super::Chain::set_loaded_counts): 0 until then.
    Counted,
}

/// One fixed-size Bloom filter inside a chain.
///
/// Only what the hot paths read is stored — capacity, probe count, item count, the number of
/// set bits and the bits (whose length is the bit count). The error rate and bits per entry
/// follow from the chain's parameters and the layer's position
/// ([`Chain::layer_size`](super::Chain::layer_size)); a counting chain keeps the count of its
/// saturated counters itself ([`Chain::saturated`](super::Chain::saturated)). This keeps a
/// layer at 48 bytes, part of every filter's fixed memory (RedisBloom's `SBLink` is 64).
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    pub(super) capacity: u64,
    pub(super) items: u64,
    /// Bits set in `bits`: kept as adds set them (the kernels report how many they flipped),
    /// counted when bits arrive from outside (loads of encodings 512 and 513, chunks), or read from
    /// the value (encoding 514: possible, not checked against the bits; read it through
    /// [`Layer::ones`], which bounds it), so `BF.STATS` reads a layer's fill without a scan.
    /// In a counting layer: non-zero counters.
    pub(super) ones: u64,
    pub(super) hashes: u32,
    pub(super) rule: Rule,
    /// For RedisBloom layers: this layer's error is the chain's first layer error × 0.5 to the
    /// power `halvings` (RedisBloom stores each layer's error; every error it ever made is one of
    /// these). 0 and unused for native layers, whose error follows from their position.
    pub(super) halvings: u16,
    pub(super) bits: BitArray,
}

// Part of every filter's fixed memory: at most RedisBloom's `SBLink` (64) less 16.
const _: () = assert!(std::mem::size_of::<Layer>() <= 48);

impl Layer {
    /// Lets `mv` move the layer's bit array (active defragmentation).
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`.
        unsafe { self.bits.relocate(mv) }
    }

    /// An empty layer for `capacity` items at `error`.
    pub fn new(capacity: u64, error: f64) -> Result<Self, FilterError> {
        Self::new_counting(&layer_size(capacity, error)?, 0)
    }

    /// An empty layer of `size` with counters of `width` bits (4 or 8), or plain bits when
    /// `width` is 0.
    #[inline]
    pub fn new_counting(size: &LayerSize, width: Width) -> Result<Self, FilterError> {
        let bits = BitArray::new(counters::array_bits(size.bits, width)?)?;
        Self::from_parts(*size, 0, bits, width, Contents::Fresh)
    }

    /// An empty RedisBloom layer of `size`, `halvings` times tighter than the chain's first.
    pub fn new_redisbloom(size: &RbLayerSize, halvings: u16) -> Result<Self, FilterError> {
        let bits = BitArray::new(array_bits(size.bits))?;
        Self::from_redisbloom(size, halvings, 0, bits, Contents::Fresh)
    }

    /// A RedisBloom layer rebuilt from stored parts: `size.bits` must be a positive multiple
    /// of 8, `bits` must have it rounded up to a multiple of 64 ([`array_bits`]), the position
    /// modulus must not exceed it, and `items` must not exceed the capacity.
    pub fn from_redisbloom(
        size: &RbLayerSize,
        halvings: u16,
        items: u64,
        bits: BitArray,
        contents: Contents,
    ) -> Result<Self, FilterError> {
        if size.bits == 0 || size.bits % 8 != 0 || bits.len_bits() != array_bits(size.bits) {
            return Err(FilterError::BadData);
        }
        let pad = ((bits.len_bits() - size.bits) / 8) as u8;
        let rule = if size.n2 == 0 { Rule::Modulo(pad) } else { Rule::Pow2(size.n2) };
        if size.n2 >= 64 || rule.modulus(size.bits) > size.bits || items > size.capacity {
            return Err(FilterError::BadData);
        }
        if pad != 0 && size.n2 != 0 {
            return Err(FilterError::BadData);
        }
        let ones = match contents {
            Contents::Loaded => bits.count_ones(),
            Contents::Fresh | Contents::Counted => 0,
        };
        let capacity = size.capacity;
        Ok(Self { capacity, items, ones, hashes: size.hashes, rule, halvings, bits })
    }

    /// An empty blocked layer of `size` ([`Rule::Blocked`]).
    pub fn new_blocked(size: &LayerSize) -> Result<Self, FilterError> {
        let bits = BitArray::new(size.bits)?;
        Self::from_blocked(*size, 0, bits, Contents::Fresh)
    }

    /// A blocked layer rebuilt from stored parts: `size.bits` must be a positive number of
    /// whole blocks, `bits` exactly that long, and `items` must not exceed the capacity.
    pub fn from_blocked(
        size: LayerSize,
        items: u64,
        bits: BitArray,
        contents: Contents,
    ) -> Result<Self, FilterError> {
        if size.bits == 0
            || size.bits % BLOCK_BITS != 0
            || bits.len_bits() != size.bits
            || items > size.capacity
        {
            return Err(FilterError::BadData);
        }
        let ones = match contents {
            Contents::Loaded => bits.count_ones(),
            Contents::Fresh | Contents::Counted => 0,
        };
        let (capacity, hashes) = (size.capacity, size.hashes);
        let rule = Rule::Blocked;
        Ok(Self { capacity, items, ones, hashes, rule, halvings: 0, bits })
    }

    /// How positions are computed.
    #[inline]
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// See the field: the error is the first layer's × 0.5^halvings (RedisBloom layers).
    pub fn halvings(&self) -> u16 {
        self.halvings
    }

    /// A layer rebuilt from stored parts, with counters of `width` bits (0: plain bits). `bits`
    /// must have the length the sizing gives (× `width` for counters), `items` must not exceed
    /// the capacity (plain layers), and `width` must be 0, 4 or 8. Its set bits (non-zero
    /// counters) are counted here for loaded bits, 0 for fresh ones ([`Contents`]). Inlined:
    /// a new layer ([`Layer::new_counting`]) then skips the checks its own sizing makes true
    /// (about 100 instructions of every filter creation, callgrind).
    #[inline]
    pub fn from_parts(
        size: LayerSize,
        items: u64,
        bits: BitArray,
        width: Width,
        contents: Contents,
    ) -> Result<Self, FilterError> {
        let rule = match width {
            0 => Rule::Reduce,
            w if counters::valid_width(u64::from(w)) => Rule::Counting(w),
            _ => return Err(FilterError::BadData),
        };
        // A counting layer counts every add of the items it holds, past its capacity too.
        let items_fit = width != 0 || items <= size.capacity;
        if bits.len_bits() != counters::array_bits(size.bits, width)? || !items_fit {
            return Err(FilterError::BadData);
        }
        let ones = match contents {
            Contents::Loaded => counters::array_counts(&bits, width).0,
            Contents::Fresh | Contents::Counted => 0,
        };
        Ok(Self {
            capacity: size.capacity,
            items,
            ones,
            hashes: size.hashes,
            rule,
            halvings: 0,
            bits,
        })
    }

    /// Bits per counter of a counting layer; 0 for a plain one.
    pub fn width(&self) -> Width {
        match self.rule {
            Rule::Counting(w) => w,
            _ => 0,
        }
    }

    /// Items this layer is built for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Probes per item.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Bits in the layer — the array's, less any padding bytes (see [`Rule::Modulo`]) — or
    /// counters in a counting layer: what its sizing calls bits.
    #[inline]
    pub fn len_bits(&self) -> u64 {
        match self.rule {
            Rule::Modulo(pad) => self.bits.len_bits() - 8 * u64::from(pad),
            Rule::Counting(w) => self.bits.len_bits() / u64::from(w),
            _ => self.bits.len_bits(),
        }
    }

    /// Bytes of the array (of bits or counters), less any padding.
    pub fn bytes(&self) -> u64 {
        match self.rule {
            Rule::Modulo(pad) => self.bits.len_bytes() - u64::from(pad),
            _ => self.bits.len_bytes(),
        }
    }

    /// Items added to this layer.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The bit array.
    pub fn bits(&self) -> &BitArray {
        &self.bits
    }

    /// Bits set (see the field), at most [`Layer::len_bits`]. The field itself can pass that
    /// bound: a loaded value's count is checked only against it, not against the bits
    /// (`Contents::Counted`), so a forged count near the bound grows past it as adds set bits
    /// it took for set. Reading it bounded keeps every count this build writes one its loader
    /// accepts (an RDB it saved always loads again) and a fill at most 1.
    pub fn ones(&self) -> u64 {
        self.ones.min(self.len_bits())
    }

    /// Positions an item's probes range over: the bits, or for RedisBloom's power-of-two
    /// layers `2^n2` of them. The denominator of the layer's fill.
    #[inline]
    pub fn positions(&self) -> u64 {
        self.rule.modulus(self.len_bits())
    }

    /// Overwrites the bytes at `[offset, offset + data.len())` of the array (a chunked
    /// restore), keeping the count of set bits (non-zero counters) right: the range is counted
    /// out before and in after. Returns the saturated counters of the range before and after
    /// (`(0, 0)` in a plain layer), for the chain's count ([`Chain::write_layer_bytes`]).
    ///
    /// [`Chain::write_layer_bytes`]: super::Chain::write_layer_bytes
    pub(super) fn write_bytes(
        &mut self,
        offset: u64,
        data: &[u8],
    ) -> Result<(u64, u64), FilterError> {
        let width = self.width();
        let (mut ones, mut saturated) = (0u64, 0u64);
        // One call maps the pages, instead of a read fault and then a write fault per page.
        self.bits.prefault_bytes(offset, data.len() as u64);
        if width == 0 {
            // Plain bits: count out, copy and count in, in one pass.
            let (before, after) = self.bits.replace_bytes(offset, data)?;
            // Saturating, not asserted: the count may be one a loaded value carried
            // (`Contents::Counted`), possible but not checked against the bits.
            self.ones = self.ones.saturating_sub(before) + after;
            return Ok((0, 0));
        }
        self.bits.read_bytes(offset, data.len() as u64, |b| {
            let (n, s) = counters::byte_counts(b, width);
            ones += n;
            saturated += s;
        })?;
        self.bits.write_bytes(offset, data)?;
        let (n, s) = counters::byte_counts(data, width);
        self.ones = self.ones.saturating_sub(ones) + n;
        Ok((saturated, s))
    }

    /// Whether the layer holds as many items as it was sized for.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.items >= self.capacity
    }
}

/// The bits of the array that holds a RedisBloom layer of `bits` bits: rounded up to whole
/// 64-bit words.
pub fn array_bits(bits: u64) -> u64 {
    bits.div_ceil(64) * 64
}
