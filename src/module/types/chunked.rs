//! SCANDUMP/LOADCHUNK for every type, as one protocol: a type says how it dumps and loads
//! its bytes ([`Chunked`]) and in which family's words it answers ([`Dialect`]); the commands
//! (`commands/dump.rs`) run the protocol once for all.
//!
//! The protocol, RedisBloom's: `SCANDUMP key 0` gives a header, each later iterator a chunk
//! and the iterator of the next, `[0, …]` the end. `LOADCHUNK key 1 <header>` at a missing
//! key makes a new, empty value that *awaits its chunks*; later `LOADCHUNK key <it> <chunk>`
//! write its bytes. A client's chunk goes only into a value that awaits chunks — one a header
//! made and that nothing else has written since — never into a filter in use, whose bits it
//! would silently replace. The replication link and AOF replay are not checked: the primary
//! (or the server that wrote the file) already was.

use std::borrow::Cow;
use std::ffi::CStr;

use super::NativeType;
use super::io::AofWriter;
use crate::module::call::Call;
use crate::module::reply::Reply;

/// How a family of commands (`BF.*`, `CF.*`) words the protocol's replies: RedisBloom's two
/// families differ in their errors, in the order of their checks and in how they end.
pub struct Dialect {
    /// A missing key (SCANDUMP, or LOADCHUNK of a chunk).
    pub not_found: &'static str,
    /// Reads SCANDUMP's iterator: `Ok(None)` asks for the end at once.
    pub scan_iterator: fn(&[u8]) -> Result<Option<u64>, Reply>,
    /// Whether SCANDUMP checks its iterator before the key.
    pub iterator_first: bool,
    /// The second element of SCANDUMP's end reply.
    pub end: fn() -> Reply,
    /// Reads LOADCHUNK's iterator.
    pub load_iterator: fn(&[u8]) -> Result<i64, Reply>,
    /// A header (iterator 1) for a key that exists.
    pub key_exists: &'static str,
    /// Whether iterator 1 with no data at an existing key is an (empty) chunk rather than a
    /// header.
    pub empty_header_is_chunk: bool,
    /// A client's chunk for a value that does not await chunks.
    pub not_restoring: &'static str,
    /// The keyspace event of a LOADCHUNK.
    pub event: &'static CStr,
    /// The LOADCHUNK command's name, for the AOF rewrite.
    pub load_command: &'static CStr,
}

/// A type that moves in pieces with SCANDUMP/LOADCHUNK.
pub trait Chunked: NativeType {
    /// The words its family answers in.
    const DIALECT: &'static Dialect;

    /// The header: what LOADCHUNK iterator 1 makes an empty value of the same shape from.
    fn header(&self) -> Vec<u8>;

    /// The chunk at SCANDUMP iterator `it` (at least 1) and the iterator after it, which is
    /// also the LOADCHUNK iterator that writes it back; `None` past the last.
    fn chunk(&self, it: u64) -> Option<(u64, Cow<'_, [u8]>)>;

    /// Whether SCANDUMP ends at once, header included (RedisBloom's cuckoo filters with no
    /// items).
    fn dumps_nothing(&self) -> bool {
        false
    }

    /// A new value from a LOADCHUNK header (its memory asked of the call's limits), awaiting
    /// its chunks.
    fn from_header(call: &Call, header: &[u8]) -> Result<Self, Reply>;

    /// Where the chunk of `len` bytes at LOADCHUNK iterator `it` goes, checked before anything
    /// about the value.
    fn chunk_position(it: i64, len: usize) -> Result<u64, Reply>;

    /// Whether it awaits chunks: a header made it and nothing else has written it since.
    fn awaiting_chunks(&self) -> bool;

    /// Writes the chunk `data` at `at` (from [`Chunked::chunk_position`]); refused, nothing
    /// changed, when it does not fit.
    fn write_chunk(&mut self, at: u64, data: &[u8]) -> Result<(), Reply>;
}

/// The AOF rewrite of a chunked value: `LOADCHUNK key 1 <header>`, then `LOADCHUNK key <it>
/// <chunk>` for every chunk with a set bit (the others are zero once the header made the
/// value).
pub fn rewrite<T: Chunked>(value: &T, aof: &mut AofWriter) {
    let command = T::DIALECT.load_command;
    aof.emit_key_number_data(command, 1, &value.header());
    let mut it = 1u64;
    while let Some((next, data)) = value.chunk(it) {
        if data.iter().any(|&b| b != 0) {
            aof.emit_key_number_data(command, i64::try_from(next).unwrap_or(i64::MAX), &data);
        }
        it = next;
    }
}
