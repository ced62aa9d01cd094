//! The pure core of scalebloom: scalable Bloom filters with no Redis in sight.
//!
//! # Layout
//! - [`bloom`]: the scalable Bloom chain (plain, counting and RedisBloom-layout filters).
//! - [`guard`]: the allocation guard every filter asks before it grows.
//! - [`mem`]: the memory of bit arrays (zeroed allocation, huge pages, prefetch, defrag moves).
//! - [`fields`]: typed fields, the vocabulary of every byte format; [`bloom::codec`] (scalebloom's
//!   formats of a Bloom chain) and [`bloom::redisbloom`] (RedisBloom's) are written in it.
//! - [`bloom::chunks`]: the chunks of SCANDUMP/LOADCHUNK after either header, and the allocation of a
//!   chain that awaits them.
//!
//! # Encoding
//! A Bloom chain's byte formats (RDB fields, the dump header of SCANDUMP/LOADCHUNK) live in
//! [`bloom::codec`], which hands a chain in one of RedisBloom's schemes to [`bloom::redisbloom`] (its RDB
//! value, its dump header, their one strict validator and its format history); [`bloom::redisbloom`]
//! never calls back into [`bloom::codec`]. The cuckoo filter's formats are in `cuckoo/codec.rs`.
//!
//! Nothing below this folder uses the Redis module API: the Redis glue lives in `crate::module`.

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
pub mod window;

pub use error::FilterError;
pub use guard::{AllocGuard, MaxFilterBytes, Unlimited};
