//! Reloads of forged values: a value loaded with its turn count at the loader's bound takes
//! writes that turn the ring, and what is saved after them loads again, the same filter.

use super::*;
use crate::filter::fields::SliceReader;
use crate::filter::window::codec::{
    dump_header, parse_dump_header, read_chunk, read_rdb, write_chunk, write_meta, write_rdb,
};

/// `f` saved and loaded again (RDB and `BF.SCANDUMP` → `BF.LOADCHUNK`): both must load, equal.
/// Every state that writes can reach from a loaded value must pass, or a restart refuses the
/// data the server saved itself.
fn assert_reloads(f: &WindowFilter, what: &str) {
    let mut buf = Vec::new();
    write_rdb(f, &mut buf);
    let back = read_rdb(&mut SliceReader::new(&buf), &Unlimited)
        .unwrap_or_else(|e| panic!("{what}: the saved value is refused ({e:?}): {f:?}"));
    assert!(back == *f, "{what}: the reload changed the filter");
    let meta = parse_dump_header(&dump_header(f))
        .unwrap_or_else(|e| panic!("{what}: the dump header is refused ({e:?})"));
    let mut g = meta.allocate(&Unlimited).unwrap();
    let mut off = 0;
    while let Some(chunk) = read_chunk(f, off) {
        write_chunk(&mut g, off, &chunk).unwrap_or_else(|e| panic!("{what}: chunk {off}: {e:?}"));
        off += chunk.len() as u64;
    }
    assert!(g == *f, "{what}: the dump changed the filter");
}

/// The RDB value of `f` with its turn count set to `turns`, loaded.
fn with_forged_turns(f: &WindowFilter, turns: u64) -> WindowFilter {
    let mut buf = Vec::new();
    write_rdb(f, &mut buf);
    let mut meta = Vec::new();
    write_meta(f, &mut meta);
    // The layout word, then the fields; the turn count is the last.
    buf[meta.len()..meta.len() + 8].copy_from_slice(&turns.to_le_bytes());
    read_rdb(&mut SliceReader::new(&buf), &Unlimited).expect("a turn count up to the bound loads")
}

/// A value loaded with its turn count forged at the loader's bound takes writes that turn the
/// ring (one turn, and a pause that clears it all): the count stays within the bound, the
/// value saved after them loads again, and every answer is the one a count far from the bound
/// gives.
#[test]
fn a_forged_turn_count_at_the_bound_survives_turns_and_reloads() {
    for layout in [WindowLayout::Generations, WindowLayout::Blocked] {
        let mut f = time_filter_in(layout, 0.01, 300, 5000, 100);
        for x in names("a", 200) {
            f.add(x.as_bytes(), 100);
        }
        let mut g = with_forged_turns(&f, super::codec::MAX_TURNS);
        let mut far = with_forged_turns(&f, super::codec::MAX_TURNS - 1_000_000);
        let (gen_ms, n) = (f.params().gen_ms, f.params().slices() as u64);
        let probes: Vec<String> =
            ["a", "b", "c", "absent"].iter().flat_map(|p| names(p, 200)).collect();
        for (step, now) in
            [(0u64, 100), (1, 100 + gen_ms), (2, 100 + 2 * gen_ms), (3, 100 + (n + 3) * gen_ms)]
        {
            let batch = ["b", "c", "b", "c"][step as usize];
            for w in [&mut g, &mut far] {
                for x in names(batch, 200) {
                    w.add(x.as_bytes(), now);
                }
            }
            assert!(g.turns <= super::codec::MAX_TURNS, "{layout:?} step {step}: {}", g.turns);
            assert_reloads(&g, &format!("{layout:?} step {step}"));
            for t in [now, now + gen_ms, now + 3 * gen_ms] {
                for x in &probes {
                    assert_eq!(
                        g.contains(x.as_bytes(), t),
                        far.contains(x.as_bytes(), t),
                        "{layout:?} step {step}: {x} at {t}"
                    );
                }
            }
            assert!(names(batch, 200).iter().all(|x| g.contains(x.as_bytes(), now)));
        }
    }
}
