//! `BF.MERGE`: the union of chains, with an error that stays honest.
//!
//! Every chain taking part is cut into its *parts*: itself and the members an earlier merge
//! kept apart ([`super::merged`]). The destination's parts stay; each incoming part either
//! joins a part of the same shape — same kind, hash scheme, seed, parameters and layer sizes
//! (what `LIKE` gives a new filter), no more layers than it — by an OR of its layers (counting
//! chains: counters added, saturating), or is kept apart as a member of its own. It joins
//! only if every layer it touches keeps its estimated error (`fillᵏ`, as `BF.STATS`
//! estimates it, over the union of everything joining that part) within the layer's target;
//! otherwise an OR would leave the layer far above the error it was sized for. A member costs
//! one more lookup of every absent item; the value's error is at most the sum of its parts'
//! (`BF.STATS` reports it).
//!
//! The merge is planned first ([`plan`]): every refusal — kinds the result cannot hold, too
//! many members, the memory the kept parts need (offered to the guard) — is found before
//! anything changes. [`Plan::apply`] then cannot fail. The plan reads only bits, so a
//! replica and an AOF replay, given the same filters, make the same choices and bits.
//!
//! Item counts of OR-ed layers: a counting layer's counts add up (its counters did); a plain
//! layer's is the estimate from its bits (Swamidass and Baldi), kept between the largest
//! count merged and the smaller of their sum and the layer's capacity, since the same item may
//! be in several sources.

use super::bits::BitArray;
use super::chain::Chain;
use super::layer::Layer;
use super::merged::{MAX_MEMBERS, check_kinds};
use super::params::info_size;
use crate::filter::FilterError;
use crate::filter::error::MergeRefusal;
use crate::filter::guard::AllocGuard;

/// Where a part of the result comes from.
#[derive(Clone, Copy)]
enum Base<'a> {
    /// The destination's part `i` (0: the chain itself, `i`: member `i − 1`), changed in place.
    Dest(usize),
    /// A copy of a source's part.
    New(&'a Chain),
}

/// One part of the result: its base and the parts OR-ed into it, in order.
struct Group<'a> {
    base: Base<'a>,
    ors: Vec<&'a Chain>,
}

/// A merge decided and admitted, not yet applied ([`plan`]).
pub struct Plan<'a> {
    groups: Vec<Group<'a>>,
    /// Parts OR-ed into another (for the caller's report and tests).
    pub joined: usize,
    /// Parts kept apart as new members.
    pub kept_apart: usize,
}

/// Plans the union of `sources` into `dest` (`None`: a new filter) and offers the bytes it
/// adds to `guard`, changing nothing. `sources` must not include `dest` itself (a source that
/// is the destination adds nothing).
pub fn plan<'a>(
    dest: Option<&Chain>,
    sources: &[&'a Chain],
    guard: &dyn AllocGuard,
) -> Result<Plan<'a>, FilterError> {
    let dest_parts: Vec<&Chain> = dest.map(|d| d.parts().collect()).unwrap_or_default();
    let incoming: Vec<&'a Chain> = sources.iter().flat_map(|s| s.parts()).collect();
    check_kinds(dest_parts.iter().copied().chain(incoming.iter().copied()))?;
    let mut groups: Vec<Group<'a>> =
        (0..dest_parts.len()).map(|i| Group { base: Base::Dest(i), ors: Vec::new() }).collect();
    let (mut joined, mut kept_apart) = (0, 0);
    for part in incoming {
        let base_of = |g: &Group<'a>| match g.base {
            Base::Dest(i) => dest_parts[i],
            Base::New(c) => c,
        };
        let target = groups.iter_mut().find(|g| {
            let base = base_of(g);
            same_shape(base, part) && error_fits(base, &g.ors, part)
        });
        match target {
            Some(g) => {
                g.ors.push(part);
                joined += 1;
            }
            None => {
                groups.push(Group { base: Base::New(part), ors: Vec::new() });
                kept_apart += 1;
            }
        }
    }
    if groups.len() > MAX_MEMBERS + 1 {
        return Err(FilterError::MergeRefused(MergeRefusal::TooManyParts));
    }
    let new_bytes: u64 = groups
        .iter()
        .filter_map(|g| match g.base {
            Base::New(c) => Some(c.bit_bytes()),
            Base::Dest(_) => None,
        })
        .sum();
    if new_bytes > 0 {
        let layers: usize = groups
            .iter()
            .map(|g| match g.base {
                Base::Dest(i) => dest_parts[i].layers().len(),
                Base::New(c) => c.layers().len(),
            })
            .sum();
        let before = dest.map_or(0, Chain::value_bit_bytes);
        let after = before.checked_add(new_bytes).ok_or(FilterError::TooLarge)?;
        guard.admit(info_size(layers as u64, after), new_bytes)?;
    }
    Ok(Plan { groups, joined, kept_apart })
}

/// An empty chain of `other`'s shape, kind, scheme and seed (`LIKE`), as `other` was when
/// created: it merges into `other`, and `other` into it, by OR-ing layers. Admitted by `guard`.
pub fn empty_like(other: &Chain, guard: &dyn AllocGuard) -> Result<Chain, FilterError> {
    let header = super::codec::creation_header(other);
    let mut chain = super::codec::parse_any_header(&header)?.allocate(guard)?;
    chain.awaiting_chunks = false;
    Ok(chain)
}

/// Whether `part`'s layers can be OR-ed into `base`'s: same kind, scheme, seed and
/// parameters, and each of `part`'s layers the same array and probes as `base`'s at its index.
fn same_shape(base: &Chain, part: &Chain) -> bool {
    base.kind() == part.kind()
        && base.scheme() == part.scheme()
        && base.seed() == part.seed()
        && base.params() == part.params()
        && base.noround() == part.noround()
        && part.layers().len() <= base.layers().len()
        && base.layers().iter().zip(part.layers()).all(|(a, b)| {
            a.rule() == b.rule()
                && a.len_bits() == b.len_bits()
                && a.hashes() == b.hashes()
                && a.capacity() == b.capacity()
                && a.halvings() == b.halvings()
        })
}

/// Whether OR-ing `part` into `base` (after `ors`) keeps every layer it touches within its
/// target error, estimated from the union's fill as `BF.STATS` estimates it. The union has at
/// most the sum of its arrays' set positions (each layer keeps that count): when even that
/// fits, no bit is read; otherwise the union is counted (one pass over the arrays).
fn error_fits(base: &Chain, ors: &[&Chain], part: &Chain) -> bool {
    let width = base.counter_width();
    (0..part.layers().len()).all(|i| {
        let layer = &base.layers()[i];
        let mut arrays: Vec<&BitArray> = vec![layer.bits()];
        arrays.extend(ors.iter().filter_map(|o| o.layers().get(i)).map(|l| l.bits()));
        arrays.push(part.layers()[i].bits());
        let error = |ones: u64| {
            let fill = (ones as f64 / layer.positions() as f64).min(1.0);
            fill.powf(f64::from(layer.hashes()))
        };
        let bound = layer.ones().saturating_add(
            ors.iter().chain([&part]).filter_map(|o| o.layers().get(i)).map(|l| l.ones()).sum(),
        );
        error(bound) <= base.layer_error(i)
            || error(BitArray::union_ones(&arrays, width)) <= base.layer_error(i)
    })
}

impl Plan<'_> {
    /// Applies the plan to `dest` (the value [`plan`] read, unchanged since).
    pub fn apply(self, dest: &mut Chain) {
        let mut members = dest.layers.take_members();
        for g in self.groups {
            match g.base {
                Base::Dest(0) => or_into(dest, &g.ors),
                Base::Dest(i) => or_into(&mut members[i - 1], &g.ors),
                Base::New(part) => {
                    let mut copy = part.clone_alone();
                    or_into(&mut copy, &g.ors);
                    members.push(copy);
                }
            }
        }
        dest.set_members(members);
        dest.awaiting_chunks = false;
    }

    /// Applies the plan as a new filter (planned with no destination); `None` when there was
    /// nothing to merge.
    pub fn into_chain(self) -> Option<Chain> {
        let mut groups = self.groups.into_iter();
        let first = groups.next()?;
        let Base::New(part) = first.base else { return None };
        let mut main = part.clone_alone();
        or_into(&mut main, &first.ors);
        let rest = Plan { groups: groups.collect(), joined: 0, kept_apart: 0 };
        rest.apply(&mut main);
        Some(main)
    }
}

/// ORs (adds, for counters) each of `ors` into `target`, layer by layer, and sets the counts.
fn or_into(target: &mut Chain, ors: &[&Chain]) {
    if ors.is_empty() {
        return;
    }
    let width = target.counter_width();
    // Per layer: the largest count merged, the sum of counts, whether anything joined it.
    let mut counts: Vec<(u64, u64, bool)> =
        target.layers().iter().map(|l| (l.items(), l.items(), false)).collect();
    let mut saturated = target.saturated();
    for (i, c) in counts.iter_mut().enumerate() {
        // Every part's layer `i`, merged in one pass over the target's.
        let layers: Vec<&Layer> = ors.iter().filter_map(|p| p.layers().get(i)).collect();
        if layers.is_empty() {
            continue;
        }
        let arrays: Vec<&BitArray> = layers.iter().map(|l| l.bits()).collect();
        let own = &mut target.layers[i];
        let (ones, sat_before, sat_after) = own.bits.merge_from(&arrays, width);
        own.ones = ones;
        saturated = saturated.saturating_sub(sat_before).saturating_add(sat_after);
        for l in layers {
            *c = (c.0.max(l.items()), c.1.saturating_add(l.items()), true);
        }
    }
    for (i, (largest, sum, touched)) in counts.into_iter().enumerate() {
        if !touched {
            continue;
        }
        let layer = &mut target.layers[i];
        let items = if width != 0 {
            sum
        } else {
            let m = layer.positions() as f64;
            let k = f64::from(layer.hashes());
            let fill = (layer.ones() as f64 / m).min(1.0 - 1.0 / (2.0 * m));
            let estimate = (-(m / k) * (1.0 - fill).ln()).round() as u64;
            let upper = sum.min(layer.capacity()).max(largest);
            estimate.clamp(largest, upper)
        };
        layer.items = items;
    }
    target.layers.set_saturated(saturated);
    target.awaiting_chunks = false;
}

#[cfg(test)]
mod tests;
