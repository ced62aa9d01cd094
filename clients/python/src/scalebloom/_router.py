"""Runs many single-key commands at once: one pipeline per node, the nodes in parallel.

The partitioned filter sends one command per partition it touches. Commands are grouped by
the node that owns their key (the cluster client's slot map), each node gets one pipeline
(``transaction=False``), optionally ending in ``WAIT``, and the pipelines run at the same time
(threads for the sync client, ``asyncio.gather`` for the asyncio one). Replies come back in
the commands' order.

Redirections are followed as a cluster client does: ``MOVED`` sends the command to the named
node and refreshes the slot map; ``ASK`` sends ``ASKING`` and the command to the named node
(the map unchanged); ``TRYAGAIN``, ``CLUSTERDOWN`` and a lost connection (a failing primary)
refresh the map and retry after a short backoff, up to ``attempts`` rounds; then the last
error is raised. Other error replies are the command's answer and are raised to the caller by
the reply's parser.

A retried write may have been applied once already (the connection dropped after the server
ran it): for a Bloom filter that changes nothing, for a counting filter it counts the item
twice, as redis-py's own retries would.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from redis.exceptions import (
    AskError,
    ClusterDownError,
    ConnectionError,
    DataError,
    MovedError,
    RedisError,
    TimeoutError,
    TryAgainError,
)

Addr = Tuple[str, int]
#: redis-py's keyword options of ``execute_command`` (such as ``NEVER_DECODE``).
Options = Mapping[str, Any]


class ReplicationError(RedisError):  # type: ignore[misc]
    """``WAIT`` reported fewer replicas than required: every write was applied by its primary
    (``replies`` holds the answers), but not every one is known to have reached a replica.
    Per command: ``acked``, whether its node's ``WAIT`` met the requirement; ``replicas``, how
    many replicas that ``WAIT`` reported; ``attached``, how many replicas were online on that
    primary (``ROLE``, under the ``"attached"`` policy; ``None`` otherwise)."""

    def __init__(
        self,
        message: str,
        acked: List[bool],
        replies: List[Any],
        replicas: Optional[List[int]] = None,
        attached: Optional[List[Optional[int]]] = None,
    ) -> None:
        super().__init__(message)
        self.acked = acked
        self.replies = replies
        self.replicas = replicas if replicas is not None else [0] * len(acked)
        self.attached = attached if attached is not None else [None] * len(acked)


#: What ``WAIT`` must confirm. ``"strict"``: ``replicas`` replicas on every node.
#: ``"attached"``: ``min(replicas, the replicas online on that primary)``, read with ``ROLE``
#: just before the node's pipeline: a primary that has no replica (a failover promoted its
#: only one) is not asked for one (its pipeline ends without ``WAIT``), a replica that is
#: online but does not confirm in time still fails the write.
WAIT_POLICIES = ("strict", "attached")


@dataclass
class Wait:
    """``WAIT numreplicas timeout`` after each node's pipeline (``numreplicas`` capped by the
    node's online replicas under the ``"attached"`` policy)."""

    replicas: int
    timeout_ms: int
    policy: str = "strict"

    def __post_init__(self) -> None:
        if self.policy not in WAIT_POLICIES:
            raise DataError(f"wait_policy must be one of {WAIT_POLICIES}, not {self.policy!r}")


#: Per node: (the replicas its ``WAIT`` asks for, its online replicas or None when not read).
Needs = Dict[Addr, Tuple[int, Optional[int]]]


def _online_replicas(role: Any) -> Optional[int]:
    """The replicas a primary's ``ROLE`` reply lists (only online ones are listed); None when
    the reply is not a primary's."""
    if not isinstance(role, (list, tuple)) or len(role) < 3:
        return None
    kind = role[0].decode() if isinstance(role[0], bytes) else str(role[0])
    if kind != "master" or not isinstance(role[2], (list, tuple)):
        return None
    return len(role[2])


_RETRYABLE = (ConnectionError, TimeoutError, TryAgainError, ClusterDownError)
_SINGLE: Addr = ("", 0)  # the address of a non-cluster client's only node


def _is_cluster(client: Any) -> bool:
    return hasattr(client, "get_node_from_key") and hasattr(client, "nodes_manager")


class _Plan:
    """Which node each pending command goes to, and whether it needs ``ASKING``."""

    def __init__(self, n: int) -> None:
        self.redirect: Dict[int, Tuple[Addr, bool]] = {}
        self.replies: List[Any] = [None] * n
        self.acked: List[bool] = [True] * n
        self.replicas: List[int] = [0] * n
        self.attached: List[Optional[int]] = [None] * n
        self.pending: List[int] = list(range(n))
        self.moved = self.asked = self.retried = 0
        self.degraded = 0

    def absorb(
        self,
        groups: Dict[Addr, List[int]],
        results: Dict[Addr, Any],
        wait: Optional[Wait],
        needs: Needs,
    ) -> Tuple[bool, Optional[BaseException]]:
        """Takes each node's pipeline outcome; returns (refresh the map?, last error)."""
        refresh = False
        last: Optional[BaseException] = None
        pending: List[int] = []
        for addr, idxs in groups.items():
            res = results[addr]
            if isinstance(res, BaseException):
                if not isinstance(res, _RETRYABLE):
                    raise res
                refresh, last = True, res
                self.retried += len(idxs)
                pending += idxs
                for i in idxs:
                    self.redirect.pop(i, None)
                continue
            pos = 0
            finals: List[int] = []
            for i in idxs:
                if i in self.redirect and self.redirect[i][1]:
                    pos += 1  # ASKING's OK
                r = res[pos]
                pos += 1
                self.redirect.pop(i, None)
                if isinstance(r, MovedError):
                    self.redirect[i] = ((r.host, r.port), False)
                    refresh, last = True, r
                    self.moved += 1
                    pending.append(i)
                elif isinstance(r, AskError):
                    self.redirect[i] = ((r.host, r.port), True)
                    last = r
                    self.asked += 1
                    pending.append(i)
                elif isinstance(r, _RETRYABLE):
                    refresh, last = True, r
                    self.retried += 1
                    pending.append(i)
                else:
                    self.replies[i] = r
                    finals.append(i)
            if wait is not None:
                need, attached = needs[addr]
                got = res[pos] if need > 0 else 0
                count = got if isinstance(got, int) and not isinstance(got, bool) else 0
                ok = isinstance(got, int) and not isinstance(got, bool) and got >= need
                if ok and need < wait.replicas:
                    self.degraded += len(finals)
                for i in finals:
                    self.acked[i] = ok
                    self.replicas[i] = count
                    self.attached[i] = attached
        self.pending = pending
        return refresh, last

    def finish(
        self,
        last: Optional[BaseException],
        wait: Optional[Wait],
        counts: Dict[str, int],
        replication: Dict[str, int],
    ) -> List[Any]:
        counts["moved"] += self.moved
        counts["ask"] += self.asked
        counts["retried"] += self.retried
        replication["unreplicated"] += self.degraded
        if self.pending:
            assert last is not None
            raise last
        if wait is not None and not all(self.acked):
            short = sum(1 for a in self.acked if not a)
            least = min(r for r, a in zip(self.replicas, self.acked) if not a)
            where = (
                "than were online on their primary"
                if wait.policy == "attached"
                else f"than the {wait.replicas} required"
            )
            raise ReplicationError(
                f"WAIT {wait.replicas} {wait.timeout_ms}: every item was written to its primary, "
                f"but {short} of {len(self.acked)} command(s) were confirmed by fewer replicas "
                f"{where} (as few as {least})",
                self.acked,
                self.replies,
                self.replicas,
                self.attached,
            )
        return self.replies


def _pipeline_args(
    idxs: Sequence[int],
    cmds: Sequence[Tuple[bytes, Tuple[Any, ...]]],
    plan: _Plan,
    wait: Optional[Wait],
    need: int,
) -> List[Tuple[Any, ...]]:
    out: List[Tuple[Any, ...]] = []
    for i in idxs:
        if i in plan.redirect and plan.redirect[i][1]:
            out.append(("ASKING",))
        out.append(cmds[i][1])
    if wait is not None and need > 0:
        out.append(("WAIT", need, wait.timeout_ms))
    return out


def _needs_from_roles(wait: Optional[Wait], roles: Dict[Addr, Any]) -> Needs:
    """Each node's requirement: ``wait.replicas``, capped under ``"attached"`` by the replicas
    its ``ROLE`` reply lists (a node whose ``ROLE`` failed keeps the full requirement)."""
    out: Needs = {}
    for addr, r in roles.items():
        if wait is None:
            out[addr] = (0, None)
            continue
        online = None
        if wait.policy == "attached" and isinstance(r, list) and r:
            online = _online_replicas(r[0])
        out[addr] = (wait.replicas if online is None else min(wait.replicas, online), online)
    return out


def _backoff(attempt: int) -> float:
    return float(min(0.05 * (2**attempt), 1.0))


class Router:
    """Per-node parallel pipelines over a sync ``redis.Redis`` or ``redis.RedisCluster``."""

    def __init__(self, client: Any, attempts: int = 8) -> None:
        self.client = client
        self.cluster = _is_cluster(client)
        self.attempts = attempts
        #: Commands redirected by MOVED, by ASK, and retried after a lost connection,
        #: TRYAGAIN or CLUSTERDOWN, since this router was made.
        self.redirects: Dict[str, int] = {"moved": 0, "ask": 0, "retried": 0}
        #: ``unreplicated``: commands accepted under the ``"attached"`` wait policy with fewer
        #: replicas than asked for (their primary had fewer online), since this router was made.
        self.replication: Dict[str, int] = {"unreplicated": 0}
        self._pool: Optional[ThreadPoolExecutor] = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def addr_of(self, key: bytes) -> Addr:
        if not self.cluster:
            return _SINGLE
        node = self.client.get_node_from_key(key)
        return (node.host, int(node.port))

    def _node_client(self, addr: Addr) -> Any:
        if not self.cluster:
            return self.client
        node = self.client.get_node(host=addr[0], port=addr[1])
        if node is None:
            self.client.nodes_manager.initialize()
            node = self.client.get_node(host=addr[0], port=addr[1])
            if node is None:
                raise ConnectionError(f"no node {addr[0]}:{addr[1]} in the cluster map")
        return self.client.get_redis_connection(node)

    def _one(
        self, addr: Addr, args: List[Tuple[Any, ...]], options: Optional[Options] = None
    ) -> Any:
        try:
            pipe = self._node_client(addr).pipeline(transaction=False)
            for a in args:
                pipe.execute_command(*a, **(options or {}))
            return pipe.execute(raise_on_error=False)
        except RedisError as e:
            return e

    def _parallel(
        self, jobs: Dict[Addr, List[Tuple[Any, ...]]], options: Optional[Options] = None
    ) -> Dict[Addr, Any]:
        """Each node's pipeline, the nodes at the same time."""
        if len(jobs) == 1:
            return {a: self._one(a, args, options) for a, args in jobs.items()}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=16)
        futs = {a: self._pool.submit(self._one, a, args, options) for a, args in jobs.items()}
        return {a: f.result() for a, f in futs.items()}

    def run(
        self,
        cmds: Sequence[Tuple[bytes, Tuple[Any, ...]]],
        wait: Optional[Wait] = None,
        options: Optional[Options] = None,
    ) -> List[Any]:
        """Runs ``(key, args)`` commands; returns their raw replies in order (error replies as
        exception objects). ``options`` are redis-py's for every command (such as
        ``NEVER_DECODE``: binary replies read as bytes)."""
        plan = _Plan(len(cmds))
        last: Optional[BaseException] = None
        for attempt in range(self.attempts):
            groups: Dict[Addr, List[int]] = {}
            for i in plan.pending:
                addr = plan.redirect[i][0] if i in plan.redirect else self.addr_of(cmds[i][0])
                groups.setdefault(addr, []).append(i)
            roles: Dict[Addr, Any] = {a: None for a in groups}
            if wait is not None and wait.policy == "attached":
                roles = self._parallel({a: [("ROLE",)] for a in groups})
            needs = _needs_from_roles(wait, roles)
            results = self._parallel(
                {
                    a: _pipeline_args(idxs, cmds, plan, wait, needs[a][0])
                    for a, idxs in groups.items()
                },
                options,
            )
            refresh, last = plan.absorb(groups, results, wait, needs)
            if not plan.pending:
                break
            if refresh and self.cluster:
                time.sleep(_backoff(attempt))
                try:
                    self.client.nodes_manager.initialize()
                except RedisError as e:
                    last = e
        return plan.finish(last, wait, self.redirects, self.replication)


class AsyncRouter:
    """:class:`Router` for ``redis.asyncio.Redis`` and ``redis.asyncio.RedisCluster``. On a
    cluster it keeps one ``redis.asyncio.Redis`` per node, made from the cluster client's
    connection settings; :meth:`aclose` closes them."""

    _KWARGS = (
        "username",
        "password",
        "credential_provider",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_keepalive",
        "protocol",
        "ssl",
        "ssl_ca_certs",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_cert_reqs",
    )

    def __init__(self, client: Any, attempts: int = 8) -> None:
        self.client = client
        self.cluster = _is_cluster(client)
        self.attempts = attempts
        #: Commands redirected by MOVED, by ASK, and retried after a lost connection,
        #: TRYAGAIN or CLUSTERDOWN, since this router was made.
        self.redirects: Dict[str, int] = {"moved": 0, "ask": 0, "retried": 0}
        #: ``unreplicated``: commands accepted under the ``"attached"`` wait policy with fewer
        #: replicas than asked for (their primary had fewer online), since this router was made.
        self.replication: Dict[str, int] = {"unreplicated": 0}
        self._nodes: Dict[Addr, Any] = {}

    async def aclose(self) -> None:
        for c in self._nodes.values():
            close = getattr(c, "aclose", None) or c.close
            await close()
        self._nodes.clear()

    async def _ready(self) -> None:
        if self.cluster and not self.client.nodes_manager.slots_cache:
            await self.client.initialize()

    def addr_of(self, key: bytes) -> Addr:
        if not self.cluster:
            return _SINGLE
        node = self.client.get_node_from_key(key)
        return (node.host, int(node.port))

    def _node_client(self, addr: Addr) -> Any:
        if not self.cluster:
            return self.client
        c = self._nodes.get(addr)
        if c is None:
            import redis.asyncio

            src = getattr(self.client, "connection_kwargs", {}) or {}
            kw = {k: src[k] for k in self._KWARGS if k in src}
            # The async cluster client says TLS with its connection class, not ssl=True.
            if "SSL" in getattr(src.get("connection_class"), "__name__", ""):
                kw["ssl"] = True
            c = redis.asyncio.Redis(host=addr[0], port=addr[1], **kw)
            self._nodes[addr] = c
        return c

    async def _one(
        self, addr: Addr, args: List[Tuple[Any, ...]], options: Optional[Options] = None
    ) -> Any:
        try:
            pipe = self._node_client(addr).pipeline(transaction=False)
            for a in args:
                pipe.execute_command(*a, **(options or {}))
            return await pipe.execute(raise_on_error=False)
        except RedisError as e:
            return e

    async def run(
        self,
        cmds: Sequence[Tuple[bytes, Tuple[Any, ...]]],
        wait: Optional[Wait] = None,
        options: Optional[Options] = None,
    ) -> List[Any]:
        """See :meth:`Router.run`."""
        await self._ready()
        plan = _Plan(len(cmds))
        last: Optional[BaseException] = None
        for attempt in range(self.attempts):
            groups: Dict[Addr, List[int]] = {}
            for i in plan.pending:
                addr = plan.redirect[i][0] if i in plan.redirect else self.addr_of(cmds[i][0])
                groups.setdefault(addr, []).append(i)
            addrs = list(groups)
            roles: Dict[Addr, Any] = {a: None for a in addrs}
            if wait is not None and wait.policy == "attached":
                got = await asyncio.gather(*(self._one(a, [("ROLE",)]) for a in addrs))
                roles = dict(zip(addrs, got))
            needs = _needs_from_roles(wait, roles)
            outs = await asyncio.gather(
                *(
                    self._one(
                        a, _pipeline_args(groups[a], cmds, plan, wait, needs[a][0]), options
                    )
                    for a in addrs
                )
            )
            refresh, last = plan.absorb(groups, dict(zip(addrs, outs)), wait, needs)
            if not plan.pending:
                break
            if refresh and self.cluster:
                await asyncio.sleep(_backoff(attempt))
                try:
                    await self.client.nodes_manager.initialize()
                except RedisError as e:
                    last = e
        return plan.finish(last, wait, self.redirects, self.replication)
