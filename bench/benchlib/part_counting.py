"""Part counting: counting filters against the plain filter and RedisBloom's cuckoo filter."""

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


# The filters, in the order of the report's columns: (key, label, module, reserve command and
# its arguments after the key; N is the item count). Bloom filters at 1% for N items; the cuckoo
# filter is `CF.RESERVE key N` (bucket size 2, 8-bit fingerprints: about 3% error when full).
COUNTING_FILTERS = (
    ("plain", "scalebloom plain", "scalebloom", ("BF.RESERVE", "0.01", "N")),
    ("counting4", "COUNTING 4", "scalebloom", ("BF.RESERVE", "0.01", "N", "COUNTING", "4")),
    ("counting8", "COUNTING 8", "scalebloom", ("BF.RESERVE", "0.01", "N", "COUNTING", "8")),
    ("cuckoo", "RedisBloom CF", "redisbloom", ("CF.RESERVE", "N")),
)


# The phases, in order: (phase, label, Bloom command, cuckoo command, items). The first four send
# single-item commands, pipelined, to one filter; the last four go to a second, fresh filter, in
# batches — except the cuckoo filter's delete: RedisBloom has no multi-item delete, so its
# `mdel` is CF.DEL, pipelined. The plain filter has no delete.
COUNTING_PHASES = (
    ("add", "add", "BF.ADD", "CF.ADD", "present"),
    ("exists_present", "exists, present", "BF.EXISTS", "CF.EXISTS", "present"),
    ("exists_absent", "exists, absent", "BF.EXISTS", "CF.EXISTS", "absent"),
    ("delete", "delete", "BF.DEL", "CF.DEL", "present"),
    ("madd", "add, batched", "BF.MADD", "CF.INSERT", "present"),
    ("mexists_present", "exists, present, batched", "BF.MEXISTS", "CF.MEXISTS", "present"),
    ("mexists_absent", "exists, absent, batched", "BF.MEXISTS", "CF.MEXISTS", "absent"),
    ("mdel", "delete, batched", "BF.MDEL", "CF.DEL", "present"),
)


COUNTING_BATCHED = {"BF.MADD", "BF.MEXISTS", "BF.MDEL", "CF.INSERT", "CF.MEXISTS"}


COUNTING_PIPE = 1000  # single-item commands per write, as the batches' size


def counting_reply(cmd, which):
    """The reply each single-item command must have: 1 for an item added before (no false
    negatives; a delete of an added item always finds it; CF.ADD always inserts), 0 or 1 else
    (a plain add of an item that is a false positive answers 0)."""
    if which == "present" and cmd != "BF.ADD":
        return b":1\r\n"
    return (4, rb":[01]\r\n")


def counting_phase(srv, spec, i, n, enc, absent_items):
    """Phase `i` of COUNTING_PHASES on one filter kind's server (key `s` for the single-item
    phases, `b` for the batched ones), timed by INFO commandstats reset before it: ns per item,
    or None if the filter has no such command. With `absent_items`, after the absent-items phase,
    also counts (untimed) how many of them the full filter answers 1 for; with the Size, both go
    into `extra`."""
    fkey, _, _, (reserve, *_) = spec
    phase, _, bf_cmd, cf_cmd, which = COUNTING_PHASES[i]
    if fkey == "plain" and phase in ("delete", "mdel"):
        return None, {}
    cf = reserve == "CF.RESERVE"
    cmd = cf_cmd if cf else bf_cmd
    key = "s" if i < 4 else "b"
    c = srv.client
    ns = timed_phase(srv, "counting", cmd, key, enc, which, n, COUNTING_BATCHED)
    extra = {}
    if phase == "exists_absent":
        extra["size"] = info_size(c, "CF.INFO" if cf else "BF.INFO", key)
        if absent_items:
            exists = "CF.MEXISTS" if cf else "BF.MEXISTS"
            extra["absent_ones"] = sum(sum(int(x) for x in c.execute_command(exists, key, *absent_items[j:j + 1000]))
                                       for j in range(0, len(absent_items), 1000))
    return ns, extra


def part_counting(cfg):
    n = 20_000 if cfg.quick else 200_000
    rounds = 3 if cfg.quick else 9
    batch = COUNTING_PIPE
    items = {"present": [b"item:%08d" % i for i in range(n)], "absent": [b"absent:%08d" % i for i in range(n)]}
    singles = {}

    def encoded_singles(cmd, key, which):  # made once, then sent in every round
        if (cmd, key, which) not in singles:
            singles[(cmd, key, which)] = chunked([resp(cmd, key, x) for x in items[which]],
                                                 counting_reply(cmd, which), COUNTING_PIPE)
        return singles[(cmd, key, which)]

    enc = {"batches": {w: encode_batches(v, batch) for w, v in items.items()}, "singles": encoded_singles}
    res = {"items": n, "batch": batch, "pipeline": COUNTING_PIPE, "rounds": rounds,
           "filters": {fkey: {"label": label, "runs": [],
                              "reserve": " ".join([reserve[0], "k"] + [f"{n}" if a == "N" else a for a in reserve[1:]])}
                       for fkey, label, _, reserve in COUNTING_FILTERS}}
    # One server per filter kind (so the keys and the encoded commands are the same on all),
    # all up. Each phase runs on the four filters back to back, in an order that reverses every
    # round, so a burst of someone else's load hits all; the report takes each row from the
    # round with the median ratio, as in the pipeline, small and import parts.
    modules = dict((k, m) for k, _, m in cfg.modules)
    servers = {}
    try:
        for spec in COUNTING_FILTERS:
            servers[spec[0]] = Server(cfg, spec[2], modules[spec[2]]).start()
        for r in range(rounds):
            log(f"counting: round {r + 1}/{rounds}: {n:,} items per phase")
            order = COUNTING_FILTERS if r % 2 == 0 else COUNTING_FILTERS[::-1]
            rows = {spec[0]: {} for spec in order}
            for spec in order:
                reserve, *args = spec[3]
                args = [n if a == "N" else a for a in args]
                for key in ("s", "b"):
                    servers[spec[0]].client.execute_command(reserve, key, *args)
            for i in range(len(COUNTING_PHASES)):
                for spec in order:
                    ns, extra = counting_phase(servers[spec[0]], spec, i, n, enc, items["absent"] if r == 0 else None)
                    if ns is not None:
                        rows[spec[0]][COUNTING_PHASES[i][0]] = ns
                    rows[spec[0]].update(extra)
            for spec in order:
                servers[spec[0]].client.delete("s", "b")
                res["filters"][spec[0]]["runs"].append(rows[spec[0]])
        for srv in servers.values():
            srv.stop()
    finally:
        for srv in servers.values():
            srv.cleanup()
    return settle_filter_runs(res, "counting")


def report_counting(r):
    f = r["filters"]
    rounds, n = r["rounds"], r["items"]
    labels = {k: v["label"] for k, v in f.items()}
    out = [f"### Counting filters against RedisBloom's cuckoo filter: ns per item (server-side, INFO commandstats)\n\n"
           f"The same {n:,} items (`item:NNNNNNNN`) through scalebloom's plain filter "
           f"(`{f['plain']['reserve']}`), its counting filters (`… COUNTING 4`, `… COUNTING 8`) and "
           f"RedisBloom's cuckoo filter (`{f['cuckoo']['reserve']}`: bucket size 2, 8-bit fingerprints), "
           "the filter users would otherwise pick to delete items; each filter kind in a server of "
           f"its own, all up. Single-item commands are pipelined {r['pipeline']:,} per write on one "
           "filter; the batched rows use a second, fresh filter, batches of "
           f"{r['batch']:,} (BF.MADD / BF.MEXISTS / BF.MDEL; CF.INSERT / CF.MEXISTS, and, as "
           "RedisBloom has no multi-item delete, pipelined CF.DEL); `absent` items are "
           "`absent:NNNNNNNN`, never added. Every reply is checked (1 for every added item). "
           f"{plural(rounds, 'round')}; each phase runs on the four filters back to back, in an order "
           "that reverses every round. Every figure of a row is from the round "
           "whose COUNTING 4 / RedisBloom CF ratio is the median (`round`); lower is better. For "
           "information: there is no target."]
    rows = []
    for phase, label, bf_cmd, cf_cmd, _ in COUNTING_PHASES:
        c4, cf = f["counting4"]["runs"], f["cuckoo"]["runs"]
        ratios = [ratio(x[phase], y[phase]) for x, y in zip(c4, cf)]
        m = median_index(ratios)
        at = {k: v["runs"][m].get(phase) for k, v in f.items()}
        ns = lambda k: "—" if at[k] is None else f"{at[k]:.0f}"
        vs_plain = "—" if at["plain"] is None else f"{ratio(at['counting4'], at['plain']):.2f}×"
        cmds = f"{bf_cmd} / {cf_cmd}" + (" (pipelined)" if phase == "mdel" else "")
        rows.append((label, cmds, ns("plain"), ns("counting4"), ns("counting8"), ns("cuckoo"),
                     f"{ratios[m]:.2f}×", f"{ratio(at['counting8'], at['cuckoo']):.2f}×", vs_plain,
                     f"{m + 1} of {rounds}", f"{min(ratios):.2f}–{max(ratios):.2f}×"))
    out.append(table(("phase", "commands", f"{labels['plain']} ns", f"{labels['counting4']} ns",
                      f"{labels['counting8']} ns", f"{labels['cuckoo']} ns", "COUNTING 4 / CF",
                      "COUNTING 8 / CF", "COUNTING 4 / plain", "round", "COUNTING 4 / CF, all rounds"), rows))
    rows = []
    for k, x in f.items():
        rows.append((x["label"], f"`{x['reserve']}`", f"{x['size']:,}", f"{x['size'] * 8 / n:.1f}",
                     f"{x['absent_ones']:,} ({100 * x['absent_ones'] / n:.2f}%)"))
    out.append(f"Memory (BF.INFO / CF.INFO `Size`) with the {n:,} items in, and how many of the "
               f"{n:,} absent items the full filter answers 1 for (its error rate at capacity; the "
               "first round):\n\n" + table(("filter", "created by", "Size, bytes", "bits per item",
                                             "absent items answering 1"), rows))
    return out

