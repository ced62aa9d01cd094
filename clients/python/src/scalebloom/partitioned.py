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
from typing import Any, Dict, List, Mapping, Optional, Tuple

from redis.exceptions import DataError, RedisError, ResponseError

from . import _protocol as p
from ._exec import AsyncRunner, Proc, SyncRunner, adrive, drive, procedure
from ._protocol import Arg, BloomInfo, BloomStats, CreateOptions, Item, Items, encode_item, items_of
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


@dataclass(frozen=True)
class Batch:
    """One step of a partitioned filter's method: single-key commands for the router (each
    ``(key, args)``), and the ``WAIT`` that ends each node's pipeline, if any."""

    cmds: List[Cmd]
    wait: Optional[Wait] = None
    options: Optional[Mapping[str, Any]] = None
    """redis-py's options for every command (``NEVER_DECODE`` for ``DUMP``)."""


def _command(key: str, *args: Arg) -> Batch:
    return Batch([(key.encode(), (*args,))])


def _slot_prefix(key: bytes) -> bytes:
    """``{tag}`` that puts a key that starts with it in ``key``'s slot: ``key``'s own hash tag,
    or ``key`` itself as one (``DataError`` when ``key`` has no tag and holds a ``}``)."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start : end + 1]
    if not key or b"}" in key:
        raise DataError(
            f"no temporary key can be named in the slot of {key!r}: give a key with a hash tag"
        )
    return b"{" + key + b"}"


def _check_replies(replies: List[Any]) -> None:
    for r in replies:
        if isinstance(r, Exception):
            raise r


def _topology(client: Any) -> Tuple[List[str], Any]:
    """The primaries (``host:port``, sorted) and a slot → owner function; one pseudo-node for
    a client that is not a cluster client."""
    if not (hasattr(client, "get_node_from_key") and hasattr(client, "nodes_manager")):
        return ["single"], lambda slot: "single"
    cache = client.nodes_manager.slots_cache
    primaries = sorted({n.name for n in client.get_primaries()})
    return primaries, lambda slot: cache[slot][0].name


def _reserve_cmds(s: Spec) -> List[Cmd]:
    opts = CreateOptions(
        expansion=s.expansion,
        nonscaling=s.nonscaling,
        counting=None if s.kind == "bloom" else int(s.kind[len("counting") :]),
    )
    return [
        (k.encode(), p.bloom_reserve(k, s.error_rate, s.partition_capacity, opts).args)
        for k in s.keys
    ]


def _open(name: str) -> Proc[Spec]:
    """Reads the filter's metadata."""
    _check_name(name)
    (raw,) = yield _command(meta_key(name), "HGETALL", meta_key(name))
    return Spec.parse(name, p.pairs(raw))


def _create(
    client: Any,
    name: str,
    error_rate: float,
    capacity: int,
    partitions: Optional[int],
    opts: CreateOptions,
) -> Proc[Spec]:
    """Makes the filter: checks the arguments and that the name is free, chooses the keys,
    reserves every partition, then writes the metadata."""
    _check_name(name)
    if partitions is not None and partitions < 1:
        raise DataError("partitions must be at least 1")
    if capacity < 1:
        raise DataError("capacity must be at least 1")
    opts.args()  # validates
    meta = meta_key(name)
    (exists,) = yield _command(meta, "EXISTS", meta)
    if p.to_int(exists):
        raise ResponseError(f"item exists: partitioned filter {name!r}")
    primaries, owner = _topology(client)  # after a command: an asyncio cluster client has its map
    n = partitions if partitions is not None else len(primaries)
    spec = Spec(
        name=name,
        kind=opts.kind,
        partitions=n,
        error_rate=float(error_rate),
        capacity=capacity,
        partition_capacity=partition_capacity(capacity, n),
        expansion=opts.expansion,
        nonscaling=opts.nonscaling,
        routing_key=os.urandom(16),
        keys=choose_keys(name, n, primaries, owner),
    )
    _check_replies((yield Batch(_reserve_cmds(spec))))
    _check_replies((yield _command(meta, "HSET", meta, *p.flatten(spec.fields()))))
    return spec


class PartitionedCommands:
    """The partitioned filter's methods, written once as generators of router steps
    (:class:`Batch`); :class:`PartitionedFilter` runs them sync (threads, one per node) and
    :class:`AsyncPartitionedFilter` under asyncio (``asyncio.gather``)."""

    spec: Spec
    client: Any

    @property
    def name(self) -> str:
        return self.spec.name

    def partition_of(self, item: Item) -> int:
        """The partition ``item`` belongs to."""
        return partition_of(encode_item(item), self.spec.routing_key, self.spec.partitions)

    def key_of(self, item: Item) -> str:
        """The key of the partition ``item`` belongs to."""
        return self.spec.keys[self.partition_of(item)]

    def _split(self, verb: str, items: Items) -> Tuple[List[Cmd], List[List[int]]]:
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
        replicas = [0] * n
        attached: List[Optional[int]] = [None] * n
        for positions, ok, got, online in zip(where, e.acked, e.replicas, e.attached):
            for q in positions:
                acked[q], replicas[q], attached[q] = ok, got, online
        return ReplicationError(
            str(e), acked, list(cls._join(n, where, e.replies)), replicas, attached
        )

    def _batch(
        self,
        verb: str,
        items: Items,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        wait_policy: str = "strict",
    ) -> Proc[List[bool]]:
        """``verb`` of every item on its partition; one bool per item, in input order."""
        wait = Wait(wait_replicas, wait_timeout_ms, wait_policy) if wait_replicas > 0 else None
        items = items_of(items)
        cmds, where = self._split(verb, items)
        try:
            replies = yield Batch(cmds, wait)
        except ReplicationError as e:
            raise self._per_item(e, len(items), where) from None
        return self._join(len(items), where, replies)

    def _all(self, verb: str) -> Batch:
        return Batch([(k.encode(), (verb, k)) for k in self.spec.keys])

    @procedure
    def add(
        self,
        item: Item,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        wait_policy: str = "strict",
    ) -> Proc[bool]:
        """Adds one item: ``True`` if it was new."""
        return (
            yield from self._batch("BF.MADD", [item], wait_replicas, wait_timeout_ms, wait_policy)
        )[0]

    @procedure
    def madd(
        self,
        items: Items,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        wait_policy: str = "strict",
    ) -> Proc[List[bool]]:
        """Adds items: one bool per item, in input order (``True``: it was new)."""
        return (
            yield from self._batch("BF.MADD", items, wait_replicas, wait_timeout_ms, wait_policy)
        )

    @procedure
    def exists(self, item: Item) -> Proc[bool]:
        """Whether the item is (probably) present."""
        return (yield from self._batch("BF.MEXISTS", [item]))[0]

    @procedure
    def mexists(self, items: Items) -> Proc[List[bool]]:
        """One bool per item, in input order."""
        return (yield from self._batch("BF.MEXISTS", items))

    @procedure
    def delete(
        self,
        item: Item,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        wait_policy: str = "strict",
    ) -> Proc[bool]:
        """Counting filters: removes one occurrence of the item (``BF.DEL`` on its
        partition); ``True`` if it was present."""
        return (
            yield from self._batch("BF.MDEL", [item], wait_replicas, wait_timeout_ms, wait_policy)
        )[0]

    @procedure
    def mdelete(
        self,
        items: Items,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        wait_policy: str = "strict",
    ) -> Proc[List[bool]]:
        """Counting filters: :meth:`delete` for each item, one bool per item in input order."""
        return (
            yield from self._batch("BF.MDEL", items, wait_replicas, wait_timeout_ms, wait_policy)
        )

    @procedure
    def card(self) -> Proc[int]:
        """Items added over all partitions (``BF.CARD`` summed)."""
        return sum(p.to_int(r) for r in (yield self._all("BF.CARD")))

    @procedure
    def info(self) -> Proc[Dict[str, Any]]:
        """The metadata plus ``size`` (bytes), ``items`` and ``filters`` (layers) summed over
        the partitions, and ``partition_info``, each partition's :class:`BloomInfo`."""
        infos: List[BloomInfo] = [p.parse_info(r) for r in (yield self._all("BF.INFO"))]
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

    @procedure
    def stats(self) -> Proc[PartitionedStats]:
        """``BF.STATS`` of every partition, combined."""
        st = [p.parse_stats(r) for r in (yield self._all("BF.STATS"))]
        counters = [x.saturated_counters for x in st if x.saturated_counters is not None]
        return PartitionedStats(
            target_error_rate=self.spec.error_rate,
            estimated_error_rate=sum(x.estimated_error_rate for x in st) / len(st),
            fill_ratio_all=sum(x.fill_ratio_all or 0.0 for x in st) / len(st),
            estimated_items=sum(x.estimated_items or 0 for x in st),
            items_added=sum(x.items_added for x in st),
            saturated=any(x.saturated for x in st),
            saturated_counters=sum(counters) if counters else None,
            partitions=st,
        )

    @procedure
    def to_filter(self, key: Arg, *, ttl_ms: int = 600_000) -> Proc[int]:
        """Folds the partitions into one ordinary Bloom filter at ``key`` (on the node that
        owns ``key``'s slot), which then answers ``BF.EXISTS`` for every item of this filter;
        returns the number of partitions merged. ``key`` is ``BF.MERGE``'s destination: a
        missing one is created, an existing one keeps its items (and must be a filter the
        partitions merge with: same kind, same counter width). This filter is not changed.

        Each partition is read with ``DUMP`` (the partitions' nodes in parallel) and written
        with ``RESTORE``, with a TTL of ``ttl_ms``, to a temporary key
        ``{<key's hash tag, or key>}:fold:<random>:<i>`` in ``key``'s slot; one
        ``BF.MERGE key <temporaries>`` follows, and a ``DEL`` of the temporaries in the same
        pipeline (also when a step fails; the TTL removes them if the client dies
        meanwhile). ``key``'s node must hold the whole filter twice for that time.

        The partitions were created on their own, each with its own seed (``LIKE`` cannot
        reach across slots), so the result keeps each partition apart as a member (one more
        layer each in ``info().filters``): every lookup checks all of them, and the
        result's false-positive rate is the *sum* of the partitions' (about ``partitions``
        times this filter's rate), which ``BF.STATS`` reports. ``BF.MERGE`` refuses more
        than 64 members. A temporary key that expired before ``BF.MERGE`` ran (a client
        stalled for ``ttl_ms``) raises ``RedisError``: ``key`` then lacks that partition's
        items (run it again with a longer ``ttl_ms``)."""
        dest = key if isinstance(key, bytes) else encode_item(key)
        prefix = _slot_prefix(dest)
        token = os.urandom(8).hex()
        tmps = [prefix + f":fold:{token}:{i}".encode() for i in range(self.spec.partitions)]
        dumps = yield Batch(
            [(k.encode(), ("DUMP", k)) for k in self.spec.keys], options={p.NEVER_DECODE: []}
        )
        _check_replies(dumps)
        for i, d in enumerate(dumps):
            if d is None:
                raise ResponseError(f"not found: partition {i} ({self.spec.keys[i]})")
        cleanup = (tmps[0], ("DEL", *tmps))
        try:
            restored = yield Batch([(t, ("RESTORE", t, ttl_ms, d)) for t, d in zip(tmps, dumps)])
            _check_replies(restored)
            merged, deleted = yield Batch([(tmps[0], ("BF.MERGE", dest, *tmps)), cleanup])
        except Exception:
            try:
                yield Batch([cleanup])
            except RedisError:
                pass  # the TTL removes them
            raise
        p.to_ok(merged)
        if p.to_int(deleted) != len(tmps):
            raise RedisError(
                f"{len(tmps) - p.to_int(deleted)} temporary key(s) expired before BF.MERGE ran: "
                f"{dest!r} lacks those partitions' items; run to_filter again with a longer "
                f"ttl_ms"
            )
        return len(tmps)

    @procedure
    def drop(self) -> Proc[None]:
        """Deletes the filter: its partitions, then its metadata."""
        _check_replies((yield self._all("DEL")))
        meta = meta_key(self.name)
        _check_replies((yield _command(meta, "DEL", meta)))


class PartitionedFilter(SyncRunner, PartitionedCommands):
    """One logical filter over the primaries of a Redis Cluster (or on one server).

    ``client`` is a sync ``redis.RedisCluster`` (or ``redis.Redis``). Open an existing filter
    with ``PartitionedFilter(client, name)``; make one with :meth:`create`.

    Every write method takes ``wait_replicas`` (default 0): when positive, each node's
    pipeline ends with ``WAIT wait_replicas wait_timeout_ms``. ``wait_policy`` says what must
    be confirmed: ``"strict"`` (the default), ``wait_replicas`` replicas on every node;
    ``"attached"``, ``min(wait_replicas, the replicas online on that primary)`` (read with
    ``ROLE`` in the same pipeline), so a primary a failover left without a replica is not
    asked for one, while a replica that is online but does not confirm in time still fails
    the call; such accepted writes are counted in ``router.replication["unreplicated"]``.
    When a requirement is not met, the items are written all the same and
    :class:`~scalebloom.ReplicationError` is raised: its ``acked`` list says, per item,
    whether the item's node met it, ``replicas`` how many replicas its ``WAIT`` reported,
    ``attached`` how many were online (``"attached"`` policy), and ``replies`` holds the
    answers.
    """

    def __init__(self, client: Any, name: str) -> None:
        self._start(client, _open(name))

    def _start(self, client: Any, proc: Proc[Spec]) -> None:
        """Takes the filter's spec from ``proc`` (opening or creating it); a failure closes
        the router before it is raised."""
        self.client, self.router = client, Router(client)
        try:
            self.spec = drive(self._send, proc)
        except BaseException:
            self.router.close()
            raise

    def _send(self, step: Any) -> Any:
        return self.router.run(step.cmds, step.wait, step.options)

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
        opts = CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting)
        self = cls.__new__(cls)
        self._start(client, _create(client, name, error_rate, capacity, partitions, opts))
        return self

    def close(self) -> None:
        """Stops the worker threads of the parallel pipelines (they also stop with the
        process)."""
        self.router.close()


class AsyncPartitionedFilter(AsyncRunner, PartitionedCommands):
    """:class:`PartitionedFilter` for ``redis.asyncio.RedisCluster`` (or
    ``redis.asyncio.Redis``): open with ``await AsyncPartitionedFilter.open(client, name)``,
    make with ``await AsyncPartitionedFilter.create(...)``, and ``await f.aclose()`` at the
    end (it closes the per-node connections). The methods are :class:`PartitionedFilter`'s,
    awaited."""

    def __init__(self, client: Any, spec: Spec) -> None:
        self.client = client
        self.router = AsyncRouter(client)
        self.spec = spec

    async def _send(self, step: Any) -> Any:
        return await self.router.run(step.cmds, step.wait, step.options)

    @classmethod
    async def _run(cls, client: Any, proc: Proc[Spec]) -> "AsyncPartitionedFilter":
        self = cls.__new__(cls)
        self.client, self.router = client, AsyncRouter(client)
        try:
            self.spec = await adrive(self._send, proc)
        except BaseException:
            await self.router.aclose()
            raise
        return self

    @classmethod
    async def open(cls, client: Any, name: str) -> "AsyncPartitionedFilter":
        """Opens the existing filter ``name`` (``ResponseError("not found: …")`` if there is
        none)."""
        return await cls._run(client, _open(name))

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
        opts = CreateOptions(expansion=expansion, nonscaling=nonscaling, counting=counting)
        return await cls._run(client, _create(client, name, error_rate, capacity, partitions, opts))

    async def aclose(self) -> None:
        """Closes the per-node connections."""
        await self.router.aclose()
