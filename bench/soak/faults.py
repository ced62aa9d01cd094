"""The soak's faults. Each one injects a fault into the running cluster, waits for the cluster to
recover (every node running, one settled view, every replica caught up) and returns a line
that says what it did. The runner records when each started and ended, and attributes the
clients' errors, retries and worst latency to that window.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, TypeVar

import redis

from nodes import Node, SoakCluster, poll
from load import big_keys

T = TypeVar("T")


@dataclass
class Event:
    fault: str
    start: float
    end: float
    detail: str
    failed: Optional[str] = None


def _pick_pair(c: SoakCluster, rng: random.Random) -> tuple:
    pairs = [(p, reps) for p, reps in c.pairs() if any(r.alive() for r in reps)]
    return rng.choice(pairs)


def kill_primary(c: SoakCluster, rng: random.Random) -> str:
    """kill -9 of a primary: its replica takes over (automatic failover, after
    cluster-node-timeout), then the killed node restarts from its AOF and rejoins as a replica
    of the new primary."""
    p, reps = _pick_pair(c, rng)
    rep = reps[0]
    t0 = time.monotonic()
    p.kill()
    poll(
        f"replica {rep.port} to take over from {p.port}",
        lambda: True if rep.client().info("replication")["role"] == "master" else None,
        deadline=120,
    )
    promoted = time.monotonic() - t0
    c.wait_healthy()
    serving = time.monotonic() - t0
    p.start()
    c.settle()
    return (
        f"kill -9 primary {p.port}; replica {rep.port} promoted after {promoted:.1f} s, every "
        f"slot served after {serving:.1f} s; {p.port} restarted as its replica"
    )


def kill_replica(c: SoakCluster, rng: random.Random) -> str:
    """kill -9 of a replica; its primary notices the lost link, then the replica restarts from
    its AOF and resyncs."""
    p, reps = _pick_pair(c, rng)
    r = reps[0]
    r.kill()

    def dropped() -> Optional[bool]:
        info = p.client().info("replication")
        return True if int(info["connected_slaves"]) < len(reps) else None

    poll(f"{p.port} to see its replica {r.port} gone", dropped)
    r.start()
    c.settle()
    return f"kill -9 replica {r.port} of {p.port}, restarted"


def manual_failover(c: SoakCluster, rng: random.Random) -> str:
    p, reps = _pick_pair(c, rng)
    r = reps[0]
    r.client().execute_command("CLUSTER FAILOVER")
    poll(
        f"{r.port} to become primary",
        lambda: True if r.client().info("replication")["role"] == "master" else None,
        deadline=120,
    )
    c.settle()
    return f"CLUSTER FAILOVER on {r.port} (was replica of {p.port})"


def _node_id(c: SoakCluster, port: int) -> str:
    return next(str(n["id"]) for n in c.nodes() if n["port"] == port)


def _until_up(what: str, f: Callable[[], T]) -> T:
    """``f()``, again while the node answers CLUSTERDOWN or TRYAGAIN, itself or relayed from
    MIGRATE's target ("Target instance replied with error: CLUSTERDOWN …"), or NOREPLICAS (Valkey
    replicates CLUSTER SETSLOT and waits for the replicas: one in a full sync answers late), up
    to 60 s."""
    end = time.monotonic() + 60
    while True:
        try:
            return f()
        except redis.exceptions.ResponseError as e:
            down = isinstance(
                e, (redis.exceptions.ClusterDownError, redis.exceptions.TryAgainError)
            ) or any(w in str(e) for w in ("CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS"))
            if not down or time.monotonic() > end:
                raise
            time.sleep(0.05)


def reshard(c: SoakCluster, rng: random.Random) -> str:
    """Moves the slot of a large filter to another primary while the clients write to it
    (IMPORTING / MIGRATING, MIGRATE of every key of the slot, SETSLOT NODE: what
    ``redis-cli --cluster reshard`` does, for one chosen slot)."""
    key, _ = rng.choice(big_keys())
    live = c.live()[0].client()
    slot = int(live.execute_command("CLUSTER KEYSLOT", key))
    src = c.primary_of_slot(slot)
    dst = rng.choice([p for p, _ in c.pairs() if p.port != src.port])
    sid, did = _node_id(c, src.port), _node_id(c, dst.port)
    s, d = src.client(), dst.client()
    _until_up("IMPORTING", lambda: d.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", sid))
    _until_up("MIGRATING", lambda: s.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", did))
    moved = 0
    t0 = time.monotonic()
    while True:
        keys = s.execute_command("CLUSTER GETKEYSINSLOT", slot, 100)
        if not keys:
            break
        # A node blocked by a large MIGRATE longer than cluster-node-timeout then sees the others
        # as failing for a moment and answers CLUSTERDOWN to key commands: retried until it
        # sees them again.
        _until_up(
            f"MIGRATE from {src.port}",
            lambda: s.execute_command(
                "MIGRATE", "127.0.0.1", dst.port, "", 0, 120000, "KEYS", *keys
            ),
        )
        moved += len(keys)
    for n in (src, dst):
        if n.client().info("replication")["role"] != "master":
            # Blocked by MIGRATE past cluster-node-timeout, it was failed over: the slot is
            # left open, for the repair (SoakCluster.repair).
            raise AssertionError(f"{n.port} was failed over during the migration")
    # The importing node first, then the migrating one, then the others (as redis-cli does).
    for n in [dst, src] + [p for p, _ in c.pairs() if p.port not in (src.port, dst.port)]:
        cl = n.client()
        _until_up("SETSLOT NODE", lambda: cl.execute_command("CLUSTER SETSLOT", slot, "NODE", did))
    took = time.monotonic() - t0
    size = _until_up(f"MEMORY USAGE on {dst.port}", lambda: d.memory_usage(key) or 0)
    c.settle()
    return (
        f"slot {slot} ({key}, {size / 1e6:.1f} MB, {moved} keys) {src.port} -> {dst.port} "
        f"in {took:.1f} s"
    )


def pause(c: SoakCluster, rng: random.Random) -> str:
    p, _ = _pick_pair(c, rng)
    if rng.random() < 0.5:
        p.client().execute_command("DEBUG SLEEP", 1)
        what = "DEBUG SLEEP 1"
    else:
        p.client().execute_command("CLIENT PAUSE", 1500, "WRITE")
        time.sleep(1.5)
        what = "CLIENT PAUSE 1500 WRITE"
    c.settle()
    return f"{what} on primary {p.port}"


def full_resync(c: SoakCluster, rng: random.Random) -> str:
    """A replica restarted with no data: its primary sends it a full copy (sync_full grows)."""
    p, reps = _pick_pair(c, rng)
    r = reps[0]
    before = int(p.client().info("stats")["sync_full"])
    r.kill()
    r.wipe_data()
    r.start()
    c.settle()
    after = int(p.client().info("stats")["sync_full"])
    if after <= before:
        raise AssertionError(f"{r.port} resynced without a full sync ({before} -> {after})")
    return f"replica {r.port} wiped and restarted: full sync from {p.port}"


def _wait_idle(n: Node, field: str) -> None:
    poll(
        f"{field} on {n.port} to end",
        lambda: True if int(n.client().info("persistence")[field]) == 0 else None,
        deadline=300,
    )


def persist(c: SoakCluster, rng: random.Random) -> str:
    p, _ = _pick_pair(c, rng)
    cl = p.client()
    _wait_idle(p, "aof_rewrite_in_progress")
    cl.execute_command("BGREWRITEAOF")
    _wait_idle(p, "aof_rewrite_in_progress")
    _wait_idle(p, "aof_rewrite_scheduled")
    cl.execute_command("BGSAVE")
    _wait_idle(p, "rdb_bgsave_in_progress")
    status = cl.info("persistence")
    if status["aof_last_bgrewrite_status"] != "ok" or status["rdb_last_bgsave_status"] != "ok":
        raise AssertionError(f"persistence on {p.port} failed: {status}")
    return f"BGREWRITEAOF then BGSAVE on primary {p.port}"


def maxmemory(c: SoakCluster, rng: random.Random) -> str:
    """maxmemory 1 MB above what one primary holds (noeviction): the clients' writes fill it up
    and get OOM replies for 2 s once it is reached, then the limit is lifted."""
    p, _ = _pick_pair(c, rng)
    cl = p.client()
    limit = int(cl.info("memory")["used_memory"]) + 1_000_000
    cl.config_set("maxmemory-policy", "noeviction")
    cl.config_set("maxmemory", limit)
    try:
        t0 = time.monotonic()
        poll(
            f"used_memory on {p.port} to reach maxmemory {limit}",
            lambda: True if int(cl.info("memory")["used_memory"]) >= limit else None,
            deadline=120,
        )
        took = time.monotonic() - t0
        time.sleep(2)  # the fault's length: the clients' writes meet the limit
    finally:
        cl.config_set("maxmemory", 0)
    c.settle()
    return f"maxmemory {limit} on primary {p.port}: reached after {took:.1f} s, held 2 s"


FAULTS: Dict[str, Callable[[SoakCluster, random.Random], str]] = {
    "kill -9 primary": kill_primary,
    "kill -9 replica": kill_replica,
    "CLUSTER FAILOVER": manual_failover,
    "reshard large filter": reshard,
    "pause (DEBUG SLEEP / CLIENT PAUSE)": pause,
    "full resync": full_resync,
    "BGREWRITEAOF + BGSAVE": persist,
    "maxmemory": maxmemory,
}


def run_faults(
    c: SoakCluster, rng: random.Random, until: float, schedule: str, events: List[Event]
) -> None:
    """Every fault once in a fixed order; with ``schedule == "long"``, then faults at random
    (1–5 s apart) until ``until``."""
    order = list(FAULTS)
    i = 0
    t_start = time.time()
    while time.time() < until:
        if i < len(order):
            name = order[i]
        elif schedule == "long":
            name = rng.choice(order)
        else:
            break
        i += 1
        t0 = time.time()
        try:
            detail = FAULTS[name](c, rng)
            events.append(Event(name, t0, time.time(), detail))
        except (AssertionError, redis.RedisError, OSError) as e:
            events.append(Event(name, t0, time.time(), "", failed=f"{type(e).__name__}: {e}"[:300]))
            try:
                c.settle()
            except AssertionError:
                # A fault cut short can leave a slot open (IMPORTING / MIGRATING) or
                # unassigned on a node: the repair makes every node agree with the majority's
                # owner, as an operator would (docs/soak.md, "Repair").
                c.repair()
                c.settle()
        ev = events[-1]
        print(
            f"  [{ev.start - t_start:6.0f} s] {name} ({ev.end - ev.start:.1f} s): "
            f"{ev.failed or ev.detail}",
            flush=True,
        )
        time.sleep(rng.uniform(1, 5))
