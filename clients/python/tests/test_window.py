"""Windowed and blocked Bloom filters through the typed wrappers: ``window=``, ``layout=``
and ``BF.STATS`` of every kind of Bloom filter."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Iterator

import pytest
import redis.asyncio
from redis.exceptions import DataError, ResponseError

import scalebloom
from servers import Server


@pytest.fixture
def clocked() -> Iterator[Server]:
    """A server whose windowed filters follow BF.DEBUGCLOCK instead of the wall clock."""
    with Server(module_args=["window-debug-clock", "yes"]) as s:
        yield s


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_window_forms_and_their_stats(clocked: Server, protocol: int, decode: bool) -> None:
    r = clocked.client(protocol=protocol, decode_responses=decode)
    r.execute_command("BF.DEBUGCLOCK", "SET", 1_000_000_000)
    bf = scalebloom.Bloom(r)
    assert bf.reserve("t", 0.01, 1000, window="10m") is True
    assert bf.reserve("d", 0.01, 1000, window=timedelta(minutes=10)) is True
    assert bf.reserve("n", 0.01, 100, window="items") is True
    assert bf.insert("i", ["a", "b"], capacity=100, error_rate=0.001, window="ITEMS") == [
        True,
        True,
    ]
    assert r.type("t") in ("SBwindow-", b"SBwindow-")
    assert bf.stats("t") == bf.stats("d")
    st = bf.stats("t")
    assert st.windowed and st.window == timedelta(minutes=10)
    assert st.window_capacity == 1000
    assert st.generation == st.slack == 150_000  # a quarter of the window, in ms
    assert st.slices == 5 and st.hashes is not None and st.hashes > 0
    assert st.oldest_generation_age == 0
    assert st.target_error_rate == 0.01 and st.items_added == 0 and st.saturated is False
    assert st.fill_ratio_all is None and st.fill_ratio_newest is None
    assert st.estimated_items is None and st.saturated_counters is None
    n = bf.stats("n")
    assert n.window == "items" and n.window_capacity == 100 and n.generation == 25
    i = bf.stats("i")
    assert i.window == "items" and i.target_error_rate == 0.001 and i.items_added == 2
    assert bf.info("t") == scalebloom.BloomInfo(
        capacity=1000, size=bf.info("t").size, filters=1, items=0, expansion=None
    )

    # Items expire: remembered for the window, forgotten once window + slack has passed.
    assert bf.madd("t", ["a", "b"]) == [True, True]
    r.execute_command("BF.DEBUGCLOCK", "ADVANCE", 599_999)
    assert bf.mexists("t", ["a", "b"]) == [True, True]
    assert bf.stats("t").oldest_generation_age == 599_999
    r.execute_command("BF.DEBUGCLOCK", "ADVANCE", 150_001)
    assert bf.mexists("t", ["a", "b"]) == [False, False]
    assert bf.card("t") == 0 and bf.stats("t").items_added == 0

    # A plain filter's statistics have the fill fields and no window fields.
    bf.reserve("plain", 0.01, 100)
    p = bf.stats("plain")
    assert not p.windowed and p.window is None and p.slices is None and p.generation is None
    assert p.fill_ratio_all == 0.0 and p.estimated_items == 0


def test_window_arguments(server: Server) -> None:
    bf = scalebloom.Bloom(server.client())
    with pytest.raises(DataError, match="whole number of milliseconds"):
        bf.reserve("a", 0.01, 100, window=timedelta(microseconds=1500))
    with pytest.raises(DataError, match="whole number of milliseconds"):
        bf.reserve("a", 0.01, 100, window=timedelta(0))
    with pytest.raises(ResponseError):
        bf.reserve("a", 0.01, 100, window="10 minutes")  # the server checks the string
    with pytest.raises(ResponseError):
        bf.reserve("a", 0.01, 100, window="10m", counting=4)  # refused beside WINDOW
    assert server.client().exists("a") == 0
    assert bf.reserve("a", 0.01, 100, window=timedelta(milliseconds=1500)) is True
    assert bf.stats("a").window == timedelta(milliseconds=1500)
    with pytest.raises(ResponseError, match="a windowed filter has no deletes"):
        bf.delete("a", "x")  # its items expire by themselves


def test_layouts(server: Server) -> None:
    bf = scalebloom.Bloom(server.client())
    assert bf.reserve("blocked", 0.01, 1000, layout="blocked") is True
    assert bf.reserve("standard", 0.01, 1000, layout="standard") is True
    assert bf.insert("ins", ["a"], capacity=1000, layout="blocked") == [True]
    assert bf.debug("blocked")[1].endswith(" layout:blocked")
    assert bf.debug("ins")[1].endswith(" layout:blocked")
    assert not bf.debug("standard")[1].endswith(" layout:blocked")
    assert bf.debug("standard")[0] == "size:0"
    for key in ("blocked", "standard"):
        assert bf.madd(key, ["x", "y"]) == [True, True]
        st = bf.stats(key)
        assert st.items_added == 2 and st.fill_ratio_all is not None and st.fill_ratio_all > 0
    with pytest.raises(DataError, match="layout"):
        bf.reserve("bad", 0.01, 100, layout="Blocked")  # type: ignore[arg-type]
    with pytest.raises(ResponseError):
        bf.reserve("bad", 0.01, 100, layout="blocked", counting=4)  # no counting blocked filter
    assert server.client().exists("bad") == 0


def test_window_asyncio(clocked: Server) -> None:
    async def go() -> None:
        r: Any = redis.asyncio.Redis(port=clocked.port, protocol=3)
        await r.execute_command("BF.DEBUGCLOCK", "SET", 5_000_000)
        bf = scalebloom.AsyncBloom(r)
        assert await bf.reserve("w", 0.01, 1000, window=timedelta(seconds=40)) is True
        assert await bf.add("w", "x") is True
        assert await bf.add("w", "x") is False  # present: refreshed
        st = await bf.stats("w")
        assert st.window == timedelta(seconds=40) and st.generation == 10_000
        await r.execute_command("BF.DEBUGCLOCK", "ADVANCE", 50_001)
        assert await bf.exists("w", "x") is False
        await r.aclose()

    asyncio.run(go())
