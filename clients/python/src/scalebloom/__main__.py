"""``python -m scalebloom check-migration …`` and ``python -m scalebloom exporter …``."""

from __future__ import annotations

import argparse
import sys
from typing import List, NoReturn, Optional

from . import exporter, migration


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr (exit status 2), no usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def main(argv: Optional[List[str]] = None) -> int:
    parser = _Parser(prog="python -m scalebloom")
    sub = parser.add_subparsers(dest="tool", required=True)
    m = sub.add_parser(
        "check-migration",
        help="compare a RedisBloom source with a scalebloom target",
        description=(migration.__doc__ or "").split("\n\n")[0],
    )
    migration.add_arguments(m)
    e = sub.add_parser(
        "exporter",
        help="serve Prometheus metrics of the filters on a server",
        description=(exporter.__doc__ or "").split("\n\n")[0],
    )
    exporter.add_arguments(e)
    a = parser.parse_args(argv)
    if a.tool == "check-migration":
        return migration.run(a.src_url, a.dst_url, a.keys, a.sample, a.items)
    return exporter.serve(a.url, a.keys, a.port, a.addr, a.max_keys)


if __name__ == "__main__":
    sys.exit(main())
