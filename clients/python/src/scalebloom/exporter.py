"""``python -m scalebloom exporter --url URL``: a Prometheus endpoint for the filters of a server.

On each scrape it SCANs the server for every filter type (``TYPE MBbloom--``: plain, counting
and blocked Bloom filters; ``SBwindow-``: windowed filters; ``MBbloomCF``: cuckoo filters),
``--keys`` as the MATCH pattern, and asks each one ``BF.STATS`` + ``BF.INFO`` (+ ``BF.DEBUG``,
whose layer line tells plain, counting and blocked apart) or ``CF.STATS`` + ``CF.INFO``,
pipelined 100 filters per round trip. Per filter, labels ``key`` and ``kind``
(plain|counting|blocked|windowed|cuckoo), gauges named ``scalebloom_filter_<name>``:

=================================  ==========================================  ================
name                               from                                        kinds
=================================  ==========================================  ================
``target_error_ratio``             ``BF.STATS`` Target error rate              all but cuckoo
``estimated_error_ratio``          ``BF.STATS`` Estimated error rate           all but cuckoo
``fill_ratio``                     ``BF.STATS`` Fill ratio of all filters      plain/count./bl.
``newest_fill_ratio``              ``BF.STATS`` Fill ratio of newest filter    plain/count./bl.
``load_ratio``                     ``CF.STATS`` Load factor                    cuckoo
``newest_load_ratio``              ``CF.STATS`` Load factor of newest filter   cuckoo
``saturated``                      ``Saturated``: 1 = rotate now               all
``items``                          ``Items added`` / ``CF.STATS`` Items        all
``estimated_items``                ``BF.STATS`` Estimated items                plain/count./bl.
``saturated_counters``             ``BF.STATS`` Saturated counters             counting
``capacity``                       ``BF.INFO`` / ``CF.STATS`` Capacity         all
``bytes``                          ``BF.INFO`` / ``CF.INFO`` Size              all
``layers``                         Number of filters                           all
``max_layers``                     ``CF.STATS`` Max filters                    cuckoo
``window_seconds``                 ``BF.STATS`` Window (time windows)          windowed
``oldest_generation_age_seconds``  Age of oldest generation (time windows)     windowed
``oldest_generation_age_items``    Age of oldest generation (count windows)    windowed
=================================  ==========================================  ================

and for the server: ``scalebloom_up`` (1 if it answered the scrape), ``scalebloom_filters``,
``scalebloom_bytes`` and ``scalebloom_saturated_filters`` (over the filters reported, label
``kind``), ``scalebloom_scrape_truncated`` (1 when the scrape did not report every matching
filter), ``scalebloom_scrape_skipped_keys`` (filters found past ``--max-keys``, not queried),
``scalebloom_scrape_duration_seconds`` and the counter ``scalebloom_defrag_moves_total``
(``INFO bf`` ``bf_defrag_moves``).

Names follow Prometheus' conventions: the unit ends the name (``_bytes``, ``_seconds``,
``_ratio`` for every fraction from 0 to 1, error rates included: ``_rate`` would read as a
per-second rate), running counts are counters ending in ``_total``.

The cost of a scrape is bounded: at most ``--max-keys`` filters (default 1000) are queried, and
each of the three SCANs makes at most ``--max-keys`` / 10 + 10 calls of COUNT 1000, so a scrape of
a server holding millions of keys sends a bounded number of commands. ``BF.STATS``, ``BF.INFO``,
``BF.DEBUG``, ``CF.STATS`` and ``CF.INFO`` cost O(layers) each on the server (no scan of the
bits). When ``scalebloom_scrape_truncated`` is 1, narrow ``--keys`` or raise ``--max-keys``.

It listens on 127.0.0.1 unless ``--addr`` says otherwise. A missing ``prometheus_client``
(``pip install 'scalebloom[exporter]'``), a port in use or a server that does not answer at start
end it with one line on stderr and exit code 1.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Iterator

import redis

from . import _metrics as m


class Collector:
    """A prometheus_client collector that queries the server on every scrape."""

    def __init__(self, url: str, pattern: str = "*", max_keys: int = 1000) -> None:
        self.client = redis.Redis.from_url(
            url, protocol=2, socket_timeout=30, socket_connect_timeout=10
        )
        self.pattern, self.max_keys = pattern, max_keys

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        start = time.monotonic()
        up = GaugeMetricFamily("scalebloom_up", "1 if the server answered this scrape, else 0")
        try:
            scan = m.collect(self.client, self.pattern, self.max_keys)
            info = self.client.info("bf")
        except redis.RedisError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up

        for name, doc, get in m.PER_FILTER:
            g = GaugeMetricFamily(f"scalebloom_filter_{name}", doc, labels=["key", "kind"])
            for f in scan.filters:
                v = get(f.fields)
                if v is not None:
                    g.add_metric([f.key, f.kind], v)
            yield g

        def per_kind(name: str, doc: str, value: Any) -> Any:
            g = GaugeMetricFamily(name, doc, labels=["kind"])
            for kind in m.KINDS:
                g.add_metric([kind], sum(value(f) for f in scan.filters if f.kind == kind))
            return g

        yield per_kind("scalebloom_filters", "Filters this scrape reported", lambda f: 1)
        yield per_kind(
            "scalebloom_bytes",
            "Memory in bytes of the filters' data, over the filters this scrape reported",
            lambda f: m.number(f.fields.get("Size")) or 0,
        )
        yield per_kind(
            "scalebloom_saturated_filters",
            "Filters this scrape reported that are due for rotation now",
            lambda f: 1 if m.number(f.fields.get("Saturated")) == 1 else 0,
        )
        yield GaugeMetricFamily(
            "scalebloom_scrape_truncated",
            "1 when this scrape did not report every filter matching --keys (--max-keys or the "
            "SCAN budget cut it short), else 0",
            value=int(scan.truncated),
        )
        yield GaugeMetricFamily(
            "scalebloom_scrape_skipped_keys",
            "Filters the scrape found past --max-keys and did not query (a SCAN cut short by "
            "its budget may leave more unseen)",
            value=scan.skipped,
        )
        if "bf_defrag_moves" in info:
            yield CounterMetricFamily(
                "scalebloom_defrag_moves",
                "Filter allocations active defragmentation moved since the server started",
                value=int(info["bf_defrag_moves"]),
            )
        yield GaugeMetricFamily(
            "scalebloom_scrape_duration_seconds",
            "Seconds this scrape took to query the server",
            value=time.monotonic() - start,
        )


def _fail(msg: str) -> int:
    print(f"scalebloom exporter: {' '.join(msg.split())}", file=sys.stderr, flush=True)
    return 1


def serve(url: str, pattern: str, port: int, addr: str, max_keys: int) -> int:
    """Serves ``/metrics`` on ``addr:port`` until interrupted (0); 1 with one line on stderr
    when it cannot start."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError:
        return _fail(
            "needs prometheus_client, which is not installed: pip install 'scalebloom[exporter]'"
        )
    collector = Collector(url, pattern, max_keys)
    try:
        collector.client.ping()
    except redis.RedisError as e:
        return _fail(f"cannot reach {url}: {e}")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        start_http_server(port, addr=addr, registry=registry)
    except OSError as e:
        return _fail(f"cannot listen on {addr}:{port}: {e.strerror or e}")
    print(f"scalebloom exporter: http://{addr}:{port}/metrics for {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    return 0


def add_arguments(parser: Any) -> None:
    parser.add_argument("--url", default="redis://localhost:6379/0", help="the server")
    parser.add_argument("--keys", default="*", help="SCAN MATCH pattern (default *)")
    parser.add_argument("--port", type=int, default=9479, help="HTTP port (default 9479)")
    parser.add_argument(
        "--addr",
        default="127.0.0.1",
        help="HTTP address (default 127.0.0.1; 0.0.0.0 or :: to serve other hosts)",
    )
    parser.add_argument(
        "--max-keys",
        type=int,
        default=1000,
        help="filters queried per scrape at most (default 1000)",
    )
