"""The cuckoo filter's commands through scalebloom.Cuckoo / AsyncCuckoo."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio
from redis.exceptions import ResponseError

import scalebloom
from scalebloom import CuckooInfo, CuckooInsert, CuckooStats
from servers import Cluster, Server


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_every_command_same_answers_resp2_resp3(
    server: Server, protocol: int, decode: bool
) -> None:
    cf = scalebloom.Cuckoo(server.client(protocol=protocol, decode_responses=decode))
    assert cf.reserve("c", 1000) is True
    assert cf.add("c", "a") is True
    assert cf.add("c", "a") is True  # a second copy
    assert cf.count("c", "a") == 2
    assert cf.addnx("c", "a") is False
    assert cf.addnx("c", b"b") is True
    assert cf.exists("c", "b") is True and cf.exists("c", "zzz") is False
    assert cf.exists("missing", "a") is False and cf.count("missing", "a") == 0
    assert cf.mexists("c", ["a", "b", "zzz", 3]) == [True, True, False, False]
    assert cf.delete("c", "a") is True
    assert cf.count("c", "a") == 1
    assert cf.insert("c", ["p", 3, 2.5]) == [True, True, True]
    assert cf.insertnx("c", ["p", "q"]) == [CuckooInsert.PRESENT, CuckooInsert.ADDED]
    assert cf.insertnx("c", ["q"]) == [0]  # an IntEnum: equal to the server's code
    info = cf.info("c")
    assert info == CuckooInfo(
        size=info.size,
        buckets=512,
        filters=1,
        items_inserted=6,
        items_deleted=1,
        bucket_size=2,
        expansion=1,
        max_iterations=20,
        fingerprint_bits=8,
    )
    assert cf.debug("c").startswith("bktsize:2 buckets:512 items:6 deletes:1 filters:1")
    assert cf.stats("c") == CuckooStats(
        capacity=1024,  # 512 buckets of 2
        items=6,
        load_factor=6 / 1024,
        load_factor_newest=6 / 1024,
        filters=1,
        max_filters=32,  # cf-max-expansions
        saturated=False,
    )
    assert cf.compact("c") is True

    assert cf.reserve("opts", 100, bucket_size=4, max_iterations=50, expansion=2) is True
    i = cf.info("opts")
    assert (i.bucket_size, i.max_iterations, i.expansion) == (4, 50, 2)
    assert cf.reserve("wide", 100, fingerprint=32) is True
    assert cf.info("wide").fingerprint_bits == 32
    assert cf.insert("ins", ["x"], capacity=500, fingerprint=16) == [True]
    assert cf.info("ins").fingerprint_bits == 16 and cf.info("ins").buckets == 256
    assert cf.insertnx("insnx", ["x", "x"], capacity=100) == [1, 0]

    # A full filter: INSERT answers 1/-1 (RESP2) or true/false (RESP3), INSERTNX 1/0/-1 in
    # both; the methods give the same values under either.
    assert cf.reserve("full", 2, bucket_size=1, expansion=0) is True
    added = cf.insert("full", [f"x{i}" for i in range(8)])
    assert added[0] is True and added[-1] is False and set(added) == {True, False}
    assert cf.insertnx("full", ["x0", "fresh-item"]) == [CuckooInsert.PRESENT, CuckooInsert.FULL]
    with pytest.raises(ResponseError, match="Filter is full"):
        cf.add("full", "fresh-item")
    st = cf.stats("full")
    assert (st.items, st.capacity, st.filters, st.max_filters) == (sum(added), 2, 1, 1)
    assert st.load_factor == st.load_factor_newest == sum(added) / 2
    assert st.saturated is True  # it cannot grow, and its buckets are full


def test_errors(server: Server) -> None:
    cf = scalebloom.Cuckoo(server.client())
    cf.reserve("c", 100)
    with pytest.raises(ResponseError, match="item exists"):
        cf.reserve("c", 100)
    with pytest.raises(ResponseError, match="not found"):
        cf.insert("missing", ["a"], nocreate=True)
    with pytest.raises(ResponseError, match="not found"):
        cf.insertnx("missing", ["a"], 100, True)
    with pytest.raises(ResponseError, match="Not found"):
        cf.delete("missing", "a")
    with pytest.raises(ResponseError, match="not found"):
        cf.info("missing")
    with pytest.raises(ResponseError, match="not found"):
        cf.stats("missing")
    with pytest.raises(ResponseError, match="FINGERPRINT"):
        cf.reserve("f", 100, fingerprint=12)
    with pytest.raises(TypeError, match="sequence of items"):
        cf.insert("c", "abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence of items"):
        cf.mexists("c", b"abc")  # type: ignore[arg-type]
    assert server.client().exists("missing", "f") == 0


def test_dump_to_redisbloom_and_back(server: Server, redisbloom: Server) -> None:
    ours = scalebloom.Cuckoo(server.client(decode_responses=True))
    theirs = scalebloom.Cuckoo(redisbloom.client(protocol=3))
    assert ours.reserve("c", 5000, bucket_size=4) is True
    items = [f"item:{i}" for i in range(3000)]
    assert ours.insert("c", items) == [True] * len(items)
    chunks = list(ours.scandump("c"))
    assert chunks[0][0] == 1 and all(isinstance(d, bytes) for _, d in chunks)
    assert theirs.loadchunks("c", chunks) == len(chunks)
    assert theirs.mexists("c", items) == [True] * len(items)
    assert theirs.info("c") == ours.info("c")
    assert ours.loadchunks("back", theirs.scandump("c")) == len(chunks)
    assert ours.info("back") == ours.info("c")
    assert list(ours.scandump("back")) == chunks  # the same bytes
    ours.reserve("empty", 100)
    assert list(ours.scandump("empty")) == []  # nothing to dump, as RedisBloom
    with pytest.raises(ResponseError):
        ours.loadchunks("c", chunks)  # the key exists


def test_asyncio_and_cluster(cluster: Cluster) -> None:
    rc = cluster.client()
    keys = [f"c{i}" for i in range(12)]  # spread over the three primaries
    assert len({rc.get_node_from_key(k).name for k in keys}) == 3
    cf = scalebloom.Cuckoo(rc)
    for k in keys:
        assert cf.reserve(k, 100) is True
        assert cf.insert(k, [k, "x"]) == [True, True]

    async def go() -> None:
        ar: Any = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster.ports[0], protocol=3)
        acf = scalebloom.AsyncCuckoo(ar)
        for k in keys:
            assert await acf.delete(k, "x") is True
            assert await acf.mexists(k, [k, "x"]) == [True, False]
            assert await acf.insertnx(k, [k, "y"]) == [CuckooInsert.PRESENT, CuckooInsert.ADDED]
            assert (await acf.info(k)).items_inserted == 2
            assert (await acf.stats(k)).items == 2
            copy = "{" + k + "}:copy"  # the same slot
            assert await acf.loadchunks(copy, acf.scandump(k)) >= 2
            assert await acf.mexists(copy, [k, "y", "x"]) == [True, True, False]
        await ar.aclose()

    asyncio.run(go())
