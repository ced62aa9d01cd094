//! Encodings: every format round-trips at every width, and old encodings, truncations, altered
//! fields, bad headers and misplaced chunks are refused.

use super::*;
use crate::filter::FilterError;
use crate::filter::cuckoo::codec::{
    Header, RDB_ENCODING_VERSION, REDISBLOOM_ENCODING_VERSION, ScanStep,
};
use crate::filter::cuckoo::golden::restore_by_chunks;
use crate::filter::fields::SliceReader;
use crate::filter::guard::MaxFilterBytes;

fn grown(w: FingerprintWidth) -> CuckooFilter {
    let mut f = filter(16, 2, 20, 2, w);
    for i in 0..200 {
        f.add(&item(i), false, 32, &Unlimited).unwrap();
    }
    for i in 0..200 {
        if i % 7 == 0 {
            f.delete(&item(i));
        }
    }
    assert!(f.info().filters > 1);
    f
}

#[test]
fn every_format_round_trips_every_width() {
    for w in WIDTHS {
        let f = grown(w);
        let mut buf = Vec::<u8>::new();
        f.write_rdb(&mut buf);
        let back =
            CuckooFilter::read_rdb(&mut SliceReader::new(&buf), RDB_ENCODING_VERSION, &Unlimited);
        assert_eq!(back.unwrap(), f);
        assert_eq!(restore_by_chunks(&f), f);
        let mut rb = Vec::<u8>::new();
        match w {
            FingerprintWidth::W8 => {
                f.write_rdb_redisbloom(&mut rb).unwrap();
                let back = CuckooFilter::read_rdb(
                    &mut SliceReader::new(&rb),
                    REDISBLOOM_ENCODING_VERSION,
                    &Unlimited,
                );
                assert_eq!(back.unwrap(), f);
                assert_eq!(f.header().encode().len(), 38);
            }
            _ => {
                assert_eq!(f.write_rdb_redisbloom(&mut rb), Err(FilterError::Unsupported));
                assert_eq!(f.header().encode().len(), 54, "RedisBloom refuses it: not 38 bytes");
            }
        }
        let mut digest = Vec::new();
        f.digest(|b| digest.extend_from_slice(b));
        let mut other = Vec::new();
        let mut g = f.clone();
        g.add(b"one more", false, 32, &Unlimited).unwrap();
        g.digest(|b| other.extend_from_slice(b));
        assert_ne!(digest, other);
    }
}

#[test]
fn old_and_unknown_encodings_are_refused() {
    let f = grown(FingerprintWidth::W8);
    let mut buf = Vec::<u8>::new();
    f.write_rdb_redisbloom(&mut buf).unwrap();
    for encver in [0, 1, 2, 3, 5, 511, 513] {
        let r = CuckooFilter::read_rdb(&mut SliceReader::new(&buf), encver, &Unlimited);
        assert_eq!(r, Err(FilterError::UnsupportedEncoding(encver)));
    }
}

#[test]
fn every_truncation_of_an_rdb_value_is_refused() {
    for w in WIDTHS {
        let mut buf = Vec::<u8>::new();
        grown(w).write_rdb(&mut buf);
        for cut in 0..buf.len() {
            let r = CuckooFilter::read_rdb(
                &mut SliceReader::new(&buf[..cut]),
                RDB_ENCODING_VERSION,
                &Unlimited,
            );
            assert!(r.is_err(), "cut {cut}");
        }
    }
}

/// Any change to a field of the RDB value (not the slots) is refused or still describes a
/// valid filter of the same layout (only the counters have freedom).
#[test]
fn altered_rdb_fields_are_refused() {
    let f = grown(FingerprintWidth::W8);
    let mut buf = Vec::<u8>::new();
    f.write_rdb(&mut buf);
    // Width, numFilters, numBuckets (fields 0..3), bucketSize..expansion (5..8), and the first
    // sub-filter's bucket count (8) and string length (9).
    for field in [0usize, 1, 2, 5, 6, 7, 8, 9] {
        if field == 6 {
            continue; // max iterations: any 1..=65535 is valid
        }
        for bit in 0..64 {
            let mut bad = buf.clone();
            bad[field * 8 + bit / 8] ^= 1 << (bit % 8);
            let mut r = SliceReader::new(&bad);
            let loaded = CuckooFilter::read_rdb(&mut r, RDB_ENCODING_VERSION, &Unlimited);
            // Fewer sub-filters read as a shorter valid value; the bytes left over are what
            // fails the load then (Redis reads the next key from them).
            assert!(loaded.is_err() || r.remaining() != 0, "field {field} bit {bit} accepted");
        }
    }
    // items above the slot count
    let mut bad = buf.clone();
    bad[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(
        CuckooFilter::read_rdb(&mut SliceReader::new(&bad), RDB_ENCODING_VERSION, &Unlimited)
            .is_err()
    );
}

#[test]
fn headers_are_validated() {
    let f = grown(FingerprintWidth::W8);
    let h = f.header().encode();
    assert_eq!(Header::parse(b"garbage"), Err(FilterError::BadHeader));
    assert_eq!(Header::parse(&h[..37]), Err(FilterError::BadHeader));
    // numBuckets not a power of two; bucket size 0 and 256; max iterations 0; expansion 3;
    // expansion 0 with several sub-filters; no sub-filters; 65536 sub-filters.
    let patch = |at: usize, bytes: &[u8]| {
        let mut b = h.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        Header::parse(&b)
    };
    assert_eq!(patch(8, &3u64.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(8, &0u64.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(8, &(1u64 << 56).to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(32, &0u16.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(32, &256u16.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(34, &0u16.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(36, &3u16.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(36, &0u16.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(24, &0u64.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(24, &65536u64.to_le_bytes()), Err(FilterError::BadData));
    assert_eq!(patch(0, &u64::MAX.to_le_bytes()), Err(FilterError::BadData));
    // Our 54-byte header: magic, version and width are checked.
    let w = grown(FingerprintWidth::W16).header().encode();
    assert!(Header::parse(&w).is_ok());
    for (at, v) in [(0usize, b'X'), (8, 2), (12, 8), (12, 64)] {
        let mut b = w.clone();
        b[at] = v;
        assert!(Header::parse(&b).is_err(), "byte {at} = {v}");
    }
    // RedisBloom 2.8 answers a huge header with an allocation; here the limit refuses first.
    let mut huge = h.clone();
    huge[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let parsed = Header::parse(&huge).unwrap();
    assert!(matches!(parsed.allocate(&MaxFilterBytes(1 << 20)), Err(e) if e.is_limit()));
}

/// Chunks are placed strictly: never past the end, never across a sub-filter (RedisBloom
/// wrote a chunk whose iterator was past the end into the last sub-filter).
#[test]
fn chunks_out_of_place_are_refused() {
    let f = grown(FingerprintWidth::W8);
    let mut g = f.header().allocate(&Unlimited).unwrap();
    let total: u64 = {
        let mut it = 1;
        while let Some((next, _)) = f.chunk(it) {
            it = next;
        }
        it - 1
    };
    let empty = g.clone();
    assert_eq!(g.load_chunk(0, b"x"), Err(FilterError::ChunkOffset));
    assert_eq!(g.load_chunk(1, b"x"), Err(FilterError::ChunkOffset));
    assert_eq!(g.load_chunk(5, b""), Err(FilterError::ChunkOffset));
    assert_eq!(g.load_chunk(total + 2, b"x"), Err(FilterError::ChunkOffset));
    assert_eq!(g.load_chunk(total + 4, b"xyz"), Err(FilterError::ChunkOffset));
    assert_eq!(g.load_chunk(u64::MAX, b"x"), Err(FilterError::ChunkOffset));
    // The first sub-filter holds 16 bytes: a 2-byte chunk at bytes 15..17 (iterator 18)
    // crosses into the next.
    let CuckooFilter::W8(c) = &f else { unreachable!() };
    assert_eq!(c.sub(0).byte_len(), 16);
    assert_eq!(g.load_chunk(18, b"ab"), Err(FilterError::ChunkTooBig));
    assert_eq!(g.load_chunk(17, b"ab"), Ok(()));
    g = empty.clone();
    assert_eq!(g, empty, "refused chunks wrote nothing");
    assert_eq!(g.load_chunk(total + 1, b"x"), Ok(()), "the last byte");
}

#[test]
fn scandump_of_an_empty_filter_ends_at_once_like_redisbloom() {
    let f = filter(100, 2, 20, 1, FingerprintWidth::W8);
    assert_eq!(f.scandump(0), ScanStep::End);
    assert!(f.chunk(1).is_some(), "the AOF rewrite still gets its chunks");
}
