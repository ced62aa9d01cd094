//! The merge's rules on chains alone: union, when layers are OR-ed and when kept apart, the
//! counts, the refusals, and a merged chain's paths (lookups, adds, deletes, batches).

use super::*;
use crate::filter::bloom::ChainParams;
use crate::filter::guard::{MaxFilterBytes, Unlimited};
use crate::filter::hash::HashScheme;

fn chain(seed: u64, capacity: u64) -> Chain {
    let params = ChainParams::new(0.01, capacity, 2).unwrap();
    Chain::new(params, HashScheme::Xxh3Curved, seed, &Unlimited).unwrap()
}

fn counting(seed: u64, width: u8) -> Chain {
    let params = ChainParams::new(0.01, 1000, 2).unwrap();
    Chain::new_counting(params, seed, width, &Unlimited).unwrap()
}

fn fill(c: &mut Chain, prefix: &str, n: usize) -> Vec<Vec<u8>> {
    let items: Vec<Vec<u8>> = (0..n).map(|i| format!("{prefix}{i}").into_bytes()).collect();
    for it in &items {
        c.add(it, &Unlimited).unwrap();
    }
    items
}

fn merge(dest: &mut Chain, sources: &[&Chain]) -> (usize, usize) {
    let p = plan(Some(dest), sources, &Unlimited).unwrap();
    let r = (p.joined, p.kept_apart);
    p.apply(dest);
    r
}

#[test]
fn same_shape_and_seed_are_ored_into_one_layer() {
    let (mut a, mut b) = (chain(7, 1000), chain(7, 1000));
    let ia = fill(&mut a, "a", 200);
    let ib = fill(&mut b, "b", 200);
    assert_eq!(merge(&mut a, &[&b]), (1, 0));
    assert!(a.members().is_empty());
    assert_eq!(a.layers().len(), 1);
    assert!(ia.iter().chain(&ib).all(|i| a.contains(i)));
    // The count is the estimate from the bits: about 400, between 200 and 400.
    assert!((380..=400).contains(&a.items()), "{}", a.items());
    assert_eq!(a.layers()[0].ones(), a.layers()[0].bits().count_ones());
}

#[test]
fn other_seeds_are_kept_apart_and_still_answer() {
    let (mut a, mut b) = (chain(7, 1000), chain(8, 1000));
    let ia = fill(&mut a, "a", 300);
    let ib = fill(&mut b, "b", 300);
    assert_eq!(merge(&mut a, &[&b]), (0, 1));
    assert_eq!(a.members().len(), 1);
    assert!(ia.iter().chain(&ib).all(|i| a.contains(i)));
    assert_eq!(a.value_items(), 600);
    assert_eq!(a.value_layers(), 2);
    // Adding an item a member holds is no new item.
    assert!(!a.add(&ib[0], &Unlimited).unwrap());
    let mut out = Vec::new();
    a.contains_many(&ib, &mut out);
    assert!(out.iter().all(|&x| x));
    out.clear();
    a.add_many(&ib[..10], &Unlimited, &mut out).unwrap();
    assert!(out.iter().all(|&x| !x));
}

#[test]
fn an_or_that_would_exceed_the_layer_error_is_kept_apart() {
    let (mut a, mut b) = (chain(7, 1000), chain(7, 1000));
    fill(&mut a, "a", 900);
    fill(&mut b, "b", 900);
    // 1800 distinct items in a layer sized for 1000 would be far above its error.
    assert_eq!(merge(&mut a, &[&b]), (0, 1));
    let stats = a.stats(&Unlimited);
    assert!(stats.estimated_error <= 2.0 * 0.01, "{}", stats.estimated_error);
}

#[test]
fn counting_counters_add_and_deletes_reach_members() {
    let (mut a, mut b, mut c) = (counting(1, 4), counting(1, 4), counting(2, 4));
    fill(&mut a, "x", 50);
    fill(&mut b, "x", 50); // the same items: counters reach 2
    let ic = fill(&mut c, "c", 50);
    assert_eq!(merge(&mut a, &[&b, &c]), (1, 1));
    assert_eq!(a.items(), 100);
    assert!(a.delete(b"x1").unwrap());
    assert!(a.contains(b"x1"), "added twice, deleted once");
    assert!(a.delete(b"x1").unwrap());
    assert!(!a.contains(b"x1"));
    assert!(a.delete(&ic[3]).unwrap());
    assert!(!a.contains(&ic[3]));
    assert_eq!(a.members()[0].items(), 49);
}

#[test]
fn kinds_the_result_cannot_hold_are_refused() {
    let plain = chain(1, 1000);
    let (c4, c8) = (counting(1, 4), counting(1, 8));
    let refused = |d: &Chain, s: &Chain| match plan(Some(d), &[s], &Unlimited) {
        Err(FilterError::MergeRefused(r)) => r,
        _ => panic!("not refused"),
    };
    assert_eq!(refused(&plain, &c4), MergeRefusal::CountingWithPlain);
    assert_eq!(refused(&c8, &plain), MergeRefusal::CountingWithPlain);
    assert_eq!(refused(&c4, &c8), MergeRefusal::CounterWidths);
    let params = ChainParams::new(0.01, 1000, 2).unwrap();
    let rb = Chain::new(params, HashScheme::Murmur64, 0, &Unlimited).unwrap();
    assert_eq!(refused(&plain, &rb), MergeRefusal::RedisBloomLayout);
}

#[test]
fn the_guard_sees_the_kept_bytes_before_anything_changes() {
    let (mut a, mut b) = (chain(1, 100_000), chain(2, 100_000));
    fill(&mut a, "a", 10);
    fill(&mut b, "b", 10);
    let before = a.clone();
    let limit = MaxFilterBytes(a.value_info_size() + 1000);
    assert!(matches!(plan(Some(&a), &[&b], &limit), Err(FilterError::FilterLimit { .. })));
    assert_eq!(a, before);
}

#[test]
fn too_many_members_are_refused() {
    let sources: Vec<Chain> = (0..=MAX_MEMBERS as u64).map(|s| chain(100 + s, 100)).collect();
    let refs: Vec<&Chain> = sources.iter().collect();
    let a = chain(1, 100);
    assert!(matches!(
        plan(Some(&a), &refs, &Unlimited),
        Err(FilterError::MergeRefused(MergeRefusal::TooManyParts))
    ));
    assert!(plan(Some(&a), &refs[..MAX_MEMBERS], &Unlimited).is_ok());
}

#[test]
fn a_new_destination_takes_the_first_source_and_members_are_flattened() {
    let (mut a, mut b, mut c) = (chain(1, 1000), chain(2, 1000), chain(3, 1000));
    let ia = fill(&mut a, "a", 10);
    let ib = fill(&mut b, "b", 10);
    let ic = fill(&mut c, "c", 10);
    merge(&mut b, &[&c]);
    let merged = plan(None, &[&a, &b], &Unlimited).unwrap().into_chain().unwrap();
    assert_eq!(merged.seed(), 1);
    assert_eq!(merged.members().len(), 2);
    assert!(merged.members().iter().all(|m| m.members().is_empty()));
    assert!(ia.iter().chain(&ib).chain(&ic).all(|i| merged.contains(i)));
}

#[test]
fn merges_are_deterministic() {
    let (mut a, mut b) = (chain(7, 1000), chain(7, 1000));
    fill(&mut a, "a", 300);
    fill(&mut b, "b", 300);
    let mut a2 = a.clone();
    merge(&mut a, &[&b]);
    merge(&mut a2, &[&b]);
    assert_eq!(a, a2);
}

#[test]
fn a_merge_that_ors_everything_leaves_a_one_layer_chain_without_a_tail() {
    let (mut a, mut b) = (chain(7, 1000), chain(7, 1000));
    fill(&mut a, "a", 10);
    fill(&mut b, "b", 10);
    assert_eq!(a.layers().tail_bytes(), 0);
    merge(&mut a, &[&b]);
    assert_eq!(a.layers().tail_bytes(), 0, "no member, no second layer: the chain alone");
    let c = chain(9, 1000);
    merge(&mut a, &[&c]);
    assert!(a.layers().tail_bytes() > 0, "a member lives in the tail");
}
