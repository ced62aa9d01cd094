"""scalebloom for redis-py: typed methods for the scalebloom module's commands (Bloom, windowed
and cuckoo filters), one Bloom filter partitioned over a Redis Cluster, and two tools
(``python -m scalebloom check-migration`` and ``python -m scalebloom exporter``).

>>> import redis, scalebloom
>>> bf = scalebloom.Bloom(redis.Redis())
>>> bf.reserve("tags", 0.01, 1000, counting=4)
True
>>> bf.add("tags", "rust"), bf.delete("tags", "rust"), bf.exists("tags", "rust")
(True, True, False)
"""

from ._protocol import BloomInfo, BloomStats, Chunk, CreateOptions, Item, Items, SequenceNotStr
from ._router import ReplicationError
from .client import AsyncBloom, Bloom, BloomCommands
from .cuckoo import (
    AsyncCuckoo,
    Cuckoo,
    CuckooCommands,
    CuckooInfo,
    CuckooInsert,
    CuckooStats,
)
from .partitioned import AsyncPartitionedFilter, PartitionedFilter, PartitionedStats

__all__ = [
    "AsyncBloom",
    "AsyncCuckoo",
    "AsyncPartitionedFilter",
    "Bloom",
    "BloomCommands",
    "BloomInfo",
    "BloomStats",
    "Chunk",
    "CreateOptions",
    "Cuckoo",
    "CuckooCommands",
    "CuckooInfo",
    "CuckooInsert",
    "CuckooStats",
    "Item",
    "Items",
    "PartitionedFilter",
    "PartitionedStats",
    "ReplicationError",
    "SequenceNotStr",
]

__version__ = "1.0.0"
