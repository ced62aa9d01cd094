"""``python -m scalebloom check-migration SRC_URL DST_URL``: compares every filter of a source
server (RedisBloom, valkey-bloom, or scalebloom) with its copy on a scalebloom target.

For each key of type ``MBbloom--`` (Bloom), ``SBwindow-`` (scalebloom's windowed Bloom),
``bloomfltr`` (valkey-bloom's Bloom) or ``MBbloomCF`` (cuckoo) on the source (``--keys`` narrows them with a SCAN MATCH pattern) it
checks, on the target: the same type; ``BF.INFO`` / ``CF.INFO`` equal field by field (an
imported filter keeps RedisBloom's layout, so capacity, size, layers, items and expansion all
match; a valkey-bloom filter's every field, ``Error rate``, ``Tightening ratio`` and ``Max
scaled capacity`` included — the last follows the target's ``bf.max-filter-bytes``, which must
be valkey-bloom's ``bloom-memory-usage-limit`` for it to match), and for a windowed filter the window's parameters in ``BF.STATS`` (window, window
capacity, slack, generation, slices, hashes, target error rate); the same ``BF.MEXISTS`` /
``CF.MEXISTS`` answer for every one of ``--sample`` random items that were never added (a
copied filter answers exactly as its source did, false positives included); and, with
``--items FILE`` (lines ``key<TAB>item``), that every item known to be in a filter is present
on both.

It prints one line per key and exits 0 when nothing differs, 1 when something does, and 2 on a
usage error, an unreadable ``--items`` file, or a server that cannot be reached (a bad URL, a
refused connection, a lost one): then one line on stderr says why.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple, Union

import redis

from . import _protocol as p
from .client import Bloom
from .cuckoo import Cuckoo

BLOOM_TYPE = "MBbloom--"
WINDOW_TYPE = "SBwindow-"
CUCKOO_TYPE = "MBbloomCF"
VALKEY_TYPE = "bloomfltr"
#: The key types checked, in the order they are reported.
TYPES = (BLOOM_TYPE, WINDOW_TYPE, VALKEY_TYPE, CUCKOO_TYPE)
#: A windowed filter's parameters, as ``BF.STATS`` reports them.
WINDOW_FIELDS = (
    "window",
    "window_capacity",
    "slack",
    "generation",
    "slices",
    "hashes",
    "target_error_rate",
)


class UsageError(Exception):
    """What stops the check before it can compare (exit status 2): a bad argument, an
    unreadable file, a server that cannot be reached."""


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


def _shown(url: str) -> str:
    """``url`` without its password, for a message."""
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, sep, user = head.partition("://")
    return f"{scheme}{sep}{user.split(':')[0]}:***@{tail}" if ":" in user else url


def _client(url: str) -> Any:
    try:
        return redis.Redis.from_url(url, protocol=2)
    except ValueError as e:  # a URL redis-py cannot read: its scheme, port or query
        raise UsageError(f"bad URL {_shown(url)!r}: {e}") from None


def _type(r: Any, key: bytes) -> str:
    t = r.type(key)
    return t.decode() if isinstance(t, bytes) else str(t)


def _scan(r: Any, pattern: str, type_: str) -> List[bytes]:
    try:
        return sorted(set(r.scan_iter(match=pattern, count=1000, _type=type_)))
    except redis.ResponseError:
        return []  # a server that refuses an unknown type name holds no key of that type


def _compare(rep: KeyReport, what: str, a: Any, b: Any, names: Sequence[str]) -> None:
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        if x != y:
            rep.problems.append(f"{what} {name} {x} -> {y}")


def _compare_params(rep: KeyReport, src: Any, dst: Any, key: bytes, type_: str) -> None:
    """The filter's parameters and counters, equal on both sides."""
    if type_ in (CUCKOO_TYPE, VALKEY_TYPE):
        # Every field the source reports: the target may report more (``Fingerprint bits``).
        cmd = "CF.INFO" if type_ == CUCKOO_TYPE else "BF.INFO"
        sc = p.pairs(src.execute_command(cmd, key))
        dc = p.pairs(dst.execute_command(cmd, key))
        for name, a in sc.items():
            if dc.get(name) != a:
                rep.problems.append(f"{cmd} {name} {a} -> {dc.get(name)}")
        return
    sb, db = Bloom(src), Bloom(dst)
    info_fields = ("capacity", "size", "filters", "items", "expansion")
    _compare(rep, "BF.INFO", sb.info(key), db.info(key), info_fields)
    if type_ == WINDOW_TYPE:
        _compare(rep, "BF.STATS", sb.stats(key), db.stats(key), WINDOW_FIELDS)


def check_key(
    src: Any,
    dst: Any,
    key: bytes,
    type_: str,
    sample: int,
    present: Sequence[bytes],
) -> KeyReport:
    """Compares ``key`` of type ``type_`` on the two servers. A command the target refuses
    is a difference; a lost connection is raised."""
    rep = KeyReport(key.decode("utf-8", "backslashreplace"), type_)
    dtype = _type(dst, key)
    if dtype != type_:
        rep.problems.append(f"type {dtype!r} on the target" if dtype != "none" else "missing")
        return rep
    try:
        _compare_params(rep, src, dst, key, type_)
        _compare_answers(rep, src, dst, key, type_, sample, present)
    except redis.ResponseError as e:
        rep.problems.append(f"refused: {e}")
    return rep


def _mexists_both(
    src: Union[Bloom, Cuckoo], dst: Union[Bloom, Cuckoo], key: bytes, items: Sequence[bytes]
) -> Iterator[Tuple[List[bytes], List[bool], List[bool]]]:
    """``items`` 1000 at a time, each batch with the source's and the target's ``MEXISTS``
    answers."""
    for s in range(0, len(items), 1000):
        chunk = list(items[s : s + 1000])
        yield chunk, src.mexists(key, chunk), dst.mexists(key, chunk)


def _compare_answers(
    rep: KeyReport,
    src: Any,
    dst: Any,
    key: bytes,
    type_: str,
    sample: int,
    present: Sequence[bytes],
) -> None:
    """The same answer for ``sample`` items never added, and every known item present."""
    wrap = Cuckoo if type_ == CUCKOO_TYPE else Bloom
    src_f, dst_f = wrap(src), wrap(dst)
    salt = secrets.token_hex(8)
    absent = [f"scalebloom-check:{salt}:{i}".encode() for i in range(sample)]
    for chunk, a, b in _mexists_both(src_f, dst_f, key, absent):
        rep.absent_checked += len(chunk)
        rep.absent_differ += sum(x != y for x, y in zip(a, b))
    if rep.absent_differ:
        rep.problems.append(
            f"{rep.absent_differ} of {rep.absent_checked} absent items answer differently"
        )
    for chunk, a, b in _mexists_both(src_f, dst_f, key, present):
        rep.present_checked += len(chunk)
        rep.present_missing += sum(not y for y in b)
        if not all(a):
            rep.problems.append(f"{sum(not x for x in a)} listed items are not in the source")
    if rep.present_missing:
        rep.problems.append(f"{rep.present_missing} of {rep.present_checked} known items missing")


def read_items(path: str) -> Dict[bytes, List[bytes]]:
    """``key<TAB>item`` lines (UTF-8), grouped by key."""
    out: Dict[bytes, List[bytes]] = {}
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip(b"\r\n")
                if not line:
                    continue
                key, sep, item = line.partition(b"\t")
                if not sep:
                    raise UsageError(f"{path}:{n}: a line without a tab: {line[:80]!r}")
                out.setdefault(key, []).append(item)
    except OSError as e:
        raise UsageError(f"cannot read --items: {e}") from None
    return out


def run(
    src_url: str,
    dst_url: str,
    pattern: str = "*",
    sample: int = 1000,
    items_file: Optional[str] = None,
    out: TextIO = sys.stdout,
    err: Optional[TextIO] = None,
) -> int:
    """The check; returns the exit status (0 the same, 1 differences, 2 a usage or
    connection error, said in one line on ``err``, default stderr)."""
    try:
        return _check(src_url, dst_url, pattern, sample, items_file, out)
    except UsageError as e:
        print(f"check-migration: {e}", file=err or sys.stderr)
    except redis.RedisError as e:  # a connection lost or timed out during the check
        print(f"check-migration: lost a server: {e}", file=err or sys.stderr)
    return 2


def _check(
    src_url: str,
    dst_url: str,
    pattern: str,
    sample: int,
    items_file: Optional[str],
    out: TextIO,
) -> int:
    if sample < 0:
        raise UsageError(f"--sample must be 0 or more, not {sample}")
    src, dst = _client(src_url), _client(dst_url)
    present = read_items(items_file) if items_file else {}
    for r, which, url in ((src, "source", src_url), (dst, "target", dst_url)):
        try:
            r.ping()
        except redis.RedisError as e:
            raise UsageError(f"cannot reach the {which} {_shown(url)}: {e}") from None
    reports: List[KeyReport] = []
    for type_ in TYPES:
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


def nonnegative(text: str) -> int:
    n = int(text)
    if n < 0:
        raise ValueError(text)
    return n


def add_arguments(parser: Any) -> None:
    parser.add_argument(
        "src_url",
        help="the source server (RedisBloom, valkey-bloom or scalebloom), "
        "e.g. redis://old-host:6379/0",
    )
    parser.add_argument("dst_url", help="the scalebloom server")
    parser.add_argument("--keys", default="*", help="SCAN MATCH pattern (default *)")
    parser.add_argument(
        "--sample",
        type=nonnegative,
        default=1000,
        help="random absent items asked of each filter (default 1000)",
    )
    parser.add_argument("--items", help="file of key<TAB>item lines known to be present")
