"""Unit tests of bench/compare's pure helpers (no server needed).

Run from the repository root with the venv's python: `.venv/bin/python -m unittest discover -s bench`
(`make test` does). bench/compare has no .py suffix, so it is loaded by path.
"""

import importlib.machinery
import importlib.util
import os
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
_loader = importlib.machinery.SourceFileLoader("compare", str(HERE / "compare"))
_spec = importlib.util.spec_from_loader("compare", _loader)
compare = importlib.util.module_from_spec(_spec)
_loader.exec_module(compare)

SAMPLE = HERE / "testdata" / "callgrind-sample.out"
SAMPLE_MODULE = "/tmp/callgrind-sample/libfix.so"


def parse_text(text, module):
    with tempfile.NamedTemporaryFile("w", suffix=".out", delete=False) as f:
        f.write(text)
    try:
        return compare.parse_callgrind(f.name, module)
    finally:
        os.unlink(f.name)


class ParseCallgrindSample(unittest.TestCase):
    """A real callgrind output (testdata/make-callgrind-sample made it): a program calls a small
    shared object 3 times; the expected numbers are callgrind_annotate's, printed by that script."""

    def test_module_self_cost_matches_callgrind_annotate(self):
        total, module_ir = compare.parse_callgrind(SAMPLE, SAMPLE_MODULE)
        self.assertEqual(total, 16_638)  # PROGRAM TOTALS
        self.assertEqual(module_ir, 12_150 + 206)  # mix + work, both [libfix.so]

    def test_other_object(self):
        # main's own code: only `main` (27); `(below main)` has no self cost.
        self.assertEqual(compare.parse_callgrind(SAMPLE, "/tmp/callgrind-sample/main")[1], 27)

    def test_object_not_in_the_file_costs_nothing(self):
        self.assertEqual(compare.parse_callgrind(SAMPLE, "/nonexistent/libother.so"), (16_638, 0))

    def test_self_costs_of_all_objects_add_up_to_the_summary(self):
        # Without the summary line the total is the sum of every self cost the parser counted:
        # if it counted a call's inclusive cost, or skipped a cost line, this would differ.
        text = "".join(line for line in SAMPLE.read_text().splitlines(keepends=True)
                       if not line.startswith("summary:"))
        self.assertNotEqual(text, SAMPLE.read_text())
        self.assertEqual(parse_text(text, SAMPLE_MODULE), (16_638, 12_356))


class ParseCallgrindFormat(unittest.TestCase):
    """The parts of the format the sample may not exercise, written by hand."""

    def test_compressed_names_calls_and_relative_positions(self):
        text = (
            "version: 1\n"
            "positions: instr line\n"
            "events: Ir\n"
            "summary: 1111\n"
            "ob=(1) /lib/mod.so\n"
            "fn=(1) f\n"
            "0x10 3 100\n"          # self cost of f in mod.so
            "+2 +1 10\n"            # relative positions: still a cost line
            "cob=(2) /lib/libc.so\n"  # a called object defines id 2...
            "cfn=(2) g\n"
            "calls=1 0x20 5\n"
            "* * 500\n"             # inclusive cost of the call: not f's self cost
            "-1 -1 1\n"             # back to self costs
            "ob=(2)\n"              # ...which a later ob= refers to by id only
            "fn=(2)\n"
            "0x20 5 400\n"
            "ob=(1)\n"
            "fn=(3) h\n"
            "0x30 7 100\n"
        )
        self.assertEqual(parse_text(text, "/lib/mod.so"), (1111, 211))
        self.assertEqual(parse_text(text, "/lib/libc.so"), (1111, 400))

    def test_totals_line_and_uncompressed_names(self):
        text = ("events: Ir\ntotals: 30\nob=/lib/mod.so\nfn=f\n1 20\nob=/lib/other.so\nfn=g\n1 10\n")
        self.assertEqual(parse_text(text, "/lib/mod.so"), (30, 20))

    def test_module_compared_by_real_path(self):
        with tempfile.TemporaryDirectory() as d:
            real = Path(d) / "lib.so"
            real.write_bytes(b"")
            link = Path(d) / "link.so"
            link.symlink_to(real)
            text = f"events: Ir\nob=(1) {link}\nfn=(1) f\n1 42\n"
            self.assertEqual(parse_text(text, str(real)), (42, 42))


class Helpers(unittest.TestCase):
    def test_median_index(self):
        self.assertEqual(compare.median_index([1.03, 0.8, 1.2]), 0)
        self.assertEqual(compare.median_index([5.0]), 0)
        self.assertEqual(compare.median_index([3, 1, 2, 4]), 2)  # lower middle of 1 2 3 4

    def test_verdict(self):
        self.assertEqual(compare.verdict("pipeline", 1.0), "meets ≥ 1.00×")
        self.assertEqual(compare.verdict("callgrind_server", 0.81), "MISSES ≤ 0.80×")
        self.assertEqual(compare.verdict("small_churn", 2.5), "MISSES ≤ 2 B")
        self.assertEqual(compare.verdict("small_churn", -0.3), "meets ≤ 2 B")
        # judged as printed: 0.996 shows as 1.00×, and 1.00× meets "≥ 1.00×"
        self.assertEqual(compare.verdict("pipeline", 0.996), "meets ≥ 1.00×")
        self.assertEqual(compare.verdict("pipeline", 0.994), "MISSES ≥ 1.00×")
        self.assertEqual(compare.verdict("memory", 1.00004, 4), "meets ≤ 1.00×")
        self.assertEqual(compare.verdict("memory", 1.0001, 4), "MISSES ≤ 1.00×")

    def test_every_part_has_a_runner_and_a_report(self):
        for name, part in compare.PARTS.items():
            self.assertTrue(callable(part.run) and callable(part.report), name)
            self.assertTrue(set(part.tools) <= set(compare.TOOL_PACKAGES), name)


def recorded(name):
    import json
    return json.loads((HERE / "testdata" / name).read_text())["results"]


class Report(unittest.TestCase):
    """testdata/quick-results.json is the --json output of a `--quick` run of every part but
    import and counting, testdata/quick-import.json of a later `--quick --only import` run,
    testdata/quick-counting.json of a `--quick --only counting` run, testdata/quick-cuckoo.json of
    a `--quick --only cuckoo` run, testdata/quick-window.json of a `--quick --only window` run:
    each part's report renders
    from them, with the headings and targets the README explains."""

    def test_every_part_renders_from_a_recorded_run(self):
        results = dict(recorded("quick-results.json"), **recorded("quick-import.json"),
                       **recorded("quick-counting.json"), **recorded("quick-cuckoo.json"),
                       **recorded("quick-window.json"), **recorded("quick-merge.json"))
        self.assertEqual(set(results), set(compare.PARTS))
        text = compare.report(results)
        for heading in ("### Instructions per item", "### Bits per item", "### ns per item",
                        "### Pipelined throughput", "### Many small filters",
                        "### Loading an RDB with one large filter", "### An imported RedisBloom filter",
                        "### Counting filters against RedisBloom's cuckoo filter",
                        "### Cuckoo filters: scalebloom's CF.* against RedisBloom's",
                        "### Cuckoo filters: a 256 MiB filter", "### Cuckoo filters: instructions per item",
                        "### Many small cuckoo filters",
                        "### Windowed filters: `WINDOW ITEMS` against two rotated RedisBloom filters",
                        "### BF.MERGE"):
            self.assertEqual(text.count(heading), 1, heading)
        self.assertIn("meets ≤ 2 B", text)  # the churn rows of that run

    def import_rows(self, r):
        text = compare.report_import(r)[1]
        return {cells[1]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                              for line in text.splitlines()[2:])}

    def test_import_rows_are_the_median_ratio_round(self):
        import copy
        r = copy.deepcopy(recorded("quick-import.json")["import"])
        self.assertEqual(r["rounds"], 3)
        rows = self.import_rows(r)
        self.assertEqual([rows[label][5] for _, label in compare.IMPORT_PHASES], [""] * 4)  # 16 MiB: no target
        for runs, ns in ((r["modules"]["scalebloom"]["runs"], (50, 300, 90)),
                         (r["modules"]["redisbloom"]["runs"], (100, 100, 100))):
            for run, v in zip(runs, ns):
                run["madd_first"] = v
        r["label"] = "1 GiB"  # the full run's filter, judged against the target
        cells = self.import_rows(r)["MADD, new items"]
        # ratios 0.50, 3.00, 0.90: the median is round 3's, and every figure is that round's
        self.assertEqual(cells[2:], ["90", "100", "0.90×", "MISSES ≤ 0.50×", "3 of 3", "0.50–3.00×"])
        r["modules"]["scalebloom"]["runs"][2]["madd_first"] = 40
        cells = self.import_rows(r)["MADD, new items"]
        self.assertEqual(cells[2:], ["50", "100", "0.50×", "meets ≤ 0.50×", "1 of 3", "0.40–3.00×"])

    def test_import_callgrind_rows(self):
        r = recorded("quick-import.json")["import"]
        text = compare.report_import(r)[3]
        x = r["callgrind"]["modules"]["scalebloom"]["mexists_absent"]
        line = next(line for line in text.splitlines() if line.startswith("| MEXISTS, absent"))
        self.assertIn(f"| {x['server']:,.0f} ", line)
        self.assertIn(f"| {x['module']:,.0f} ", line)

    def counting_rows(self, r):
        text = compare.report_counting(r)[1]
        return {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                              for line in text.splitlines()[2:])}

    def test_counting_rows_are_the_median_ratio_round(self):
        import copy
        r = copy.deepcopy(recorded("quick-counting.json")["counting"])
        self.assertEqual(r["rounds"], 3)
        rows = self.counting_rows(r)
        self.assertEqual(len(rows), len(compare.COUNTING_PHASES))
        # the plain filter has no delete; RedisBloom's batched delete is pipelined CF.DEL
        self.assertEqual(rows["delete"][2], "—")
        self.assertEqual(rows["delete"][8], "—")
        self.assertEqual(rows["delete, batched"][1], "BF.MDEL / CF.DEL (pipelined)")
        f = r["filters"]
        for k, ns in (("plain", (40, 50, 60)), ("counting4", (50, 300, 90)), ("counting8", (70, 80, 100)),
                      ("cuckoo", (100, 100, 100))):
            for run, v in zip(f[k]["runs"], ns):
                run["add"] = v
        # COUNTING 4 / CF ratios 0.50, 3.00, 0.90: the median is round 3's, every figure is that round's
        self.assertEqual(self.counting_rows(r)["add"][2:],
                         ["60", "90", "100", "100", "0.90×", "1.00×", "1.50×", "3 of 3", "0.50–3.00×"])

    def window_rows(self, r):
        text = compare.report_window(r)[2]
        return {(cells[0], cells[1]): cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                                          for line in text.splitlines()[4:])}

    def test_window_ratios_are_of_the_medians(self):
        import copy
        r = copy.deepcopy(recorded("quick-window.json")["window"])
        self.assertEqual(r["rounds"], 3)
        kinds = r["errors"]["0.01"]
        for k, ns in (("window", (100, 400, 150)), ("plain", (100, 90, 80)), ("rotated", (50, 50, 75)),
                      ("rotated2", (300, 300, 300))):
            for run, v in zip(kinds[k], ns):
                run["madd"] = v
        # medians: window 150, plain 90, rotated 50, rotated e/2 300
        self.assertEqual(self.window_rows(r)[("1%", "BF.MADD")][2:],
                         ["1.67×", "MISSES ≤ 1.50×", "3.00×", "0.50×"])
        kinds["window"][1]["madd"] = 120
        self.assertEqual(self.window_rows(r)[("1%", "BF.MADD")][2:4], ["1.33×", "meets ≤ 1.50×"])
        x, p = kinds["window"][0], kinds["plain"][0]
        self.assertEqual(self.window_rows(r)[("1%", "bytes (Size)")][2], f"{x['size'] / p['size']:.2f}×")

    def test_counting_memory_rows(self):
        r = recorded("quick-counting.json")["counting"]
        text = compare.report_counting(r)[2]
        x = r["filters"]["counting4"]
        line = next(line for line in text.splitlines() if line.startswith("| COUNTING 4 "))
        self.assertIn(f"| {x['size']:,} ", line)
        self.assertIn(f"| {x['size'] * 8 / r['items']:.1f} ", line)

    def test_pipeline_row_is_one_round(self):
        r = {"requests": 10, "rounds": 3, "ratios": {"add": {"runs": [1.5, 0.5, 1.1]}, "exists": {"runs": [1, 1, 1]}},
             "median_round": {"add": 2, "exists": 0},
             "modules": {"scalebloom": {op: {"runs": [150, 50, 110], "cpu_runs": [1, 2, 3]} for op in ("add", "exists")},
                         "redisbloom": {op: {"runs": [100, 100, 100], "cpu_runs": [2, 2, 2]} for op in ("add", "exists")}}}
        add = next(line for line in compare.report_pipeline(r)[1].splitlines() if line.startswith("| BF.ADD"))
        cells = [c.strip() for c in add.strip("|").split("|")]
        self.assertEqual(cells[1:5], ["110", "100", "1.10×", "meets ≥ 1.00×"])
        self.assertEqual(cells[5], "3 of 3")
        self.assertEqual(cells[7:], ["3.00", "2.00", "1.50×"])


class WriteReadme(unittest.TestCase):
    """A run that writes some parts replaces their sections and keeps the others."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.saved = compare.README
        compare.README = Path(self.dir.name) / "README.md"

    def tearDown(self):
        compare.README = self.saved
        self.dir.cleanup()

    def test_partial_write_keeps_other_parts(self):
        compare.README.write_text("# B\n\ntext before\n")
        compare.write_readme({"memory": compare.part_section("memory", "run 1", "M1"),
                              "callgrind": compare.part_section("callgrind", "run 1", "C1")})
        compare.write_readme({"memory": compare.part_section("memory", "run 2", "M2"),
                              "small": compare.part_section("small", "run 2", "S2")})
        text = compare.README.read_text()
        self.assertTrue(text.startswith("# B\n\ntext before\n"))
        self.assertEqual(text.count(compare.BEGIN_MARK), 1)
        self.assertEqual(text.count(compare.END_MARK), 1)
        self.assertIn("run 1\n\nC1", text)
        self.assertIn("run 2\n\nM2", text)
        self.assertNotIn("M1", text)
        # in the order of PARTS: callgrind, memory, ..., small
        self.assertLess(text.index("C1"), text.index("M2"))
        self.assertLess(text.index("M2"), text.index("S2"))

    def test_the_repository_readme_has_one_section_per_part_at_most(self):
        text = self.saved.read_text()
        self.assertEqual(text.count(compare.BEGIN_MARK), 1)
        for name in compare.PARTS:
            self.assertLessEqual(text.count(compare.PART_BEGIN.format(name)), 1, name)


if __name__ == "__main__":
    unittest.main()
