//! Encodings: RDB round-trips and truncations, corrupt fields and row tags refused,
//! `BF.SCANDUMP` chunks, encoding-1 data and the committed values of the older layouts.

use super::*;
use crate::filter::MaxFilterBytes;
use crate::filter::fields::FieldWriter;
use crate::filter::fields::SliceReader;
use crate::filter::mem::le_bytes;
use crate::filter::window::codec::{
    dump_header, parse_dump_header, read_chunk, read_meta, read_rdb, read_rdb_v1, write_chunk,
    write_meta, write_rdb,
};

#[test]
fn rdb_round_trip_and_every_truncation_refused() {
    for layout in LAYOUTS {
        rdb_round_trip_in(layout);
    }
}

fn rdb_round_trip_in(layout: WindowLayout) {
    let mut f = time_filter_in(layout, 0.01, 300, 5000, 100);
    for (i, x) in names("r", 900).iter().enumerate() {
        f.add(x.as_bytes(), 100 + i as u64 * 9);
    }
    let mut buf = Vec::new();
    write_rdb(&f, &mut buf);
    let back = read_rdb(&mut SliceReader::new(&buf), &Unlimited).unwrap();
    assert!(back == f);
    for cut in (0..buf.len()).step_by(13) {
        assert!(read_rdb(&mut SliceReader::new(&buf[..cut]), &Unlimited).is_err(), "cut {cut}");
    }
    // The guard is asked before the slices are read.
    let e = read_rdb(&mut SliceReader::new(&buf), &MaxFilterBytes(64)).unwrap_err();
    assert!(matches!(e, FilterError::FilterLimit { .. }));
}

#[test]
fn corrupt_fields_are_refused() {
    for layout in LAYOUTS {
        corrupt_fields_in(layout);
    }
}

fn corrupt_fields_in(layout: WindowLayout) {
    // Begun long after time 0, so that a start time of 0 is a whole generation too early.
    let f = time_filter_in(layout, 0.01, 300, 5000, 1_000_000);
    let mut meta = Vec::new();
    super::codec::write_meta(&f, &mut meta);
    let fields = meta.len() / 8;
    assert!(read_meta(&mut SliceReader::new(&meta), layout).is_ok());
    // Flipping any field's high bits (or zeroing it) never passes validation silently, except
    // the seed (index 9, 10 after the probes of the generations layout), the counts of a time
    // window (any value is valid) and the turn count (tags are checked against it later).
    let seed = if layout == WindowLayout::Generations { 10 } else { 9 };
    for i in 0..fields {
        if i == seed || i >= seed + 4 {
            continue;
        }
        for v in [0u64, u64::MAX, 1 << 40] {
            let mut m = meta.clone();
            let orig = u64::from_le_bytes(m[i * 8..i * 8 + 8].try_into().unwrap());
            if v == orig || (i == 3 && f64::from_bits(v) == f64::from_bits(orig)) {
                continue;
            }
            m[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            assert!(
                read_meta(&mut SliceReader::new(&m), layout).is_err(),
                "{layout:?} field {i} = {v}"
            );
        }
    }
}

#[test]
fn scandump_chunks_rebuild_the_filter() {
    for layout in LAYOUTS {
        scandump_in(layout);
    }
}

fn scandump_in(layout: WindowLayout) {
    let p = choose_in(layout, WindowKind::Items, 0.01, 50_000).unwrap();
    let mut f = WindowFilter::new(p, 3, 9, &Unlimited).unwrap();
    for x in names("s", 60_000) {
        f.add(x.as_bytes(), 9);
    }
    let meta = parse_dump_header(&dump_header(&f)).unwrap();
    let mut g = meta.allocate(&Unlimited).unwrap();
    let mut off = 0;
    while let Some(chunk) = read_chunk(&f, off) {
        write_chunk(&mut g, off, &chunk).unwrap();
        off += chunk.len() as u64;
    }
    assert_eq!(off, f.bytes());
    assert!(g == f);
    assert!(write_chunk(&mut g, off, &[0; 8]).is_err());
    assert!(write_chunk(&mut g, 3, &[0; 8]).is_err());
    let mut h = dump_header(&f);
    h.push(0);
    assert!(parse_dump_header(&h).is_err());
}

#[test]
fn encoding_1_data_loads_as_a_sliced_filter_that_works() {
    let mut f = time_filter_in(WindowLayout::Sliced, 0.01, 2000, 10 * MIN, 100);
    let items = names("v1", 2000);
    for (i, x) in items.iter().enumerate() {
        f.add(x.as_bytes(), 100 + i as u64);
    }
    // Encoding 1: the sliced fields, then each slice; no layout word.
    let mut v1 = Vec::new();
    write_meta(&f, &mut v1);
    let Store::Sliced(slices) = &f.store else { panic!("sliced") };
    for s in slices {
        v1.bytes(&le_bytes(s));
    }
    let mut g = read_rdb_v1(&mut SliceReader::new(&v1), &Unlimited).unwrap();
    assert!(g == f);
    assert_eq!(g.params().layout, WindowLayout::Sliced);
    assert!(items.iter().all(|x| g.contains(x.as_bytes(), 100 + 5 * MIN)));
    // It keeps working, and saves in encoding 2 as what it is.
    g.add(b"later", 100 + 5 * MIN);
    let mut v2 = Vec::new();
    write_rdb(&g, &mut v2);
    assert!(read_rdb(&mut SliceReader::new(&v2), &Unlimited).unwrap() == g);
    // Encoding-1 bytes are not encoding 2, nor the reverse.
    assert!(read_rdb(&mut SliceReader::new(&v1), &Unlimited).is_err());
}

#[test]
fn row_tags_past_the_turn_count_are_refused() {
    let mut f = time_filter(0.01, 300, 5000, 100);
    for (i, x) in names("g", 300).iter().enumerate() {
        f.add(x.as_bytes(), 100 + i as u64 * 40);
    }
    assert!(f.turns > 0);
    let mut buf = Vec::new();
    write_rdb(&f, &mut buf);
    assert!(read_rdb(&mut SliceReader::new(&buf), &Unlimited).is_ok());
    // The first row's tag is the first word of the memory (after its length).
    let mut meta = vec![0u8; 8];
    write_meta(&f, &mut meta);
    let tag_at = meta.len() + 8;
    let mut bad = buf.clone();
    bad[tag_at..tag_at + 8].copy_from_slice(&(f.turns + 1).to_le_bytes());
    assert!(read_rdb(&mut SliceReader::new(&bad), &Unlimited).is_err());
    // A chunk with such a tag is refused too, and nothing is written.
    let mut g = f.clone();
    let mut chunk = read_chunk(&f, 0).unwrap();
    chunk[..8].copy_from_slice(&(f.turns + 1).to_le_bytes());
    assert!(write_chunk(&mut g, 0, &chunk).is_err());
    assert!(g == f);
}

/// Values of the layouts other than the generations layout, as the fuzz seeds keep them
/// (a mode byte, then the RDB value; made by `examples/fuzz_seeds.rs` from 60 items `w0`…`w59`
/// added at 1000 + 37·i ms): encoding 2 blocked, and the sliced layout under encoding 2.
#[test]
fn committed_values_of_the_older_layouts_load() {
    let seeds: [(&[u8], WindowLayout); 3] = [
        (
            include_bytes!("../../../../fuzz/seeds/window_codec/time-1s-rdb.bin"),
            WindowLayout::Blocked,
        ),
        (
            include_bytes!("../../../../fuzz/seeds/window_codec/items-rdb.bin"),
            WindowLayout::Blocked,
        ),
        (
            include_bytes!("../../../../fuzz/seeds/window_codec/sliced-time-1s-rdb.bin"),
            WindowLayout::Sliced,
        ),
    ];
    for (bytes, layout) in seeds {
        let mut f = read_rdb(&mut SliceReader::new(&bytes[1..]), &Unlimited).unwrap();
        assert_eq!(f.params().layout, layout);
        let now = f.last_ms();
        assert_eq!(now, 1000 + 59 * 37);
        assert!(f.contains(b"w59", now) && f.contains(b"w50", now), "{layout:?}");
        f.add(b"later", now + 1);
        assert!(f.contains(b"later", now + 1));
    }
}
