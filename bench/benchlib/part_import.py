"""Part import: a filter RedisBloom made, imported into scalebloom."""

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
from .part_large import LARGE_PHASES


IMPORT_SEED = 12  # the random bits of the filter: the same filter in every run (issue 12)


IMPORT_SAMPLE = 10_000  # items whose answers must be equal on both modules, before and after


def import_sizes(quick):
    """(label, capacity) of the nonscaling 1% filter the times are measured on, and of the one
    callgrind counts on (smaller: a server under callgrind runs ~50× slower)."""
    bpe = -__import__("math").log(0.01) / LN2_SQUARED
    if quick:
        small = ("16 MiB", int(16 * MIB * 8 / bpe))
        return small, small
    return ("1 GiB", 900_000_000), ("64 MiB", int(64 * MIB * 8 / bpe))


def redisbloom_dump(cfg, capacity, sample):
    """RedisBloom's BF.SCANDUMP of `BF.RESERVE big 0.01 <capacity> NONSCALING` with its bits set
    at random, half of them (a filter at its capacity is about half set): a list of (iterator,
    chunk) for BF.LOADCHUNK, header first. The bits go in through RedisBloom's own LOADCHUNK, a
    chunk at a time, and the dump is then read back from it, so every byte of it is what
    RedisBloom writes. Also returns RedisBloom's BF.INFO, BF.DEBUG and answers for `sample`."""
    module = dict((k, m) for k, _, m in cfg.modules)["redisbloom"]
    rng = random.Random(IMPORT_SEED)
    with Server(cfg, "redisbloom", module) as srv:
        c = srv.client
        c.execute_command("BF.RESERVE", "big", "0.01", capacity, "NONSCALING")
        it = 1  # iterator 0 gives the header, 1 the first chunk of bits
        while True:
            nxt, data = c.execute_command("BF.SCANDUMP", "big", it)
            if nxt == 0:
                break
            c.execute_command("BF.LOADCHUNK", "big", nxt, rng.randbytes(len(data)))
            it = nxt
        dump, it = [], 0
        while True:
            it, data = c.execute_command("BF.SCANDUMP", "big", it)
            if it == 0:
                break
            dump.append((it, data))
        ref = filter_state(c, sample)
    return dump, ref


def filter_state(client, sample):
    """What must be equal on both modules: BF.INFO, BF.DEBUG and the answers for `sample`."""
    return {"info": client.execute_command("BF.INFO", "big"), "debug": client.execute_command("BF.DEBUG", "big"),
            "answers": client.execute_command("BF.MEXISTS", "big", *sample)}


def load_dump(client, dump):
    for it, data in dump:
        client.execute_command("BF.LOADCHUNK", "big", it, data)


def import_run(cfg, key, module, dump, items, sample, ref):
    """One fresh server: LOADCHUNK the dump (scalebloom imports it), check that the filter is
    RedisBloom's (BF.INFO, BF.DEBUG, answers), then the four phases of the large part; returns
    the row and the state after the phases, which the caller compares across runs."""
    row = {}
    with Server(cfg, key, module) as srv:
        c = srv.client
        c.config_resetstat()
        load_dump(c, dump)
        row["loadchunk_ms"] = commandstat_usec(c, "bf.loadchunk") / 1000
        state = filter_state(c, sample)
        if state != ref:
            raise BenchError(f"{srv.name}: the loaded filter differs from RedisBloom's "
                             f"(BF.INFO, BF.DEBUG or the answers for {len(sample):,} items)")
        # The phases measure the imported filter as it stays: once scalebloom's huge-page
        # thread has moved it (RedisBloom has nothing to wait for).
        row["settle_s"] = huge_pages_settled(c)
        for phase, cmd, which in LARGE_PHASES:
            c.config_resetstat()
            send_all(srv, cmd, "big", items[which])
            row[phase] = commandstat_usec(c, cmd.lower()) * 1000 / items["n"]
        row["huge_pages_bytes"] = anon_huge_pages(srv.proc.pid)
        after = filter_state(c, sample)
        c.delete("big")
    return row, after


def import_callgrind(cfg, dump, items):
    """Ir per item of each phase on the imported filter: per module, five runs under callgrind
    that load the dump and then do the first 0, 1, ..., 4 phases; the difference of consecutive
    runs, divided by the items, is that phase's cost (dispatch and reply included)."""
    res = {}
    for key, name, module in cfg.modules:
        raw = []
        for upto in range(len(LARGE_PHASES) + 1):
            tag = "load" if upto == 0 else LARGE_PHASES[upto - 1][0]
            log(f"import: callgrind: {name}: load and {upto} phase(s)")

            def work(srv, upto=upto):
                load_dump(srv.client, dump)
                for _, cmd, which in LARGE_PHASES[:upto]:
                    send_all(srv, cmd, "big", items[which])

            raw.append(callgrind_run(cfg, key, module, f"import-{tag}", None, work))
        row = {"raw": {("load" if i == 0 else LARGE_PHASES[i - 1][0]): {"total": t, "module": m}
                       for i, (t, m) in enumerate(raw)}}
        for i, (phase, _, _) in enumerate(LARGE_PHASES):
            (t0, m0), (t1, m1) = raw[i], raw[i + 1]
            row[phase] = {"server": (t1 - t0) / items["n"], "module": (m1 - m0) / items["n"]}
        res[key] = row
    return res


def import_items(n, batch):
    return {"n": n, "present": encode_batches([b"item:%d" % i for i in range(n)], batch),
            "absent": encode_batches([b"absent:%d" % i for i in range(n)], batch)}


def part_import(cfg):
    (label, capacity), (cg_label, cg_capacity) = import_sizes(cfg.quick)
    n = 100_000 if cfg.quick else 2_000_000
    cg_n = 20_000 if cfg.quick else 200_000
    rounds = 3 if cfg.quick else 5
    # BENCH_IMPORT_ROUNDS=N: fewer (or more) rounds of the timed part, for a shorter run.
    rounds = int(os.environ.get("BENCH_IMPORT_ROUNDS", rounds))
    batch = 1000
    sample = [b"sample:%d" % i for i in range(IMPORT_SAMPLE)]
    res = {"label": label, "capacity": capacity, "items": n, "batch": batch, "rounds": rounds,
           "sample": IMPORT_SAMPLE, "callgrind": {"label": cg_label, "capacity": cg_capacity, "items": cg_n}}
    # Callgrind first, on the smaller filter (its dump is dropped before the large one is made).
    log(f"import: RedisBloom makes the {cg_label} filter (capacity {cg_capacity:,}) for callgrind")
    dump, ref = redisbloom_dump(cfg, cg_capacity, sample)
    res["callgrind"]["modules"] = import_callgrind(cfg, dump, import_items(cg_n, batch))
    if cg_capacity != capacity:
        del dump
        log(f"import: RedisBloom makes the {label} filter (capacity {capacity:,}), bits half set at random")
        dump, ref = redisbloom_dump(cfg, capacity, sample)
    res["info_size"] = bf_info_from(ref["info"], "Size")
    res["debug"] = "; ".join(x.decode() if isinstance(x, bytes) else str(x) for x in ref["debug"])
    res["dump_bytes"] = sum(len(d) for _, d in dump)
    items = import_items(n, batch)
    runs = {k: [] for k, _, _ in cfg.modules}
    after = None
    # One server at a time, each loading the same dump into a fresh server; the modules
    # alternate round by round. The phases change the filter in the same way on both, so the
    # state after them must be equal too.
    for r in range(rounds):
        for key, name, module in (cfg.modules if r % 2 == 0 else cfg.modules[::-1]):
            log(f"import: {name}: {label} filter, {n:,} items per phase, round {r + 1}/{rounds}")
            row, state = import_run(cfg, key, module, dump, items, sample, ref)
            if after is None:
                after = state
            elif state != after:
                raise BenchError(f"import: {name}: after the phases the filter differs from the other runs'")
            runs[key].append(row)
    res["modules"] = {key: {"runs": v} for key, v in runs.items()}
    return res


IMPORT_PHASES = (("madd_first", "MADD, new items"), ("madd_second", "MADD, the same items again"),
                 ("mexists_present", "MEXISTS, present"), ("mexists_absent", "MEXISTS, absent"))


def report_import(r):
    a, b = r["modules"][S]["runs"], r["modules"][RB]["runs"]
    rounds = r["rounds"]
    out = [f"### An imported RedisBloom filter: ns per item (server-side, INFO commandstats)\n\n"
           f"RedisBloom makes `BF.RESERVE big 0.01 {r['capacity']:,} NONSCALING` (BF.INFO Size "
           f"{r['info_size']:,} bytes; BF.DEBUG `{r['debug']}`) and its bits are set at random, half "
           "of them (a filter at its capacity; seeded, the same every run), through its own "
           "BF.LOADCHUNK; its BF.SCANDUMP is then loaded by BF.LOADCHUNK into a fresh server of "
           "each module, one at a time — scalebloom imports it and keeps RedisBloom's MurmurHash64A "
           "hashing and layout. Every run checks that BF.INFO, BF.DEBUG and the answers for "
           f"{r['sample']:,} items are RedisBloom's, and after the phases equal across runs. Then "
           f"{r['items']:,} items per phase in batches of {r['batch']}, as in the large part, once "
           "scalebloom's huge-page thread has moved the loaded filter into huge pages (`INFO bf` "
           f"`bf_huge_pages_waiting 0`; {settle_note(a, 'the load')}). "
           f"{plural(rounds, 'round')}; each phase runs on the four filters back to back, in an order "
           "that reverses every round. Every figure of a row is from the round "
           "whose scalebloom / RedisBloom ratio is the median (`round`); lower is better."]
    rows = []
    for key, label in IMPORT_PHASES:
        ratios = [ratio(x[key], y[key]) for x, y in zip(a, b)]
        m = median_index(ratios)
        tgt = verdict("import_1gib", ratios[m]) if r["label"] == "1 GiB" else ""
        rows.append((f"{r['label']} ({r['items']:,} items)", label, f"{a[m][key]:.0f}", f"{b[m][key]:.0f}",
                     f"{ratios[m]:.2f}×", tgt, f"{m + 1} of {rounds}", f"{min(ratios):.2f}–{max(ratios):.2f}×"))
    out.append(table(("filter", "command", "scalebloom ns", "RedisBloom ns", "ratio", "target", "round",
                      "ratios, all rounds"), rows))
    lc = [statistics.median(x["loadchunk_ms"] for x in runs) for runs in (a, b)]
    hp = [statistics.median(x["huge_pages_bytes"] for x in runs) / MIB for runs in (a, b)]
    out.append(f"Loading the dump ({r['dump_bytes'] / MIB:,.0f} MiB of bits in "
               "BF.LOADCHUNK chunks), server time of all its BF.LOADCHUNK: scalebloom "
               f"{lc[0]:,.0f} ms, RedisBloom {lc[1]:,.0f} ms ({ratio(lc[0], lc[1]):.2f}×; goal ≤ 1.00×: "
               f"{'meets' if round(ratio(lc[0], lc[1]), 2) <= 1.0 else 'MISSES'}); memory backed by transparent huge pages "
               f"at the end of a run: scalebloom {hp[0]:,.0f} MiB, RedisBloom {hp[1]:,.0f} MiB "
               f"(medians of the {plural(rounds, 'run')}).")
    cg = r["callgrind"]
    rows = []
    for key, label in IMPORT_PHASES:
        x, y = cg["modules"][S][key], cg["modules"][RB][key]
        rows.append((label, f"{x['server']:,.0f}", f"{y['server']:,.0f}", f"{ratio(x['server'], y['server']):.2f}×",
                     f"{x['module']:,.0f}", f"{y['module']:,.0f}", f"{ratio(x['module'], y['module']):.2f}×"))
    out.append(f"Instructions per item (callgrind), the count the load of the shared machine does not "
               f"move: a {cg['label']} filter made and imported the same way (`BF.RESERVE big 0.01 "
               f"{cg['capacity']:,} NONSCALING`), {cg['items']:,} items per phase; per module five runs "
               "that load the dump and then do the first 0, 1, …, 4 phases, each phase the "
               "difference of two consecutive runs. Whole server and the module's own code (its "
               ".so's self cost, as in the callgrind part). For information: the target is the time "
               "above, which on a large filter is mostly memory latency.\n\n"
               + table(("command", "scalebloom Ir", "RedisBloom Ir", "ratio", "scalebloom module Ir",
                        "RedisBloom module Ir", "module ratio"), rows))
    return out

