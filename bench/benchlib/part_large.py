"""Part large: ns per item against filter size, 1 MiB to 1 GiB, and the chart."""

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


def large_sizes(quick):
    """(label, capacity) of nonscaling 1% filters of about 1 MiB ... 1 GiB. The largest is the
    issue's `BF.RESERVE k 0.01 900000000 NONSCALING` (1.08 GB, 1.004 GiB)."""
    bpe = -__import__("math").log(0.01) / LN2_SQUARED
    sizes = [("1 MiB", int(MIB * 8 / bpe)), ("16 MiB", int(16 * MIB * 8 / bpe)),
             ("128 MiB", int(128 * MIB * 8 / bpe)), ("1 GiB", 900_000_000)]
    # BENCH_LARGE_SIZES="1 GiB" (comma-separated labels): only those, for a shorter run.
    only = os.environ.get("BENCH_LARGE_SIZES")
    if only:
        sizes = [s for s in sizes if s[0] in [x.strip() for x in only.split(",")]]
    return sizes


LARGE_PHASES = (("madd_first", "BF.MADD", "present"), ("madd_second", "BF.MADD", "present"),
                ("mexists_present", "BF.MEXISTS", "present"), ("mexists_absent", "BF.MEXISTS", "absent"))


def latency_percentiles(client, cmd):
    """(p99, max) in µs of `cmd` since the last CONFIG RESETSTAT, from INFO latencystats (Redis
    7+, with `latency-tracking-info-percentiles "99 100"`); (nan, nan) where unavailable."""
    raw = client.info("latencystats").get(f"latency_percentiles_usec_{cmd}")
    if isinstance(raw, str):
        raw = dict(kv.split("=") for kv in raw.split(","))
    if not raw:
        return float("nan"), float("nan")
    return float(raw.get("p99", "nan")), float(raw.get("p100", "nan"))


def large_run(cfg, key, module, capacity, items, module_args=(), fork=False):
    """One fresh server, one nonscaling filter, the four phases; stopped before returning.
    With `fork`, then a BGSAVE: how long its fork blocked the server, and the server-side time
    of a MADD of new items while the child is saving (the copy-on-write cost of writes)."""
    row = {}
    with Server(cfg, key, module, module_args=module_args) as srv:
        c = srv.client
        # Per-command latency percentiles: p99 and p100 (the slowest batch).
        with contextlib.suppress(Exception):
            c.config_set("latency-tracking-info-percentiles", "99 100")
        mem0 = used_memory(c)
        c.config_resetstat()
        c.execute_command("BF.RESERVE", "big", "0.01", capacity, "NONSCALING")
        row["info_size"] = bf_info(c, "big", "SIZE")
        row["reserve_ms"] = commandstat_usec(c, "bf.reserve") / 1000
        for phase, cmd, which in LARGE_PHASES:
            c.config_resetstat()
            send_all(srv, cmd, "big", items[which])
            row[phase] = commandstat_usec(c, cmd.lower()) * 1000 / items["n"]
            if phase == "madd_first":
                row["first_p99_us"], row["first_max_us"] = latency_percentiles(c, "bf.madd")
                row["settle_s"] = huge_pages_settled(c)
        row["used_memory_delta"] = used_memory(c) - mem0
        rss = c.info("memory")["used_memory_rss"]
        row["huge_pages_bytes"] = anon_huge_pages(srv.proc.pid)
        row["rss"] = rss
        if fork:
            c.config_resetstat()
            c.bgsave()
            send_all(srv, "BF.MADD", "big", items["during_save"])
            row["fork_ms"] = c.info("stats")["latest_fork_usec"] / 1000
            row["madd_during_save"] = commandstat_usec(c, "bf.madd") * 1000 / items["during_save_n"]
            row["saved_while_measuring"] = c.info("persistence")["rdb_bgsave_in_progress"] == 1
            while c.info("persistence")["rdb_bgsave_in_progress"]:
                time.sleep(0.05)  # waiting for the child to finish, not synchronising a result
        c.delete("big")
    return row


def part_large(cfg):
    n_max = 200_000 if cfg.quick else 2_000_000
    rounds = 1 if cfg.quick else 3
    batch = 1000
    variants = large_variants(cfg)
    res = {"batch": batch, "rounds": rounds, "sizes": [], "modules": {k: [] for k, _, _, _ in variants}}
    sizes = large_sizes(cfg.quick)
    for label, capacity in sizes:
        n = min(n_max, capacity // 2)
        during_save = 20_000
        items = {"n": n,
                 "present": encode_batches([b"item:%d" % i for i in range(n)], batch),
                 "absent": encode_batches([b"absent:%d" % i for i in range(n)], batch),
                 "during_save_n": during_save,
                 "during_save": encode_batches([b"saving:%d" % i for i in range(during_save)], batch)}
        res["sizes"].append({"label": label, "capacity": capacity, "items": n})
        # One server at a time, each with a fresh filter that is deleted and the server stopped
        # before the next starts. Modules alternate round by round, so a burst of someone
        # else's load on the shared machine hits both, and the median per phase drops it.
        runs = {k: [] for k, _, _, _ in variants}
        fork = (label, capacity) == sizes[-1]
        for r in range(rounds):
            for key, name, module, args in (variants if r % 2 == 0 else variants[::-1]):
                log(f"large: {name}: {label} filter (capacity {capacity:,}), {n:,} items, round {r + 1}/{rounds}")
                runs[key].append(large_run(cfg, key, module, capacity, items, args, fork))
        for key in runs:
            row = {"label": label, "items": n, "runs": runs[key]}
            for field in runs[key][0]:
                row[field] = statistics.median(x[field] for x in runs[key])
            res["modules"][key].append(row)
    return res


def write_chart(cfg, res, path):
    """Two panels (MADD, MEXISTS), ns per item against filter size, both modules; log axes,
    since the first pass over a fresh 1 GiB filter costs ten times the rest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), dpi=110, sharey=True)
    colors = {"scalebloom": "tab:blue", "redisbloom": "tab:red", "scalebloom_4k": "tab:cyan",
              "scalebloom_blocked": "tab:green"}
    panels = (("BF.MADD", (("madd_first", "-", "first pass"), ("madd_second", "--", "second pass"))),
              ("BF.MEXISTS", (("mexists_present", "-", "present items"), ("mexists_absent", "--", "absent items"))))
    xs = [r["info_size"] / MIB for r in res["modules"][cfg.modules[0][0]]]
    values = [r[phase] for rows in res["modules"].values() for r in rows for phase, _, _ in LARGE_PHASES]
    lo, hi = min(values), max(values)
    for ax, (title, lines) in zip(axes, panels):
        for key, name, _, _ in large_variants(cfg):
            rows = res["modules"][key]
            for phase, style, what in lines:
                ax.plot(xs, [r[phase] for r in rows], style, marker="o", color=colors[key],
                        label=f"{name}, {what}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([s["label"] for s in res["sizes"]])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks([t for t in (20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000,
                                   3000, 5000, 7000, 10000, 20000) if lo / 1.5 <= t <= hi * 1.5])
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("filter size (nonscaling, error 0.01)")
        ax.set_title(f"{title}, batches of {res['batch']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("ns per item, server-side (INFO commandstats)")
    fig.suptitle("scalebloom and RedisBloom 2.8 in the same redis-server: ns per item against filter size")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def report_large(r):
    return large_ns_tables(r) + large_latency_table(r) + large_memory_table(r) + large_fork_table(r)


def large_latency_table(r):
    """The slowest batches of the first pass: where a first-touch page fault is expensive, it
    shows here before it shows in the mean."""
    rows = []
    for i, size in enumerate(r["sizes"]):
        a, b, c4 = r["modules"][S][i], r["modules"][RB][i], r["modules"][K4][i]
        if "first_max_us" not in a:
            continue
        rows.append((size["label"], f"{a['first_p99_us']:,.0f}", f"{b['first_p99_us']:,.0f}",
                     f"{ratio(a['first_p99_us'], b['first_p99_us']):.2f}×",
                     f"{a['first_max_us']:,.0f}", f"{b['first_max_us']:,.0f}",
                     f"{ratio(a['first_max_us'], b['first_max_us']):.2f}×",
                     f"{c4['first_p99_us']:,.0f}", f"{c4['first_max_us']:,.0f}"))
    if not rows:
        return []
    return [f"Latency of the first pass: the server-side time of one BF.MADD batch of {r['batch']} "
            "items, its 99th percentile and its maximum (the slowest batch), µs, from `INFO "
            "latencystats` (percentiles `99 100`; a histogram, so values are rounded to its "
            f"buckets; median of {plural(r['rounds'], 'run')}):\n\n" + table(
                ("filter", "scalebloom p99", "RedisBloom p99", "ratio", "scalebloom max",
                 "RedisBloom max", "ratio", "huge-pages no p99", "huge-pages no max"), rows)]


def first_or(phase, target):
    """The target of a 1 GiB row: `target`, except on the first pass, whose time is mostly the
    first-touch page faults both modules take alike (bench/README.md, "Where the targets
    stand"): never slower than RedisBloom there (issue 23 item 1)."""
    return "large_1gib_first" if phase == "madd_first" else target


def large_ns_tables(r):
    out = [f"### ns per item (server-side, INFO commandstats), batches of {r['batch']}\n\n"
           "Nonscaling filters at error 0.01, a fresh server and filter per run, median of "
           f"{plural(r['rounds'], 'alternating run')}; lower is better. The 1 GiB filter is "
           "`BF.RESERVE k 0.01 900000000 NONSCALING`. `scalebloom` runs with its defaults: a large "
           "bit array's first touch takes 4 KiB pages, as RedisBloom's memory does, then a "
           "background thread moves it into huge pages; after the first pass the run waits until "
           "that is done (the wait is in the memory table below), so the second pass and the "
           "MEXISTS rows measure the filter as it stays. The last two columns are the same build "
           "with `huge-pages no` (4 KiB pages throughout), in the same run."]
    rows = []
    for i, size in enumerate(r["sizes"]):
        a, b, c4 = r["modules"][S][i], r["modules"][RB][i], r["modules"][K4][i]
        for k, label in (("madd_first", "MADD, first pass"), ("madd_second", "MADD, second pass"),
                         ("mexists_present", "MEXISTS, present"), ("mexists_absent", "MEXISTS, absent")):
            q = ratio(a[k], b[k])
            tgt = verdict(first_or(k, "large_1gib"), q) if size["label"] == "1 GiB" else ""
            rows.append((f"{size['label']} ({size['items']:,} items)", label, f"{a[k]:.0f}",
                         f"{b[k]:.0f}", f"{q:.2f}×", tgt, f"{c4[k]:.0f}", f"{ratio(c4[k], b[k]):.2f}×"))
    out.append(table(("filter", "command", "scalebloom ns", "RedisBloom ns", "ratio", "target",
                      "huge-pages no ns", "huge-pages no ratio"), rows))
    if r["modules"].get(KB):
        rows = []
        for i, size in enumerate(r["sizes"]):
            b, kb = r["modules"][RB][i], r["modules"][KB][i]
            for k, label in (("madd_first", "MADD, first pass"), ("madd_second", "MADD, second pass"),
                             ("mexists_present", "MEXISTS, present"), ("mexists_absent", "MEXISTS, absent")):
                q = ratio(kb[k], b[k])
                tgt = verdict(first_or(k, "large_1gib_blocked"), q) if size["label"] == "1 GiB" else ""
                rows.append((f"{size['label']} ({size['items']:,} items)", label, f"{kb[k]:.0f}",
                             f"{b[k]:.0f}", f"{q:.2f}×", tgt, f"{kb['info_size']:,}"))
        out.append("The same filters with `LAYOUT BLOCKED` (scalebloom with `layout blocked`, huge "
                   "pages as by default; a blocked filter holds a few percent more bits for the "
                   "same error, its BF.INFO Size in the last column):\n\n" + table(
                       ("filter", "command", "blocked ns", "RedisBloom ns", "ratio", "target",
                        "blocked BF.INFO Size"), rows))
    return out


def large_memory_table(r):
    rows = []
    for i, size in enumerate(r["sizes"]):
        a, b, c4 = r["modules"][S][i], r["modules"][RB][i], r["modules"][K4][i]
        rows.append((size["label"], f"{a['info_size']:,}", f"{a['used_memory_delta']:,}",
                     f"{b['used_memory_delta']:,}", f"{a['reserve_ms']:.1f}", f"{b['reserve_ms']:.1f}",
                     f"{a['huge_pages_bytes'] / MIB:,.0f} MiB", f"{c4['huge_pages_bytes'] / MIB:,.0f} MiB",
                     f"{b['huge_pages_bytes'] / MIB:,.0f} MiB",
                     f"{a['settle_s']:.1f}" if "settle_s" in a else "—"))
    return ["The same filters: BF.INFO Size (equal for both), used_memory after the run minus "
            "before the RESERVE (allocator rounding shows here), the time of the RESERVE "
            "itself (a module that zeroes its memory up front pays there, not in MADD), "
            "how much of the server's memory the kernel backed with transparent huge pages "
            "(`AnonHugePages` in /proc/PID/smaps_rollup, at the end of the run), and how long "
            "after the first pass scalebloom's huge-page thread took to finish with the filter "
            "(`INFO bf` `bf_huge_pages_waiting 0`; the run waits for it before the second pass, "
            "so the later phases measure the filter as it stays):\n\n" + table(
                ("filter", "BF.INFO Size", "scalebloom used_memory Δ", "RedisBloom used_memory Δ",
                 "scalebloom RESERVE ms", "RedisBloom RESERVE ms", "scalebloom huge pages",
                 "huge-pages no: huge pages", "RedisBloom huge pages",
                 "scalebloom huge-page wait, s"), rows)]


def large_fork_table(r):
    last = len(r["sizes"]) - 1
    out = []
    if "fork_ms" in r["modules"][S][last]:
        rows = []
        for key, name in ((S, "scalebloom"), (K4, "scalebloom, huge-pages no"), (RB, "RedisBloom")):
            x = r["modules"][key][last]
            rows.append((name, f"{x['fork_ms']:.1f}", f"{x['madd_during_save']:,.0f}",
                         "yes" if x["saved_while_measuring"] else "no"))
        out.append(f"BGSAVE with the {r['sizes'][last]['label']} filter (after the four phases): how "
                   "long the `fork` blocked the server (`latest_fork_usec`), and ns per item of "
                   "BF.MADD of 20,000 new items sent right after it, while the child saves — each "
                   "first write to a page then copies it (4 KiB, or 2 MiB when huge); "
                   "`child still saving` says whether the save outlasted the MADDs (median of "
                   f"{plural(r['rounds'], 'run')}):\n\n" + table(
                       ("module", "fork ms", "MADD during save, ns/item", "child still saving"), rows))
    return out

