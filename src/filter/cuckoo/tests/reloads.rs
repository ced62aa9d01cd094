//! Reloads of forged values: a value loaded with its item count at the loader's bound takes
//! inserts and compactions, and what is saved after them loads again, the same filter.

use super::*;
use crate::filter::cuckoo::Insert;
use crate::filter::cuckoo::codec::{Header, RDB_ENCODING_VERSION};
use crate::filter::fields::SliceReader;

/// The value `f` takes through every way out and back in: this module's RDB encoding (which
/// must load again, equal, with the same digest) and its `CF.SCANDUMP` stream through
/// `CF.LOADCHUNK` (header and chunks must load again, equal). Every state that commands can
/// reach from a loaded value must pass: else `DEBUG RELOAD` or a restart refuses the data
/// the server saved itself, and Redis aborts.
fn assert_reloads(f: &CuckooFilter, what: &str) -> CuckooFilter {
    let mut buf = Vec::<u8>::new();
    f.write_rdb(&mut buf);
    let back =
        CuckooFilter::read_rdb(&mut SliceReader::new(&buf), RDB_ENCODING_VERSION, &Unlimited)
            .unwrap_or_else(|e| {
                panic!("{what}: the saved value is refused ({e:?}): {:?}", f.info())
            });
    assert_eq!(&back, f, "{what}: the reload changed the filter");
    let digest = |f: &CuckooFilter| {
        let mut d = Vec::new();
        f.digest(|b| d.extend_from_slice(b));
        d
    };
    assert_eq!(digest(&back), digest(f), "{what}: the reload changed the digest");
    let mut by_chunks = Header::parse(&f.header().encode())
        .unwrap_or_else(|e| panic!("{what}: the SCANDUMP header is refused ({e:?})"))
        .allocate(&Unlimited)
        .unwrap();
    let mut it = 1;
    while let Some((next, data)) = f.chunk(it) {
        by_chunks.load_chunk(next, &data).unwrap();
        it = next;
    }
    assert_eq!(&by_chunks, f, "{what}: the SCANDUMP stream changed the filter");
    // From now on the reloaded filter is the same filter (a replica that loaded it, a server
    // that restarted): the same commands (inserts that grow it, deletes, compactions) give
    // the same replies and the same filters.
    let (mut a, mut b) = (f.clone(), back.clone());
    for i in 0..96u64 {
        let x = item(i % 40);
        match i % 5 {
            0..=2 => assert_eq!(
                a.add(&x, false, 32, &Unlimited),
                b.add(&x, false, 32, &Unlimited),
                "{what}: add {i}"
            ),
            3 => assert_eq!(a.delete(&x), b.delete(&x), "{what}: delete {i}"),
            _ => {
                a.compact(i % 2 == 0);
                b.compact(i % 2 == 0);
            }
        }
        assert_eq!(a, b, "{what}: after step {i}");
        assert_eq!(a.info(), b.info(), "{what}: after step {i}");
    }
    back
}

/// The RDB value of `f` with its item count set to `items`, loaded (the loader accepts any
/// count up to the slots, whatever the slots hold).
fn with_forged_items(f: &CuckooFilter, items: u64) -> CuckooFilter {
    let mut buf = Vec::<u8>::new();
    f.write_rdb(&mut buf);
    // Fields: width, numFilters, numBuckets, numItems (bytes 24..32), …
    buf[24..32].copy_from_slice(&items.to_le_bytes());
    CuckooFilter::read_rdb(&mut SliceReader::new(&buf), RDB_ENCODING_VERSION, &Unlimited)
        .expect("a count up to the slots is accepted")
}

/// A value loaded with its item count forged at the loader's bound (every slot, over empty
/// slots) takes inserts, one by one and batched: the count stays within the slots, so the
/// value saved after them loads again, the same filter.
#[test]
fn a_forged_item_count_at_the_bound_survives_inserts_and_reloads() {
    for w in WIDTHS {
        for exp in [0u16, 1, 2] {
            let empty = filter(8, 2, 20, exp, w);
            let slots = 8;
            let mut f = with_forged_items(&empty, slots);
            assert_eq!(f.add(b"a", false, 32, &Unlimited), Ok(Insert::Inserted));
            assert!(f.items() <= slots, "{w:?} exp {exp}: {} items in {slots} slots", f.items());
            let back = assert_reloads(&f, "after CF.ADD");
            assert!(back.contains(b"a"));
            let items: Vec<Vec<u8>> = (0..40).map(item).collect();
            let mut out = Vec::new();
            f.insert_many(&items, false, 32, &Unlimited, &mut out).unwrap();
            assert_reloads(&f, "after CF.INSERT");
            let mut g = with_forged_items(&empty, slots);
            g.insert_many(&items, true, 32, &Unlimited, &mut Vec::new()).unwrap();
            assert_reloads(&g, "after CF.INSERTNX");
        }
    }
}

/// A compaction that frees a sub-filter takes its slots from the bound: a value loaded with
/// its count forged at the slots of two sub-filters, the newer empty, compacts to one
/// sub-filter (by `CF.COMPACT`, or by the automatic compaction of a `CF.DEL`), and the value
/// saved then loads again.
#[test]
fn a_forged_item_count_survives_the_compaction_that_frees_a_sub_filter() {
    for w in WIDTHS {
        // One item in a sub-filter of 2 buckets of 2 slots.
        let mut one = filter(4, 2, 20, 1, w);
        one.add(b"a", false, 32, &Unlimited).unwrap();
        let (next, sub0) = one.chunk(1).unwrap();
        // A header of two such sub-filters (8 slots), all 8 counted, then sub-filter 0's chunk.
        let mut h = one.header();
        h.shape.filters = 2;
        h.shape.items = 8;
        let mut f = h.allocate(&Unlimited).unwrap();
        f.load_chunk(next, &sub0).unwrap();
        let mut g = f.clone();
        f.compact(true);
        assert_eq!(f.info().filters, 1, "{w:?}: the newer sub-filter was freed");
        assert!(f.items() <= 4, "{w:?}: {} items in 4 slots", f.items());
        assert_reloads(&f, "after CF.COMPACT");
        // 1 delete > 10% of 7 items: the delete compacts.
        assert!(g.delete(b"a"));
        assert_eq!(g.info().filters, 1, "{w:?}: the delete compacted");
        assert!(g.items() <= 4, "{w:?}: {} items in 4 slots", g.items());
        assert_reloads(&g, "after CF.DEL");
    }
}
