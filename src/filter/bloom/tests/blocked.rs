//! Blocked chains (`LAYOUT BLOCKED`): sizing, measured error, the kernels against a textbook
//! reading of the layout, growth, the batched paths, and every byte format.

use super::*;
use crate::filter::bloom::codec::{self, ChainMeta};
use crate::filter::bloom::layer::Rule;
use crate::filter::fields::SliceReader;
use crate::filter::hash::ItemHash;

fn blocked(error: f64, capacity: u64, expansion: u64) -> Chain {
    let p = ChainParams::new(error, capacity, expansion).unwrap();
    Chain::new_blocked(p, 0xb10c, &Unlimited).unwrap()
}

fn items(prefix: &str, n: u64) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

/// The bits an item probes in a blocked layer of `bits` bits, written from the layout's
/// definition alone: block `(h1 · blocks) >> 64` on 128 bits, then bit `x >> 55` of it for
/// `x = h2, h2·φ, h2·φ², …`.
fn textbook_probes(bits: u64, k: u32, h: ItemHash) -> Vec<u64> {
    let blocks = bits / 512;
    let block = ((u128::from(h.h1) * u128::from(blocks)) >> 64) as u64;
    let mut x = h.h2;
    (0..k)
        .map(|_| {
            let p = block * 512 + (x >> 55);
            x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            p
        })
        .collect()
}

fn textbook_holds(layer: &Layer, h: ItemHash) -> bool {
    textbook_probes(layer.len_bits(), layer.hashes(), h).iter().all(|&p| layer.bits().get(p))
}

/// RocksDB's published figure for its FastLocalBloom: 0.957% at 10 bits per key, 6 probes
/// (0.954% for a standard Bloom filter).
#[test]
fn the_model_gives_rocksdb_figure() {
    let e = blocked_error(10.0, 6);
    assert!((e - 0.00957).abs() < 0.00001, "{e}");
    // More bits, lower error; the standard filter's formula is below the blocked one.
    assert!(blocked_error(12.0, 6) < e);
    assert!(e > (1.0 - (-6.0f64 / 10.0).exp()).powi(6));
}

/// Bits per item of a blocked layer against a standard one: at most 1.10× at 1% (1.046×),
/// 1.087× at 0.1%; whole blocks; the probe count the model chose; the model's error for the
/// size at most 0.95 × the target.
#[test]
fn blocked_sizing_costs_a_few_bits_per_item() {
    let capacity = 1_000_000;
    let mut ratios = Vec::new();
    for error in [0.1, 0.01, 0.005, 0.001, 0.0001, 1e-6] {
        let s = layer_size(capacity, error).unwrap();
        let b = blocked_layer_size(capacity, error).unwrap();
        assert_eq!(b.bits % 512, 0);
        assert_eq!((b.capacity, b.error, b.bpe), (capacity, error, s.bpe));
        let per_item = b.bits as f64 / capacity as f64;
        assert!(blocked_error(per_item, b.hashes) <= error * 0.95, "{error}");
        ratios.push((error, b.bits as f64 / s.bits as f64, b.hashes));
    }
    eprintln!("blocked bits / standard bits, probes: {ratios:?}");
    assert!(ratios[1].1 <= 1.10, "1%: {:?}", ratios[1]);
    assert!(ratios[3].1 <= 1.10, "0.1%: {:?}", ratios[3]);
    assert_eq!(ratios[1].2, 7);
    // Tiny layers are one block; the same refusals as the standard sizing.
    assert_eq!(blocked_layer_size(1, 0.01).unwrap().bits, 512);
    assert_eq!(blocked_layer_size(0, 0.01).unwrap_err(), FilterError::BadParameter);
    assert_eq!(blocked_layer_size(10, 1e-20).unwrap_err(), FilterError::ErrorTooSmall);
    assert_eq!(blocked_layer_size(1 << 40, 0.01).unwrap_err(), FilterError::TooLarge);
    // The floor of every native chain still sizes (a scaling chain's last layers).
    let floor = blocked_layer_size(10, MIN_LAYER_ERROR).unwrap();
    assert!(floor.hashes <= MAX_HASHES);
    // Errors near 1 size too (at least 3/4 bit per item).
    assert!(blocked_layer_size(1000, 0.99).unwrap().bits >= 750);
}

/// A nonscaling blocked filter filled to capacity: no false negative, and the measured
/// false-positive rate over many absent items at or under the target.
fn measured_at_capacity(error: f64, capacity: u64, probes: u64) -> f64 {
    let mut c = blocked(error, capacity, 0);
    assert_eq!(c.layers()[0].rule(), Rule::Blocked);
    // Distinct items until the layer is full (a false positive among them is not counted).
    let offered = items("in:", capacity + capacity / 10);
    let mut out = Vec::new();
    let refused = c.add_many(&offered, &Unlimited, &mut out);
    assert_eq!(refused, Err(FilterError::NonscalingFull));
    assert!(c.layers()[0].is_full());
    let present = &offered[..out.len()];
    out.clear();
    c.contains_many(present, &mut out);
    assert!(out.iter().all(|&b| b), "false negative");
    let mut hits = 0u64;
    let absent = 1 << 16;
    for start in (0..probes).step_by(absent) {
        let batch: Vec<Vec<u8>> = (start..(start + absent as u64).min(probes))
            .map(|i| format!("out:{i}").into_bytes())
            .collect();
        out.clear();
        c.contains_many(&batch, &mut out);
        hits += out.iter().filter(|&&b| b).count() as u64;
    }
    let rate = hits as f64 / probes as f64;
    eprintln!("blocked, target {error}: measured {rate} ({hits} of {probes})");
    rate
}

#[test]
fn measured_error_at_capacity_is_within_one_percent() {
    assert!(measured_at_capacity(0.01, 100_000, 1_000_000) <= 0.01);
}

#[test]
fn measured_error_at_capacity_is_within_a_tenth_of_a_percent() {
    assert!(measured_at_capacity(0.001, 100_000, 3_000_000) <= 0.001);
}

#[test]
fn measured_error_at_capacity_is_within_a_hundredth_of_a_percent() {
    assert!(measured_at_capacity(0.0001, 100_000, 16_000_000) <= 0.0001);
}

/// The kernels (one slice and segments, one item and whole blocks) set and test exactly the
/// textbook probes, and count the bits they set.
#[test]
fn kernels_equal_the_textbook_layout() {
    use crate::filter::bloom::bits::{SEGMENT_WORDS, View};
    let sizes = [(1000u64, 0.01), (50_000, 1e-6), (((2 * SEGMENT_WORDS + 1000) * 64) / 11, 0.01)];
    for (capacity, error) in sizes {
        let size = blocked_layer_size(capacity, error).unwrap();
        let mut layer = Layer::new_blocked(&size).unwrap();
        let mut reference = Layer::new_blocked(&size).unwrap();
        let many = matches!(layer.bits().view(), View::Many(_));
        for n in 0..3000u64 {
            let h = HashScheme::Xxh3Enhanced.hash(&n.to_le_bytes(), 7);
            let expected = textbook_holds(&reference, h);
            assert_eq!(layer.contains(HashScheme::Xxh3Enhanced, h), expected, "n={n}");
            let mut flipped = 0;
            for p in textbook_probes(size.bits, size.hashes, h) {
                flipped += u64::from(!reference.bits.set(p));
            }
            let before = layer.ones();
            layer.insert(HashScheme::Xxh3Enhanced, h);
            assert_eq!(layer.ones() - before, flipped, "n={n}: bits newly set");
            assert!(layer.contains(HashScheme::Xxh3Enhanced, h));
        }
        assert!(layer.bits == reference.bits, "capacity {capacity}: other bits than the textbook");
        assert_eq!(layer.ones(), layer.bits().count_ones());
        eprintln!("capacity {capacity}: segments {many}");
    }
}

/// A scaling blocked chain grows blocked layers sized as the blocked sizing says, answers
/// every added item, and its batched paths equal the one-by-one ones (bits and answers).
#[test]
fn blocked_chains_grow_and_batches_equal_one_by_one() {
    let mut c = blocked(0.01, 100, 2);
    let all = items("g", 3000);
    let mut one = c.clone();
    let one_results: Vec<bool> = all.iter().map(|i| one.add(i, &Unlimited).unwrap()).collect();
    let mut out = Vec::new();
    c.add_many(&all, &Unlimited, &mut out).unwrap();
    assert_eq!(out, one_results);
    assert_eq!(c, one);
    assert!(c.layers().len() >= 5);
    for (i, layer) in c.layers().iter().enumerate() {
        assert_eq!(layer.rule(), Rule::Blocked);
        assert_eq!(Ok(c.layer_size(i)), expected_layer_in(&c.params(), Layout::Blocked, i));
        assert_eq!(layer.ones(), layer.bits().count_ones());
    }
    assert_eq!(c.layout(), Layout::Blocked);
    assert!(all.iter().all(|i| c.contains(i)));
    let mut probes = all.clone();
    probes.extend(items("absent", 3000));
    out.clear();
    c.contains_many(&probes, &mut out);
    assert_eq!(out, probes.iter().map(|p| c.contains(p)).collect::<Vec<_>>());
    // Re-adding changes nothing.
    out.clear();
    c.add_many(&all, &Unlimited, &mut out).unwrap();
    assert!(out.iter().all(|&n| !n));
    assert_eq!(c, one);
    // Not a counting chain.
    assert_eq!(c.delete(b"g1").unwrap_err(), FilterError::NotCounting);
}

/// Prefetched (≥ 4 MiB) and multi-segment blocked layers: batches equal one by one.
#[test]
fn large_blocked_layers_batch_as_one_by_one() {
    for (capacity, expansion) in [(4_000_000, 2), (60_000_000, 0)] {
        let c = blocked(0.01, capacity, expansion);
        assert!(c.layers()[0].bytes() >= PREFETCH_MIN_BYTES);
        let all = items("p", 5000);
        let mut one = c.clone();
        let expected: Vec<bool> = all.iter().map(|i| one.add(i, &Unlimited).unwrap()).collect();
        let mut many = c;
        let mut out = Vec::new();
        many.add_many(&all, &Unlimited, &mut out).unwrap();
        assert_eq!(out, expected);
        assert!(many == one);
        let mut probes = all.clone();
        probes.extend(items("q", 5000));
        out.clear();
        many.contains_many(&probes, &mut out);
        assert_eq!(out, probes.iter().map(|p| many.contains(p)).collect::<Vec<_>>());
    }
}

/// A nonscaling blocked chain refuses items once full; a byte limit refuses its growth.
#[test]
fn blocked_limits_hold() {
    let mut c = blocked(0.01, 10, 0);
    let mut added = 0;
    let mut err = None;
    for i in 0..100 {
        match c.add(format!("n{i}").as_bytes(), &Unlimited) {
            Ok(new) => added += u32::from(new),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    assert_eq!(err, Some(FilterError::NonscalingFull));
    assert!(added >= 10);
    let p = ChainParams::new(0.01, 1000, 2).unwrap();
    assert!(matches!(
        Chain::new_blocked(p, 1, &MaxFilterBytes(100)),
        Err(FilterError::FilterLimit { .. })
    ));
}

fn encode(c: &Chain) -> Vec<u8> {
    let mut buf = Vec::new();
    codec::write_chain(c, &mut buf);
    buf
}

/// The RDB fields, the dump header and its chunks keep the layout; the field that says so is
/// `counters` = 512, and a standard chain's sizes under it (or a blocked chain's under 0) are
/// refused, as is any other value.
#[test]
fn blocked_chains_round_trip_every_format() {
    let mut c = blocked(0.01, 100, 2);
    for i in items("r", 1000) {
        c.add(&i, &Unlimited).unwrap();
    }
    assert!(c.layers().len() > 2);
    let buf = encode(&c);
    let back = codec::read_chain(&mut SliceReader::new(&buf), &Unlimited).unwrap();
    assert_eq!(back, c);
    assert_eq!(back.layout(), Layout::Blocked);
    assert_eq!(back.stats(&Unlimited), c.stats(&Unlimited));

    let header = codec::dump_header(&c);
    assert_eq!(header[12..16], codec::DUMP_VERSION_COUNTING.to_le_bytes());
    let meta = codec::parse_dump_header(&header).unwrap();
    assert_eq!(meta, ChainMeta::of(&c));
    let mut restored = meta.allocate(&Unlimited).unwrap();
    let mut offset = 0;
    while let Some(bytes) = crate::filter::bloom::chunks::read_chunk(&c, offset) {
        crate::filter::bloom::chunks::write_chunk(&mut restored, offset, &bytes).unwrap();
        offset += bytes.len() as u64;
    }
    assert_eq!(restored, c);
    assert_eq!(restored.stats(&Unlimited), c.stats(&Unlimited));
    assert_eq!(codec::creation_header(&c), codec::dump_header(&blocked(0.01, 100, 2)));

    // `counters` is the sixth u64 of the fields (the RDB layout has no prefix).
    let at = 5 * 8;
    assert_eq!(buf[at..at + 8], 512u64.to_le_bytes());
    for bad in [0u64, 4, 8, 256, 513, 1024, u64::MAX] {
        let mut b = buf.clone();
        b[at..at + 8].copy_from_slice(&bad.to_le_bytes());
        assert!(codec::read_chain(&mut SliceReader::new(&b), &Unlimited).is_err(), "{bad}");
        let mut h = header.clone();
        h[16 + at..16 + at + 8].copy_from_slice(&bad.to_le_bytes());
        assert!(codec::parse_dump_header(&h).is_err(), "header {bad}");
    }
    // A standard chain's fields claiming the blocked layout are refused (other sizes).
    let p = ChainParams::new(0.01, 100, 2).unwrap();
    let standard = Chain::new(p, HashScheme::Xxh3Enhanced, 1, &Unlimited).unwrap();
    let mut b = encode(&standard);
    b[at..at + 8].copy_from_slice(&512u64.to_le_bytes());
    assert!(codec::read_chain(&mut SliceReader::new(&b), &Unlimited).is_err());
    // Layers of another rule never assemble into a blocked chain, nor the reverse.
    let layers: Vec<Layer> = c.layers().to_vec();
    let p = c.params();
    assert!(Chain::from_parts(p, c.scheme(), c.seed(), layers.clone(), c.items()).is_ok());
    assert!(Chain::from_parts(p, HashScheme::Murmur64, 0, layers, c.items()).is_err());
    let mut mixed: Vec<Layer> = c.layers().to_vec();
    mixed[0] = Layer::new(100, 0.005).unwrap();
    assert!(Chain::from_parts(p, c.scheme(), c.seed(), mixed, c.items()).is_err());
}

/// Every flipped bit of a blocked chain's metadata but the seed is refused.
#[test]
fn altered_blocked_metadata_is_refused() {
    let mut c = blocked(0.01, 50, 2);
    for i in items("m", 200) {
        c.add(&i, &Unlimited).unwrap();
    }
    let buf = encode(&c);
    let mut m = Vec::new();
    ChainMeta::of(&c).write(&mut m);
    for byte in (0..m.len()).filter(|b| !(8..16).contains(b)) {
        for bit in 0..8 {
            let mut bad = buf.clone();
            bad[byte] ^= 1 << bit;
            let r = codec::read_chain(&mut SliceReader::new(&bad), &Unlimited);
            assert!(r.is_err(), "byte {byte} bit {bit} accepted");
        }
    }
}

/// Blocked chains are made with hash scheme 4 (xxh3-64); blocked chains stored with scheme 1
/// (xxh3-128) still load from every format and answer for their items, and grow in
/// scheme 1. Scheme 4 goes with the blocked layout only: its id on a standard or counting
/// chain's fields is refused.
#[test]
fn both_hash_schemes_of_blocked_chains_load_and_answer() {
    let c = blocked(0.01, 100, 2);
    assert_eq!(c.scheme(), HashScheme::Xxh3Blocked);
    // A scheme-1 blocked chain, as built before scheme 4: the same layers, scheme 1's hash.
    let p = ChainParams::new(0.01, 100, 2).unwrap();
    let mut old =
        Chain::from_parts(p, HashScheme::Xxh3Enhanced, 0xb10c, c.layers().to_vec(), 0).unwrap();
    let all = items("s1-", 1000);
    for i in &all {
        old.add(i, &Unlimited).unwrap();
    }
    assert!(old.layers().len() > 2);
    // Its probes are scheme 1's: the textbook layout over xxh3-128's halves.
    let h = HashScheme::Xxh3Enhanced.hash(&all[999], 0xb10c);
    assert!(textbook_holds(old.layers().last(), h));
    let buf = encode(&old);
    assert_eq!(buf[..8], 1u64.to_le_bytes());
    let back = codec::read_chain(&mut SliceReader::new(&buf), &Unlimited).unwrap();
    assert_eq!(back, old);
    assert_eq!(back.scheme(), HashScheme::Xxh3Enhanced);
    let header = codec::dump_header(&old);
    assert_eq!(codec::parse_dump_header(&header).unwrap(), ChainMeta::of(&old));
    let mut out = Vec::new();
    back.contains_many(&all, &mut out);
    assert!(out.iter().all(|&b| b));

    // Scheme 4 on a standard or counting chain's fields is refused.
    let new_buf = encode(&c);
    assert_eq!(new_buf[..8], 4u64.to_le_bytes());
    let standard = Chain::new(p, HashScheme::Xxh3Enhanced, 1, &Unlimited).unwrap();
    let counting = Chain::new_counting(p, 1, 4, &Unlimited).unwrap();
    for chain in [standard, counting] {
        let mut b = encode(&chain);
        b[..8].copy_from_slice(&4u64.to_le_bytes());
        assert!(codec::read_chain(&mut SliceReader::new(&b), &Unlimited).is_err());
        let layers = chain.layers().to_vec();
        let (p, seed, n) = (chain.params(), chain.seed(), chain.items());
        assert!(Chain::from_parts(p, HashScheme::Xxh3Blocked, seed, layers, n).is_err());
    }
}
