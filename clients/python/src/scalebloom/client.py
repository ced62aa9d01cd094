"""Typed methods for scalebloom's Bloom commands (``BF.*``) over any redis-py client.

``Bloom(r)`` wraps ``redis.Redis`` or ``redis.RedisCluster``; ``AsyncBloom(r)`` wraps their
``redis.asyncio`` twins. Both send through the client's own ``execute_command``, so routing
(cluster slots, MOVED/ASK), retries, connection pools and RESP2/RESP3 are redis-py's, and a
refused command raises ``redis.exceptions.ResponseError`` with the server's message.

Each command is written once, in :class:`BloomCommands`, as a method that builds a
:class:`~scalebloom._protocol.Call`; :class:`Bloom` runs it sync and :class:`AsyncBloom`
awaits it (see :mod:`scalebloom._exec`).
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from redis.exceptions import DataError

from . import _protocol as p
from ._exec import AsyncClient, SyncClient, command, cursor, loader
from ._protocol import (
    Arg,
    BloomInfo,
    BloomStats,
    Call,
    Chunk,
    CreateOptions,
    Cursor,
    Item,
    Items,
    Layout,
    WindowLength,
    items_of,
    loadchunk_call,
    scandump_cursor,
)


class BloomCommands:
    """scalebloom's ``BF.*`` commands, written once; :class:`Bloom` and :class:`AsyncBloom`
    run them. ``client`` is the redis-py client they send through."""

    client: Any

    @command
    def reserve(
        self,
        key: Arg,
        error_rate: float,
        capacity: int,
        *,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
        window: Optional[WindowLength] = None,
        layout: Optional[Layout] = None,
        like: Optional[Arg] = None,
    ) -> Call[bool]:
        """``BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [COUNTING 4|8]
        [WINDOW duration|ITEMS] [LAYOUT STANDARD|BLOCKED] [LIKE otherkey]``.

        Creates an empty filter and returns ``True``. ``counting=4`` or ``8`` makes a counting
        filter (each bit becomes a counter of that many bits) whose items :meth:`delete` can
        remove. ``window`` makes a filter whose items expire: ``"items"`` (a sliding window
        over the last ``capacity`` items), a duration string (``"500ms"``, ``"30s"``,
        ``"10m"``, ``"2h"``, ``"7d"``) or a ``datetime.timedelta`` (whole milliseconds); then
        ``capacity`` is the items expected per window. ``layout="blocked"`` makes a
        cache-line-blocked filter, ``"standard"`` a standard one (default: the server's
        ``bf-layout``). Raises ``ResponseError("item exists")`` when the key exists.

        ``like=otherkey`` makes an empty filter of ``otherkey``'s shape, kind and seed (the
        server checks ``error_rate`` and ``capacity`` but does not use them), so that
        :meth:`merge` ORs the two into one layer. It copies every option: giving another one
        with it raises ``DataError`` (the module's words, :data:`~scalebloom._protocol.LIKE_WITH_OPTIONS`)
        before anything is sent. In a cluster both keys must be in one slot (a hash tag)."""
        opts = CreateOptions(expansion, nonscaling, counting, window, layout, like)
        return p.bloom_reserve(key, error_rate, capacity, opts)

    @command
    def add(self, key: Arg, item: Item) -> Call[bool]:
        """``BF.ADD``: ``True`` if the item was new, ``False`` if (probably) present already.
        Creates the key with the server's defaults when it is missing."""
        return Call(("BF.ADD", key, item), p.to_bool)

    @command
    def madd(self, key: Arg, items: Items) -> Call[List[bool]]:
        """``BF.MADD``: one bool per item, in order. When the server stops early (a full
        nonscaling filter, a refused allocation) its error is raised; the items before it
        went in. A ``str`` or ``bytes`` given as ``items`` raises ``TypeError``."""
        return Call(("BF.MADD", key, *items_of(items)), p.to_bools)

    @command
    def insert(
        self,
        key: Arg,
        items: Items,
        *,
        capacity: Optional[int] = None,
        error_rate: Optional[float] = None,
        nocreate: bool = False,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
        window: Optional[WindowLength] = None,
        layout: Optional[Layout] = None,
        like: Optional[Arg] = None,
    ) -> Call[List[bool]]:
        """``BF.INSERT key [CAPACITY n] [ERROR r] [NOCREATE] [EXPANSION n] [NONSCALING]
        [COUNTING 4|8] [WINDOW duration|ITEMS] [LAYOUT STANDARD|BLOCKED] [LIKE otherkey]
        ITEMS item …``: one bool per item, in order. The creation options (those of
        :meth:`reserve`) apply only when the key is created; ``nocreate=True`` raises
        ``ResponseError("not found")`` for a missing key. ``like`` is :meth:`reserve`'s: with
        it, ``capacity``, ``error_rate`` and the other creation options raise ``DataError``
        (``nocreate`` may be given)."""
        if like is not None and (capacity is not None or error_rate is not None):
            raise DataError(p.LIKE_WITH_OPTIONS)
        args: List[Arg] = ["BF.INSERT", key]
        if capacity is not None:
            args += ["CAPACITY", capacity]
        if error_rate is not None:
            args += ["ERROR", error_rate]
        if nocreate:
            args.append("NOCREATE")
        args += CreateOptions(expansion, nonscaling, counting, window, layout, like).args()
        args.append("ITEMS")
        args += items_of(items)
        return Call(tuple(args), p.to_bools)

    @command
    def merge(self, dest: Arg, *sources: Arg) -> Call[bool]:
        """``BF.MERGE dest source [source …]``: afterwards ``dest`` holds every item of the
        sources and of what it held; returns ``True``. A missing ``dest`` is created from the
        sources, a missing source counts as empty (all missing: ``ResponseError("not
        found")``). Filters made with ``like=`` one another (same shape, kind and seed) are
        OR-ed into one layer when the error allows; any other is kept apart as a member (one
        more layer in :meth:`info`'s ``filters``, checked by every lookup, so the error rates
        add up). The server refuses, changing nothing, with ``ResponseError``: a counting
        filter with a plain one, counter widths 4 and 8, RedisBloom's layout with another,
        windowed filters, the limits (``bf.max-filter-bytes``, more than 64 members), and
        ``WRONGTYPE`` for a key of another type. In a cluster every key must be in one slot
        (a hash tag). At least one source: ``TypeError`` otherwise."""
        if not sources:
            raise TypeError("merge() takes at least one source key")
        return Call(("BF.MERGE", dest, *sources), p.to_ok)

    @command
    def exists(self, key: Arg, item: Item) -> Call[bool]:
        """``BF.EXISTS``: ``True`` if the item is (probably) present, ``False`` if it is surely
        absent or the key is missing."""
        return Call(("BF.EXISTS", key, item), p.to_bool)

    @command
    def mexists(self, key: Arg, items: Items) -> Call[List[bool]]:
        """``BF.MEXISTS``: one bool per item, in order."""
        return Call(("BF.MEXISTS", key, *items_of(items)), p.to_bools)

    @command
    def delete(self, key: Arg, item: Item) -> Call[bool]:
        """``BF.DEL`` (counting filters): ``True`` if the item was present and one occurrence of
        it was removed, ``False`` if it was absent (nothing changed). Delete only what you
        added (docs/counting.md says why). Raises ``ResponseError`` for a
        missing key (``not found``) or a plain filter (``not a counting filter: …``)."""
        return Call(("BF.DEL", key, item), p.to_bool)

    @command
    def mdelete(self, key: Arg, items: Items) -> Call[List[bool]]:
        """``BF.MDEL``: :meth:`delete` of each item, one bool per item in order."""
        return Call(("BF.MDEL", key, *items_of(items)), p.to_bools)

    @command
    def card(self, key: Arg) -> Call[int]:
        """``BF.CARD``: items added (0 for a missing key; a windowed filter: the items its
        window holds now)."""
        return Call(("BF.CARD", key), p.to_int)

    @command
    def info(self, key: Arg) -> Call[BloomInfo]:
        """``BF.INFO``: a :class:`BloomInfo`. Raises ``ResponseError("not found")`` for a missing
        key."""
        return Call(("BF.INFO", key), p.parse_info)

    @command
    def stats(self, key: Arg) -> Call[BloomStats]:
        """``BF.STATS``: a :class:`BloomStats`, with numbers (rates as floats) under RESP2 and
        RESP3 alike, for every kind of Bloom filter (a windowed one fills the window fields
        and leaves the fill fields ``None``). Raises ``ResponseError("not found")`` for a
        missing key."""
        return Call(("BF.STATS", key), p.parse_stats)

    @command
    def debug(self, key: Arg) -> Call[List[str]]:
        """``BF.DEBUG``: ``size:<items>``, then one line per layer. Raises
        ``ResponseError("not found")`` for a missing key and ``WRONGTYPE`` for a windowed
        filter."""
        return Call(("BF.DEBUG", key), p.to_texts)

    @cursor
    def scandump(self, key: Arg) -> Cursor[Chunk]:
        """``BF.SCANDUMP``, from iterator 0 to the end: an iterator of ``(iterator, data)``
        chunks (the header first), each fetched when asked for. Give them to another
        server's :meth:`loadchunks` in order. The filter should take no writes meanwhile:
        SCANDUMP is not a snapshot."""
        return scandump_cursor("BF.SCANDUMP", key)

    @loader
    def loadchunks(self, key: Arg) -> Callable[[Chunk], Call[bool]]:
        """``BF.LOADCHUNK key iterator data`` for each ``(iterator, data)`` of ``chunks``, in
        order (what :meth:`scandump` yields); returns the number of chunks loaded. The key
        must not exist; the first refused chunk raises ``ResponseError`` (the filter is then
        partial: ``DEL`` it before trying again)."""
        return loadchunk_call("BF.LOADCHUNK", key)


class Bloom(SyncClient, BloomCommands):
    """scalebloom's Bloom commands on a sync redis-py client (``redis.Redis``,
    ``redis.RedisCluster``).

    >>> import redis, scalebloom
    >>> bf = scalebloom.Bloom(redis.Redis())
    >>> bf.reserve("tags", 0.01, 1000, counting=4)
    True
    """


class AsyncBloom(AsyncClient, BloomCommands):
    """scalebloom's Bloom commands on an asyncio redis-py client (``redis.asyncio.Redis``,
    ``redis.asyncio.RedisCluster``): :class:`Bloom`'s methods, awaited (``scandump`` is an
    async iterator, and ``loadchunks`` also takes one).

    >>> bf = scalebloom.AsyncBloom(redis.asyncio.Redis())
    >>> await bf.add("visitors", "alice")
    True
    """
