"""python -m scalebloom check-migration (RedisBloom 2.8 → scalebloom) and exporter."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

import scalebloom
from servers import Server, free_port, poll


@pytest.fixture
def redisbloom() -> Iterator[Server]:
    s = Server(module="redisbloom")
    try:
        yield s
    finally:
        s.stop()


def _check(*args: str) -> Tuple[int, str]:
    out = subprocess.run(
        [sys.executable, "-m", "scalebloom", "check-migration", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, out.stdout + out.stderr


def test_check_migration_from_redisbloom(
    redisbloom: Server, server: Server, tmp_path: Path
) -> None:
    src, dst = redisbloom.client(), server.client()
    known: List[str] = []
    src.execute_command("BF.RESERVE", "bf:small", 0.01, 100)
    src.execute_command("BF.RESERVE", "bf:grown", 0.001, 50, "EXPANSION", 4)
    src.execute_command("BF.RESERVE", "bf:fixed", 0.05, 1000, "NONSCALING")
    for key, n in (("bf:small", 60), ("bf:grown", 400), ("bf:fixed", 900)):
        items = [f"{key}-item-{i}" for i in range(n)]
        src.execute_command("BF.MADD", key, *items)
        known += [f"{key}\t{x}" for x in items]
    src.execute_command("CF.RESERVE", "cf:one", 100)
    src.execute_command("CF.ADD", "cf:one", "x")
    src.execute_command(
        "MIGRATE",
        "127.0.0.1",
        server.port,
        "",
        0,
        5000,
        "COPY",
        "KEYS",
        "bf:small",
        "bf:grown",
        "bf:fixed",
    )
    items_file = tmp_path / "items.tsv"
    items_file.write_text("\n".join(known) + "\n")
    src_url, dst_url = f"redis://127.0.0.1:{redisbloom.port}", f"redis://127.0.0.1:{server.port}"

    code, text = _check(
        src_url, dst_url, "--keys", "bf:*", "--items", str(items_file), "--sample", "5000"
    )
    assert code == 0, text
    assert "3 keys checked, 0 with differences" in text
    assert text.count(" ok") == 3 and "0/5000" in text and "0/400" in text

    # The cuckoo key has not moved yet: a difference. Once it has, it matches, CF.INFO and
    # CF.MEXISTS answers included; a cuckoo write that reached only the target shows.
    code, text = _check(src_url, dst_url)
    assert code == 1 and "cf:one" in text and "missing" in text, text
    src.execute_command("MIGRATE", "127.0.0.1", server.port, "cf:one", 0, 5000, "COPY")
    code, text = _check(src_url, dst_url, "--keys", "cf:*")
    assert code == 0 and "1 keys checked, 0 with differences" in text, text
    dst.execute_command("CF.ADD", "cf:one", "only-on-target")
    code, text = _check(src_url, dst_url, "--keys", "cf:*")
    assert code == 1 and "CF.INFO Number of items inserted 1 -> 2" in text, text

    # A write that reached only the target, and a key lost on the way.
    dst.execute_command("BF.ADD", "bf:small", "only-on-target")
    dst.delete("bf:fixed")
    code, text = _check(src_url, dst_url, "--keys", "bf:*")
    assert code == 1, text
    assert "BF.INFO items 60 -> 61" in text and "bf:fixed" in text and "missing" in text

    code, text = _check(src_url, "redis://127.0.0.1:1")
    assert code == 2 and "cannot reach" in text


def _scrape(port: int) -> Dict[Tuple[str, str], float]:
    def get() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    text = poll("the exporter to answer", get)
    out: Dict[Tuple[str, str], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, s.labels.get("key", ""))] = s.value
    return out


def test_exporter_reports_what_bf_stats_says(server: Server) -> None:
    r = server.client()
    bf = scalebloom.Bloom(r)
    bf.reserve("seen:1", 0.01, 1000)
    bf.madd("seen:1", [f"a{i}" for i in range(300)])
    bf.reserve("seen:2", 0.01, 100, nonscaling=True)
    bf.madd("seen:2", [f"b{i}" for i in range(100)])
    bf.reserve("seen:3", 0.01, 100, counting=4)
    bf.add("seen:3", "x")
    r.set("other", "not a filter")
    procs: List[subprocess.Popen[bytes]] = []
    try:
        ports = [free_port(), free_port()]
        for port, extra in ((ports[0], []), (ports[1], ["--max-keys", "2"])):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "scalebloom",
                        "exporter",
                        "--url",
                        f"redis://127.0.0.1:{server.port}",
                        "--keys",
                        "seen:*",
                        "--port",
                        str(port),
                        "--addr",
                        "127.0.0.1",
                        *extra,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        m = _scrape(ports[0])
        assert m[("scalebloom_up", "")] == 1
        assert m[("scalebloom_filters", "")] == 3
        assert m[("scalebloom_scrape_truncated", "")] == 0
        total = 0
        for key in ("seen:1", "seen:2", "seen:3"):
            st, info = bf.stats(key), bf.info(key)
            total += info.size
            assert m[("scalebloom_filter_estimated_error_rate", key)] == pytest.approx(
                st.estimated_error_rate, rel=1e-3, abs=1e-6
            )
            assert m[("scalebloom_filter_target_error_rate", key)] == 0.01
            assert m[("scalebloom_filter_fill_ratio", key)] == pytest.approx(
                st.fill_ratio_all, rel=1e-3
            )
            assert m[("scalebloom_filter_saturated", key)] == int(st.saturated)
            assert m[("scalebloom_filter_items", key)] == st.items_added
            assert m[("scalebloom_filter_estimated_items", key)] == st.estimated_items
            assert m[("scalebloom_filter_bytes", key)] == info.size
            assert m[("scalebloom_filter_capacity", key)] == info.capacity
            assert m[("scalebloom_filter_layers", key)] == info.filters
        assert m[("scalebloom_bytes", "")] == total
        assert m[("scalebloom_saturated_filters", "")] == sum(
            bf.stats(k).saturated for k in ("seen:1", "seen:2", "seen:3")
        )
        assert m[("scalebloom_filter_saturated_counters", "seen:3")] == 0
        assert ("scalebloom_filter_saturated_counters", "seen:1") not in m
        assert ("scalebloom_defrag_moves", "") in m
        # Every metric the bundled Grafana dashboard plots is one the exporter serves.
        dash = json.loads((Path(scalebloom.__file__).parent / "grafana-dashboard.json").read_text())
        used = {
            n
            for panel in dash["panels"]
            for t in panel["targets"]
            for n in re.findall(r"scalebloom_\w+", t["expr"])
        }
        served = {name for name, _ in m}
        assert used and used <= served, used - served
        # The budget: two filters at most, and the scrape says it stopped short.
        m2 = _scrape(ports[1])
        assert m2[("scalebloom_filters", "")] == 2
        assert m2[("scalebloom_scrape_truncated", "")] == 1
        # The server goes away: up 0, and the exporter keeps serving.
        server.kill()
        assert _scrape(ports[0])[("scalebloom_up", "")] == 0
    finally:
        for p in procs:
            p.kill()
            p.wait()
