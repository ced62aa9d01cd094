#!/usr/bin/env python3
"""MADD / MEXISTS on a ~1 GiB filter made by RedisBloom and imported into scalebloom.

A one-off measurement for issue 12 (not yet part of bench/compare): RedisBloom 2.8 reserves a
nonscaling filter of 900,000,000 items at 1% (1.08 GB), its bits are filled at random (half set)
through BF.LOADCHUNK, and the filter is copied into scalebloom by SCANDUMP -> LOADCHUNK (so it keeps
RedisBloom's MurmurHash64A scheme there). Then 200 BF.MEXISTS and 100 BF.MADD of 1,000 items each
run on both; the server-side time per item comes from INFO commandstats.

    python3 bench/import_1gib.py <redisbloom.so> <libscalebloom.so> [capacity]
"""
import os
import subprocess
import sys
import time

import redis


def start(port, module):
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


def copy(src, dst, key):
    it = 0
    while True:
        it, data = src.execute_command("BF.SCANDUMP", key, it)
        if it == 0:
            return
        dst.execute_command("BF.LOADCHUNK", key, it, data)


def main():
    rb_module, sb_module = sys.argv[1], sys.argv[2]
    capacity = int(sys.argv[3]) if len(sys.argv) > 3 else 900_000_000
    rb_proc, rb = start(17801, rb_module)
    sb_proc, sb = start(17802, sb_module)
    try:
        rb.execute_command("BF.RESERVE", "big", 0.01, capacity, "NONSCALING")
        it = 1
        while True:  # random bits, chunk by chunk, in RedisBloom
            nxt, data = rb.execute_command("BF.SCANDUMP", "big", it)
            if nxt == 0:
                break
            rb.execute_command("BF.LOADCHUNK", "big", nxt, os.urandom(len(data)))
            it = nxt
        copy(rb, sb, "big")
        print("redisbloom", rb.execute_command("BF.DEBUG", "big")[1].decode())
        print("scalebloom", sb.execute_command("BF.DEBUG", "big")[1].decode())
        items = [f"item:{i}".encode() for i in range(200_000)]
        for conn in (rb, sb):
            conn.execute_command("CONFIG", "RESETSTAT")
            for i in range(0, len(items), 1000):
                conn.execute_command("BF.MEXISTS", "big", *items[i:i + 1000])
            for i in range(0, 100_000, 1000):
                conn.execute_command("BF.MADD", "big", *items[i:i + 1000])
        for name, conn in (("redisbloom", rb), ("scalebloom", sb)):
            stats = conn.info("commandstats")
            for cmd in ("bf.mexists", "bf.madd"):
                s = stats[f"cmdstat_{cmd}"]
                print(f"{name} {cmd}: {s['usec'] * 1000 / (s['calls'] * 1000):.1f} ns/item")
    finally:
        rb_proc.kill()
        sb_proc.kill()


if __name__ == "__main__":
    main()
