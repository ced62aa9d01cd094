"""Part rdbload: loading an RDB that holds one 1 GiB filter."""

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

from .client import *  # noqa: F401,F403
from .harness import *  # noqa: F401,F403
from .harness import _LIVE  # noqa: F401


def load_seconds(srv):
    """The server's own time for loading its RDB: the last `DB loaded from disk: X seconds` line
    of its log."""
    text = open(os.path.join(srv.dir, "server.log"), errors="replace").read()
    found = re.findall(r"DB loaded from disk: ([0-9.]+) seconds", text)
    if not found:
        raise BenchError(f"{srv.name}: no 'DB loaded from disk' line in the server log")
    return float(found[-1])


def rdbload_run(cfg, key, module, args, workdir, sample, info_size):
    """Starts a server on `workdir`'s dump.rdb, waits until it answers (it answers -LOADING while
    loading), checks the filter, and reads the load time and the process's peak RSS."""
    with Server(cfg, key, module, module_args=args, workdir=workdir) as srv:
        c = srv.client
        cpu = c.info("cpu")  # the server has done little but load so far
        row = {"load_seconds": load_seconds(srv), "ready_seconds": srv.ready_seconds,
               "peak_rss": proc_status(srv.proc.pid, "VmHWM"), "rss": proc_status(srv.proc.pid, "VmRSS"),
               "cpu_user": float(cpu["used_cpu_user"]), "cpu_sys": float(cpu["used_cpu_sys"])}
        if bf_info(c, "big", "SIZE") != info_size:
            raise BenchError(f"{srv.name}: the loaded filter's size differs from the saved one")
        if c.execute_command("BF.MEXISTS", "big", *sample) != [1] * len(sample):
            raise BenchError(f"{srv.name}: items added before the save are missing after the load")
    return row


def part_rdbload(cfg):
    capacity = 14_000_000 if cfg.quick else 900_000_000  # about 16 MiB, or 1.08 GB (1.004 GiB)
    n = 200_000 if cfg.quick else 2_000_000
    rounds = 1 if cfg.quick else 3
    items = encode_batches([b"item:%d" % i for i in range(n)], 1000)
    sample = [b"item:%d" % i for i in range(0, n, n // 100)]
    res = {"capacity": capacity, "items": n, "rounds": rounds, "modules": {}}
    # scalebloom with `huge-pages no` loads scalebloom's RDB (the setting is not in the file):
    # the cost of huge pages at load, measured in the same run, as in the large part. The
    # large part's `LAYOUT BLOCKED` variant is not run here: its filter loads as the same one
    # bit array, so its load would repeat scalebloom's row.
    variants = [v for v in large_variants(cfg) if v[0] != KB]
    dirs = {}
    try:
        # One server at a time: each module saves its own RDB, then they load in turn.
        for key, name, module in cfg.modules:
            dirs[key] = tempfile.mkdtemp(prefix=f"scalebloom-bench-rdb-{key}-")
            log(f"rdbload: {name}: BF.RESERVE big 0.01 {capacity:,} NONSCALING, {n:,} items, SAVE")
            with Server(cfg, key, module, workdir=dirs[key]) as srv:
                srv.client.execute_command("BF.RESERVE", "big", "0.01", capacity, "NONSCALING")
                send_all(srv, "BF.MADD", "big", items)
                info_size = bf_info(srv.client, "big", "SIZE")
                srv.client.save()
            res["modules"][key] = {"info_size": info_size,
                                   "rdb_bytes": os.path.getsize(os.path.join(dirs[key], "dump.rdb")),
                                   "runs": []}
        dirs[K4] = dirs["scalebloom"]
        res["modules"][K4] = dict(res["modules"]["scalebloom"], runs=[])
        for r in range(rounds):
            for key, name, module, args in (variants if r % 2 == 0 else variants[::-1]):
                log(f"rdbload: {name}: load, round {r + 1}/{rounds}")
                row = rdbload_run(cfg, key, module, args, dirs[key], sample, res["modules"][key]["info_size"])
                res["modules"][key]["runs"].append(row)
    finally:
        for d in set(dirs.values()):
            shutil.rmtree(d, ignore_errors=True)
    for key, m in res["modules"].items():
        for field in ("load_seconds", "ready_seconds", "peak_rss", "rss", "cpu_user", "cpu_sys"):
            m[field] = statistics.median(x[field] for x in m["runs"])
    return res


def report_rdbload(r):
    a, b, c4 = r["modules"][S], r["modules"][RB], r["modules"][K4]
    out = [f"### Loading an RDB with one large filter\n\n`BF.RESERVE big 0.01 {r['capacity']:,} "
           f"NONSCALING` (BF.INFO Size {a['info_size']:,} bytes), {r['items']:,} items added, SAVE; "
           "then a server started on that RDB, one at a time, each module its own file. Load time "
           "from the server's log (`DB loaded from disk: X seconds`); peak RSS is the process's "
           "VmHWM (/proc/PID/status) after the load, which covers the whole load. Median of "
           f"{plural(r['rounds'], 'alternating start')}; lower is better. The last two columns load "
           "scalebloom's RDB with `huge-pages no`, in the same run."]
    rows = []
    for label, k, unit, tgt in (("load time, s", "load_seconds", 1, "rdb_load_time"),
                                ("start to first PONG, s", "ready_seconds", 1, None),
                                ("server CPU at first PONG, user, s", "cpu_user", 1, None),
                                ("server CPU at first PONG, system, s", "cpu_sys", 1, None),
                                ("peak RSS, MiB", "peak_rss", MIB, "rdb_peak_rss"),
                                ("RSS after the load, MiB", "rss", MIB, None)):
        fmt = (lambda v: f"{v:.3f}") if unit == 1 else (lambda v: f"{v / unit:,.0f}")
        q = ratio(a[k], b[k])
        rows.append((label, fmt(a[k]), fmt(b[k]), f"{q:.2f}×", verdict(tgt, q) if tgt else "",
                     fmt(c4[k]), f"{ratio(c4[k], b[k]):.2f}×"))
    rows.append(("peak above RSS after the load, MiB", f"{(a['peak_rss'] - a['rss']) / MIB:,.0f}",
                 f"{(b['peak_rss'] - b['rss']) / MIB:,.0f}", "", "", f"{(c4['peak_rss'] - c4['rss']) / MIB:,.0f}", ""))
    rows.append(("RDB file, MiB", f"{a['rdb_bytes'] / MIB:,.1f}", f"{b['rdb_bytes'] / MIB:,.1f}",
                 f"{ratio(a['rdb_bytes'], b['rdb_bytes']):.2f}×", "", "", ""))
    out.append(table(("measure", "scalebloom", "RedisBloom", "ratio", "target", "huge-pages no",
                      "huge-pages no ratio"), rows))
    return out

