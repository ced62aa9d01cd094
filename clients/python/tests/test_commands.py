"""scalebloom's commands through the typed wrappers, on every kind of redis-py client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.exceptions import DataError, ResponseError

import scalebloom
from scalebloom import BloomInfo, BloomStats
from servers import Cluster, Server


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_every_command_same_answers_resp2_resp3(
    server: Server, protocol: int, decode: bool
) -> None:
    bf = scalebloom.Bloom(server.client(protocol=protocol, decode_responses=decode))
    assert bf.reserve("plain", 0.01, 1000) is True
    assert bf.add("plain", "a") is True
    assert bf.add("plain", "a") is False
    assert bf.madd("plain", ["a", b"b", 3, 2.5]) == [False, True, True, True]
    assert bf.exists("plain", "b") is True
    assert bf.exists("plain", "zzz") is False
    assert bf.exists("missing", "zzz") is False
    assert bf.mexists("plain", ["a", "b", "nope", 3, "3"]) == [True, True, False, True, True]
    assert bf.card("plain") == 4
    assert bf.card("missing") == 0
    info = bf.info("plain")
    assert info == BloomInfo(capacity=1000, size=info.size, filters=1, items=4, expansion=2)
    assert info.size > 1000
    st = bf.stats("plain")
    assert isinstance(st, BloomStats)
    assert st.target_error_rate == 0.01
    assert isinstance(st.estimated_error_rate, float) and 0 <= st.estimated_error_rate < 0.01
    assert 0 < st.fill_ratio_all == st.fill_ratio_newest < 0.01  # one layer
    assert st.items_added == 4 and st.estimated_items == 4
    assert st.saturated is False and st.saturated_counters is None

    assert bf.reserve("cnt", 0.01, 1000, counting=4) is True
    assert bf.madd("cnt", ["x", "y", "x"]) == [True, True, False]
    assert bf.delete("cnt", "x") is True
    assert bf.exists("cnt", "x") is True  # added twice, deleted once
    assert bf.mdelete("cnt", ["x", "y", "never"]) == [True, True, False]
    assert bf.mexists("cnt", ["x", "y"]) == [False, False]
    assert bf.stats("cnt").saturated_counters == 0

    assert bf.insert("ins", ["p", "q"], capacity=50, error_rate=0.001, counting=8) == [True, True]
    assert bf.delete("ins", "p") is True
    assert bf.insert("fixed", ["a"], capacity=10, nonscaling=True) == [True]
    assert bf.info("fixed").expansion is None
    assert bf.reserve("exp", 0.01, 10, expansion=4) is True
    assert bf.info("exp").expansion == 4


def test_errors_are_redis_py_errors(server: Server) -> None:
    bf = scalebloom.Bloom(server.client())
    bf.reserve("plain", 0.01, 100)
    with pytest.raises(ResponseError, match="item exists"):
        bf.reserve("plain", 0.01, 100)
    with pytest.raises(ResponseError, match="not a counting filter"):
        bf.delete("plain", "a")
    with pytest.raises(ResponseError, match="not found"):
        bf.delete("missing", "a")
    with pytest.raises(ResponseError, match="not found"):
        bf.stats("missing")
    with pytest.raises(ResponseError, match="not found"):
        bf.insert("missing", ["a"], nocreate=True)
    with pytest.raises(ResponseError, match="non scaling filter is full"):
        bf.reserve("full", 0.01, 2, nonscaling=True)
        bf.madd("full", ["a", "b", "c", "d"])
    assert bf.mexists("full", ["a", "b"]) == [True, True]  # the items before the error went in
    server.client().set("str", "x")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        bf.add("str", "a")
    with pytest.raises(DataError):
        bf.reserve("c", 0.01, 100, counting=5)
    with pytest.raises(DataError):
        bf.add("plain", True)  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", [2, 3])
def test_after_redis_py_bf_registered_its_callbacks(server: Server, protocol: int) -> None:
    r = server.client(protocol=protocol)
    r.bf().create("k", 0.01, 100)  # installs BF.RESERVE and BF.INFO callbacks on r
    bf = scalebloom.Bloom(r)
    assert bf.reserve("k2", 0.01, 100, counting=4) is True
    assert bf.info("k2").capacity == 100
    assert bf.info("k2").expansion == 2


def test_asyncio_client(server: Server) -> None:
    async def go() -> None:
        r: Any = redis.asyncio.Redis(port=server.port, protocol=3)
        bf = scalebloom.AsyncBloom(r)
        assert await bf.reserve("c", 0.01, 100, counting=4) is True
        assert await bf.madd("c", ["a", "b"]) == [True, True]
        assert await bf.delete("c", "a") is True
        assert await bf.mexists("c", ["a", "b"]) == [False, True]
        assert (await bf.stats("c")).items_added == 1
        assert (await bf.info("c")).items == 1
        assert await bf.card("c") == 1
        await r.aclose()

    asyncio.run(go())


def test_cluster_clients(cluster: Cluster) -> None:
    rc = cluster.client()
    bf = scalebloom.Bloom(rc)
    keys = [f"k{i}" for i in range(12)]  # spread over the three primaries
    assert len({rc.get_node_from_key(k).name for k in keys}) == 3
    for k in keys:
        assert bf.reserve(k, 0.01, 100, counting=4)
        assert bf.madd(k, [k, "x"]) == [True, True]
        assert bf.mdelete(k, ["x"]) == [True]
        assert bf.stats(k).items_added == 1
        assert bf.mexists(k, [k, "x"]) == [True, False]

    async def go() -> None:
        ar: Any = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster.ports[0], protocol=3)
        abf = scalebloom.AsyncBloom(ar)
        for k in keys:
            assert await abf.delete(k, k) is True
            assert (await abf.stats(k)).items_added == 0
        await ar.aclose()

    asyncio.run(go())
