"""Part cuckoo: scalebloom's CF.* against RedisBloom's, the same commands on the same items."""

from .client import *  # noqa: F401,F403
from .harness import *  # noqa: F401,F403
from .part_counting import counting_reply


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
    c = srv.client
    c.config_resetstat()
    if cmd in CUCKOO_BATCHED:
        send_all(srv, cmd, key, enc["batches"][which], ("ITEMS",) if cmd == "CF.INSERT" else ())
        want = len(enc["batches"][which])
    else:
        drive(srv, enc["singles"](cmd, key, which))
        want = n
    usec, calls = commandstat(c, cmd)
    if calls != want:
        raise BenchError(f"cuckoo: {srv.name}: {calls} calls of {cmd} counted, {want} sent")
    return usec * 1000 / n


def part_cuckoo(cfg):
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
           "median (`round`); lower is better. Issue 20's targets: ≤ 0.5× on the batched rows, "
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
    return out
