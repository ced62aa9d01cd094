"""The soak's cluster: 3 primaries + 3 replicas of real servers with the module, each on a free
port and in a directory of its own, AOF ``everysec``, that a fault can kill (SIGKILL) and
restart on the same port, directory and cluster identity (nodes.conf).

Settling and the view of CLUSTER NODES come from clients/python/tests/servers.py (Cluster).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))

import redis  # noqa: E402
import servers  # noqa: E402  (clients/python/tests/servers.py: poll, free_port, Cluster)

poll = servers.poll

# Milliseconds without an answer before a node is failed: a DEBUG SLEEP / CLIENT PAUSE shorter
# than this is a pause, not a failover. MIGRATE blocks both of its nodes while a filter travels
# (up to 6 s for 200 MB on a loaded 2-core machine), so the timeout must exceed the longest
# MIGRATE, as an operator sets it: 50 ms per MB of the largest filter, at least 2000 ms.
NODE_TIMEOUT_MS = 2000


def node_timeout_ms(largest_mb: int) -> int:
    return max(NODE_TIMEOUT_MS, 50 * largest_mb)

# What a crash leaves in a server's log (Redis, Valkey) or a Rust panic's message.
CRASH_MARKS = ("BUG REPORT", "crashed by signal", "Guru Meditation", "panicked at", "Assertion")


class View:
    """One node's CLUSTER NODES, as the repair needs it: who it is, its role, the owner it
    sees for each slot, and the slots it has open."""

    def __init__(self, me: str, role: str, owner: Dict[int, str], importing: Dict[int, str],
                 migrating: Dict[int, str]) -> None:  # fmt: skip
        self.me, self.role, self.owner = me, role, owner
        self.importing, self.migrating = importing, migrating

    def describe(self, slot: int) -> str:
        what = [f"owner {self.owner[slot][:8]}" if slot in self.owner else "unassigned"]
        if slot in self.importing:
            what.append(f"importing from {self.importing[slot][:8]}")
        if slot in self.migrating:
            what.append(f"migrating to {self.migrating[slot][:8]}")
        return ", ".join(what)


def parse_view(text: str) -> View:
    """A :class:`View` from the raw text of CLUSTER NODES. The open slots appear on the
    ``myself`` line only: ``[5550-<-<id>]`` importing from, ``[5550->-<id>]`` migrating to."""
    me, role = "", "master"
    owner: Dict[int, str] = {}
    importing: Dict[int, str] = {}
    migrating: Dict[int, str] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        flags = f[2].split(",")
        if "myself" in flags:
            me, role = f[0], ("slave" if "slave" in flags else "master")
        for field in f[8:]:
            if field.startswith("["):
                slot, arrow, peer = field[1:-1].partition("-<-")
                if arrow:
                    importing[int(slot)] = peer
                else:
                    slot, _, peer = field[1:-1].partition("->-")
                    migrating[int(slot)] = peer
                continue
            lo, _, hi = field.partition("-")
            for s in range(int(lo), int(hi or lo) + 1):
                owner[s] = f[0]
    return View(me, role, owner, importing, migrating)


def majority_owners(views: List[View]) -> Dict[int, str]:
    """slot -> the owner more than half of ``views`` agree on (a slot without such an owner
    is left out: the repair does not guess)."""
    out: Dict[int, str] = {}
    if not views:
        return out
    for slot in range(16384):
        counts: Dict[str, int] = {}
        for v in views:
            o = v.owner.get(slot)
            if o is not None:
                counts[o] = counts.get(o, 0) + 1
        for o, k in counts.items():
            if 2 * k > len(views):
                out[slot] = o
    return out


def slots_to_repair(view: View, owners: Dict[int, str]) -> List[int]:
    """The slots of ``view`` the repair fixes: open ones, and those the node sees unassigned or
    owned by another node than the majority, each only where the majority names an owner."""
    bad = set(view.importing) | set(view.migrating)
    bad |= {s for s, o in owners.items() if view.owner.get(s) != o}
    return sorted(s for s in bad if s in owners)


def repair_steps(view: View, slot: int, owner: str, keys: int) -> List[tuple]:
    """The commands that make ``slot`` consistent on the node of ``view``, the majority's
    ``owner`` given, the node holding ``keys`` keys of the slot. What works on Redis 7.0 and
    Valkey 9.1:

    - ``CLUSTER SETSLOT <slot> NODE <owner>`` binds the slot (a node that sees it unassigned
      answers "Hash slot not served" to every key command, ASKING included) and keeps an
      importing state; it is refused while the node owns the slot and holds keys of it, so a
      node that wrongly owns the slot drops them first (plain DEL: it serves the slot).
    - with the slot bound elsewhere, ``ASKING`` + ``DEL`` is served only while the node imports
      the slot: ``SETSLOT <slot> IMPORTING <owner>`` first when it does not.
    - ``SETSLOT <slot> STABLE`` closes what is left open.

    ("DROP",) and ("ASKING DROP",) stand for: delete every key CLUSTER GETKEYSINSLOT lists,
    without and with ASKING."""
    steps: List[tuple] = []
    mine = view.owner.get(slot) == view.me
    if owner == view.me:
        if not mine:
            steps.append(("CLUSTER", "SETSLOT", slot, "NODE", owner))
        steps.append(("CLUSTER", "SETSLOT", slot, "STABLE"))
        return steps
    if mine and keys and view.role == "master":
        steps.append(("DROP",))
    if view.owner.get(slot) != owner:
        steps.append(("CLUSTER", "SETSLOT", slot, "NODE", owner))
    if keys and not mine and view.role == "master":
        if slot not in view.importing:
            steps.append(("CLUSTER", "SETSLOT", slot, "IMPORTING", owner))
        steps.append(("ASKING DROP",))
    steps.append(("CLUSTER", "SETSLOT", slot, "STABLE"))
    return steps


def _retrying(f: Callable[[], object], deadline: float = 60) -> object:
    """``f()``, again while the node answers NOREPLICAS (Valkey replicates SETSLOT and waits
    for the replicas: one in a full sync answers late), TRYAGAIN or CLUSTERDOWN, up to
    ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while True:
        try:
            return f()
        except redis.exceptions.ResponseError as e:
            passing = any(w in str(e) for w in ("NOREPLICAS", "TRYAGAIN", "CLUSTERDOWN"))
            if not passing or time.monotonic() > end:
                raise
            time.sleep(0.1)


class Node:
    """One server; :meth:`kill` is a SIGKILL, :meth:`start` (re)starts it on the same port and
    directory, so it comes back with its AOF and its cluster identity."""

    def __init__(
        self, binary: str, module: str, root: str, index: int, timeout_ms: int = NODE_TIMEOUT_MS
    ) -> None:
        self.binary, self.module, self.index = binary, module, index
        self.timeout_ms = timeout_ms
        self.dir = os.path.join(root, f"node{index}")
        os.makedirs(self.dir)
        self.port = servers.free_port()
        self.bus = servers.free_port()
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.starts = 0
        # Exit codes of runs that ended without a kill of ours (a crash).
        self.unexpected_exits: List[int] = []
        self.killed_by_us = False
        self.start()

    def cmd(self) -> List[str]:
        return [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--logfile", os.path.join(self.dir, "log"),
            "--daemonize", "no",
            "--save", "",
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--enable-debug-command", "local",
            "--cluster-enabled", "yes",
            "--cluster-port", str(self.bus),
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.timeout_ms),
            "--cluster-allow-replica-migration", "no",
            "--repl-diskless-sync-delay", "0",
            "--loadmodule", self.module,
        ]  # fmt: skip

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.check_exit()
        with open(os.path.join(self.dir, "stderr"), "ab") as err:
            self.proc = subprocess.Popen(
                self.cmd(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
            )
        self.killed_by_us = False
        self.starts += 1
        # A restart may replay a large AOF: LOADING answers until it is done.
        poll(f"node {self.port} to answer PING", self._ready, deadline=300)

    def _ready(self) -> Optional[bool]:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"node {self.port} exited {self.proc.returncode}:\n{self.log()}")
        return True if redis.Redis(port=self.port, socket_timeout=2).ping() else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_exit(self) -> None:
        """Records an exit that no kill of ours explains."""
        if self.proc is not None and self.proc.poll() is not None and not self.killed_by_us:
            self.unexpected_exits.append(self.proc.returncode)
            self.killed_by_us = True  # recorded once

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.killed_by_us = True
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def wipe_data(self) -> None:
        """Removes the AOF and RDB (not nodes.conf) of a stopped node: it restarts with no data
        and no replication offset, so its primary sends it a full copy."""
        assert not self.alive()
        for name in os.listdir(self.dir):
            p = os.path.join(self.dir, name)
            if name.endswith(".rdb"):
                os.remove(p)
            elif name.startswith("appendonlydir"):
                shutil.rmtree(p)

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def crash_lines(self) -> List[str]:
        return [ln for ln in self.log().splitlines() if any(m in ln for m in CRASH_MARKS)]

    def client(self, **kw: object) -> "redis.Redis":
        return redis.Redis(port=self.port, socket_timeout=30, **kw)  # type: ignore[arg-type]


class SoakCluster(servers.Cluster):
    """3 primaries + 3 replicas of :class:`Node` joined by ``redis-cli --cluster create``."""

    def __init__(
        self, binary: str, module: str, keep: bool = False, timeout_ms: int = NODE_TIMEOUT_MS
    ) -> None:
        self.primaries, self.replicas, self.keep = 3, 1, keep
        self.root = tempfile.mkdtemp(prefix="soak-")
        self.servers: List[Node] = []  # type: ignore[assignment]
        try:
            for i in range(6):
                self.servers.append(Node(binary, module, self.root, i, timeout_ms))
            cmd = [servers.redis_cli(), "--cluster", "create"]
            cmd += [f"127.0.0.1:{s.port}" for s in self.servers]
            cmd += ["--cluster-replicas", "1", "--cluster-yes"]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if out.returncode != 0 or "All 16384 slots covered" not in out.stdout:
                raise RuntimeError(f"redis-cli --cluster create failed:\n{out.stdout}{out.stderr}")
            self.wait_settled()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for s in self.servers:
            s.check_exit()
            s.kill()
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def nodes(self) -> List[Dict[str, object]]:
        return self._raw_nodes(self.live()[0].port)

    def node(self, port: int) -> Node:
        return next(s for s in self.servers if s.port == port)

    def roles(self) -> Dict[int, Optional[int]]:
        """port -> the port of its primary (None for a primary), as the first live node sees it."""
        view = self.nodes()
        by_id = {n["id"]: n["port"] for n in view}
        return {
            int(n["port"]): (None if "master" in n["flags"] else by_id.get(n["master"]))  # type: ignore[misc]
            for n in view
        }

    def pairs(self) -> List[tuple]:
        """(primary node, [its replica nodes]) for every primary owning slots."""
        view = self.nodes()
        out = []
        for n in view:
            if "master" in n["flags"] and n["slots"]:  # type: ignore[operator]
                reps = [
                    self.node(int(r["port"]))  # type: ignore[arg-type]
                    for r in view
                    if r["master"] == n["id"] and "slave" in r["flags"]  # type: ignore[operator]
                ]
                out.append((self.node(int(n["port"])), reps))  # type: ignore[arg-type]
        return out

    def primary_of_slot(self, slot: int) -> Node:
        c = self.live()[0].client()
        for start, end, master, *_ in c.execute_command("CLUSTER SLOTS"):
            if start <= slot <= end:
                return self.node(int(master[1]))
        raise AssertionError(f"slot {slot} has no owner")

    def wait_healthy(self, deadline: float = 120) -> None:
        """Polls until the cluster serves every slot again: every live node answers
        ``cluster_state:ok``, all live nodes agree on one settled view (the primaries owning
        slots, nobody failing, nothing migrating, every replica's link up), every slot is owned
        by a live primary, and every replica is online as its primary sees it. A condition
        that holds under load: replication offsets are not compared (see :meth:`caught_up`)."""

        why = {"last": "not checked yet"}

        def healthy() -> Optional[bool]:
            live = {s.port for s in self.live()}
            for s in self.live():
                why["last"] = f"cluster_state of {s.port}"
                info = s.client(decode_responses=True).execute_command("CLUSTER INFO")
                # redis-py parses CLUSTER INFO into a dict; some versions leave the text.
                ok = info.get("cluster_state") == "ok" if isinstance(info, dict) else (
                    "cluster_state:ok" in str(info)
                )
                if not ok:
                    return None
                covered = 0
                why["last"] = f"CLUSTER SLOTS of {s.port}: an owner not running"
                for start, end, master, *_ in s.client().execute_command("CLUSTER SLOTS"):
                    if int(master[1]) not in live:
                        return None
                    covered += end - start + 1
                if covered != 16384:
                    why["last"] = f"CLUSTER SLOTS of {s.port}: {covered} slots covered"
                    return None
            for p, reps in self.pairs():
                online = p.client().info("replication")
                ports = {
                    int(v["port"])
                    for k, v in online.items()
                    if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
                }
                if any(r.alive() and r.port not in ports for r in reps):
                    why["last"] = f"replicas of {p.port} online: {sorted(ports)}"
                    return None
            return True

        try:
            poll("every slot served by a live primary", healthy, deadline=deadline)
        except AssertionError as e:
            raise AssertionError(f"{e}; last unmet: {why['last']}") from None
        # One settled view on every node (servers.Cluster's own check).
        self.wait_settled()

    def caught_up(self, deadline: float = 300) -> None:
        """Polls until every live replica has applied what its primary had written when the
        poll began (its offset reaches that mark): holds under load, where the offsets are
        never equal at one instant."""
        marks = {}
        for p, reps in self.pairs():
            off = int(p.client().info("replication")["master_repl_offset"])
            marks.update({r.port: off for r in reps if r.alive()})

        def reached() -> Optional[bool]:
            for port, off in marks.items():
                info = self.node(port).client().info("replication")
                if info.get("master_link_status") != "up":
                    return None
                if int(info.get("slave_repl_offset", -1)) < off:
                    return None
            return True

        poll("the replicas to reach their primaries' offsets", reached, deadline=deadline)

    def wait_replicated(self, deadline: float = 300) -> None:
        """Once the load has stopped: polls until every live replica's offset equals its
        primary's (nothing is left in flight)."""

        def equal() -> Optional[bool]:
            for p, reps in self.pairs():
                off = p.client().info("replication")["master_repl_offset"]
                for r in reps:
                    if not r.alive():
                        continue
                    info = r.client().info("replication")
                    if info.get("master_link_status") != "up":
                        return None
                    if info.get("slave_repl_offset") != off:
                        return None
            return True

        poll("the replicas to catch up", equal, deadline=deadline)

    def raw_view(self, port: int) -> "View":
        # Raw: redis-py parses CLUSTER NODES into a dict without the open slots.
        conn = redis.Connection(port=port)
        try:
            conn.send_command("CLUSTER", "NODES")
            raw = conn.read_response()
        finally:
            conn.disconnect()
        return parse_view(raw.decode() if isinstance(raw, bytes) else str(raw))

    def repair(self) -> None:
        """Makes every node's view of the slots consistent, as an operator would after a
        resharding that met a failover (docs/soak.md, "Repair"): every node running, then for
        every slot a node has open (importing / migrating), sees unassigned or sees owned by
        another node than the majority of the other live primaries do, :func:`repair_steps`
        on that node: the majority's owner is bound, what the node holds of a slot it does not
        own is dropped (the owner holds the authoritative copy), and the slot is made stable."""
        for s in self.servers:
            if not s.alive():
                s.start()
        views = {n.port: self.raw_view(n.port) for n in self.live()}
        for port, view in views.items():
            others = [v for p, v in views.items() if p != port and v.role == "master"]
            owners = majority_owners(others)
            n = self.node(port)
            for slot in slots_to_repair(view, owners):
                try:
                    keys = int(n.client().execute_command("CLUSTER COUNTKEYSINSLOT", slot))
                    steps = repair_steps(view, slot, owners[slot], keys)
                    dropped = self._run_steps(n, slot, steps)
                    print(
                        f"  repair: slot {slot} on {port} ({view.describe(slot)}): bound to "
                        f"{owners[slot][:8]}, {dropped} keys dropped, stable",
                        flush=True,
                    )
                except redis.RedisError as e:
                    # A replica refuses SETSLOT (Redis): its primary's repair reaches it.
                    print(f"  repair: slot {slot} on {port} ({view.describe(slot)}): {e}", flush=True)

    @staticmethod
    def _run_steps(n: Node, slot: int, steps: List[tuple]) -> int:
        # One connection: ASKING holds for the next command on the same connection only.
        cl = redis.Redis(port=n.port, socket_timeout=30, single_connection_client=True)
        dropped = 0
        try:
            for step in steps:
                if step[0] in ("DROP", "ASKING DROP"):
                    while keys := cl.execute_command("CLUSTER GETKEYSINSLOT", slot, 100):
                        pipe = cl.pipeline(transaction=False)
                        for k in keys:
                            if step[0] == "ASKING DROP":
                                pipe.execute_command("ASKING")
                            pipe.execute_command("DEL", k)
                        pipe.execute()
                        dropped += len(keys)
                else:
                    _retrying(lambda: cl.execute_command(*step))
        finally:
            cl.close()
        return dropped

    def settle(self, deadline: float = 300) -> None:
        """Every node running (a dead one restarted), every slot served, one settled view,
        every replica online and caught up with what its primary had when this began."""
        for s in self.servers:
            s.check_exit()
            if not s.alive():
                s.start()
        self.wait_healthy(deadline)
        self.caught_up(deadline)
