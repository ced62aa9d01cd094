//! Cuckoo filters, as RedisBloom's `CF.*` commands make them — the same fingerprints in the
//! same slots for the same commands — without its bugs.
//!
//! # What a cuckoo filter is
//! A table of buckets, each with `bucketSize` slots (default 2) holding small fingerprints of
//! items (8 bits; 0 marks an empty slot). An item has two candidate buckets: `h1` from its
//! hash and `h2 = h1 ^ (fp × 0x5bd1e995)` (the fingerprint chooses the XOR, so from either
//! bucket and the fingerprint alone the other is known). It is present if either bucket holds
//! its fingerprint; a false positive is another item with the same fingerprint in one of those
//! buckets, about `2 × bucketSize / 255` per sub-filter at 8 bits (`/ 65535` at 16). Deleting
//! removes one copy of the fingerprint; deleting an item never added can remove another
//! item's copy (a false negative), which is inherent to the structure.
//!
//! # Inserting ([`filter`], [`sub`])
//! Newest sub-filter first, the first empty slot of bucket `h1`, then of `h2`. If every
//! sub-filter's two buckets are full, a *kick-out* walk in the newest sub-filter: swap the
//! fingerprint into a victim slot, carry the evicted one to its other bucket, repeat up to
//! `maxIterations` times until one lands in an empty slot. The victim slot cycles
//! `0, 1, …, bucketSize − 1, 0, …` (no random choice, so replicas and RedisBloom make the same
//! moves). A walk that fails is undone swap by swap, so nothing is lost; then the filter grows
//! (a new sub-filter `expansion` times as many buckets) or, with `EXPANSION 0` or at the
//! sub-filter limit, answers full.
//!
//! # Layout ([`params`], [`slots`])
//! ```text
//! sub-filter 0: numBuckets buckets            [b0: s0 s1][b1: s0 s1] … (slots of F)
//! sub-filter 1: numBuckets × expansion        …
//! sub-filter i: numBuckets × expansion^i
//! ```
//! `numBuckets = nextPow2(capacity / bucketSize)`; the expansion is rounded up to a power of
//! two, so every bucket count is a power of two, each dividing the next: the index reduction is
//! a mask, the alternate bucket an involution, and a fingerprint moves down to an older
//! sub-filter from its bucket index alone (compaction). Items deleted newest sub-filter first.
//!
//! # Fingerprints ([`fingerprint`])
//! `hash = MurmurHash64A(item, 0)`, `fp = hash mod 255 + 1`. `FINGERPRINT 16|32` (this
//! module's own option) uses `hash mod (2^w − 1) + 1` with everything else the same; the
//! filter is generic over the slot type ([`FixedWidthCuckoo<F>`]) and [`CuckooFilter`] dispatches once
//! per command.
//!
//! # Encoding ([`codec`])
//! RDB: RedisBloom's `MBbloomCF` encoding version 4 (read) and this module's version 512 (the
//! width, then version 4's fields, slots in ≤ 64 MiB strings). `CF.SCANDUMP`: RedisBloom's
//! 38-byte header and its chunk iterators byte for byte (8-bit filters load both ways); a
//! 16/32-bit filter gets a 54-byte header of its own that RedisBloom refuses.
//!
//! # Differences from RedisBloom (each with a test)
//! - `EXPANSION 0` never grows and answers full (#481 crashed); sizes in 64-bit checked
//!   arithmetic (#609's 32-bit bucket count; RedisBloom's 32-bit `SubCF_GetIndex` for
//!   sub-filters over 2^32 slots); counters saturate; nothing divides by a loaded value.
//!   The item count (trusted from the data, not recounted) stays within the slots, the
//!   loader's bound, however it was loaded: what the filter saves always loads again.
//! - Every loaded field is validated and the size admitted before allocation; a chunk must lie
//!   inside one sub-filter (RedisBloom wrote a chunk past the end into the last one).
//! - `CF.COUNT` counts a bucket once when both indexes reduce to it (RedisBloom counts it
//!   twice: in sub-filters of ≤ 128 buckets, items whose fingerprint is a multiple of the
//!   bucket count).
//! - One `CF.INSERT` grows the filter up to `cf-max-expansions` sub-filters, not past it.
//!
//! Nothing here uses the Redis module API.

pub mod any;
pub mod codec;
pub mod filter;
pub mod fingerprint;
pub mod params;
pub mod slots;
pub mod sub;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;

pub use any::CuckooFilter;
pub use codec::{Header, ScanStep};
pub use filter::{CuckooStats, FixedWidthCuckoo, Info, Insert, InsertSink, Shape, full_load};
pub use fingerprint::{Fingerprint, FingerprintWidth};
pub use params::CuckooParams;
