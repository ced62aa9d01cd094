"""What a command is, and how its reply becomes a Python value, shared by sync and asyncio.

Every command is built as a :class:`Call`: the arguments to send and the function that turns
the server's reply into a Python value. The wrappers' methods build calls and nothing else;
an executor (:mod:`scalebloom._exec`) sends them, through ``client.execute_command`` (sync)
or ``await client.execute_command`` (asyncio), and hands the reply to the call's parser. The
parsers accept every shape redis-py may hand over for the same reply:

- RESP2 (integers 1/0, flat arrays, doubles as bulk strings) and RESP3 (booleans, maps,
  doubles);
- ``decode_responses=True`` (``str``) or not (``bytes``);
- a client on which ``r.bf()`` ran first: redis-py's Bloom helper registers response
  callbacks on the client itself (``BF.INFO`` becomes a ``BFInfo`` object, ``BF.RESERVE`` a
  bool), and those then apply to every ``BF.INFO`` sent through that client.

Extension point: a creation option is one more keyword of :class:`CreateOptions` and one more
clause in :meth:`CreateOptions.args`; a new command is one method of a commands class
(``BloomCommands``, ``CuckooCommands``) that returns a :class:`Call`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    SupportsIndex,
    Tuple,
    TypeVar,
    Union,
)

from redis.exceptions import DataError, ResponseError

#: What an item may be: what redis-py itself sends as a command argument.
Item = Union[bytes, str, int, float, memoryview]
Arg = Union[bytes, str, int, float, memoryview]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: redis-py's option that reads a reply's bulk strings as bytes whatever ``decode_responses``
#: says (``redis.client.NEVER_DECODE``): SCANDUMP's chunks are binary.
NEVER_DECODE = "NEVER_DECODE"


class SequenceNotStr(Protocol[T_co]):
    """A sequence that is not a ``str`` or ``bytes``: a list, a tuple, a ``range``.

    ``str`` and ``bytes`` are sequences too (of characters, of ints), so ``madd(key, "abc")``
    would add ``a``, ``b`` and ``c``. They differ from a list in one signature:
    ``str.__contains__`` takes a ``str`` and ``bytes.__contains__`` a buffer or an int, where
    this protocol asks for any ``object``; so a type checker refuses them here, and the
    methods refuse them at run time with ``TypeError``."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[T_co]: ...

    def __getitem__(self, index: SupportsIndex, /) -> T_co: ...

    def __contains__(self, value: object, /) -> bool: ...


#: The items of a batch method (``madd``, ``mexists``, ``insert`` …).
Items = SequenceNotStr[Item]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One command: ``args`` to send, ``parse`` for its reply, and redis-py ``options``
    (keyword arguments of ``execute_command``, such as :data:`NEVER_DECODE`)."""

    args: Tuple[Arg, ...]
    parse: Callable[[Any], T]
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Cursor(Generic[T]):
    """A command repeated until it says it is done: ``first`` is sent, and while its parsed
    reply is not ``None`` that value is yielded and ``follow(value)`` sent next."""

    first: Call[Optional[T]]
    follow: Callable[[T], Call[Optional[T]]]


#: One ``SCANDUMP`` step: the iterator to give ``LOADCHUNK`` with the data, and the data.
Chunk = Tuple[int, bytes]


def items_of(items: Items) -> Items:
    """``items`` itself, or ``TypeError`` for a ``str``/``bytes``/``bytearray``/``memoryview``
    given where a sequence of items is expected."""
    if isinstance(items, (str, bytes, bytearray, memoryview)):
        raise TypeError(
            f"items must be a sequence of items (a list or a tuple), not {type(items).__name__}: "
            f"wrap a single item in a list"
        )
    return items


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


def to_text(v: Any) -> str:
    _raise_if_error(v)
    return _text(v)


def to_texts(v: Any) -> List[str]:
    _raise_if_error(v)
    return [_text(x) for x in v]


def pairs(v: Any) -> Mapping[str, Any]:
    """A RESP3 map or a RESP2 flat array of field, value pairs, with ``str`` keys."""
    _raise_if_error(v)
    if isinstance(v, Mapping):
        return {_text(k): x for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return {_text(v[i]): v[i + 1] for i in range(0, len(v) - 1, 2)}
    raise ResponseError(f"unexpected reply {v!r}")


def to_chunk(v: Any) -> Optional[Chunk]:
    """A ``SCANDUMP`` reply ``[next, data]``: ``None`` at the end (``next`` 0)."""
    _raise_if_error(v)
    it = int(v[0])
    if it == 0:
        return None
    data = v[1]
    return it, data if isinstance(data, bytes) else encode_item(data)


# ---------------------------------------------------------------------------------------------
# Bloom reply types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BloomInfo:
    """``BF.INFO key``."""

    capacity: int
    """``Capacity``: items the filter holds at its error rate before it adds a layer (a
    windowed filter: its window capacity)."""
    size: int
    """``Size``: bytes of the filter (what ``MEMORY USAGE`` reports, less the key overhead)."""
    filters: int
    """``Number of filters``: layers (1 for a windowed filter)."""
    items: int
    """``Number of items inserted``."""
    expansion: Optional[int]
    """``Expansion rate``; ``None`` for a nonscaling or windowed filter."""


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


#: A windowed filter's window: ``"items"`` (the last ``capacity`` items) or a duration.
WindowLength = Union[timedelta, str]
#: A Bloom filter's layout (``LAYOUT``).
Layout = Literal["blocked", "standard"]


@dataclass(frozen=True)
class BloomStats:
    """``BF.STATS key``: how full a filter is, computed by the server from the bits set.

    The server answers different fields for a windowed filter (``WINDOW``): it has no layers,
    so the fill fields are ``None``, and the window fields, ``None`` for every other filter,
    describe its ring of generations (docs/windowed.md)."""

    target_error_rate: float
    """``Target error rate``: the error rate the filter was created for."""
    estimated_error_rate: float
    """``Estimated error rate``: the probability that an item never added answers present now."""
    fill_ratio_newest: Optional[float]
    """``Fill ratio of newest filter``: set bits ÷ bits of the newest layer (``None``:
    windowed)."""
    fill_ratio_all: Optional[float]
    """``Fill ratio of all filters`` (``None``: windowed)."""
    estimated_items: Optional[int]
    """``Estimated items``: distinct items the set bits account for (``None``: windowed)."""
    items_added: int
    """``Items added``: ``BF.CARD``'s counter (a windowed filter: the items it holds now)."""
    saturated: bool
    """``Saturated``: the estimated error rate is above the target."""
    saturated_counters: Optional[int] = None
    """``Saturated counters``: counting filters only, counters stuck at their maximum."""
    window: Optional[Union[timedelta, str]] = None
    """``Window``: a ``timedelta`` for a time window, ``"items"`` for a count window."""
    window_capacity: Optional[int] = None
    """``Window capacity``: the items one window is sized for."""
    slack: Optional[int] = None
    """``Slack``: how much later than the window an item may be forgotten (ms, or items)."""
    oldest_generation_age: Optional[int] = None
    """``Age of oldest generation`` (ms, or items)."""
    generation: Optional[int] = None
    """``Generation``: the length of one generation (ms, or items)."""
    slices: Optional[int] = None
    """``Slices``: the generations of the ring."""
    hashes: Optional[int] = None
    """``Hashes``: the bits an add sets."""

    @property
    def windowed(self) -> bool:
        """Whether these are a windowed filter's statistics."""
        return self.window is not None


def _opt_int(d: Mapping[str, Any], name: str) -> Optional[int]:
    v = d.get(name)
    return None if v is None else int(v)


def _window_of(v: Any) -> Union[timedelta, str]:
    t = _text(v)
    if t.upper() == "ITEMS":
        return "items"
    if t.endswith("ms") and t[:-2].isdigit():
        return timedelta(milliseconds=int(t[:-2]))
    return t


def parse_stats(v: Any) -> BloomStats:
    d = pairs(v)
    fill_newest, fill_all = d.get("Fill ratio of newest filter"), d.get("Fill ratio of all filters")
    window = d.get("Window")
    return BloomStats(
        target_error_rate=to_float(d["Target error rate"]),
        estimated_error_rate=to_float(d["Estimated error rate"]),
        fill_ratio_newest=None if fill_newest is None else to_float(fill_newest),
        fill_ratio_all=None if fill_all is None else to_float(fill_all),
        estimated_items=_opt_int(d, "Estimated items"),
        items_added=int(d["Items added"]),
        saturated=to_bool(d["Saturated"]),
        saturated_counters=_opt_int(d, "Saturated counters"),
        window=None if window is None else _window_of(window),
        window_capacity=_opt_int(d, "Window capacity"),
        slack=_opt_int(d, "Slack"),
        oldest_generation_age=_opt_int(d, "Age of oldest generation"),
        generation=_opt_int(d, "Generation"),
        slices=_opt_int(d, "Slices"),
        hashes=_opt_int(d, "Hashes"),
    )


# ---------------------------------------------------------------------------------------------
# Creation options
# ---------------------------------------------------------------------------------------------


def window_arg(window: WindowLength) -> str:
    """``WINDOW``'s argument: ``"items"`` → ``ITEMS``, a ``timedelta`` → ``<n>ms`` (a positive
    whole number of milliseconds), a duration string (``"10m"``, ``"500ms"``, ``"2h"``, ``"7d"``)
    as it is (the server checks it)."""
    if isinstance(window, timedelta):
        ms, rest = divmod(window, timedelta(milliseconds=1))
        if rest or ms < 1:
            raise DataError(f"a window must be a positive whole number of milliseconds: {window!r}")
        return f"{ms}ms"
    if isinstance(window, str):
        return "ITEMS" if window.lower() == "items" else window
    raise DataError(f"window must be 'items', a duration string or a timedelta: {window!r}")


#: The module's refusal of ``LIKE`` beside an option that sets what it copies (without its
#: ``ERR`` prefix); the wrappers raise it as ``DataError`` before sending anything.
LIKE_WITH_OPTIONS = (
    "LIKE copies the other filter's capacity, error rate and options: give no CAPACITY, "
    "ERROR, EXPANSION, NONSCALING, COUNTING, WINDOW or LAYOUT with it"
)


@dataclass(frozen=True)
class CreateOptions:
    """Options a Bloom filter is created with (``BF.RESERVE``'s and ``BF.INSERT``'s tail).

    ``counting`` is scalebloom's ``COUNTING 4|8``: a counting filter whose items
    :meth:`~scalebloom.Bloom.delete` can remove. ``window`` is ``WINDOW``: a filter whose items
    expire (``"items"``, a duration string such as ``"10m"``, or a ``timedelta``). ``layout``
    is ``LAYOUT``: ``"blocked"`` (cache-line-blocked) or ``"standard"``; ``None`` leaves it to
    the server's ``bf-layout`` setting. ``like`` is ``LIKE otherkey``: the new filter copies
    the other's shape, kind and seed (so :meth:`~scalebloom.Bloom.merge` ORs the two into one
    layer); it takes none of the other options (:data:`LIKE_WITH_OPTIONS`, raised as
    ``DataError`` before anything is sent).
    """

    expansion: Optional[int] = None
    nonscaling: bool = False
    counting: Optional[int] = None
    window: Optional[WindowLength] = None
    layout: Optional[Layout] = None
    like: Optional[Arg] = None

    def args(self) -> List[Arg]:
        out = self._options()
        if self.like is not None:
            if out:
                raise DataError(LIKE_WITH_OPTIONS)
            out += ["LIKE", self.like]
        return out

    def _options(self) -> List[Arg]:
        out: List[Arg] = []
        if self.expansion is not None:
            out += ["EXPANSION", self.expansion]
        if self.nonscaling:
            out.append("NONSCALING")
        if self.counting is not None:
            if self.counting not in (4, 8):
                raise DataError("counting must be 4 or 8 (bits per counter)")
            out += ["COUNTING", self.counting]
        if self.window is not None:
            out += ["WINDOW", window_arg(self.window)]
        if self.layout is not None:
            if self.layout not in ("blocked", "standard"):
                raise DataError(f"layout must be 'blocked' or 'standard': {self.layout!r}")
            out += ["LAYOUT", self.layout.upper()]
        return out

    @property
    def kind(self) -> str:
        """``bloom``, ``counting4`` or ``counting8`` (the partitioned filter's metadata)."""
        return "bloom" if self.counting is None else f"counting{self.counting}"


def bloom_reserve(
    key: Arg, error_rate: float, capacity: int, opts: CreateOptions
) -> Call[bool]:
    """``BF.RESERVE key error_rate capacity …``: the Bloom wrapper's ``reserve`` and the
    partitioned filter's creation of each partition."""
    return Call(("BF.RESERVE", key, error_rate, capacity, *opts.args()), to_ok)


def flatten(mapping: Dict[str, str]) -> List[Arg]:
    """``{a: 1, b: 2}`` → ``[a, 1, b, 2]`` (``HSET``'s field value … tail)."""
    out: List[Arg] = []
    for k, v in mapping.items():
        out += [k, v]
    return out


def scandump_cursor(verb: str, key: Arg) -> Cursor[Chunk]:
    """``BF.SCANDUMP`` / ``CF.SCANDUMP key iterator`` from iterator 0 until the server
    answers iterator 0 again; each reply's data read as bytes."""

    def at(it: int) -> Call[Optional[Chunk]]:
        return Call((verb, key, it), to_chunk, {NEVER_DECODE: []})

    return Cursor(at(0), lambda chunk: at(chunk[0]))


def loadchunk_call(verb: str, key: Arg) -> Callable[[Chunk], Call[bool]]:
    """``BF.LOADCHUNK`` / ``CF.LOADCHUNK key iterator data`` for one chunk."""
    return lambda chunk: Call((verb, key, chunk[0], chunk[1]), to_ok)
