"""One logical Bloom filter spread over N ordinary scalebloom filters, across a Redis Cluster.

A filter is one key, so one slot, so one node: its memory and its lookups are capped by that
node. :class:`PartitionedFilter` splits one logical filter into ``N`` partitions, each an
ordinary scalebloom filter under its own hash-tagged key, placed at creation so that every
primary holds ``N // P`` or ``N // P + 1`` of them. Every item belongs to exactly one
partition (:func:`scalebloom.routing.partition_of`), so the logical filter answers exactly as
its partition does, from any client, and the work of a batch spreads over the primaries.

Layout in Redis, for a filter named ``crawl``:

- ``{crawl}:meta``: a hash with ``format`` (``1``), ``kind`` (``bloom``, ``counting4``,
  ``counting8``), ``partitions``, ``error_rate``, ``capacity``, ``partition_capacity``,
  ``expansion`` (empty: the server's default), ``nonscaling`` (0/1), ``routing``
  (``blake2b64-mulshift``), ``routing_key`` (32 hex digits) and ``keys`` (a JSON array of the
  partition keys, partition 0 first). A client refuses a filter whose format or routing it does
  not know.
- ``{crawl/<i>/<salt>}``: partition ``i`` (see :mod:`scalebloom.routing`).

Sizing: the logical filter's false-positive rate is the mean of its partitions' (an absent
item is routed to one partition, each with probability 1/N), so sizing each partition for its
share of the items at the filter's error rate keeps the logical rate at or under the target.
The share is not exactly ``capacity / N``: with a keyed hash, a partition's count after
``capacity`` distinct items is Binomial(capacity, 1/N), whose standard deviation is below
``sqrt(capacity / N)``. Each partition is therefore reserved for ``ceil(capacity / N) +
ceil(4 * sqrt(capacity / N))`` items: four standard deviations, so the chance that any
partition passes its reservation before the logical filter reaches ``capacity`` is below
``N * 3.2e-5`` (0.04% for N = 12). Scaling partitions (the default) that do pass it add a
layer at a tighter error, so the bound still holds; a nonscaling one answers ``non scaling
filter is full``. The headroom costs ``4 / sqrt(capacity / N)`` of the memory (0.1% at a
million items per partition).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from redis.exceptions import DataError, ResponseError

from . import _protocol as p
from ._protocol import BloomInfo, BloomStats, CreateOptions, Item, encode_item
from ._router import AsyncRouter, ReplicationError, Router, Wait
from .routing import choose_keys, partition_of

FORMAT_VERSION = 1
ROUTING = "blake2b64-mulshift"
#: Items per command when a batch is split per partition.
CHUNK = 10_000

Cmd = Tuple[bytes, Tuple[Any, ...]]


def meta_key(name: str) -> str:
    """The metadata key of the filter ``name``."""
    return "{" + name + "}:meta"


def _check_name(name: str) -> None:
    if not name or "{" in name or "}" in name:
        raise DataError("a partitioned filter's name must be non-empty and hold no '{' or '}'")


def partition_capacity(capacity: int, partitions: int) -> int:
    """What each partition is reserved for (see the module docstring)."""
    share = capacity / partitions
    return math.ceil(share) + math.ceil(4 * math.sqrt(share))


@dataclass(frozen=True)
class Spec:
    """A partitioned filter's metadata, as stored in ``{name}:meta``."""

    name: str
    kind: str
    partitions: int
    error_rate: float
    capacity: int
    partition_capacity: int
    expansion: Optional[int]
    nonscaling: bool
    routing_key: bytes
    keys: List[str]
    format: int = FORMAT_VERSION
    routing: str = ROUTING

    def fields(self) -> Dict[str, str]:
        return {
            "format": str(self.format),
            "kind": self.kind,
            "partitions": str(self.partitions),
            "error_rate": repr(self.error_rate),
            "capacity": str(self.capacity),
            "partition_capacity": str(self.partition_capacity),
            "expansion": "" if self.expansion is None else str(self.expansion),
            "nonscaling": "1" if self.nonscaling else "0",
            "routing": self.routing,
            "routing_key": self.routing_key.hex(),
            "keys": json.dumps(self.keys),
        }

    @staticmethod
    def parse(name: str, raw: Mapping[Any, Any]) -> "Spec":
        if not raw:
            raise ResponseError(f"not found: no partitioned filter {name!r} ({meta_key(name)})")
        d = {p._text(k): p._text(v) for k, v in raw.items()}
        try:
            fmt = int(d["format"])
            if fmt != FORMAT_VERSION:
                raise DataError(
                    f"partitioned filter {name!r} has format {fmt}; this client "
                    f"reads format {FORMAT_VERSION} only"
                )
            if d["routing"] != ROUTING:
                raise DataError(
                    f"partitioned filter {name!r} routes by {d['routing']!r}; this "
                    f"client knows {ROUTING!r} only"
                )
            if d["kind"] not in ("bloom", "counting4", "counting8"):
                raise DataError(
                    f"partitioned filter {name!r} is of kind {d['kind']!r}, unknown to this client"
                )
            keys = json.loads(d["keys"])
            spec = Spec(
                name=name,
                kind=d["kind"],
                partitions=int(d["partitions"]),
                error_rate=float(d["error_rate"]),
                capacity=int(d["capacity"]),
                partition_capacity=int(d["partition_capacity"]),
                expansion=int(d["expansion"]) if d["expansion"] else None,
                nonscaling=d["nonscaling"] == "1",
                routing_key=bytes.fromhex(d["routing_key"]),
                keys=[str(k) for k in keys],
            )
        except (KeyError, ValueError, TypeError) as e:
            raise DataError(f"partitioned filter {name!r}: bad metadata ({e!r})") from e
        if len(spec.keys) != spec.partitions or spec.partitions < 1 or len(spec.routing_key) != 16:
            raise DataError(f"partitioned filter {name!r}: inconsistent metadata")
        return spec


@dataclass(frozen=True)
class PartitionedStats:
    """``BF.STATS`` over every partition, combined for the logical filter."""

    target_error_rate: float
    """The filter's error rate."""
    estimated_error_rate: float
    """The mean of the partitions' estimated error rates: an absent item goes to one
    partition, each with probability 1/N."""
    fill_ratio_all: float
    """The mean of the partitions' overall fill ratios."""
    estimated_items: int
    """The sum of the partitions' estimated items."""
    items_added: int
    """The sum of the partitions' ``Items added``."""
    saturated: bool
    """Whether any partition is saturated."""
    saturated_counters: Optional[int]
    """Counting filters: the sum of the partitions' saturated counters."""
    partitions: List[BloomStats] = field(default_factory=list)
    """Each partition's own :class:`BloomStats`, partition 0 first."""


class _Base:
    """What the sync and asyncio filters share: the spec, routing and reassembly."""

    spec: Spec

    @property
    def name(self) -> str:
        return self.spec.name

    def partition_of(self, item: Item) -> int:
        """The partition ``item`` belongs to."""
        return partition_of(encode_item(item), self.spec.routing_key, self.spec.partitions)

    def key_of(self, item: Item) -> str:
        """The key of the partition ``item`` belongs to."""
        return self.spec.keys[self.partition_of(item)]

    def _split(self, verb: str, items: Sequence[Item]) -> Tuple[List[Cmd], List[List[int]]]:
        """One command per (partition, chunk of CHUNK items), and for each command the
        positions of its items in ``items``."""
        groups: Dict[int, List[int]] = {}
        n, rk = self.spec.partitions, self.spec.routing_key
        blake2b, from_bytes = hashlib.blake2b, int.from_bytes
        for pos, item in enumerate(items):
            # partition_of(encode_item(item), rk, n), inlined: this loop is the client's
            # main cost per item.
            t = type(item)
            b: bytes = (
                item if t is bytes else item.encode() if t is str else encode_item(item)  # type: ignore[assignment,union-attr]
            )
            part = (from_bytes(blake2b(b, digest_size=8, key=rk).digest(), "little") * n) >> 64
            g = groups.get(part)
            if g is None:
                groups[part] = [pos]
            else:
                g.append(pos)
        cmds: List[Cmd] = []
        where: List[List[int]] = []
        for part, positions in groups.items():
            key = self.spec.keys[part]
            for s in range(0, len(positions), CHUNK):
                chunk = positions[s : s + CHUNK]
                cmds.append((key.encode(), (verb, key, *(items[q] for q in chunk))))
                where.append(chunk)
        return cmds, where

    @staticmethod
    def _join(n: int, where: List[List[int]], replies: List[Any]) -> List[bool]:
        out: List[bool] = [False] * n
        for positions, reply in zip(where, replies):
            for q, b in zip(positions, p.to_bools(reply)):
                out[q] = b
        return out

    @classmethod
    def _per_item(cls, e: ReplicationError, n: int, where: List[List[int]]) -> ReplicationError:
        """The router's per-command ReplicationError, restated per item: ``acked[i]`` and
        ``replies[i]`` (the bool answer) for ``items[i]``."""
        acked = [False] * n
        for positions, ok in zip(where, e.acked):
            for q in positions:
                acked[q] = ok
        return ReplicationError(str(e), acked, list(cls._join(n, where, e.replies)))

    def _all(self, verb: str) -> List[Cmd]:
        return [(k.encode(), (verb, k)) for k in self.spec.keys]

    def _info(self, replies: List[Any]) -> Dict[str, Any]:
        infos: List[BloomInfo] = [p.parse_info(r) for r in replies]
        s = self.spec
        return {
            "name": s.name,
            "format": s.format,
            "kind": s.kind,
            "partitions": s.partitions,
            "error_rate": s.error_rate,
            "capacity": s.capacity,
            "partition_capacity": s.partition_capacity,
            "expansion": s.expansion,
            "nonscaling": s.nonscaling,
            "routing": s.routing,
            "keys": list(s.keys),
            "size": sum(i.size for i in infos),
            "items": sum(i.items for i in infos),
            "filters": sum(i.filters for i in infos),
            "partition_info": infos,
        }

    def _stats(self, replies: List[Any]) -> PartitionedStats:
        st = [p.parse_stats(r) for r in replies]
        counters = [x.saturated_counters for x in st if x.saturated_counters is not None]
        return PartitionedStats(
            target_error_rate=self.spec.error_rate,
            estimated_error_rate=sum(x.estimated_error_rate for x in st) / len(st),
            fill_ratio_all=sum(x.fill_ratio_all for x in st) / len(st),
            estimated_items=sum(x.estimated_items for x in st),
            items_added=sum(x.items_added for x in st),
            saturated=any(x.saturated for x in st),
            saturated_counters=sum(counters) if counters else None,
            partitions=st,
        )

    @staticmethod
    def _wait(replicas: int, timeout_ms: int) -> Optional[Wait]:
        return Wait(replicas, timeout_ms) if replicas > 0 else None

    @staticmethod
    def _new_spec(
        name: str,
        error_rate: float,
        capacity: int,
        partitions: int,
        opts: CreateOptions,
        primaries: List[str],
        owner: Any,
    ) -> Spec:
        _check_name(name)
        if partitions < 1:
            raise DataError("partitions must be at least 1")
        if capacity < 1:
            raise DataError("capacity must be at least 1")
        opts.args()  # validates
        return Spec(
            name=name,
            kind=opts.kind,
            partitions=partitions,
            error_rate=float(error_rate),
            capacity=capacity,
            partition_capacity=partition_capacity(capacity, partitions),
            expansion=opts.expansion,
            nonscaling=opts.nonscaling,
            routing_key=os.urandom(16),
            keys=choose_keys(name, partitions, primaries, owner),
        )

    def _reserve_cmds(self) -> List[Cmd]:
        s = self.spec
        opts = CreateOptions(
            expansion=s.expansion,
            nonscaling=s.nonscaling,
            counting=None if s.kind == "bloom" else int(s.kind[len("counting") :]),
        )
        return [
            (k.encode(), p.reserve(k, s.error_rate, s.partition_capacity, opts).args)
            for k in s.keys
        ]


def _topology(client: Any) -> Tuple[List[str], Any]:
    """The primaries (``host:port``, sorted) and a slot → owner function; one pseudo-node for
    a client that is not a cluster client."""
    if not (hasattr(client, "get_node_from_key") and hasattr(client, "nodes_manager")):
        return ["single"], lambda slot: "single"
    cache = client.nodes_manager.slots_cache
    primaries = sorted({n.name for n in client.get_primaries()})
    return primaries, lambda slot: cache[slot][0].name


def _check_replies(replies: List[Any]) -> None:
    for r in replies:
        if isinstance(r, Exception):
            raise r


class PartitionedFilter(_Base):
    """One logical filter over the primaries of a Redis Cluster (or on one server).

    ``client`` is a sync ``redis.RedisCluster`` (or ``redis.Redis``). Open an existing filter
    with ``PartitionedFilter(client, name)``; make one with :meth:`create`.

    Every write method takes ``wait_replicas`` (default 0): when positive, each node's
    pipeline ends with ``WAIT wait_replicas wait_timeout_ms`` and
    :class:`~scalebloom.ReplicationError` is raised unless every node reached that many
    replicas; its ``acked`` list says, per item, whether the item's node did (and
    ``replies`` holds the answers).
    """

    def __init__(self, client: Any, name: str) -> None:
        _check_name(name)
        self.client = client
        self.router = Router(client)
        self.spec = Spec.parse(name, client.hgetall(meta_key(name)))

    @classmethod
    def create(
        cls,
        client: Any,
        name: str,
        error_rate: float,
        capacity: int,
        partitions: Optional[int] = None,
        *,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
    ) -> "PartitionedFilter":
        """Creates the filter ``name`` for ``capacity`` items at ``error_rate``, in
        ``partitions`` partitions (default: one per primary), spread evenly over the
        primaries, and returns it. ``counting=4|8`` makes counting partitions (so
        :meth:`delete` works); ``expansion`` and ``nonscaling`` are passed to every partition's
        ``BF.RESERVE``. Raises ``ResponseError("item exists")`` when the filter or one of its
        partition keys exists."""
        primaries, owner = _topology(client)
        opts = CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting)
        n = partitions if partitions is not None else len(primaries)
        spec = _Base._new_spec(name, error_rate, capacity, n, opts, primaries, owner)
        if client.exists(meta_key(name)):
            raise ResponseError(f"item exists: partitioned filter {name!r}")
        self = cls.__new__(cls)
        self.client, self.router, self.spec = client, Router(client), spec
        _check_replies(self.router.run(self._reserve_cmds()))
        client.hset(meta_key(name), mapping=spec.fields())
        return self

    def close(self) -> None:
        """Stops the worker threads of the parallel pipelines (they also stop with the
        process)."""
        self.router.close()

    def add(self, item: Item, *, wait_replicas: int = 0, wait_timeout_ms: int = 1000) -> bool:
        """Adds one item: ``True`` if it was new."""
        return self.madd([item], wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)[0]

    def madd(
        self, items: Sequence[Item], *, wait_replicas: int = 0, wait_timeout_ms: int = 1000
    ) -> List[bool]:
        """Adds items: one bool per item, in input order (``True``: it was new)."""
        cmds, where = self._split("BF.MADD", items)
        try:
            replies = self.router.run(cmds, self._wait(wait_replicas, wait_timeout_ms))
        except ReplicationError as e:
            raise self._per_item(e, len(items), where) from None
        return self._join(len(items), where, replies)

    def exists(self, item: Item) -> bool:
        """Whether the item is (probably) present."""
        return self.mexists([item])[0]

    def mexists(self, items: Sequence[Item]) -> List[bool]:
        """One bool per item, in input order."""
        cmds, where = self._split("BF.MEXISTS", items)
        return self._join(len(items), where, self.router.run(cmds))

    def delete(self, item: Item, *, wait_replicas: int = 0, wait_timeout_ms: int = 1000) -> bool:
        """Counting filters: removes one occurrence of the item (``BF.DEL`` on its
        partition); ``True`` if it was present."""
        return self.mdelete([item], wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)[0]

    def mdelete(
        self, items: Sequence[Item], *, wait_replicas: int = 0, wait_timeout_ms: int = 1000
    ) -> List[bool]:
        """Counting filters: :meth:`delete` for each item, one bool per item in input order."""
        cmds, where = self._split("BF.MDEL", items)
        try:
            replies = self.router.run(cmds, self._wait(wait_replicas, wait_timeout_ms))
        except ReplicationError as e:
            raise self._per_item(e, len(items), where) from None
        return self._join(len(items), where, replies)

    def card(self) -> int:
        """Items added over all partitions (``BF.CARD`` summed)."""
        return sum(p.to_int(r) for r in self.router.run(self._all("BF.CARD")))

    def info(self) -> Dict[str, Any]:
        """The metadata plus ``size`` (bytes), ``items`` and ``filters`` (layers) summed over
        the partitions, and ``partition_info``, each partition's :class:`BloomInfo`."""
        return self._info(self.router.run(self._all("BF.INFO")))

    def stats(self) -> PartitionedStats:
        """``BF.STATS`` of every partition, combined."""
        return self._stats(self.router.run(self._all("BF.STATS")))

    def drop(self) -> None:
        """Deletes the filter: its partitions, then its metadata."""
        _check_replies(self.router.run([(k.encode(), ("DEL", k)) for k in self.spec.keys]))
        self.client.delete(meta_key(self.name))


class AsyncPartitionedFilter(_Base):
    """:class:`PartitionedFilter` for ``redis.asyncio.RedisCluster`` (or
    ``redis.asyncio.Redis``): open with ``await AsyncPartitionedFilter.open(client, name)``,
    make with ``await AsyncPartitionedFilter.create(...)``, and ``await f.aclose()`` at the
    end (it closes the per-node connections)."""

    def __init__(self, client: Any, spec: Spec) -> None:
        self.client = client
        self.router = AsyncRouter(client)
        self.spec = spec

    @classmethod
    async def open(cls, client: Any, name: str) -> "AsyncPartitionedFilter":
        """Opens the existing filter ``name``."""
        _check_name(name)
        return cls(client, Spec.parse(name, await client.hgetall(meta_key(name))))

    @classmethod
    async def create(
        cls,
        client: Any,
        name: str,
        error_rate: float,
        capacity: int,
        partitions: Optional[int] = None,
        *,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        counting: Optional[int] = None,
    ) -> "AsyncPartitionedFilter":
        """See :meth:`PartitionedFilter.create`."""
        if hasattr(client, "nodes_manager") and not client.nodes_manager.slots_cache:
            await client.initialize()
        primaries, owner = _topology(client)
        opts = CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting)
        n = partitions if partitions is not None else len(primaries)
        spec = _Base._new_spec(name, error_rate, capacity, n, opts, primaries, owner)
        if await client.exists(meta_key(name)):
            raise ResponseError(f"item exists: partitioned filter {name!r}")
        self = cls(client, spec)
        _check_replies(await self.router.run(self._reserve_cmds()))
        await client.hset(meta_key(name), mapping=spec.fields())
        return self

    async def aclose(self) -> None:
        """Closes the per-node connections."""
        await self.router.aclose()

    async def add(self, item: Item, *, wait_replicas: int = 0, wait_timeout_ms: int = 1000) -> bool:
        """See :meth:`PartitionedFilter.add`."""
        r = await self.madd([item], wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)
        return r[0]

    async def madd(
        self, items: Sequence[Item], *, wait_replicas: int = 0, wait_timeout_ms: int = 1000
    ) -> List[bool]:
        """See :meth:`PartitionedFilter.madd`."""
        cmds, where = self._split("BF.MADD", items)
        try:
            replies = await self.router.run(cmds, self._wait(wait_replicas, wait_timeout_ms))
        except ReplicationError as e:
            raise self._per_item(e, len(items), where) from None
        return self._join(len(items), where, replies)

    async def exists(self, item: Item) -> bool:
        """See :meth:`PartitionedFilter.exists`."""
        return (await self.mexists([item]))[0]

    async def mexists(self, items: Sequence[Item]) -> List[bool]:
        """See :meth:`PartitionedFilter.mexists`."""
        cmds, where = self._split("BF.MEXISTS", items)
        return self._join(len(items), where, await self.router.run(cmds))

    async def delete(
        self, item: Item, *, wait_replicas: int = 0, wait_timeout_ms: int = 1000
    ) -> bool:
        """See :meth:`PartitionedFilter.delete`."""
        r = await self.mdelete([item], wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)
        return r[0]

    async def mdelete(
        self, items: Sequence[Item], *, wait_replicas: int = 0, wait_timeout_ms: int = 1000
    ) -> List[bool]:
        """See :meth:`PartitionedFilter.mdelete`."""
        cmds, where = self._split("BF.MDEL", items)
        try:
            replies = await self.router.run(cmds, self._wait(wait_replicas, wait_timeout_ms))
        except ReplicationError as e:
            raise self._per_item(e, len(items), where) from None
        return self._join(len(items), where, replies)

    async def card(self) -> int:
        """See :meth:`PartitionedFilter.card`."""
        return sum(p.to_int(r) for r in await self.router.run(self._all("BF.CARD")))

    async def info(self) -> Dict[str, Any]:
        """See :meth:`PartitionedFilter.info`."""
        return self._info(await self.router.run(self._all("BF.INFO")))

    async def stats(self) -> PartitionedStats:
        """See :meth:`PartitionedFilter.stats`."""
        return self._stats(await self.router.run(self._all("BF.STATS")))

    async def drop(self) -> None:
        """See :meth:`PartitionedFilter.drop`."""
        _check_replies(await self.router.run([(k.encode(), ("DEL", k)) for k in self.spec.keys]))
        await self.client.delete(meta_key(self.name))
