//! Turning a chain's [`Kind`] into code, once per call into the chain: the `by_kind!` macro,
//! the chain's one-item paths and any-kind access to one layer. The batched paths are in
//! [`super::batch`], the deletes of counting chains in [`super::counting`].

use super::chain::Chain;
use super::kernel::LayerKind;
use super::kind::Kind;
use super::layer::Layer;
use crate::filter::FilterError;
use crate::filter::guard::AllocGuard;
use crate::filter::hash::{HashScheme, ItemHash};

/// Runs `$body` with `$K` naming the [`LayerKind`] type of `$kind`: the one place where a
/// kind is turned into code, once per call into the chain.
macro_rules! by_kind {
    ($kind:expr, $K:ident => $body:expr) => {
        match $kind {
            $crate::filter::bloom::kind::Kind::Plain => {
                type $K = $crate::filter::bloom::kernel::Plain<false>;
                $body
            }
            $crate::filter::bloom::kind::Kind::PlainCurved => {
                type $K = $crate::filter::bloom::kernel::Plain<true>;
                $body
            }
            $crate::filter::bloom::kind::Kind::Counting4 => {
                type $K = $crate::filter::bloom::counting::Counting<4, false>;
                $body
            }
            $crate::filter::bloom::kind::Kind::Counting4Curved => {
                type $K = $crate::filter::bloom::counting::Counting<4, true>;
                $body
            }
            $crate::filter::bloom::kind::Kind::Counting8 => {
                type $K = $crate::filter::bloom::counting::Counting<8, false>;
                $body
            }
            $crate::filter::bloom::kind::Kind::Counting8Curved => {
                type $K = $crate::filter::bloom::counting::Counting<8, true>;
                $body
            }
            $crate::filter::bloom::kind::Kind::RedisBloom => {
                type $K = $crate::filter::bloom::redisbloom_layout::RedisBloom;
                $body
            }
            $crate::filter::bloom::kind::Kind::Blocked => {
                type $K = $crate::filter::bloom::kernel::Blocked;
                $body
            }
        }
    };
}
pub(crate) use by_kind;

/// The chain's one-item paths, each choosing the kind's code once.
impl Chain {
    /// Whether an item with hash `h` is (probably) present, in a chain of kind `K`. Newest
    /// layers first: they are the largest and hold the most recent items.
    #[inline]
    pub(super) fn contains_as<K: LayerKind>(&self, h: ItemHash) -> bool {
        // Plain loops, for the reason given in `LayerKind::add`.
        for layer in self.layers.rest().iter().rev() {
            if K::holds(layer, h) {
                return true;
            }
        }
        K::holds(self.layers.first(), h)
    }

    /// Whether an item with hash `h` is (probably) present.
    #[inline]
    pub fn contains_hash(&self, h: ItemHash) -> bool {
        by_kind!(self.kind(), K => self.contains_as::<K>(h))
    }

    /// [`Chain::add`] for a precomputed hash.
    #[inline(never)]
    pub fn add_hash(&mut self, h: ItemHash, guard: &dyn AllocGuard) -> Result<bool, FilterError> {
        by_kind!(self.kind(), K => K::add(self, h, guard))
    }
}

/// Any-kind access to one layer, for the cold paths and tests that hold a layer alone. A
/// standard layer is taken as one of a chain in `scheme`'s probe sequence.
impl Layer {
    /// Whether the layer holds `h` ([`LayerKind::holds`] of its kind).
    pub fn contains(&self, scheme: HashScheme, h: ItemHash) -> bool {
        by_kind!(Kind::of(self.rule(), scheme.is_curved()), K => K::holds(self, h))
    }

    /// Counts `h` in the layer ([`LayerKind::insert`] of its kind).
    pub fn insert(&mut self, scheme: HashScheme, h: ItemHash) {
        by_kind!(Kind::of(self.rule(), scheme.is_curved()), K => K::insert(self, h))
    }
}
