"""python -m scalebloom exporter: what it serves for every filter kind, checked against the
server's own replies, by ``promtool`` and by a real Prometheus scraping it; its budget; its
rules file; its one-line exits."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

import scalebloom
from scalebloom import _metrics, exporter
from scalebloom.__main__ import main
from servers import Server, free_port, poll

PACKAGE = Path(scalebloom.__file__).parent
RULES = PACKAGE / "prometheus-rules.yml"
KINDS = {"plain", "counting", "blocked", "windowed", "cuckoo"}


def tool(name: str) -> str:
    """A binary of Debian's prometheus package (make test-deps installs it)."""
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} is not on PATH: apt-get install prometheus (make test-deps)")
    return path


class Exporter:
    """``python -m scalebloom exporter`` in a process of its own, on a free port."""

    def __init__(self, server: Server, *args: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scalebloom",
                "exporter",
                "--url",
                f"redis://127.0.0.1:{server.port}",
                "--port",
                str(self.port),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def scrape(self) -> str:
        def get() -> str:
            url = f"http://127.0.0.1:{self.port}/metrics"
            with urllib.request.urlopen(url, timeout=30) as r:
                return str(r.read().decode())

        return poll("the exporter to answer", get)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def exporters() -> Iterator[List[Exporter]]:
    started: List[Exporter] = []
    try:
        yield started
    finally:
        for e in started:
            e.stop()


Samples = Dict[Tuple[str, str], Tuple[float, str]]


def samples(text: str) -> Samples:
    """{(sample name, key label): (value, kind label)}."""
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, s.labels.get("key", s.labels.get("kind", "")))] = (
                s.value,
                s.labels.get("kind", ""),
            )
    return out


def fields(reply: Any) -> Dict[str, Any]:
    """A field reply as {name: value}: a map (RESP3) or names and values (RESP2)."""
    if isinstance(reply, dict):
        return {k.decode(): v for k, v in reply.items()}
    return {reply[i].decode(): reply[i + 1] for i in range(0, len(reply), 2)}


def num(v: Any) -> float:
    return float(v.decode() if isinstance(v, bytes) else v)


def make_every_kind(server: Server) -> Dict[str, str]:
    """One filter of each kind (two windows: time and count) and a key that is no filter;
    {key: kind}."""
    r = server.client()
    r.execute_command("BF.RESERVE", "f:plain", 0.01, 1000)
    r.execute_command("BF.MADD", "f:plain", *[f"a{i}" for i in range(300)])
    r.execute_command("BF.RESERVE", "f:counting", 0.01, 100, "COUNTING", 4)
    r.execute_command("BF.MADD", "f:counting", "x", "y", "x")
    r.execute_command("BF.RESERVE", "f:blocked", 0.001, 500, "LAYOUT", "BLOCKED")
    r.execute_command("BF.MADD", "f:blocked", *[f"b{i}" for i in range(200)])
    r.execute_command("BF.RESERVE", "f:window", 0.01, 100, "WINDOW", "1h")
    # A burst of ten windows' worth: saturated until it expires.
    r.execute_command("BF.MADD", "f:window", *[f"w{i}" for i in range(1000)])
    r.execute_command("BF.RESERVE", "f:recent", 0.01, 100, "WINDOW", "ITEMS")
    r.execute_command("BF.MADD", "f:recent", *[f"r{i}" for i in range(150)])
    r.execute_command("CF.RESERVE", "f:cuckoo", 100)
    for i in range(40):
        r.execute_command("CF.ADD", "f:cuckoo", f"c{i}")
    r.set("f:other", "not a filter")
    return {
        "f:plain": "plain",
        "f:counting": "counting",
        "f:blocked": "blocked",
        "f:window": "windowed",
        "f:recent": "windowed",
        "f:cuckoo": "cuckoo",
    }


def test_exporter_reports_what_the_server_says(server: Server, exporters: List[Exporter]) -> None:
    kinds = make_every_kind(server)
    r = server.client()
    e = Exporter(server, "--keys", "f:*")
    exporters.append(e)
    text = e.scrape()
    # promtool's lint: HELP on every metric, units and _total where they belong.
    lint = subprocess.run(
        [tool("promtool"), "check", "metrics"], input=text, capture_output=True, text=True
    )
    assert lint.returncode == 0 and lint.stdout + lint.stderr == "", lint.stdout + lint.stderr
    m = samples(text)
    assert m[("scalebloom_up", "")][0] == 1
    for key, kind in kinds.items():
        assert m[("scalebloom_filter_bytes", key)][1] == kind, key
    assert ("scalebloom_filter_bytes", "f:other") not in m

    def val(name: str, key: str) -> float:
        return m[(f"scalebloom_filter_{name}", key)][0]

    for key in ("f:plain", "f:counting", "f:blocked", "f:window", "f:recent"):
        st = fields(r.execute_command("BF.STATS", key))
        info = fields(r.execute_command("BF.INFO", key))
        assert val("target_error_ratio", key) == num(st["Target error rate"])
        assert val("saturated", key) == st["Saturated"]
        assert val("capacity", key) == info["Capacity"]
        assert val("bytes", key) == info["Size"]
        assert val("layers", key) == info["Number of filters"]
        if key != "f:window":  # a time window's estimate moves with its clock
            assert val("estimated_error_ratio", key) == num(st["Estimated error rate"])
            assert val("items", key) == st["Items added"]
    for key in ("f:plain", "f:counting", "f:blocked"):
        st = fields(r.execute_command("BF.STATS", key))
        assert val("fill_ratio", key) == num(st["Fill ratio of all filters"])
        assert val("newest_fill_ratio", key) == num(st["Fill ratio of newest filter"])
        assert val("estimated_items", key) == st["Estimated items"]
    assert val("items", "f:plain") == 300 and val("items", "f:counting") == 3
    assert val("saturated_counters", "f:counting") == 0
    assert ("scalebloom_filter_saturated_counters", "f:plain") not in m
    # The windows: a time window's length and age in seconds, a count window's age in items.
    assert val("window_seconds", "f:window") == 3600
    assert 0 <= val("oldest_generation_age_seconds", "f:window") < 3600
    assert ("scalebloom_filter_window_seconds", "f:recent") not in m
    st = fields(r.execute_command("BF.STATS", "f:recent"))
    assert val("oldest_generation_age_items", "f:recent") == st["Age of oldest generation"]
    assert val("saturated", "f:window") == 1
    # The cuckoo filter: CF.STATS and CF.INFO.
    cst = fields(r.execute_command("CF.STATS", "f:cuckoo"))
    cinfo = fields(r.execute_command("CF.INFO", "f:cuckoo"))
    assert val("items", "f:cuckoo") == cst["Items"] == 40
    assert val("capacity", "f:cuckoo") == cst["Capacity"]
    assert val("load_ratio", "f:cuckoo") == num(cst["Load factor"])
    assert val("newest_load_ratio", "f:cuckoo") == num(cst["Load factor of newest filter"])
    assert val("layers", "f:cuckoo") == cst["Number of filters"]
    assert val("max_layers", "f:cuckoo") == cst["Max filters"]
    assert val("saturated", "f:cuckoo") == cst["Saturated"]
    assert val("bytes", "f:cuckoo") == cinfo["Size"]
    # The totals, per kind.
    for kind in KINDS:
        mine = [k for k, kd in kinds.items() if kd == kind]
        assert m[("scalebloom_filters", kind)][0] == len(mine)
        assert m[("scalebloom_bytes", kind)][0] == sum(val("bytes", k) for k in mine)
        assert m[("scalebloom_saturated_filters", kind)][0] == sum(
            val("saturated", k) for k in mine
        )
    assert m[("scalebloom_scrape_truncated", "")][0] == 0
    assert m[("scalebloom_scrape_skipped_keys", "")][0] == 0
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert types["scalebloom_defrag_moves"] == "counter"
    assert ("scalebloom_defrag_moves_total", "") in m
    # Every metric the bundled Grafana dashboard plots is one the exporter serves.
    dash = json.loads((PACKAGE / "grafana-dashboard.json").read_text())
    used = {
        n
        for panel in dash["panels"]
        for t in panel["targets"]
        for n in re.findall(r"scalebloom_\w+", t["expr"])
    }
    served = {name for name, _ in m}
    assert used and used <= served, used - served
    # The server goes away: up 0, and the exporter keeps serving.
    server.kill()
    assert samples(e.scrape())[("scalebloom_up", "")][0] == 0


def test_scrape_budget(server: Server, exporters: List[Exporter]) -> None:
    make_every_kind(server)
    e = Exporter(server, "--keys", "f:*", "--max-keys", "2")
    exporters.append(e)
    m = samples(e.scrape())
    assert sum(m[("scalebloom_filters", k)][0] for k in KINDS) == 2
    assert m[("scalebloom_scrape_truncated", "")][0] == 1
    assert m[("scalebloom_scrape_skipped_keys", "")][0] == 4
    # A keyspace larger than the SCAN budget (10 calls of COUNT 1000 per type at --max-keys 1):
    # the scrape stops short of the end and says so.
    r = server.client()
    pipe = r.pipeline(transaction=False)
    for i in range(30000):
        pipe.set(f"pad:{i}", "x")
    pipe.execute()
    scan = _metrics.collect(r, "*", 1)
    assert len(scan.filters) <= 1 and scan.incomplete and scan.truncated
    scan = _metrics.collect(r, "f:*", 1000)
    assert len(scan.filters) == 6 and not scan.truncated and scan.skipped == 0


def test_rules_file_passes_promtool() -> None:
    out = subprocess.run(
        [tool("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


# promtool's unit tests of the rules: series over time, the alerts (labels and rendered
# annotations) expected at given moments.
RULE_TESTS = """\
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'scalebloom_up{instance="x"}'
        values: '1x5 0x10'
      - series: 'scalebloom_filter_estimated_error_ratio{key="a",kind="plain"}'
        values: '0.005x10 0.009x20'
      - series: 'scalebloom_filter_target_error_ratio{key="a",kind="plain"}'
        values: '0.01x30'
      - series: 'scalebloom_filter_saturated{key="a",kind="plain"}'
        values: '0x20 1x10'
      - series: 'scalebloom_filter_saturated_counters{key="c",kind="counting"}'
        values: '0x5 3x10'
      - series: 'scalebloom_filter_layers{key="a",kind="plain"}'
        values: '1x30 2x70'
      - series: 'scalebloom_filter_layers{key="q",kind="cuckoo"}'
        values: '2x100'
      - series: 'scalebloom_scrape_truncated{instance="x"}'
        values: '1x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: ScalebloomDown
        exp_alerts: []
      - eval_time: 12m
        alertname: ScalebloomDown
        exp_alerts:
          - exp_labels: {severity: critical, instance: x}
            exp_annotations:
              summary: scalebloom exporter x cannot query its server
              description: The server behind the exporter did not answer its scrapes for 5 minutes.
      - eval_time: 12m
        alertname: ScalebloomFilterRotationDue
        exp_alerts: []
      - eval_time: 18m
        alertname: ScalebloomFilterRotationDue
        exp_alerts:
          - exp_labels: {severity: info, key: a, kind: plain}
            exp_annotations:
              summary: Filter a (plain) is past 80% of its error budget
              description: >-
                Its estimated false-positive rate is 0.009, more than 0.8 times its target: the
                next filter is due.
      - eval_time: 25m
        alertname: ScalebloomFilterRotationDue
        exp_alerts: []
      - eval_time: 20m
        alertname: ScalebloomFilterSaturated
        exp_alerts: []
      - eval_time: 25m
        alertname: ScalebloomFilterSaturated
        exp_alerts:
          - exp_labels: {severity: warning, key: a, kind: plain}
            exp_annotations:
              summary: Filter a (plain) is due for rotation now
              description: >-
                The filter holds more than it was sized for (Saturated 1 in BF.STATS or
                CF.STATS). Start a fresh, larger filter and retire this one
                (docs/saturation.md).
      - eval_time: 12m
        alertname: ScalebloomSaturatedCounters
        exp_alerts:
          - exp_labels: {severity: info, key: c, kind: counting}
            exp_annotations:
              summary: Counting filter c has 3 counters stuck at their maximum
              description: >-
                Items sharing a stuck counter can no longer be deleted: the filter keeps false
                positives it cannot remove. Rebuild it larger, or with 8-bit counters
                (COUNTING 8).
      - eval_time: 95m
        alertname: ScalebloomFilterOutgrewReservation
        exp_alerts:
          - exp_labels: {severity: info, key: a, kind: plain}
            exp_annotations:
              summary: Filter a has 2 layers
              description: >-
                It outgrew its first reservation; each new layer is larger and has a tighter
                error, so a larger BF.RESERVE is cheaper next time.
      - eval_time: 20m
        alertname: ScalebloomScrapeTruncated
        exp_alerts:
          - exp_labels: {severity: info, instance: x}
            exp_annotations:
              summary: scalebloom exporter x does not report every filter
              description: >-
                Each scrape stops at --max-keys (or its SCAN budget), so some filters go
                unwatched (scalebloom_scrape_skipped_keys counts those it found). Narrow --keys
                or raise --max-keys.
"""


def test_rules_fire_when_they_should(tmp_path: Path) -> None:
    tests = tmp_path / "rules-test.yml"
    tests.write_text(f"rule_files: ['{RULES}']\n" + RULE_TESTS)
    out = subprocess.run(
        [tool("promtool"), "test", "rules", str(tests)], capture_output=True, text=True
    )
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


def _query(port: int, path: str, **params: str) -> Any:
    url = f"http://127.0.0.1:{port}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=30) as r:
        body = json.loads(r.read().decode())
    assert body["status"] == "success", body
    return body["data"]


def test_prometheus_scrapes_every_kind(server: Server, exporters: List[Exporter]) -> None:
    kinds = make_every_kind(server)
    e = Exporter(server, "--keys", "f:*")
    exporters.append(e)
    m = samples(e.scrape())
    saturated = sorted(
        k for (name, k), (v, _) in m.items() if name == "scalebloom_filter_saturated" and v
    )
    assert "f:window" in saturated
    data = tempfile.mkdtemp(prefix="sbprom-")
    prom: Optional[subprocess.Popen[bytes]] = None
    try:
        config = Path(data) / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: ['{RULES}']\n"
            "scrape_configs:\n  - job_name: scalebloom\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{e.port}']\n"
        )
        port = free_port()
        with open(Path(data) / "log", "wb") as log:  # the child keeps its own descriptor
            prom = subprocess.Popen(
                [
                    tool("prometheus"),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={Path(data) / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
                stderr=log,
            )

        def every_kind() -> Optional[Dict[str, float]]:
            got = _query(port, "/api/v1/query", query="count by (kind) (scalebloom_filter_bytes)")
            counts = {s["metric"]["kind"]: float(s["value"][1]) for s in got["result"]}
            return counts if set(counts) == KINDS else None

        counts = poll("Prometheus to hold every kind's series", every_kind)
        assert counts == {k: float(list(kinds.values()).count(k)) for k in KINDS}
        up = _query(port, "/api/v1/query", query="scalebloom_up")["result"]
        assert [s["value"][1] for s in up] == ["1"]
        moves = _query(port, "/api/v1/query", query="scalebloom_defrag_moves_total")["result"]
        assert len(moves) == 1

        # Every expression of the bundled Grafana dashboard is valid PromQL with data behind it.
        dash = json.loads((PACKAGE / "grafana-dashboard.json").read_text())
        for expr in (t["expr"] for panel in dash["panels"] for t in panel["targets"]):
            assert _query(port, "/api/v1/query", query=expr)["result"], expr

        # The rules evaluate without error, and the burst in f:window raises its alert.
        def rules_evaluated() -> Optional[List[Any]]:
            groups = _query(port, "/api/v1/rules")["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r["health"] == "ok" for r in rules) else None

        rules = poll("Prometheus to evaluate the rules", rules_evaluated)
        assert {r["name"] for r in rules} >= {"ScalebloomFilterSaturated", "ScalebloomDown"}

        def saturated_alert() -> Optional[List[str]]:
            alerts = _query(port, "/api/v1/alerts")["alerts"]
            keys = sorted(
                a["labels"]["key"]
                for a in alerts
                if a["labels"]["alertname"] == "ScalebloomFilterSaturated"
            )
            return keys or None

        assert poll("the saturation alerts", saturated_alert) == saturated
    finally:
        if prom is not None:
            prom.kill()
            prom.wait()
        shutil.rmtree(data, ignore_errors=True)


def _exit(*args: str, env_code: str = "") -> Tuple[int, List[str]]:
    """Runs the exporter until it exits; its exit code and its stderr lines."""
    code = env_code + "from scalebloom.__main__ import main; sys.exit(main(sys.argv[1:]))"
    out = subprocess.run(
        [sys.executable, "-c", "import sys; " + code, "exporter", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, out.stderr.splitlines()


def test_missing_extra_is_one_line(server: Server) -> None:
    code, err = _exit(
        "--url",
        f"redis://127.0.0.1:{server.port}",
        "--port",
        str(free_port()),
        env_code="sys.modules['prometheus_client'] = None; ",
    )
    assert code == 1 and len(err) == 1, err
    assert "pip install 'scalebloom[exporter]'" in err[0]


def test_busy_port_is_one_line(server: Server) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, err = _exit("--url", f"redis://127.0.0.1:{server.port}", "--port", str(port))
    assert code == 1 and len(err) == 1, err
    assert f"cannot listen on 127.0.0.1:{port}" in err[0]


def test_unreachable_server_is_one_line() -> None:
    dead = free_port()
    code, err = _exit("--url", f"redis://127.0.0.1:{dead}", "--port", str(free_port()))
    assert code == 1 and len(err) == 1, err
    assert f"cannot reach redis://127.0.0.1:{dead}" in err[0]


def test_listens_on_loopback_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: Dict[str, Any] = {}

    def serve(url: str, pattern: str, port: int, addr: str, max_keys: int) -> int:
        seen.update(url=url, port=port, addr=addr, max_keys=max_keys)
        return 0

    monkeypatch.setattr(exporter, "serve", serve)
    assert main(["exporter"]) == 0
    assert seen == {
        "url": "redis://localhost:6379/0",
        "port": 9479,
        "addr": "127.0.0.1",
        "max_keys": 1000,
    }
    assert main(["exporter", "--addr", "0.0.0.0"]) == 0 and seen["addr"] == "0.0.0.0"
