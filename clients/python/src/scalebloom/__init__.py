"""scalebloom for redis-py: typed methods for the scalebloom module's commands, one Bloom
filter partitioned over a Redis Cluster, and two tools (``python -m scalebloom
check-migration`` and ``python -m scalebloom exporter``).

>>> import redis, scalebloom
>>> bf = scalebloom.Bloom(redis.Redis())
>>> bf.reserve("tags", 0.01, 1000, counting=4)
True
>>> bf.add("tags", "rust"), bf.delete("tags", "rust"), bf.exists("tags", "rust")
(True, True, False)
"""

from ._protocol import BloomInfo, BloomStats, CreateOptions
from ._router import ReplicationError
from .client import AsyncBloom, Bloom
from .partitioned import AsyncPartitionedFilter, PartitionedFilter, PartitionedStats

__all__ = [
    "AsyncBloom",
    "AsyncPartitionedFilter",
    "Bloom",
    "BloomInfo",
    "BloomStats",
    "CreateOptions",
    "PartitionedFilter",
    "PartitionedStats",
    "ReplicationError",
]

__version__ = "0.1.0"
