"""The routing rules' test vectors (the same table is in the README, for other languages)."""

from __future__ import annotations

import hashlib

import pytest
from redis.crc import key_slot as redis_py_key_slot

from scalebloom._protocol import encode_item
from scalebloom.partitioned import partition_capacity
from scalebloom.routing import choose_keys, crc16, key_slot, partition_key, partition_of

KEY = bytes(range(16))  # routing key 000102…0f

# item, BLAKE2b-64 digest (hex, as hashed), partition for N = 3, for N = 12
VECTORS = [
    (b"", "3bc453b79112d82d", 0, 2),
    (b"hello", "71ad606c0fe0f22f", 0, 2),
    ("ü", "42b1096bc09a0ed4", 2, 9),
    (17, "8e00ebb128ef7016", 0, 1),
    (0.5, "264ede1f55b03c37", 0, 2),
    ("item:0", "806fae23b106aba7", 1, 7),
    ("item:1", "375e9b0826a94d1e", 0, 1),
    ("item:3", "8bcbf99bd6e63be5", 2, 10),
    ("item:4", "3a67f9ec518879bd", 2, 8),
]


@pytest.mark.parametrize("item,digest,p3,p12", VECTORS)
def test_partition_vectors(item: object, digest: str, p3: int, p12: int) -> None:
    b = encode_item(item)  # type: ignore[arg-type]
    assert hashlib.blake2b(b, digest_size=8, key=KEY).hexdigest() == digest
    h = int.from_bytes(bytes.fromhex(digest), "little")
    assert (h * 3) >> 64 == p3 == partition_of(b, KEY, 3)
    assert (h * 12) >> 64 == p12 == partition_of(b, KEY, 12)


def test_item_bytes_are_what_redis_py_sends() -> None:
    assert encode_item("ü") == b"\xc3\xbc"
    assert encode_item(17) == b"17"
    assert encode_item(0.5) == b"0.5"
    assert encode_item(memoryview(b"ab")) == b"ab"


def test_slot_rule() -> None:
    assert crc16(b"123456789") == 0x31C3  # the CRC16/XMODEM check value
    for k in [b"{crawl/0/0}", b"{crawl}:meta", b"plain", b"a{}b", b"{}{x}", b"x{y}z"]:
        assert key_slot(k) == redis_py_key_slot(k)
    assert key_slot(b"{crawl/0/0}") == 14356
    assert key_slot(b"{crawl}:meta") == 2220


def test_keys_spread_evenly_over_primaries() -> None:
    # Three primaries owning the slot ranges redis-cli --cluster create gives them.
    def owner(slot: int) -> str:
        return "a" if slot <= 5460 else "b" if slot <= 10922 else "c"

    for n in (1, 3, 4, 7, 12):
        keys = choose_keys("crawl", n, ["a", "b", "c"], owner)
        counts = {x: sum(owner(key_slot(k.encode())) == x for k in keys) for x in "abc"}
        assert max(counts.values()) - min(counts.values()) <= 1
        assert sum(counts.values()) == n
        for i, k in enumerate(keys):
            assert k.startswith("{crawl/%d/" % i) and owner(key_slot(k.encode())) == "abc"[i % 3]
    assert partition_key("crawl", 2, 5) == "{crawl/2/5}"


def test_partition_capacity_headroom() -> None:
    assert partition_capacity(1_000_000, 4) == 250_000 + 2_000
    assert partition_capacity(10, 3) == 4 + 8
