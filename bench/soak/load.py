"""The soak's load: concurrent clients (threads, each with its own redis-py RedisCluster) that mix
every filter kind, single and batched commands, deletes of their own items from counting and
cuckoo filters, reads, and writes to the large filters; after every acknowledged add, a shadow
write of the same items to a plain set in the same slot (``<key>:ok``, same hash tag).

Why the shadow proves what the module keeps: the filter's write and the shadow write go to one
primary, in that order, on one replication stream; a replica (or an AOF) holds a prefix of that
stream. So whenever the shadow write of an item survived a failover or a restart, the filter's
add before it survived too, and the filter must answer present. Deletes run the other way round
(SREM from the shadow first, then BF.DEL / CF.DEL), so a surviving delete never leaves its item in
the shadow.
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import redis
from redis.exceptions import (
    AskError,
    BusyLoadingError,
    ClusterDownError,
    ClusterError,
    ConnectionError,
    MasterDownError,
    MovedError,
    ReadOnlyError,
    ResponseError,
    TimeoutError,
    TryAgainError,
)

ERROR = 0.01
TAGS = 16
# Cuckoo: 2 slots per bucket, 16-bit fingerprints: at most 2·2/2¹⁶ false positives per
# sub-filter (a cuckoo filter that grows answers from each of its sub-filters).
CUCKOO_FP = 4 / 65536


def capacities(seconds: int) -> Tuple[int, int]:
    """(capacity of the scaling Bloom filters, of the windowed and cuckoo ones) for a run of
    ``seconds``. The scaling ones are sized to pass their capacity during the run, so they add
    layers under the faults; a windowed filter does not grow (a burst over its capacity raises
    its error rate until the burst expires) and every sub-filter a cuckoo filter adds raises its
    bound, so those are sized above what a run adds (about 200 items a second each here)."""
    scaling = min(200_000, max(5_000, seconds * 60))
    fixed = min(1_000_000, max(40_000, seconds * 500))
    return scaling, fixed


def kinds(seconds: int) -> Dict[str, Tuple[List[object], float]]:
    """kind -> (the reserve command, ``{k}`` standing for the key; false-positive target)."""
    scaling, fixed = capacities(seconds)
    return {
        "plain": (["BF.RESERVE", "{k}", ERROR, scaling], ERROR),
        "counting": (["BF.RESERVE", "{k}", ERROR, scaling, "COUNTING", 4], ERROR),
        "blocked": (["BF.RESERVE", "{k}", ERROR, scaling, "LAYOUT", "BLOCKED"], ERROR),
        # Items are remembered for at least an hour: none expires during a soak of up to 1 h.
        "window": (["BF.RESERVE", "{k}", ERROR, fixed, "WINDOW", "1h"], ERROR),
        "cuckoo": (
            ["CF.RESERVE", "{k}", fixed, "BUCKETSIZE", 2, "FINGERPRINT", 16], CUCKOO_FP
        ),
    }


KIND_NAMES = ("plain", "counting", "blocked", "window", "cuckoo")
DELETABLE = ("counting", "cuckoo")
# The Python client's PartitionedFilter (clients/python): one logical filter, a partition
# (an ordinary scaling filter) per primary and then some.
PARTITIONED = "soakpf"
PARTITIONS = 6
# Its partitions' keys, known once it is created (run's setup fills this).
PART_KEYS: List[str] = []


def filter_keys() -> List[Tuple[str, str]]:
    """(key, kind) of every small filter."""
    return [(f"{{s{t}}}:{kind}", kind) for t in range(TAGS) for kind in KIND_NAMES]


def big_keys() -> List[Tuple[str, str]]:
    return [("{big0}:plain", "plain"), ("{big1}:blocked", "blocked")]


def part_keys() -> List[Tuple[str, str]]:
    """(key, "partitioned") of every partition of the PartitionedFilter."""
    return [(k, "partitioned") for k in PART_KEYS]


def all_keys() -> List[Tuple[str, str]]:
    """Every filter the soak writes, with its kind."""
    return filter_keys() + big_keys() + part_keys()


def big_capacity(megabytes: int) -> int:
    """A NONSCALING 1% filter of about ``megabytes`` MB (9.59 bits per item)."""
    return max(10_000, int(megabytes * 8_000_000 / 9.59))


# The member each shadow set is created with (so that it exists from the start); not an item.
SENTINEL = b"-created-"


def shadow(key: str) -> str:
    return f"{key}:ok"


# Error kinds the faults explain: connection loss (kill -9, pause), failover and resharding
# (CLUSTERDOWN, MASTERDOWN, READONLY, TRYAGAIN, redirections past redis-py's own retries),
# a restarted node's AOF replay (LOADING), the maxmemory fault (OOM).
EXPLAINED = {
    "connection",
    "timeout",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "READONLY",
    "TRYAGAIN",
    "LOADING",
    "OOM",
    "redirect",
    "cluster",
    # PartitionedFilter's ReplicationError: items written, WAIT short (a replica killed,
    # resyncing or promoted away).
    "WAIT short",
}


def kind_of(e: BaseException) -> str:
    if isinstance(e, TimeoutError):
        return "timeout"
    if isinstance(e, ConnectionError):
        return "connection"
    if isinstance(e, ClusterDownError):
        return "CLUSTERDOWN"
    if isinstance(e, MasterDownError):
        return "MASTERDOWN"
    if isinstance(e, ReadOnlyError):
        return "READONLY"
    if isinstance(e, TryAgainError):
        return "TRYAGAIN"
    if isinstance(e, BusyLoadingError):
        return "LOADING"
    if isinstance(e, (MovedError, AskError)):
        return "redirect"
    if isinstance(e, ResponseError):
        msg = str(e)
        if msg.startswith("OOM") or "maxmemory" in msg:
            return "OOM"
        return "ERR " + msg[:60]
    if isinstance(e, ClusterError):
        return "cluster"
    return type(e).__name__


def acknowledged(kind: str, batch: bool, items: List[str], reply: object) -> List[str]:
    """The items a filter's add took, from its reply inside the transaction: a cuckoo filter
    answers 1 per item it took; a Bloom filter answers per item and, when it may not grow (its
    memory limit, maxmemory), ends its array with an error and takes none of the items after
    it; a single add's error takes nothing."""
    if isinstance(reply, Exception):
        return []
    answers = reply if batch else [reply]
    if not isinstance(answers, (list, tuple)):
        return []
    if kind == "cuckoo":
        return [i for i, a in zip(items, answers) if a == 1]
    return [i for i, a in zip(items, answers) if not isinstance(a, Exception)]


@dataclass
class Stats:
    """One client's counts; per-second buckets keep the memory flat in long runs."""

    commands: int = 0
    items_added: int = 0
    items_shadowed: int = 0
    items_deleted: int = 0
    reads: int = 0
    live_misses: int = 0  # an acknowledged item read back absent during the load
    abandoned: int = 0  # operations given up after every retry failed
    # items a filter refused (a full cuckoo filter; a Bloom filter that may not grow: its
    # memory limit, maxmemory), taken out of the shadow
    refused: int = 0
    # (shadow's key, items) refused whose SREM failed during a fault: run removes them from
    # the shadow after the cluster has settled
    unshadow: List[Tuple[str, List[str]]] = field(default_factory=list)
    errors: Dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # second (int(time.time())) -> worst latency (s) / retries / errors by kind
    worst: Dict[int, float] = field(default_factory=lambda: defaultdict(float))
    retries: Dict[int, int] = field(default_factory=lambda: defaultdict(int))
    errs_at: Dict[int, Dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))


class Worker(threading.Thread):
    def __init__(self, wid: int, port: int, stop: threading.Event, seed: int, big: bool) -> None:
        super().__init__(name=f"soak-worker-{wid}", daemon=True)
        self.wid, self.port, self.stop_ev = wid, port, stop
        self.rng = random.Random(seed * 1000 + wid)
        self.stats = Stats()
        self.big = big
        self.counter = 0
        # key -> items this client added and shadowed (the only ones it may delete)
        self.mine: Dict[str, List[str]] = defaultdict(list)
        self.failure: Optional[BaseException] = None
        self.client = redis.RedisCluster(
            host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=2
        )

    # Every operation goes through here: retried until it succeeds or 30 s have passed.
    def call(self, *args: object) -> Tuple[bool, object]:
        return self.run_op(lambda: self.client.execute_command(*args))

    def tx(self, *cmds: Tuple[object, ...]) -> Tuple[bool, object]:
        """The commands in one MULTI/EXEC on their slot's primary: applied, replicated and
        kept by a failover together or not at all. Each reply is the command's answer or its
        error (an error queued, OOM, aborts the whole transaction and is raised)."""

        def run() -> object:
            pipe = self.client.pipeline(transaction=True)
            for c in cmds:
                pipe.execute_command(*c)
            return pipe.execute(raise_on_error=False)

        return self.run_op(run)

    def run_op(self, op: Callable[[], object]) -> Tuple[bool, object]:
        st = self.stats
        t0 = time.time()
        attempt = 0
        while True:
            try:
                st.commands += 1
                r = op()
                break
            except Exception as e:  # noqa: BLE001 (every kind is counted)
                k = kind_of(e)
                sec = int(time.time())
                st.errors[k] += 1
                st.errs_at[sec][k] += 1
                if k not in EXPLAINED or time.time() - t0 > 30 or self.stop_ev.is_set():
                    st.abandoned += 1
                    self._latency(t0)
                    return False, e
                attempt += 1
                st.retries[sec] += 1
                time.sleep(min(0.5, 0.02 * 2**min(attempt, 5)))
        self._latency(t0)
        return True, r

    def _latency(self, t0: float) -> None:
        now = time.time()
        sec = int(t0)
        if now - t0 > self.stats.worst[sec]:
            self.stats.worst[sec] = now - t0

    def items(self, n: int) -> List[str]:
        out = []
        for _ in range(n):
            self.counter += 1
            out.append(f"w{self.wid}:{self.counter}")
        return out

    def run(self) -> None:
        try:
            keys = filter_keys()
            bigs = big_keys()
            while not self.stop_ev.is_set():
                x = self.rng.random()
                if self.big and x < 0.05:
                    self.add(self.rng.choice(bigs), self.items(100), batch=True)
                    continue
                key, kind = self.rng.choice(keys)
                if x < 0.65:
                    batch = self.rng.random() < 0.4
                    self.add((key, kind), self.items(self.rng.randint(2, 40) if batch else 1), batch)
                elif x < 0.8 and kind in DELETABLE:
                    self.delete(key, kind)
                else:
                    self.read(key, kind)
        except BaseException as e:  # noqa: BLE001 (reported by the runner)
            self.failure = e
        finally:
            self.client.close()

    def add(self, kk: Tuple[str, str], items: List[str], batch: bool) -> None:
        """The filter's add and the shadow's SADD in one MULTI/EXEC: a failover between two
        separate writes could keep the shadow's (sent to the promoted replica) and lose the
        filter's (acknowledged by the old primary, never replicated), which is the engine's
        loss, not the module's. An item the filter refused leaves the shadow right after."""
        key, kind = kk
        st = self.stats
        cmd: Tuple[object, ...]
        if kind == "cuckoo":
            cmd = ("CF.INSERT", key, "ITEMS", *items) if batch else ("CF.ADD", key, items[0])
        elif not batch:
            cmd = ("BF.ADD", key, items[0])
        elif self.rng.random() < 0.5:
            cmd = ("BF.MADD", key, *items)
        else:
            cmd = ("BF.INSERT", key, "NOCREATE", "ITEMS", *items)
        ok, r = self.tx(cmd, ("SADD", shadow(key), *items))
        if not ok:
            return
        added = acknowledged(kind, batch, items, r[0])  # type: ignore[index]
        if len(added) < len(items):
            kept = set(added)
            gone = [i for i in items if i not in kept]
            st.refused += len(gone)
            done, _ = self.call("SREM", shadow(key), *gone)
            if not done:  # taken out once the cluster has settled, before the checks
                st.unshadow.append((key, gone))
        if not added:
            return
        st.items_added += len(added)
        st.items_shadowed += len(added)
        mine = self.mine[key]
        mine.extend(added)
        if kind not in DELETABLE and len(mine) > 4000:
            del mine[:2000]  # only read back: the latest ones are enough

    def delete(self, key: str, kind: str) -> None:
        """SREM from the shadow and the delete from the filter in one MULTI/EXEC (kept or lost
        together); only items this client added and shadowed."""
        mine = self.mine[key]
        if not mine:
            return
        n = min(len(mine), self.rng.randint(1, 10))
        gone = [mine.pop(self.rng.randrange(len(mine))) for _ in range(n)]
        cmds: List[Tuple[object, ...]] = [("SREM", shadow(key), *gone)]
        if kind == "counting":
            cmds.append(("BF.DEL", key, gone[0]) if len(gone) == 1 else ("BF.MDEL", key, *gone))
        else:
            cmds += [("CF.DEL", key, item) for item in gone]
        ok, _ = self.tx(*cmds)
        if ok:
            self.stats.items_deleted += len(gone)

    def read(self, key: str, kind: str) -> None:
        mine = self.mine.get(key) or []
        if not mine:
            return
        sample = self.rng.sample(mine, min(len(mine), 20))
        cmd = "CF.MEXISTS" if kind == "cuckoo" else "BF.MEXISTS"
        ok, r = self.call(cmd, key, *sample)
        if ok:
            self.stats.reads += len(sample)
            self.stats.live_misses += sum(1 for a in r if not a)  # type: ignore[union-attr]
