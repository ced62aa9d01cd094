"""Part merge: BF.MERGE of two filters of 1 MiB and of 1 GiB (16 MiB with --quick), against what
an OR of the same bytes costs the server (BITOP OR of two strings that size), and lookups on the
merged filter against lookups on one source (RedisBloom's too, which has no merge)."""

import statistics
import time

from .client import *  # noqa: F401,F403
from .harness import *  # noqa: F401,F403

MERGE_ERROR = "0.01"
# Capacities at 1% whose one nonscaling layer is about 1 MiB and 1 GiB (9.585 bits per item).
MERGE_SIZES = ((MIB, 875_000), (1024 * MIB, 896_000_000))
MERGE_QUICK_SIZES = ((MIB, 875_000), (16 * MIB, 14_000_000))
MERGE_BATCH = 1000


def _merge_usec(c, *args):
    """One command's server time from INFO commandstats (reset first), and the wall time."""
    c.config_resetstat()
    t0 = time.perf_counter()
    c.execute_command(*args)
    wall = time.perf_counter() - t0
    name = args[0].lower()
    usec, calls = commandstat(c, name)
    if calls != 1:
        raise BenchError(f"merge: {calls} calls of {name} counted, 1 sent")
    return usec / 1e6, wall


def _lookup_ns(srv, key, enc, n):
    c = srv.client
    c.config_resetstat()
    send_all(srv, "BF.MEXISTS", key, enc)
    usec, _ = commandstat(c, "BF.MEXISTS")
    return usec * 1000 / n


def merge_run(srv, nbytes, capacity, n, enc_items, enc_absent, probes):
    """On one scalebloom server: sources `a` and `b` (LIKE a) and `c` (its own seed), each with
    `n` items; BF.MERGE into a LIKE copy (OR-ed: one layer) and into a new key from a and c
    (kept apart: a member); BITOP OR of two strings of the same size; lookups on each."""
    c = srv.client
    c.execute_command("BF.RESERVE", "a", MERGE_ERROR, capacity, "NONSCALING")
    c.execute_command("BF.RESERVE", "b", MERGE_ERROR, capacity, "LIKE", "a")
    c.execute_command("BF.RESERVE", "c", MERGE_ERROR, capacity, "NONSCALING")
    c.execute_command("BF.RESERVE", "or", MERGE_ERROR, capacity, "LIKE", "a")
    for key, enc in (("a", enc_items[0]), ("b", enc_items[1]), ("c", enc_items[1])):
        send_all(srv, "BF.MADD", key, enc)
    size = bf_info(c, "a", "SIZE")
    row = {"size": size}
    row["or_s"], row["or_wall"] = _merge_usec(c, "BF.MERGE", "or", "a", "b")
    row["member_s"], row["member_wall"] = _merge_usec(c, "BF.MERGE", "kept", "a", "c")
    if bf_info(c, "or", "FILTERS") != 1 or bf_info(c, "kept", "FILTERS") != 2:
        raise BenchError("merge: the LIKE merge did not OR, or the other did not keep a member")
    for key in ("or", "kept"):
        if c.execute_command("BF.MEXISTS", key, *probes) != [1] * len(probes):
            raise BenchError(f"merge: items of the sources missing from {key}")
    for label, key in (("source", "a"), ("or", "or"), ("kept", "kept")):
        row[f"absent_{label}"] = _lookup_ns(srv, key, enc_absent, len(enc_absent) * MERGE_BATCH)
        row[f"present_{label}"] = _lookup_ns(srv, key, enc_items[0], len(enc_items[0]) * MERGE_BATCH)
    c.execute_command("DEL", "a", "b", "c", "or", "kept")
    # Strings of a filter's size: above Redis' default 512 MB limit for the 1 GiB one.
    c.config_set("proto-max-bulk-len", str(max(512 * MIB, 2 * size)))
    c.execute_command("SETRANGE", "s1", size - 1, "x")
    c.execute_command("SETRANGE", "s2", size - 1, "x")
    row["bitop_s"], row["bitop_wall"] = _merge_usec(c, "BITOP", "OR", "s3", "s1", "s2")
    c.execute_command("DEL", "s1", "s2", "s3")
    return row


def part_merge(cfg):
    sizes = MERGE_QUICK_SIZES if cfg.quick else MERGE_SIZES
    rounds = 1 if cfg.quick else 3
    n = 200_000
    items = [[b"w%d:item:%d" % (w, i) for i in range(n)] for w in (0, 1)]
    absent = [b"absent:%d" % i for i in range(n)]
    enc_items = [encode_batches(x, MERGE_BATCH) for x in items]
    enc_absent = encode_batches(absent, MERGE_BATCH)
    probes = items[0][:: n // 100] + items[1][:: n // 100]
    modules = dict((k, m) for k, _, m in cfg.modules)
    res = {"items": n, "rounds": rounds, "sizes": []}
    for nbytes, capacity in sizes:
        runs, rb = [], []
        for r in range(rounds):
            log(f"merge: {nbytes // MIB} MiB, round {r + 1}/{rounds}")
            with Server(cfg, S, modules[S]) as srv:
                srv.client.config_set("bf.max-filter-bytes", str(4 * nbytes))
                runs.append(merge_run(srv, nbytes, capacity, n, enc_items, enc_absent, probes))
            with Server(cfg, RB, modules[RB]) as srv:
                c = srv.client
                c.execute_command("BF.RESERVE", "a", MERGE_ERROR, capacity, "NONSCALING")
                send_all(srv, "BF.MADD", "a", enc_items[0])
                rb.append({"absent": _lookup_ns(srv, "a", enc_absent, n),
                           "present": _lookup_ns(srv, "a", enc_items[0], n)})
        med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
        med["rb_absent"] = statistics.median(x["absent"] for x in rb)
        med["rb_present"] = statistics.median(x["present"] for x in rb)
        res["sizes"].append(dict(med, nbytes=nbytes, capacity=capacity))
    return res


def report_merge(r):
    out = [f"### BF.MERGE\n\nTwo filters `BF.RESERVE … {MERGE_ERROR} <capacity> NONSCALING` "
           f"of about 1 MiB and 1 GiB, {r['items']:,} items each. *OR-ed*: the second made "
           "`LIKE` the first, merged into a third made `LIKE` it (one layer afterwards). "
           "*Kept apart*: two filters with their own seeds merged into a new key (the second "
           "becomes a member: its bits are copied). *BITOP OR*: Redis' own OR of two strings "
           "of the same size, the cost of touching those bytes. Server time from INFO "
           f"commandstats, median of {plural(r['rounds'], 'run')}; the server answers nothing "
           "else while a merge runs, so this is also how long it stalls."]
    rows = []
    for s in r["sizes"]:
        rows.append((f"{s['nbytes'] // MIB:,} MiB ({s['size']:,} bytes)", f"{s['or_s'] * 1000:,.1f}",
                     f"{s['member_s'] * 1000:,.1f}", f"{s['bitop_s'] * 1000:,.1f}",
                     f"{ratio(s['or_s'], s['bitop_s']):.2f}×"))
    out.append(table(("filters", "OR-ed, ms", "kept apart, ms", "BITOP OR, ms", "OR-ed / BITOP"), rows))
    out.append(f"Lookups (BF.MEXISTS, batches of {MERGE_BATCH:,}, ns per item from INFO "
               "commandstats) on one source, on the OR-ed result and on the result with a "
               "member, against RedisBloom on the same source filter: an absent item costs one "
               "more lookup per member; a present one stops at the first part that holds it.")
    rows = []
    for s in r["sizes"]:
        for kind in ("absent", "present"):
            rows.append((f"{s['nbytes'] // MIB:,} MiB", kind, f"{s[f'{kind}_source']:.1f}",
                         f"{s[f'{kind}_or']:.1f}", f"{s[f'{kind}_kept']:.1f}",
                         f"{s[f'rb_{kind}']:.1f}"))
    out.append(table(("filters", "items", "source", "OR-ed", "with a member", "RedisBloom source"), rows))
    return out
