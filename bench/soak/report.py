"""The soak's report: one Markdown file per engine, bench/results/soak-<engine>.md (the latest
run; the date and the machine it ran on are inside)."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List

from checks import MEMORY_SLACK, Results
from faults import Event
from load import EXPLAINED, Stats

GRACE = 5.0  # errors up to this long after a fault ends are the fault's (clients reconnect)


def merged(stats: List[Stats]) -> Stats:
    out = Stats()
    for s in stats:
        for f in ("commands", "items_added", "items_shadowed", "items_deleted", "reads",
                  "live_misses", "abandoned", "refused"):  # fmt: skip
            setattr(out, f, getattr(out, f) + getattr(s, f))
        for k, v in s.errors.items():
            out.errors[k] += v
        for sec, w in s.worst.items():
            out.worst[sec] = max(out.worst[sec], w)
        for sec, n in s.retries.items():
            out.retries[sec] += n
        for sec, d in s.errs_at.items():
            for k, v in d.items():
                out.errs_at[sec][k] += v
    return out


def unexplained(st: Stats) -> Dict[str, int]:
    return {k: v for k, v in st.errors.items() if k not in EXPLAINED}


def _windows(events: List[Event]) -> List[range]:
    """The seconds each fault's errors are counted in: from its start to GRACE after its end,
    cut at the next fault's start (a second is counted once)."""
    out = []
    for i, ev in enumerate(events):
        end = ev.end + GRACE
        if i + 1 < len(events):
            end = min(end, events[i + 1].start)
        out.append(range(int(ev.start), max(int(ev.start) + 1, int(end))))
    return out


def failures(res: Results, st: Stats, worker_failures: List[str]) -> List[str]:
    """What makes the run fail: none of these depends on timing."""
    out = []
    if res.fn_total():
        out.append(f"{res.fn_total()} false negatives")
    if res.lost_keys or res.wrong_type:
        out.append(f"{len(res.lost_keys)} keys lost, {len(res.wrong_type)} of the wrong type")
    if res.digest_mismatch:
        out.append(f"{len(res.digest_mismatch)} digest mismatches")
    if res.crashes:
        out.append(f"{len(res.crashes)} crash reports")
    if unexplained(st):
        out.append(f"error replies no fault explains: {unexplained(st)}")
    out += [f"client failed: {w}" for w in worker_failures]
    return out


def render(
    meta: Dict[str, str],
    res: Results,
    st: Stats,
    events: List[Event],
    worker_failures: List[str],
    part: Dict[str, Dict[str, int]],
) -> str:
    t0 = float(meta["t0"])
    fails = failures(res, st, worker_failures)
    L: List[str] = [f"# Soak: {meta['engine']} ({meta['version']})", ""]
    L += [
        f"Measured {meta['started']} on {meta['machine']} (shared with other work).",
        "",
        f"{meta['seconds']} s of load by {meta['clients']} clients plus 2 of the Python "
        f"PartitionedFilter (seed {meta['seed']}, {meta['schedule']} fault schedule, large "
        f"filters of {meta['big_mb']} MB each, capacities {meta['capacities']}), on a "
        "3-primary + 3-replica cluster (AOF everysec, cluster-node-timeout "
        f"{meta['node_timeout']} ms: longer than the slowest MIGRATE of a large filter), module "
        f"{meta['module']}. Run with `make soak` (docs/soak.md says what is checked and why).",
        "",
        "Latencies are measured on a shared 2-core machine, by Python threads that share one "
        "interpreter: they are noisy and are reported, never asserted.",
        "",
        f"**Result: {'PASS' if not fails else 'FAIL: ' + '; '.join(fails)}**",
        "",
        "## Checks",
        "",
        "| check | result |",
        "|---|---|",
        f"| false negatives among items whose shadow write survived | {res.fn_total()} of {res.shadow_card} |",
        f"| keys lost / of the wrong type | {len(res.lost_keys)} / {len(res.wrong_type)} |",
        f"| replica digest mismatches (DEBUG DIGEST-VALUE, {res.digest_keys} key comparisons) | {len(res.digest_mismatch)} |",
        f"| crash reports / unexpected exits | {len(res.crashes)} |",
        f"| error replies no fault explains | {sum(unexplained(st).values())} |",
    ]
    failover = [
        st.worst.get(sec, 0.0)
        for ev, window in zip(events, _windows(events))
        if ev.fault in ("kill -9 primary", "CLUSTER FAILOVER")
        for sec in window
    ]
    L.append(
        f"| faults injected (not completed) | {len(events)} "
        f"({sum(1 for e in events if e.failed)}) |"
    )
    L.append(
        f"| worst client latency during a failover (kill -9 primary, CLUSTER FAILOVER) | "
        f"{max(failover, default=0.0):.2f} s |"
    )
    fp_ok = all(res.fp_within(k) for k in res.fp)
    L.append(f"| false-positive rates within target (+4σ) | {'yes' if fp_ok else 'NO'} |")
    if res.memory:
        worst = max(a - b for b, a in res.memory.values())
        L.append(
            f"| used_memory after the deletes, worst node minus its start (bound {MEMORY_SLACK // 1_000_000} MB) "
            f"| {worst / 1e6:+.1f} MB ({'within' if res.memory_ok() else 'OVER'}) |"
        )
    L += [
        "",
        "## Load",
        "",
        "| commands | items added | items refused (full, or no memory to grow) | items shadowed "
        "| items deleted (own) | items read back | read back absent during the load "
        "| operations abandoned |",
        "|---|---|---|---|---|---|---|---|",
        f"| {st.commands} | {st.items_added} | {st.refused} | {st.items_shadowed} | "
        f"{st.items_deleted} | {st.reads} | {st.live_misses} | {st.abandoned} |",
        "",
        "## The Python PartitionedFilter under faults",
        "",
        "Batches of 200 items with `wait_replicas=1, wait_timeout_ms=500`, one client per "
        "`wait_policy` (clients/python; docs/soak.md). A batch whose `WAIT` came up short "
        "raises `ReplicationError` with its items written; the items `WAIT` confirmed are "
        "shadowed and checked like every write.",
        "",
        "| wait_policy | batches | items | ReplicationError | accepted with fewer replicas than asked (commands) |",
        "|---|---|---|---|---|",
    ]
    for policy, d in part.items():
        L.append(
            f"| {policy} | {d['batches']} | {d['items']} | {d['short']} | {d['unreplicated']} |"
        )
    L += [
        "",
        "## Filters",
        "",
        "| kind | items checked (shadow survived) | false negatives | FP queries | FP measured | FP target |",
        "|---|---|---|---|---|---|",
    ]
    for kind, (n, fn) in res.fn.items():
        if kind in res.fp:
            q, pos, t = res.fp[kind]
            L.append(f"| {kind} | {n} | {fn} | {int(q)} | {pos / q:.2e} ({int(pos)}) | {t:.2e} |")
        else:
            L.append(f"| {kind} (large) | {n} | {fn} | – | – | – |")
    L += [
        "",
        "## Faults",
        "",
        "| # | fault | at (s) | took (s) | what | errors by kind | retries | worst latency (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    attributed = set()
    for i, (ev, window) in enumerate(zip(events, _windows(events)), 1):
        errs: Dict[str, int] = defaultdict(int)
        retries, worst = 0, 0.0
        for sec in window:
            attributed.add(sec)
            for k, v in st.errs_at.get(sec, {}).items():
                errs[k] += v
            retries += st.retries.get(sec, 0)
            worst = max(worst, st.worst.get(sec, 0.0))
        what = ev.detail if not ev.failed else f"FAULT NOT COMPLETED: {ev.failed}"
        es = ", ".join(f"{k} {v}" for k, v in sorted(errs.items())) or "none"
        L.append(
            f"| {i} | {ev.fault} | {ev.start - t0:.0f} | {ev.end - ev.start:.1f} | "
            f"{what.replace('|', '/')} | {es} | {retries} | {worst:.2f} |"
        )
    quiet = [s for s in st.worst if s not in attributed]
    outside: Dict[str, int] = defaultdict(int)
    for sec, d in st.errs_at.items():
        if sec not in attributed:
            for k, v in d.items():
                outside[k] += v
    L += [
        "",
        f"Outside every fault window: worst latency {max((st.worst[s] for s in quiet), default=0):.2f} s, "
        f"errors {dict(outside) or 'none'}.",
        "",
        "## Errors by kind (whole run)",
        "",
        "| kind | count | explained by a fault |",
        "|---|---|---|",
    ]
    for k, v in sorted(st.errors.items()):
        L.append(f"| {k.replace('|', '/')} | {v} | {'yes' if k in EXPLAINED else 'NO'} |")
    if not st.errors:
        L.append("| none | 0 | – |")
    details = res.fn_examples + res.lost_keys + res.wrong_type + res.digest_mismatch[:20]
    details += res.crashes[:20] + worker_failures
    if details:
        L += ["", "## Details", ""] + [f"- `{d}`" for d in details]
    return "\n".join(L) + "\n"
