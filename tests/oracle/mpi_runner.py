"""Run under ``mpiexec -n N``: the collective table's cases on the MPI backend.

    mpiexec -n N python tests/oracle/mpi_runner.py CASES.json OUT_DIR

CASES.json lists cases (call, inputs per rank as nested lists with a dtype, kwargs,
async); each process writes ``OUT_DIR/rank<r>.npz`` with its output of every case
(``case<i>``) and its trace as JSON (``trace<r>.json``).
``tests/oracle/test_distributed_collectives.py`` compares them with the threads backend's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "reference"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    import tinytrain as tt

    from graders.probes.distributed_collectives import call_on_rank

    cases = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    tt.distributed.init_process_group("mpi")
    rank, world = tt.distributed.get_rank(), tt.distributed.get_world_size()
    results = {}
    for i, case in enumerate(cases):
        inputs = [np.array(x, dtype=case["dtype"]) for x in case["inputs"]]
        got = call_on_rank(tt, case["call"], rank, world, inputs, case["kwargs"], case["async"])
        if got is not None:
            results[f"case{i}"] = got
    np.savez(out / f"rank{rank}.npz", **results)
    (out / f"trace{rank}.json").write_text(json.dumps(tt.distributed.get_trace()))
    tt.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
