//! The kind of a chain: what its layers hold and how an item's positions are found, read
//! from its layers and its hash scheme ([`Chain::kind`](super::Chain::kind)).
//!
//! A chain is of one kind for good — every layer follows the same [`Rule`] family, checked
//! when the chain is built or loaded — so the kind is read once per call into the chain and
//! the call then runs code made for that kind alone ([`super::dispatch`]): no per-probe or
//! per-layer test of what the layer is. The code of each kind is a
//! [`LayerKind`](super::kernel::LayerKind): [`super::kernel`] (plain and blocked layers),
//! [`super::counting`], [`super::redisbloom_layout`] (RedisBloom's layout).

use super::layer::Rule;

/// The kind of a chain, as read from its layers and its hash scheme ([`Chain::kind`](super::Chain::kind)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Native bits ([`Plain`](super::kernel::Plain)), scheme 1's probe sequence.
    Plain,
    /// Native bits, scheme 5's probe sequence ([`HashScheme::Xxh3Curved`](crate::filter::hash::HashScheme::Xxh3Curved)).
    PlainCurved,
    /// Native counters of 4 bits, scheme 1's probe sequence.
    Counting4,
    /// Native counters of 4 bits, scheme 5's probe sequence.
    Counting4Curved,
    /// Native counters of 8 bits, scheme 1's probe sequence.
    Counting8,
    /// Native counters of 8 bits, scheme 5's probe sequence.
    Counting8Curved,
    /// RedisBloom's layout ([`RedisBloom`](super::redisbloom_layout::RedisBloom)).
    RedisBloom,
    /// Native bits in 512-bit blocks ([`Blocked`](super::kernel::Blocked)).
    Blocked,
}

impl Kind {
    /// The kind a layer of `rule` belongs to, its standard positions in scheme 5's sequence if
    /// `curved` ([`HashScheme::is_curved`](crate::filter::hash::HashScheme::is_curved)) and scheme 1's if not.
    #[inline]
    pub fn of(rule: Rule, curved: bool) -> Self {
        match (rule, curved) {
            (Rule::Reduce, false) => Kind::Plain,
            (Rule::Reduce, true) => Kind::PlainCurved,
            (Rule::Counting(4), false) => Kind::Counting4,
            (Rule::Counting(4), true) => Kind::Counting4Curved,
            (Rule::Counting(_), false) => Kind::Counting8,
            (Rule::Counting(_), true) => Kind::Counting8Curved,
            (Rule::Modulo(_) | Rule::Pow2(_), _) => Kind::RedisBloom,
            (Rule::Blocked, _) => Kind::Blocked,
        }
    }
}
