"""What the exporter asks the server and how each answer becomes a metric: the SCAN over the
three filter types, the pipelined ``BF.STATS``/``BF.INFO``/``BF.DEBUG`` and ``CF.STATS``/
``CF.INFO`` queries, and the table of per-filter metrics (name, HELP text, source field).
No prometheus_client here: ``exporter.py`` turns these values into metric families.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

SCAN_COUNT = 1000
PIPELINE = 100

# The Redis type names (``TYPE key``): the Bloom chain (plain, counting and blocked filters), the
# windowed filter, the cuckoo filter.
BLOOM, WINDOW, CUCKOO = "MBbloom--", "SBwindow-", "MBbloomCF"
TYPES = (BLOOM, WINDOW, CUCKOO)
# The values of the ``kind`` label.
KINDS = ("plain", "counting", "blocked", "windowed", "cuckoo")

Fields = Dict[str, Any]


@dataclass
class Filter:
    """One filter a scrape reports: its key, its kind and the fields of its replies."""

    key: str
    kind: str
    fields: Fields


@dataclass
class Scan:
    """What a scrape found: the filters it queried, the filters it found but left out (past
    ``--max-keys``) and whether a SCAN stopped at its call budget before the end."""

    filters: List[Filter] = field(default_factory=list)
    skipped: int = 0
    incomplete: bool = False

    @property
    def truncated(self) -> bool:
        return self.incomplete or self.skipped > 0


def reply_fields(reply: Any) -> Fields:
    """A ``BF.STATS``/``BF.INFO``/``CF.STATS``/``CF.INFO`` reply as {field name: value}: a map
    (RESP3) or a flat array of names and values (RESP2)."""
    if isinstance(reply, dict):
        items = list(reply.items())
    elif isinstance(reply, (list, tuple)) and len(reply) % 2 == 0:
        items = [(reply[i], reply[i + 1]) for i in range(0, len(reply), 2)]
    else:
        raise ValueError(f"not a field map: {reply!r}")
    return {_text(k): v for k, v in items}


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def number(v: Any) -> Optional[float]:
    """A field's value as a number: an integer, a double, or a double sent as a string (RESP2);
    None for anything else (a nil, a word)."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, (bytes, str)):
        try:
            return float(_text(v))
        except ValueError:
            return None
    return None


def bloom_kind(debug: Any, stats: Fields) -> str:
    """plain, counting or blocked, from ``BF.DEBUG``'s first layer line (`` counters:<w>`` on a
    counting filter, `` layout:blocked`` on a blocked one); from ``BF.STATS`` (a counting filter
    has ``Saturated counters``) when ``BF.DEBUG`` failed."""
    if isinstance(debug, (list, tuple)) and len(debug) > 1:
        line = _text(debug[1])
        if " counters:" in line:
            return "counting"
        if " layout:blocked" in line:
            return "blocked"
        return "plain"
    return "counting" if "Saturated counters" in stats else "plain"


def _window_ms(f: Fields) -> Optional[float]:
    """A time window's length in ms (``Window`` is ``<n>ms``); None for a count window."""
    w = _text(f.get("Window", ""))
    return float(w[:-2]) if w.endswith("ms") and w[:-2].isdigit() else None


def _field(name: str) -> Callable[[Fields], Optional[float]]:
    return lambda f: number(f.get(name))


def _first(*names: str) -> Callable[[Fields], Optional[float]]:
    def get(f: Fields) -> Optional[float]:
        for n in names:
            if n in f:
                return number(f[n])
        return None

    return get


def _time_window(name: str) -> Callable[[Fields], Optional[float]]:
    """A ms field of a time window, in seconds."""

    def get(f: Fields) -> Optional[float]:
        v = number(f.get(name))
        return v / 1000 if v is not None and _window_ms(f) is not None else None

    return get


def _count_window(name: str) -> Callable[[Fields], Optional[float]]:
    """A field of a count window (``Window`` is ``ITEMS``)."""

    def get(f: Fields) -> Optional[float]:
        return number(f.get(name)) if _text(f.get("Window", "")) == "ITEMS" else None

    return get


def _window_seconds(f: Fields) -> Optional[float]:
    ms = _window_ms(f)
    return ms / 1000 if ms is not None else None


# Per-filter gauges, labelled ``key`` and ``kind``: (name after ``scalebloom_filter_``, HELP,
# how to read the value from a filter's fields; None: the filter has no such number).
PER_FILTER: Sequence[Tuple[str, str, Callable[[Fields], Optional[float]]]] = (
    (
        "target_error_ratio",
        "False-positive probability (0 to 1) the filter was sized for",
        _field("Target error rate"),
    ),
    (
        "estimated_error_ratio",
        "Probability (0 to 1) that an item never added answers present now, computed from the "
        "bits set",
        _field("Estimated error rate"),
    ),
    (
        "fill_ratio",
        "Share (0 to 1) of the filter's bits, over all layers, that are set; a layer is about "
        "half full at its capacity",
        _field("Fill ratio of all filters"),
    ),
    (
        "newest_fill_ratio",
        "Share (0 to 1) of the newest layer's bits that are set",
        _field("Fill ratio of newest filter"),
    ),
    (
        "load_ratio",
        "Share (0 to 1) of the cuckoo filter's slots, over all its sub-filters, that hold an item",
        _field("Load factor"),
    ),
    (
        "newest_load_ratio",
        "Share (0 to 1) of the newest cuckoo sub-filter's slots that hold an item",
        _field("Load factor of newest filter"),
    ),
    (
        "saturated",
        "1 when the filter is due for rotation now (past what it was sized for), else 0",
        _field("Saturated"),
    ),
    (
        "items",
        "Items the filter holds: adds of new items minus deletes; for a windowed filter, the "
        "items its window holds now",
        _first("Items added", "Items", "Number of items inserted"),
    ),
    (
        "estimated_items",
        "Distinct items the set bits account for",
        _field("Estimated items"),
    ),
    (
        "saturated_counters",
        "Counters of a counting filter stuck at their maximum (their items can no longer be "
        "deleted)",
        _field("Saturated counters"),
    ),
    (
        "capacity",
        "Items the filter is sized for: a Bloom filter's within its target error rate, all "
        "layers; a windowed filter's per window; a cuckoo filter's slots, all sub-filters",
        _field("Capacity"),
    ),
    (
        "bytes",
        "Memory of the filter's data in bytes (MEMORY USAGE adds the key's overhead)",
        _field("Size"),
    ),
    (
        "layers",
        "Layers (sub-filters) the filter has; more than 1 means it outgrew its first reservation",
        _field("Number of filters"),
    ),
    (
        "max_layers",
        "Sub-filters the cuckoo filter may have (1 with EXPANSION 0); at this many it refuses "
        "every insert",
        _field("Max filters"),
    ),
    (
        "window_seconds",
        "Length of a time window in seconds: items are remembered at least this long",
        _window_seconds,
    ),
    (
        "oldest_generation_age_seconds",
        "Age in seconds of the oldest generation a time window remembers",
        _time_window("Age of oldest generation"),
    ),
    (
        "oldest_generation_age_items",
        "Items added since the oldest generation a count window remembers began",
        _count_window("Age of oldest generation"),
    ),
)


def scan_keys(r: Any, pattern: str, max_keys: int) -> Tuple[List[Tuple[bytes, str]], int, bool]:
    """Up to ``max_keys`` filter keys with their types, how many more the SCANs found, and
    whether a SCAN stopped at its budget (``max_keys // 10 + 10`` calls of COUNT 1000 per type)
    before the end of the keyspace."""
    keys: List[Tuple[bytes, str]] = []
    found, incomplete = 0, False
    max_calls = max_keys // 10 + 10
    for type_name in TYPES:
        cursor, calls = 0, 0
        while True:
            cursor, batch = r.scan(cursor=cursor, match=pattern, count=SCAN_COUNT, _type=type_name)
            calls += 1
            for k in batch:
                found += 1
                if len(keys) < max_keys:
                    keys.append((k, type_name))
            if int(cursor) == 0:
                break
            if calls >= max_calls:
                incomplete = True
                break
    return keys, found - len(keys), incomplete


def _commands(type_name: str) -> List[Tuple[str, ...]]:
    if type_name == BLOOM:
        return [("BF.STATS",), ("BF.INFO",), ("BF.DEBUG",)]
    if type_name == WINDOW:
        return [("BF.STATS",), ("BF.INFO",)]
    return [("CF.STATS",), ("CF.INFO",)]


def _filter(key: bytes, type_name: str, replies: List[Any]) -> Optional[Filter]:
    """The filter from its replies; None when the key went away (or changed type) since the
    SCAN saw it. A cuckoo filter on a server without ``CF.STATS`` keeps ``CF.INFO``'s fields."""
    stats, info = replies[0], replies[1]
    if isinstance(info, Exception):
        return None
    fields = reply_fields(info)
    if not isinstance(stats, Exception):
        fields.update(reply_fields(stats))
    elif type_name != CUCKOO:
        return None
    if type_name == BLOOM:
        kind = bloom_kind(replies[2], fields)
    else:
        kind = "windowed" if type_name == WINDOW else "cuckoo"
    return Filter(key.decode("utf-8", "backslashreplace"), kind, fields)


def collect(r: Any, pattern: str, max_keys: int) -> Scan:
    """The filters a scrape reports: SCAN, then the queries, pipelined ``PIPELINE`` keys per
    round trip."""
    keys, skipped, incomplete = scan_keys(r, pattern, max_keys)
    out = Scan(skipped=skipped, incomplete=incomplete)
    for s in range(0, len(keys), PIPELINE):
        chunk = keys[s : s + PIPELINE]
        pipe = r.pipeline(transaction=False)
        for k, t in chunk:
            for cmd in _commands(t):
                pipe.execute_command(*cmd, k)
        replies = pipe.execute(raise_on_error=False)
        i = 0
        for k, t in chunk:
            n = len(_commands(t))
            f = _filter(k, t, replies[i : i + n])
            i += n
            if f is not None:
                out.filters.append(f)
    return out
