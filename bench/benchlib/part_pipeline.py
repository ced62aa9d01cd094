"""Part pipeline: requests/s of `redis-benchmark -P 64` for BF.ADD and BF.EXISTS."""

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


PIPELINE_OPS = (("add", "BF.ADD"), ("exists", "BF.EXISTS"))


def part_pipeline(cfg):
    n = 200_000 if cfg.quick else 1_000_000
    rounds = 1 if cfg.quick else 9
    res = {"requests": n, "rounds": rounds, "modules": {}, "ratios": {}}
    runs = {key: {op: [] for op, _ in PIPELINE_OPS} for key, _, _ in cfg.modules}
    cpu = {key: {op: [] for op, _ in PIPELINE_OPS} for key, _, _ in cfg.modules}
    ratios = {op: [] for op, _ in PIPELINE_OPS}
    # Both (small) servers stay up, and each command runs on one module right after the other
    # (order alternating by round). Load from others on the shared machine moves the absolute
    # numbers a lot between minutes; the ratio of each back-to-back pair moves much less, and
    # the report shows the round whose ratio is the median of those, all its figures. The
    # servers' CPU time per request (from INFO cpu) is recorded for every run as well.
    servers = []
    try:
        for key, _, module in cfg.modules:
            servers.append((key, Server(cfg, key, module).start()))
        for r in range(rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            log(f"pipeline: round {r + 1}/{rounds}")
            for _, srv in order:
                srv.client.delete("pk")
                srv.client.execute_command("BF.RESERVE", "pk", "0.01", n)
            for op, cmd in PIPELINE_OPS:
                rps = {}
                for key, srv in order:
                    cpu0 = server_cpu(srv.client)
                    rps[key] = redis_benchmark(srv.port, n, cmd, "pk", "__rand_int__")
                    cpu[key][op].append((server_cpu(srv.client) - cpu0) * 1e6 / n)
                    runs[key][op].append(rps[key])
                ratios[op].append(ratio(rps["scalebloom"], rps["redisbloom"]))
        for _, srv in servers:
            srv.stop()
    finally:
        for _, srv in servers:
            srv.cleanup()
    for key in runs:
        res["modules"][key] = {op: {"median": statistics.median(runs[key][op]), "runs": runs[key][op],
                                    "cpu_us_per_request": statistics.median(cpu[key][op]),
                                    "cpu_runs": cpu[key][op]}
                               for op, _ in PIPELINE_OPS}
    res["ratios"] = {op: {"median": statistics.median(v), "runs": v} for op, v in ratios.items()}
    # The report takes every figure of a row from one round, the one with the median ratio, so
    # that its requests/s, ratio and CPU columns cannot contradict each other (the medians of
    # each module's requests/s come from different rounds and need not match the median ratio).
    res["median_round"] = {op: median_index(v) for op, v in ratios.items()}
    return res


def report_pipeline(r):
    out = [f"### Pipelined throughput (`redis-benchmark -P 64 -c 50 -n {r['requests']:,} "
           f"-r {r['requests']:,}`)\n\n{plural(r['rounds'], 'round')}, each command on both modules back to "
           "back (the order alternates); higher requests/s is better. Every figure of a row comes "
           "from one round: the round whose scalebloom / RedisBloom ratio of requests/s is the "
           "median of the rounds' ratios (`round`), so the columns agree with each other. Load "
           "from others moves absolute numbers by tens of percent between minutes; a pair run "
           "seconds apart much less. Server CPU µs per request (INFO cpu; lower is better) is "
           "from the same round (see the callgrind table for the load-independent count)."]
    rows = []
    for op, label in PIPELINE_OPS:
        m = r["median_round"][op]
        a, b = r["modules"][S][op], r["modules"][RB][op]
        x, y = a["runs"][m], b["runs"][m]
        cx, cy = a["cpu_runs"][m], b["cpu_runs"][m]
        q = ratio(x, y)
        rows.append((label, f"{x:,.0f}", f"{y:,.0f}", f"{q:.2f}×", verdict("pipeline", q),
                     f"{m + 1} of {r['rounds']}", f"{min(r['ratios'][op]['runs']):.2f}–"
                     f"{max(r['ratios'][op]['runs']):.2f}×", f"{cx:.2f}", f"{cy:.2f}",
                     f"{ratio(cx, cy):.2f}×"))
    out.append(table(("command", "scalebloom req/s", "RedisBloom req/s", "ratio", "target", "round",
                      "ratios, all rounds", "scalebloom CPU µs/req", "RedisBloom CPU µs/req",
                      "CPU ratio"), rows))
    return out

