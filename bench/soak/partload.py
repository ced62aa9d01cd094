"""The soak's load through the Python client (clients/python): batches added to one
:class:`scalebloom.PartitionedFilter` with ``wait_replicas=1``, each batch's items then
shadowed into a plain set beside the partition they went to (``<partition key>:ok``, the same
slot), and reads of the client's own items.

Two of these run: one under the ``"strict"`` wait policy and one under ``"attached"``, so the
report shows what each makes of the same faults. A :class:`scalebloom.ReplicationError` means
the items were written but ``WAIT`` came up short: it is counted by policy, and only the items
``WAIT`` confirmed are shadowed (see :meth:`PartLoad.add`).
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import defaultdict
from typing import Any, Dict, List, Tuple

import redis

from load import EXPLAINED, PARTITIONED, PARTITIONS, Stats, kind_of, shadow
from nodes import REPO

sys.path.insert(0, str(REPO / "clients" / "python" / "src"))

import scalebloom  # noqa: E402  (the checkout's clients/python, not an installed copy)

BATCH = 200


class PartLoad(threading.Thread):
    def __init__(self, lid: int, port: int, stop: threading.Event, seed: int, policy: str) -> None:
        super().__init__(name=f"soak-partitioned-{policy}", daemon=True)
        self.lid, self.stop_ev, self.policy = lid, stop, policy
        self.rng = random.Random(seed * 1000 + 900 + lid)
        self.stats = Stats()
        self.counter = 0
        self.mine: List[str] = []
        self.batches = 0
        self.short: Dict[str, int] = defaultdict(int)  # ReplicationError by policy
        self.failure: BaseException | None = None
        self.client = redis.RedisCluster(
            host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=2
        )
        self.f = scalebloom.PartitionedFilter(self.client, PARTITIONED)

    def _retry(self, fn: Any) -> Tuple[bool, Any]:
        """Runs ``fn`` until it returns or 30 s have passed, counting errors as Worker.call does
        (the client already follows MOVED/ASK and retries lost connections for ~5 s)."""
        st = self.stats
        t0 = time.time()
        attempt = 0
        while True:
            st.commands += 1
            try:
                r = fn()
                break
            except scalebloom.ReplicationError as e:
                r = e
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
                time.sleep(min(0.5, 0.02 * 2 ** min(attempt, 5)))
        self._latency(t0)
        return True, r

    def _latency(self, t0: float) -> None:
        now = time.time()
        sec = int(t0)
        if now - t0 > self.stats.worst[sec]:
            self.stats.worst[sec] = now - t0

    def run(self) -> None:
        try:
            while not self.stop_ev.is_set():
                if self.mine and self.rng.random() < 0.2:
                    self.read()
                else:
                    self.add()
        except BaseException as e:  # noqa: BLE001 (reported by the runner)
            self.failure = e
        finally:
            self.f.close()
            self.client.close()

    def add(self) -> None:
        st = self.stats
        items = []
        for _ in range(BATCH):
            self.counter += 1
            items.append(f"p{self.lid}:{self.counter}")
        ok, r = self._retry(
            lambda: self.f.madd(
                items, wait_replicas=1, wait_timeout_ms=500, wait_policy=self.policy
            ),
        )
        if not ok:
            return
        self.batches += 1
        st.items_added += len(items)
        confirmed = items
        if isinstance(r, scalebloom.ReplicationError):
            k = "WAIT short"
            sec = int(time.time())
            st.errors[k] += 1
            st.errs_at[sec][k] += 1
            self.short[self.policy] += 1
            confirmed = [x for x, a in zip(items, r.acked) if a]
        # Only what WAIT confirmed is shadowed: the shadow's SADD is a separate write, and a
        # failover between the two could keep it (on the promoted replica) while losing an
        # unconfirmed add (acknowledged by the old primary only), an engine's loss.
        by_key: Dict[str, List[str]] = defaultdict(list)
        for item in confirmed:
            by_key[self.f.key_of(item)].append(item)
        for key, group in by_key.items():
            done, _ = self._retry(lambda: self.client.sadd(shadow(key), *group))
            if done:
                st.items_shadowed += len(group)
                self.mine.extend(group)
        if len(self.mine) > 20_000:
            del self.mine[:10_000]

    def read(self) -> None:
        sample = self.rng.sample(self.mine, min(len(self.mine), 100))
        ok, r = self._retry(lambda: self.f.mexists(sample))
        if ok:
            self.stats.reads += len(sample)
            self.stats.live_misses += sum(1 for a in r if not a)

    def unreplicated(self) -> int:
        return int(self.f.router.replication["unreplicated"])


def create(rc: "redis.RedisCluster", capacity: int) -> List[str]:
    """Makes the PartitionedFilter; returns its partition keys."""
    f = scalebloom.PartitionedFilter.create(rc, PARTITIONED, 0.01, capacity, partitions=PARTITIONS)
    try:
        return list(f.spec.keys)
    finally:
        f.close()
