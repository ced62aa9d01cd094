//! How full a chain is (`BF.STATS`), from the set bits each layer keeps count of: no scan.

use super::chain::Chain;
use crate::filter::guard::AllocGuard;

/// What `BF.STATS` reports ([`Chain::stats`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The error rate the chain was made for.
    pub target_error: f64,
    /// The probability that an item never added is reported present, from the bits actually
    /// set: `1 − Π(1 − fillᵢ^kᵢ)` over the layers, members' included (`fillᵢ` = set bits ÷ bits of layer `i`).
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
    /// Whether the chain needs rotating: it refuses new items (its newest layer is full and
    /// no next layer may be made, [`Chain::refuses_new_items`]), or its estimated error is
    /// above the target.
    pub saturated: bool,
    /// Counting chains: counters stuck at their maximum ([`counting`](super::counting)); `None` for plain ones.
    pub saturated_counters: Option<u64>,
}

impl Chain {
    /// How full the chain is and what error rate it has now (`BF.STATS`), from the set bits
    /// each layer keeps count of: no scan. `guard` is the allocation policy an add would grow
    /// the chain under (the module's per-filter and memory limits): with it, `saturated` says
    /// whether an add of a new item would be refused.
    pub fn stats(&self, guard: &dyn AllocGuard) -> Stats {
        let target = if self.scheme().is_redisbloom() && self.params().scaling() {
            // A RedisBloom chain stores its first layer's error, half the requested one when
            // scaling (RedisBloom 2.2 on): the request is twice it.
            self.params().error * 2.0
        } else {
            self.params().error
        };
        let mut pass = 1.0; // probability that an absent item passes no layer
        let mut estimated_items = 0.0;
        let (mut ones, mut positions) = (0u64, 0u64);
        // Every layer of the value: a member a merge kept apart answers like a layer.
        for (_, _, layer) in self.all_layers() {
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
            items: self.value_items(),
            saturated: estimated_error > target || self.refuses_new_items(guard),
            saturated_counters: (self.counter_width() != 0)
                .then(|| self.parts().fold(0u64, |n, c| n.saturating_add(c.saturated()))),
        }
    }
}
