"""Data parallelism (task 7.1): ``DistributedDataParallel``."""

from .ddp import DistributedDataParallel, compute_bucket_assignment

__all__ = ["DistributedDataParallel", "compute_bucket_assignment"]
