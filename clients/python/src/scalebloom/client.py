"""Typed methods for scalebloom's commands over any redis-py client.

``Bloom(r)`` wraps ``redis.Redis`` or ``redis.RedisCluster``; ``AsyncBloom(r)`` wraps their
``redis.asyncio`` twins. Both send through the client's own ``execute_command``, so routing
(cluster slots, MOVED/ASK), retries, connection pools and RESP2/RESP3 are redis-py's, and a
refused command raises ``redis.exceptions.ResponseError`` with the server's message.

The two classes have the same methods (change them together): each builds a
:class:`~scalebloom._protocol.Call` and parses the reply with the same function.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from . import _protocol as p
from ._protocol import Arg, BloomInfo, BloomStats, CreateOptions, Item


class Bloom:
    """scalebloom's commands on a sync redis-py client (``redis.Redis``,
    ``redis.RedisCluster``).

    >>> import redis, scalebloom
    >>> bf = scalebloom.Bloom(redis.Redis())
    >>> bf.reserve("tags", 0.01, 1000, counting=4)
    True
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def reserve(
        self,
        key: Arg,
        error_rate: float,
        capacity: int,
        *,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
    ) -> bool:
        """``BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [COUNTING 4|8]``.

        Creates an empty filter and returns ``True``. ``counting=4`` or ``8`` makes a counting
        filter (each bit becomes a counter of that many bits) whose items :meth:`delete` can
        remove. Raises ``ResponseError("item exists")`` when the key exists."""
        call = p.reserve(
            key,
            error_rate,
            capacity,
            CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting),
        )
        return call.parse(self.client.execute_command(*call.args))

    def add(self, key: Arg, item: Item) -> bool:
        """``BF.ADD``: ``True`` if the item was new, ``False`` if (probably) present already.
        Creates the key with the server's defaults when it is missing."""
        call = p.add(key, item)
        return call.parse(self.client.execute_command(*call.args))

    def madd(self, key: Arg, items: Sequence[Item]) -> List[bool]:
        """``BF.MADD``: one bool per item, in order. When the server stops early (a full
        nonscaling filter, a refused allocation) its error is raised; the items before it
        went in."""
        call = p.madd(key, items)
        return call.parse(self.client.execute_command(*call.args))

    def insert(
        self,
        key: Arg,
        items: Sequence[Item],
        *,
        capacity: Optional[int] = None,
        error_rate: Optional[float] = None,
        nocreate: bool = False,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
    ) -> List[bool]:
        """``BF.INSERT key [CAPACITY n] [ERROR r] [NOCREATE] [EXPANSION n] [NONSCALING]
        [COUNTING 4|8] ITEMS item …``: one bool per item, in order. The creation options
        apply only when the key is created; ``nocreate=True`` raises ``ResponseError("not
        found")`` for a missing key."""
        call = p.insert(
            key,
            items,
            capacity,
            error_rate,
            nocreate,
            CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting),
        )
        return call.parse(self.client.execute_command(*call.args))

    def exists(self, key: Arg, item: Item) -> bool:
        """``BF.EXISTS``: ``True`` if the item is (probably) present, ``False`` if it is surely
        absent or the key is missing."""
        call = p.exists(key, item)
        return call.parse(self.client.execute_command(*call.args))

    def mexists(self, key: Arg, items: Sequence[Item]) -> List[bool]:
        """``BF.MEXISTS``: one bool per item, in order."""
        call = p.mexists(key, items)
        return call.parse(self.client.execute_command(*call.args))

    def delete(self, key: Arg, item: Item) -> bool:
        """``BF.DEL`` (counting filters): ``True`` if the item was present and one occurrence of
        it was removed, ``False`` if it was absent (nothing changed). Delete only what you
        added (the README's *Counting filters* says why). Raises ``ResponseError`` for a
        missing key (``not found``) or a plain filter (``not a counting filter: …``)."""
        call = p.delete(key, item)
        return call.parse(self.client.execute_command(*call.args))

    def mdelete(self, key: Arg, items: Sequence[Item]) -> List[bool]:
        """``BF.MDEL``: :meth:`delete` of each item, one bool per item in order."""
        call = p.mdelete(key, items)
        return call.parse(self.client.execute_command(*call.args))

    def card(self, key: Arg) -> int:
        """``BF.CARD``: items added (0 for a missing key)."""
        call = p.card(key)
        return call.parse(self.client.execute_command(*call.args))

    def info(self, key: Arg) -> BloomInfo:
        """``BF.INFO``: a :class:`BloomInfo`. Raises ``ResponseError("not found")`` for a missing
        key."""
        call = p.info(key)
        return call.parse(self.client.execute_command(*call.args))

    def stats(self, key: Arg) -> BloomStats:
        """``BF.STATS``: a :class:`BloomStats`, with numbers (rates as floats) under RESP2 and
        RESP3 alike. Raises ``ResponseError("not found")`` for a missing key."""
        call = p.stats(key)
        return call.parse(self.client.execute_command(*call.args))


class AsyncBloom:
    """scalebloom's commands on an asyncio redis-py client (``redis.asyncio.Redis``,
    ``redis.asyncio.RedisCluster``): :class:`Bloom`'s methods, awaited.

    >>> bf = scalebloom.AsyncBloom(redis.asyncio.Redis())
    >>> await bf.add("visitors", "alice")
    True
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    async def reserve(
        self,
        key: Arg,
        error_rate: float,
        capacity: int,
        *,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
    ) -> bool:
        """See :meth:`Bloom.reserve`."""
        call = p.reserve(
            key,
            error_rate,
            capacity,
            CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting),
        )
        return call.parse(await self.client.execute_command(*call.args))

    async def add(self, key: Arg, item: Item) -> bool:
        """See :meth:`Bloom.add`."""
        call = p.add(key, item)
        return call.parse(await self.client.execute_command(*call.args))

    async def madd(self, key: Arg, items: Sequence[Item]) -> List[bool]:
        """See :meth:`Bloom.madd`."""
        call = p.madd(key, items)
        return call.parse(await self.client.execute_command(*call.args))

    async def insert(
        self,
        key: Arg,
        items: Sequence[Item],
        *,
        capacity: Optional[int] = None,
        error_rate: Optional[float] = None,
        nocreate: bool = False,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
    ) -> List[bool]:
        """See :meth:`Bloom.insert`."""
        call = p.insert(
            key,
            items,
            capacity,
            error_rate,
            nocreate,
            CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting),
        )
        return call.parse(await self.client.execute_command(*call.args))

    async def exists(self, key: Arg, item: Item) -> bool:
        """See :meth:`Bloom.exists`."""
        call = p.exists(key, item)
        return call.parse(await self.client.execute_command(*call.args))

    async def mexists(self, key: Arg, items: Sequence[Item]) -> List[bool]:
        """See :meth:`Bloom.mexists`."""
        call = p.mexists(key, items)
        return call.parse(await self.client.execute_command(*call.args))

    async def delete(self, key: Arg, item: Item) -> bool:
        """See :meth:`Bloom.delete`."""
        call = p.delete(key, item)
        return call.parse(await self.client.execute_command(*call.args))

    async def mdelete(self, key: Arg, items: Sequence[Item]) -> List[bool]:
        """See :meth:`Bloom.mdelete`."""
        call = p.mdelete(key, items)
        return call.parse(await self.client.execute_command(*call.args))

    async def card(self, key: Arg) -> int:
        """See :meth:`Bloom.card`."""
        call = p.card(key)
        return call.parse(await self.client.execute_command(*call.args))

    async def info(self, key: Arg) -> BloomInfo:
        """See :meth:`Bloom.info`."""
        call = p.info(key)
        return call.parse(await self.client.execute_command(*call.args))

    async def stats(self, key: Arg) -> BloomStats:
        """See :meth:`Bloom.stats`."""
        call = p.stats(key)
        return call.parse(await self.client.execute_command(*call.args))
