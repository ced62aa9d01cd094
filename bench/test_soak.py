"""Unit tests of the soak harness' pure parts (bench/soak): error kinds, the attribution of
errors to faults, merging the clients' counts, what fails a run, the false-positive bound and
the sizing, the repair's decisions; and the repair itself on a real 3 + 3 cluster. The soak runs
with `make soak` (long, by hand) and `make test-soak` (2 minutes, a step of `make test`)."""

import os
import shutil
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "soak"))

from redis.exceptions import (  # noqa: E402
    ClusterDownError,
    ConnectionError,
    MovedError,
    OutOfMemoryError,
    ResponseError,
    TimeoutError,
)

import checks  # noqa: E402
import faults  # noqa: E402
import load  # noqa: E402
import report  # noqa: E402
from faults import Event  # noqa: E402


class KindOf(unittest.TestCase):
    def test_fault_kinds_are_explained_and_others_are_not(self) -> None:
        self.assertEqual(load.kind_of(ConnectionError("x")), "connection")
        self.assertEqual(load.kind_of(TimeoutError("x")), "timeout")
        self.assertEqual(load.kind_of(ClusterDownError("x")), "CLUSTERDOWN")
        self.assertEqual(load.kind_of(MovedError("3999 127.0.0.1:6381")), "redirect")
        self.assertEqual(
            load.kind_of(ResponseError("OOM command not allowed when used memory > 'maxmemory'.")),
            "OOM",
        )
        for k in ("connection", "timeout", "CLUSTERDOWN", "redirect", "OOM", "WAIT short"):
            self.assertIn(k, load.EXPLAINED)
        wrong = load.kind_of(ResponseError("WRONGTYPE Operation against a key"))
        self.assertEqual(wrong, "ERR WRONGTYPE Operation against a key")
        self.assertNotIn(wrong, load.EXPLAINED)


def stats(errors: dict, worst: dict) -> load.Stats:
    s = load.Stats()
    for sec, kinds in errors.items():
        for k, n in kinds.items():
            s.errors[k] += n
            s.errs_at[sec][k] += n
    for sec, w in worst.items():
        s.worst[sec] = w
    return s


class Report(unittest.TestCase):
    def test_windows_end_at_the_next_fault(self) -> None:
        evs = [Event("a", 100.2, 103.0, ""), Event("b", 105.5, 106.0, ""), Event("c", 200, 201, "")]
        w = report._windows(evs)
        self.assertEqual(w[0], range(100, 105))  # cut at b's start
        self.assertEqual(w[1], range(105, 111))  # end + GRACE
        self.assertEqual(w[2], range(200, 206))
        # A fault shorter than a second still owns its own second.
        self.assertEqual(report._windows([Event("d", 7.0, 7.0, ""), Event("e", 7.5, 8, "")])[0],
                         range(7, 8))

    def test_merged_adds_counts_and_keeps_the_worst_latency(self) -> None:
        a = stats({10: {"connection": 2}}, {10: 0.5})
        b = stats({10: {"connection": 1, "OOM": 4}}, {10: 1.5, 11: 0.1})
        a.commands, b.commands = 3, 4
        m = report.merged([a, b])
        self.assertEqual(m.commands, 7)
        self.assertEqual(dict(m.errors), {"connection": 3, "OOM": 4})
        self.assertEqual(m.worst[10], 1.5)
        self.assertEqual(m.errs_at[10]["OOM"], 4)

    def test_failures(self) -> None:
        res = checks.Results()
        ok = stats({1: {"connection": 5}}, {})
        self.assertEqual(report.failures(res, ok, []), [])
        res.fn["plain"] = [100, 1]
        res.digest_mismatch.append("k 1->2")
        bad = stats({1: {"ERR boom": 1}}, {})
        got = report.failures(res, bad, ["w1: still running"])
        self.assertEqual(len(got), 4)
        self.assertIn("1 false negatives", got)


class Checks(unittest.TestCase):
    def test_fp_bound_is_target_plus_four_sigma(self) -> None:
        res = checks.Results()
        res.fp["plain"] = [10_000, 100, 0.01]  # exactly the target
        self.assertTrue(res.fp_within("plain"))
        res.fp["plain"] = [10_000, 140, 0.01]  # 4σ = 4·sqrt(0.01/10⁴) = 0.004
        self.assertTrue(res.fp_within("plain"))
        res.fp["plain"] = [10_000, 141, 0.01]
        self.assertFalse(res.fp_within("plain"))

    def test_cuckoo_filters_from_every_reply_shape(self) -> None:
        flat = [b"Size", 10, b"Number of buckets", 4, b"Number of filters", 3]
        self.assertEqual(checks.cuckoo_filters(flat), 3)
        self.assertEqual(checks.cuckoo_filters({"Size": 10, "Number of filters": 2}), 2)
        self.assertEqual(checks.cuckoo_filters({b"Number of filters": 5}), 5)

    def test_memory_bound(self) -> None:
        res = checks.Results()
        res.memory = {1: (10_000_000, 10_000_000 + checks.MEMORY_SLACK)}
        self.assertTrue(res.memory_ok())
        res.memory[2] = (0, checks.MEMORY_SLACK + 1)
        self.assertFalse(res.memory_ok())


class UntilUp(unittest.TestCase):
    def test_retries_clusterdown_also_relayed_by_migrate_and_nothing_else(self) -> None:
        replies = [
            ClusterDownError("The cluster is down"),
            ResponseError("Target instance replied with error: CLUSTERDOWN The cluster is down"),
            ResponseError("NOREPLICAS Not enough good replicas to write."),
            "done",
        ]

        def f() -> str:
            r = replies.pop(0)
            if isinstance(r, Exception):
                raise r
            return r

        self.assertEqual(faults._until_up("migrate", f), "done")
        self.assertEqual(replies, [])

        def wrong() -> str:
            raise ResponseError("IOERR error or timeout reading to target instance")

        with self.assertRaises(ResponseError):
            faults._until_up("migrate", wrong)


A, B, C = "a" * 40, "b" * 40, "c" * 40


def nodes_text(me: str, slots: dict, open_fields: str = "", role: str = "master") -> str:
    """A CLUSTER NODES text: three primaries with ``slots`` (id -> fields), ``me`` myself."""
    lines = []
    for i, nid in enumerate((A, B, C)):
        flags = ("myself," if nid == me else "") + (role if nid == me else "master")
        fields = slots.get(nid, "") + (" " + open_fields if nid == me and open_fields else "")
        lines.append(f"{nid} 127.0.0.1:{7000 + i}@{17000 + i} {flags} - 0 0 {i + 1} connected "
                     f"{fields}".rstrip())
    return "\n".join(lines) + "\n"


SLOTS = {A: "0-5460", B: "5461-10922", C: "10923-16383"}
# The defect a 30-minute run on Redis 7.0 met: slot 5550 importing on a node that sees it
# unassigned (its owner's other slots intact), so the node's cluster_state stays fail.
DEFECT = {A: "0-5460", B: "5461-5549 5551-10922", C: "10923-16383"}


class Repair(unittest.TestCase):
    def test_parse_view_reads_owners_and_open_slots(self) -> None:
        import nodes

        v = nodes.parse_view(nodes_text(C, DEFECT, f"[5550-<-{A}] [12000->-{B}]"))
        self.assertEqual((v.me, v.role), (C, "master"))
        self.assertEqual(v.owner[0], A)
        self.assertEqual(v.owner[5549], B)
        self.assertNotIn(5550, v.owner)
        self.assertEqual(v.owner[16383], C)
        self.assertEqual(v.importing, {5550: A})
        self.assertEqual(v.migrating, {12000: B})
        self.assertEqual(v.describe(5550), f"unassigned, importing from {A[:8]}")

    def test_majority_owner_or_none(self) -> None:
        import nodes

        full = nodes.parse_view(nodes_text(A, SLOTS))
        hole = nodes.parse_view(nodes_text(B, DEFECT))
        owners = nodes.majority_owners([full, full, hole])
        self.assertEqual(owners[5550], B)
        # Two views that disagree: no majority, the slot is left alone.
        moved = nodes.parse_view(nodes_text(A, {A: "0-5460", B: "5461-5549 5551-10922",
                                                C: "5550 10923-16383"}))  # fmt: skip
        self.assertNotIn(5550, nodes.majority_owners([full, moved]))
        self.assertEqual(nodes.majority_owners([full, moved])[0], A)
        self.assertEqual(nodes.majority_owners([]), {})

    def test_the_defect_binds_the_owner_drops_the_keys_with_asking_then_stable(self) -> None:
        import nodes

        v = nodes.parse_view(nodes_text(C, DEFECT, f"[5550-<-{A}]"))
        owners = nodes.majority_owners([nodes.parse_view(nodes_text(A, SLOTS))] * 2)
        self.assertEqual(nodes.slots_to_repair(v, owners), [5550])
        self.assertEqual(
            nodes.repair_steps(v, 5550, B, keys=3),
            [("CLUSTER", "SETSLOT", 5550, "NODE", B), ("ASKING DROP",),
             ("CLUSTER", "SETSLOT", 5550, "STABLE")],
        )  # fmt: skip
        # No keys: nothing to drop.
        self.assertEqual(
            nodes.repair_steps(v, 5550, B, keys=0),
            [("CLUSTER", "SETSLOT", 5550, "NODE", B), ("CLUSTER", "SETSLOT", 5550, "STABLE")],
        )

    def test_keys_of_a_slot_owned_elsewhere_and_not_imported_are_imported_to_drop_them(self) -> None:
        import nodes

        v = nodes.parse_view(nodes_text(C, SLOTS))
        self.assertEqual(
            nodes.repair_steps(v, 5550, B, keys=2),
            [("CLUSTER", "SETSLOT", 5550, "IMPORTING", B), ("ASKING DROP",),
             ("CLUSTER", "SETSLOT", 5550, "STABLE")],
        )  # fmt: skip

    def test_a_node_owning_a_slot_the_majority_gives_another_drops_then_hands_it_over(self) -> None:
        import nodes

        v = nodes.parse_view(nodes_text(C, {A: "0-5460", B: "5461-5549 5551-10922",
                                            C: "5550 10923-16383"}, f"[5550->-{B}]"))  # fmt: skip
        owners = nodes.majority_owners([nodes.parse_view(nodes_text(A, SLOTS))] * 2)
        self.assertEqual(nodes.slots_to_repair(v, owners), [5550])
        self.assertEqual(
            nodes.repair_steps(v, 5550, B, keys=4),
            [("DROP",), ("CLUSTER", "SETSLOT", 5550, "NODE", B),
             ("CLUSTER", "SETSLOT", 5550, "STABLE")],
        )  # fmt: skip

    def test_the_owner_keeps_its_keys_and_only_closes_the_slot(self) -> None:
        import nodes

        v = nodes.parse_view(nodes_text(B, SLOTS, f"[5550->-{C}]"))
        self.assertEqual(nodes.repair_steps(v, 5550, B, keys=9),
                         [("CLUSTER", "SETSLOT", 5550, "STABLE")])
        # Importing its own slot, unassigned in its view: bound to itself (clears importing).
        v = nodes.parse_view(nodes_text(B, DEFECT, f"[5550-<-{C}]"))
        self.assertEqual(
            nodes.repair_steps(v, 5550, B, keys=9),
            [("CLUSTER", "SETSLOT", 5550, "NODE", B), ("CLUSTER", "SETSLOT", 5550, "STABLE")],
        )

    def test_a_replica_drops_nothing(self) -> None:
        import nodes

        v = nodes.parse_view(nodes_text(C, DEFECT, f"[5550-<-{A}]", role="slave"))
        self.assertEqual(
            nodes.repair_steps(v, 5550, B, keys=3),
            [("CLUSTER", "SETSLOT", 5550, "NODE", B), ("CLUSTER", "SETSLOT", 5550, "STABLE")],
        )

    def test_consistent_views_need_nothing(self) -> None:
        import nodes

        full = nodes.parse_view(nodes_text(A, SLOTS))
        self.assertEqual(nodes.slots_to_repair(full, nodes.majority_owners([full, full])), [])


SERVER = os.environ.get("SCALEBLOOM_SOAK_SERVER", "redis-server")
MODULE = os.environ.get("SCALEBLOOM_MODULE") or str(
    Path(__file__).resolve().parent.parent / "target/release/libscalebloom.so"
)


@unittest.skipUnless(
    shutil.which(SERVER) and shutil.which("redis-cli") and os.path.exists(MODULE),
    f"needs {SERVER}, redis-cli and the module ({MODULE})",
)
class RepairOnACluster(unittest.TestCase):
    def test_a_node_importing_a_slot_it_sees_unassigned_is_healed(self) -> None:
        """The defect's state on a real 3 + 3 cluster (SCALEBLOOM_SOAK_SERVER, default
        redis-server): a primary importing slot 5550 from its owner, holding a stale key of it,
        and seeing the slot unassigned, so its cluster_state is fail; repair() heals it."""
        import redis

        import nodes

        c = nodes.SoakCluster(SERVER, os.path.abspath(MODULE))
        try:
            slot = 5550
            owner = c.primary_of_slot(slot)
            ids = {int(n["port"]): str(n["id"]) for n in c.nodes()}  # type: ignore[arg-type]
            node = next(p for p, _ in c.pairs() if p.port != owner.port)
            cl = redis.Redis(port=node.port, single_connection_client=True)
            key = next(f"k{i}" for i in range(10**5)
                       if cl.execute_command("CLUSTER KEYSLOT", f"k{i}") == slot)  # fmt: skip
            owner.client().set(key, "owner's")
            cl.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", ids[owner.port])
            cl.execute_command("ASKING")
            cl.execute_command("SET", key, "stale")
            # Both in one read, before a heartbeat rebinds the slot (not in MULTI: Valkey 9.1
            # asserts on a SETSLOT inside a transaction).
            pipe = cl.pipeline(transaction=False)
            pipe.execute_command("CLUSTER DELSLOTS", slot)
            pipe.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", ids[owner.port])
            pipe.execute()
            view = c.raw_view(node.port)
            self.assertNotIn(slot, view.owner)
            self.assertEqual(view.importing, {slot: ids[owner.port]})
            self.assertEqual(cl.execute_command("CLUSTER COUNTKEYSINSLOT", slot), 1)
            # Redis never rebinds a slot it imports from the others' heartbeats: the node's
            # cluster_state stays fail. Valkey rebinds it (the slot is only left open).
            if "valkey_version" not in cl.info("server"):
                info = cl.execute_command("CLUSTER INFO")  # parsed by redis-py, or the text
                state = info.get("cluster_state") if isinstance(info, dict) else None
                self.assertTrue(state == "fail" or "cluster_state:fail" in str(info), info)
            c.repair()
            c.wait_healthy(deadline=60)
            view = c.raw_view(node.port)
            self.assertEqual(view.owner[slot], ids[owner.port])
            self.assertEqual((view.importing, view.migrating), ({}, {}))
            self.assertEqual(cl.execute_command("CLUSTER COUNTKEYSINSLOT", slot), 0)
            self.assertEqual(owner.client().get(key), b"owner's")
            cl.close()
        finally:
            c.stop()


class Sizing(unittest.TestCase):
    def test_capacities_scale_with_the_run_within_bounds(self) -> None:
        self.assertEqual(load.capacities(10), (5_000, 40_000))
        self.assertEqual(load.capacities(600), (36_000, 300_000))
        self.assertEqual(load.capacities(100_000), (200_000, 1_000_000))
        kinds = load.kinds(600)
        self.assertEqual(set(kinds), set(load.KIND_NAMES))
        self.assertEqual(kinds["window"][0][3], 300_000)

    def test_big_capacity_is_about_the_megabytes_asked(self) -> None:
        # 9.59 bits per item at 1%: 200 MB is about 167 million items.
        self.assertEqual(load.big_capacity(200), 166_840_458)
        self.assertEqual(load.big_capacity(0), 10_000)


if __name__ == "__main__":
    unittest.main()


class Acknowledged(unittest.TestCase):
    """The items an add took, from its reply: a refused item must leave the shadow."""

    def test_a_bloom_batch_that_may_not_grow_takes_only_the_items_before_its_error(self) -> None:
        oom = OutOfMemoryError("command not allowed when used memory > 'maxmemory'.")
        items = ["a", "b", "c", "d"]
        self.assertEqual(load.acknowledged("plain", True, items, [1, 0, oom]), ["a", "b"])
        self.assertEqual(load.acknowledged("blocked", True, items, [1, 1, 1, 0]), items)

    def test_a_single_add_or_a_whole_reply_that_failed_takes_nothing(self) -> None:
        err = ResponseError("ERR non scaling filter is full")
        self.assertEqual(load.acknowledged("plain", False, ["a"], err), [])
        self.assertEqual(load.acknowledged("plain", False, ["a"], 0), ["a"])
        self.assertEqual(load.acknowledged("counting", True, ["a", "b"], err), [])

    def test_a_cuckoo_filter_takes_the_items_it_answered_one_for(self) -> None:
        full = ResponseError("ERR Filter is full")
        taken = load.acknowledged("cuckoo", True, ["a", "b", "c"], [1, full, 1])
        self.assertEqual(taken, ["a", "c"])
        self.assertEqual(load.acknowledged("cuckoo", False, ["a"], 0), [])
