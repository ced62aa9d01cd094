//! Writes the seed corpora of the cargo-fuzz targets (`fuzz/seeds/<target>/`) from real
//! encodings of small filters, so a short fuzzing run starts past the validators' first checks
//! instead of spending its time rediscovering a valid field sequence.
//!
//! `cargo run --example fuzz_seeds` rewrites the seeds; `-- --check` only compares them with
//! what this program would write and fails if they are stale (`make fuzz` runs the check, so a
//! change of the byte formats cannot silently leave the fuzzers with useless seeds).

use std::path::{Path, PathBuf};

use scalebloom::filter::Unlimited;
use scalebloom::filter::bloom::codec::{dump_header, write_chain};
use scalebloom::filter::bloom::redisbloom::{one_layer_header, parse_header, write_rdb};
use scalebloom::filter::bloom::{Chain, ChainParams, merge};
use scalebloom::filter::cuckoo::{CuckooFilter, CuckooParams, FingerprintWidth};
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::hash::HashScheme;
use scalebloom::filter::valkey::{codec as valkey_codec, payload as valkey_payload};
use scalebloom::filter::window::codec as window_codec;
use scalebloom::filter::window::params as window_params;
use scalebloom::filter::window::{WindowFilter, WindowKind, WindowLayout};

/// A small filter: `items` distinct items added to a chain with these parameters.
fn filter(error: f64, capacity: u64, expansion: u64, items: u32) -> Chain {
    let params = ChainParams::new(error, capacity, expansion).expect("valid");
    let mut chain = Chain::new(params, HashScheme::Xxh3Enhanced, 42, &Unlimited).expect("small");
    for i in 0..items {
        // A nonscaling filter refuses items once full; the seeds stop short of that.
        chain.add(format!("item{i}").as_bytes(), &Unlimited).expect("room for the item");
    }
    chain
}

/// A small counting filter (counters of `width` bits): `items` items added, a third of them
/// deleted again, one added twice.
fn counting(error: f64, capacity: u64, expansion: u64, width: u8, items: u32) -> Chain {
    let params = ChainParams::new(error, capacity, expansion).expect("valid");
    let mut chain = Chain::new_counting(params, 42, width, &Unlimited).expect("small");
    for i in 0..items {
        chain.add(format!("item{i}").as_bytes(), &Unlimited).expect("room for the item");
    }
    if items > 0 {
        chain.add(b"item0", &Unlimited).expect("present: sets no new counter");
    }
    for i in 0..items / 3 {
        chain.delete(format!("item{i}").as_bytes()).expect("a counting filter");
    }
    chain
}

/// A small blocked filter (`LAYOUT BLOCKED`): `items` distinct items added.
fn blocked(error: f64, capacity: u64, expansion: u64, items: u32) -> Chain {
    let params = ChainParams::new(error, capacity, expansion).expect("valid");
    let mut chain = Chain::new_blocked(params, 42, &Unlimited).expect("small");
    for i in 0..items {
        chain.add(format!("item{i}").as_bytes(), &Unlimited).expect("room for the item");
    }
    chain
}

/// The filters whose encodings seed `rdb_fields` and `dump_header`: one layer empty, three
/// layers, nonscaling, expansion 1, a loose error rate with a large expansion, counting
/// filters of both widths (field sequence version 2 with a counter width, dump header 2), and
/// blocked filters (version 2, counters field 512).
fn filters() -> Vec<(&'static str, Chain)> {
    vec![
        ("empty", filter(0.01, 10, 2, 0)),
        ("three-layers", filter(0.01, 10, 2, 35)),
        ("nonscaling", filter(0.001, 20, 0, 5)),
        ("expansion-1", filter(0.1, 3, 1, 8)),
        ("loose", filter(0.5, 1, 4, 3)),
        ("counting4-three-layers", counting(0.01, 10, 2, 4, 35)),
        ("counting8-nonscaling", counting(0.001, 20, 0, 8, 12)),
        ("blocked-three-layers", blocked(0.01, 10, 2, 35)),
        ("blocked-nonscaling", blocked(0.001, 20, 0, 5)),
        ("merged-members", merged(filter(0.01, 10, 2, 35), &[counting_like(0), other_seed()])),
        ("merged-counting", merged(counting(0.01, 10, 2, 4, 35), &[counting_seeded(7)])),
    ]
}

/// `dest` after `BF.MERGE` of `sources` (encoding 515's members, dump header version 3).
fn merged(mut dest: Chain, sources: &[Chain]) -> Chain {
    let refs: Vec<&Chain> = sources.iter().collect();
    merge::plan(Some(&dest), &refs, &Unlimited).expect("mergeable").apply(&mut dest);
    assert!(!dest.members().is_empty(), "a seed with members");
    dest
}

/// A plain filter of `filter(0.01, 10, 2, _)`'s shape and seed with other items: OR-ed.
fn counting_like(offset: u32) -> Chain {
    let mut c = filter(0.01, 10, 2, 0);
    for i in 0..5 {
        c.add(format!("like{}", i + offset).as_bytes(), &Unlimited).expect("room");
    }
    c
}

/// A plain filter with its own seed: kept apart.
fn other_seed() -> Chain {
    let params = ChainParams::new(0.05, 20, 2).expect("valid");
    let mut chain = Chain::new(params, HashScheme::Xxh3Curved, 7, &Unlimited).expect("small");
    for i in 0..30 {
        chain.add(format!("other{i}").as_bytes(), &Unlimited).expect("room");
    }
    chain
}

/// A counting filter (4 bits) with its own seed: kept apart.
fn counting_seeded(seed: u64) -> Chain {
    let params = ChainParams::new(0.01, 10, 2).expect("valid");
    let mut chain = Chain::new_counting(params, seed, 4, &Unlimited).expect("small");
    for i in 0..12 {
        chain.add(format!("c{i}").as_bytes(), &Unlimited).expect("room");
    }
    chain
}

/// Small filters in RedisBloom's layouts (options 5, 13, 4, 0, 1 and 2.2.0's byte-rounded
/// NOROUND), each with enough items to have grown where it scales, and an 80-layer chain.
fn redisbloom_filters() -> Vec<(&'static str, Chain)> {
    let from =
        |h: Vec<u8>| parse_header(&h).expect("valid header").allocate(&Unlimited).expect("small");
    let reserve = |nonscaling: bool| {
        let p = ChainParams::new(0.01, 10, if nonscaling { 0 } else { 2 }).expect("valid");
        Chain::new(p, HashScheme::Murmur64, 0, &Unlimited).expect("small")
    };
    let mut out = vec![
        ("rb-options5", reserve(false)),
        ("rb-options13", reserve(true)),
        ("rb-options4", from(one_layer_header(4, 256, 8, 7, 17, 0.01))),
        ("rb-options0", from(one_layer_header(0, 256, 8, 7, 17, 0.01))),
        ("rb-options1", from(one_layer_header(1, 128, 0, 7, 10, 0.01))),
        ("rb-bytes22", from(one_layer_header(5, 112, 0, 8, 10, 0.005))),
    ];
    for (name, chain) in &mut out {
        let n = if name.ends_with("13") { 8 } else { 40 };
        for i in 0..n {
            chain.add(format!("item{i}").as_bytes(), &Unlimited).expect("room for the item");
        }
    }
    // Deeper than this module's limit for the filters it creates (64 layers): RedisBloom's
    // EXPANSION 1 chains come in with up to 1,075.
    let p = ChainParams::new(0.1, 1, 1).expect("valid");
    let mut deep = Chain::new(p, HashScheme::Murmur64, 0, &Unlimited).expect("small");
    let mut i = 0;
    while deep.layers().len() < 80 {
        deep.add(format!("deep{i}").as_bytes(), &Unlimited).expect("room for the item");
        i += 1;
    }
    out.push(("rb-deep80", deep));
    out
}

/// RedisBloom's RDB value of `chain` at encoding version `encver` (first byte), in the input
/// layout of `fuzz/fuzz_targets/redisbloom_rdb.rs`: versions below 4 drop the growth field,
/// below 2 the options field too.
fn rb_rdb_seed(chain: &Chain, encver: u8) -> Vec<u8> {
    use scalebloom::filter::fields::FieldReader;
    let mut v4 = Vec::new();
    write_rdb(chain, &mut v4);
    let mut r = SliceReader::new(&v4);
    let fields: Vec<u64> = (0..4).map(|_| r.u64().expect("4 fields")).collect();
    let mut out = vec![encver];
    out.extend_from_slice(&fields[0].to_le_bytes());
    out.extend_from_slice(&fields[1].to_le_bytes());
    if encver >= 2 {
        out.extend_from_slice(&fields[2].to_le_bytes());
    }
    if encver >= 4 {
        out.extend_from_slice(&fields[3].to_le_bytes());
    }
    out.extend_from_slice(&v4[32..]);
    out
}

/// Seeds of `chunk_placement`, in the input layout documented in
/// `fuzz/fuzz_targets/chunk_placement.rs`: a filter, then 7-byte chunk records.
fn chunk_seeds() -> Vec<(&'static str, Vec<u8>)> {
    /// One chunk record: where (0 into a layer, 1 before a layer's end, 2 before the end,
    /// 3 past the end, 4 from u64::MAX), layer, delta, length, fill.
    fn record(where_: u8, layer: u8, delta: u16, len: u16, fill: u8) -> Vec<u8> {
        let mut r = vec![where_, layer];
        r.extend_from_slice(&delta.to_le_bytes());
        r.extend_from_slice(&len.to_le_bytes());
        r.push(fill);
        r
    }
    // error index 3 (0.01), capacity 1 + 99, expansion 2, 3 layers, 7 items in the last one.
    let three_layers = [3u8, 99, 0, 2, 2, 7];
    let mut walk = three_layers.to_vec();
    for layer in 0..3 {
        walk.extend(record(0, layer, 0, 16, 0x11 * (layer + 1))); // start of each layer
        walk.extend(record(1, layer, 8, 8, 0x5a)); // exactly up to its end
        walk.extend(record(1, layer, 4, 8, 0xa5)); // one word across its end: refused
    }
    walk.extend(record(2, 0, 1, 1, 0xff)); // the very last byte
    walk.extend(record(3, 0, 0, 1, 0x01)); // just past the end: refused
    walk.extend(record(4, 0, 0, 4, 0x02)); // at u64::MAX: refused
    // error index 4 (0.001), capacity 1 + 9, nonscaling, one layer, 3 items.
    let mut nonscaling = vec![4u8, 9, 0, 0, 0, 3];
    nonscaling.extend(record(0, 0, 0, 0, 0)); // an empty chunk
    nonscaling.extend(record(0, 0, 3, 5, 0x33)); // unaligned
    nonscaling.extend(record(1, 0, 0, 1, 0x44)); // zero bytes before the end: past it
    // The three-layer walk again over blocked layers (expansion byte 2 + 128).
    let mut blocked = walk.clone();
    blocked[3] = 2 + 128;
    vec![("three-layers", walk), ("nonscaling", nonscaling), ("blocked-three-layers", blocked)]
}

/// Small cuckoo filters of every width, bucket size and expansion the cuckoo targets read:
/// `adds` items inserted (growing the filter), then the first `deletes` deleted.
fn cuckoo_filters() -> Vec<(&'static str, CuckooFilter)> {
    let make = |width, capacity, bucket_size, expansion, adds: u32, deletes: u32| {
        let p = CuckooParams::new(capacity, bucket_size, 20, expansion).expect("valid params");
        let mut f = CuckooFilter::new(&p, width, &Unlimited).expect("allocates");
        for i in 0..adds {
            f.add(format!("item:{i}").as_bytes(), false, 32, &Unlimited).expect("inserts");
        }
        for i in 0..deletes {
            f.delete(format!("item:{i}").as_bytes());
        }
        f
    };
    use FingerprintWidth::{W8, W16, W32};
    vec![
        ("w8-bs2-exp1", make(W8, 8, 2, 1, 32, 2)),
        ("w8-bs3-exp2", make(W8, 12, 3, 2, 32, 2)),
        ("w8-exp0", make(W8, 8, 4, 0, 8, 8)),
        ("w16-bs2-exp2", make(W16, 8, 2, 2, 32, 2)),
        ("w32-bs1-exp4", make(W32, 4, 1, 4, 32, 2)),
    ]
}

/// Seeds of `cuckoo_chunks`, in the layout of `fuzz/fuzz_targets/cuckoo_chunks.rs`: a pick
/// byte (even: RedisBloom's 38-byte header, odd: this module's 54), the header, then every
/// chunk of the filter's SCANDUMP as `u64 iterator, u16 length, bytes`.
fn cuckoo_chunk_seed(f: &CuckooFilter) -> Vec<u8> {
    let header = f.header().encode();
    let mut out = vec![u8::from(header.len() != 38)];
    out.extend_from_slice(&header);
    let mut it = 1;
    while let Some((next, bytes)) = f.chunk(it) {
        out.extend_from_slice(&next.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        out.extend_from_slice(&bytes);
        it = next;
    }
    out
}

/// A `cuckoo_chunks` input whose header describes 65,531 sub-filters of 4 buckets (expansion
/// 1), then two chunks: it once took the target quadratic time (a linear search of the
/// sub-filter per chunk), so it stays in the corpus.
fn many_sub_filters_seed() -> Vec<u8> {
    let mut out = vec![0u8];
    for v in [30u64, 4, 2, 65531] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [2u16, 20, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (it, fill) in [(9u64, 0x11u8), (8 * 65_000 + 9, 0x22)] {
        out.extend_from_slice(&it.to_le_bytes());
        out.extend_from_slice(&8u16.to_le_bytes());
        out.extend_from_slice(&[fill; 8]);
    }
    out
}

/// Values forged at a loader's bound, each followed by a script of commands that would push
/// the bounded field past it (a trusted count, not recounted from the data): the reload rule's
/// seeds. `cuckoo_rdb`: an empty 8-slot filter counting 8 items, then inserts and a
/// compaction. `cuckoo_chunks`: a header of two empty 4-bucket sub-filters counting all 16
/// slots, then (the input's last 16 bytes) inserts and compactions. `window_codec`: a time
/// window whose turn count is at the bound (2^62), then adds and one turn, then a pause that
/// clears the ring.
fn forged_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let p = CuckooParams::new(8, 2, 20, 1).expect("valid params");
    let empty = CuckooFilter::new(&p, FingerprintWidth::W8, &Unlimited).expect("allocates");
    // The pick byte, then the fields: width, numFilters, numBuckets, numItems (bytes 25..33).
    let mut rdb = vec![1u8];
    empty.write_rdb(&mut rdb);
    rdb[25..33].copy_from_slice(&8u64.to_le_bytes());
    rdb.extend_from_slice(&[0x00, 0x01, 0xf0, 0xc1]);
    let mut header = empty.header();
    header.shape.filters = 2;
    header.shape.items = 16;
    let mut chunks = vec![0u8];
    chunks.extend_from_slice(&header.encode());
    chunks.extend_from_slice(&[0xc1, 0x05, 0x85, 0xc0, 0xf0, 0xc1, 0x41, 0x81, 0xc1]);
    let (_, window) = window_filters().into_iter().next().expect("a generations time window");
    let mut turns = vec![0u8];
    window_codec::write_rdb(&window, &mut turns);
    let mut meta = Vec::new();
    window_codec::write_meta(&window, &mut meta);
    // The pick byte, the layout word, then the fields; the turn count is the last.
    let at = 1 + 8 + meta.len() - 8;
    turns[at..at + 8].copy_from_slice(&window_codec::MAX_TURNS.to_le_bytes());
    turns.extend_from_slice(&[0x00, 0x41, 0x90, 0x01, 0xff, 0x02]);
    vec![
        ("cuckoo_rdb", "forged-items-at-the-slots.bin".to_string(), rdb),
        ("cuckoo_chunks", "forged-items-then-compaction.bin".to_string(), chunks),
        ("window_codec", "forged-turns-at-the-bound-rdb.bin".to_string(), turns),
    ]
}

/// Every seed file: (target, file name, bytes).
fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, chain) in filters() {
        let mut rdb = Vec::new();
        write_chain(&chain, &mut rdb);
        out.push(("rdb_fields", format!("{name}.bin"), rdb));
        out.push(("dump_header", format!("{name}.bin"), dump_header(&chain)));
    }
    for (name, chain) in redisbloom_filters() {
        let mut ours = Vec::new();
        write_chain(&chain, &mut ours);
        out.push(("rdb_fields", format!("{name}.bin"), ours));
        out.push(("redisbloom_header", format!("{name}.bin"), dump_header(&chain)));
        out.push(("redisbloom_rdb", format!("{name}-v4.bin"), rb_rdb_seed(&chain, 4)));
        if name.ends_with("options0") {
            out.push(("redisbloom_rdb", format!("{name}-v1.bin"), rb_rdb_seed(&chain, 1)));
        }
        if name.ends_with("options4") {
            out.push(("redisbloom_rdb", format!("{name}-v3.bin"), rb_rdb_seed(&chain, 3)));
        }
    }
    for (name, chain) in
        filters().into_iter().filter(|(n, _)| *n == "empty" || n.starts_with("merged"))
    {
        // Native headers (a merged filter's: version 3) fed to the either-format parser.
        out.push(("redisbloom_header", format!("native-{name}.bin"), dump_header(&chain)));
    }
    for (name, f) in cuckoo_filters() {
        out.push(("cuckoo_chunks", format!("{name}.bin"), cuckoo_chunk_seed(&f)));
        // `cuckoo_rdb`: a pick byte (even: RedisBloom's version 4, odd: this module's 512),
        // then the typed fields.
        let mut ours = vec![1u8];
        f.write_rdb(&mut ours);
        out.push(("cuckoo_rdb", format!("{name}-512.bin"), ours));
        let mut rb = vec![0u8];
        if f.write_rdb_redisbloom(&mut rb).is_ok() {
            out.push(("cuckoo_rdb", format!("{name}-v4.bin"), rb));
        }
    }
    out.push(("cuckoo_chunks", "w8-65531-filters.bin".to_string(), many_sub_filters_seed()));
    for (name, bytes) in chunk_seeds() {
        out.push(("chunk_placement", format!("{name}.bin"), bytes));
    }
    for (name, f) in window_filters() {
        let mut rdb = vec![0u8];
        window_codec::write_rdb(&f, &mut rdb);
        out.push(("window_codec", format!("{name}-rdb.bin"), rdb));
        let mut header = vec![1u8];
        header.extend_from_slice(&window_codec::dump_header(&f));
        out.push(("window_codec", format!("{name}-header.bin"), header));
    }
    out.extend(valkey_seeds());
    out.extend(forged_seeds());
    out
}

/// `valkey_formats`: a pick byte (0: the `BF.LOAD` payload, 2: scalebloom's encoding), then
/// two of valkey-bloom's own objects from the test fixtures (one and two layers).
fn valkey_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valkey-bloom/valkey-9.1");
    let mut out = Vec::new();
    for name in ["scale1", "autocreated"] {
        let p = std::fs::read(dir.join(name).join("bfload.bin")).expect("valkey-bloom fixture");
        let bloom = valkey_payload::decode(&p, &Unlimited).expect("valkey-bloom's payload");
        let mut seed = vec![0u8];
        seed.extend_from_slice(&p);
        out.push(("valkey_formats", format!("{name}-bfload.bin"), seed));
        let mut ours = vec![2u8];
        valkey_codec::write(&bloom, &mut ours);
        out.push(("valkey_formats", format!("{name}-own.bin"), ours));
    }
    out
}

/// Small windowed filters (a time and a count window in the generations layout of new
/// filters, and in the blocked layout of filters written before it; a time window in the sliced
/// layout of encoding-1 filters), with items.
fn window_filters() -> Vec<(&'static str, WindowFilter)> {
    let mut out = Vec::new();
    let (generations, blocked, sliced) =
        (WindowLayout::Generations, WindowLayout::Blocked, WindowLayout::Sliced);
    for (name, layout, kind) in [
        ("generations-time-1s", generations, WindowKind::Time { window_ms: 1000 }),
        ("generations-items", generations, WindowKind::Items),
        ("time-1s", blocked, WindowKind::Time { window_ms: 1000 }),
        ("items", blocked, WindowKind::Items),
        ("sliced-time-1s", sliced, WindowKind::Time { window_ms: 1000 }),
    ] {
        let p = window_params::choose_in(layout, kind, 0.05, 40).expect("params");
        let mut f = WindowFilter::new(p, 9, 1000, &Unlimited).expect("filter");
        for i in 0..60u64 {
            f.add(format!("w{i}").as_bytes(), 1000 + i * 37);
        }
        out.push((name, f));
    }
    out
}

fn main() {
    let check = std::env::args().any(|a| a == "--check");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut stale: Vec<PathBuf> = Vec::new();
    for (target, file, bytes) in seeds() {
        let path = root.join(target).join(file);
        if check {
            if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
                stale.push(path);
            }
        } else {
            std::fs::create_dir_all(path.parent().expect("has a parent")).expect("create seed dir");
            std::fs::write(&path, &bytes).expect("write seed");
            println!("{} ({} bytes)", path.display(), bytes.len());
        }
    }
    if !stale.is_empty() {
        eprintln!("stale fuzz seeds (run `cargo run --example fuzz_seeds` and commit them):");
        for p in &stale {
            eprintln!("  {}", p.display());
        }
        std::process::exit(1);
    }
}
