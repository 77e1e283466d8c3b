"""Expected values computed with PyTorch, the oracle. Trusted side only."""
