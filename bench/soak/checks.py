"""The soak's checks, once the load has stopped and the cluster has settled (every node running,
one view, every replica at its primary's offset)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import redis

from load import ERROR, PARTITIONED, SENTINEL, all_keys, filter_keys, part_keys, shadow
from nodes import SoakCluster, poll

FP_QUERIES = 2000  # never-added items asked of each small filter
MEMORY_SLACK = 16_000_000  # used_memory after the deletes may exceed the start by this much


@dataclass
class Results:
    types: Dict[str, str] = field(default_factory=dict)  # key -> TYPE at creation
    lost_keys: List[str] = field(default_factory=list)
    wrong_type: List[str] = field(default_factory=list)
    # kind -> [items whose shadow survived, false negatives among them]
    fn: Dict[str, List[int]] = field(default_factory=dict)
    fn_examples: List[str] = field(default_factory=list)
    # kind -> [queries, positives, target]
    fp: Dict[str, List[float]] = field(default_factory=dict)
    digest_keys: int = 0
    digest_mismatch: List[str] = field(default_factory=list)
    crashes: List[str] = field(default_factory=list)
    # port -> (used_memory at the start, after the deletes)
    memory: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    shadow_card: int = 0

    def fn_total(self) -> int:
        return sum(v[1] for v in self.fn.values())

    def fp_within(self, kind: str) -> bool:
        q, pos, t = self.fp[kind]
        return pos / q <= t + 4 * math.sqrt(t / q)

    def memory_ok(self) -> bool:
        return all(after <= before + MEMORY_SLACK for before, after in self.memory.values())


def check_keys(rc: "redis.RedisCluster", res: Results) -> None:
    meta = "{" + PARTITIONED + "}:meta"
    if rc.type(meta).decode() != "hash":
        res.lost_keys.append(meta)
    for key, _ in all_keys():
        for k in (key, shadow(key)):
            t = rc.type(k).decode()
            if t == "none":
                res.lost_keys.append(k)
            elif t != res.types[k]:
                res.wrong_type.append(f"{k}: {t}, created as {res.types[k]}")


def check_false_negatives(rc: "redis.RedisCluster", res: Results) -> None:
    for key, kind in all_keys():
        cmd = "CF.MEXISTS" if kind == "cuckoo" else "BF.MEXISTS"
        tally = res.fn.setdefault(kind, [0, 0])
        chunk: List[bytes] = []

        def flush() -> None:
            ans = rc.execute_command(cmd, key, *chunk)
            tally[0] += len(chunk)
            for item, a in zip(chunk, ans):
                if not a:
                    tally[1] += 1
                    if len(res.fn_examples) < 20:
                        res.fn_examples.append(f"{key} {item.decode()}")
            chunk.clear()

        for item in sorted(rc.smembers(shadow(key))):
            if item == SENTINEL:
                continue
            res.shadow_card += 1
            chunk.append(item)
            if len(chunk) == 500:
                flush()
        if chunk:
            flush()


def cuckoo_filters(info: object) -> int:
    """``Number of filters`` of a CF.INFO reply: a flat list, or a dict / redis-py's CFInfo
    when redis-py parsed it."""
    if isinstance(info, dict):
        fields = {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in info.items()}
        return int(fields["Number of filters"])
    if isinstance(info, (list, tuple)):
        fields = {
            (k.decode() if isinstance(k, bytes) else str(k)): v
            for k, v in zip(info[::2], info[1::2])
        }
        return int(fields["Number of filters"])
    return int(getattr(info, "filterNum"))


def check_false_positives(
    rc: "redis.RedisCluster", res: Results, kinds: Dict[str, Tuple[List[object], float]]
) -> None:
    """FP_QUERIES never-added items asked of every small filter and of every partition; a
    cuckoo filter's bound is its per-sub-filter bound times its sub-filters (CF.INFO)."""
    for key, kind in filter_keys() + part_keys():
        cmd = "CF.MEXISTS" if kind == "cuckoo" else "BF.MEXISTS"
        target = kinds[kind][1] if kind in kinds else ERROR
        if kind == "cuckoo":
            target *= cuckoo_filters(rc.execute_command("CF.INFO", key))
        tally = res.fp.setdefault(kind, [0, 0, 0.0])
        # The kind's target: the mean of its filters' (each is asked as often).
        tally[2] += (target - tally[2]) / (tally[0] / FP_QUERIES + 1)
        for start in range(0, FP_QUERIES, 500):
            items = [f"absent:{key}:{i}" for i in range(start, start + 500)]
            ans = rc.execute_command(cmd, key, *items)
            tally[0] += len(items)
            tally[1] += sum(1 for a in ans if a)


def check_digests(c: SoakCluster, res: Results) -> None:
    """DEBUG DIGEST-VALUE of every key of every primary, on the primary and on its replicas."""
    for p, reps in c.pairs():
        pc = p.client()
        keys = list(pc.scan_iter(count=1000))
        for r in reps:
            rc = r.client()
            if rc.dbsize() != len(keys):
                res.digest_mismatch.append(f"{p.port}->{r.port}: dbsize {rc.dbsize()} vs {len(keys)}")
            for i in range(0, len(keys), 200):
                part = keys[i : i + 200]
                a = pc.execute_command("DEBUG DIGEST-VALUE", *part)
                b = rc.execute_command("DEBUG DIGEST-VALUE", *part)
                res.digest_keys += len(part)
                for k, x, y in zip(part, a, b):
                    if x != y:
                        res.digest_mismatch.append(f"{k.decode()} {p.port}->{r.port}")


def check_crashes(c: SoakCluster, res: Results) -> None:
    for n in c.servers:
        n.check_exit()
        for code in n.unexpected_exits:
            res.crashes.append(f"node {n.port} exited with {code} without a kill")
        for line in n.crash_lines():
            res.crashes.append(f"node {n.port} log: {line.strip()[:200]}")


def memory_baseline(c: SoakCluster) -> Dict[int, int]:
    return {n.port: int(n.client().info("memory")["used_memory"]) for n in c.servers}


def delete_and_measure(
    c: SoakCluster, rc: "redis.RedisCluster", base: Dict[int, int], res: Results
) -> None:
    for key, _ in all_keys():
        rc.delete(key, shadow(key))
    rc.delete("{" + PARTITIONED + "}:meta")
    c.wait_replicated()
    for n in c.servers:
        cl = n.client()
        poll(
            f"lazy free on {n.port}",
            lambda: True if int(cl.info("memory").get("lazyfree_pending_objects", 0)) == 0 else None,
        )
        res.memory[n.port] = (base[n.port], int(cl.info("memory")["used_memory"]))


class Retrying:
    """A cluster client whose every command is tried again, for up to 60 s, while the cluster
    answers CLUSTERDOWN or TRYAGAIN or a connection drops: a node that has just settled can
    still flap for a moment (it saw the others late), and a check must not fail on that."""

    RETRY = (
        redis.exceptions.ClusterDownError,
        redis.exceptions.TryAgainError,
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
    )

    def __init__(self, rc: "redis.RedisCluster") -> None:
        self.rc = rc
        self.retries = 0

    def __getattr__(self, name: str) -> Any:
        f = getattr(self.rc, name)

        def call(*args: Any, **kw: Any) -> Any:
            end = time.monotonic() + 60
            while True:
                try:
                    return f(*args, **kw)
                except self.RETRY:
                    if time.monotonic() > end:
                        raise
                    self.retries += 1
                    time.sleep(0.1)

        return call


def run_checks(
    c: SoakCluster,
    rc: "redis.RedisCluster",
    res: Results,
    base: Optional[Dict[int, int]],
    kinds: Dict[str, Tuple[List[object], float]],
) -> None:
    rc = Retrying(rc)  # type: ignore[assignment]
    check_keys(rc, res)
    check_false_negatives(rc, res)
    check_false_positives(rc, res, kinds)
    check_digests(c, res)
    if base is not None:
        delete_and_measure(c, rc, base, res)
    check_crashes(c, res)
