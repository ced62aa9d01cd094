"""One implementation, two executors: how a method written once runs sync and under asyncio.

A command method is written once, in a commands class, and says only *what* to send: it
returns a :class:`~scalebloom._protocol.Call` (arguments and reply parser), a
:class:`~scalebloom._protocol.Cursor` (a command repeated until done, such as ``SCANDUMP``),
or, for work of several round trips (the partitioned filter's), a generator that yields the
steps to send and receives their raw replies. The decorators below turn such a method into a
descriptor; the class that uses it decides *how* it runs by deriving from :class:`SyncRunner`
or :class:`AsyncRunner` and defining ``_send(step) -> reply`` (sync) or ``async _send(step)``
(:class:`SyncClient` / :class:`AsyncClient` send a call through a redis-py client; the
partitioned filter sends a batch through its router):

    class BloomCommands:
        @command
        def card(self, key: Arg) -> Call[int]:
            return Call(("BF.CARD", key), to_int)

    class Bloom(SyncClient, BloomCommands): ...        # bf.card("k") -> int
    class AsyncBloom(AsyncClient, BloomCommands): ...  # await abf.card("k") -> int

The descriptors' ``__get__`` overloads give a type checker the right signature for each
side: the method's own parameters, returning ``T`` on a :class:`SyncRunner` and
``Awaitable[T]`` on an :class:`AsyncRunner`. At run time the bound method is made once per
instance and cached in its ``__dict__``; on the class the attribute is the method as written
(so ``help()`` and documentation tools list it with its parameters and docstring).
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import (
    Any,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Generic,
    Iterable,
    Iterator,
    Optional,
    Protocol,
    TypeVar,
    Union,
    overload,
)

from redis.exceptions import RedisError

from ._protocol import Arg, Call, Chunk, Cursor

if sys.version_info >= (3, 10):
    from typing import Concatenate, ParamSpec
else:  # pragma: no cover - Python 3.9
    from typing_extensions import Concatenate, ParamSpec

P = ParamSpec("P")
T = TypeVar("T")

#: A method of several round trips: yields steps, receives each step's raw reply (or has the
#: error that sending it raised thrown in), returns the method's value.
Proc = Generator[Any, Any, T]


class SyncRunner:
    """The base of a sync wrapper: ``_send`` sends one step and returns its raw reply."""

    _asyncio = False

    def _send(self, step: Any) -> Any:
        raise NotImplementedError


class AsyncRunner:
    """The base of an asyncio wrapper: ``await _send(step)`` sends one step."""

    _asyncio = True

    async def _send(self, step: Any) -> Any:
        raise NotImplementedError


# A runner of several steps is written once, as a coroutine that awaits ``send``. The asyncio
# side awaits it; the sync side runs it with :func:`_now`, its sync ``send`` made awaitable by
# :func:`_awaiting`: such a coroutine never waits, so it ends on its first resumption.


def _awaiting(send: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
    """A sync ``send`` as a coroutine function that returns at once."""

    async def asend(step: Any) -> Any:
        return send(step)

    return asend


def _now(run: Coroutine[Any, Any, T]) -> T:
    """The value of a coroutine that never waits (a runner below given a sync ``send``),
    run to its end without an event loop."""
    try:
        run.send(None)
    except StopIteration as stop:
        value: T = stop.value
        return value
    run.close()
    raise RuntimeError("a sync send waited for an event loop")


async def adrive(send: Callable[[Any], Awaitable[Any]], proc: Proc[T]) -> T:
    """Runs a :data:`Proc` with an asyncio ``send``."""
    try:
        step = next(proc)
        while True:
            try:
                reply = await send(step)
            except RedisError as e:
                step = proc.throw(e)
                continue
            step = proc.send(reply)
    except StopIteration as stop:
        value: T = stop.value
        return value


def drive(send: Callable[[Any], Any], proc: Proc[T]) -> T:
    """Runs a :data:`Proc` with a sync ``send``: :func:`adrive`, which never waits here."""
    return _now(adrive(_awaiting(send), proc))


async def _load(
    send: Callable[[Any], Awaitable[Any]],
    one: Callable[[Chunk], Call[Any]],
    chunks: Union[Iterable[Chunk], AsyncIterable[Chunk]],
) -> int:
    """Sends ``one(chunk)`` for each chunk in order and returns how many were sent; stops at
    the first error."""

    async def put(chunk: Chunk) -> None:
        call = one(chunk)
        call.parse(await send(call))

    n = 0
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            await put(chunk)
            n += 1
    else:
        for chunk in chunks:
            await put(chunk)
            n += 1
    return n


#: What the written method is (the attribute on the class), and what it is bound to a
#: :class:`SyncRunner` and to an :class:`AsyncRunner`.
Written = TypeVar("Written", bound=Callable[..., Any])
OnSync = TypeVar("OnSync")
OnAsync = TypeVar("OnAsync")


class _Descriptor(Generic[Written, OnSync, OnAsync]):
    """Binds the method for an instance once, and caches it in the instance's ``__dict__``.
    A kind of method (below) says what its three faces are and how it runs (``_bind``)."""

    name = ""

    def __init__(self, build: Written) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: Any, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: Any) -> Written: ...

    @overload
    def __get__(self, obj: SyncRunner, owner: Any) -> OnSync: ...

    @overload
    def __get__(self, obj: AsyncRunner, owner: Any) -> OnAsync: ...

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self.build if obj is None else self._bound(obj)

    def _bind(self, obj: Any) -> Callable[..., Any]:
        raise NotImplementedError

    #: How the method's value is written around what the written method returns
    #: (``Call[X]`` → ``X``), sync and asyncio: for the signature ``help()`` shows.
    returns = ("{}", "Awaitable[{}]")

    def _signature(self, obj: Any, method: Callable[..., Any]) -> inspect.Signature:
        """What ``help()`` and ``inspect.signature`` show: the written method's parameters
        (no ``self``), returning what it returns on this side."""
        sig = inspect.signature(functools.partial(self.build, obj))
        ret = str(sig.return_annotation)
        inner = ret[ret.index("[") + 1 : -1] if ret.endswith("]") and "[" in ret else ret
        return sig.replace(return_annotation=self.returns[obj._asyncio].format(inner))

    def _bound(self, obj: Any) -> Any:
        method = self._bind(obj)
        sig = self._signature(obj, method)
        functools.update_wrapper(method, self.build)
        del method.__wrapped__  # type: ignore[attr-defined]
        method.__signature__ = sig  # type: ignore[attr-defined]
        obj.__dict__[self.name] = method
        return method


class command(
    _Descriptor[
        Callable[Concatenate[Any, P], Call[T]], Callable[P, T], Callable[P, Awaitable[T]]
    ],
    Generic[P, T],
):
    """A method that returns a :class:`Call`: on a :class:`SyncRunner` it returns the parsed
    reply, on an :class:`AsyncRunner` an awaitable of it."""

    def _bind(self, obj: Any) -> Callable[..., Any]:
        build, send = self.build, obj._send
        if obj._asyncio:

            async def amethod(*args: Any, **kwargs: Any) -> Any:
                call = build(obj, *args, **kwargs)
                return call.parse(await send(call))

            return amethod

        def method(*args: Any, **kwargs: Any) -> Any:
            call = build(obj, *args, **kwargs)
            return call.parse(send(call))

        return method


class procedure(
    _Descriptor[
        Callable[Concatenate[Any, P], Proc[T]], Callable[P, T], Callable[P, Awaitable[T]]
    ],
    Generic[P, T],
):
    """A method written as a generator of steps (:data:`Proc`): run to its value with
    :func:`drive` on a :class:`SyncRunner`, awaited with :func:`adrive` on an
    :class:`AsyncRunner`."""

    def _bind(self, obj: Any) -> Callable[..., Any]:
        build, send = self.build, obj._send
        if obj._asyncio:

            async def amethod(*args: Any, **kwargs: Any) -> Any:
                return await adrive(send, build(obj, *args, **kwargs))

            return amethod

        def method(*args: Any, **kwargs: Any) -> Any:
            return drive(send, build(obj, *args, **kwargs))

        return method


class cursor(
    _Descriptor[
        Callable[Concatenate[Any, P], Cursor[T]],
        Callable[P, Iterator[T]],
        Callable[P, AsyncIterator[T]],
    ],
    Generic[P, T],
):
    """A method that returns a :class:`Cursor`: an ``Iterator[T]`` on a :class:`SyncRunner`,
    an ``AsyncIterator[T]`` on an :class:`AsyncRunner`. Each step is sent when the consumer
    asks for the next value, so no step holds more than one reply."""

    returns = ("Iterator[{}]", "AsyncIterator[{}]")

    def _bind(self, obj: Any) -> Callable[..., Any]:
        build, send = self.build, obj._send
        if obj._asyncio:

            async def amethod(*args: Any, **kwargs: Any) -> Any:
                cur = build(obj, *args, **kwargs)
                call: Call[Any] = cur.first
                while (value := call.parse(await send(call))) is not None:
                    yield value
                    call = cur.follow(value)

            return amethod

        def method(*args: Any, **kwargs: Any) -> Any:
            cur = build(obj, *args, **kwargs)
            call: Call[Any] = cur.first
            while (value := call.parse(send(call))) is not None:
                yield value
                call = cur.follow(value)

        return method


class _Load(Protocol):
    def __call__(self, key: Arg, chunks: Iterable[Chunk]) -> int: ...


class _AsyncLoad(Protocol):
    def __call__(
        self, key: Arg, chunks: Union[Iterable[Chunk], AsyncIterable[Chunk]]
    ) -> Awaitable[int]: ...


class loader(_Descriptor[Callable[[Any, Arg], Callable[[Chunk], Call[Any]]], _Load, _AsyncLoad]):
    """A ``loadchunks(key, chunks)`` method from a method ``(self, key) -> (chunk -> Call)``:
    sends one call per chunk, in order, and returns how many were sent; stops at the first
    error. The asyncio side also takes an async iterable (another filter's ``scandump``)."""

    def _signature(self, obj: Any, method: Callable[..., Any]) -> inspect.Signature:
        return inspect.signature(method)  # its own: (key, chunks) -> int

    def _bind(self, obj: Any) -> Callable[..., Any]:
        build, send = self.build, obj._send
        if obj._asyncio:

            async def amethod(
                key: Arg, chunks: Union[Iterable[Chunk], AsyncIterable[Chunk]]
            ) -> int:
                return await _load(send, build(obj, key), chunks)

            return amethod

        def method(key: Arg, chunks: Iterable[Chunk]) -> int:
            return _now(_load(_awaiting(send), build(obj, key), iter(chunks)))

        return method


class ClientRunner:
    """What the wrappers of one redis-py client share: ``client``, and ``_send`` of a
    :class:`Call` through its ``execute_command``."""

    def __init__(self, client: Any) -> None:
        self.client = client


class SyncClient(ClientRunner, SyncRunner):
    """A sync wrapper of ``redis.Redis`` or ``redis.RedisCluster``."""

    def _send(self, call: Call[Any]) -> Any:
        return self.client.execute_command(*call.args, **call.options)


class AsyncClient(ClientRunner, AsyncRunner):
    """An asyncio wrapper of ``redis.asyncio.Redis`` or ``redis.asyncio.RedisCluster``."""

    async def _send(self, call: Call[Any]) -> Any:
        return await self.client.execute_command(*call.args, **call.options)

