//! RedisBloom's formats against what RedisBloom 2.8.2 did with the same data.

use super::*;
use crate::filter::bloom::layer::Layer;
use crate::filter::bloom::params::{MAX_RB_HASHES, MAX_RB_LAYERS, MIN_RB_LAYER_ERROR};
use crate::filter::fields::{FieldWriter, SliceReader};
use crate::filter::{FilterError, Unlimited};

/// The four layouts RedisBloom 2.8.2 was given (options 5 by `BF.RESERVE k 0.01 1000`, the
/// others by `BF.LOADCHUNK` of these headers).
fn layouts() -> Vec<(&'static str, Chain)> {
    let reserve = ChainParams_new();
    vec![
        ("o5", Chain::new(reserve, HashScheme::Murmur64, 0, &Unlimited).unwrap()),
        (
            "o1",
            parse_header(&one_layer_header(1, 9600, 0, 7, 1000, 0.01))
                .unwrap()
                .allocate(&Unlimited)
                .unwrap(),
        ),
        (
            "o4",
            parse_header(&one_layer_header(4, 16384, 14, 7, 1709, 0.01))
                .unwrap()
                .allocate(&Unlimited)
                .unwrap(),
        ),
        (
            "o0",
            parse_header(&one_layer_header(0, 16384, 14, 7, 1709, 0.01))
                .unwrap()
                .allocate(&Unlimited)
                .unwrap(),
        ),
    ]
}

#[allow(non_snake_case)]
fn ChainParams_new() -> crate::filter::bloom::ChainParams {
    crate::filter::bloom::ChainParams::new(0.01, 1000, 2).unwrap()
}

fn set_bits(chain: &Chain) -> Vec<u64> {
    let mut out = Vec::new();
    let mut base = 0;
    for layer in chain.layers() {
        let mut bytes = Vec::new();
        layer.bits().read_bytes(0, layer.bytes(), |b| bytes.extend_from_slice(b)).unwrap();
        for (i, &c) in bytes.iter().enumerate() {
            out.extend((0..8).filter(|b| c >> b & 1 == 1).map(|b| base + i as u64 * 8 + b));
        }
        base += layer.len_bits();
    }
    out
}

/// Bits RedisBloom 2.8.2 set for one item in each empty layout (read back with
/// `BF.SCANDUMP`): MurmurHash64A / MurmurHash2 with RedisBloom's seeds, positions mod bits
/// or mod 2^n2, RedisBloom's bit order in bytes.
#[test]
#[allow(clippy::type_complexity)]
fn one_item_sets_the_bits_redisbloom_sets() {
    let want: &[(&str, &[(&[u8], &[u64])])] = &[
        (
            "o5",
            &[
                (b"hello", &[1905, 2749, 2837, 3681, 6469, 7401, 10189, 11033]),
                (b"", &[700, 3423, 4213, 4746, 6936, 8259, 9582, 10449]),
                (b"abcdefghijk", &[586, 830, 1074, 1318, 6244, 6488, 6732, 7856]),
                (b"xxxxxxxxxxxxx", &[1623, 3047, 3191, 3335, 7727, 7871, 8015, 8159]),
            ],
        ),
        (
            "o1",
            &[
                (b"hello", &[1777, 3614, 4029, 5451, 5866, 7703, 9540]),
                (b"", &[1881, 1916, 3808, 3843, 5735, 7662, 9589]),
                (b"abcdefghijk", &[257, 1747, 1879, 3369, 4991, 6613, 8235]),
                (b"xxxxxxxxxxxxx", &[116, 1671, 3226, 4781, 6336, 7891, 8161]),
            ],
        ),
        (
            "o4",
            &[
                (b"hello", &[9881, 10557, 11233, 11909, 12585, 13261, 13937]),
                (b"", &[1304, 1347, 1390, 6794, 6837, 12241, 12284]),
                (b"abcdefghijk", &[944, 1674, 2404, 3134, 3864, 4594, 5324]),
                (b"xxxxxxxxxxxxx", &[2295, 3343, 7407, 8455, 9503, 13567, 14615]),
            ],
        ),
        (
            "o0",
            &[
                (b"hello", &[2763, 4209, 5655, 7101, 11678, 13124, 14570]),
                (b"", &[2265, 2805, 6496, 7036, 10727, 11267, 14958]),
                (b"abcdefghijk", &[1107, 5035, 6185, 10113, 11263, 15191, 16341]),
                (b"xxxxxxxxxxxxx", &[2605, 5914, 9223, 12371, 12532, 15680, 15841]),
            ],
        ),
    ];
    for ((name, empty), (want_name, items)) in layouts().into_iter().zip(want) {
        assert_eq!(name, *want_name);
        for (item, bits) in items.iter() {
            let mut c = empty.clone();
            assert!(c.add(item, &Unlimited).unwrap());
            assert_eq!(set_bits(&c), *bits, "{name} {item:?}");
            assert!(c.contains(item));
        }
    }
}

/// `BF.ADD g item0 … item5999` on each layout in RedisBloom 2.8.2: how many were new, and
/// `BF.DEBUG` afterwards (capacity, bits, hashes and items of every layer: growth of
/// power-of-two layers from their grown capacity, NOROUND growth, error halving).
#[test]
fn six_thousand_adds_grow_as_redisbloom_grows() {
    type L = (u64, u64, u32, u64);
    let want: &[(&str, u64, &[L])] = &[
        ("o5", 5967, &[(11072, 1000, 8, 1000), (24960, 2000, 9, 2000), (55680, 4000, 10, 2967)]),
        ("o1", 5921, &[(9600, 1000, 7, 1000), (22080, 2000, 8, 2000), (49920, 4000, 9, 2921)]),
        ("o4", 5945, &[(16384, 1709, 7, 1709), (65536, 5942, 8, 4236)]),
        ("o0", 5959, &[(16384, 1709, 7, 1709), (65536, 5942, 8, 4250)]),
    ];
    for ((name, mut c), (_, new, layers)) in layouts().into_iter().zip(want) {
        let items: Vec<String> = (0..6000).map(|i| format!("item{i}")).collect();
        let mut one_by_one = c.clone();
        let mut count = 0;
        for item in &items {
            count += u64::from(one_by_one.add(item.as_bytes(), &Unlimited).unwrap());
        }
        assert_eq!(count, *new, "{name}");
        let got: Vec<L> = one_by_one
            .layers()
            .iter()
            .map(|l| (l.len_bits(), l.capacity(), l.hashes(), l.items()))
            .collect();
        assert_eq!(got, *layers, "{name}");
        // The batched path gives the same results and bits.
        let mut out = Vec::new();
        c.add_many(&items, &Unlimited, &mut out).unwrap();
        assert_eq!(out.iter().filter(|&&b| b).count() as u64, *new, "{name}");
        assert_eq!(c, one_by_one, "{name}");
        let mut found = Vec::new();
        c.contains_many(&items, &mut found);
        assert!(found.iter().all(|&b| b));
        let absent: Vec<String> = (0..3000).map(|i| format!("absent{i}")).collect();
        found.clear();
        c.contains_many(&absent, &mut found);
        let singly: Vec<bool> = absent.iter().map(|a| c.contains(a.as_bytes())).collect();
        assert_eq!(found, singly, "{name}");
        // The way back: the header re-parses to the same chain shape.
        let back = parse_header(&header(&c)).unwrap().allocate(&Unlimited).unwrap();
        assert_eq!(header(&back), header(&c));
    }
}

fn grown(name: &str) -> Chain {
    let (_, mut c) = layouts().into_iter().find(|(n, _)| *n == name).unwrap();
    for i in 0..2500 {
        c.add(format!("item{i}").as_bytes(), &Unlimited).unwrap();
    }
    c
}

#[test]
fn rdb_value_and_own_format_round_trip() {
    for name in ["o5", "o1", "o4", "o0"] {
        let c = grown(name);
        let mut buf = Vec::new();
        write_rdb(&c, &mut buf);
        for encver in 1..=4 {
            // Versions below 4 have no growth field; below 2 no options (only options 0).
            let mut v = Vec::new();
            let mut r = SliceReader::new(&buf);
            use crate::filter::fields::FieldReader as _;
            let (items, n, options, growth) =
                (r.u64().unwrap(), r.u64().unwrap(), r.u64().unwrap(), r.u64().unwrap());
            if encver < 2 && options != 0 {
                continue;
            }
            v.extend_from_slice(&items.to_le_bytes());
            v.extend_from_slice(&n.to_le_bytes());
            if encver >= 2 {
                v.extend_from_slice(&options.to_le_bytes());
            }
            if encver >= 4 {
                v.extend_from_slice(&growth.to_le_bytes());
            }
            v.extend_from_slice(&buf[32..]);
            let back = read_rdb(&mut SliceReader::new(&v), encver, &Unlimited).unwrap();
            assert_eq!(back, c, "{name} encver {encver}");
        }
        let mut ours = Vec::new();
        crate::filter::bloom::codec::write_chain(&c, &mut ours);
        let back =
            crate::filter::bloom::codec::read_chain(&mut SliceReader::new(&ours), &Unlimited)
                .unwrap();
        assert_eq!(back, c, "{name}");
    }
}

#[test]
fn every_truncation_and_versions_and_options_are_refused() {
    let c = grown("o5");
    let mut buf = Vec::new();
    write_rdb(&c, &mut buf);
    for cut in 0..buf.len() {
        assert!(read_rdb(&mut SliceReader::new(&buf[..cut]), 4, &Unlimited).is_err(), "cut {cut}");
    }
    for v in [0, 5, 512, -1] {
        assert_eq!(
            read_rdb(&mut SliceReader::new(&buf), v, &Unlimited).unwrap_err(),
            Refusal::Version(v)
        );
    }
    for bad in [2u64, 16, 1 << 40] {
        let mut b = buf.clone();
        b[16..24].copy_from_slice(&(5 | bad).to_le_bytes());
        assert_eq!(
            read_rdb(&mut SliceReader::new(&b), 4, &Unlimited).unwrap_err(),
            Refusal::Options(5 | bad)
        );
    }
    let h = header(&c);
    for cut in 0..h.len() {
        assert!(parse_header(&h[..cut]).is_err(), "cut {cut}");
    }
    let mut longer = h.clone();
    longer.push(0);
    assert!(parse_header(&longer).is_err());
}

/// Flipping any bit of the header's fields is caught, except where the format has freedom:
/// the growth (any value ≥ 1 is valid), `FORCE64` (either hash fits any layout) and `bpe`'s
/// lowest bits (checked to 1e-12, not bit for bit).
#[test]
fn altered_header_fields_are_refused() {
    let c = grown("o5");
    let h = header(&c);
    for byte in 0..h.len() {
        if (16..20).contains(&byte) {
            continue; // growth
        }
        let link = byte.checked_sub(HEADER_BYTES).map(|o| o % HEADER_LINK_BYTES);
        if matches!(link, Some(32..=35)) {
            continue; // the low 32 bits of bpe
        }
        for bit in 0..8 {
            if (byte, bit) == (12, 2) {
                continue; // FORCE64
            }
            let mut bad = h.clone();
            bad[byte] ^= 1 << bit;
            assert!(parse_header(&bad).is_err(), "byte {byte} bit {bit} accepted");
        }
    }
}

#[test]
fn forged_layers_are_refused() {
    let ok = one_layer_header(5, 9600, 0, 7, 1000, 0.01);
    assert!(parse_header(&ok).is_ok());
    // Capacity far above what the bits hold; bits not a multiple of 64; n2 with NOROUND;
    // zero layers; 65 layers; nonscaling with two layers; hashes that do not fit the bpe.
    let cases = [
        one_layer_header(5, 9600, 0, 7, 100_000, 0.01),
        one_layer_header(5, 9601, 0, 7, 1000, 0.01),
        one_layer_header(5, 9600, 3, 7, 1000, 0.01),
        one_layer_header(4, 9600, 0, 7, 1000, 0.01),
        one_layer_header(5, 9600, 0, 8, 1000, 0.01),
        one_layer_header(5, 9600, 0, 7, 1000, 1.5),
        one_layer_header(5, 9600, 0, 7, 1000, 0.0),
        one_layer_header(5, 1 << 50, 0, 7, 1000, 0.01),
        one_layer_header(6, 9600, 0, 7, 1000, 0.01),
    ];
    for (i, h) in cases.iter().enumerate() {
        assert!(parse_header(h).is_err(), "case {i}");
    }
    let mut zero = ok.clone();
    zero[8..12].copy_from_slice(&0u32.to_le_bytes());
    assert!(parse_header(&zero[..HEADER_BYTES]).is_err());
    let mut many = ok.clone();
    many[8..12].copy_from_slice(&65u32.to_le_bytes());
    assert!(parse_header(&many).is_err());
}

/// The widest chain RedisBloom can write: growth 1 from a first error of 0.75 (a header
/// RedisBloom's LOADCHUNK accepts), grown by adds until the next error would be 0.
fn widest() -> Chain {
    let mut h = one_layer_header(5, 64, 0, 1, 1, 0.75);
    h[16..20].copy_from_slice(&1u32.to_le_bytes());
    let mut c = parse_header(&h).unwrap().allocate(&Unlimited).unwrap();
    let mut i = 0u64;
    let refused = loop {
        if let Err(e) = c.add(format!("wide:{i}").as_bytes(), &Unlimited) {
            break e;
        }
        i += 1;
    };
    // The same item count as RedisBloom 2.8 (tests/import.rs makes it there).
    assert_eq!((i, refused), (2288, FilterError::TooManyLayers));
    c
}

/// Every layer count up to RedisBloom's bound comes in, with errors down to 2^-1074 and
/// 1,075 hashes; one more layer, or a count beyond the bytes present, is refused before
/// anything is allocated for it.
#[test]
fn the_widest_redisbloom_chain_loads_and_no_more() {
    let c = widest();
    assert_eq!(c.layers().len(), MAX_RB_LAYERS);
    let last = c.layers().len() - 1;
    assert_eq!(c.layer_error(last), MIN_RB_LAYER_ERROR);
    assert_eq!(c.layers()[last].hashes(), MAX_RB_HASHES);
    // Header and RDB value round-trip.
    let h = header(&c);
    assert_eq!(header(&parse_header(&h).unwrap().allocate(&Unlimited).unwrap()), h);
    let mut rdb = Vec::new();
    write_rdb(&c, &mut rdb);
    assert_eq!(read_rdb(&mut SliceReader::new(&rdb), 4, &Unlimited).unwrap(), c);
    let mut ours = Vec::new();
    crate::filter::bloom::codec::write_chain(&c, &mut ours);
    let back =
        crate::filter::bloom::codec::read_chain(&mut SliceReader::new(&ours), &Unlimited).unwrap();
    assert_eq!(back, c);
    // One layer more (a copy of the last, so only the count is wrong): refused.
    let mut more = h.clone();
    more[8..12].copy_from_slice(&(MAX_RB_LAYERS as u32 + 1).to_le_bytes());
    more.extend_from_slice(&h[h.len() - HEADER_LINK_BYTES..]);
    assert_eq!(parse_header(&more).unwrap_err(), Refusal::Field("layer count"));
    // Forged RDB counts: beyond the bound, refused at once; within it but with fewer
    // layers present, refused when the bytes run out.
    for (count, want) in [
        (u64::MAX, Refusal::Field("layer count")),
        (MAX_RB_LAYERS as u64 + 1, Refusal::Field("layer count")),
        (MAX_RB_LAYERS as u64, Refusal::Field("value (truncated)")),
    ] {
        let mut v = Vec::new();
        write_rdb(&grown("o5"), &mut v);
        v[8..16].copy_from_slice(&count.to_le_bytes());
        assert_eq!(read_rdb(&mut SliceReader::new(&v), 4, &Unlimited).unwrap_err(), want);
    }
    // A layer whose error is 0 (what RedisBloom 2.8 leaves behind when a layer past
    // 2^-1074 fails to build; RedisBloom 8 refuses it too) is refused.
    let mut zero = h.clone();
    let at = h.len() - HEADER_LINK_BYTES + 24;
    zero[at..at + 8].copy_from_slice(&0f64.to_bits().to_le_bytes());
    assert!(parse_header(&zero).is_err());
}

/// The deepest chain RedisBloom's commands make (`BF.RESERVE k 0.99 1 EXPANSION 1`, first
/// error 0.495): 1,074 layers; a new chain made here with the same parameters grows the same
/// way, as RedisBloom grows it, while a native one stops at this module's own limits.
#[test]
fn redisbloom_chains_grow_as_redisbloom_native_ones_within_our_limits() {
    let params = crate::filter::bloom::ChainParams::new(0.99, 1, 1).unwrap();
    let mut rb = Chain::new(params, HashScheme::Murmur64, 0, &Unlimited).unwrap();
    let mut i = 0u64;
    while rb.add(format!("top:{i}").as_bytes(), &Unlimited).is_ok() {
        i += 1;
    }
    assert_eq!((i, rb.layers().len()), (2302, MAX_RB_LAYERS - 1));
    assert_eq!(rb.layer_error(MAX_RB_LAYERS - 2), MIN_RB_LAYER_ERROR);
    let mut native = Chain::new(params, HashScheme::Xxh3Enhanced, 7, &Unlimited).unwrap();
    let mut i = 0u64;
    while native.add(format!("top:{i}").as_bytes(), &Unlimited).is_ok() {
        i += 1;
    }
    assert!(native.layers().len() <= crate::filter::bloom::params::MAX_LAYERS);
    // New filters keep this module's error floor, whatever their scheme.
    let tiny = crate::filter::bloom::ChainParams::in_ranges(1e-30, 100, 2).unwrap();
    assert_eq!(
        Chain::new(tiny, HashScheme::Murmur64, 0, &Unlimited).unwrap_err(),
        FilterError::ErrorTooSmall
    );
}

/// RedisBloom 2.2.0–2.2.14 rounded NOROUND layers to whole bytes: 1000 items at 0.005 is
/// 11027 bits, stored as 1379 bytes (11032 bits), positions mod 11032. Such a layer loads,
/// probes mod 11032, counts 1379 bytes in INFO and dumps, and grows as RedisBloom does now.
#[test]
fn byte_rounded_noround_layers_load() {
    let mut h = one_layer_header(5, 11032, 0, 8, 1000, 0.005);
    let meta = parse_header(&h).unwrap();
    let mut c = meta.allocate(&Unlimited).unwrap();
    assert_eq!((c.layers()[0].len_bits(), c.layers()[0].bytes()), (11032, 1379));
    assert_eq!(c.info_size(), 32 + 64 + 1379);
    c.add(b"hello", &Unlimited).unwrap();
    let h1 = crate::filter::hash::HashScheme::Murmur64.hash(b"hello", 0);
    let want: Vec<u64> = {
        let mut v: Vec<u64> = h1.modular_probes(11032, 8).collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(set_bits(&c), want);
    assert_eq!(
        header(&c)[..HEADER_BYTES + 16],
        {
            h[0] = 1; // one item now
            h[HEADER_BYTES + 16] = 1;
            h
        }[..HEADER_BYTES + 16]
    );
    let mut rdb = Vec::new();
    write_rdb(&c, &mut rdb);
    assert_eq!(read_rdb(&mut SliceReader::new(&rdb), 4, &Unlimited).unwrap(), c);
    assert!(parse_header(&one_layer_header(5, 11040, 0, 8, 1000, 0.005)).is_err());
}

/// RedisBloom before 2.2 stored 0 bits for power-of-two layers, and tiny ones in fewer than
/// 8 bytes: both load, with positions still below 2^n2.
#[test]
fn legacy_power_of_two_layers_load() {
    let mut v = Vec::new();
    v.u64(1); // items
    v.u64(1); // layers
    v.u64(0); // options (encver 2+)
    let (cap, err) = (2u64, 0.1);
    let size = crate::filter::bloom::params::rb_layer_size(cap, err, false).unwrap();
    assert_eq!(size.n2, 4);
    v.u64(size.capacity);
    v.f64(err);
    v.u64(u64::from(size.hashes));
    v.f64(size.bpe);
    v.u64(0); // bits: not stored then
    v.u64(u64::from(size.n2));
    // The one item's bits, in a 2-byte array.
    let mut c = Chain::from_redisbloom(
        HashScheme::Murmur32,
        false,
        2,
        err,
        vec![Layer::new_redisbloom(&size, 0).unwrap()],
        0,
    )
    .unwrap();
    c.add(b"legacy", &Unlimited).unwrap();
    let mut arr = Vec::new();
    c.layers()[0].bits().read_bytes(0, 8, |b| arr.extend_from_slice(b)).unwrap();
    assert!(arr[2..].iter().all(|&b| b == 0));
    v.bytes(&arr[..2]);
    v.u64(1);
    let back = read_rdb(&mut SliceReader::new(&v), 3, &Unlimited).unwrap();
    assert_eq!(back, c);
    assert!(back.contains(b"legacy"));
    // An array of the wrong length is refused.
    let mut bad = v.clone();
    let at = bad.len() - 8 - 2 - 8;
    bad[at..at + 8].copy_from_slice(&3u64.to_le_bytes());
    bad.insert(at + 8, 0);
    assert!(read_rdb(&mut SliceReader::new(&bad), 3, &Unlimited).is_err());
}
