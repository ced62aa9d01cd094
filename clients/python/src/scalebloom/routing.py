"""The partitioned filter's two hash rules, written to be re-implemented in any language.

**Item → partition.** ``partition(item) = (H * N) >> 64`` where ``N`` is the number of
partitions and ``H`` the unsigned 64-bit little-endian integer read from the 8-byte digest of
keyed BLAKE2b (RFC 7693: ``digest_size=8``, ``key`` = the filter's 16-byte routing key, no
salt, no personalization) of the item's bytes. The routing key is drawn at creation and stored
hex-encoded in the metadata (field ``routing_key``), so nobody who cannot read it can craft
items that all land in one partition. The item's bytes are exactly what redis-py sends:
``bytes`` as they are, ``str`` as UTF-8, ``int`` and ``float`` as their Python ``repr`` in
ASCII (``17`` → ``b"17"``, ``0.5`` → ``b"0.5"``).

**Partition → key.** Partition ``i``'s key is ``{<name>/<i>/<s>}``, ``s`` the smallest
non-negative integer (decimal) for which Redis Cluster puts that key on the primary chosen for
partition ``i`` at creation (primaries sorted by ``host:port``, partition ``i`` on primary
``i mod P``). The whole key is a hash tag, so its slot is ``CRC16(<name>/<i>/<s>) mod 16384``
(CRC16/XMODEM: polynomial 0x1021, initial 0, no reflection, no final xor). The keys are
stored in the metadata (field ``keys``, a JSON array), so a client never recomputes them.
"""

from __future__ import annotations

import hashlib
from typing import Callable, List, Sequence

#: Number of Redis Cluster hash slots.
SLOTS = 16384


def crc16(data: bytes) -> int:
    """CRC16/XMODEM, Redis Cluster's key hash."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key: bytes) -> int:
    """The hash slot of ``key``: CRC16 of its hash tag (the bytes between the first ``{`` and
    the first ``}`` after it, when there is at least one) or of the whole key, mod 16384."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc16(key) % SLOTS


def partition_of(item: bytes, routing_key: bytes, partitions: int) -> int:
    """The partition ``item`` (its bytes, see the module docstring) belongs to."""
    h = int.from_bytes(hashlib.blake2b(item, digest_size=8, key=routing_key).digest(), "little")
    return (h * partitions) >> 64


def partition_key(name: str, index: int, salt: int) -> str:
    """Partition ``index``'s key for a given salt."""
    return "{" + f"{name}/{index}/{salt}" + "}"


def choose_keys(
    name: str, partitions: int, primaries: Sequence[str], owner_of_slot: Callable[[int], str]
) -> List[str]:
    """The partition keys: partition ``i`` on ``primaries[i % len(primaries)]`` (so each primary
    holds ``N // P`` or ``N // P + 1`` partitions), each with the smallest salt that puts it
    there. ``owner_of_slot`` names the primary that owns a slot."""
    keys = []
    for i in range(partitions):
        target = primaries[i % len(primaries)]
        salt = 0
        while True:
            key = partition_key(name, i, salt)
            if owner_of_slot(key_slot(key.encode())) == target:
                keys.append(key)
                break
            salt += 1
            if salt > 1_000_000:  # every primary owns at least one slot; this is a wrong map
                raise RuntimeError(f"no salt puts partition {i} on {target}")
    return keys
