"""Part callgrind: instructions per item (whole server and the module's own code) under
valgrind, and per pipelined single-item request."""

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


def part_callgrind(cfg):
    n = 20_000 if cfg.quick else 200_000
    n_single = 10_000 if cfg.quick else 100_000
    batch = 500
    items = encode_batches([b"item:%06d" % i for i in range(n)], batch)

    def batches(srv):
        send_all(srv, "BF.MADD", "cg", items)
        send_all(srv, "BF.MEXISTS", "cg", items)

    def single_add(srv):
        redis_benchmark(srv.port, n_single, "BF.ADD", "cg", "__rand_int__")

    def single_add_exists(srv):
        single_add(srv)
        redis_benchmark(srv.port, n_single, "BF.EXISTS", "cg", "__rand_int__")

    # Every run starts the same server and reserves the same filter; differences between runs
    # are the cost of what one does more than the other.
    runs = (("baseline", "reserve only", lambda srv: None),
            ("batches", f"{n:,} MADD + {n:,} MEXISTS items in batches of {batch}", batches),
            ("single-add", f"{n_single:,} pipelined BF.ADD", single_add),
            ("single-add-exists", f"{n_single:,} pipelined BF.ADD, then {n_single:,} BF.EXISTS", single_add_exists))
    res = {"items_madd": n, "items_mexists": n, "batch": batch, "single_requests": n_single, "modules": {}}
    # scalebloom once more with `layout blocked` (every RESERVE of the run makes a blocked
    # filter): LAYOUT BLOCKED's own row.
    s_module = dict((k, m) for k, _, m in cfg.modules)[S]
    variants = [(key, name, module, ()) for key, name, module in cfg.modules]
    variants.append((KB, "scalebloom, LAYOUT BLOCKED", s_module, ("layout", "blocked")))
    for key, name, module, args in variants:
        raw = {}
        for tag, what, work in runs:
            log(f"callgrind: {name}: {what}")
            raw[tag] = callgrind_run(cfg, key, module, tag, n, work, args)
        (t0, m0), (t1, m1) = raw["baseline"], raw["batches"]
        row = {"server_ir_per_item": (t1 - t0) / (2 * n), "module_ir_per_item": (m1 - m0) / (2 * n),
               "raw": {tag: {"total": t, "module": m} for tag, (t, m) in raw.items()}}
        (t2, m2), (t3, m3) = raw["single-add"], raw["single-add-exists"]
        row["single"] = {"add": {"server": (t2 - t0) / n_single, "module": (m2 - m0) / n_single},
                         "exists": {"server": (t3 - t2) / n_single, "module": (m3 - m2) / n_single}}
        res["modules"][key] = row
    return res


def report_callgrind(r):
    a, b = r["modules"][S], r["modules"][RB]
    out = [f"### Instructions per item (callgrind)\n\n{r['items_madd']:,} BF.MADD + "
           f"{r['items_mexists']:,} BF.MEXISTS items (`item:NNNNNN`) in batches of {r['batch']}, "
           "minus a reserve-only run; lower is better."]
    rows = []
    for what, k, t in (("whole server", "server_ir_per_item", "callgrind_server"),
                       ("module's own code", "module_ir_per_item", "callgrind_module")):
        q = ratio(a[k], b[k])
        rows.append((what, f"{a[k]:.0f}", f"{b[k]:.0f}", f"{q:.2f}×", verdict(t, q)))
    out.append(table(("Ir per item", "scalebloom", "RedisBloom", "ratio", "target"), rows))
    if KB in r["modules"]:
        kb = r["modules"][KB]
        rows = []
        for what, k, t in (("whole server", "server_ir_per_item", "callgrind_server"),
                           ("module's own code", "module_ir_per_item", "callgrind_module_blocked")):
            q = ratio(kb[k], b[k])
            rows.append((what, f"{kb[k]:.0f}", f"{b[k]:.0f}", f"{q:.2f}×", verdict(t, q)))
        out.append("The same batches into a `LAYOUT BLOCKED` filter (scalebloom with `layout "
                   "blocked`: every probe of an item in one 512-bit block):\n\n" + table(
                       ("Ir per item", "scalebloom blocked", "RedisBloom", "ratio", "target"), rows))
    out.append(f"Single-item commands, pipelined as in the throughput part below (`redis-benchmark "
               f"-P 64 -c 50 -r {r['single_requests']:,}`), {r['single_requests']:,} requests each, "
               "under callgrind: instructions per request, the load-independent view of "
               "\"never slower\".")
    rows = []
    for op, label in (("add", "BF.ADD"), ("exists", "BF.EXISTS")):
        x, y = a["single"][op], b["single"][op]
        q = ratio(x["server"], y["server"])
        rows.append((label, f"{x['server']:.0f}", f"{y['server']:.0f}", f"{q:.2f}×",
                     verdict("callgrind_single", q), f"{x['module']:.0f}", f"{y['module']:.0f}"))
    out.append(table(("Ir per request", "scalebloom server", "RedisBloom server", "ratio", "target",
                      "scalebloom module", "RedisBloom module"), rows))
    return out

