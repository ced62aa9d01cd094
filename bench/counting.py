#!/usr/bin/env python3
"""Counting filters against RedisBloom's cuckoo filter, the deletable filter users would pick.

A separate script rather than a part of bench/compare (issue 13; bench/compare may be under
someone else's edit): the same items go through, per server and per filter, one phase at a time
with INFO commandstats reset before each, so the server-side time per call (client time
excluded) is read off `usec / calls`:

  add      BF.ADD (plain and COUNTING 4/8 filters) / CF.ADD, every item once
  exists   BF.EXISTS / CF.EXISTS of every item (all present), then of as many absent ones
  delete   BF.DEL / CF.DEL of every item (the plain filter has none)
  madd/mexists/mdel   the same through BF.MADD / BF.MEXISTS / BF.MDEL and CF.INSERT /
           CF.MEXISTS in batches of 1,000 (RedisBloom has no multi-item delete)

Single-item commands are sent in pipelines of 1,000. Sizes: capacity N at 1% for the Bloom
filters; `CF.RESERVE key N` (bucket size 2, 8-bit fingerprints: ~3% error at capacity) for the
cuckoo filter. Memory is BF.INFO / CF.INFO Size.

    python3 bench/counting.py <redisbloom.so> <libscalebloom.so> [items]

with redis-py installed (the repo's .venv has it); `bash scripts/venv-tool .venv redisbloom` prints
RedisBloom's path. Both modules register BF.*, so each runs in its own redis-server.
"""
import socket
import subprocess
import sys
import time

import redis

PIPE = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(module):
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
         "--loadmodule", module],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        try:
            conn = redis.Redis(port=port)
            conn.ping()
            return proc, conn
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)  # polling for startup
    raise SystemExit(f"redis-server on {port} did not start")


def per_call_ns(conn, cmd, run):
    """Runs `run()` after INFO commandstats is reset; server-side ns per call of `cmd`."""
    conn.execute_command("CONFIG", "RESETSTAT")
    run()
    s = conn.info("commandstats")[f"cmdstat_{cmd.lower()}"]
    return s["usec"] * 1000 / s["calls"], s["calls"]


def singles(conn, cmd, key, items):
    def run():
        for i in range(0, len(items), PIPE):
            p = conn.pipeline(transaction=False)
            for item in items[i:i + PIPE]:
                p.execute_command(cmd, key, item)
            p.execute()
    return run


def batches(conn, cmd, key, items, prefix=()):
    def run():
        for i in range(0, len(items), PIPE):
            conn.execute_command(cmd, key, *prefix, *items[i:i + PIPE])
    return run


def measure(conn, kind, key, items, absent):
    """(phase, ns per item) rows for one filter; `kind` is "bf", "bf-counting" or "cf"."""
    rows = []
    cf = kind == "cf"
    add, exists, delete = ("CF.ADD", "CF.EXISTS", "CF.DEL") if cf else ("BF.ADD", "BF.EXISTS", "BF.DEL")
    ns, _ = per_call_ns(conn, add, singles(conn, add, key, items))
    rows.append(("add", ns))
    ns, _ = per_call_ns(conn, exists, singles(conn, exists, key, items))
    rows.append(("exists (present)", ns))
    ns, _ = per_call_ns(conn, exists, singles(conn, exists, key, absent))
    rows.append(("exists (absent)", ns))
    size = info_size(conn, key, cf)
    if kind != "bf":
        ns, _ = per_call_ns(conn, delete, singles(conn, delete, key, items))
        rows.append(("delete", ns))
    # Batched, on a fresh filter (made by the caller's `remake`).
    return rows, size


def info_size(conn, key, cf):
    info = conn.execute_command("CF.INFO" if cf else "BF.INFO", key)
    if not isinstance(info, dict):  # redis-py parses some module replies itself
        info = dict(zip(info[::2], info[1::2]))
    info = {(k.decode() if isinstance(k, bytes) else k): v for k, v in info.items()}
    return int(info.get("Size", info.get("size")))


def measure_batched(conn, kind, key, items, absent):
    rows = []
    if kind == "cf":
        ns, calls = per_call_ns(conn, "CF.INSERT", batches(conn, "CF.INSERT", key, items, (b"ITEMS",)))
        rows.append(("madd", ns * calls / len(items)))
        ns, calls = per_call_ns(conn, "CF.MEXISTS", batches(conn, "CF.MEXISTS", key, items))
        rows.append(("mexists (present)", ns * calls / len(items)))
        ns, calls = per_call_ns(conn, "CF.MEXISTS", batches(conn, "CF.MEXISTS", key, absent))
        rows.append(("mexists (absent)", ns * calls / len(absent)))
        return rows
    ns, calls = per_call_ns(conn, "BF.MADD", batches(conn, "BF.MADD", key, items))
    rows.append(("madd", ns * calls / len(items)))
    ns, calls = per_call_ns(conn, "BF.MEXISTS", batches(conn, "BF.MEXISTS", key, items))
    rows.append(("mexists (present)", ns * calls / len(items)))
    ns, calls = per_call_ns(conn, "BF.MEXISTS", batches(conn, "BF.MEXISTS", key, absent))
    rows.append(("mexists (absent)", ns * calls / len(absent)))
    if kind == "bf-counting":
        ns, calls = per_call_ns(conn, "BF.MDEL", batches(conn, "BF.MDEL", key, items))
        rows.append(("mdel", ns * calls / len(items)))
    return rows


def main():
    rb_module, sb_module = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
    items = [b"item:%08d" % i for i in range(n)]
    absent = [b"absent:%08d" % i for i in range(n)]
    rb_proc, rb = start(rb_module)
    sb_proc, sb = start(sb_module)
    filters = [
        ("scalebloom BF (plain)", sb, "bf", ["BF.RESERVE", "{k}", "0.01", n]),
        ("scalebloom BF COUNTING 4", sb, "bf-counting", ["BF.RESERVE", "{k}", "0.01", n, "COUNTING", "4"]),
        ("scalebloom BF COUNTING 8", sb, "bf-counting", ["BF.RESERVE", "{k}", "0.01", n, "COUNTING", "8"]),
        ("RedisBloom CF", rb, "cf", ["CF.RESERVE", "{k}", n]),
    ]
    results = {}
    try:
        for name, conn, kind, reserve in filters:
            for key in ("single", "batched"):
                conn.execute_command(*[key if a == "{k}" else a for a in reserve])
            rows, size = measure(conn, kind, "single", items, absent)
            rows += measure_batched(conn, kind, "batched", items, absent)
            results[name] = (dict(rows), size)
            for key in ("single", "batched"):
                conn.delete(key)
    finally:
        rb_proc.kill()
        sb_proc.kill()
    phases = ["add", "exists (present)", "exists (absent)", "delete",
              "madd", "mexists (present)", "mexists (absent)", "mdel"]
    names = list(results)
    print(f"{n:,} items; server-side ns per item (INFO commandstats)\n")
    print("| | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for phase in phases:
        cells = [f"{results[x][0][phase]:.0f}" if phase in results[x][0] else "—" for x in names]
        print(f"| {phase} | " + " | ".join(cells) + " |")
    cells = [f"{results[x][1] * 8 / n:.1f}" for x in names]
    print("| bits per item (Size) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
