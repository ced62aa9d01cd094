//! The scalable chain: a list of layers, each larger and tighter than the one before.
//!
//! An item is present if any layer says so. A genuinely new item is set in the last layer;
//! when that layer is full, a scaling chain appends a layer with `capacity × expansion` items at
//! half the error, and a nonscaling chain refuses the item. The first layer of a scaling chain
//! gets half the requested error, so the errors of all layers sum to less than the request.

use super::claims::{LayerClaim, check_layers, expected_layer_in, layer_error};
use super::counters::{self, Width};
use super::kind::Kind;
use super::layer::{Layer, Rule};
use super::layers::Layers;
use super::params::{
    ChainParams, LayerSize, Layout, MAX_LAYERS, MAX_RB_LAYERS, RbLayerSize, TIGHTENING,
    bits_per_entry, info_size, layer_size, rb_layer_size,
};
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;
use crate::filter::hash::{HashScheme, ItemHash};

/// A scalable Bloom filter.
///
/// The parameters are stored as flat fields rather than a [`ChainParams`], so the scheme and the
/// flags fit in what would be its padding: with the first layer inline, the chain is 80 bytes.
///
/// A chain in one of RedisBloom's schemes ([`HashScheme::is_redisbloom`]) keeps RedisBloom's
/// layout: its layers carry RedisBloom's position rules and per-layer errors, and new layers are
/// sized as RedisBloom's `bloom_init` sizes them ([`rb_layer_size`]): capacity = the last
/// layer's (possibly rounded-up) capacity × expansion, error = the last layer's × 0.5.
#[derive(Debug, Clone)]
pub struct Chain {
    seed: u64,
    /// The layers: the first inline, so a filter that never grows (most small ones) is one
    /// allocation besides its bits, 80 bytes (RedisBloom's `SBChain` (32) + `SBLink` (64) are
    /// 96); later layers, and a counting chain's count of saturated counters, in one tail
    /// allocation ([`Layers`]).
    pub(super) layers: Layers<Chain>,
    /// The requested error rate (native chains); the first layer's error (RedisBloom chains).
    /// The first layer's capacity, the other parameter, is the first layer's own.
    error: f64,
    /// Growth factor; 0 when nonscaling.
    expansion: u32,
    scheme: HashScheme,
    /// RedisBloom chains: new layers are sized without rounding to a power of two (RedisBloom's
    /// `NOROUND` option).
    noround: bool,
    /// Set while the chain is being restored chunk by chunk (made from a dump header and not
    /// written since): see [`Chain::awaiting_chunks`].
    pub(super) awaiting_chunks: bool,
    /// The kind of every layer ([`Kind::of`] the first layer's rule and the scheme; constructors and loaders
    /// refuse chains whose layers differ), kept so that a call into the chain reads one byte
    /// to choose its kind's code ([`super::kind`]).
    kind: Kind,
}

// The Redis value of every filter, and all a one-layer filter has besides its bits (RedisBloom:
// a 32-byte `SBChain` and a 64-byte `SBLink`).
const _: () = assert!(std::mem::size_of::<Chain>() == 80);

/// Equal filters have equal parameters, scheme, seed and layers; whether a restore is under way
/// is not part of what a filter holds.
impl PartialEq for Chain {
    fn eq(&self, other: &Self) -> bool {
        self.params() == other.params()
            && self.scheme == other.scheme
            && self.noround == other.noround
            && self.seed == other.seed
            && self.layers == other.layers
    }
}

impl Chain {
    /// Lets `mv` move the chain's heap memory — its layer table and its layers' bit arrays —
    /// when the server defragments (the chain itself is moved by its owner). Nothing about the
    /// filter changes: the same bits, at new addresses.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`, passed on to the layers and to each member.
        unsafe {
            self.layers.relocate(mv);
            for member in self.layers.members_mut() {
                member.relocate(mv);
            }
        }
    }

    /// An empty chain with one layer, after asking `guard` for the memory.
    pub fn new(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        if scheme.is_redisbloom() {
            // A new filter keeps this module's limits (the error floor, MAX_HASHES) whatever
            // its scheme: the same parameters are refused with the same error as native ones.
            layer_size(params.capacity, params.first_layer_error())?;
            // As RedisBloom 2.x creates filters: options NOROUND | FORCE64 (| NONSCALING).
            let first = rb_layer_size(params.capacity, params.first_layer_error(), true)?;
            guard.admit(info_size(1, first.bits / 8), first.bits / 8)?;
            let layers = Layers::one(Layer::new_redisbloom(&first, 0)?);
            let params = ChainParams { error: first.error, ..params };
            let mut chain = Self::assemble(params, scheme, 0, layers);
            chain.noround = true;
            return Ok(chain);
        }
        match scheme {
            HashScheme::Xxh3Blocked => Self::new_blocked(params, seed, guard),
            _ => Self::new_standard(params, scheme, seed, 0, guard),
        }
    }

    /// An empty native chain (xxh3-128, [`HashScheme::Xxh3Curved`]) with one layer of counters
    /// of `width` bits (4 or 8; 0 makes a plain chain), after asking `guard` for the memory:
    /// `width` times a plain chain's bytes.
    pub fn new_counting(
        params: ChainParams,
        seed: u64,
        width: Width,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        Self::new_standard(params, HashScheme::Xxh3Curved, seed, width, guard)
    }

    /// [`Chain::new_counting`] in `scheme`, which must be one of standard chains (1 or 5:
    /// [`FilterError::BadParameter`] otherwise).
    pub fn new_standard(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        width: Width,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        if width != 0 && !counters::valid_width(u64::from(width)) {
            return Err(FilterError::BadParameter);
        }
        if !matches!(scheme, HashScheme::Xxh3Enhanced | HashScheme::Xxh3Curved) {
            return Err(FilterError::BadParameter);
        }
        let first = layer_size(params.capacity, params.first_layer_error())?;
        let bytes = array_bytes(&first, width)?;
        guard.admit(info_size(1, bytes), bytes)?;
        let layers = Layers::one(Layer::new_counting(&first, width)?);
        Ok(Self::assemble(params, scheme, seed, layers))
    }

    /// An empty native chain (xxh3-64, [`HashScheme::Xxh3Blocked`]) with one blocked layer ([`Layout::Blocked`]), after asking
    /// `guard` for the memory. Every layer it grows is blocked too.
    pub fn new_blocked(
        params: ChainParams,
        seed: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, FilterError> {
        let first = Layout::Blocked.layer_size(params.capacity, params.first_layer_error())?;
        guard.admit(info_size(1, first.bytes()), first.bytes())?;
        let layers = Layers::one(Layer::new_blocked(&first)?);
        Ok(Self::assemble(params, HashScheme::Xxh3Blocked, seed, layers))
    }

    /// How the chain's layers place probes: [`Layout::Blocked`] for a blocked chain,
    /// [`Layout::Standard`] for every other.
    pub fn layout(&self) -> Layout {
        if self.kind == Kind::Blocked { Layout::Blocked } else { Layout::Standard }
    }

    /// Bits per counter when the chain counts (4 or 8), 0 for a plain chain.
    pub fn counter_width(&self) -> Width {
        self.layers[0].width()
    }

    /// A chain in a RedisBloom scheme rebuilt from stored layers (see `filter::bloom::redisbloom`,
    /// which validates each layer's fields): `expansion` 0 when nonscaling. Checks that the
    /// scheme is RedisBloom's, the first layer has no halvings and the others are full, every
    /// layer follows `noround`, a nonscaling chain has one layer, and the counts add up.
    pub fn from_redisbloom(
        scheme: HashScheme,
        noround: bool,
        expansion: u32,
        first_error: f64,
        layers: Vec<Layer>,
        items: u64,
    ) -> Result<Self, FilterError> {
        if !scheme.is_redisbloom()
            || layers.is_empty()
            || layers.len() > MAX_RB_LAYERS
            || (expansion == 0 && layers.len() != 1)
            || layers[0].halvings() != 0
        {
            return Err(FilterError::BadData);
        }
        let mut sum = 0u64;
        for (i, layer) in layers.iter().enumerate() {
            let pow2 = matches!(layer.rule(), Rule::Pow2(_));
            let native = matches!(layer.rule(), Rule::Reduce | Rule::Counting(_) | Rule::Blocked);
            if native || pow2 == noround {
                return Err(FilterError::BadData);
            }
            if i + 1 < layers.len() && !layer.is_full() {
                return Err(FilterError::BadData);
            }
            sum = sum.checked_add(layer.items()).ok_or(FilterError::BadData)?;
        }
        if sum != items {
            return Err(FilterError::BadData);
        }
        let params = ChainParams { error: first_error, capacity: layers[0].capacity(), expansion };
        let layers = Layers::from_vec(layers).ok_or(FilterError::BadData)?;
        let mut chain = Self::assemble(params, scheme, 0, layers);
        chain.noround = noround;
        Ok(chain)
    }

    /// A copy of the chain without its members ([`super::merged`]).
    pub fn clone_alone(&self) -> Self {
        Self { layers: self.layers.clone_alone(), ..*self }
    }

    /// For RedisBloom chains: whether new layers are sized without power-of-two rounding.
    pub fn noround(&self) -> bool {
        self.noround
    }

    /// A chain rebuilt from stored layers, which must follow [`check_layers`].
    pub fn from_parts(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        layers: Vec<Layer>,
        items: u64,
    ) -> Result<Self, FilterError> {
        Self::from_parts_counted(params, scheme, seed, layers, items, false)
    }

    /// [`Chain::from_parts`]; with `counts_follow`, a counting chain's saturated counters are
    /// not counted here: the loader sets them with [`Chain::set_loaded_counts`].
    pub fn from_parts_counted(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        layers: Vec<Layer>,
        items: u64,
        counts_follow: bool,
    ) -> Result<Self, FilterError> {
        let rule = layers.first().map_or(Rule::Reduce, Layer::rule);
        let layout = if rule == Rule::Blocked { Layout::Blocked } else { Layout::Standard };
        let native = matches!(rule, Rule::Reduce | Rule::Counting(_) | Rule::Blocked);
        if scheme.is_redisbloom() || !native || layers.iter().any(|l| l.rule() != rule) {
            return Err(FilterError::BadData);
        }
        // A blocked chain hashes with xxh3-128 (scheme 1) or xxh3-64; scheme 4 is
        // for blocked chains only, scheme 5 for standard ones only.
        let blocked_scheme = matches!(scheme, HashScheme::Xxh3Enhanced | HashScheme::Xxh3Blocked);
        let standard_scheme = matches!(scheme, HashScheme::Xxh3Enhanced | HashScheme::Xxh3Curved);
        if (layout == Layout::Blocked && !blocked_scheme)
            || (layout != Layout::Blocked && !standard_scheme)
        {
            return Err(FilterError::BadData);
        }
        let counting = matches!(rule, Rule::Counting(_));
        let claims: Vec<LayerClaim> = layers.iter().map(LayerClaim::of).collect();
        check_layers(&params, layout, &claims, items, counting)?;
        // Loaded layers were collected through an iterator of unknown length: the boxed slice
        // drops the spare slots, which would otherwise stay in every loaded filter.
        let layers = Layers::from_vec(layers).ok_or(FilterError::BadData)?;
        let mut chain = Self::assemble(params, scheme, seed, layers);
        if let (Rule::Counting(width), false) = (rule, counts_follow) {
            let saturated =
                chain.layers.iter().map(|l| counters::array_counts(l.bits(), width).1).sum();
            chain.layers.set_saturated(saturated);
        }
        Ok(chain)
    }

    fn assemble(params: ChainParams, scheme: HashScheme, seed: u64, layers: Layers<Chain>) -> Self {
        let ChainParams { error, capacity, expansion } = params;
        debug_assert_eq!(layers.first().capacity(), capacity);
        let kind = Kind::of(layers.first().rule(), scheme.is_curved());
        Self {
            seed,
            layers,
            error,
            expansion,
            scheme,
            noround: false,
            awaiting_chunks: false,
            kind,
        }
    }

    /// The parameters the chain was created with. For a RedisBloom chain, `error` is its first
    /// layer's error rate and `capacity` its first layer's capacity.
    pub fn params(&self) -> ChainParams {
        ChainParams {
            error: self.error,
            capacity: self.layers[0].capacity(),
            expansion: self.expansion,
        }
    }

    /// The error rate of layer `index` (< `layers().len()`).
    pub fn layer_error(&self, index: usize) -> f64 {
        if self.scheme.is_redisbloom() {
            let halvings = self.layers[index].halvings();
            (0..halvings).fold(self.error, |e, _| e * TIGHTENING)
        } else {
            layer_error(&self.params(), index)
        }
    }

    /// Whether the chain was made from a dump header (`BF.LOADCHUNK key 1 <header>`, its bits
    /// still to come in chunks) and has taken no add since. Only such a chain takes data chunks
    /// from clients: a chunk written into any other filter would silently replace its bits.
    /// Not persisted: a restore interrupted by a restart starts again from the header.
    pub fn awaiting_chunks(&self) -> bool {
        self.awaiting_chunks
    }

    /// Marks the chain as being restored chunk by chunk ([`Chain::awaiting_chunks`]).
    pub fn await_chunks(&mut self) {
        self.awaiting_chunks = true;
    }

    /// The hash scheme of the chain's bits.
    pub fn scheme(&self) -> HashScheme {
        self.scheme
    }

    /// The seed every item is hashed with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The kind of every layer of the chain: its code is chosen by this ([`super::kind`]).
    #[inline]
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The layers, oldest first.
    pub fn layers(&self) -> &Layers<Chain> {
        &self.layers
    }

    /// Counters at their maximum over all layers (counting chains; 0 in others), at most the
    /// counters there are: like [`Layer::ones`], the kept count may start from a loaded one
    /// that is possible but not true, and is read bounded so that what a save writes always
    /// loads again.
    pub fn saturated(&self) -> u64 {
        let counting = matches!(self.layers.first().rule(), Rule::Counting(_));
        let counters = if counting {
            self.layers.iter().fold(0u64, |n, l| n.saturating_add(l.len_bits()))
        } else {
            0
        };
        self.layers.saturated().min(counters)
    }

    /// Sets the counts a loader read after the bits ([`Contents::Counted`]): each layer's set
    /// bits (non-zero counters), oldest first, and the chain's saturated counters. Each must be
    /// possible — at most the layer's bits (counters), saturated at most the counters of
    /// a counting chain and 0 in any other — or the value is refused. Nothing cheaper than
    /// counting again can tell a possible count from the true one; the counts feed only
    /// BF.STATS' fill and estimates, never an answer.
    ///
    /// [`Contents::Counted`]: super::layer::Contents::Counted
    pub fn set_loaded_counts(&mut self, ones: &[u64], saturated: u64) -> Result<(), FilterError> {
        if ones.len() != self.layers.len() {
            return Err(FilterError::BadData);
        }
        let counting = matches!(self.layers.first().rule(), Rule::Counting(_));
        let mut counters = 0u64;
        for (layer, &n) in self.layers.iter().zip(ones) {
            if n > layer.len_bits() {
                return Err(FilterError::BadData);
            }
            counters = counters.saturating_add(layer.len_bits());
        }
        if saturated > if counting { counters } else { 0 } {
            return Err(FilterError::BadData);
        }
        for (layer, &n) in self.layers.iter_mut().zip(ones) {
            layer.ones = n;
        }
        self.layers.set_saturated(saturated);
        Ok(())
    }

    /// Overwrites the bytes at `[offset, offset + data.len())` of layer `index`'s array (a
    /// chunked restore), keeping the counts of set bits and saturated counters right.
    pub fn write_layer_bytes(
        &mut self,
        index: usize,
        offset: u64,
        data: &[u8],
    ) -> Result<(), FilterError> {
        let layer = self.layers.get_mut(index).ok_or(FilterError::ChunkOffset)?;
        let (before, after) = layer.write_bytes(offset, data)?;
        let saturated = self.layers.saturated();
        // Saturating, not asserted: the count may be one a loaded value carried.
        self.layers.set_saturated(saturated.saturating_sub(before) + after);
        Ok(())
    }

    /// Items added (`BF.CARD`): the sum over the layers (at most [`MAX_LAYERS`], or
    /// [`MAX_RB_LAYERS`] in RedisBloom's schemes, and counted rather than stored, to keep the
    /// chain header small).
    pub fn items(&self) -> u64 {
        self.layers.iter().map(Layer::items).sum()
    }

    /// Sum of layer capacities (`BF.INFO Capacity`).
    pub fn capacity(&self) -> u64 {
        self.layers.iter().fold(0u64, |acc, l| acc.saturating_add(l.capacity()))
    }

    /// Bytes of all bit arrays.
    pub fn bit_bytes(&self) -> u64 {
        self.layers.iter().map(Layer::bytes).sum()
    }

    /// The full sizing of layer `index` (< `layers().len()`): its capacity, probes and bits as
    /// stored, and the error and bits per entry it was built for ([`layer_error`], as
    /// [`expected_layer_in`] uses).
    pub fn layer_size(&self, index: usize) -> LayerSize {
        let layer = &self.layers[index];
        let error = self.layer_error(index);
        LayerSize {
            capacity: layer.capacity(),
            error,
            bpe: bits_per_entry(error),
            bits: layer.len_bits(),
            hashes: layer.hashes(),
        }
    }

    /// `BF.INFO Size` and `MEMORY USAGE`: RedisBloom's struct overheads plus the bit arrays.
    pub fn info_size(&self) -> u64 {
        info_size(self.layers.len() as u64, self.bit_bytes())
    }

    /// Hashes `item` with this chain's scheme and seed.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.scheme.hash(item, self.seed)
    }

    /// Whether `item` is (probably) present: in a layer, or in a member a merge kept apart
    /// ([`super::merged`]).
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hash(self.hash(item)) || self.members_hold(item)
    }

    /// Adds `item`: `Ok(true)` if it was new, `Ok(false)` if it was (probably) present (in a
    /// layer or a member) and nothing changed. Fails, changing nothing, when a needed layer
    /// cannot be built.
    pub fn add(&mut self, item: &[u8], guard: &dyn AllocGuard) -> Result<bool, FilterError> {
        self.awaiting_chunks = false;
        if self.members_hold(item) {
            return Ok(false);
        }
        self.add_hash(self.hash(item), guard)
    }

    /// Appends the next layer, or says why it cannot ([`Chain::next_layer`]).
    pub(super) fn grow(&mut self, guard: &dyn AllocGuard) -> Result<(), FilterError> {
        let layer = match self.next_layer(guard)? {
            NextLayer::RedisBloom(next, halvings) => Layer::new_redisbloom(&next, halvings)?,
            NextLayer::Native(next, Layout::Blocked, _) => Layer::new_blocked(&next)?,
            NextLayer::Native(next, Layout::Standard, width) => Layer::new_counting(&next, width)?,
        };
        self.layers.push(layer);
        Ok(())
    }

    /// Whether the chain refuses a new item now: its newest layer is full and the next layer
    /// cannot be made (`next_layer`, the checks an add makes before it grows, so the
    /// two never disagree).
    pub fn refuses_new_items(&self, guard: &dyn AllocGuard) -> bool {
        self.layers.last().is_full() && self.next_layer(guard).is_err()
    }

    /// The layer the chain would append, after every check growth makes and `guard`'s
    /// admission of its bytes, or why there is none. A native chain stops at this module's
    /// limits ([`MAX_LAYERS`], the error floor); a chain in RedisBloom's schemes grows as
    /// RedisBloom grows it, while the halved error stays above 0 ([`MAX_RB_LAYERS`]): a
    /// replica of a RedisBloom primary must take every add the primary took.
    fn next_layer(&self, guard: &dyn AllocGuard) -> Result<NextLayer, FilterError> {
        if !self.params().scaling() {
            return Err(FilterError::NonscalingFull);
        }
        let most = if self.scheme.is_redisbloom() { MAX_RB_LAYERS } else { MAX_LAYERS };
        if self.layers.len() >= most {
            return Err(FilterError::TooManyLayers);
        }
        let too_many = |e| match e {
            FilterError::ErrorTooSmall => FilterError::TooManyLayers,
            other => other,
        };
        if self.scheme.is_redisbloom() {
            let next = self.next_redisbloom_layer().map_err(too_many)?;
            let halvings = self.layers[self.layers.len() - 1]
                .halvings()
                .checked_add(1)
                .ok_or(FilterError::TooManyLayers)?;
            self.admit_layer(next.bits / 8, guard)?;
            Ok(NextLayer::RedisBloom(next, halvings))
        } else {
            let layout = self.layout();
            let next =
                expected_layer_in(&self.params(), layout, self.layers.len()).map_err(too_many)?;
            let width = self.counter_width();
            self.admit_layer(array_bytes(&next, width)?, guard)?;
            Ok(NextLayer::Native(next, layout, width))
        }
    }
}

/// A layer [`Chain::next_layer`] admitted: RedisBloom's sizing and its halvings, or a native
/// sizing in a layout with counters of a width (0: plain bits).
enum NextLayer {
    RedisBloom(RbLayerSize, u16),
    Native(LayerSize, Layout, Width),
}

/// Bytes of the array of a layer of `size` with counters of `width` bits (0: plain bits).
pub fn array_bytes(size: &LayerSize, width: Width) -> Result<u64, FilterError> {
    Ok(counters::array_bits(size.bits, width)? / 8)
}

impl Chain {
    /// Asks `guard` whether one more layer of `bytes` bytes may be allocated.
    fn admit_layer(&self, bytes: u64, guard: &dyn AllocGuard) -> Result<(), FilterError> {
        // The whole value counts: the members a merge kept apart are part of the filter.
        let after = self.value_bit_bytes().checked_add(bytes).ok_or(FilterError::TooLarge)?;
        guard.admit(info_size(self.value_layers() as u64 + 1, after), bytes)
    }

    /// The layer RedisBloom would append to this RedisBloom chain (`SBChain_Add`):
    /// `bloom_init(last.entries × growth, last.error × 0.5, options)`.
    fn next_redisbloom_layer(&self) -> Result<RbLayerSize, FilterError> {
        let last = self.layers.len() - 1;
        let capacity = self.layers[last]
            .capacity()
            .checked_mul(u64::from(self.expansion))
            .ok_or(FilterError::TooLarge)?;
        rb_layer_size(capacity, self.layer_error(last) * TIGHTENING, self.noround)
    }
}
