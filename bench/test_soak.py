"""Unit tests of the soak harness' pure parts (bench/soak): error kinds, the attribution of
errors to faults, merging the clients' counts, what fails a run, the false-positive bound and
the sizing. The soak itself runs on real servers with `make soak`, outside `make test`."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "soak"))

from redis.exceptions import (  # noqa: E402
    ClusterDownError,
    ConnectionError,
    MovedError,
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


class Owns(unittest.TestCase):
    def test_slot_fields_of_a_cluster_nodes_line(self) -> None:
        import nodes

        fields = ["0-5460", "5550", "[1423-<-0dfe123f]"]
        self.assertTrue(nodes.owns(fields, 0))
        self.assertTrue(nodes.owns(fields, 5460))
        self.assertTrue(nodes.owns(fields, 5550))
        self.assertFalse(nodes.owns(fields, 5461))
        self.assertFalse(nodes.owns(fields, 1423 + 10_000))
        self.assertFalse(nodes.owns(["[1423-<-0dfe123f]"], 1423))


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
