"""PartitionedFilter on one server (every partition there) and its metadata rules."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
from typing import Any

import pytest
import redis.asyncio
from redis.exceptions import DataError, ResponseError

import scalebloom
from scalebloom import PartitionedFilter
from servers import Server, poll


def test_answers_in_input_order_and_agree_with_each_partition(server: Server) -> None:
    r = server.client()
    # At 0.01% a new item answers "already added" (a false positive of its partition) about
    # once in 10^9 runs, where at 1% it did in about one run in 200: the assertions below
    # count every add as new.
    f = PartitionedFilter.create(r, "crawl", 0.0001, 10_000, partitions=5)
    items = [f"url:{i}" for i in range(3000)]
    assert f.madd(items) == [True] * 3000
    mixed = items[::7] + [f"absent:{i}" for i in range(500)]
    random.Random(1).shuffle(mixed)
    got = f.mexists(mixed)
    assert all(g for g, x in zip(got, mixed) if x.startswith("url:"))
    assert sum(got) - len(items[::7]) <= 2  # false positives: far under 0.01% of 500
    # Each answer is the answer of the item's own partition.
    for x, g in zip(mixed[:200], got[:200]):
        assert bool(r.execute_command("BF.EXISTS", f.key_of(x), x)) == g
    assert f.add("url:1") is False and f.add("new") is True
    assert f.exists("new") is True
    assert f.card() == 3001
    info = f.info()
    assert info["partitions"] == 5 and info["capacity"] == 10_000 and info["kind"] == "bloom"
    assert info["error_rate"] == 0.0001 and info["items"] == 3001 and info["format"] == 1
    assert info["size"] == sum(i.size for i in info["partition_info"])
    counts = [i.items for i in info["partition_info"]]
    assert sum(counts) == 3001 and min(counts) > 450  # about 600 each
    st = f.stats()
    assert st.items_added == 3001 and st.target_error_rate == 0.0001
    assert 0 <= st.estimated_error_rate < 0.0001 and not st.saturated
    assert len(st.partitions) == 5


def test_false_positive_rate_at_capacity_is_under_target(server: Server) -> None:
    f = PartitionedFilter.create(server.client(), "fp", 0.01, 200_000, partitions=4)
    items = [b"in:%d" % i for i in range(200_000)]
    for s in range(0, len(items), 20_000):
        f.madd(items[s : s + 20_000])
    assert all(f.mexists(items))
    absent = [b"out:%d" % i for i in range(100_000)]
    fp = sum(f.mexists(absent))
    assert fp <= 0.01 * len(absent), fp  # about 0.5%: a scaling filter's first layer is at 1/2
    st = f.stats()
    assert st.estimated_error_rate <= 0.01 and not st.saturated
    assert all(p.items_added <= f.spec.partition_capacity for p in st.partitions)


def test_another_client_opens_the_same_filter(server: Server) -> None:
    f = PartitionedFilter.create(server.client(), "f", 0.001, 1000, partitions=3)
    f.madd(["a", "b", "c"])
    g = PartitionedFilter(server.client(protocol=3, decode_responses=True), "f")
    assert g.spec == f.spec
    assert g.mexists(["a", "b", "c", "d"]) == [True, True, True, False]


def test_metadata_holds_what_clients_agree_on(server: Server) -> None:
    r = server.client(decode_responses=True)
    PartitionedFilter.create(r, "m", 0.02, 900, partitions=4, counting=8)
    meta = r.hgetall("{m}:meta")
    assert meta["format"] == "1" and meta["kind"] == "counting8" and meta["partitions"] == "4"
    assert meta["error_rate"] == "0.02" and meta["capacity"] == "900"
    assert meta["routing"] == "blake2b64-mulshift" and len(meta["routing_key"]) == 32
    keys = json.loads(meta["keys"])
    assert len(keys) == 4 and all(r.type(k) == "MBbloom--" for k in keys)
    for k in keys:
        assert scalebloom.Bloom(r).info(k).capacity == 225 + 60  # 900/4 + 4·√225
    with pytest.raises(ResponseError, match="item exists"):
        PartitionedFilter.create(r, "m", 0.02, 900, partitions=4)
    r.hset("{m}:meta", "format", "2")
    with pytest.raises(DataError, match="format 2"):
        PartitionedFilter(r, "m")
    r.hset("{m}:meta", mapping={"format": "1", "routing": "other"})
    with pytest.raises(DataError, match="routes by"):
        PartitionedFilter(r, "m")
    with pytest.raises(ResponseError, match="not found"):
        PartitionedFilter(r, "nothing")
    with pytest.raises(DataError):
        PartitionedFilter.create(r, "bad{name}", 0.01, 100)


def test_counting_delete_and_drop(server: Server) -> None:
    r = server.client()
    f = PartitionedFilter.create(r, "c", 0.01, 1000, partitions=3, counting=4)
    items = [f"i{i}" for i in range(100)]
    f.madd(items)
    assert f.mdelete(items[:50]) == [True] * 50
    assert f.mexists(items) == [False] * 50 + [True] * 50
    assert f.delete("i60") is True and f.exists("i60") is False
    assert f.card() == 49
    assert f.stats().saturated_counters == 0
    p = PartitionedFilter.create(r, "p", 0.01, 1000, partitions=2)
    p.add("x")
    with pytest.raises(ResponseError, match="not a counting filter"):
        p.delete("x")
    with pytest.raises(TypeError, match="sequence of items"):
        p.mexists(b"xyz")  # type: ignore[arg-type]
    p.drop()
    assert r.keys("*{p*") == []
    with pytest.raises(ResponseError, match="not found"):
        PartitionedFilter(r, "p")


def test_asyncio(server: Server) -> None:
    async def go() -> None:
        r: Any = redis.asyncio.Redis(port=server.port)
        f = await scalebloom.AsyncPartitionedFilter.create(r, "a", 0.01, 1000, partitions=3)
        assert await f.madd(["x", "y"]) == [True, True]
        g = await scalebloom.AsyncPartitionedFilter.open(r, "a")
        assert await g.mexists(["x", "y", "z"]) == [True, True, False]
        assert (await g.info())["items"] == 2
        assert await g.card() == 2
        assert (await g.stats()).items_added == 2
        with pytest.raises(TypeError, match="sequence of items"):
            await g.madd("xyz")  # type: ignore[arg-type]
        with pytest.raises(ResponseError, match="item exists"):
            await scalebloom.AsyncPartitionedFilter.create(r, "a", 0.01, 1000, partitions=3)
        with pytest.raises(ResponseError, match="not found"):
            await scalebloom.AsyncPartitionedFilter.open(r, "nothing")
        await g.drop()
        assert await r.keys("*{a*") == []
        await f.aclose()
        await g.aclose()
        await r.aclose()

    asyncio.run(go())


def test_wait_on_a_server_without_replicas_raises(server: Server) -> None:
    f = PartitionedFilter.create(server.client(), "w", 0.01, 100, partitions=2)
    with pytest.raises(scalebloom.ReplicationError, match="every item was written") as e:
        f.madd(["a", "b"], wait_replicas=1, wait_timeout_ms=10)
    assert e.value.acked == [False, False]
    assert e.value.replicas == [0, 0]
    assert e.value.replies == [True, True]
    assert f.mexists(["a", "b"]) == [True, True]  # written, just not known to be replicated
    with pytest.raises(DataError, match="wait_policy"):
        f.madd(["c"], wait_replicas=1, wait_policy="never")


def _online_replicas(primary: Server) -> int:
    return len(primary.client().execute_command("ROLE")[2])


def test_wait_policy_attached_asks_for_the_replicas_a_primary_has(server: Server) -> None:
    """``"attached"`` requires what the primary's online replicas can confirm: nothing while it
    has none, its replica's confirmation while one is online, and it fails the call when that
    replica is online but does not confirm (stopped with SIGSTOP)."""
    f = PartitionedFilter.create(server.client(), "p", 0.01, 1000, partitions=1)
    assert f.madd(["a", "b"], wait_replicas=1, wait_policy="attached") == [True, True]
    assert f.router.replication["unreplicated"] == 1  # one command (one partition)
    replica = Server(args=["--replicaof", "127.0.0.1", str(server.port)])
    try:
        poll("the replica online", lambda: True if _online_replicas(server) == 1 else None)
        got = f.madd(["c", "d"], wait_replicas=1, wait_timeout_ms=60_000, wait_policy="attached")
        assert got == [True, True]
        assert f.router.replication["unreplicated"] == 1  # confirmed: not counted
        assert replica.client().execute_command("BF.MEXISTS", f.key_of("c"), "c") == [1]
        # Online but silent: WAIT cannot reach the required 1 replica.
        os.kill(replica.proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(scalebloom.ReplicationError, match="online") as e:
                f.madd(["e", "f"], wait_replicas=1, wait_timeout_ms=50, wait_policy="attached")
            assert e.value.acked == [False, False]
            assert e.value.attached == [1, 1] and e.value.replicas == [0, 0]
        finally:
            os.kill(replica.proc.pid, signal.SIGCONT)
        replica.kill()
        poll("the replica dropped", lambda: True if _online_replicas(server) == 0 else None)
        assert f.madd(["g"], wait_replicas=1, wait_policy="attached") == [True]
        assert f.router.replication["unreplicated"] == 2
        with pytest.raises(scalebloom.ReplicationError):
            f.madd(["h"], wait_replicas=1, wait_timeout_ms=10)  # "strict" still asks for one
    finally:
        replica.stop()
    assert f.mexists(list("abcdefgh")) == [True] * 8


def test_wait_policy_attached_asyncio(server: Server) -> None:
    async def go() -> None:
        r: Any = redis.asyncio.Redis(port=server.port)
        f = await scalebloom.AsyncPartitionedFilter.create(r, "aw", 0.01, 100, partitions=1)
        got = await f.madd(["x", "y"], wait_replicas=1, wait_policy="attached")
        assert got == [True, True]
        assert f.router.replication["unreplicated"] == 1
        with pytest.raises(scalebloom.ReplicationError, match="every item was written") as e:
            await f.madd(["z"], wait_replicas=1, wait_timeout_ms=10)
        assert e.value.replicas == [0] and e.value.acked == [False]
        assert await f.mexists(["x", "y", "z"]) == [True, True, True]
        await f.aclose()
        await r.aclose()

    asyncio.run(go())
