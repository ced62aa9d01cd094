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
from pathlib import Path
from typing import Dict, List, Optional

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


def owns(fields: List[str], slot: int) -> bool:
    """Whether the slot fields of a CLUSTER NODES line (``0-5460``, ``5550``, ``[…]``) hold
    ``slot``."""
    for f in fields:
        if f.startswith("["):
            continue
        lo, _, hi = f.partition("-")
        if int(lo) <= slot <= int(hi or lo):
            return True
    return False


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

    def repair(self) -> None:
        """Closes the slots a fault left open, as an operator would after a resharding that met
        a failover: the slot's owner (in the cluster's view) holds the authoritative copy, so
        a node importing a slot it does not own drops what it holds of it (keys restored by a
        MIGRATE whose source was failed over meanwhile, the promoted replica still holding
        them), then every node marks the slot stable."""
        for s in self.servers:
            if not s.alive():
                s.start()
        for n in self.live():
            # Raw: redis-py parses CLUSTER NODES into a dict without the open slots.
            conn = redis.Connection(port=n.port)
            try:
                conn.send_command("CLUSTER", "NODES")
                raw = conn.read_response()
            finally:
                conn.disconnect()
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            me = next(ln for ln in text.splitlines() if "myself" in ln).split()
            for field in me[8:]:
                if not field.startswith("["):
                    continue
                slot = int(field[1:].split("-")[0])
                try:
                    if "-<-" in field and not owns(me[8:], slot):
                        cl = n.client()
                        while keys := cl.execute_command("CLUSTER GETKEYSINSLOT", slot, 100):
                            pipe = cl.pipeline(transaction=False)
                            for k in keys:
                                pipe.execute_command("ASKING")
                                pipe.execute_command("DEL", k)
                            pipe.execute()
                    n.client().execute_command("CLUSTER SETSLOT", slot, "STABLE")
                    print(f"  repair: slot {slot} on {n.port} ({field}) made stable", flush=True)
                except redis.RedisError as e:  # a replica by now: its primary is repaired
                    print(f"  repair: slot {slot} on {n.port}: {e}", flush=True)

    def settle(self, deadline: float = 300) -> None:
        """Every node running (a dead one restarted), every slot served, one settled view,
        every replica online and caught up with what its primary had when this began."""
        for s in self.servers:
            s.check_exit()
            if not s.alive():
                s.start()
        self.wait_healthy(deadline)
        self.caught_up(deadline)
