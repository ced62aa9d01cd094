"""Part window: scalebloom's count-windowed filter (`BF.RESERVE … WINDOW ITEMS`, issue 21)
against what users do today (two RedisBloom filters rotated by hand) and against scalebloom's
plain filter at the same error rate and capacity."""

import statistics

from .client import *  # noqa: F401,F403
from .harness import *  # noqa: F401,F403


WINDOW_ERRORS = ("0.01", "0.001")
WINDOW_ROUNDS_OF_ITEMS = 3  # the stream is this many windows long: the last one is measured in steady state
WINDOW_BATCH = 1000
WINDOW_PROBES = 4  # absent items are probed at this many moments of the last window, W/4 each

# The filter kinds, in the order of the report's columns: (key, label, module).
#   window    scalebloom `BF.RESERVE w e W WINDOW ITEMS`: a sliding window over the last W items.
#   rotated   two RedisBloom filters `BF.RESERVE … e W NONSCALING`, rotated every W items: BF.MADD
#             into the current one, BF.MEXISTS on both (an item is remembered for W to 2W items).
#   rotated2  the same at error e/2 each, so the pair answers about e for an absent item.
#   plain     scalebloom `BF.RESERVE p e W`, W items in (one window's worth).
WINDOW_KINDS = (
    ("window", "scalebloom WINDOW ITEMS", "scalebloom"),
    ("rotated", "RedisBloom, 2 rotated, e each", "redisbloom"),
    ("rotated2", "RedisBloom, 2 rotated, e/2 each", "redisbloom"),
    ("plain", "scalebloom plain", "scalebloom"),
)


def _half(e):
    return f"{float(e) / 2:g}"


def _timed(c, cmd):
    usec, calls = commandstat(c, cmd)
    return usec, calls


def _mexists_ones(c, keys, items):
    """How many of `items` any of `keys` answers 1 for (untimed: CONFIG RESETSTAT follows)."""
    hits = 0
    for j in range(0, len(items), WINDOW_BATCH):
        chunk = items[j:j + WINDOW_BATCH]
        answers = [c.execute_command("BF.MEXISTS", k, *chunk) for k in keys]
        hits += sum(1 for xs in zip(*answers) if any(int(x) for x in xs))
    return hits


def window_run(srv, kind, e, w, enc, items, absent):
    """One filter kind at error `e` and window `w` on its server: the stream of
    WINDOW_ROUNDS_OF_ITEMS·w items (w for the plain filter) in BF.MADD batches, absent items
    probed (timed BF.MEXISTS, then counted) at WINDOW_PROBES moments of the last window, then
    the last w items queried (each must answer 1). Returns ns per item and the memory."""
    c = srv.client
    c.flushall()
    batches = enc["present"]
    per_window = w // WINDOW_BATCH
    if kind == "window":
        c.execute_command("BF.RESERVE", "w", e, w, "WINDOW", "ITEMS")
    elif kind == "plain":
        c.execute_command("BF.RESERVE", "w", e, w)
    err = _half(e) if kind == "rotated2" else e
    rotated = kind.startswith("rotated")
    windows = 1 if kind == "plain" else WINDOW_ROUNDS_OF_ITEMS
    probe_every = per_window // WINDOW_PROBES
    probe_items = w // WINDOW_PROBES
    madd_usec = madd_items = 0
    acc = {"usec": 0, "items": 0, "ones": 0}

    def probe(p, keys):  # absent items: timed on every key of the kind, then counted
        batch = enc["absent"][p * probe_every:(p + 1) * probe_every]
        c.config_resetstat()
        for k in keys:
            send_all(srv, "BF.MEXISTS", k, batch)
        usec, calls = _timed(c, "BF.MEXISTS")
        if calls != len(batch) * len(keys):
            raise BenchError(f"window: {srv.name}: {calls} BF.MEXISTS counted")
        acc["usec"] += usec
        acc["items"] += probe_items
        acc["ones"] += _mexists_ones(c, keys, absent[p * probe_items:(p + 1) * probe_items])

    cur, prev = "a", None
    for wi in range(windows):
        if rotated:  # a rotation: the older filter goes, a fresh one takes the adds
            if prev is not None:
                c.delete(prev)
            prev, cur = cur, ("b" if cur == "a" else "a")
            if wi == 0:
                prev = None
            c.execute_command("BF.RESERVE", cur, err, w, "NONSCALING")
        keys = [k for k in (cur, prev) if k] if rotated else ["w"]
        last = wi == windows - 1
        for p in range(WINDOW_PROBES if last else 1):
            chunk = batches[wi * per_window + p * probe_every:wi * per_window + (p + 1) * probe_every] if last \
                else batches[wi * per_window:(wi + 1) * per_window]
            c.config_resetstat()
            send_all(srv, "BF.MADD", keys[0], chunk)
            usec, calls = _timed(c, "BF.MADD")
            if calls != len(chunk):
                raise BenchError(f"window: {srv.name}: {calls} BF.MADD counted, {len(chunk)} sent")
            madd_usec += usec
            madd_items += sum(n for n, _ in chunk)
            if last and kind != "plain":
                probe(p, keys)
    if kind == "plain":  # the plain filter is probed full, as at its error rate's capacity
        for p in range(WINDOW_PROBES):
            probe(p, keys)
    # The last window's items, present: every one must answer 1 on one of the keys.
    keys = [k for k in (cur, prev) if k] if rotated else ["w"]
    recent = items[(windows - 1) * w:windows * w]
    size = sum(info_size(c, "BF.INFO", k) for k in keys)
    usage = sum(int(c.memory_usage(k, samples=0)) for k in keys)
    c.config_resetstat()
    for k in keys:
        send_all(srv, "BF.MEXISTS", k, enc["present"][(windows - 1) * per_window:windows * per_window])
    present_usec, _ = _timed(c, "BF.MEXISTS")
    missing = w - _mexists_ones(c, keys, recent)
    if missing:
        raise BenchError(f"window: {srv.name}: {kind} at {e}: {missing} of the last {w:,} items answer 0")
    return {"madd": madd_usec * 1000 / madd_items, "mexists_absent": acc["usec"] * 1000 / acc["items"],
            "mexists_present": present_usec * 1000 / w, "size": size, "memory_usage": usage,
            "absent_ones": acc["ones"], "absent": acc["items"], "adds": madd_items}


def part_window(cfg):
    w = 20_000 if cfg.quick else 200_000
    rounds = 3 if cfg.quick else 5
    total = WINDOW_ROUNDS_OF_ITEMS * w
    items = [b"item:%09d" % i for i in range(total)]
    absent = [b"absent:%09d" % i for i in range(w)]
    enc = {"present": encode_batches(items, WINDOW_BATCH), "absent": encode_batches(absent, WINDOW_BATCH)}
    res = {"window": w, "batch": WINDOW_BATCH, "rounds": rounds, "windows": WINDOW_ROUNDS_OF_ITEMS,
           "probes": WINDOW_PROBES, "labels": {k: label for k, label, _ in WINDOW_KINDS},
           "errors": {e: {k: [] for k, _, _ in WINDOW_KINDS} for e in WINDOW_ERRORS}}
    modules = dict((k, m) for k, _, m in cfg.modules)
    servers = {}
    try:
        for mod in ("scalebloom", "redisbloom"):
            servers[mod] = Server(cfg, mod, modules[mod]).start()
        for r in range(rounds):
            log(f"window: round {r + 1}/{rounds}: window of {w:,} items")
            order = WINDOW_KINDS if r % 2 == 0 else WINDOW_KINDS[::-1]
            for e in WINDOW_ERRORS:
                for kind, _, mod in order:
                    res["errors"][e][kind].append(window_run(servers[mod], kind, e, w, enc, items, absent))
        for srv in servers.values():
            srv.stop()
    finally:
        for srv in servers.values():
            srv.cleanup()
    for e, kinds in res["errors"].items():  # the report shows round 1's: they must not differ
        for kind, runs in kinds.items():
            for field in ("size", "memory_usage", "absent_ones"):
                if len({x[field] for x in runs}) != 1:
                    raise BenchError(f"window: {kind} at {e}: {field} differs between rounds: "
                                     f"{sorted({x[field] for x in runs})}")
    return res


def _median(runs, field):
    return statistics.median(x[field] for x in runs)


def report_window(r):
    w, rounds, labels = r["window"], r["rounds"], r["labels"]
    out = [f"### Windowed filters: `WINDOW ITEMS` against two rotated RedisBloom filters\n\n"
           f"A window of {w:,} items. scalebloom: `BF.RESERVE w e {w} WINDOW ITEMS` (remembers "
           f"exactly the last {w:,} items). What users do today: two RedisBloom filters "
           f"`BF.RESERVE … e {w} NONSCALING` rotated every {w:,} items (the older one deleted, a "
           "fresh one reserved), BF.MADD into the current one, BF.MEXISTS on both (an item is "
           f"remembered for {w:,} to {2 * w:,} items); also with e/2 each, so the pair answers "
           f"about e. Each gets a stream of {r['windows']} windows of items (`item:NNNNNNNNN`) in "
           f"BF.MADD batches of {r['batch']:,}; during the last window, after each of its "
           f"{r['probes']} quarters, {w // r['probes']:,} never-added items (`absent:NNNNNNNNN`, "
           f"{w:,} in all) are queried (BF.MEXISTS: both filters for the rotated pair); then the "
           f"last {w:,} items are queried and must all answer 1. scalebloom's plain filter "
           f"(`BF.RESERVE p e {w}`) gets one window of items, then the same absent items (probed "
           "full, at its capacity). ns per item "
           "are server-side (INFO commandstats, client excluded): for the rotated pair a query's "
           "ns is both filters' BF.MEXISTS per item queried; the rotation's DEL and BF.RESERVE are "
           f"not counted. Each figure is the median of {plural(rounds, 'round')} (the filter kinds "
           "in an order that reverses every round); FP and memory are the same in every round. "
           "Goal: the window's ns per item ≤ 1.5× the plain filter's; at most the rotated "
           "pair's bytes at the same measured FP."]
    rows = []
    for e, kinds in r["errors"].items():
        for k, runs in kinds.items():
            x = runs[0]
            rows.append((f"{float(e) * 100:g}%", labels[k], f"{x['size']:,}", f"{x['size'] / w:.2f}",
                         f"{x['memory_usage'] / w:.2f}",
                         f"{x['absent_ones']:,} of {x['absent']:,} ({100 * x['absent_ones'] / x['absent']:.3f}%)",
                         f"{_median(runs, 'madd'):.0f}", f"{_median(runs, 'mexists_present'):.0f}",
                         f"{_median(runs, 'mexists_absent'):.0f}"))
    out.append(table(("target", "filter", "Size, bytes", "bytes per window item (Size)",
                      "bytes per window item (MEMORY USAGE)", "absent items answering 1",
                      "BF.MADD ns", "BF.MEXISTS present ns", "BF.MEXISTS absent ns"), rows))
    rows = []
    for e, kinds in r["errors"].items():
        win, rot, rot2, plain = (kinds[k] for k in ("window", "rotated", "rotated2", "plain"))
        for field, label in (("madd", "BF.MADD"), ("mexists_present", "BF.MEXISTS present"),
                             ("mexists_absent", "BF.MEXISTS absent")):
            vs_plain = ratio(_median(win, field), _median(plain, field))
            rows.append((f"{float(e) * 100:g}%", label, f"{vs_plain:.2f}×", verdict("window_vs_plain", vs_plain),
                         f"{ratio(_median(win, field), _median(rot, field)):.2f}×",
                         f"{ratio(_median(win, field), _median(rot2, field)):.2f}×"))
        rows.append((f"{float(e) * 100:g}%", "bytes (Size)", f"{ratio(win[0]['size'], plain[0]['size']):.2f}×", "",
                     f"{ratio(win[0]['size'], rot[0]['size']):.2f}×", f"{ratio(win[0]['size'], rot2[0]['size']):.2f}×"))
    out.append("Ratios (of the medians):\n\n" + table(
        ("target", "", "window / plain", "goal", "window / rotated, e each", "window / rotated, e/2 each"), rows))
    return out
