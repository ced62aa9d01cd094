"""Part cuckoo: scalebloom's CF.* against RedisBloom's, the same commands on the same items: ns
per item on a small (512 KiB) and a 256 MiB filter, callgrind instructions per item, and the
creation of many small cuckoo filters."""

import shutil
import statistics
import tempfile

from .client import *  # noqa: F401,F403
from .harness import *  # noqa: F401,F403
from .part_counting import counting_reply
from .part_small import PIPE_DEPTH, small_key

# Issue 20's targets (scalebloom / RedisBloom), judged by `verdict` like the others.
TARGETS.update({
    "cf_batched": ("max", 0.50),  # ns per item, CF.INSERT / CF.MEXISTS in batches
    "cf_single": ("max", 1.00),  # ns per item, single-item commands pipelined
    "cf_callgrind_server": ("max", 0.80),  # whole server Ir per item, batched
    "cf_callgrind_module": ("max", 0.50),  # the module's own Ir per item, batched
    "cf_small_ir": ("max", 1.00),  # Ir per small filter created
    "cf_small_bytes": ("max", 1.00),  # used_memory per small filter created
})


# The two filters, in the order of the report's columns: (key, label, module).
CUCKOO_FILTERS = (
    ("scalebloom", "scalebloom CF", "scalebloom"),
    ("redisbloom", "RedisBloom CF", "redisbloom"),
)


# The phases: (phase, label, command, items). The first four send single-item commands,
# pipelined, to one filter (key `s`); the last three go to a second, fresh filter (key `b`) in
# batches.
CUCKOO_PHASES = (
    ("add", "add", "CF.ADD", "present"),
    ("exists_present", "exists, present", "CF.EXISTS", "present"),
    ("exists_absent", "exists, absent", "CF.EXISTS", "absent"),
    ("delete", "delete", "CF.DEL", "present"),
    ("insert", "add, batched", "CF.INSERT", "present"),
    ("mexists_present", "exists, present, batched", "CF.MEXISTS", "present"),
    ("mexists_absent", "exists, absent, batched", "CF.MEXISTS", "absent"),
)


CUCKOO_BATCHED = {"CF.INSERT", "CF.MEXISTS"}


def cuckoo_phase(srv, i, n, enc):
    """Phase `i` of CUCKOO_PHASES on one server, timed by INFO commandstats reset before it:
    server-side ns per item."""
    _, _, cmd, which = CUCKOO_PHASES[i]
    key = "s" if i < 4 else "b"
    return timed_phase(srv, "cuckoo", cmd, key, enc, which, n, CUCKOO_BATCHED)


def part_cuckoo(cfg):
    res = cuckoo_small_filter_rounds(cfg)
    res["large"] = cuckoo_large(cfg)
    res["callgrind"] = cuckoo_callgrind(cfg)
    res["small"] = cuckoo_small(cfg)
    return res


def cuckoo_small_filter_rounds(cfg):
    n = 20_000 if cfg.quick else 200_000
    rounds = 3 if cfg.quick else 9
    batch = 1000
    items = {"present": [b"item:%08d" % i for i in range(n)], "absent": [b"absent:%08d" % i for i in range(n)]}
    singles = {}

    def encoded_singles(cmd, key, which):  # made once, then sent in every round
        if (cmd, key, which) not in singles:
            singles[(cmd, key, which)] = chunked([resp(cmd, key, x) for x in items[which]],
                                                 counting_reply(cmd, which), batch)
        return singles[(cmd, key, which)]

    enc = {"batches": {w: encode_batches(v, batch) for w, v in items.items()}, "singles": encoded_singles}
    res = {"items": n, "batch": batch, "rounds": rounds,
           "filters": {k: {"label": label, "runs": []} for k, label, _ in CUCKOO_FILTERS}}
    modules = dict((k, m) for k, _, m in cfg.modules)
    servers = {}
    try:
        for fkey, _, module in CUCKOO_FILTERS:
            servers[fkey] = Server(cfg, module, modules[module]).start()
        for r in range(rounds):
            log(f"cuckoo: round {r + 1}/{rounds}: {n:,} items per phase")
            order = CUCKOO_FILTERS if r % 2 == 0 else CUCKOO_FILTERS[::-1]
            rows = {f[0]: {} for f in order}
            for f in order:
                for key in ("s", "b"):
                    servers[f[0]].client.execute_command("CF.RESERVE", key, n)
            for i in range(len(CUCKOO_PHASES)):
                for f in order:
                    rows[f[0]][CUCKOO_PHASES[i][0]] = cuckoo_phase(servers[f[0]], i, n, enc)
            for f in order:
                c = servers[f[0]].client
                rows[f[0]]["size"] = info_size(c, "CF.INFO", "b")
                if r == 0:
                    rows[f[0]]["absent_ones"] = sum(
                        sum(int(x) for x in c.execute_command("CF.MEXISTS", "b", *items["absent"][j:j + 1000]))
                        for j in range(0, n, 1000))
                c.delete("s", "b")
                res["filters"][f[0]]["runs"].append(rows[f[0]])
        for srv in servers.values():
            srv.stop()
    finally:
        for srv in servers.values():
            srv.cleanup()
    return settle_filter_runs(res, "cuckoo")


# The 256 MiB filter: `CF.RESERVE L 268435456` is 2^27 buckets of 2 one-byte slots.
LARGE_CAPACITY = 1 << 28

# Its phases: (phase, label, command, items, batched).
LARGE_PHASES = (
    ("insert_first", "add, batched, first items (pages faulted in)", "CF.INSERT", "first", True),
    ("insert", "add, batched", "CF.INSERT", "present", True),
    ("mexists_present", "exists, present, batched", "CF.MEXISTS", "present", True),
    ("mexists_absent", "exists, absent, batched", "CF.MEXISTS", "absent", True),
    ("add", "add", "CF.ADD", "more", False),
    ("exists_present", "exists, present", "CF.EXISTS", "present", False),
    ("exists_absent", "exists, absent", "CF.EXISTS", "absent", False),
)


def cuckoo_large(cfg):
    """ns per item on a 256 MiB filter (far larger than the caches): per round and module a fresh
    `CF.RESERVE L 268435456`, then each phase of LARGE_PHASES, timed by INFO commandstats."""
    n = 100_000 if cfg.quick else 1_000_000
    n_single = 20_000 if cfg.quick else 200_000
    rounds = 1 if cfg.quick else 3
    batch = 1000
    items = {"first": [b"first:%08d" % i for i in range(n)], "present": [b"big:%08d" % i for i in range(n)],
             "absent": [b"nope:%08d" % i for i in range(n)], "more": [b"more:%08d" % i for i in range(n_single)]}
    batches = {w: encode_batches(items[w], batch) for w in ("first", "present", "absent")}
    singles = {}
    res = {"items": n, "single_items": n_single, "batch": batch, "rounds": rounds, "capacity": LARGE_CAPACITY,
           "runs": {k: [] for k, _, _ in CUCKOO_FILTERS}}
    modules = dict((k, m) for k, _, m in cfg.modules)
    servers = {}
    try:
        for fkey, _, module in CUCKOO_FILTERS:
            servers[fkey] = Server(cfg, fkey, modules[module]).start()
        for r in range(rounds):
            log(f"cuckoo: 256 MiB filter: round {r + 1}/{rounds}: {n:,} items batched, {n_single:,} single")
            order = CUCKOO_FILTERS if r % 2 == 0 else CUCKOO_FILTERS[::-1]
            rows = {f[0]: {} for f in order}
            for f in order:
                servers[f[0]].client.execute_command("CF.RESERVE", "L", LARGE_CAPACITY)
            for phase, _, cmd, which, batched in LARGE_PHASES:
                for f in order:
                    srv = servers[f[0]]
                    srv.client.config_resetstat()
                    if batched:
                        send_all(srv, cmd, "L", batches[which], ("ITEMS",) if cmd == "CF.INSERT" else ())
                        want, count = len(batches[which]), n
                    else:
                        if (cmd, which) not in singles:
                            singles[(cmd, which)] = chunked([resp(cmd, "L", x) for x in items[which][:n_single]],
                                                            counting_reply(cmd, which), batch)
                        drive(srv, singles[(cmd, which)])
                        want = count = n_single
                    usec, calls = commandstat(srv.client, cmd)
                    if calls != want:
                        raise BenchError(f"cuckoo: {srv.name}: {calls} calls of {cmd} counted, {want} sent")
                    rows[f[0]][phase] = usec * 1000 / count
                if phase == "insert_first":
                    # The later phases measure the filter as it stays: once scalebloom's
                    # huge-page thread has moved it (RedisBloom has nothing to wait for).
                    for f in order:
                        rows[f[0]]["settle_s"] = huge_pages_settled(servers[f[0]].client)
            for f in order:
                c = servers[f[0]].client
                rows[f[0]]["size"] = info_size(c, "CF.INFO", "L")
                c.delete("L")
                res["runs"][f[0]].append(rows[f[0]])
        for srv in servers.values():
            srv.stop()
    finally:
        for srv in servers.values():
            srv.cleanup()
    return res


def cuckoo_callgrind(cfg):
    """Instructions per item under callgrind, as part `callgrind` measures Bloom filters: runs
    that differ only in the work after `CF.RESERVE cg N`; differences divided by the items."""
    n = 10_000 if cfg.quick else 100_000
    n_single = 5_000 if cfg.quick else 50_000
    batch = 500
    items = encode_batches([b"item:%06d" % i for i in range(n)], batch)

    def reserve(srv):
        srv.client.execute_command("CF.RESERVE", "cg", n)

    def batches(srv):
        reserve(srv)
        send_all(srv, "CF.INSERT", "cg", items, ("ITEMS",))
        send_all(srv, "CF.MEXISTS", "cg", items)

    def single_add(srv):
        reserve(srv)
        redis_benchmark(srv.port, n_single, "CF.ADD", "cg", "__rand_int__")

    def single_add_exists(srv):
        single_add(srv)
        redis_benchmark(srv.port, n_single, "CF.EXISTS", "cg", "__rand_int__")

    runs = (("baseline", "CF.RESERVE only", reserve),
            ("batches", f"{n:,} CF.INSERT + {n:,} CF.MEXISTS items in batches of {batch}", batches),
            ("single-add", f"{n_single:,} pipelined CF.ADD", single_add),
            ("single-add-exists", f"{n_single:,} pipelined CF.ADD, then {n_single:,} CF.EXISTS", single_add_exists))
    res = {"items": n, "batch": batch, "single_requests": n_single, "modules": {}}
    for key, name, module in cfg.modules:
        raw = {}
        for tag, what, work in runs:
            log(f"cuckoo: callgrind: {name}: {what}")
            raw[tag] = callgrind_run(cfg, key, module, f"cf-{tag}", None, work)
        (t0, m0), (t1, m1) = raw["baseline"], raw["batches"]
        (t2, m2), (t3, m3) = raw["single-add"], raw["single-add-exists"]
        res["modules"][key] = {
            "server_ir_per_item": (t1 - t0) / (2 * n), "module_ir_per_item": (m1 - m0) / (2 * n),
            "single": {"add": {"server": (t2 - t0) / n_single, "module": (m2 - m0) / n_single},
                       "exists": {"server": (t3 - t2) / n_single, "module": (m3 - m2) / n_single}},
            "raw": {tag: {"total": t, "module": m} for tag, (t, m) in raw.items()}}
    return res


# How the small filters are created: (kind, label, command of filter i, its reply).
CF_SMALL_CREATE = (
    ("reserve", "CF.RESERVE k 1000", lambda i: resp("CF.RESERVE", small_key(i), 1000), b"+OK\r\n"),
    ("auto", "CF.ADD to a new key (default capacity 1024)", lambda i: resp("CF.ADD", b"g:%012d" % i, b"first"),
     b":1\r\n"),
)


def cuckoo_small(cfg):
    """Many small cuckoo filters: `filters` per kind of CF_SMALL_CREATE created by 50 `redis-cli
    --pipe` at once, used_memory per filter and filters/s (one server per module, in turn); then
    instructions per filter created under callgrind (N and 2N creations, the difference / N)."""
    filters = 20_000 if cfg.quick else 200_000
    cg_n = 2_000
    res = {"filters": filters, "callgrind_filters": cg_n, "runs": {}, "callgrind": {}}
    pipe_dir = tempfile.mkdtemp(prefix="scalebloom-bench-cfpipes-")
    try:
        pipes = {kind: pipe_files(pipe_dir, kind, [make(i) for i in range(filters)], 50)
                 for kind, _, make, _ in CF_SMALL_CREATE}
        for key, name, module in cfg.modules:
            with Server(cfg, key, module) as srv:
                c = srv.client
                row = {}
                for kind, _, _, _ in CF_SMALL_CREATE:
                    log(f"cuckoo: small: {name}: {filters:,} filters by {kind}")
                    mem0 = used_memory(c)
                    seconds = drive_pipes(srv, pipes[kind])
                    row[kind] = {"per_second": filters / seconds,
                                 "bytes_per_filter": (used_memory(c) - mem0) / filters}
                if int(c.dbsize()) != 2 * filters:
                    raise BenchError(f"{name}: {c.dbsize()} keys after creating {2 * filters:,} cuckoo filters")
                res["runs"][key] = row
    finally:
        shutil.rmtree(pipe_dir, ignore_errors=True)
    runs = {}
    for kind, _, make, reply in CF_SMALL_CREATE:
        cmds = [make(i) for i in range(2 * cg_n)]
        runs[kind] = (chunked(cmds[:cg_n], reply, PIPE_DEPTH), chunked(cmds, reply, PIPE_DEPTH))
    for key, name, module in cfg.modules:
        out = {}
        for kind, (one, two) in runs.items():
            log(f"cuckoo: small: callgrind: {name}: {kind}")
            t1, m1 = callgrind_run(cfg, key, module, f"cf-small-{kind}-n", None, lambda srv, ch=one: drive(srv, ch))
            t2, m2 = callgrind_run(cfg, key, module, f"cf-small-{kind}-2n", None, lambda srv, ch=two: drive(srv, ch))
            out[kind] = {"server": (t2 - t1) / cg_n, "module": (m2 - m1) / cg_n}
        res["callgrind"][key] = out
    return res


def report_cuckoo(r):
    f = r["filters"]
    rounds, n = r["rounds"], r["items"]
    out = [f"### Cuckoo filters: scalebloom's CF.* against RedisBloom's, ns per item (server-side, INFO commandstats)\n\n"
           f"The same {n:,} items (`item:NNNNNNNN`) into `CF.RESERVE k {n}` (bucket size 2, 8-bit "
           "fingerprints) in scalebloom and in RedisBloom, each in a server of its own, both up. "
           f"Single-item commands are pipelined {r['batch']:,} per write on one filter; the batched "
           f"rows use a second, fresh filter, batches of {r['batch']:,} (CF.INSERT / CF.MEXISTS); "
           "`absent` items are `absent:NNNNNNNN`, never added. Every reply is checked. "
           f"{plural(rounds, 'round')}; each phase runs on both filters back to back, in an order "
           "that reverses every round. Every figure of a row is from the round whose ratio is the "
           "median (`round`); lower is better. Targets: ≤ 0.5× on the batched rows, "
           "≤ 1.0× on the single-item rows."]
    rows = []
    for phase, label, cmd, _ in CUCKOO_PHASES:
        sb, rb = f["scalebloom"]["runs"], f["redisbloom"]["runs"]
        ratios = [ratio(x[phase], y[phase]) for x, y in zip(sb, rb)]
        m = median_index(ratios)
        rows.append((label, cmd, f"{sb[m][phase]:.0f}", f"{rb[m][phase]:.0f}", f"{ratios[m]:.2f}×",
                     f"{m + 1} of {rounds}", f"{min(ratios):.2f}–{max(ratios):.2f}×"))
    out.append(table(("phase", "command", "scalebloom ns", "RedisBloom ns", "scalebloom / RedisBloom",
                      "round", "all rounds"), rows))
    rows = [(x["label"], f"{x['size']:,}", f"{x['size'] * 8 / n:.1f}",
             f"{x['absent_ones']:,} ({100 * x['absent_ones'] / n:.2f}%)") for x in f.values()]
    out.append(f"Memory (CF.INFO `Size`) with the {n:,} items in, and how many of the {n:,} absent "
               "items the full filter answers 1 for (the first round):\n\n"
               + table(("filter", "Size, bytes", "bits per item", "absent items answering 1"), rows))
    # Parts recorded before these measurements existed have none of them.
    if "large" in r:
        out.extend(report_cuckoo_large(r["large"]))
    if "callgrind" in r:
        out.extend(report_cuckoo_callgrind(r["callgrind"]))
    if "small" in r:
        out.extend(report_cuckoo_small(r["small"]))
    return out


def report_cuckoo_large(r):
    rounds = r["rounds"]
    sb, rb = r["runs"]["scalebloom"], r["runs"]["redisbloom"]
    out = [f"### Cuckoo filters: a 256 MiB filter, ns per item (server-side, INFO commandstats)\n\n"
           f"`CF.RESERVE L {r['capacity']:,}` (2^27 buckets of 2 one-byte slots: 256 MiB, far larger than "
           f"the caches), fresh in each round. First {r['items']:,} items (`first:N`) by CF.INSERT in "
           f"batches of {r['batch']:,}: their writes fault in the filter's pages (its memory is lazily "
           "zeroed in both modules, and the first touch takes 4 KiB pages in both), so that row "
           "is shown for information, without a target. The run then waits until scalebloom's "
           "huge-page thread has moved the filter into huge pages (`INFO bf` "
           f"`bf_huge_pages_waiting 0`; {settle_note(sb, 'the first items')}), so the later phases measure the filter as "
           f"it stays. Then {r['items']:,} more (`big:N`), "
           f"CF.MEXISTS of those and of {r['items']:,} never added, then single-item commands pipelined "
           f"{r['batch']:,} per write: {r['single_items']:,} CF.ADD of new items and CF.EXISTS of "
           f"{r['single_items']:,} present and absent ones. {plural(rounds, 'round')}, the order of the "
           "modules reversing every round; each row is the median-ratio round."]
    rows = []
    for phase, label, cmd, _, batched in LARGE_PHASES:
        ratios = [ratio(x[phase], y[phase]) for x, y in zip(sb, rb)]
        m = median_index(ratios)
        target = ("—" if phase == "insert_first"
                  else verdict("cf_batched" if batched else "cf_single", ratios[m]))
        rows.append((label, cmd, f"{sb[m][phase]:.0f}", f"{rb[m][phase]:.0f}", f"{ratios[m]:.2f}×",
                     target, f"{m + 1} of {rounds}",
                     f"{min(ratios):.2f}–{max(ratios):.2f}×"))
    out.append(table(("phase", "command", "scalebloom ns", "RedisBloom ns", "ratio", "target", "round",
                      "all rounds"), rows))
    out.append(f"CF.INFO `Size` after the round: scalebloom {sb[0]['size']:,} bytes, RedisBloom "
               f"{rb[0]['size']:,} bytes.")
    return out


def report_cuckoo_callgrind(r):
    a, b = r["modules"]["scalebloom"], r["modules"]["redisbloom"]
    out = [f"### Cuckoo filters: instructions per item (callgrind)\n\n{r['items']:,} CF.INSERT + "
           f"{r['items']:,} CF.MEXISTS items (`item:NNNNNN`) in batches of {r['batch']} into `CF.RESERVE cg "
           f"{r['items']:,}`, minus a reserve-only run; lower is better."]
    rows = []
    for what, k, t in (("whole server", "server_ir_per_item", "cf_callgrind_server"),
                       ("module's own code", "module_ir_per_item", "cf_callgrind_module")):
        q = ratio(a[k], b[k])
        rows.append((what, f"{a[k]:.0f}", f"{b[k]:.0f}", f"{q:.2f}×", verdict(t, q)))
    out.append(table(("Ir per item", "scalebloom", "RedisBloom", "ratio", "target"), rows))
    rows = []
    for op, label in (("add", "CF.ADD"), ("exists", "CF.EXISTS")):
        x, y = a["single"][op], b["single"][op]
        q = ratio(x["server"], y["server"])
        rows.append((label, f"{x['server']:.0f}", f"{y['server']:.0f}", f"{q:.2f}×", verdict("cf_single", q),
                     f"{x['module']:.0f}", f"{y['module']:.0f}"))
    out.append(f"Single-item commands (`redis-benchmark -P 64 -c 50 -r {r['single_requests']:,}`), "
               f"{r['single_requests']:,} requests each, instructions per request:\n\n"
               + table(("Ir per request", "scalebloom server", "RedisBloom server", "ratio", "target",
                        "scalebloom module", "RedisBloom module"), rows))
    return out


def report_cuckoo_small(r):
    a, b = r["runs"]["scalebloom"], r["runs"]["redisbloom"]
    cg = r["callgrind"]
    rows = []
    for kind, label, _, _ in CF_SMALL_CREATE:
        x, y = a[kind], b[kind]
        q = ratio(x["bytes_per_filter"], y["bytes_per_filter"])
        i, j = cg["scalebloom"][kind], cg["redisbloom"][kind]
        qi = ratio(i["server"], j["server"])
        rows.append((label, f"{x['bytes_per_filter']:,.1f}", f"{y['bytes_per_filter']:,.1f}", f"{q:.4f}×",
                     verdict("cf_small_bytes", q, 4), f"{i['server']:,.0f}", f"{j['server']:,.0f}", f"{qi:.2f}×",
                     verdict("cf_small_ir", qi), f"{x['per_second']:,.0f}", f"{y['per_second']:,.0f}"))
    return [f"### Many small cuckoo filters\n\n{r['filters']:,} filters of each kind in one server per "
            "module (in turn), sent by 50 `redis-cli --pipe` at once: bytes per filter (used_memory "
            "after minus before, divided by the filters: key, dictionary entry, filter, allocator "
            "rounding) and filters/s (one run, for information). Instructions per filter created: "
            f"callgrind runs creating {r['callgrind_filters']:,} and {2 * r['callgrind_filters']:,} "
            f"filters pipelined {PIPE_DEPTH} deep, the difference divided by {r['callgrind_filters']:,} "
            "(dispatch and reply included).\n\n"
            + table(("created by", "scalebloom B/filter", "RedisBloom B/filter", "ratio", "target",
                     "scalebloom Ir", "RedisBloom Ir", "Ir ratio", "target", "scalebloom filters/s",
                     "RedisBloom filters/s"), rows)]
