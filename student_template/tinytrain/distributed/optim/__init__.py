"""Sharded optimizers (task 7.2): ``ZeroRedundancyOptimizer`` (ZeRO stages 1 and 2)."""

from .zero import ZeroRedundancyOptimizer, shard_bounds

__all__ = ["ZeroRedundancyOptimizer", "shard_bounds"]
