"""``python -m scalebloom exporter --url URL``: a Prometheus endpoint for filter saturation.

On each scrape it SCANs the server for filters (``TYPE MBbloom--``, ``--keys`` as MATCH
pattern), asks each ``BF.STATS`` and ``BF.INFO`` (pipelined, 100 keys per round trip) and
reports, per filter (label ``key``):

==========================================  ===============================================
``scalebloom_filter_estimated_error_rate``  ``BF.STATS`` Estimated error rate
``scalebloom_filter_target_error_rate``     Target error rate
``scalebloom_filter_fill_ratio``            Fill ratio of all filters (set bits ÷ bits)
``scalebloom_filter_fill_ratio_newest``     Fill ratio of newest filter
``scalebloom_filter_saturated``             1 when the estimated rate is above the target
``scalebloom_filter_items``                 Items added (``BF.CARD``)
``scalebloom_filter_estimated_items``       Estimated items (distinct items the bits hold)
``scalebloom_filter_saturated_counters``    counting filters: counters stuck at their maximum
``scalebloom_filter_bytes``                 ``BF.INFO`` Size
``scalebloom_filter_capacity``              ``BF.INFO`` Capacity
``scalebloom_filter_layers``                ``BF.INFO`` Number of filters
==========================================  ===============================================

and for the server: ``scalebloom_up`` (1 if it answered), ``scalebloom_filters`` (filters
reported), ``scalebloom_bytes`` (their bytes), ``scalebloom_saturated_filters``,
``scalebloom_scrape_truncated`` (1 when the scrape stopped at ``--max-keys``),
``scalebloom_scrape_duration_seconds`` and ``scalebloom_defrag_moves`` (``INFO bf``).

The cost of a scrape is bounded: at most ``--max-keys`` filters (default 1000) are reported
and at most ``--max-keys`` / 10 + 10 SCAN calls (COUNT 1000 each) are made, so a scrape of a
server holding millions of keys sends a bounded number of commands; narrow ``--keys`` or raise
``--max-keys`` when ``scalebloom_scrape_truncated`` is 1. ``BF.STATS`` and ``BF.INFO`` cost
O(layers) each on the server (no scan of the bits).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List, Tuple

import redis

from . import _protocol as p

SCAN_COUNT = 1000
PIPELINE = 100


def collect_filters(
    r: Any, pattern: str, max_keys: int
) -> Tuple[List[Tuple[str, p.BloomStats, p.BloomInfo]], bool]:
    """The filters a scrape reports, and whether the budget cut the scan short."""
    keys: List[bytes] = []
    cursor, calls, truncated = 0, 0, False
    max_calls = max_keys // 10 + 10
    while True:
        cursor, batch = r.scan(cursor=cursor, match=pattern, count=SCAN_COUNT, _type="MBbloom--")
        calls += 1
        keys.extend(batch)
        if cursor == 0:
            break
        if len(keys) >= max_keys or calls >= max_calls:
            truncated = True
            break
    if len(keys) > max_keys:
        keys, truncated = keys[:max_keys], True
    out = []
    for s in range(0, len(keys), PIPELINE):
        chunk = keys[s : s + PIPELINE]
        pipe = r.pipeline(transaction=False)
        for k in chunk:
            pipe.execute_command("BF.STATS", k)
            pipe.execute_command("BF.INFO", k)
        replies = pipe.execute(raise_on_error=False)
        for i, k in enumerate(chunk):
            st, inf = replies[2 * i], replies[2 * i + 1]
            if isinstance(st, Exception) or isinstance(inf, Exception):
                continue  # deleted (or replaced) since the SCAN saw it
            out.append(
                (k.decode("utf-8", "backslashreplace"), p.parse_stats(st), p.parse_info(inf))
            )
    return out, truncated


class Collector:
    """A prometheus_client collector that queries the server on every scrape."""

    def __init__(self, url: str, pattern: str = "*", max_keys: int = 1000) -> None:
        self.client = redis.Redis.from_url(url, protocol=2)
        self.pattern, self.max_keys = pattern, max_keys

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        start = time.monotonic()
        up = GaugeMetricFamily("scalebloom_up", "1 if the server answered the last scrape")
        try:
            filters, truncated = collect_filters(self.client, self.pattern, self.max_keys)
            info = self.client.info("bf")
        except redis.RedisError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up

        per_filter: Dict[str, Tuple[str, Any]] = {
            "estimated_error_rate": (
                "BF.STATS Estimated error rate",
                lambda s, i: s.estimated_error_rate,
            ),
            "target_error_rate": ("BF.STATS Target error rate", lambda s, i: s.target_error_rate),
            "fill_ratio": ("BF.STATS Fill ratio of all filters", lambda s, i: s.fill_ratio_all),
            "fill_ratio_newest": (
                "BF.STATS Fill ratio of newest filter",
                lambda s, i: s.fill_ratio_newest,
            ),
            "saturated": (
                "1 when the estimated error rate is above the target",
                lambda s, i: int(s.saturated),
            ),
            "items": ("BF.STATS Items added", lambda s, i: s.items_added),
            "estimated_items": ("BF.STATS Estimated items", lambda s, i: s.estimated_items),
            "bytes": ("BF.INFO Size", lambda s, i: i.size),
            "capacity": ("BF.INFO Capacity", lambda s, i: i.capacity),
            "layers": ("BF.INFO Number of filters", lambda s, i: i.filters),
        }
        for name, (doc, get) in per_filter.items():
            g = GaugeMetricFamily(f"scalebloom_filter_{name}", doc, labels=["key"])
            for key, st, inf in filters:
                g.add_metric([key], float(get(st, inf)))
            yield g
        g = GaugeMetricFamily(
            "scalebloom_filter_saturated_counters",
            "BF.STATS Saturated counters (counting filters)",
            labels=["key"],
        )
        for key, st, _ in filters:
            if st.saturated_counters is not None:
                g.add_metric([key], float(st.saturated_counters))
        yield g

        yield GaugeMetricFamily(
            "scalebloom_filters", "filters reported by this scrape", value=len(filters)
        )
        yield GaugeMetricFamily(
            "scalebloom_bytes",
            "bytes of the filters reported",
            value=sum(i.size for _, _, i in filters),
        )
        yield GaugeMetricFamily(
            "scalebloom_saturated_filters",
            "saturated filters reported",
            value=sum(s.saturated for _, s, _ in filters),
        )
        yield GaugeMetricFamily(
            "scalebloom_scrape_truncated",
            "1 when the scrape stopped at --max-keys",
            value=int(truncated),
        )
        if "bf_defrag_moves" in info:
            yield GaugeMetricFamily(
                "scalebloom_defrag_moves",
                "INFO bf bf_defrag_moves: filter allocations moved by active defragmentation",
                value=int(info["bf_defrag_moves"]),
            )
        yield GaugeMetricFamily(
            "scalebloom_scrape_duration_seconds",
            "time the scrape took",
            value=time.monotonic() - start,
        )


def serve(url: str, pattern: str, port: int, addr: str, max_keys: int) -> None:
    """Serves ``/metrics`` on ``addr:port`` until interrupted."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector(url, pattern, max_keys))
    start_http_server(port, addr=addr, registry=registry)
    print(f"scalebloom exporter: http://{addr}:{port}/metrics for {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def add_arguments(parser: Any) -> None:
    parser.add_argument("--url", default="redis://localhost:6379/0", help="the server")
    parser.add_argument("--keys", default="*", help="SCAN MATCH pattern (default *)")
    parser.add_argument("--port", type=int, default=9479, help="HTTP port (default 9479)")
    parser.add_argument("--addr", default="0.0.0.0", help="HTTP address (default 0.0.0.0)")
    parser.add_argument(
        "--max-keys",
        type=int,
        default=1000,
        help="filters reported per scrape at most (default 1000)",
    )
