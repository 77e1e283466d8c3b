"""torch.distributed's collectives on tinytrain tensors: process groups, the collective
calls, async work handles, and the trace of every call (given code, not homework)."""
