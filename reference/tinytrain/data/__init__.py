"""Data loading (``tt.data``, PyTorch's ``torch.utils.data``) and early stopping."""

from .dataloader import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    SequentialSampler,
    default_collate,
)
from .dataset import Dataset, Subset, TensorDataset, random_split
from .early_stopping import EarlyStopping

__all__ = [
    "BatchSampler", "DataLoader", "Dataset", "EarlyStopping", "RandomSampler",
    "SequentialSampler", "Subset", "TensorDataset", "default_collate", "random_split",
]
