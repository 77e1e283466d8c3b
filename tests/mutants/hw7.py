"""Wrong variants for assignment 7 (parallel training), and correct alternatives."""

from . import Mutant

MUTANTS = [
    # ----- 7.1 DistributedDataParallel ---------------------------------------------------
    Mutant(
        id="ddp-sums-gradients",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="work = dist.all_reduce(flat, op=dist.ReduceOp.AVG,",
        replace="work = dist.all_reduce(flat, op=dist.ReduceOp.SUM,",
        why="gradients summed over the ranks, not averaged",
    ),
    Mutant(
        id="ddp-bucket-reduced-twice",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,\n"
             "                               async_op=True)\n",
        replace="        dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group)\n"
                "        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,\n"
                "                               async_op=True)\n",
        why="each bucket all-reduced twice (the values are still right: an average of equal "
            "values)",
    ),
    Mutant(
        id="ddp-no-overlap",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="            if len(self._ready[k]) < len(self.bucket_indices[k]):",
        replace="            if sum(map(len, self._ready)) < len(self._params):",
        why="the all-reduces start only once backward has produced every gradient (no "
            "overlap of communication with backward)",
    ),
    Mutant(
        id="ddp-no-broadcast",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="            dist.broadcast(tensor, src=src, group=self.process_group)",
        replace="            pass",
        why="the initial parameters are not broadcast: ranks start from different weights",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="ddp-predivide-then-sum",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="""        flat = Tensor(np.concatenate([g.ravel() for g in grads]))
        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,
                               async_op=True)""",
        replace="""        world = dist.get_world_size(self.process_group)
        flat = Tensor(np.concatenate([g.ravel() for g in grads]) / world)
        work = dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=self.process_group,
                               async_op=True)""",
        why="divide each gradient by the world size first, then all-reduce the sum",
    ),
    Mutant(
        id="ddp-coalesced-broadcast",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="""        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            dist.broadcast(tensor, src=src, group=self.process_group)""",
        replace="""        tensors = [*self.module.parameters(), *self.module.buffers()]
        flat = Tensor(np.concatenate([t.data.ravel() for t in tensors]))
        dist.broadcast(flat, src=src, group=self.process_group)
        offset = 0
        for t in tensors:
            t.data[...] = flat.data[offset:offset + t.numel()].reshape(t.shape)
            offset += t.numel()""",
        why="one broadcast of all parameters in a flat buffer (PyTorch coalesces them too)",
    ),
]
