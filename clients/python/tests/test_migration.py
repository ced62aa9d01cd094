"""python -m scalebloom check-migration between two scalebloom servers (windowed, blocked and
cuckoo keys), and its exit statuses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import scalebloom
from servers import Server, free_port


def _check(*args: str) -> Tuple[int, str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "scalebloom", "check-migration", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, out.stdout, out.stderr


def test_check_migration_windowed_and_cuckoo_keys(server: Server) -> None:
    target = Server()
    try:
        src, dst = server.client(), target.client()
        bf, cf = scalebloom.Bloom(src), scalebloom.Cuckoo(src)
        bf.reserve("w:time", 0.01, 1000, window="10m")
        bf.madd("w:time", [f"t{i}" for i in range(500)])
        bf.reserve("w:count", 0.001, 200, window="items")
        bf.madd("w:count", [f"c{i}" for i in range(300)])  # past one window: the ring turned
        cf.reserve("cf:wide", 1000, fingerprint=16)
        cf.insert("cf:wide", [f"x{i}" for i in range(400)])
        bf.reserve("bf:blocked", 0.01, 1000, layout="blocked")
        bf.madd("bf:blocked", ["a", "b"])
        keys = ["w:time", "w:count", "cf:wide", "bf:blocked"]
        src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "COPY", "KEYS", *keys)
        src_url, dst_url = f"redis://127.0.0.1:{server.port}", f"redis://127.0.0.1:{target.port}"

        code, out, err = _check(src_url, dst_url)
        assert code == 0 and err == "", out + err
        assert "4 keys checked, 0 with differences" in out
        assert re.search(r"w:time\s+SBwindow-\s+0/1000\s+0/0\s+ok", out), out
        assert re.search(r"cf:wide\s+MBbloomCF\s+0/1000\s+0/0\s+ok", out), out

        # A windowed filter remade on the target with another window: its parameters differ.
        target_bf = scalebloom.Bloom(dst)
        dst.delete("w:time")
        target_bf.reserve("w:time", 0.01, 1000, window="20m")
        target_bf.madd("w:time", [f"t{i}" for i in range(500)])
        code, out, err = _check(src_url, dst_url, "--keys", "w:*", "--sample", "100")
        assert code == 1 and err == "", out + err
        assert "BF.STATS window 0:10:00 -> 0:20:00" in out and "BF.STATS slack" in out, out
        assert "2 keys checked, 1 with differences" in out

        # A cuckoo write that reached only the target.
        scalebloom.Cuckoo(dst).add("cf:wide", "only-on-target")
        code, out, err = _check(src_url, dst_url, "--keys", "cf:*")
        assert code == 1 and "CF.INFO Number of items inserted 400 -> 401" in out, out + err
    finally:
        target.stop()


def test_check_migration_exit_2_is_one_line_on_stderr(server: Server, tmp_path: Path) -> None:
    ok = f"redis://127.0.0.1:{server.port}"
    bad_items = tmp_path / "items.tsv"
    bad_items.write_text("key-without-a-tab\n")
    for args, says in (
        (["rediss//127.0.0.1:6379", ok], "bad URL 'rediss//127.0.0.1:6379'"),
        ([ok, "redis://127.0.0.1:notaport"], "bad URL"),
        ([ok, f"redis://user:secret@127.0.0.1:{free_port()}"], "cannot reach the target"),
        ([f"redis://127.0.0.1:{free_port()}", ok], "cannot reach the source"),
        ([ok], "required: dst_url"),
        ([ok, ok, "--sample", "-5"], "--sample"),
        ([ok, ok, "--items", str(tmp_path / "absent.tsv")], "cannot read --items"),
        ([ok, ok, "--items", str(bad_items)], "a line without a tab"),
        ([ok, ok, "--no-such-option"], "unrecognized arguments"),
    ):
        code, out, err = _check(*args)
        assert code == 2, (args, out, err)
        assert out == "" and err.count("\n") == 1 and says in err, (args, err)
        assert "Traceback" not in err and "secret" not in err, err
    code, out, err = _check(ok, ok)  # a server compared with itself
    assert code == 0 and "0 keys checked, 0 with differences" in out and err == ""


FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "valkey-bloom"


def test_check_migration_valkey_bloom_keys() -> None:
    """valkey-bloom's filters (type bloomfltr), made from the payloads valkey-bloom 1.0 wrote:
    a copy answers the same and reports every BF.INFO field alike; a different limit on the
    target shows in ``Max scaled capacity``, a filter remade with another seed in its answers."""
    limit = ["max-filter-bytes", "128mb"]  # valkey-bloom's bloom-memory-usage-limit
    source, target = Server(module_args=limit), Server(module_args=limit)
    other = Server(module_args=["max-filter-bytes", "64mb"])
    try:
        src = source.client()
        keys = ["scale3", "tight07", "seeded"]
        for key in keys:
            payload = (FIXTURES / "valkey-9.1" / key / "bfload.bin").read_bytes()
            assert src.execute_command("BF.LOAD", key, payload) in (b"OK", "OK", True)
        for dest in (target, other):
            src.execute_command("MIGRATE", "127.0.0.1", dest.port, "", 0, 5000, "COPY", "KEYS", *keys)
        src_url = f"redis://127.0.0.1:{source.port}"

        code, out, err = _check(src_url, f"redis://127.0.0.1:{target.port}")
        assert code == 0 and err == "", out + err
        assert "3 keys checked, 0 with differences" in out
        assert re.search(r"tight07\s+bloomfltr\s+0/1000\s+0/0\s+ok", out), out

        code, out, err = _check(src_url, f"redis://127.0.0.1:{other.port}", "--keys", "scale3")
        assert code == 1 and "BF.INFO Max scaled capacity" in out, out + err

        # Remade on the target with the same settings and items but another seed.
        dst = target.client()
        dst.delete("seeded")
        dst.execute_command(
            "BF.INSERT", "seeded", "SEED", bytes(range(32, 64)), "CAPACITY", 2000,
            "ERROR", 0.005, "EXPANSION", 4,
        )  # fmt: skip
        code, out, err = _check(src_url, f"redis://127.0.0.1:{target.port}", "--keys", "seeded")
        assert code == 1 and "BF.INFO Number of items inserted" in out, out + err
    finally:
        for s in (source, target, other):
            s.stop()
