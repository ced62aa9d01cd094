//! A chain that took a merge ([`super::merge`]) and keeps some of what it took apart: its
//! *members*, whole chains of their own shape, seed and hash scheme, held in the chain's tail
//! ([`Layers::members`](super::layers::Layers::members)). A member is read-only but for the
//! deletes of a counting chain: new items go to the chain's own layers. An item is present
//! when a layer or a member holds it, so every lookup of an absent item costs one more lookup
//! per member; `BF.CARD`, `BF.INFO`, `BF.STATS` and the memory figures count the members.
//!
//! The totals here are the whole value's; [`Chain::items`], [`Chain::capacity`],
//! [`Chain::bit_bytes`] and [`Chain::info_size`] stay the chain's own layers' (what its
//! formats describe).

use super::chain::Chain;
use super::layer::Layer;
use super::params::info_size;
use crate::filter::FilterError;
use crate::filter::error::MergeRefusal;

/// At most this many members in one value: a merge that would keep more apart is refused.
pub const MAX_MEMBERS: usize = 63;

impl Chain {
    /// The chains a merge kept apart from this one, oldest first; empty for a chain that never
    /// took a merge (or took only merges that OR-ed into its layers).
    #[inline(always)]
    pub fn members(&self) -> &[Chain] {
        self.layers.members()
    }

    /// Replaces the members (a loader's, a merge's).
    pub fn set_members(&mut self, members: Vec<Chain>) {
        self.layers.set_members(members);
    }

    /// [`Chain::members`], writable.
    pub(super) fn members_mut(&mut self) -> &mut [Chain] {
        self.layers.members_mut()
    }

    /// Whether a member holds `item` (each hashes it with its own seed and scheme).
    #[inline]
    pub(super) fn members_hold(&self, item: &[u8]) -> bool {
        let members = self.members();
        !members.is_empty() && members.iter().any(|m| m.contains(item))
    }

    /// Sets to `true` each answer of `out` (one per item) that is `false` and a member holds.
    pub(super) fn members_answer<T: AsRef<[u8]>>(&self, items: &[T], out: &mut [bool]) {
        for (answer, item) in out.iter_mut().zip(items) {
            if !*answer {
                *answer = self.members_hold(item.as_ref());
            }
        }
    }

    /// Deletes one occurrence of `item` from the first counting member that holds it.
    pub(super) fn delete_in_members(&mut self, item: &[u8]) -> bool {
        self.members_mut().iter_mut().any(|m| m.delete(item).unwrap_or(false))
    }

    /// The chain and its members, the chain first.
    pub fn parts(&self) -> impl Iterator<Item = &Chain> {
        std::iter::once(self).chain(self.members())
    }

    /// Every layer of the value, the chain's own first, then each member's, with the chain it
    /// belongs to and its index there.
    pub fn all_layers(&self) -> impl Iterator<Item = (&Chain, usize, &Layer)> {
        self.parts().flat_map(|c| c.layers().iter().enumerate().map(move |(i, l)| (c, i, l)))
    }

    /// Items added, members included (`BF.CARD`, `BF.INFO Items`).
    pub fn value_items(&self) -> u64 {
        self.parts().fold(0u64, |n, c| n.saturating_add(c.items()))
    }

    /// Capacity, members included (`BF.INFO Capacity`).
    pub fn value_capacity(&self) -> u64 {
        self.parts().fold(0u64, |n, c| n.saturating_add(c.capacity()))
    }

    /// Layers, members included (`BF.INFO Number of filters`).
    pub fn value_layers(&self) -> usize {
        self.parts().map(|c| c.layers().len()).sum()
    }

    /// Bytes of every bit array, members included.
    pub fn value_bit_bytes(&self) -> u64 {
        self.parts().map(Chain::bit_bytes).sum()
    }

    /// `BF.INFO Size` and `MEMORY USAGE`, members included: as [`Chain::info_size`] counts
    /// a chain, each member counted as its layers.
    pub fn value_info_size(&self) -> u64 {
        info_size(self.value_layers() as u64, self.value_bit_bytes())
    }
}

/// Refuses a value (a loaded one, one a dump header describes) whose parts a merge would not
/// have put together.
pub fn check_value(chain: &Chain) -> Result<(), FilterError> {
    check_kinds(chain.parts()).map_err(|_| FilterError::BadData)
}

/// Refuses a merge whose parts one value cannot hold: counting chains with plain ones (the
/// result could not delete), counters of two widths, RedisBloom's layout with this module's.
pub(super) fn check_kinds<'c>(
    mut parts: impl Iterator<Item = &'c Chain>,
) -> Result<(), FilterError> {
    let Some(first) = parts.next() else { return Ok(()) };
    for p in parts {
        let refusal = if (first.counter_width() == 0) != (p.counter_width() == 0) {
            MergeRefusal::CountingWithPlain
        } else if first.counter_width() != p.counter_width() {
            MergeRefusal::CounterWidths
        } else if first.scheme().is_redisbloom() != p.scheme().is_redisbloom() {
            MergeRefusal::RedisBloomLayout
        } else {
            continue;
        };
        return Err(FilterError::MergeRefused(refusal));
    }
    Ok(())
}
