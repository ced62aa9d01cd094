"""Part memory: bits per item at 1% and 0.1%, scaling and nonscaling."""

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


def memory_configs(quick):
    n = 100_000 if quick else 1_000_000
    cap = n // 10
    out = []
    for error in (0.01, 0.001):
        if error == 0.01:
            # Grown filters of 2 and 3 layers (the scaling rows below have 4), where the fixed
            # memory of a grown chain shows in `Δ bytes` (issue 23 item 3).
            for items, layers in ((2 * cap, 2), (5 * cap, 3)):
                out.append({"label": f"{error:g} scaling, {layers} layers (cap {cap:,}, {items:,} items)",
                            "error": error, "capacity": cap, "nonscaling": False, "items": items,
                            "layers": layers})
        out.append({"label": f"{error:g} scaling (cap {cap:,}, {n:,} items)", "error": error,
                    "capacity": cap, "nonscaling": False, "items": n})
        out.append({"label": f"{error:g} nonscaling (cap = {n:,} items)", "error": error,
                    "capacity": n, "nonscaling": True, "items": n})
    return out


def part_memory(cfg):
    configs = memory_configs(cfg.quick)
    res = {"configs": configs, "modules": {}}
    batches = {n: encode_batches([b"item:%d" % i for i in range(n)], 1000) for n in {c["items"] for c in configs}}
    for key, name, module in cfg.modules:
        rows = []
        with Server(cfg, key, module) as srv:
            meter = srv.client  # measures only; the items go through another connection
            for conf in configs:
                log(f"memory: {name}: {conf['label']}")
                args = ["BF.RESERVE", "m", str(conf["error"]), conf["capacity"]]
                if conf["nonscaling"]:
                    args.append("NONSCALING")
                meter.execute_command(*args)
                send_all(srv, "BF.MADD", "m", batches[conf["items"]])
                info_size = bf_info(meter, "m", "SIZE")
                layers = bf_info(meter, "m", "FILTERS")
                if conf.get("layers", layers) != layers:
                    raise SystemExit(f"memory: {name}: {conf['label']} has {layers} layers")
                usage = int(meter.execute_command("MEMORY", "USAGE", "m"))
                before = used_memory(meter)
                meter.delete("m")
                freed = before - used_memory(meter)
                n = conf["items"]
                rows.append({"info_size": info_size, "memory_usage": usage, "used_memory_freed": freed,
                             "layers": layers,
                             "bits_per_item": {"info_size": info_size * 8 / n, "memory_usage": usage * 8 / n,
                                               "used_memory": freed * 8 / n}})
        res["modules"][key] = rows
    return res


def report_memory(r):
    out = ["### Bits per item\n\nTotal bytes × 8 / items inserted; lower is better. "
           "`used_memory` is what DEL of the filter gives back (allocator rounding included)."]
    rows = []
    for i, conf in enumerate(r["configs"]):
        a, b = r["modules"][S][i], r["modules"][RB][i]
        for k, label in (("info_size", "BF.INFO Size"), ("memory_usage", "MEMORY USAGE"),
                         ("used_memory", "used_memory")):
            x, y = a["bits_per_item"][k], b["bits_per_item"][k]
            q = ratio(x, y)
            diff = round((x - y) * conf["items"] / 8)
            rows.append((conf["label"], label, f"{x:.3f}", f"{y:.3f}", f"{diff:+,}", f"{q:.4f}×",
                         verdict("memory", q, 4)))
    out.append(table(("filter", "measure", "scalebloom", "RedisBloom", "Δ bytes", "ratio", "target"), rows))
    return out

