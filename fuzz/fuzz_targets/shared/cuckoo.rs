//! What the cuckoo targets do with a filter a decoder accepted: commands derived from the
//! input, then the reload rule — every state that commands reach from a loaded value saves to
//! a value the loaders take again (else `DEBUG RELOAD` or a restart refuses the data the
//! server saved itself, and Redis aborts).

use scalebloom::filter::FilterError;
use scalebloom::filter::cuckoo::codec::RDB_ENCODING_VERSION;
use scalebloom::filter::cuckoo::{CuckooFilter, Header, Insert};
use scalebloom::filter::fields::SliceReader;
use scalebloom::filter::{MaxFilterBytes, Unlimited};

/// Largest size growth may take a filter to (small: every input re-encodes its filter).
const GROWTH_LIMIT: u64 = 4 << 20;
/// Most commands per input.
const MAX_COMMANDS: usize = 48;
/// Kick-outs per insert above which a filter counts as heavy for [`run_commands`].
const HEAVY_KICKS: u64 = 1000;
/// `cf-max-expansions` of the commands (the default).
const MAX_FILTERS: u16 = 32;

/// Runs one command per byte of `script` (at most [`MAX_COMMANDS`]) on `f`: the top two bits
/// pick `CF.ADD`, `CF.ADDNX`, `CF.DEL` (with `CF.EXISTS` and `CF.COUNT` first) or, for `11`,
/// `CF.INSERT` of 16 items (bytes from `0xf0`: `CF.INSERTNX` if odd) or else a compaction
/// (`CF.COMPACT` if odd, a delete's automatic one if even); the low six bits name the item.
/// A filter larger than [`WHOLE_RELOAD_BYTES`] takes the first 8 commands only.
/// Nothing panics, and the item count never passes what was inserted. Returns every reply
/// and the item count after each command.
pub fn run_commands(f: &mut CuckooFilter, script: &[u8]) -> Vec<String> {
    let guard = MaxFilterBytes(GROWTH_LIMIT);
    let before = f.items();
    let mut inserted = 0u64;
    let mut replies = Vec::new();
    // A compaction (`CF.COMPACT`, or a delete's) walks a whole sub-filter: a large filter (up to
    // 64 MiB from a header) takes a few commands, or the target slows down several times. So
    // does an insert into a full filter allowed thousands of kick-outs (up to 65535, as
    // `CF.RESERVE … MAXITERATIONS` allows): a batch of 16 then costs about a second under ASan.
    let commands = if u64::from(f.header().shape.max_iterations) > HEAVY_KICKS {
        2
    } else if f.memory_usage() > WHOLE_RELOAD_BYTES {
        8
    } else {
        MAX_COMMANDS
    };
    for &b in script.iter().take(commands) {
        let item = [b & 0x3f];
        let reply = match b >> 6 {
            0 | 1 => {
                let r = f.add(&item, b >> 6 == 1, MAX_FILTERS, &guard);
                inserted += u64::from(r == Ok(Insert::Inserted));
                format!("{r:?}")
            }
            2 => format!("{} {} {}", f.contains(&item), f.count(&item), f.delete(&item)),
            _ if b >= 0xf0 => {
                let items: Vec<[u8; 2]> = (0..16u8).map(|i| [b, i]).collect();
                let mut out: Vec<Result<Insert, FilterError>> = Vec::new();
                let r = f.insert_many(&items, b & 1 == 1, MAX_FILTERS, &guard, &mut out);
                inserted += out.iter().filter(|r| **r == Ok(Insert::Inserted)).count() as u64;
                format!("{r:?} {out:?}")
            }
            _ => {
                f.compact(b & 1 == 1);
                String::new()
            }
        };
        replies.push(format!("{reply} items {}", f.items()));
    }
    assert!(f.items() <= before.saturating_add(inserted), "the item count never wraps");
    replies
}

/// What a replica or a restarted server does with `f`'s saved value: reload it
/// ([`assert_reloads`]), then run `script` on both; the replies and the filters must be the
/// same (a field the loader gets clamped or another way than the filter holds it would make
/// them differ). Whole filters only (see [`WHOLE_RELOAD_BYTES`]).
pub fn assert_same_after_reload(f: &mut CuckooFilter, script: &[u8]) {
    let Some(mut back) = assert_reloads(f) else {
        return;
    };
    let replies = run_commands(f, script);
    assert!(run_commands(&mut back, script) == replies, "the reloaded filter replies otherwise");
    assert!(back == *f, "the reloaded filter took the same commands to another state");
    assert_reloads(f);
}

/// Largest filter (`CF.INFO Size`) [`assert_reloads`] saves and loads whole: a larger one has
/// its header checked only, which holds every field the loaders validate against a bound
/// (the bug class this rule is about lives in the counters and the shape, not the slots;
/// copying 64 MiB filters several times per input made the targets 15 times slower).
const WHOLE_RELOAD_BYTES: u64 = 1 << 20;

/// The reload rule for `f`: its header (every field the loaders validate) parses back to
/// itself; if it is small, its RDB value (this module's encoding) also loads again, equal, with
/// the same digest, and re-encodes to the same bytes, and its `CF.SCANDUMP` stream (header,
/// then every chunk) loads through `CF.LOADCHUNK` into an equal filter. Returns the reloaded
/// filter (`None` for a large one).
pub fn assert_reloads(f: &CuckooFilter) -> Option<CuckooFilter> {
    let header = Header::parse(&f.header().encode())
        .unwrap_or_else(|e| panic!("the SCANDUMP header is refused: {e:?} ({:?})", f.info()));
    assert!(header == f.header(), "the header parses to another filter");
    if f.memory_usage() > WHOLE_RELOAD_BYTES {
        return None;
    }
    let mut saved = Vec::<u8>::new();
    f.write_rdb(&mut saved);
    let back =
        CuckooFilter::read_rdb(&mut SliceReader::new(&saved), RDB_ENCODING_VERSION, &Unlimited)
            .unwrap_or_else(|e| panic!("the saved value is refused: {e:?} ({:?})", f.info()));
    assert!(back == *f, "the reload changed the filter");
    let mut again = Vec::<u8>::new();
    back.write_rdb(&mut again);
    assert!(again == saved, "the reloaded filter saves other bytes");
    let digest = |f: &CuckooFilter| {
        let mut d = Vec::new();
        f.digest(|b| d.extend_from_slice(b));
        d
    };
    assert!(digest(&back) == digest(f), "the reload changed the digest");
    let mut copy = header.allocate(&Unlimited).expect("a filter in memory is admitted");
    let mut it = 1;
    while let Some((next, bytes)) = f.chunk(it) {
        copy.load_chunk(next, &bytes).expect("own chunk");
        it = next;
    }
    assert!(copy == *f, "the SCANDUMP stream changed the filter");
    Some(back)
}
