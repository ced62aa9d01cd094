//! The scalable chain: a list of layers, each larger and tighter than the one before.
//!
//! An item is present if any layer says so. A genuinely new item is set in the last layer;
//! when that layer is full, a scaling chain appends a layer with `capacity × expansion` items at
//! half the error, and a nonscaling chain refuses the item. The first layer of a scaling chain
//! gets half the requested error, so the errors of all layers sum to less than the request.

use super::BloomError;
use super::counting::{self, Width};
use super::hash::{HashScheme, ItemHash};
use super::layer::{Layer, Rule};
use super::params::{
    ChainParams, LayerSize, MAX_LAYERS, MAX_RB_LAYERS, RbLayerSize, TIGHTENING, bits_per_entry,
    info_size, layer_size, rb_layer_size,
};

/// Decides whether a filter may grow by some bytes. The core checks the per-filter limit
/// itself ([`MaxFilterBytes`]); the module adds the server's `maxmemory`.
pub trait AllocGuard {
    /// May the filter, now `filter_bytes_after` bytes in total (as `BF.INFO Size` counts),
    /// allocate `new_bytes` more?
    fn admit(&self, filter_bytes_after: u64, new_bytes: u64) -> Result<(), BloomError>;
}

/// Admits any allocation: for replicated writes and loading, where the primary already decided.
#[derive(Debug, Clone, Copy)]
pub struct Unlimited;

impl AllocGuard for Unlimited {
    fn admit(&self, _: u64, _: u64) -> Result<(), BloomError> {
        Ok(())
    }
}

/// Refuses to let one filter grow past a byte limit.
#[derive(Debug, Clone, Copy)]
pub struct MaxFilterBytes(pub u64);

impl AllocGuard for MaxFilterBytes {
    fn admit(&self, filter_bytes_after: u64, _new_bytes: u64) -> Result<(), BloomError> {
        if filter_bytes_after > self.0 {
            Err(BloomError::FilterLimit { needed: filter_bytes_after, limit: self.0 })
        } else {
            Ok(())
        }
    }
}

/// A scalable Bloom filter.
///
/// The parameters are stored as flat fields rather than a [`ChainParams`], so the scheme and the
/// flags fit in what would be its padding: with the first layer inline, the chain is 96 bytes.
///
/// A chain in one of RedisBloom's schemes ([`HashScheme::is_redisbloom`]) keeps RedisBloom's
/// layout: its layers carry RedisBloom's position rules and per-layer errors, and new layers are
/// sized as RedisBloom's `bloom_init` sizes them ([`rb_layer_size`]): capacity = the last
/// layer's (possibly rounded-up) capacity × expansion, error = the last layer's × 0.5.
#[derive(Debug, Clone)]
pub struct Chain {
    seed: u64,
    /// The layers: the first inline, so a filter that never grows (most small ones) is one
    /// allocation besides its bits, 96 bytes, as RedisBloom's `SBChain` (32) + `SBLink` (64).
    layers: Layers,
    /// The requested error rate (native chains); the first layer's error (RedisBloom chains).
    error: f64,
    /// The first layer's capacity.
    capacity: u64,
    /// Growth factor; 0 when nonscaling.
    expansion: u32,
    scheme: HashScheme,
    /// RedisBloom chains: new layers are sized without rounding to a power of two (RedisBloom's
    /// `NOROUND` option).
    noround: bool,
    /// Set while the chain is being restored chunk by chunk (made from a dump header and not
    /// written since): see [`Chain::awaiting_chunks`].
    awaiting_chunks: bool,
}

/// A chain's layers: one, inline in the chain, or a table of exactly as many slots as layers
/// (a chain grows rarely, and spare slots would stay in every filter).
#[derive(Debug, Clone, PartialEq)]
enum Layers {
    One(Layer),
    Many(Box<[Layer]>),
}

impl Layers {
    /// From a loader's list (not empty: `from_parts` refuses a chain without layers).
    fn from_vec(mut layers: Vec<Layer>) -> Self {
        match (layers.pop(), layers.is_empty()) {
            (Some(only), true) => Layers::One(only),
            (Some(last), false) => {
                layers.push(last);
                Layers::Many(layers.into_boxed_slice())
            }
            (None, _) => Layers::Many(Box::new([])),
        }
    }

    /// Appends a layer: the table grows by exactly one slot.
    fn push(&mut self, layer: Layer) {
        let mut all = match std::mem::replace(self, Layers::Many(Box::new([]))) {
            Layers::One(first) => {
                let mut v = Vec::with_capacity(2);
                v.push(first);
                v
            }
            Layers::Many(table) => {
                let mut v = table.into_vec();
                v.reserve_exact(1);
                v
            }
        };
        all.push(layer);
        *self = Layers::Many(all.into_boxed_slice());
    }
}

impl std::ops::Deref for Layers {
    type Target = [Layer];
    fn deref(&self) -> &[Layer] {
        match self {
            Layers::One(layer) => std::slice::from_ref(layer),
            Layers::Many(table) => table,
        }
    }
}

impl std::ops::DerefMut for Layers {
    fn deref_mut(&mut self) -> &mut [Layer] {
        match self {
            Layers::One(layer) => std::slice::from_mut(layer),
            Layers::Many(table) => table,
        }
    }
}

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
    /// `mv` must keep the contract of [`Mover`](super::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut super::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`.
        unsafe {
            if let Layers::Many(table) = &mut self.layers {
                super::mem::relocate_boxed_slice(table, mv);
            }
            for layer in self.layers.iter_mut() {
                layer.relocate(mv);
            }
        }
    }

    /// An empty chain with one layer, after asking `guard` for the memory.
    pub fn new(
        params: ChainParams,
        scheme: HashScheme,
        seed: u64,
        guard: &dyn AllocGuard,
    ) -> Result<Self, BloomError> {
        if scheme.is_redisbloom() {
            // A new filter keeps this module's limits (the error floor, MAX_HASHES) whatever
            // its scheme: the same parameters are refused with the same error as native ones.
            layer_size(params.capacity, params.first_layer_error())?;
            // As RedisBloom 2.x creates filters: options NOROUND | FORCE64 (| NONSCALING).
            let first = rb_layer_size(params.capacity, params.first_layer_error(), true)?;
            guard.admit(info_size(1, first.bits / 8), first.bits / 8)?;
            let layers = Layers::One(Layer::new_redisbloom(&first, 0)?);
            let params = ChainParams { error: first.error, ..params };
            let mut chain = Self::assemble(params, scheme, 0, layers);
            chain.noround = true;
            return Ok(chain);
        }
        Self::new_counting(params, seed, 0, guard).map(|mut c| {
            c.scheme = scheme;
            c
        })
    }

    /// An empty native chain (xxh3) with one layer of counters of `width` bits (4 or 8; 0
    /// makes a plain chain), after asking `guard` for the memory: `width` times a plain
    /// chain's bytes.
    pub fn new_counting(
        params: ChainParams,
        seed: u64,
        width: Width,
        guard: &dyn AllocGuard,
    ) -> Result<Self, BloomError> {
        if width != 0 && !counting::valid_width(u64::from(width)) {
            return Err(BloomError::BadParameter);
        }
        let first = layer_size(params.capacity, params.first_layer_error())?;
        let bytes = array_bytes(&first, width)?;
        guard.admit(info_size(1, bytes), bytes)?;
        let layers = Layers::One(Layer::new_counting(&first, width)?);
        Ok(Self::assemble(params, HashScheme::Xxh3Enhanced, seed, layers))
    }

    /// Bits per counter when the chain counts (4 or 8), 0 for a plain chain.
    pub fn counter_width(&self) -> Width {
        self.layers[0].width()
    }

    /// A chain in a RedisBloom scheme rebuilt from stored layers (see `filter::redisbloom`,
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
    ) -> Result<Self, BloomError> {
        if !scheme.is_redisbloom()
            || layers.is_empty()
            || layers.len() > MAX_RB_LAYERS
            || (expansion == 0 && layers.len() != 1)
            || layers[0].halvings() != 0
        {
            return Err(BloomError::BadData);
        }
        let mut sum = 0u64;
        for (i, layer) in layers.iter().enumerate() {
            let pow2 = matches!(layer.rule(), Rule::Pow2(_));
            if matches!(layer.rule(), Rule::Reduce | Rule::Counting(_)) || pow2 == noround {
                return Err(BloomError::BadData);
            }
            if i + 1 < layers.len() && !layer.is_full() {
                return Err(BloomError::BadData);
            }
            sum = sum.checked_add(layer.items()).ok_or(BloomError::BadData)?;
        }
        if sum != items {
            return Err(BloomError::BadData);
        }
        let params = ChainParams { error: first_error, capacity: layers[0].capacity(), expansion };
        let mut chain = Self::assemble(params, scheme, 0, Layers::from_vec(layers));
        chain.noround = noround;
        Ok(chain)
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
    ) -> Result<Self, BloomError> {
        let width = layers.first().map_or(0, Layer::width);
        let rule = if width == 0 { Rule::Reduce } else { Rule::Counting(width) };
        if scheme.is_redisbloom() || layers.iter().any(|l| l.rule() != rule) {
            return Err(BloomError::BadData);
        }
        let claims: Vec<LayerClaim> = layers.iter().map(LayerClaim::of).collect();
        check_layers(&params, &claims, items, width != 0)?;
        // Loaded layers were collected through an iterator of unknown length: the boxed slice
        // drops the spare slots, which would otherwise stay in every loaded filter.
        Ok(Self::assemble(params, scheme, seed, Layers::from_vec(layers)))
    }

    fn assemble(params: ChainParams, scheme: HashScheme, seed: u64, layers: Layers) -> Self {
        let ChainParams { error, capacity, expansion } = params;
        Self {
            seed,
            layers,
            error,
            capacity,
            expansion,
            scheme,
            noround: false,
            awaiting_chunks: false,
        }
    }

    /// The parameters the chain was created with. For a RedisBloom chain, `error` is its first
    /// layer's error rate and `capacity` its first layer's capacity.
    pub fn params(&self) -> ChainParams {
        ChainParams { error: self.error, capacity: self.capacity, expansion: self.expansion }
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

    /// The layers, oldest first.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The layers, for chunked restores.
    pub fn layers_mut(&mut self) -> &mut [Layer] {
        &mut self.layers
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
    /// [`expected_layer`] uses).
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

    /// How full the chain is and what error rate it has now (`BF.STATS`), from the set bits
    /// each layer keeps count of: no scan.
    pub fn stats(&self) -> Stats {
        let target = if self.scheme.is_redisbloom() && self.params().scaling() {
            // A RedisBloom chain stores its first layer's error, half the requested one when
            // scaling (RedisBloom 2.2 on): the request is twice it.
            self.error * 2.0
        } else {
            self.error
        };
        let mut pass = 1.0; // probability that an absent item passes no layer
        let mut estimated_items = 0.0;
        let (mut ones, mut positions) = (0u64, 0u64);
        for layer in self.layers.iter() {
            let m = layer.positions() as f64;
            let fill = (layer.ones() as f64 / m).min(1.0);
            let k = f64::from(layer.hashes());
            pass *= 1.0 - fill.powf(k);
            // A full layer would estimate infinity: count it as one bit short of full.
            let fill_for_items = fill.min(1.0 - 1.0 / (2.0 * m));
            estimated_items += -(m / k) * (1.0 - fill_for_items).ln();
            ones = ones.saturating_add(layer.ones());
            positions = positions.saturating_add(layer.positions());
        }
        let newest = &self.layers[self.layers.len() - 1];
        let estimated_error = 1.0 - pass;
        Stats {
            target_error: target,
            estimated_error,
            fill_newest: (newest.ones() as f64 / newest.positions() as f64).min(1.0),
            fill_overall: (ones as f64 / positions as f64).min(1.0),
            estimated_items,
            items: self.items(),
            saturated: estimated_error > target,
            saturated_counters: (self.counter_width() != 0)
                .then(|| self.layers.iter().map(Layer::saturated).sum()),
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

    /// Whether `item` is (probably) present.
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// Whether an item with hash `h` is (probably) present. Newest layers first: they are the
    /// largest and hold the most recent items.
    #[inline]
    pub fn contains_hash(&self, h: ItemHash) -> bool {
        self.layers.iter().rev().any(|l| l.contains(h))
    }

    /// Adds `item`: `Ok(true)` if it was new, `Ok(false)` if it was (probably) present and
    /// nothing changed. Fails, changing nothing, when a needed layer cannot be built.
    pub fn add(&mut self, item: &[u8], guard: &dyn AllocGuard) -> Result<bool, BloomError> {
        self.awaiting_chunks = false;
        self.add_hash(self.hash(item), guard)
    }

    /// [`Chain::add`] for a precomputed hash.
    ///
    /// The item is new if no layer holds it. Older layers are only read; the last layer, when it
    /// has room, is tested and set in one pass ([`Layer::insert_if_new`]), which gives the same
    /// answer and bits as "contains, then insert" with each probed word visited once.
    #[inline]
    pub fn add_hash(&mut self, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, BloomError> {
        // `layers` is never empty: constructors make or require at least one layer.
        let Some((last, older)) = self.layers.split_last_mut() else {
            return Err(BloomError::BadData);
        };
        // A counting chain takes none of the plain shortcuts, but its test costs the plain
        // path nothing: it is made only where that path leaves its common case (an older
        // layer holds the item, or the last is full), and the last step, `insert_if_new`,
        // counts a counting layer's item itself — right there, since no older layer holds it.
        if older.iter().rev().any(|l| l.contains(h)) {
            if let Rule::Counting(_) = last.rule() {
                return self.add_counting(h, guard);
            }
            return Ok(false);
        }
        if last.is_full() {
            return self.add_past_full(h, guard);
        }
        Ok(last.insert_if_new(h))
    }

    /// The rare end of [`Chain::add_hash`]: the last layer is full, so a new item needs a new
    /// layer (or is refused). Kept out of line so the common path stays small.
    #[cold]
    #[inline(never)]
    fn add_past_full(&mut self, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, BloomError> {
        if self.counter_width() != 0 {
            return self.add_counting(h, guard);
        }
        if self.layers.last().is_some_and(|l| l.contains(h)) {
            return Ok(false);
        }
        self.grow(guard)?;
        let last = self.layers.len() - 1;
        self.layers[last].insert(h);
        Ok(true)
    }

    /// [`Chain::add_hash`] of a counting chain: the item's counters are always incremented (a
    /// second add counts twice). An item some layer holds already goes to the *oldest* layer
    /// that holds it: its counters there are all non-zero, so no counter becomes non-zero and
    /// that layer's fill (its error rate) does not change; `Ok(false)`. A new item goes to the
    /// newest layer, which grows the chain when full (or, nonscaling, is refused); `Ok(true)`.
    ///
    /// Why the oldest: counters become non-zero only in the newest layer, so once a layer has
    /// a newer one after it, the set of its non-zero counters can only shrink, and an item it
    /// does not hold it will never hold. An item's increments all sit in one layer L (its
    /// home), and no layer older than L holds it — so [`Chain::delete`], taking the oldest
    /// layer that holds the item, always finds L and decrements only the item's own counts.
    /// (Taking the newest instead decrements some other layer whenever a newer layer reports
    /// the item as a false positive: measured on a chain grown 20× at 1%, about 15 items lost
    /// per 5,000 deletes.) Only a delete of an item never added can take counts that are not
    /// its own (README: Counting filters).
    #[inline(never)]
    fn add_counting(&mut self, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, BloomError> {
        if let Some(home) = self.layers.iter_mut().find(|l| l.contains(h)) {
            home.insert(h);
            return Ok(false);
        }
        if self.layers[self.layers.len() - 1].is_full() {
            self.grow(guard)?;
        }
        let last = self.layers.len() - 1;
        self.layers[last].insert(h);
        Ok(true)
    }

    /// Deletes one occurrence of `item` from a counting chain: `Ok(true)` if it was present
    /// and its counters were decremented (in the oldest layer that holds it, which is always
    /// the layer its adds counted it in: see `Chain::add_counting`), `Ok(false)`, changing
    /// nothing, if it was not; [`BloomError::NotCounting`] for a plain chain.
    pub fn delete(&mut self, item: &[u8]) -> Result<bool, BloomError> {
        if self.counter_width() == 0 {
            return Err(BloomError::NotCounting);
        }
        self.awaiting_chunks = false;
        Ok(self.delete_hash(self.hash(item)))
    }

    /// [`Chain::delete`] for a precomputed hash (of a counting chain).
    fn delete_hash(&mut self, h: ItemHash) -> bool {
        self.layers.iter_mut().any(|l| l.remove(h))
    }

    /// [`Chain::delete`] of each of `items` in order, appending the results to `out`; hashed and
    /// prefetched in blocks like [`Chain::add_many`].
    pub fn delete_many<T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        out: &mut Vec<bool>,
    ) -> Result<(), BloomError> {
        if self.counter_width() == 0 {
            return Err(BloomError::NotCounting);
        }
        self.awaiting_chunks = false;
        let mut block = Block::new(self);
        for chunk in items.chunks(BATCH) {
            let hashes = block.load(self, chunk, Purpose::Add);
            for &h in hashes {
                out.push(self.delete_hash(h));
            }
        }
        Ok(())
    }

    /// Whether each of `items` is (probably) present, in order, appended to `out`. Same answers
    /// as [`Chain::contains`] one by one; faster on filters larger than the CPU caches, because
    /// items are taken in blocks of [`BATCH`]: the whole block is hashed, the cache lines it
    /// will probe are prefetched, and only then tested, so the memory latency of every probe in
    /// the block overlaps instead of being paid one after another. Prefetching goes in two
    /// steps (first probes, then the rest for items the first probe does not rule out), so
    /// absent items cost one miss each, not `k`.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T], out: &mut Vec<bool>) {
        let mut block = Block::new(self);
        for chunk in items.chunks(BATCH) {
            let hashes = block.load(self, chunk, Purpose::Lookup);
            // One layer (the common case): its kernel straight over the block.
            if let [only] = &*self.layers {
                if only.contains_block(hashes, out) {
                    continue;
                }
            }
            out.extend(hashes.iter().map(|&h| self.contains_hash(h)));
        }
    }

    /// Adds each of `items` in order, appending `true` (new) or `false` (present) to `out`, with
    /// the same results and bits as [`Chain::add`] one by one (an item may repeat an earlier one
    /// in the same call). Stops at the first item that cannot be added and returns why; the items
    /// before it are in and their results are in `out`. Blocked and prefetched like
    /// [`Chain::contains_many`].
    pub fn add_many<T: AsRef<[u8]>>(
        &mut self,
        items: &[T],
        guard: &dyn AllocGuard,
        out: &mut Vec<bool>,
    ) -> Result<(), BloomError> {
        self.awaiting_chunks = false;
        let mut block = Block::new(self);
        for chunk in items.chunks(BATCH) {
            let hashes = block.load(self, chunk, Purpose::Add);
            // One layer with room for the whole block (the common case): no layer to grow
            // and none to consult first, so its kernel runs straight over the block.
            if let [only] = &mut *self.layers {
                if only.insert_block(hashes, out).is_some() {
                    continue;
                }
            }
            for &h in hashes {
                out.push(self.add_hash(h, guard)?);
            }
        }
        Ok(())
    }

    /// Appends the next layer, or says why it cannot. A native chain stops at this module's
    /// limits ([`MAX_LAYERS`], the error floor); a chain in RedisBloom's schemes grows as
    /// RedisBloom grows it, while the halved error stays above 0 ([`MAX_RB_LAYERS`]): a
    /// replica of a RedisBloom primary must take every add the primary took.
    fn grow(&mut self, guard: &dyn AllocGuard) -> Result<(), BloomError> {
        if !self.params().scaling() {
            return Err(BloomError::NonscalingFull);
        }
        let most = if self.scheme.is_redisbloom() { MAX_RB_LAYERS } else { MAX_LAYERS };
        if self.layers.len() >= most {
            return Err(BloomError::TooManyLayers);
        }
        let too_many = |e| match e {
            BloomError::ErrorTooSmall => BloomError::TooManyLayers,
            other => other,
        };
        let layer = if self.scheme.is_redisbloom() {
            let next = self.next_redisbloom_layer().map_err(too_many)?;
            let halvings = self.layers[self.layers.len() - 1]
                .halvings()
                .checked_add(1)
                .ok_or(BloomError::TooManyLayers)?;
            let bytes = next.bits / 8;
            self.admit_layer(bytes, guard)?;
            Layer::new_redisbloom(&next, halvings)?
        } else {
            let next = expected_layer(&self.params(), self.layers.len()).map_err(too_many)?;
            let width = self.counter_width();
            self.admit_layer(array_bytes(&next, width)?, guard)?;
            Layer::new_counting(&next, width)?
        };
        self.layers.push(layer);
        Ok(())
    }
}

/// What `BF.STATS` reports ([`Chain::stats`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The error rate the chain was made for.
    pub target_error: f64,
    /// The probability that an item never added is reported present, from the bits actually
    /// set: `1 − Π(1 − fillᵢ^kᵢ)` over the layers (`fillᵢ` = set bits ÷ bits of layer `i`).
    pub estimated_error: f64,
    /// Set bits ÷ bits in the newest layer (the one that takes new items).
    pub fill_newest: f64,
    /// Set bits ÷ bits over all layers.
    pub fill_overall: f64,
    /// Distinct items estimated from the set bits: `Σ −(mᵢ/kᵢ)·ln(1 − fillᵢ)` (Swamidass and
    /// Baldi, 2007).
    pub estimated_items: f64,
    /// Items added (`BF.CARD`).
    pub items: u64,
    /// Whether the estimated error is above the target.
    pub saturated: bool,
    /// Counting chains: counters stuck at their maximum ([`counting`]); `None` for plain ones.
    pub saturated_counters: Option<u64>,
}

/// Bytes of the array of a layer of `size` with counters of `width` bits (0: plain bits).
pub fn array_bytes(size: &LayerSize, width: Width) -> Result<u64, BloomError> {
    Ok(counting::array_bits(size.bits, width)? / 8)
}

/// Items per block in [`Chain::contains_many`] and [`Chain::add_many`]: enough probes in flight
/// to cover memory latency (16 items × up to ~10 probes), few enough that the prefetched lines
/// stay in L1 until they are used.
pub const BATCH: usize = 16;

impl Chain {
    /// Asks `guard` whether one more layer of `bytes` bytes may be allocated.
    fn admit_layer(&self, bytes: u64, guard: &dyn AllocGuard) -> Result<(), BloomError> {
        let after = self.bit_bytes().checked_add(bytes).ok_or(BloomError::TooLarge)?;
        guard.admit(info_size(self.layers.len() as u64 + 1, after), bytes)
    }

    /// The layer RedisBloom would append to this RedisBloom chain (`SBChain_Add`):
    /// `bloom_init(last.entries × growth, last.error × 0.5, options)`.
    fn next_redisbloom_layer(&self) -> Result<RbLayerSize, BloomError> {
        let last = self.layers.len() - 1;
        let capacity = self.layers[last]
            .capacity()
            .checked_mul(u64::from(self.expansion))
            .ok_or(BloomError::TooLarge)?;
        rb_layer_size(capacity, self.layer_error(last) * TIGHTENING, self.noround)
    }
}

/// Layers at least this large are prefetched in batches; smaller ones sit in the CPU caches
/// anyway, where a prefetch would only cost instructions.
pub const PREFETCH_MIN_BYTES: u64 = 4 << 20;

/// What a block is loaded for: it decides which cache lines are worth prefetching.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// Adds read (and, for new items, write) every probe: prefetch them all.
    Add,
    /// Lookups of absent items usually stop at the first probe: prefetch only that one first,
    /// then the rest for the items it does not rule out.
    Lookup,
}

/// One block of hashed items for the batched paths.
struct Block {
    hashes: [ItemHash; BATCH],
    /// Whether any layer is large enough to prefetch (decided once per call).
    prefetch: bool,
}

impl Block {
    fn new(chain: &Chain) -> Self {
        Self {
            hashes: [ItemHash { h1: 0, h2: 1 }; BATCH],
            prefetch: chain.layers.iter().any(is_large),
        }
    }

    /// Hashes `items` (at most [`BATCH`]), prefetches what `purpose` needs of them in every
    /// layer too large to be in cache, and returns the hashes.
    fn load<T: AsRef<[u8]>>(
        &mut self,
        chain: &Chain,
        items: &[T],
        purpose: Purpose,
    ) -> &[ItemHash] {
        let hashes = &mut self.hashes[..items.len()];
        for (h, item) in hashes.iter_mut().zip(items) {
            *h = chain.hash(item.as_ref());
        }
        if self.prefetch {
            for layer in chain.layers.iter().filter(|l| is_large(l)) {
                layer.prefetch_block(hashes, purpose == Purpose::Lookup);
            }
        }
        hashes
    }
}

/// Whether a layer is worth prefetching ([`PREFETCH_MIN_BYTES`]).
fn is_large(layer: &Layer) -> bool {
    layer.bytes() >= PREFETCH_MIN_BYTES
}

/// What a stored layer says of itself: what [`check_layers`] compares with the parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerClaim {
    /// Items the layer is built for.
    pub capacity: u64,
    /// Probes per item.
    pub hashes: u64,
    /// Bits in its array.
    pub bits: u64,
    /// Items added to it.
    pub items: u64,
}

impl LayerClaim {
    /// The claim of a layer in memory.
    pub fn of(layer: &Layer) -> Self {
        Self {
            capacity: layer.capacity(),
            hashes: u64::from(layer.hashes()),
            bits: layer.len_bits(),
            items: layer.items(),
        }
    }
}

/// The one rule every stored chain obeys, checked before a loaded chain's bits are allocated
/// (by the decoders in `codec`) and again when its layers are assembled ([`Chain::from_parts`]):
/// 1 to [`MAX_LAYERS`] layers (exactly 1 when nonscaling); each layer exactly the one `params`
/// build at its position ([`expected_layer`]); no layer holds more than its capacity, and every
/// layer but the last is full (a layer is added only when the last is full); the items add up
/// to `items`. A counting chain's layers count every add and delete of the items they hold
/// (an item already present is counted again in its layer, full or not), so there only the
/// sum is checked. Returns each layer's expected size.
pub fn check_layers(
    params: &ChainParams,
    claims: &[LayerClaim],
    items: u64,
    counting: bool,
) -> Result<Vec<LayerSize>, BloomError> {
    if claims.is_empty() || claims.len() > MAX_LAYERS || (!params.scaling() && claims.len() != 1) {
        return Err(BloomError::BadData);
    }
    let mut sizes = Vec::with_capacity(claims.len());
    let mut sum = 0u64;
    for (i, c) in claims.iter().enumerate() {
        let want = expected_layer(params, i).map_err(|_| BloomError::BadData)?;
        let sized = c.capacity == want.capacity
            && c.hashes == u64::from(want.hashes)
            && c.bits == want.bits;
        let last = i + 1 == claims.len();
        let counts = counting || (c.items <= c.capacity && (last || c.items == c.capacity));
        if !sized || !counts {
            return Err(BloomError::BadData);
        }
        sum = sum.checked_add(c.items).ok_or(BloomError::BadData)?;
        sizes.push(want);
    }
    if sum != items {
        return Err(BloomError::BadData);
    }
    Ok(sizes)
}

/// The layer a chain with `params` has at position `index`: capacity × expansion^index at
/// error × 0.5^index. Multiplying by 0.5 is exact in binary floating point, so a loaded layer
/// can be compared to this bit for bit.
pub fn expected_layer(params: &ChainParams, index: usize) -> Result<LayerSize, BloomError> {
    let mut capacity = params.capacity;
    for _ in 0..index {
        capacity = capacity.checked_mul(u64::from(params.expansion)).ok_or(BloomError::TooLarge)?;
    }
    layer_size(capacity, layer_error(params, index))
}

/// The error rate of the layer at position `index`: the first layer's × 0.5^index.
pub fn layer_error(params: &ChainParams, index: usize) -> f64 {
    (0..index).fold(params.first_layer_error(), |error, _| error * TIGHTENING)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::Layout;
    use std::ptr::NonNull;

    fn chain(error: f64, capacity: u64, expansion: u64) -> Chain {
        let p = ChainParams::new(error, capacity, expansion).unwrap();
        Chain::new(p, HashScheme::Xxh3Enhanced, 0x5eed, &Unlimited).unwrap()
    }

    fn item(i: u64) -> Vec<u8> {
        format!("member:{i}").into_bytes()
    }

    /// Grows to 10× the initial capacity, then checks there are no false negatives and that
    /// the measured false-positive rate over 200k never-added items is within the request.
    fn grow_and_measure(error: f64) -> f64 {
        let capacity = 10_000;
        let mut c = chain(error, capacity, 2);
        for i in 0..capacity * 10 {
            c.add(&item(i), &Unlimited).unwrap();
        }
        for i in 0..capacity * 10 {
            assert!(c.contains(&item(i)), "false negative for item {i}");
        }
        let probes = 200_000u64;
        let hits = (0..probes).filter(|i| c.contains(format!("absent:{i}").as_bytes())).count();
        hits as f64 / probes as f64
    }

    #[test]
    fn false_positive_rate_stays_within_one_percent_at_ten_times_capacity() {
        let rate = grow_and_measure(0.01);
        eprintln!("measured false-positive rate at 1%: {rate}");
        assert!(rate <= 0.01, "measured {rate}");
    }

    #[test]
    fn false_positive_rate_stays_within_a_tenth_of_a_percent_at_ten_times_capacity() {
        let rate = grow_and_measure(0.001);
        eprintln!("measured false-positive rate at 0.1%: {rate}");
        assert!(rate <= 0.001, "measured {rate}");
    }

    /// Relocation (active defragmentation) moves the layer table and the bit arrays and
    /// changes nothing about the filter: a mover that moves every allocation it is offered
    /// (allocate, copy, free, as `RedisModule_DefragAlloc` does) leaves an equal chain that
    /// still answers every item; one that moves nothing leaves the addresses as they were.
    #[test]
    fn relocation_moves_memory_and_changes_nothing() {
        let mut c = chain(0.01, 100, 2);
        for i in 0..1000 {
            c.add(&item(i), &Unlimited).unwrap();
        }
        assert!(c.layers().len() > 1);
        let before = c.clone();
        let addresses = |c: &Chain| {
            let mut a = vec![c.layers.as_ptr() as usize];
            for l in c.layers.iter() {
                let mut first = None;
                l.bits().for_each_segment_bytes(|seg| {
                    first.get_or_insert(seg.as_ptr() as usize);
                });
                a.push(first.unwrap());
            }
            a
        };
        let old = addresses(&c);
        let mut offered = 0;
        let mut keep = |_: NonNull<u8>, _: Layout| {
            offered += 1;
            None
        };
        // SAFETY: a mover that moves nothing keeps the contract trivially.
        unsafe { c.relocate(&mut keep) };
        assert_eq!(offered, 1 + c.layers().len(), "the table and one array per layer");
        assert_eq!(addresses(&c), old);

        // Holds the old allocations until the end, so the new ones cannot reuse their
        // addresses and every move is visible.
        let mut freed_later: Vec<(NonNull<u8>, Layout)> = Vec::new();
        let mut move_all = |p: NonNull<u8>, layout: Layout| {
            // SAFETY: `layout` is the allocation's own (non-zero) layout; the new allocation
            // gets a bitwise copy of its bytes, and the old one is freed (below) with the
            // same layout and never used again.
            unsafe {
                let new = std::alloc::alloc(layout);
                std::ptr::copy_nonoverlapping(p.as_ptr(), new, layout.size());
                freed_later.push((p, layout));
                NonNull::new(new)
            }
        };
        // SAFETY: `move_all` keeps the `Mover` contract (allocate, copy, give up the old).
        unsafe { c.relocate(&mut move_all) };
        let new = addresses(&c);
        assert!(new.iter().zip(&old).all(|(a, b)| a != b), "{old:?} -> {new:?}");
        assert_eq!(c, before);
        assert!((0..1000).all(|i| c.contains(&item(i))));
        assert!(c.add(&item(5000), &Unlimited).unwrap());
        for (p, layout) in freed_later {
            // SAFETY: allocated by the global allocator with `layout`, freed once.
            unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
        }
    }

    #[test]
    fn present_items_change_nothing() {
        let mut c = chain(0.01, 100, 2);
        assert!(c.add(b"a", &Unlimited).unwrap());
        let before = c.clone();
        assert!(!c.add(b"a", &Unlimited).unwrap());
        assert_eq!(c, before);
        assert_eq!(c.items(), 1);
    }

    #[test]
    fn a_new_layer_is_made_only_for_a_genuinely_new_item() {
        let mut c = chain(0.01, 10, 2);
        let mut i = 0;
        while c.items() < 10 {
            c.add(&item(i), &Unlimited).unwrap();
            i += 1;
        }
        assert_eq!(c.layers().len(), 1);
        // Re-adding a present item to a full layer must not grow the chain.
        assert!(!c.add(&item(0), &Unlimited).unwrap());
        assert_eq!(c.layers().len(), 1);
        while c.layers().len() == 1 {
            c.add(&item(i), &Unlimited).unwrap();
            i += 1;
        }
        let l = c.layers();
        assert_eq!(l[1].capacity(), 20);
        assert_eq!(c.layer_size(1).error, 0.0025);
        assert_eq!(l[1].items(), 1);
        assert_eq!(c.capacity(), 30);
    }

    #[test]
    fn nonscaling_chain_refuses_items_once_full() {
        let mut c = chain(0.01, 5, 0);
        let mut i = 0;
        while c.items() < 5 {
            c.add(&item(i), &Unlimited).unwrap();
            i += 1;
        }
        let before = c.clone();
        let mut refused = false;
        for j in 0..100 {
            match c.add(&item(1000 + j), &Unlimited) {
                Err(BloomError::NonscalingFull) => refused = true,
                Ok(false) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(refused);
        assert_eq!(c, before);
    }

    #[test]
    fn expansion_one_stops_at_the_error_floor_with_an_error_not_a_broken_layer() {
        let mut c = chain(0.0001, 1, 1);
        let mut refused = None;
        for i in 0..5000 {
            match c.add(&item(i), &Unlimited) {
                Ok(_) => {}
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        assert_eq!(refused, Some(BloomError::TooManyLayers));
        assert!(c.layers().len() <= MAX_LAYERS);
        for (i, l) in c.layers().iter().enumerate() {
            assert!(l.hashes() >= 1 && l.hashes() <= crate::filter::params::MAX_HASHES);
            assert!(c.layer_size(i).error >= crate::filter::params::MIN_LAYER_ERROR);
            assert_eq!(Ok(c.layer_size(i)), expected_layer(&c.params(), i), "layer {i}");
        }
        // Still answers correctly: an absent item is not reported present by a degenerate layer.
        assert!(!c.contains(b"never added"));
    }

    #[test]
    fn the_guard_sees_each_allocation_and_a_refusal_changes_nothing() {
        let p = ChainParams::new(0.01, 100, 2).unwrap();
        assert!(matches!(
            Chain::new(p, HashScheme::Xxh3Enhanced, 0, &MaxFilterBytes(100)),
            Err(BloomError::FilterLimit { .. })
        ));
        let mut c = Chain::new(p, HashScheme::Xxh3Enhanced, 0, &MaxFilterBytes(300)).unwrap();
        assert_eq!(c.info_size(), 32 + 64 + 144);
        let mut i = 0;
        let err = loop {
            match c.add(&item(i), &MaxFilterBytes(300)) {
                Ok(_) => i += 1,
                Err(e) => break e,
            }
        };
        assert!(matches!(err, BloomError::FilterLimit { limit: 300, .. }));
        assert_eq!(c.layers().len(), 1);
        assert_eq!(c.items(), 100);
    }

    /// A filter's fixed memory: the chain with its first layer inline, 96 bytes, as RedisBloom's
    /// `SBChain` + `SBLink` (32 + 64, in two allocations); after growing or loading, a table of
    /// one record per layer, with no spare slots.
    #[test]
    fn a_filter_has_small_fixed_tables_without_spare_slots() {
        assert_eq!(std::mem::size_of::<Chain>(), 96);
        assert!(std::mem::size_of::<Layer>() <= 64, "{}", std::mem::size_of::<Layer>());
        let mut c = chain(0.01, 10, 2);
        for i in 0..300 {
            c.add(&item(i), &Unlimited).unwrap();
        }
        assert_eq!(c.layers.len(), 5);
        // Collected through an iterator of unknown length, as the loader does: spare slots.
        let layers: Vec<Layer> = c.layers().iter().filter(|_| true).cloned().collect();
        assert!(layers.capacity() > layers.len());
        let loaded =
            Chain::from_parts(c.params(), c.scheme(), c.seed(), layers, c.items()).unwrap();
        assert_eq!(loaded.layers.len(), 5, "a boxed slice holds no spare slot");
        assert_eq!(loaded, c);
    }

    #[test]
    fn seeds_give_different_bits_for_the_same_items() {
        let p = ChainParams::new(0.01, 100, 2).unwrap();
        let mut a = Chain::new(p, HashScheme::Xxh3Enhanced, 1, &Unlimited).unwrap();
        let mut b = Chain::new(p, HashScheme::Xxh3Enhanced, 2, &Unlimited).unwrap();
        a.add(b"x", &Unlimited).unwrap();
        b.add(b"x", &Unlimited).unwrap();
        assert_ne!(a.layers()[0].bits(), b.layers()[0].bits());
    }

    #[test]
    fn from_parts_refuses_inconsistent_layers() {
        let mut c = chain(0.01, 10, 2);
        for i in 0..25 {
            c.add(&item(i), &Unlimited).unwrap();
        }
        let layers = c.layers().to_vec();
        let p = c.params();
        assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers.clone(), c.items()).is_ok());
        assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers.clone(), c.items() + 1).is_err());
        assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers[1..].to_vec(), 0).is_err());
        assert!(Chain::from_parts(p, c.scheme(), c.seed(), Vec::new(), 0).is_err());
    }
}

/// The batched paths against the one-by-one paths they must equal.
#[cfg(test)]
mod batch_tests {
    use super::*;

    fn items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("{prefix}{i}").into_bytes()).collect()
    }

    /// The textbook add, written independently of the kernels: test every layer probe by probe
    /// with the [`Probes`](crate::filter::hash::Probes) iterator, then set every probe of the
    /// last layer (after growing if it is full).
    fn reference_add(
        c: &mut Chain,
        item: &[u8],
        guard: &dyn AllocGuard,
    ) -> Result<bool, BloomError> {
        let h = c.hash(item);
        let present = |l: &Layer| h.probes(l.len_bits(), l.hashes()).all(|p| l.bits().get(p));
        if c.layers.iter().any(present) {
            return Ok(false);
        }
        if c.layers.last().is_some_and(Layer::is_full) {
            c.grow(guard)?;
        }
        let last = c.layers.len() - 1;
        c.layers[last].insert(h);
        Ok(true)
    }

    /// Adds `items` to copies of `chain` three ways — the textbook add, [`Chain::add`] one by
    /// one, and [`Chain::add_many`] — and checks the per-item results, the stopping error and the
    /// whole chains (every bit of every layer, item counts) are equal; then checks
    /// [`Chain::contains_many`] against [`Chain::contains`] on present and absent items.
    fn assert_batch_equals_one_by_one(
        chain: Chain,
        items: &[Vec<u8>],
        guard: &dyn AllocGuard,
    ) -> Chain {
        let mut reference = chain.clone();
        let mut reference_results = Vec::new();
        for item in items {
            match reference_add(&mut reference, item, guard) {
                Ok(new) => reference_results.push(new),
                Err(_) => break,
            }
        }
        let mut one = chain.clone();
        let mut expected = Vec::new();
        let mut expected_err = None;
        for item in items {
            match one.add(item, guard) {
                Ok(new) => expected.push(new),
                Err(e) => {
                    expected_err = Some(e);
                    break;
                }
            }
        }
        let mut many = chain;
        let mut got = Vec::new();
        let err = many.add_many(items, guard, &mut got).err();
        assert_eq!(expected, reference_results, "one-by-one against the textbook add");
        assert_eq!(one, reference, "one-by-one bits against the textbook add");
        assert_eq!(got, expected, "per-item add results");
        assert_eq!(err, expected_err, "stopping error");
        assert_eq!(many, one, "bits and counts after adding");

        let mut probes = items.to_vec();
        probes.extend(self::items("absent:", items.len()));
        let mut looked_up = Vec::new();
        many.contains_many(&probes, &mut looked_up);
        let one_by_one: Vec<bool> = probes.iter().map(|p| many.contains(p)).collect();
        assert_eq!(looked_up, one_by_one, "lookups");
        many
    }

    fn chain(error: f64, capacity: u64, expansion: u64) -> Chain {
        let p = ChainParams::new(error, capacity, expansion).unwrap();
        Chain::new(p, HashScheme::Xxh3Enhanced, 0xba7c4, &Unlimited).unwrap()
    }

    #[test]
    fn batches_equal_one_by_one_on_a_single_layer() {
        let c = chain(0.01, 100_000, 2);
        let c = assert_batch_equals_one_by_one(c, &items("a", 5000), &Unlimited);
        // Everything again: all present now, nothing may change.
        let before = c.clone();
        let c = assert_batch_equals_one_by_one(c, &items("a", 5000), &Unlimited);
        assert_eq!(c, before);
    }

    #[test]
    fn batches_equal_one_by_one_with_duplicates_inside_one_batch() {
        let mut v = items("d", 40);
        v.extend(items("d", 40));
        v.insert(3, b"d0".to_vec());
        v.insert(4, b"d0".to_vec());
        assert_batch_equals_one_by_one(chain(0.01, 1000, 2), &v, &Unlimited);
    }

    #[test]
    fn batches_equal_one_by_one_while_growing_layers_mid_batch() {
        // Capacity 7 and blocks of 16: layers fill up and grow inside blocks, many times.
        let c = assert_batch_equals_one_by_one(chain(0.01, 7, 2), &items("g", 3000), &Unlimited);
        assert!(c.layers().len() > 5);
        // Lookups and re-adds across many layers.
        assert_batch_equals_one_by_one(c, &items("g", 3000), &Unlimited);
    }

    #[test]
    fn batches_stop_where_one_by_one_stops() {
        // Nonscaling: refused once full, in the middle of a block.
        assert_batch_equals_one_by_one(chain(0.01, 21, 0), &items("n", 100), &Unlimited);
        // Scaling under a byte limit: refused when the next layer would not fit.
        assert_batch_equals_one_by_one(
            chain(0.01, 50, 2),
            &items("l", 1000),
            &MaxFilterBytes(1000),
        );
    }

    #[test]
    fn batches_equal_one_by_one_on_prefetched_and_multi_segment_layers() {
        // 5.5 MiB: above PREFETCH_MIN_BYTES, one segment.
        let c = chain(0.01, 4_000_000, 2);
        assert!(c.layers()[0].bytes() >= PREFETCH_MIN_BYTES);
        assert_batch_equals_one_by_one(c, &items("p", 3000), &Unlimited);
        // Over 64 MiB: several segments, the kernels' fallback path.
        let c = chain(0.01, 60_000_000, 0);
        assert!(matches!(c.layers()[0].bits().view(), crate::filter::bits::View::Many(_)));
        assert_batch_equals_one_by_one(c, &items("s", 3000), &Unlimited);
    }

    #[test]
    fn odd_probe_counts_past_the_unrolled_kernels_equal_one_by_one() {
        // 1e-9 needs 31 probes: past probe::UNROLLED_MAX, the looping kernel.
        let c = chain(1e-9, 2000, 2);
        assert!(c.layers()[0].hashes() > crate::filter::probe::UNROLLED_MAX);
        assert_batch_equals_one_by_one(c, &items("o", 3000), &Unlimited);
    }

    /// Every layer's count of set bits equals a scan of its bits, whichever path set them:
    /// one by one, batched (one layer and several), past a full layer, RedisBloom's rules.
    #[test]
    fn set_bit_counts_follow_every_add_path() {
        let item = |i: u64| format!("item-{i}").into_bytes();
        fn check(c: &Chain) {
            for (i, l) in c.layers().iter().enumerate() {
                assert_eq!(l.ones(), l.bits().count_ones(), "layer {i}");
            }
        }
        let mut c = chain(0.01, 500, 2);
        for i in 0..300 {
            c.add(&item(i), &Unlimited).unwrap();
        }
        check(&c);
        let mut out = Vec::new();
        c.add_many(&items("b", 5000), &Unlimited, &mut out).unwrap();
        assert!(c.layers().len() > 2);
        check(&c);
        let p = ChainParams::new(0.01, 300, 2).unwrap();
        let mut rb = Chain::new(p, HashScheme::Murmur64, 0, &Unlimited).unwrap();
        rb.add_many(&items("r", 2000), &Unlimited, &mut out).unwrap();
        assert!(rb.layers().len() > 1);
        check(&rb);
    }

    /// The estimates of `BF.STATS` against what a filter really does: a nonscaling filter at
    /// capacity and a scaling one grown 10× — the estimated error within 25% of the rate
    /// measured on 200,000 absent items, the estimated items within 3% of the items added.
    #[test]
    fn stats_estimate_the_measured_error_and_the_items() {
        let item = |i: u64| format!("item-{i}").into_bytes();
        for (capacity, expansion, added) in [(20_000u64, 0u64, 20_000u64), (5_000, 2, 50_000)] {
            let mut c = chain(0.01, capacity, expansion);
            let mut out = Vec::new();
            let present: Vec<Vec<u8>> = (0..added).map(item).collect();
            c.add_many(&present, &Unlimited, &mut out).unwrap();
            let absent = 200_000;
            let fp = (0..absent).filter(|i| c.contains(format!("absent-{i}").as_bytes())).count();
            let measured = fp as f64 / absent as f64;
            let s = c.stats();
            assert!(
                (s.estimated_error / measured - 1.0).abs() < 0.25,
                "expansion {expansion}: estimated {} measured {measured}",
                s.estimated_error
            );
            assert!(
                (s.estimated_items / added as f64 - 1.0).abs() < 0.03,
                "expansion {expansion}: estimated {} items of {added}",
                s.estimated_items
            );
            assert_eq!(s.items, c.items());
            assert!(s.fill_newest > 0.0 && s.fill_overall > 0.0 && s.fill_overall <= 1.0);
            assert_eq!(s.target_error, 0.01);
            // At its capacity a nonscaling layer is right at its target (k rounded up makes
            // it 1.003 × the target here): `saturated` may go either way there. A scaling
            // chain's layers sum to well below it.
            assert!(expansion == 0 || !s.saturated, "{s:?}");
        }
    }

    /// Past its capacity a nonscaling filter's error climbs over the target: `saturated`.
    #[test]
    fn stats_report_saturation_past_the_target() {
        let item = |i: u64| format!("item-{i}").into_bytes();
        let mut c = chain(0.01, 1000, 0);
        let mut out = Vec::new();
        c.add_many(&items("x", 900), &Unlimited, &mut out).unwrap();
        assert!(!c.stats().saturated);
        // Force more bits in, as a full filter that kept taking items would have.
        let last = c.layers.len() - 1;
        for i in 0..2000 {
            let h = c.hash(&item(10_000 + i));
            c.layers[last].insert(h);
        }
        let s = c.stats();
        assert!(s.saturated && s.estimated_error > 0.01, "{s:?}");
        let empty = chain(0.01, 1000, 2).stats();
        assert_eq!(
            (empty.estimated_error, empty.estimated_items, empty.fill_overall),
            (0.0, 0.0, 0.0)
        );
    }
}

#[cfg(test)]
mod counting_tests {
    use super::*;

    fn counting(error: f64, capacity: u64, expansion: u64, width: Width) -> Chain {
        let p = ChainParams::new(error, capacity, expansion).unwrap();
        Chain::new_counting(p, 0x5eed, width, &Unlimited).unwrap()
    }

    fn name(prefix: &str, i: u64) -> Vec<u8> {
        format!("{prefix}-{i}").into_bytes()
    }

    /// Every layer's non-zero and saturated counts equal a scan of its counters.
    fn check_counts(c: &Chain) {
        for (i, l) in c.layers().iter().enumerate() {
            let (ones, sat) = counting::array_counts(l.bits(), l.width());
            assert_eq!((l.ones(), l.saturated()), (ones, sat), "layer {i}");
        }
    }

    #[test]
    fn counters_are_sized_like_bits_times_their_width() {
        for width in [4u8, 8] {
            let plain = Chain::new(
                ChainParams::new(0.01, 1000, 2).unwrap(),
                HashScheme::Xxh3Enhanced,
                1,
                &Unlimited,
            )
            .unwrap();
            let c = counting(0.01, 1000, 2, width);
            assert_eq!(c.counter_width(), width);
            assert_eq!(c.layers()[0].len_bits(), plain.layers()[0].len_bits());
            assert_eq!(c.layers()[0].hashes(), plain.layers()[0].hashes());
            assert_eq!(c.bit_bytes(), plain.bit_bytes() * u64::from(width));
        }
        let p = ChainParams::new(0.01, 1000, 2).unwrap();
        assert!(Chain::new_counting(p, 1, 5, &Unlimited).is_err());
        // The guard sees the counters' bytes.
        let plain_bytes = counting(0.01, 1000, 2, 0).bit_bytes();
        let limit = MaxFilterBytes(info_size(1, plain_bytes * 2));
        assert!(matches!(
            Chain::new_counting(p, 1, 4, &limit),
            Err(BloomError::FilterLimit { .. })
        ));
        assert!(Chain::new_counting(p, 1, 0, &limit).is_ok());
    }

    /// 10,000 adds then 5,000 deletes: the other 5,000 all present, absent items at the
    /// target rate, the counts right.
    #[test]
    fn deleting_half_keeps_the_other_half_and_the_error_rate() {
        for width in [4u8, 8] {
            let mut c = counting(0.01, 10_000, 0, width);
            for i in 0..10_000 {
                assert!(c.add(&name("a", i), &Unlimited).is_ok());
            }
            let mut out = Vec::new();
            let doomed: Vec<Vec<u8>> = (0..5_000).map(|i| name("a", i)).collect();
            c.delete_many(&doomed, &mut out).unwrap();
            assert!(out.iter().all(|&d| d), "every added item is deletable");
            assert!((5_000..10_000).all(|i| c.contains(&name("a", i))), "false negative");
            let fp = (0..100_000).filter(|&i| c.contains(&name("absent", i))).count();
            // Half the items: well under the target (about 0.03%).
            assert!(fp < 1_000, "{fp} false positives of 100,000");
            assert_eq!(c.items(), 5_000);
            check_counts(&c);
        }
    }

    /// A scaling counting chain grown 20× with half of its items deleted: no false negative.
    #[test]
    fn a_grown_chain_with_half_deleted_has_no_false_negative() {
        let mut c = counting(0.01, 500, 2, 4);
        let n = 10_000;
        let all: Vec<Vec<u8>> = (0..n).map(|i| name("g", i)).collect();
        let mut out = Vec::new();
        c.add_many(&all, &Unlimited, &mut out).unwrap();
        assert!(c.layers().len() >= 5, "{} layers", c.layers().len());
        for i in (0..n).step_by(2) {
            assert!(c.delete(&all[i as usize]).unwrap());
        }
        for i in (1..n).step_by(2) {
            assert!(c.contains(&all[i as usize]), "item {i} lost");
        }
        check_counts(&c);
    }

    /// 100,000 random adds and deletes (a delete takes one occurrence of a live item) against a
    /// multiset: every delete succeeds, every live item stays present, the counts stay right.
    #[test]
    fn random_adds_and_deletes_never_lose_a_live_item() {
        let mut c = counting(0.01, 2_000, 2, 4);
        let mut live: Vec<u64> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if live.is_empty() || x >> 62 < 3 {
                let id = x % 20_000;
                c.add(&name("r", id), &Unlimited).unwrap();
                live.push(id);
            } else {
                let id = live.swap_remove((x % live.len() as u64) as usize);
                assert!(c.delete(&name("r", id)).unwrap(), "live item {id} not deletable");
            }
        }
        assert!(c.layers().len() > 1);
        for id in &live {
            assert!(c.contains(&name("r", *id)), "live item {id} lost");
        }
        check_counts(&c);
    }

    /// A counter at its maximum stays there: adding one item 20 times saturates its 4-bit
    /// counters, and deleting it 20 times leaves it present (a false positive, never a false
    /// negative for another item sharing a counter).
    #[test]
    fn saturated_counters_never_move() {
        let mut c = counting(0.01, 1000, 0, 4);
        for _ in 0..20 {
            c.add(b"hot", &Unlimited).unwrap();
        }
        let sat = c.stats().saturated_counters.unwrap();
        assert!(sat >= 1 && sat <= u64::from(c.layers()[0].hashes()), "{sat}");
        for _ in 0..20 {
            assert!(c.delete(b"hot").unwrap());
        }
        assert!(c.contains(b"hot"));
        assert_eq!(c.stats().saturated_counters, Some(sat));
        check_counts(&c);
        assert_eq!(c.items(), 0);
        assert!(!c.delete(b"never").unwrap());
    }

    #[test]
    fn plain_chains_refuse_deletes_and_report_no_counters() {
        let mut c = counting(0.01, 100, 2, 0);
        c.add(b"x", &Unlimited).unwrap();
        assert_eq!(c.delete(b"x"), Err(BloomError::NotCounting));
        assert_eq!(c.delete_many(&[b"x"], &mut Vec::new()), Err(BloomError::NotCounting));
        assert_eq!(c.stats().saturated_counters, None);
        assert!(c.contains(b"x"));
    }

    /// Adds report "new" as a plain filter does, but always count; a nonscaling counting
    /// filter refuses any add once full, a present item's too.
    #[test]
    fn adds_answer_new_and_always_count() {
        let mut c = counting(0.01, 3, 0, 8);
        assert_eq!(c.add(b"a", &Unlimited), Ok(true));
        assert_eq!(c.add(b"a", &Unlimited), Ok(false));
        assert_eq!(c.items(), 2);
        assert_eq!(c.add(b"b", &Unlimited), Ok(true));
        assert_eq!(c.items(), 3);
        // Full: a new item is refused, a present one still counts (it sets no new counter).
        assert_eq!(c.add(b"new", &Unlimited), Err(BloomError::NonscalingFull));
        let ones = c.layers()[0].ones();
        assert_eq!(c.add(b"a", &Unlimited), Ok(false));
        assert_eq!((c.items(), c.layers()[0].ones()), (4, ones));
        assert!(c.delete(b"a").unwrap());
        assert!(c.delete(b"a").unwrap());
        assert!(c.contains(b"a"), "added twice, deleted once");
        assert!(c.delete(b"a").unwrap());
        assert!(!c.contains(b"a") || c.contains(b"b"));
        // Batched adds answer as one by one.
        let mut one = counting(0.01, 100, 2, 4);
        let mut many = one.clone();
        let items: Vec<Vec<u8>> = (0..500).map(|i| name("m", i % 300)).collect();
        let expected: Vec<bool> = items.iter().map(|i| one.add(i, &Unlimited).unwrap()).collect();
        let mut got = Vec::new();
        many.add_many(&items, &Unlimited, &mut got).unwrap();
        assert_eq!(got, expected);
        assert_eq!(one, many);
        check_counts(&many);
    }

    /// On a counting layer large enough to be prefetched (the batched paths' two-step
    /// prefetch over counter positions), batched lookups and deletes answer as one by one.
    #[test]
    fn batched_lookups_and_deletes_equal_one_by_one_on_a_prefetched_layer() {
        let mut c = counting(0.01, 1_000_000, 0, 4);
        assert!(c.layers()[0].bytes() >= PREFETCH_MIN_BYTES);
        let added: Vec<Vec<u8>> = (0..20_000).map(|i| name("p", i)).collect();
        let mut out = Vec::new();
        c.add_many(&added, &Unlimited, &mut out).unwrap();
        let probe: Vec<Vec<u8>> =
            (0..20_000).map(|i| name(if i % 2 == 0 { "p" } else { "q" }, i)).collect();
        let mut got = Vec::new();
        c.contains_many(&probe, &mut got);
        let expected: Vec<bool> = probe.iter().map(|i| c.contains(i)).collect();
        assert_eq!(got, expected);
        let mut one = c.clone();
        let expected: Vec<bool> = probe.iter().map(|i| one.delete(i).unwrap()).collect();
        let mut got = Vec::new();
        c.delete_many(&probe, &mut got).unwrap();
        assert_eq!(got, expected);
        assert_eq!(c, one);
        check_counts(&c);
    }
}
