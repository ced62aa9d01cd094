//! The pure core of scalebloom: three kinds of filter, and what they share, with no Redis in
//! sight. Nothing below this folder uses the Redis module API: the glue is `crate::module`.
//!
//! # The kinds
//! Each kind is one folder: its parameters and sizing, its memory layout, its operations and
//! its byte formats.
//! - [`bloom`]: the scalable Bloom chain — layers of bits (plain, blocked in 512-bit blocks,
//!   counting, or in RedisBloom's layer layout), a new layer `expansion` times larger when the
//!   newest is full. Its formats: [`bloom::codec`] (scalebloom's RDB fields and dump header),
//!   [`bloom::chunks`] (the chunks of SCANDUMP/LOADCHUNK after either header) and
//!   [`bloom::redisbloom`] (RedisBloom's RDB value and dump header, the import).
//! - [`cuckoo`]: the cuckoo filter, as RedisBloom's `CF.*` makes it — buckets of fingerprints in
//!   sub-filters, each `expansion` times larger; [`cuckoo::codec`] its formats.
//! - [`window`]: the windowed filter (an age-partitioned Bloom filter) — a ring of generations
//!   whose items expire by time or by count; [`window::codec`] its formats.
//! - [`valkey`]: valkey-bloom's Bloom filters, kept in its hashing (SipHash-1-3 under a 32-byte
//!   seed) and layout, with its formats (its RDB value, the `BF.LOAD` payload) and scalebloom's
//!   own encoding of them.
//!
//! # What they share
//! - [`hash`]: the hash schemes (an item's 128 bits, or RedisBloom's MurmurHash); the scheme's
//!   id is stored with the data, so the same bits always mean the same items.
//! - [`masks`]: an item's probes inside one 512-bit block (blocked Bloom layers and the
//!   windowed filter's generations set the same bits for the same item).
//! - [`mem`]: the memory of bit arrays and slots (zeroed allocation, huge pages, prefetch,
//!   defrag moves).
//! - [`guard`]: the allocation guard every filter asks before it grows (per-filter limit,
//!   `maxmemory`).
//! - [`fields`]: typed fields, the vocabulary every byte format is written in (Redis' typed
//!   RDB calls or explicit little-endian bytes).
//! - [`error`]: [`FilterError`], everything any kind refuses; the glue maps it to reply texts
//!   in one place.
//!
//! # Dependencies
//! A kind uses the shared modules and never another kind's folder; the shared modules use no
//! kind. One exception: the windowed filter sizes its blocks with the Bloom chain's
//! blocked-layer model ([`bloom::params`]) and cuts its SCANDUMP chunks at the Bloom chain's
//! size ([`bloom::chunks::MAX_CHUNK_BYTES`]). Likewise valkey-bloom's layers keep their bits in the Bloom chain's
//! segmented [`bloom::bits::BitArray`], within its largest layer ([`bloom::params::MAX_LAYER_BITS`]). Inside [`bloom`], the formats ([`bloom::codec`]) hand a chain in
//! one of RedisBloom's schemes to [`bloom::redisbloom`], which never calls back.

pub mod bloom;
pub mod cuckoo;
pub mod error;
pub mod fields;
pub mod guard;
pub mod hash;
pub mod masks;
pub mod mem;
#[cfg(test)]
pub(crate) mod testrng;
pub mod valkey;
pub mod window;

pub use error::FilterError;
pub use guard::{AllocGuard, MaxFilterBytes, Unlimited};
