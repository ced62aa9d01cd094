"""Command building and reply parsing, shared by the sync and asyncio wrappers.

Every command is built as a :class:`Call`: the arguments to send and the function that turns
the server's reply into a Python value. The sync wrapper runs ``client.execute_command(*args)``
and the asyncio wrapper awaits it; both hand the reply to the same parser. The parsers accept
every shape redis-py may hand over for the same reply:

- RESP2 (integers 1/0, flat arrays, doubles as bulk strings) and RESP3 (booleans, maps,
  doubles);
- ``decode_responses=True`` (``str``) or not (``bytes``);
- a client on which ``r.bf()`` ran first: redis-py's Bloom helper registers response
  callbacks on the client itself (``BF.INFO`` becomes a ``BFInfo`` object, ``BF.RESERVE`` a
  bool), and those then apply to every ``BF.INFO`` sent through that client.

Extension point: a creation option (``WINDOW``, the cuckoo filter's options) is one more
keyword of :class:`CreateOptions` and one more clause in :meth:`CreateOptions.args`; a new
command is one more builder function here and one method in each wrapper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from redis.exceptions import DataError, ResponseError

#: What an item may be: what redis-py itself sends as a command argument.
Item = Union[bytes, str, int, float, memoryview]
Arg = Union[bytes, str, int, float, memoryview]

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One command: ``args`` to send, ``parse`` for its reply."""

    args: Tuple[Arg, ...]
    parse: Callable[[Any], T]


def encode_item(item: Item) -> bytes:
    """The bytes redis-py sends for ``item`` (its ``Encoder`` rules, without a charset choice:
    ``str`` is UTF-8). The partitioned filter routes on exactly these bytes."""
    if isinstance(item, bytes):
        return item
    if isinstance(item, memoryview):
        return item.tobytes()
    if isinstance(item, bool):
        raise DataError(
            "Invalid input of type: 'bool'. Convert to a bytes, string, int or float first."
        )
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, int):
        return repr(item).encode()
    if isinstance(item, float):
        return repr(item).encode()
    raise DataError(
        f"Invalid input of type: {type(item).__name__!r}. Convert to a bytes, string, int or float first."
    )


# ---------------------------------------------------------------------------------------------
# Reply normalisation
# ---------------------------------------------------------------------------------------------


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _raise_if_error(v: Any) -> Any:
    if isinstance(v, Exception):
        raise v
    return v


def to_bool(v: Any) -> bool:
    """1/0 (RESP2), true/false (RESP3), or an error element, which is raised."""
    _raise_if_error(v)
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v != 0
    if isinstance(v, (bytes, str)):
        return int(v) != 0
    raise ResponseError(f"unexpected reply {v!r}")


def to_bools(v: Any) -> List[bool]:
    """An array of 1/0 or booleans. An error element (a full nonscaling filter, a refused
    allocation: the server stopped there) is raised; the items before it went in."""
    _raise_if_error(v)
    out = [x == 1 for x in v]  # 1 (RESP2) and True (RESP3) are == 1; the fast path
    for i, b in enumerate(out):
        if not b and v[i] != 0:  # an error element, or a reply of another shape
            out[i] = to_bool(v[i])
    return out


def to_ok(v: Any) -> bool:
    _raise_if_error(v)
    if v is True or _text(v) == "OK":
        return True
    raise ResponseError(f"unexpected reply {v!r}")


def to_int(v: Any) -> int:
    _raise_if_error(v)
    return int(v)


def to_float(v: Any) -> float:
    return float(_text(v)) if isinstance(v, (bytes, str)) else float(v)


def pairs(v: Any) -> Mapping[str, Any]:
    """A RESP3 map or a RESP2 flat array of field, value pairs, with ``str`` keys."""
    _raise_if_error(v)
    if isinstance(v, Mapping):
        return {_text(k): x for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return {_text(v[i]): v[i + 1] for i in range(0, len(v) - 1, 2)}
    raise ResponseError(f"unexpected reply {v!r}")


# ---------------------------------------------------------------------------------------------
# Reply types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BloomInfo:
    """``BF.INFO key``."""

    capacity: int
    """``Capacity``: items the filter holds at its error rate before it adds a layer."""
    size: int
    """``Size``: bytes of the filter (what ``MEMORY USAGE`` reports, less the key overhead)."""
    filters: int
    """``Number of filters``: layers."""
    items: int
    """``Number of items inserted``."""
    expansion: Optional[int]
    """``Expansion rate``; ``None`` for a nonscaling filter."""


def parse_info(v: Any) -> BloomInfo:
    if hasattr(v, "insertedNum"):  # redis-py's BFInfo, after r.bf() registered its callback
        exp = getattr(v, "expansionRate", None)
        return BloomInfo(
            int(v.capacity),
            int(v.size),
            int(v.filterNum),
            int(v.insertedNum),
            None if exp is None else int(exp),
        )
    d = pairs(v)
    exp = d.get("Expansion rate")
    return BloomInfo(
        capacity=int(d["Capacity"]),
        size=int(d["Size"]),
        filters=int(d["Number of filters"]),
        items=int(d["Number of items inserted"]),
        expansion=None if exp is None else int(exp),
    )


@dataclass(frozen=True)
class BloomStats:
    """``BF.STATS key``: how full a filter is, computed by the server from the bits set."""

    target_error_rate: float
    """``Target error rate``: the error rate the filter was created for."""
    estimated_error_rate: float
    """``Estimated error rate``: the probability that an item never added answers present now."""
    fill_ratio_newest: float
    """``Fill ratio of newest filter``: set bits ÷ bits of the newest layer."""
    fill_ratio_all: float
    """``Fill ratio of all filters``."""
    estimated_items: int
    """``Estimated items``: distinct items the set bits account for."""
    items_added: int
    """``Items added``: ``BF.CARD``'s counter."""
    saturated: bool
    """``Saturated``: the estimated error rate is above the target."""
    saturated_counters: Optional[int] = None
    """``Saturated counters``: counting filters only, counters stuck at their maximum."""


def parse_stats(v: Any) -> BloomStats:
    d = pairs(v)
    sc = d.get("Saturated counters")
    return BloomStats(
        target_error_rate=to_float(d["Target error rate"]),
        estimated_error_rate=to_float(d["Estimated error rate"]),
        fill_ratio_newest=to_float(d["Fill ratio of newest filter"]),
        fill_ratio_all=to_float(d["Fill ratio of all filters"]),
        estimated_items=int(d["Estimated items"]),
        items_added=int(d["Items added"]),
        saturated=to_bool(d["Saturated"]),
        saturated_counters=None if sc is None else int(sc),
    )


# ---------------------------------------------------------------------------------------------
# Creation options
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateOptions:
    """Options a filter is created with (``BF.RESERVE``'s and ``BF.INSERT``'s tail).

    ``counting`` is scalebloom's ``COUNTING 4|8``: a counting filter whose items
    :meth:`~scalebloom.Bloom.delete` can remove. Options the server gains later (``WINDOW``,
    the cuckoo filter's) become fields here, each with its clause in :meth:`args`.
    """

    expansion: Optional[int] = None
    nonscaling: bool = False
    counting: Optional[int] = None

    def args(self) -> List[Arg]:
        out: List[Arg] = []
        if self.expansion is not None:
            out += ["EXPANSION", self.expansion]
        if self.nonscaling:
            out.append("NONSCALING")
        if self.counting is not None:
            if self.counting not in (4, 8):
                raise DataError("counting must be 4 or 8 (bits per counter)")
            out += ["COUNTING", self.counting]
        return out

    @property
    def kind(self) -> str:
        """``bloom``, ``counting4`` or ``counting8`` (the partitioned filter's metadata)."""
        return "bloom" if self.counting is None else f"counting{self.counting}"


# ---------------------------------------------------------------------------------------------
# Builders: one per command
# ---------------------------------------------------------------------------------------------


def reserve(key: Arg, error_rate: float, capacity: int, opts: CreateOptions) -> Call[bool]:
    return Call(("BF.RESERVE", key, error_rate, capacity, *opts.args()), to_ok)


def add(key: Arg, item: Item) -> Call[bool]:
    return Call(("BF.ADD", key, item), to_bool)


def madd(key: Arg, items: Sequence[Item]) -> Call[List[bool]]:
    return Call(("BF.MADD", key, *items), to_bools)


def insert(
    key: Arg,
    items: Sequence[Item],
    capacity: Optional[int],
    error_rate: Optional[float],
    nocreate: bool,
    opts: CreateOptions,
) -> Call[List[bool]]:
    args: List[Arg] = ["BF.INSERT", key]
    if capacity is not None:
        args += ["CAPACITY", capacity]
    if error_rate is not None:
        args += ["ERROR", error_rate]
    if nocreate:
        args.append("NOCREATE")
    args += opts.args()
    args.append("ITEMS")
    args += list(items)
    return Call(tuple(args), to_bools)


def exists(key: Arg, item: Item) -> Call[bool]:
    return Call(("BF.EXISTS", key, item), to_bool)


def mexists(key: Arg, items: Sequence[Item]) -> Call[List[bool]]:
    return Call(("BF.MEXISTS", key, *items), to_bools)


def delete(key: Arg, item: Item) -> Call[bool]:
    return Call(("BF.DEL", key, item), to_bool)


def mdelete(key: Arg, items: Sequence[Item]) -> Call[List[bool]]:
    return Call(("BF.MDEL", key, *items), to_bools)


def card(key: Arg) -> Call[int]:
    return Call(("BF.CARD", key), to_int)


def info(key: Arg) -> Call[BloomInfo]:
    return Call(("BF.INFO", key), parse_info)


def stats(key: Arg) -> Call[BloomStats]:
    return Call(("BF.STATS", key), parse_stats)
