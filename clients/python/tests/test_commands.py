"""scalebloom's commands through the typed wrappers, on every kind of redis-py client."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path
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


def test_text_or_bytes_as_items_is_a_type_error(server: Server) -> None:
    bf = scalebloom.Bloom(server.client())
    for call in (
        lambda: bf.madd("k", "abc"),  # type: ignore[arg-type]
        lambda: bf.mexists("k", b"abc"),  # type: ignore[arg-type]
        lambda: bf.mdelete("k", bytearray(b"ab")),  # type: ignore[arg-type]
        lambda: bf.insert("k", "abc"),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError, match="sequence of items"):
            call()
    assert server.client().exists("k") == 0  # nothing was sent
    assert bf.madd("k", ("a", "b")) == [True, True]
    assert bf.mexists("k", ["a", "c"]) == [True, False]


def test_sync_and_asyncio_have_the_same_methods() -> None:
    def methods(cls: Any) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}

    for sync, aio in (
        (scalebloom.Bloom, scalebloom.AsyncBloom),
        (scalebloom.Cuckoo, scalebloom.AsyncCuckoo),
        (scalebloom.PartitionedFilter, scalebloom.AsyncPartitionedFilter),
    ):
        s, a = sync.__new__(sync), aio.__new__(aio)
        s.client = a.client = None
        # The sync filter's close() is the asyncio one's aclose(); open() is its constructor.
        assert methods(sync) - {"close"} == methods(aio) - {"aclose", "open"}
        for n in methods(sync) - {"close", "create"}:
            ss, sa = inspect.signature(getattr(s, n)), inspect.signature(getattr(a, n))
            assert ss.parameters.keys() == sa.parameters.keys(), n
            if n in ("partition_of", "key_of"):  # local computations, no I/O
                assert ss == sa, n
            elif n not in ("scandump", "loadchunks"):
                assert inspect.iscoroutinefunction(getattr(a, n)), n
                assert sa.return_annotation == f"Awaitable[{ss.return_annotation}]", n


def test_mypy_refuses_text_where_items_go(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import redis\n"
        "import scalebloom\n"
        "bf = scalebloom.Bloom(redis.Redis())\n"
        "ok: list[bool] = bf.madd('k', ['a', b'b', 1, 2.5]) + bf.mexists('k', ('a',))\n"
        "bf.madd('k', 'abc')\n"
        "bf.mexists('k', b'abc')\n"
        "cf = scalebloom.AsyncCuckoo(None)\n"
        "async def f() -> None:\n"
        "    added: list[bool] = await cf.insert('k', ['a'])\n"
        "    await cf.insertnx('k', 'abc')\n"
        "    n: str = await cf.count('k', 'a')\n"
    )
    # The package as the tests import it: installed (mypy finds it in site-packages, or through
    # an editable install's path file) or a source tree on PYTHONPATH (given to mypy).
    src = Path(scalebloom.__file__).resolve().parent.parent
    env = dict(os.environ)
    if src.name != "site-packages":
        env["MYPYPATH"] = str(src)
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(pyproject),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    errors = [ln for ln in out.stdout.splitlines() if ": error:" in ln]
    lines = [int(ln.split(":")[1]) for ln in errors]
    assert lines == [5, 6, 10, 11], out.stdout + out.stderr
    assert all("[arg-type]" in ln for ln in errors[:3]) and "[assignment]" in errors[3], errors
    assert 'incompatible type "str"' in errors[0] and 'incompatible type "bytes"' in errors[1]


@pytest.mark.parametrize("protocol", [2, 3])
def test_scandump_loadchunks_move_a_filter(server: Server, protocol: int) -> None:
    other = Server()
    try:
        src = scalebloom.Bloom(server.client(protocol=protocol, decode_responses=True))
        dst = scalebloom.Bloom(other.client(protocol=protocol, decode_responses=True))
        src.reserve("plain", 0.001, 100)
        items = [f"item:{i}" for i in range(1000)]  # several layers
        src.madd("plain", items)
        chunks = list(src.scandump("plain"))
        assert len(chunks) > 2 and all(isinstance(d, bytes) for _, d in chunks)
        assert chunks[0][0] == 1  # the header
        assert dst.loadchunks("plain", iter(chunks)) == len(chunks)
        assert dst.mexists("plain", items) == [True] * len(items)
        assert dst.info("plain") == src.info("plain")
        digest = "DEBUG DIGEST-VALUE"
        assert server.client().execute_command(digest, "plain") == other.client().execute_command(
            digest, "plain"
        )
        with pytest.raises(ResponseError):
            dst.loadchunks("plain", chunks)  # the key exists
        assert dst.mexists("plain", items[:3]) == [True] * 3

        async def go() -> None:
            a: Any = redis.asyncio.Redis(port=server.port, protocol=protocol)
            b: Any = redis.asyncio.Redis(port=other.port, protocol=protocol)
            asrc, adst = scalebloom.AsyncBloom(a), scalebloom.AsyncBloom(b)
            await asrc.reserve("cnt", 0.01, 100, counting=8)
            await asrc.madd("cnt", ["x", "x", "y"])
            assert await adst.loadchunks("cnt", asrc.scandump("cnt")) >= 2  # async to async
            assert await adst.mdelete("cnt", ["x", "x", "y", "x"]) == [True, True, True, False]
            with pytest.raises(ResponseError, match="not found"):
                [c async for c in asrc.scandump("missing")]
            await a.aclose()
            await b.aclose()

        asyncio.run(go())
    finally:
        other.stop()
