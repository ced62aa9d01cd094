//! Unit tests of the cuckoo core's promises beyond RedisBloom's replies (those are in
//! `golden.rs`): nothing lost by a failed insert, RedisBloom's bugs absent, every width,
//! strict loading. This root holds what the topics share (the widths, a filter of given
//! parameters, the items); each child covers one topic.

// The children reach the fingerprint and slot types as `super::fingerprint` and `super::slots`:
// no child is named after one of the filter's modules.
use super::{CuckooFilter, CuckooParams, FingerprintWidth, fingerprint, slots};
use crate::filter::guard::Unlimited;

mod deletes;
mod encoding;
mod inserts;
mod limits;
mod lookups;
mod reloads;

const WIDTHS: [FingerprintWidth; 3] =
    [FingerprintWidth::W8, FingerprintWidth::W16, FingerprintWidth::W32];

fn filter(cap: u64, bs: u16, iters: u16, exp: u16, w: FingerprintWidth) -> CuckooFilter {
    CuckooFilter::new(&CuckooParams::new(cap, bs, iters, exp).unwrap(), w, &Unlimited).unwrap()
}

fn item(i: u64) -> Vec<u8> {
    format!("item:{i}").into_bytes()
}
