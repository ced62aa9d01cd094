"""python -m scalebloom check-migration (RedisBloom 2.8 → scalebloom)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

from servers import Server


def _check(*args: str) -> Tuple[int, str]:
    out = subprocess.run(
        [sys.executable, "-m", "scalebloom", "check-migration", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, out.stdout + out.stderr


def test_check_migration_from_redisbloom(
    redisbloom: Server, server: Server, tmp_path: Path
) -> None:
    src, dst = redisbloom.client(), server.client()
    known: List[str] = []
    src.execute_command("BF.RESERVE", "bf:small", 0.01, 100)
    src.execute_command("BF.RESERVE", "bf:grown", 0.001, 50, "EXPANSION", 4)
    src.execute_command("BF.RESERVE", "bf:fixed", 0.05, 1000, "NONSCALING")
    for key, n in (("bf:small", 60), ("bf:grown", 400), ("bf:fixed", 900)):
        items = [f"{key}-item-{i}" for i in range(n)]
        src.execute_command("BF.MADD", key, *items)
        known += [f"{key}\t{x}" for x in items]
    src.execute_command("CF.RESERVE", "cf:one", 100)
    src.execute_command("CF.ADD", "cf:one", "x")
    src.execute_command(
        "MIGRATE",
        "127.0.0.1",
        server.port,
        "",
        0,
        5000,
        "COPY",
        "KEYS",
        "bf:small",
        "bf:grown",
        "bf:fixed",
    )
    items_file = tmp_path / "items.tsv"
    items_file.write_text("\n".join(known) + "\n")
    src_url, dst_url = f"redis://127.0.0.1:{redisbloom.port}", f"redis://127.0.0.1:{server.port}"

    code, text = _check(
        src_url, dst_url, "--keys", "bf:*", "--items", str(items_file), "--sample", "5000"
    )
    assert code == 0, text
    assert "3 keys checked, 0 with differences" in text
    assert text.count(" ok") == 3 and "0/5000" in text and "0/400" in text

    # The cuckoo key has not moved yet: a difference. Once it has, it matches, CF.INFO and
    # CF.MEXISTS answers included; a cuckoo write that reached only the target shows.
    code, text = _check(src_url, dst_url)
    assert code == 1 and "cf:one" in text and "missing" in text, text
    src.execute_command("MIGRATE", "127.0.0.1", server.port, "cf:one", 0, 5000, "COPY")
    code, text = _check(src_url, dst_url, "--keys", "cf:*")
    assert code == 0 and "1 keys checked, 0 with differences" in text, text
    dst.execute_command("CF.ADD", "cf:one", "only-on-target")
    code, text = _check(src_url, dst_url, "--keys", "cf:*")
    assert code == 1 and "CF.INFO Number of items inserted 1 -> 2" in text, text

    # A write that reached only the target, and a key lost on the way.
    dst.execute_command("BF.ADD", "bf:small", "only-on-target")
    dst.delete("bf:fixed")
    code, text = _check(src_url, dst_url, "--keys", "bf:*")
    assert code == 1, text
    assert "BF.INFO items 60 -> 61" in text and "bf:fixed" in text and "missing" in text

    code, text = _check(src_url, "redis://127.0.0.1:1")
    assert code == 2 and "cannot reach" in text

