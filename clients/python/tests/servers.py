"""Real servers for the tests: a redis-server (or valkey-server) with the built module, each on
a free port of its own, and a Redis Cluster of them joined with ``redis-cli --cluster create``
(as the Rust tests' tests/common/cluster.rs does).

Environment (the same as the Rust tests'):
  SCALEBLOOM_MODULE   absolute path of libscalebloom.so (required)
  SCALEBLOOM_SERVER   the server binary (default redis-server)
  REDISBLOOM_MODULE   RedisBloom 2.8's redisbloom.so (the migration check's source)
  SCALEBLOOM_REDIS_CLI the redis-cli for --cluster create (default redis-cli)
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Callable, Dict, List, Optional, TypeVar

import redis

T = TypeVar("T")
S = TypeVar("S", bound="Stops")

DEADLINE = 60.0


def _module_file(var: str, hint: str) -> str:
    """The file the environment variable ``var`` names; ``hint`` says how to set it."""
    m = os.environ.get(var, "")
    if not m or not os.path.exists(m):
        raise RuntimeError(f"{var}={m!r} is not a file: {hint}")
    return m


def module_path() -> str:
    return _module_file(
        "SCALEBLOOM_MODULE",
        "build the module (cargo build --release) "
        "and point SCALEBLOOM_MODULE at target/release/libscalebloom.so",
    )


def redisbloom_path() -> str:
    return _module_file(
        "REDISBLOOM_MODULE",
        "point it at RedisBloom 2.8's redisbloom.so (bash scripts/venv-tool .venv redisbloom)",
    )


def server_binary() -> str:
    return os.environ.get("SCALEBLOOM_SERVER", "redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def poll(what: str, f: Callable[[], Optional[T]], deadline: float = DEADLINE) -> T:
    """Calls ``f`` until it returns something other than None; fails after ``deadline``."""
    end = time.monotonic() + deadline
    last: object = None
    while True:
        try:
            v = f()
            if v is not None:
                return v
        except (redis.RedisError, OSError) as e:
            last = e
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what} (last error: {last!r})")
        time.sleep(0.02)


class Stops:
    """A context manager of what has a ``stop``: ``with Server() as s:`` stops it at the end."""

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Server(Stops):
    """One server process; :meth:`stop` kills it and removes its directory."""

    def __init__(
        self,
        args: Optional[List[str]] = None,
        module: Optional[str] = "scalebloom",
        cluster: bool = False,
        module_args: Optional[List[str]] = None,
    ) -> None:
        self.dir = tempfile.mkdtemp(prefix="sbpy-")
        for _ in range(20):
            self.port = free_port()
            cmd = [
                server_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                "--logfile",
                os.path.join(self.dir, "log"),
                "--daemonize",
                "no",
                "--enable-debug-command",
                "local",
            ]
            if cluster:
                self.bus = free_port()
                cmd += [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-port",
                    str(self.bus),
                    "--cluster-config-file",
                    f"nodes-{self.port}.conf",
                    "--cluster-node-timeout",
                    "1000",
                    "--repl-diskless-sync-delay",
                    "0",
                ]
            cmd += args or []
            if module == "scalebloom":
                cmd += ["--loadmodule", module_path(), *(module_args or [])]
            elif module == "redisbloom":
                cmd += ["--loadmodule", redisbloom_path()]
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            if self._wait_ready():
                return
        raise RuntimeError(f"server did not start:\n{self.log()}")

    def _wait_ready(self) -> bool:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False  # exited: a port clash, retried with another port
            try:
                if redis.Redis(port=self.port, socket_timeout=1).ping():
                    return True
            except (redis.ConnectionError, redis.ResponseError, OSError):
                pass
            time.sleep(0.02)
        raise RuntimeError(f"server on {self.port} did not answer PING:\n{self.log()}")

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def client(self, **kw: object) -> "redis.Redis":
        return redis.Redis(port=self.port, **kw)  # type: ignore[arg-type]

    def kill(self) -> None:
        """SIGKILL: a crash, nothing saved."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def redis_cli() -> str:
    return os.environ.get("SCALEBLOOM_REDIS_CLI", "redis-cli")


class Cluster(Stops):
    """3 primaries with a replica each (by default), joined by ``redis-cli --cluster create``."""

    def __init__(self, primaries: int = 3, replicas: int = 1, args: Optional[List[str]] = None):
        self.primaries, self.replicas = primaries, replicas
        self.servers: List[Server] = []
        try:
            for _ in range(primaries * (1 + replicas)):
                self.servers.append(Server(args=args, cluster=True))
            cmd = [redis_cli(), "--cluster", "create"]
            cmd += [f"127.0.0.1:{s.port}" for s in self.servers]
            cmd += ["--cluster-replicas", str(replicas), "--cluster-yes"]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if out.returncode != 0 or "All 16384 slots covered" not in out.stdout:
                raise RuntimeError(f"redis-cli --cluster create failed:\n{out.stdout}{out.stderr}")
            self.wait_settled()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for s in self.servers:
            s.stop()

    @property
    def ports(self) -> List[int]:
        return [s.port for s in self.servers]

    def server(self, port: int) -> Server:
        return next(s for s in self.servers if s.port == port)

    def live(self) -> List[Server]:
        return [s for s in self.servers if s.proc.poll() is None]

    def wait_settled(self, primaries: Optional[int] = None) -> None:
        """Polls until every live node reports cluster_state:ok and one settled view: the
        expected number of primaries owning slots, nobody failing, nothing migrating, every
        live replica's link up."""
        want = primaries if primaries is not None else self.primaries

        def settled() -> Optional[bool]:
            views = []
            for s in self.live():
                c = redis.Redis(port=s.port, decode_responses=True)
                info = c.execute_command("CLUSTER INFO")
                state = (
                    info.get("cluster_state")
                    if isinstance(info, dict)
                    else ("ok" if "cluster_state:ok" in str(info) else "fail")
                )
                if state != "ok":
                    return None
                view = sorted(
                    (
                        n["port"],
                        tuple(n["flags"]),
                        n["master"],
                        tuple(n["slots"]),
                        n["link"],
                        n["open"],
                    )
                    for n in self._raw_nodes(s.port)
                )
                views.append(view)
            if any(v != views[0] for v in views):
                return None
            live_ports = {s.port for s in self.live()}
            owners = [n for n in views[0] if n[3]]
            if len(owners) != want:
                return None
            for n in views[0]:
                if n[0] in live_ports and (
                    any(f in n[1] for f in ("fail", "fail?", "handshake"))
                    or n[4] != "connected"
                    or n[5]
                ):
                    return None
            for s in self.live():
                r = redis.Redis(port=s.port, decode_responses=True).info("replication")
                if r.get("role") == "slave" and r.get("master_link_status") != "up":
                    return None
            return True

        poll("the cluster to settle", settled)

    def _raw_nodes(self, port: int) -> List[Dict[str, object]]:
        conn = redis.Connection(port=port)
        try:
            conn.send_command("CLUSTER", "NODES")
            raw = conn.read_response()
        finally:
            conn.disconnect()
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        out = []
        for line in text.splitlines():
            f = line.split()
            if len(f) < 8:
                continue
            out.append(
                {
                    "id": f[0],
                    "port": int(f[1].split("@")[0].rsplit(":", 1)[1]),
                    "flags": [x for x in f[2].split(",") if x != "myself"],
                    "master": f[3],
                    "link": f[7],
                    "slots": [s for s in f[8:] if not s.startswith("[")],
                    "open": any(s.startswith("[") for s in f[8:]),
                }
            )
        return out

    def client(self, **kw: object) -> "redis.RedisCluster":
        return redis.RedisCluster(host="127.0.0.1", port=self.live()[0].port, **kw)  # type: ignore[arg-type]

    def primary_ports(self) -> List[int]:
        return sorted(
            n["port"]
            for n in self._raw_nodes(self.live()[0].port)  # type: ignore[misc]
            if "master" in n["flags"] and n["slots"]
        )  # type: ignore[operator]
