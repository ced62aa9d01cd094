"""The Python examples of clients/python/README.md run and say what they print, and so do those of
the main README.md and the manual (docs/*.md) that need a Redis Cluster (scripts/readme-examples,
`make test-readme`, runs every other example of them, on one server). Each ```python block is executed against a
test server or cluster (redis.Redis() and redis.RedisCluster(...) are pointed at it), and
`expr  # value` lines are checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import pytest
import redis

from servers import Cluster, Server

ROOT = Path(__file__).resolve().parents[3]


def blocks() -> List[str]:
    out = []
    for code in re.findall(
        r"```python\n(.*?)```", (ROOT / "clients/python/README.md").read_text(), re.S
    ):
        if "scalebloom" in code:
            out.append(code)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for code in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            if "RedisCluster" in code:
                out.append(code)
    return out


def _dedent(code: str) -> str:
    lines = code.splitlines()
    pad = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
    return "\n".join(x[pad:] for x in lines)


def test_there_are_examples() -> None:
    assert len(blocks()) >= 3


@pytest.mark.parametrize("index", range(len(blocks())))
def test_example_runs(index: int, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(replicas=0) if "RedisCluster" in blocks()[index] else None
    try:
        _run(index, server, cluster, monkeypatch)
    finally:
        if cluster is not None:
            cluster.stop()


def _run(index: int, server: Server, cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real_redis, real_cluster = redis.Redis, redis.RedisCluster

    class ToServer(real_redis):  # type: ignore[misc,valid-type]
        def __init__(self, *a: Any, **kw: Any) -> None:
            kw.pop("host", None)
            kw["port"] = server.port
            super().__init__(**kw)

    class ToCluster(real_cluster):  # type: ignore[misc,valid-type]
        def __init__(self, *a: Any, **kw: Any) -> None:
            kw["host"], kw["port"] = "127.0.0.1", cluster.ports[0]
            super().__init__(**kw)

    monkeypatch.setattr(redis, "Redis", ToServer)
    monkeypatch.setattr(redis, "RedisCluster", ToCluster)
    code = _dedent(blocks()[index])
    ns: Dict[str, Any] = {}
    # Run line by line groups: a line `expr  # value` with a literal value is checked.
    stmts: List[str] = []
    for line in code.splitlines():
        m = re.match(r"^(\S.*?)\s+#\s*(True|False|\[[^\]]*\]|\d+)\s*(?:[:,].*)?$", line)
        if m and not line.startswith(("import", "def ", "bf = ", "f = ", "rc = ", "g = ", "r = ")):
            exec("\n".join(stmts), ns)
            stmts = []
            got = eval(m.group(1), ns)
            want = eval(m.group(2))
            assert got == want, f"{m.group(1)} gave {got!r}, the README says {want!r}"
        else:
            stmts.append(line)
    exec("\n".join(stmts), ns)
