"""Fixtures: a fresh server (its own port) per test, and a fresh 3+3 cluster per cluster test."""

from __future__ import annotations

from typing import Iterator

import pytest

from servers import Cluster, Server


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.stop()
