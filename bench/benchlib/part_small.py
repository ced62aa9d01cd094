"""Part small: many small filters (creation, throughput across them, Ir per creation, memory
per filter, churn)."""

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


def small_key(i):
    """The key of filter i, as redis-benchmark writes `f:__rand_int__` (12 digits)."""
    return b"f:%012d" % i


SMALL_CREATE = (("reserve", "BF.RESERVE k 0.01 1000"), ("auto", "BF.ADD to a new key (defaults: 0.01, 100)"))


SMALL_ITEMS = (("add", "BF.ADD"), ("exists", "BF.EXISTS"))


PIPE_DEPTH = 64  # commands per write of each client, as `redis-benchmark -P 64`


def small_round(srv, filters, items, pipes):
    """One module, one round: FLUSHALL, create the filters (half by BF.RESERVE, half by BF.ADD)
    with 50 clients, then BF.ADD and BF.EXISTS of random items across them."""
    c = srv.client
    c.flushall()
    wait_clients(c, 1)
    errors0 = error_replies(c)
    row = {}
    for kind, _ in SMALL_CREATE:
        mem0, cpu0 = used_memory(c), server_cpu(c)
        seconds = drive_pipes(srv, pipes[kind])
        count = filters // 2
        row[kind] = {"per_second": count / seconds, "cpu_us": (server_cpu(c) - cpu0) * 1e6 / count,
                     "bytes_per_filter": (used_memory(c) - mem0) / count}
    if int(c.dbsize()) != filters:
        raise BenchError(f"{srv.name}: {c.dbsize()} keys after creating {filters} filters")
    for op, cmd in SMALL_ITEMS:
        cpu0 = server_cpu(c)
        rps = redis_benchmark(srv.port, items, cmd, "f:__rand_int__", "i:__rand_int__", keyspace=filters)
        row[op] = {"per_second": rps, "cpu_us": (server_cpu(c) - cpu0) * 1e6 / items}
    if error_replies(c) != errors0:
        raise BenchError(f"{srv.name}: {error_replies(c) - errors0} error replies during the round")
    return row


def small_throughput(cfg, filters, items, rounds):
    half = filters // 2
    pipe_dir = tempfile.mkdtemp(prefix="scalebloom-bench-pipes-")
    pipes = {
        "reserve": pipe_files(pipe_dir, "reserve",
                              [resp("BF.RESERVE", small_key(i), "0.01", 1000) for i in range(half)], 50),
        "auto": pipe_files(pipe_dir, "auto", [resp("BF.ADD", small_key(i), b"first") for i in range(half, filters)], 50),
    }
    runs = {key: [] for key, _, _ in cfg.modules}
    servers = []
    try:
        for key, _, module in cfg.modules:
            servers.append((key, Server(cfg, key, module).start()))
        for r in range(rounds):
            for key, srv in (servers if r % 2 == 0 else servers[::-1]):
                log(f"small: {srv.name}: round {r + 1}/{rounds}: {filters:,} filters, "
                    f"{items:,} BF.ADD + {items:,} BF.EXISTS across them")
                runs[key].append(small_round(srv, filters, items, pipes))
        for _, srv in servers:
            srv.stop()
    finally:
        for _, srv in servers:
            srv.cleanup()
        shutil.rmtree(pipe_dir, ignore_errors=True)
    return runs


def small_callgrind(cfg, n):
    """Ir per filter created, from three callgrind runs per module that differ only in how many
    filters they create: N and 2N BF.RESERVE (the difference is N creations by RESERVE, with
    their dispatch and reply), and N BF.RESERVE + N BF.ADD to new keys (N auto-creations)."""
    reserve = [resp("BF.RESERVE", small_key(i), "0.01", 1000) for i in range(2 * n)]
    auto = [resp("BF.ADD", b"g:%012d" % i, b"first") for i in range(n)]
    runs = {
        "reserve_n": chunked(reserve[:n], b"+OK\r\n", PIPE_DEPTH),
        "reserve_2n": chunked(reserve, b"+OK\r\n", PIPE_DEPTH),
        "reserve_n_auto_n": chunked(reserve[:n], b"+OK\r\n", PIPE_DEPTH) + chunked(auto, b":1\r\n", PIPE_DEPTH),
    }
    res = {}
    for key, name, module in cfg.modules:
        raw = {}
        for tag, chunks in runs.items():
            log(f"small: callgrind: {name}: {tag}")
            raw[tag] = callgrind_run(cfg, key, module, f"small-{tag}", 1000,
                                     lambda srv, chunks=chunks: drive(srv, chunks))
        (t1, m1), (t2, m2), (t3, m3) = raw["reserve_n"], raw["reserve_2n"], raw["reserve_n_auto_n"]
        res[key] = {"reserve": {"server": (t2 - t1) / n, "module": (m2 - m1) / n},
                    "auto": {"server": (t3 - t1) / n, "module": (m3 - m1) / n},
                    "raw": {tag: {"total": t, "module": m} for tag, (t, m) in raw.items()}}
    return res


CHURN = (("reserve", "BF.RESERVE k 0.01 1000, DEL k"),
         ("layers", "BF.RESERVE k 0.01 10, BF.MADD k (40 items: 3 layers), DEL k"))


def churn_commands(kind, i):
    key = b"c:%d" % i
    if kind == "reserve":
        return resp("BF.RESERVE", key, "0.01", 1000) + resp("DEL", key)
    return (resp("BF.RESERVE", key, "0.01", 10) + resp("BF.MADD", key, *(b"x%d" % j for j in range(40)))
            + resp("DEL", key))


# Each cycle's replies: OK, (for "layers" an array of 40 zeros and ones,) 1 deleted key.
CHURN_REPLY = {"reserve": b"+OK\r\n:1\r\n",
               "layers": (5 + 5 + 40 * 4 + 4, rb"\+OK\r\n\*40\r\n(?::[01]\r\n){40}:1\r\n")}


def small_churn(cfg, cycles, warmup=1000):
    """used_memory after creating and deleting `cycles` filters, per filter, relative to where it
    was after `warmup` such cycles (which take the one-time allocations: command statistics,
    the module's own first-use state). One connection, 64 commands per write."""
    res = {}
    for key, name, module in cfg.modules:
        with Server(cfg, key, module) as srv:
            c = srv.client
            # The "layers" cycle must really grow three layers.
            c.execute_command("BF.RESERVE", "probe", "0.01", 10)
            c.execute_command("BF.MADD", "probe", *(b"x%d" % j for j in range(40)))
            layers = bf_info(c, "probe", "FILTERS")
            if layers != 3:
                raise BenchError(f"{name}: the churn filter has {layers} layers, not 3")
            c.delete("probe")
            row = {}
            for kind, what in CHURN:
                drive(srv, chunked([churn_commands(kind, i) for i in range(warmup)], CHURN_REPLY[kind], PIPE_DEPTH))
                log(f"small: churn: {name}: {cycles:,} × ({what})")
                mem0, rss0 = used_memory(c), int(c.info("memory")["used_memory_rss"])
                chunks = chunked([churn_commands(kind, i) for i in range(cycles)], CHURN_REPLY[kind], PIPE_DEPTH)
                drive(srv, chunks)
                row[kind] = {"used_memory_per_filter": (used_memory(c) - mem0) / cycles,
                             "rss_per_filter": (int(c.info("memory")["used_memory_rss"]) - rss0) / cycles}
            if int(c.dbsize()) != 0:
                raise BenchError(f"{name}: keys left after the churn")
        res[key] = row
    return res


def part_small(cfg):
    filters = 20_000 if cfg.quick else 200_000
    items = 100_000 if cfg.quick else 1_000_000
    # Five rounds: single rounds of the creation phases spread 0.8–1.3× on a shared 2-core VM.
    rounds = 1 if cfg.quick else 5
    cg_n = 2_000
    cycles = 5_000 if cfg.quick else 50_000
    res = {"filters": filters, "items": items, "rounds": rounds, "callgrind_filters": cg_n,
           "churn_cycles": cycles}
    res["runs"] = small_throughput(cfg, filters, items, rounds)
    res["callgrind"] = small_callgrind(cfg, cg_n)
    res["churn"] = small_churn(cfg, cycles)
    return res


def report_small(r):
    rounds = r["rounds"]
    out = [f"### Many small filters\n\n{r['filters']:,} filters in one server: half created by "
           "`BF.RESERVE f:N 0.01 1000`, half by `BF.ADD f:N first` on a new key (the defaults: "
           "error 0.01, capacity 100), sent by 50 clients at once: 50 `redis-cli --pipe` processes, "
           "each with its share of the commands (each reply read; an error or a missing reply "
           "fails the run). Then `redis-benchmark -P 64 -c 50 -n "
           f"{r['items']:,} -r {r['filters']:,}` with `BF.ADD f:__rand_int__ i:__rand_int__`, and "
           f"the same with BF.EXISTS: random items across all the filters. {plural(rounds, 'round')} "
           "per module, alternating, each after a FLUSHALL; both "
           "servers up. Every figure of a row is from one round, the one with the median ratio "
           "(`round`); the CPU columns are the server's user + system CPU time (INFO cpu) per "
           "request of that round."]
    rows = []
    for key, label, unit in (("reserve", "create: BF.RESERVE", "filters/s"),
                             ("auto", "create: BF.ADD, new key", "filters/s"),
                             ("add", "items: BF.ADD", "items/s"), ("exists", "items: BF.EXISTS", "items/s")):
        a, b = r["runs"][S], r["runs"][RB]
        ratios = [ratio(x[key]["per_second"], y[key]["per_second"]) for x, y in zip(a, b)]
        m = median_index(ratios)
        x, y = a[m][key], b[m][key]
        rows.append((label, unit, f"{x['per_second']:,.0f}", f"{y['per_second']:,.0f}", f"{ratios[m]:.2f}×",
                     verdict("small_rate", ratios[m]), f"{m + 1} of {rounds}",
                     f"{min(ratios):.2f}–{max(ratios):.2f}×", f"{x['cpu_us']:.2f}", f"{y['cpu_us']:.2f}",
                     f"{ratio(x['cpu_us'], y['cpu_us']):.2f}×"))
    out.append(table(("phase", "unit", "scalebloom", "RedisBloom", "ratio", "target", "round",
                      "ratios, all rounds", "scalebloom CPU µs/req", "RedisBloom CPU µs/req",
                      "CPU ratio"), rows))
    rows = []
    for key, label in SMALL_CREATE:
        xs = [x[key]["bytes_per_filter"] for x in r["runs"][S]]
        ys = [y[key]["bytes_per_filter"] for y in r["runs"][RB]]
        x, y = statistics.median(xs), statistics.median(ys)
        rows.append((label, f"{x:,.1f}", f"{y:,.1f}", f"{round(x - y, 1) + 0.0:+,.1f}", f"{ratio(x, y):.4f}×",
                     verdict("memory", ratio(x, y), 4)))
    out.append("Bytes per filter: used_memory after creating the half minus before, divided by the "
               f"{r['filters'] // 2:,} filters (the key, Redis's dictionary entry and its growth, "
               "the filter and allocator rounding; median of the rounds):\n\n"
               + table(("filters created by", "scalebloom B/filter", "RedisBloom B/filter", "Δ bytes",
                        "ratio", "target"), rows))
    rows = []
    cg = r["callgrind"]
    for key, label in SMALL_CREATE:
        x, y = cg[S][key], cg[RB][key]
        q = ratio(x["server"], y["server"])
        rows.append((label, f"{x['server']:,.0f}", f"{y['server']:,.0f}", f"{q:.2f}×",
                     verdict("small_ir_create", q), f"{x['module']:,.0f}", f"{y['module']:,.0f}"))
    n = r["callgrind_filters"]
    out.append(f"Instructions per filter created (callgrind, whole server): runs that create {n:,} and "
               f"{2 * n:,} filters by BF.RESERVE, and {n:,} by RESERVE plus {n:,} by BF.ADD on new "
               f"keys, pipelined 64 deep; the differences divided by {n:,}. Dispatch and reply are "
               "included.\n\n"
               + table(("filters created by", "scalebloom Ir", "RedisBloom Ir", "ratio", "target",
                        "scalebloom module Ir", "RedisBloom module Ir"), rows))
    rows = []
    for key, label in CHURN:
        x, y = r["churn"][S][key], r["churn"][RB][key]
        rows.append((label, f"{x['used_memory_per_filter']:+.2f}", verdict("small_churn", x["used_memory_per_filter"]),
                     f"{y['used_memory_per_filter']:+.2f}", f"{x['rss_per_filter']:+.1f}",
                     f"{y['rss_per_filter']:+.1f}"))
    out.append(f"Creating and deleting filters: used_memory after {r['churn_cycles']:,} cycles minus "
               "before them, per cycle (a fresh server per module, one connection, after 1,000 "
               "cycles of warm-up). The target is for scalebloom; RSS is shown for information "
               "(the allocator keeps freed pages, so it moves with more than leaks).\n\n"
               + table(("cycle", "scalebloom used_memory B/filter", "target", "RedisBloom used_memory B/filter",
                        "scalebloom RSS B/filter", "RedisBloom RSS B/filter"), rows))
    return out

