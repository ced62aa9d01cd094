//! Writes the seed corpora of the cargo-fuzz targets (`fuzz/seeds/<target>/`) from real
//! encodings of small filters, so a short fuzzing run starts past the validators' first checks
//! instead of spending its time rediscovering a valid field sequence.
//!
//! `cargo run --example fuzz_seeds` rewrites the seeds; `-- --check` only compares them with
//! what this program would write and fails if they are stale (`make fuzz` runs the check, so a
//! change of the byte formats cannot silently leave the fuzzers with useless seeds).

use std::path::{Path, PathBuf};

use scalebloom::filter::codec::{dump_header, write_chain};
use scalebloom::filter::{Chain, ChainParams, HashScheme, Unlimited};

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

/// The filters whose encodings seed `rdb_fields` and `dump_header`: one layer empty, three
/// layers, nonscaling, expansion 1, a loose error rate with a large expansion.
fn filters() -> Vec<(&'static str, Chain)> {
    vec![
        ("empty", filter(0.01, 10, 2, 0)),
        ("three-layers", filter(0.01, 10, 2, 35)),
        ("nonscaling", filter(0.001, 20, 0, 5)),
        ("expansion-1", filter(0.1, 3, 1, 8)),
        ("loose", filter(0.5, 1, 4, 3)),
    ]
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
    vec![("three-layers", walk), ("nonscaling", nonscaling)]
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
    for (name, bytes) in chunk_seeds() {
        out.push(("chunk_placement", format!("{name}.bin"), bytes));
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
