"""Bloom.merge, like= on reserve and insert, and PartitionedFilter.to_filter on real servers
(one server, and a 3 + 3 Redis Cluster for to_filter across nodes)."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest
import redis
import redis.asyncio
from redis.exceptions import DataError, RedisClusterException, ResponseError

import scalebloom
from scalebloom import Bloom, PartitionedFilter
from scalebloom._protocol import LIKE_WITH_OPTIONS
from scalebloom.routing import key_slot
from servers import Cluster, Server


def _items(prefix: str, n: int) -> List[str]:
    return [f"{prefix}:{i}" for i in range(n)]


def _members(bf: Bloom, key: str) -> int:
    return sum(1 for line in bf.debug(key) if " member:" in line)


def _digest(r: Any, key: str) -> Any:
    return r.execute_command("DEBUG", "DIGEST-VALUE", key)


def test_merge_holds_the_union_and_keeps_filters_of_other_seeds_apart(server: Server) -> None:
    bf = Bloom(server.client(decode_responses=True))
    workers = [(f"w{w}", _items(f"site{w}", 300)) for w in range(3)]
    for key, urls in workers:
        assert bf.reserve(key, 0.01, 1000) is True
        bf.madd(key, urls)
    bf.reserve("all", 0.01, 1000)
    own = _items("own", 100)
    bf.madd("all", own)
    assert bf.merge("all", *(k for k, _ in workers)) is True
    assert all(bf.mexists("all", own))
    for _, urls in workers:
        assert all(bf.mexists("all", urls))
    # Each worker's filter has its own seed: kept apart, one more layer each.
    assert bf.info("all").filters == 4
    assert _members(bf, "all") == 3
    assert bf.card("all") == 100 + 3 * 300
    assert bf.exists("all", "never added") is False
    # A missing destination is made from the sources; a missing source is an empty one.
    assert bf.merge("new", "w0", "missing", "w1") is True
    assert all(bf.mexists("new", workers[0][1] + workers[1][1]))
    with pytest.raises(ResponseError, match="^not found$"):
        bf.merge("none", "missing", "missing too")
    assert bf.client.exists("none") == 0
    with pytest.raises(TypeError, match="at least one source"):
        bf.merge("all")


def test_like_filters_merge_into_one_layer(server: Server) -> None:
    r = server.client()
    bf = Bloom(r)
    bf.reserve("template", 0.01, 1000)
    parts = [(f"part{i}", _items(f"p{i}", 200)) for i in range(3)]
    for key, items in parts:
        assert bf.reserve(key, 0.5, 7, like="template") is True  # rate and capacity: not used
        bf.madd(key, items)
    assert bf.info("part0").capacity == bf.info("template").capacity
    assert bf.reserve("all", 0.01, 1000, like="template") is True
    assert bf.merge("all", *(k for k, _ in parts)) is True
    assert bf.info("all").filters == 1
    assert _members(bf, "all") == 0
    for _, items in parts:
        assert all(bf.mexists("all", items))
    assert bf.stats("all").estimated_error_rate <= 0.01
    # insert(..., like=) creates a missing filter the same way, and one more merge stays one layer.
    assert bf.insert("ins", ["a", "b"], like="template") == [True, True]
    assert bf.insert("ins", ["c"], like="template", nocreate=True) == [True]
    assert bf.merge("all", "ins") is True
    assert bf.info("all").filters == 1
    assert bf.mexists("all", ["a", "b", "c"]) == [True, True, True]
    # A filter made without LIKE is a member.
    bf.reserve("stranger", 0.01, 1000)
    bf.add("stranger", "s")
    bf.merge("all", "stranger")
    assert bf.info("all").filters == 2 and _members(bf, "all") == 1


def test_like_refuses_other_creation_options_locally_with_the_module_words(
    server: Server,
) -> None:
    r = server.client()
    bf = Bloom(r)
    bf.reserve("template", 0.01, 1000)
    for opts in (
        {"expansion": 4},
        {"nonscaling": True},
        {"counting": 4},
        {"window": "10m"},
        {"layout": "blocked"},
    ):
        with pytest.raises(DataError) as e:
            bf.reserve("x", 0.01, 100, like="template", **opts)  # type: ignore[arg-type]
        assert str(e.value) == LIKE_WITH_OPTIONS, opts
        with pytest.raises(DataError, match="^LIKE copies"):
            bf.insert("x", ["a"], like="template", **opts)  # type: ignore[arg-type]
    for opts in ({"capacity": 10}, {"error_rate": 0.1}):
        with pytest.raises(DataError, match="^LIKE copies"):
            bf.insert("x", ["a"], like="template", **opts)  # type: ignore[arg-type]
    assert r.exists("x") == 0  # nothing was sent
    # The local refusal says what the module says.
    with pytest.raises(ResponseError) as e:
        r.execute_command("BF.RESERVE", "x", 0.01, 100, "NONSCALING", "LIKE", "template")
    assert str(e.value) == LIKE_WITH_OPTIONS
    with pytest.raises(ResponseError, match="LIKE: the key it names holds no Bloom filter"):
        bf.reserve("x", 0.01, 100, like="nothing")
    r.set("string", "v")
    with pytest.raises(ResponseError, match="^WRONGTYPE"):
        bf.insert("x", ["a"], like="string")
    assert r.exists("x") == 0


def test_merge_refusals_raise_the_module_text_and_change_nothing(server: Server) -> None:
    r = server.client()
    bf = Bloom(r)
    bf.reserve("plain", 0.01, 1000)
    bf.madd("plain", _items("p", 50))
    bf.reserve("c4", 0.01, 1000, counting=4)
    bf.reserve("c8", 0.01, 1000, counting=8)
    bf.reserve("win", 0.01, 1000, window="1h")
    r.execute_command("CF.RESERVE", "cf", 1000)
    r.set("string", "v")
    before = _digest(r, "plain")
    cases = [
        (("plain", "c4"), "^cannot merge a counting filter with a plain one"),
        (("c4", "c8"), r"^cannot merge counting filters of different counter widths"),
        (("plain", "win"), "^BF.MERGE takes Bloom filters without a window"),
        (("win", "plain"), "^BF.MERGE takes Bloom filters without a window"),
        (("plain", "cf"), "^WRONGTYPE"),
        (("cf", "plain"), "^WRONGTYPE"),
        (("plain", "string"), "^WRONGTYPE"),
    ]
    for (dest, source), want in cases:
        with pytest.raises(ResponseError, match=want):
            bf.merge(dest, source)
    assert _digest(r, "plain") == before
    with pytest.raises(ResponseError, match="^cannot merge"):
        bf.merge("new", "c4", "plain")
    assert r.exists("new") == 0
    # The limits are checked before any change.
    bf.reserve("a", 0.001, 100_000)
    bf.reserve("b", 0.001, 100_000)
    size = bf.info("a").size
    r.config_set("bf.max-filter-bytes", size + 1000)
    with pytest.raises(ResponseError, match="bf.max-filter-bytes"):
        bf.merge("a", "b")
    r.config_set("bf.max-filter-bytes", 3 * size)
    assert bf.merge("a", "b") is True


def test_asyncio_merge_and_like(server: Server) -> None:
    async def go() -> None:
        r: Any = redis.asyncio.Redis(port=server.port, protocol=3)
        abf = scalebloom.AsyncBloom(r)
        assert await abf.reserve("t", 0.01, 500) is True
        assert await abf.reserve("a", 0.01, 500, like="t") is True
        assert await abf.insert("b", ["y"], like="t") == [True]
        await abf.add("a", "x")
        assert await abf.merge("t", "a", "b") is True
        assert (await abf.info("t")).filters == 1
        assert await abf.mexists("t", ["x", "y", "z"]) == [True, True, False]
        with pytest.raises(DataError, match="^LIKE copies"):
            await abf.reserve("c", 0.01, 500, like="t", counting=4)
        with pytest.raises(ResponseError, match="^not found$"):
            await abf.merge("n", "m")
        await r.aclose()

    asyncio.run(go())


def _temporaries(cluster: Cluster) -> List[Any]:
    out: List[Any] = []
    for s in cluster.live():
        out += redis.Redis(port=s.port).keys("*:fold:*")
    return out


def test_to_filter_on_one_server(server: Server) -> None:
    r = server.client()
    f = PartitionedFilter.create(r, "crawl", 0.01, 10_000, partitions=4)
    items = _items("url", 3000)
    f.madd(items)
    bf = Bloom(r)
    assert f.to_filter("folded") == 4
    assert all(bf.mexists("folded", items))
    assert bf.card("folded") == 3000 == f.card()
    # Each partition has its own seed: one member each beside the first.
    assert bf.info("folded").filters == 4 and _members(bf, "folded") == 3
    assert r.keys("*:fold:*") == []
    # An existing destination keeps its items; a key with no hash tag and a '}' has no slot
    # a temporary key can be named in.
    bf.reserve("{x}dest", 0.01, 100)
    bf.add("{x}dest", "own")
    assert f.to_filter("{x}dest") == 4
    assert all(bf.mexists("{x}dest", items + ["own"]))
    with pytest.raises(DataError, match="hash tag"):
        f.to_filter("a}b")
    # A RESTORE the server refuses (a partition above bf.max-filter-bytes) after another
    # succeeded: raised, the destination untouched, the temporary already restored deleted.
    g = PartitionedFilter.create(r, "lopsided", 0.01, 10_000, partitions=2)
    g.madd([x for x in _items("big", 60_000) if g.partition_of(x) == 0])  # 3 layers
    g.add(next(x for x in _items("small", 100) if g.partition_of(x) == 1))
    small, big = (bf.info(k).size for k in reversed(g.spec.keys))
    assert 4096 <= small and small * 4 < big
    r.config_set("bf.max-filter-bytes", small * 2)
    before = _digest(r, "folded")
    with pytest.raises(ResponseError):
        g.to_filter("folded")
    assert _digest(r, "folded") == before
    assert r.keys("*:fold:*") == []


def test_to_filter_on_a_cluster(cluster: Cluster) -> None:
    rc = cluster.client(decode_responses=True)  # DUMP's payload is read as bytes all the same
    f = PartitionedFilter.create(rc, "crawl", 0.01, 20_000, partitions=6)
    assert len({rc.get_node_from_key(k).name for k in f.spec.keys}) == 3
    items = _items("url", 6000)
    f.madd(items)
    bf = Bloom(rc)
    assert f.to_filter("{site}:all") == 6
    assert bf.mexists("{site}:all", items) == [True] * len(items)
    assert bf.card("{site}:all") == 6000
    assert bf.info("{site}:all").filters == 6
    assert f.card() == 6000  # the partitioned filter is unchanged
    # The result lives on the node that owns its slot, and no temporary key is left anywhere.
    owner = rc.get_node_from_key("{site}:all")
    assert redis.Redis(port=owner.port).exists("{site}:all") == 1
    assert _temporaries(cluster) == []
    # A refused merge (a counting destination, plain partitions) leaves no temporary either.
    bf.reserve("{site}:counting", 0.01, 100, counting=4)
    with pytest.raises(ResponseError, match="^cannot merge a counting filter with a plain one"):
        f.to_filter("{site}:counting")
    assert bf.info("{site}:counting").items == 0
    assert _temporaries(cluster) == []
    f.close()

    async def go() -> None:
        ar: Any = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster.ports[0], protocol=3)
        g = await scalebloom.AsyncPartitionedFilter.open(ar, "crawl")
        assert await g.to_filter("aio") == 6  # no hash tag: the key itself is the tag
        assert key_slot(b"{aio}:fold:0:0") == key_slot(b"aio")
        abf = scalebloom.AsyncBloom(ar)
        assert await abf.mexists("aio", items) == [True] * len(items)
        await g.aclose()
        await ar.aclose()

    asyncio.run(go())
    assert _temporaries(cluster) == []


def test_merge_in_a_cluster_takes_keys_of_one_slot(cluster: Cluster) -> None:
    bf = Bloom(cluster.client())
    bf.reserve("{a}t", 0.01, 100)
    bf.reserve("{a}l", 0.01, 100, like="{a}t")
    bf.add("{a}l", "x")
    assert bf.merge("{a}t", "{a}l") is True
    assert bf.info("{a}t").filters == 1 and bf.exists("{a}t", "x") is True
    bf.reserve("{b}o", 0.01, 100)
    # Keys of two slots: redis-py refuses before sending, or the server says CROSSSLOT.
    cross = (ResponseError, RedisClusterException)
    with pytest.raises(cross, match="CROSSSLOT|same key slot"):
        bf.merge("{a}t", "{b}o")
    with pytest.raises(cross, match="CROSSSLOT|same key slot"):
        bf.reserve("{a}n", 0.01, 100, like="{b}o")
    assert bf.client.exists("{a}n") == 0
