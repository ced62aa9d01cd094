//! What `BF.STATS` reports of a windowed filter: the items its remembered generations hold,
//! the age of the oldest, and the false-positive rate a query has now.

use super::WindowFilter;
use super::params::{self, WindowKind, WindowLayout};

/// What `BF.STATS` reports of a windowed filter.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowStats {
    /// Target error rate.
    pub target_error: f64,
    /// Estimated false-positive rate of a query now (from each slice's item count).
    pub estimated_error: f64,
    /// Items added in generations still remembered.
    pub items: u64,
    /// Age of the oldest remembered generation: ms since it began (time), or items added
    /// since it began (count).
    pub oldest_age: u64,
    /// Whether the estimated error rate now is above the target (generations received more
    /// than the slices were sized for).
    pub saturated: bool,
}

impl WindowFilter {
    /// Items added in generations still remembered at `now_ms`.
    pub fn items(&self, now_ms: u64) -> u64 {
        let due = self.due_turns(now_ms);
        let l = self.params.l as usize;
        if due > l {
            return 0;
        }
        (0..=l - due).fold(0u64, |sum, age| sum.saturating_add(self.counts[self.at_age(age)]))
    }
    /// How full the filter is at `now_ms`, and what a query's error is now.
    pub fn stats(&self, now_ms: u64) -> WindowStats {
        let due = self.due_turns(now_ms);
        let n = self.params.slices();
        let k = self.params.k as usize;
        let m = self.params.slice_bits as f64;
        let estimated_error = if self.params.layout == WindowLayout::Generations {
            // The generations still remembered: ages 0..n − due before the due turns.
            let counts: Vec<u64> = (0..n - due).map(|a| self.counts[self.at_age(a)]).collect();
            params::generations_error(&self.params, &counts)
        } else {
            // Slice of age a holds the items of generations of ages a−k+1 ..= a.
            let fills: Vec<f64> = (0..n - due)
                .map(|a| {
                    let items = (a.saturating_sub(k - 1)..=a)
                        .fold(0u64, |s, b| s.saturating_add(self.counts[self.at_age(b)]));
                    1.0 - (-(items as f64) / m).exp()
                })
                .collect();
            // Ages `0..due` are the generations that began since (empty).
            let mut all = vec![0.0; due];
            all.extend(fills);
            params::false_positive(&all, k)
        };
        let l = self.params.l as usize;
        let oldest_age = match self.params.kind {
            WindowKind::Time { .. } if due <= l => {
                // The oldest remembered generation that holds items; the generation of real
                // age a began a·gen_ms before the current one.
                (0..=l - due)
                    .rev()
                    .find(|&a| self.counts[self.at_age(a)] > 0)
                    .map(|a| {
                        let began = self.gen_start_ms.saturating_sub(a as u64 * self.params.gen_ms);
                        now_ms.max(self.last_ms).saturating_sub(began)
                    })
                    .unwrap_or(0)
            }
            WindowKind::Time { .. } => 0,
            WindowKind::Items => self.items(now_ms),
        };
        WindowStats {
            target_error: self.params.error,
            estimated_error,
            items: self.items(now_ms),
            oldest_age,
            saturated: estimated_error > self.params.error,
        }
    }
}
