"""``python -m scalebloom check-migration SRC_URL DST_URL``: compares every Bloom (and cuckoo)
key of a RedisBloom source with its copy on a scalebloom target.

For each key of type ``MBbloom--`` on the source (``--keys`` narrows them with a SCAN MATCH
pattern) it checks, on the target: the same type; ``BF.INFO`` equal field by field (capacity,
size, layers, items, expansion: an imported filter keeps RedisBloom's layout, so all of them
match); the same ``BF.MEXISTS`` answer for every one of ``--sample`` random items that were
never added (an imported filter answers exactly as RedisBloom did, false positives included);
and, with ``--items FILE`` (lines ``key<TAB>item``), that every item known to be in a filter is
present on both. Cuckoo keys (``MBbloomCF``) get the same checks with ``CF.INFO`` (every field:
an imported cuckoo filter keeps RedisBloom's layout) and ``CF.MEXISTS``.

It prints one line per key and exits 0 when nothing differs, 1 when something does, 2 when a
server cannot be reached.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, TextIO

import redis

from . import _protocol as p

BLOOM_TYPE = "MBbloom--"
CUCKOO_TYPE = "MBbloomCF"


@dataclass
class KeyReport:
    """What the check found for one key."""

    key: str
    type: str
    problems: List[str] = field(default_factory=list)
    absent_checked: int = 0
    absent_differ: int = 0
    present_checked: int = 0
    present_missing: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def _client(url: str) -> Any:
    return redis.Redis.from_url(url, protocol=2)


def _type(r: Any, key: bytes) -> str:
    t = r.type(key)
    return t.decode() if isinstance(t, bytes) else str(t)


def _scan(r: Any, pattern: str, type_: str) -> List[bytes]:
    return sorted(set(r.scan_iter(match=pattern, count=1000, _type=type_)))


def check_key(
    src: Any,
    dst: Any,
    key: bytes,
    type_: str,
    sample: int,
    present: Sequence[bytes],
) -> KeyReport:
    rep = KeyReport(key.decode("utf-8", "backslashreplace"), type_)
    dtype = _type(dst, key)
    if dtype != type_:
        rep.problems.append(f"type {dtype!r} on the target" if dtype != "none" else "missing")
        return rep
    prefix = "BF" if type_ == BLOOM_TYPE else "CF"
    mexists = f"{prefix}.MEXISTS"
    if type_ == BLOOM_TYPE:
        si = p.parse_info(src.execute_command("BF.INFO", key))
        di = p.parse_info(dst.execute_command("BF.INFO", key))
        for name in ("capacity", "size", "filters", "items", "expansion"):
            a, b = getattr(si, name), getattr(di, name)
            if a != b:
                rep.problems.append(f"BF.INFO {name} {a} -> {b}")
    else:
        sc = p.pairs(src.execute_command("CF.INFO", key))
        dc = p.pairs(dst.execute_command("CF.INFO", key))
        for name, a in sc.items():
            if dc.get(name) != a:
                rep.problems.append(f"CF.INFO {name} {a} -> {dc.get(name)}")
    salt = secrets.token_hex(8)
    absent = [f"scalebloom-check:{salt}:{i}".encode() for i in range(sample)]
    for s in range(0, len(absent), 1000):
        chunk = absent[s : s + 1000]
        a = p.to_bools(src.execute_command(mexists, key, *chunk))
        b = p.to_bools(dst.execute_command(mexists, key, *chunk))
        rep.absent_checked += len(chunk)
        rep.absent_differ += sum(x != y for x, y in zip(a, b))
    if rep.absent_differ:
        rep.problems.append(
            f"{rep.absent_differ} of {rep.absent_checked} absent items answer differently"
        )
    for s in range(0, len(present), 1000):
        chunk = list(present[s : s + 1000])
        a = p.to_bools(src.execute_command(mexists, key, *chunk))
        b = p.to_bools(dst.execute_command(mexists, key, *chunk))
        rep.present_checked += len(chunk)
        rep.present_missing += sum(not y for y in b)
        if not all(a):
            rep.problems.append(f"{sum(not x for x in a)} listed items are not in the source")
    if rep.present_missing:
        rep.problems.append(f"{rep.present_missing} of {rep.present_checked} known items missing")
    return rep


def read_items(path: str) -> Dict[bytes, List[bytes]]:
    """``key<TAB>item`` lines (UTF-8), grouped by key."""
    out: Dict[bytes, List[bytes]] = {}
    with open(path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            key, sep, item = line.partition(b"\t")
            if not sep:
                raise ValueError(f"{path}: line without a tab: {line[:80]!r}")
            out.setdefault(key, []).append(item)
    return out


def run(
    src_url: str,
    dst_url: str,
    pattern: str = "*",
    sample: int = 1000,
    items_file: Optional[str] = None,
    out: TextIO = sys.stdout,
) -> int:
    """The check; returns the exit status."""
    try:
        src, dst = _client(src_url), _client(dst_url)
        src.ping()
        dst.ping()
    except redis.RedisError as e:
        print(f"check-migration: cannot reach a server: {e}", file=out)
        return 2
    present = read_items(items_file) if items_file else {}
    reports: List[KeyReport] = []
    for type_ in (BLOOM_TYPE, CUCKOO_TYPE):
        for key in _scan(src, pattern, type_):
            reports.append(check_key(src, dst, key, type_, sample, present.get(key, [])))
    unknown = sorted(set(present) - {r.key.encode() for r in reports})
    width = max([len(r.key) for r in reports] + [3])
    print(
        f"{'key':<{width}}  {'type':<10} {'absent differ':>14} {'known missing':>14}  result",
        file=out,
    )
    for r in reports:
        absent = f"{r.absent_differ}/{r.absent_checked}"
        known = f"{r.present_missing}/{r.present_checked}"
        result = "ok" if r.ok else "DIFFERS: " + "; ".join(r.problems)
        print(f"{r.key:<{width}}  {r.type:<10} {absent:>14} {known:>14}  {result}", file=out)
    for k in unknown:
        print(
            f"{k.decode('utf-8', 'backslashreplace')}: listed in --items but not a filter on the source",
            file=out,
        )
    bad = sum(not r.ok for r in reports) + len(unknown)
    print(f"{len(reports)} keys checked, {bad} with differences", file=out)
    return 1 if bad else 0


def add_arguments(parser: Any) -> None:
    parser.add_argument("src_url", help="the RedisBloom server, e.g. redis://old-host:6379/0")
    parser.add_argument("dst_url", help="the scalebloom server")
    parser.add_argument("--keys", default="*", help="SCAN MATCH pattern (default *)")
    parser.add_argument(
        "--sample",
        type=int,
        default=1000,
        help="random absent items asked of each filter (default 1000)",
    )
    parser.add_argument("--items", help="file of key<TAB>item lines known to be present")
