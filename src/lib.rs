//! scalebloom: scalable Bloom filters for Redis, a drop-in for RedisBloom's `BF.*` commands.
//!
//! `filter` is the pure core (no Redis); `module` is the glue: the allocator
//! (`module/alloc.rs`), the commands and their registration (`module/registry.rs`,
//! `module/commands/`), the native type (`module/datatype.rs`), configuration and memory
//! limits. This file is the entry point only.
//!
//! `unsafe` lives where it earns its place, each block with its proof beside it: in the glue,
//! every call through the module API's function pointers and the argv read in place
//! (`module/args.rs`); in the core, the memory of bit arrays (`filter/mem.rs`: zeroed
//! allocation, huge-page advice, the prefetch hint), the probe kernels (`filter/probe.rs`:
//! unchecked indexing and the BMI2 builds, called only on CPUs that have it), and the segment
//! table of large arrays (`filter/bits.rs`), whose checked shape bounds every probe.

pub mod filter;
pub mod module;

use module::alloc::BloomAlloc;
use module::registry::init;
use module::types::BLOOM_TYPE;
use redis_module::redis_module;

redis_module! {
    name: "bf",
    version: 100,
    allocator: (BloomAlloc, BloomAlloc),
    data_types: [BLOOM_TYPE],
    init: init,
}
