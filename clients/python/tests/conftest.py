"""Fixtures: a fresh server (its own port) per test, a fresh RedisBloom server for the tests
that compare with it or migrate from it, and a fresh 3+3 cluster per cluster test."""

from __future__ import annotations

from typing import Iterator

import pytest

from servers import Cluster, Server


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as s:
        yield s


@pytest.fixture
def redisbloom() -> Iterator[Server]:
    with Server(module="redisbloom") as s:
        yield s


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster() as c:
        yield c
