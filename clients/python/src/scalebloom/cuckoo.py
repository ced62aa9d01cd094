"""Typed methods for the cuckoo filter commands (``CF.*``) over any redis-py client.

``Cuckoo(r)`` wraps ``redis.Redis`` or ``redis.RedisCluster``; ``AsyncCuckoo(r)`` their
``redis.asyncio`` twins. The commands are RedisBloom's (scalebloom adds ``FINGERPRINT
8|16|32`` and ``CF.STATS``), so these methods work on RedisBloom too, except where a docstring
says otherwise.
Each command is written once, in :class:`CuckooCommands`, as a method that builds a
:class:`~scalebloom._protocol.Call` (see :mod:`scalebloom._exec`).

RESP2 and RESP3 answer ``CF.INSERT`` differently (1/-1 against true/false) and
``CF.INSERTNX`` alike (1/0/-1): the methods return the same Python values under both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from redis.exceptions import ResponseError

from . import _protocol as p
from ._exec import AsyncClient, SyncClient, command, cursor, loader
from ._protocol import (
    Arg,
    Call,
    Chunk,
    Cursor,
    Item,
    Items,
    items_of,
    loadchunk_call,
    scandump_cursor,
)


class CuckooInsert(enum.IntEnum):
    """One item's answer to ``CF.INSERTNX`` (an ``int``: compares equal to the server's
    code)."""

    ADDED = 1
    """The item was added."""
    PRESENT = 0
    """The item was (probably) present already; nothing changed."""
    FULL = -1
    """The filter is full (it may not grow, or has ``cf-max-expansions`` sub-filters)."""


@dataclass(frozen=True)
class CuckooInfo:
    """``CF.INFO key``."""

    size: int
    """``Size``: bytes of the filter."""
    buckets: int
    """``Number of buckets`` (of the first sub-filter)."""
    filters: int
    """``Number of filters``: sub-filters."""
    items_inserted: int
    """``Number of items inserted`` (less those deleted)."""
    items_deleted: int
    """``Number of items deleted``."""
    bucket_size: int
    """``Bucket size``: fingerprints per bucket."""
    expansion: int
    """``Expansion rate`` (0: the filter never grows)."""
    max_iterations: int
    """``Max iterations``: kick-outs tried before the filter counts as full."""
    fingerprint_bits: int = 8
    """``Fingerprint bits``: 8 (RedisBloom's, not reported), 16 or 32."""


def parse_cuckoo_info(v: Any) -> CuckooInfo:
    d = p.pairs(v)
    return CuckooInfo(
        size=int(d["Size"]),
        buckets=int(d["Number of buckets"]),
        filters=int(d["Number of filters"]),
        items_inserted=int(d["Number of items inserted"]),
        items_deleted=int(d["Number of items deleted"]),
        bucket_size=int(d["Bucket size"]),
        expansion=int(d["Expansion rate"]),
        max_iterations=int(d["Max iterations"]),
        fingerprint_bits=int(d.get("Fingerprint bits", 8)),
    )


@dataclass(frozen=True)
class CuckooStats:
    """``CF.STATS key`` (scalebloom's own): how full the filter is, and whether it takes more
    items."""

    capacity: int
    """``Capacity``: fingerprint slots over all sub-filters."""
    items: int
    """``Items``: fingerprints stored (added minus deleted)."""
    load_factor: float
    """``Load factor``: ``items`` ÷ ``capacity``."""
    load_factor_newest: float
    """``Load factor of newest filter``."""
    filters: int
    """``Number of filters``: sub-filters."""
    max_filters: int
    """``Max filters``: 1 with ``EXPANSION 0``, else the server's ``cf-max-expansions``."""
    saturated: bool
    """``Saturated``: the filter has ``max_filters`` sub-filters, or cannot grow and its
    newest sub-filter is loaded to where inserts start to fail (docs/cuckoo.md, ``CF.STATS``
    row gives the thresholds)."""


def parse_cuckoo_stats(v: Any) -> CuckooStats:
    d = p.pairs(v)
    return CuckooStats(
        capacity=int(d["Capacity"]),
        items=int(d["Items"]),
        load_factor=p.to_float(d["Load factor"]),
        load_factor_newest=p.to_float(d["Load factor of newest filter"]),
        filters=int(d["Number of filters"]),
        max_filters=int(d["Max filters"]),
        saturated=p.to_bool(d["Saturated"]),
    )


def to_added(v: Any) -> List[bool]:
    """``CF.INSERT``'s array: 1 / true (added) → ``True``, -1 / false (full) → ``False``; an
    error element (a memory limit refused that item) is raised."""
    p._raise_if_error(v)
    out = [x == 1 for x in v]
    for i, added in enumerate(out):
        x = v[i]
        if not added and not (x is False or x == -1):
            p._raise_if_error(x)
            raise ResponseError(f"unexpected reply {x!r}")
    return out


def to_inserts(v: Any) -> List[CuckooInsert]:
    """``CF.INSERTNX``'s array of 1 / 0 / -1; an error element is raised."""
    p._raise_if_error(v)
    return [CuckooInsert(int(p._raise_if_error(x))) for x in v]


def _insert(
    verb: str,
    key: Arg,
    items: Items,
    capacity: Optional[int],
    nocreate: bool,
    fingerprint: Optional[int],
) -> List[Arg]:
    args: List[Arg] = [verb, key]
    if capacity is not None:
        args += ["CAPACITY", capacity]
    if nocreate:
        args.append("NOCREATE")
    if fingerprint is not None:
        args += ["FINGERPRINT", fingerprint]
    args.append("ITEMS")
    args += items_of(items)
    return args


class CuckooCommands:
    """The ``CF.*`` commands, written once; :class:`Cuckoo` and :class:`AsyncCuckoo` run
    them. ``client`` is the redis-py client they send through."""

    client: Any

    @command
    def reserve(
        self,
        key: Arg,
        capacity: int,
        bucket_size: Optional[int] = None,
        max_iterations: Optional[int] = None,
        expansion: Optional[int] = None,
        fingerprint: Optional[int] = None,
    ) -> Call[bool]:
        """``CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n] [EXPANSION n]
        [FINGERPRINT 8|16|32]``: creates an empty filter and returns ``True``. ``fingerprint``
        is scalebloom's own (16 and 32 bits: a far lower error, 2× and 4× the memory).
        Raises ``ResponseError("item exists")`` when the key exists."""
        args: List[Arg] = ["CF.RESERVE", key, capacity]
        for name, v in (
            ("BUCKETSIZE", bucket_size),
            ("MAXITERATIONS", max_iterations),
            ("EXPANSION", expansion),
            ("FINGERPRINT", fingerprint),
        ):
            if v is not None:
                args += [name, v]
        return Call(tuple(args), p.to_ok)

    @command
    def add(self, key: Arg, item: Item) -> Call[bool]:
        """``CF.ADD``: adds a copy of the item's fingerprint (even if present) and returns
        ``True``. Raises ``ResponseError("Filter is full")`` or ``("Maximum expansions
        reached")`` when it cannot. Creates the key from the server's ``cf-*`` settings."""
        return Call(("CF.ADD", key, item), p.to_bool)

    @command
    def addnx(self, key: Arg, item: Item) -> Call[bool]:
        """``CF.ADDNX``: ``True`` if the item was added, ``False`` if (probably) present."""
        return Call(("CF.ADDNX", key, item), p.to_bool)

    @command
    def insert(
        self,
        key: Arg,
        items: Items,
        capacity: Optional[int] = None,
        nocreate: bool = False,
        *,
        fingerprint: Optional[int] = None,
    ) -> Call[List[bool]]:
        """``CF.INSERT key [CAPACITY n] [NOCREATE] [FINGERPRINT 8|16|32] ITEMS item …``: one
        bool per item, in order: ``True`` added, ``False`` the filter was full. The options
        apply only when the key is created; ``nocreate=True`` raises ``ResponseError("not
        found")`` for a missing key. An item a memory limit refused raises that error (the
        server went on with the next items: check them with :meth:`mexists`)."""
        args = _insert("CF.INSERT", key, items, capacity, nocreate, fingerprint)
        return Call(tuple(args), to_added)

    @command
    def insertnx(
        self,
        key: Arg,
        items: Items,
        capacity: Optional[int] = None,
        nocreate: bool = False,
        *,
        fingerprint: Optional[int] = None,
    ) -> Call[List[CuckooInsert]]:
        """``CF.INSERTNX``: as :meth:`insert`, each item added only if absent; one
        :class:`CuckooInsert` per item (``ADDED`` 1, ``PRESENT`` 0, ``FULL`` -1)."""
        args = _insert("CF.INSERTNX", key, items, capacity, nocreate, fingerprint)
        return Call(tuple(args), to_inserts)

    @command
    def exists(self, key: Arg, item: Item) -> Call[bool]:
        """``CF.EXISTS``: ``True`` if the item is (probably) present (``False`` for a missing
        key)."""
        return Call(("CF.EXISTS", key, item), p.to_bool)

    @command
    def mexists(self, key: Arg, items: Items) -> Call[List[bool]]:
        """``CF.MEXISTS``: one bool per item, in order."""
        return Call(("CF.MEXISTS", key, *items_of(items)), p.to_bools)

    @command
    def delete(self, key: Arg, item: Item) -> Call[bool]:
        """``CF.DEL``: ``True`` if a copy of the item's fingerprint was removed. Delete only
        what you added (another item may share the fingerprint). Raises
        ``ResponseError("Not found")`` for a missing key."""
        return Call(("CF.DEL", key, item), p.to_bool)

    @command
    def count(self, key: Arg, item: Item) -> Call[int]:
        """``CF.COUNT``: copies of the item's fingerprint in its buckets (an upper bound of
        its count; 0 for a missing key)."""
        return Call(("CF.COUNT", key, item), p.to_int)

    @command
    def compact(self, key: Arg) -> Call[bool]:
        """``CF.COMPACT``: moves fingerprints into older sub-filters and frees emptied newest
        ones; ``True``."""
        return Call(("CF.COMPACT", key), p.to_ok)

    @command
    def info(self, key: Arg) -> Call[CuckooInfo]:
        """``CF.INFO``: a :class:`CuckooInfo`. Raises ``ResponseError("not found")`` for a
        missing key."""
        return Call(("CF.INFO", key), parse_cuckoo_info)

    @command
    def stats(self, key: Arg) -> Call[CuckooStats]:
        """``CF.STATS`` (scalebloom's own; RedisBloom has no such command): a
        :class:`CuckooStats`, numbers under RESP2 and RESP3 alike. Raises
        ``ResponseError("not found")`` for a missing key."""
        return Call(("CF.STATS", key), parse_cuckoo_stats)

    @command
    def debug(self, key: Arg) -> Call[str]:
        """``CF.DEBUG``: ``bktsize:2 buckets:512 items:4 deletes:0 filters:1 …``."""
        return Call(("CF.DEBUG", key), p.to_text)

    @cursor
    def scandump(self, key: Arg) -> Cursor[Chunk]:
        """``CF.SCANDUMP``, from iterator 0 to the end: an iterator of ``(iterator, data)``
        chunks (the header first), each fetched when asked for; give them to
        :meth:`loadchunks` in order. A filter with no items yields nothing (the server ends
        the dump at once, as RedisBloom does)."""
        return scandump_cursor("CF.SCANDUMP", key)

    @loader
    def loadchunks(self, key: Arg) -> Callable[[Chunk], Call[bool]]:
        """``CF.LOADCHUNK key iterator data`` for each ``(iterator, data)`` of ``chunks``, in
        order; returns the number of chunks loaded. The key must not exist; the first refused
        chunk raises ``ResponseError``."""
        return loadchunk_call("CF.LOADCHUNK", key)


class Cuckoo(SyncClient, CuckooCommands):
    """The cuckoo filter commands on a sync redis-py client (``redis.Redis``,
    ``redis.RedisCluster``).

    >>> import redis, scalebloom
    >>> cf = scalebloom.Cuckoo(redis.Redis())
    >>> cf.reserve("carts", 1000)
    True
    """


class AsyncCuckoo(AsyncClient, CuckooCommands):
    """The cuckoo filter commands on an asyncio redis-py client: :class:`Cuckoo`'s methods,
    awaited (``scandump`` is an async iterator, and ``loadchunks`` also takes one)."""
